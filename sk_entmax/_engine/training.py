"""The skorch net an estimator trains, and the plan it trains by.

An estimator turns its checked parameters into a :class:`TrainingPlan` (which solver, how
long, which regularisers, when to stop); :func:`make_net` builds the skorch net for that plan
around a torch module, full-batch L-BFGS or mini-batch Adam; :func:`initialize_net` draws its
initial weights from a private generator seeded by the fit, leaving torch's global generator
alone (not seeded, forked, read or drawn from), so fits in other threads and a caller's seeded
random numbers are undisturbed.
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass
from typing import Any

import torch
from skorch import NeuralNet
from torch.overrides import TorchFunctionMode

from sk_entmax._engine.net import BatchDataset, FenchelYoungNet, collate_batch
from sk_entmax._engine.solver import FullBatch, LbfgsNet, lbfgs_options

__all__ = [
    "ADAM",
    "LBFGS",
    "NetCheckpoint",
    "PrivateDraws",
    "TrainingPlan",
    "initialize_net",
    "load_warm_start",
    "make_net",
    "set_callbacks",
    "warm_start_snapshot",
]

LBFGS, ADAM = "lbfgs", "adam"

#: torch's random operations that take a ``generator``: the in-place draws of a tensor, the
#: random factories, and every torch.nn.init function that draws (modules' reset_parameters
#: call these, which then call the tensor's in-place draws)
_RANDOM_OPS = frozenset(
    [
        *(
            getattr(torch.Tensor, name)
            for name in (
                "uniform_",
                "normal_",
                "bernoulli_",
                "random_",
                "exponential_",
                "geometric_",
                "log_normal_",
                "cauchy_",
            )
        ),
        *(
            getattr(torch, name)
            for name in (
                "rand",
                "randn",
                "randint",
                "randperm",
                "rand_like",
                "randn_like",
                "randint_like",
                "normal",
                "bernoulli",
                "multinomial",
                "poisson",
            )
        ),
        *(
            function
            for name, function in vars(torch.nn.init).items()
            if not name.startswith("_")
            and inspect.isfunction(function)
            and "generator" in inspect.signature(function).parameters
        ),
    ]
)


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
    n_workers: int = 1,
) -> FenchelYoungNet:
    """The skorch net around ``module`` (not initialized) that trains by ``plan``: a
    :class:`~sk_entmax._engine.solver.LbfgsNet` of one epoch for full-batch L-BFGS (its objective
    evaluated by ``n_workers`` threads), a :class:`~sk_entmax._engine.net.FenchelYoungNet` for
    mini-batch Adam."""
    # skorch's own table (with colour codes) is replaced by ProgressLine's plain lines, and
    # L-BFGS's by a line per iteration (see LbfgsNet)
    extra: dict[str, Any] = {"callbacks__print_log": None}
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
            n_workers=n_workers,
            **extra,
        )
    if shuffle_generator is not None:
        extra["iterator_train__generator"] = shuffle_generator
        # a DataLoader draws a base seed per pass, from torch's global generator unless it
        # has one: the validation passes of early stopping get a generator of their own
        extra["iterator_valid__generator"] = torch.Generator().manual_seed(
            shuffle_generator.initial_seed()
        )
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


class PrivateDraws(TorchFunctionMode):
    """Route torch's random draws, in this thread, to private generators seeded by ``seed``.

    A ``TorchFunctionMode`` (torch's documented way to intercept its functions) that passes
    ``generator=`` to each random operation (:data:`_RANDOM_OPS`) called without one: a
    generator per device, all seeded by ``seed``. torch's global generator is then neither
    read nor drawn from. A mode is active in the thread that enters it only, so other
    threads' draws are untouched. Random operations without a ``generator`` argument
    (dropout) are not covered; the estimators' modules have none.

    Parameters
    ----------
    seed : int
        The seed of every private generator.
    """

    def __init__(self, seed: int):
        super().__init__()
        self.seed = seed
        self.generators: dict[torch.device, torch.Generator] = {}

    def generator(self, device: torch.device) -> torch.Generator:
        """The private generator of ``device`` (made on its first draw)."""
        if device not in self.generators:
            self.generators[device] = torch.Generator(device=device).manual_seed(self.seed)
        return self.generators[device]

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _RANDOM_OPS and kwargs.get("generator") is None:
            device = _draw_device(args, kwargs)
            if device.type != "meta":  # a meta tensor draws nothing
                kwargs["generator"] = self.generator(device)
        return func(*args, **kwargs)


def _draw_device(args: tuple, kwargs: dict[str, Any]) -> torch.device:
    """The device a random operation draws on: its first tensor's, else its ``device``."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value.device
    device = kwargs.get("device")
    return torch.device(device) if device is not None else torch.get_default_device()


#: the seed of the initial weights of a net whose weights are then loaded (thrown away)
_LOAD_SEED = 0


def initialize_net(net: FenchelYoungNet, seed: int | None) -> None:
    """``net.initialize()`` with the initial weights drawn from private generators seeded by
    ``seed`` (None: the draws are thrown away, as when a saved model is loaded).

    torch's global generator is left alone: not seeded, forked, read or drawn from (see
    :class:`PrivateDraws`), so neither fits in other threads nor a caller's seeded random
    numbers are disturbed, and no lock is needed. A given seed gives the initial weights
    that seeding the global generator with it gave (the same algorithm, a private state).
    """
    with PrivateDraws(_LOAD_SEED if seed is None else seed):
        net.initialize()


class NetCheckpoint:
    """What a training call (skorch's ``partial_fit``) changes in ``net`` in place, copied,
    so that :meth:`restore` can undo a call that failed.

    The copy holds the module's weights and buffers (batch-norm statistics included) and
    train/eval modes, the optimizer's state (Adam's moments and step counts), the number of
    epochs in the history (a call only appends epochs), the state of the data loaders'
    generators (shuffling), the ``batch_size``, ``total_weight`` and ``train_split`` the
    call may set, and the list of callbacks (a ``partial_fit`` call gives the net its own,
    with or without the averaging of ``data_parallel``). The callbacks' own state is not
    copied: skorch resets it when the next call begins training.

    Parameters
    ----------
    net : skorch.NeuralNet
        An initialized net.
    """

    def __init__(self, net: NeuralNet):
        self.net = net
        module = net.module_
        self.weights = {key: value.detach().clone() for key, value in module.state_dict().items()}
        self.modes = [m.training for m in module.modules()]
        self.optimizer = copy.deepcopy(net.optimizer_.state_dict())
        self.epochs = len(net.history)
        self.generators = {
            name: generator.get_state()
            for name in ("iterator_train", "iterator_valid")
            if (generator := net.get_params_for(name).get("generator")) is not None
        }
        self.params = {
            "batch_size": net.batch_size,
            "total_weight": net.total_weight,
            "train_split": net.train_split,
        }
        self.callbacks = net.callbacks

    def restore(self) -> None:
        """Put ``net`` back as it was when the checkpoint was taken."""
        net = self.net
        net.module_.load_state_dict(self.weights)
        for m, training in zip(net.module_.modules(), self.modes, strict=True):
            m.training = training
        net.optimizer_.load_state_dict(self.optimizer)
        del net.history[self.epochs :]
        for name, state in self.generators.items():
            net.get_params_for(name)["generator"].set_state(state)
        net.set_params(**self.params)
        if net.callbacks is not self.callbacks:
            set_callbacks(net, self.callbacks)


def set_callbacks(net: NeuralNet, callbacks: list) -> None:
    """Give the initialized ``net`` the list ``callbacks`` (by name), initialized.

    skorch's ``set_params(callbacks=...)`` initializes the callbacks before it stores the new
    list (skorch 1.x), so the list is initialized again here."""
    net.set_params(callbacks=callbacks)
    net.initialize_callbacks()


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
