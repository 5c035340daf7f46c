"""The one way a training call gets its net: ``fit`` and ``partial_fit`` alike.

:func:`build_net` builds the skorch net an estimator trains, from its checked parameters
and hooks: the module (``_module``), the callbacks (one list,
:func:`~sk_entmax._engine.callbacks.fit_callbacks`, a ``partial_fit`` call's a part of
``fit``'s), the averaging of a data-parallel fit
(:func:`~sk_entmax._engine.distributed.with_data_parallel`), and the initial weights drawn
from the call's seed. :func:`continue_net` readies a net that an earlier call built (a
``fit``, a ``partial_fit``, a load) for a ``partial_fit`` call: the same callbacks as a new
``partial_fit`` net, inside or outside ``data_parallel`` as that call is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from sk_entmax._engine.callbacks import BestWeightsSoFar, StoppingRule, fit_callbacks
from sk_entmax._engine.distributed import data_parallel_group, with_data_parallel
from sk_entmax._engine.net import FenchelYoungNet
from sk_entmax._engine.training import TrainingPlan, initialize_net, make_net, set_callbacks

__all__ = ["NetCallbacks", "build_net", "continue_net"]


@dataclass(frozen=True)
class NetCallbacks:
    """What a fit reads back from its net's callbacks after training.

    Parameters
    ----------
    stopper : StoppingRule or None
        The stopping rule (None for L-BFGS and a ``partial_fit`` call).
    best : BestWeightsSoFar or None
        The keeper of the best weights (a fit without early stopping).
    monitor : str
        The monitored loss.
    """

    stopper: StoppingRule | None
    best: BestWeightsSoFar | None
    monitor: str


def build_net(
    estimator: Any,
    params: dict[str, Any],
    plan: TrainingPlan,
    n_features: int,
    *,
    batch_size: int,
    seed: int,
    stream: bool = False,
    steps: int | None = None,
    early_stopping: bool = False,
    train_split: Any = None,
    total_weight: float = 1.0,
    n_workers: int = 1,
) -> tuple[FenchelYoungNet, NetCallbacks]:
    """The initialised net ``estimator`` trains by ``plan`` on ``n_features`` columns, and
    what its callbacks report.

    Parameters
    ----------
    estimator : BaseEntmaxEstimator
        The estimator, after its targets are encoded (its ``_module``, ``_n_outputs`` and
        ``_shard_agreement`` hooks are called).
    params : dict
        Its checked parameters (``device`` resolved; ``verbose`` read).
    plan : TrainingPlan
        How the call trains.
    n_features : int
        The columns of the training data.
    batch_size : int
        Rows per mini-batch.
    seed : int
        Seeds the initial weights and the shuffling generator.
    stream : bool, default=False
        A ``partial_fit`` call's net (its callbacks: see
        :func:`~sk_entmax._engine.callbacks.fit_callbacks`).
    steps : int or None, default=None
        The optimizer steps the fit plans, for ``_module`` (None: open-ended).
    early_stopping : bool, default=False
        Whether the fit stops on held-out rows (``train_split``).
    train_split : skorch.dataset.ValidSplit or None, default=None
        The held-out rows of early stopping.
    total_weight : float, default=1.0
        The sample weight of the training rows (the penalty's scale).
    n_workers : int, default=1
        L-BFGS's threads.

    Returns
    -------
    net : FenchelYoungNet
        Initialised, with weights drawn from ``seed``.
    callbacks : NetCallbacks
        Its stopping rule, best-weights keeper and monitored loss.

    Raises
    ------
    ValueError
        A full-batch plan inside ``data_parallel``, which does not spread L-BFGS.
    """
    name = type(estimator).__name__
    callbacks, stopper, best, monitor = fit_callbacks(
        plan, early_stopping, params["verbose"], name=name, stream=stream
    )
    if data_parallel_group() is not None and plan.full_batch:
        raise ValueError(
            f"{name} fits by full-batch L-BFGS, which data_parallel does not spread over "
            "processes: set solver='adam' (or fit_blocks on Dask for data larger than "
            "memory)"
        )
    module, module_kwargs = estimator._module(
        params, n_features, estimator._n_outputs(), batch_size, steps
    )
    net = make_net(
        module,
        module_kwargs,
        plan,
        batch_size=batch_size,
        device=params["device"],
        train_split=train_split,
        callbacks=with_data_parallel(callbacks, estimator._shard_agreement),
        verbose=params["verbose"],
        # shuffling draws from its own generator, not torch's global one
        shuffle_generator=torch.Generator().manual_seed(seed),
        total_weight=total_weight,
        n_workers=n_workers,
    )
    initialize_net(net, seed)
    return net, NetCallbacks(stopper, best, monitor)


def continue_net(
    net: FenchelYoungNet, estimator: Any, params: dict[str, Any], plan: TrainingPlan
) -> None:
    """Ready ``net``, built by an earlier call (``fit``'s, an earlier ``partial_fit``'s, or
    :func:`sk_entmax.persistence.load`'s), for a ``partial_fit`` call made here: it trains
    with the callbacks :func:`build_net` gives a new ``partial_fit`` net (``plan``'s, the
    call's; the finite-loss check and gradient clipping included), on every row of the
    chunk (no held-out rows), with the averaging of
    :func:`~sk_entmax.scale_out.data_parallel` inside it and without it outside (the
    processes' agreement from ``estimator._shard_agreement``).

    Parameters
    ----------
    net : FenchelYoungNet
        The initialised net the call continues.
    estimator : BaseEntmaxEstimator
        Its estimator.
    params : dict
        The call's checked parameters (``verbose`` read).
    plan : TrainingPlan
        The call's plan (its gradient clipping).
    """
    name = type(estimator).__name__
    callbacks, *_ = fit_callbacks(plan, False, params["verbose"], name=name, stream=True)
    if net.train_split is not None:  # fit's held-out rows: a chunk trains on all its rows
        net.set_params(train_split=None)
    set_callbacks(net, with_data_parallel(callbacks, estimator._shard_agreement))
