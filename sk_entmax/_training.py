"""The skorch net an estimator trains, and the plan it trains by.

An estimator turns its checked parameters into a :class:`TrainingPlan` (which solver, how
long, which regularisers, when to stop); :func:`make_net` builds the skorch net for that plan
around a torch module, full-batch L-BFGS or mini-batch Adam; :func:`initialize_net` draws its
initial weights from a seed, without disturbing other threads' fits.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import torch
from skorch import NeuralNet

from sk_entmax._net import BatchDataset, FenchelYoungNet, collate_batch
from sk_entmax._solver import FullBatch, LbfgsNet, lbfgs_options

__all__ = [
    "ADAM",
    "LBFGS",
    "TrainingPlan",
    "initialize_net",
    "load_warm_start",
    "make_net",
    "warm_start_snapshot",
]

LBFGS, ADAM = "lbfgs", "adam"

# Weight initialisation draws from torch's global generator; fits running in threads of one
# process (joblib's threading backend, a Dask worker with several threads) take turns there.
_INIT_LOCK = threading.Lock()


@dataclass(frozen=True)
class TrainingPlan:
    """How a fit trains, as the estimator's checked parameters decide it.

    Parameters
    ----------
    solver : {"lbfgs", "adam"}
        Full-batch L-BFGS (one epoch of ``max_iter`` iterations to ``tol``) or mini-batch Adam
        (``max_epochs`` epochs at learning rate ``lr``).
    lr, max_epochs : float, int
        Adam's learning rate and epoch budget.
    patience : int
        Epochs without an improvement of more than ``stopping_threshold`` before Adam stops.
    stopping_threshold : float
        The improvement of the monitored loss that counts.
    l2 : float
        Strength ``1 / C`` of the L2 penalty in the objective (0: none).
    gradient_clip : float or None
        The largest gradient norm of an Adam step, or None.
    max_iter, tol : int, float
        L-BFGS's iteration budget and gradient tolerance.
    """

    solver: str = ADAM
    lr: float = 0.01
    max_epochs: int = 1
    patience: int = 10
    stopping_threshold: float = 0.0
    l2: float = 0.0
    gradient_clip: float | None = None
    max_iter: int = 100
    tol: float = 1e-4

    @property
    def full_batch(self) -> bool:
        """Whether the plan trains with the full-batch L-BFGS solver."""
        return self.solver == LBFGS


def make_net(
    module: type,
    module_kwargs: dict[str, Any],
    plan: TrainingPlan,
    *,
    batch_size: int,
    device: str,
    train_split: Any = None,
    callbacks: list | None = None,
    verbose: int = 0,
    shuffle_generator: torch.Generator | None = None,
    total_weight: float = 1.0,
) -> FenchelYoungNet:
    """The skorch net around ``module`` (not initialized) that trains by ``plan``: a
    :class:`~sk_entmax._solver.LbfgsNet` of one epoch for full-batch L-BFGS, a
    :class:`~sk_entmax._net.FenchelYoungNet` for mini-batch Adam."""
    extra: dict[str, Any] = {} if verbose else {"callbacks__print_log": None}
    common = {
        "module": module,
        **{f"module__{k}": v for k, v in module_kwargs.items()},
        "criterion": torch.nn.Identity,  # unused: see FenchelYoungNet.get_loss
        "dataset": BatchDataset,
        "iterator_valid__collate_fn": collate_batch,
        "train_split": train_split,
        "callbacks": callbacks or [],
        "device": device,
        "verbose": verbose,
        "l2": plan.l2,
        "total_weight": total_weight,
    }
    if plan.full_batch:
        return LbfgsNet(
            **common,
            **lbfgs_options(plan.max_iter, plan.tol),
            max_epochs=1,
            batch_size=batch_size,
            iterator_train=FullBatch,
            **extra,
        )
    if shuffle_generator is not None:
        extra["iterator_train__generator"] = shuffle_generator
    return FenchelYoungNet(
        **common,
        optimizer=torch.optim.Adam,
        lr=plan.lr,
        optimizer__fused=True,  # one kernel updates every tensor: no per-tensor Python loop
        max_epochs=plan.max_epochs,
        batch_size=batch_size,
        iterator_train__shuffle=True,
        iterator_train__collate_fn=collate_batch,
        **extra,
    )


def initialize_net(net: FenchelYoungNet, seed: int | None, device: str) -> None:
    """``net.initialize()`` under the lock, with torch's global generator seeded by ``seed``
    (None: not seeded, the draws are thrown away, as when a saved model is loaded) and then
    restored as it was."""
    devices = [torch.device(device)] if device != "cpu" else []
    with _INIT_LOCK, torch.random.fork_rng(devices=devices):
        if seed is not None:
            torch.manual_seed(seed)
        net.initialize()


def warm_start_snapshot(net: NeuralNet, outputs: Any, n_features: int) -> dict[str, Any]:
    """A copy of ``net``'s weights, with what a warm-started fit must match to start there."""
    state = net.module_.state_dict()
    return {
        "state": {key: value.detach().clone() for key, value in state.items()},
        "outputs": outputs,
        "n_features": n_features,
    }


def load_warm_start(
    net: NeuralNet, snapshot: dict[str, Any], outputs: Any, n_features: int
) -> None:
    """Start ``net`` from ``snapshot``'s weights, or raise if the features, the outputs or the
    network's shape differ."""
    same = snapshot["n_features"] == n_features and snapshot["outputs"] == outputs
    state = net.module_.state_dict()
    shapes = {key: tuple(value.shape) for key, value in snapshot["state"].items()}
    if not same or shapes != {key: tuple(value.shape) for key, value in state.items()}:
        raise ValueError(
            "warm_start=True needs the same features, classes and network shape as the "
            "previous fit; set warm_start=False to fit from scratch"
        )
    net.module_.load_state_dict(snapshot["state"])
