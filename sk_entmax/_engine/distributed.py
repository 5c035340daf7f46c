"""Data-parallel training over a ``torch.distributed`` process group, as a skorch callback.

Each process of the group (started by ``torchrun``, say) fits the same estimator, with the
same parameters and ``random_state``, on its own shard of the rows. :class:`AverageGradients`
makes the fits one: it starts every process from rank 0's weights, averages the gradients of
each step over the processes before the optimizer (and gradient clipping) uses them, and at
the end of each epoch averages the batch norms' running statistics and the epoch's losses,
so that every process holds the same model and its stopping rule sees the same numbers and
stops at the same epoch. This is the arithmetic of ``DistributedDataParallel``, through
skorch's documented callback hooks (``on_train_begin``, ``on_grad_computed``,
``on_epoch_end``): the estimators' modules are called for their own methods (``loss``,
``proba``) besides ``forward``, which a DDP wrapper would hide, and skorch's
``AccelerateMixin`` wraps the module the same way.

:func:`data_parallel` is the switch: the mini-batch fits inside it (TabNet, ``solver="adam"``)
and the ``partial_fit`` calls inside it train this way; :func:`with_data_parallel` gives a
net's callbacks the averaging when a call is inside the switch, and takes it away when not.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
from collections.abc import Callable, Iterator, Mapping

import torch
import torch.distributed as dist
from skorch.callbacks import Callback

from sk_entmax._engine.net import NonFiniteLossError
from sk_entmax.nn.protocols import engine_modules

__all__ = ["AverageGradients", "data_parallel", "data_parallel_group", "with_data_parallel"]

#: the name of :class:`AverageGradients` in a net's callbacks
DATA_PARALLEL = "data_parallel"

#: None outside :func:`data_parallel`; inside, a 1-tuple holding its process group
_GROUP: contextvars.ContextVar = contextvars.ContextVar("sk_entmax_data_parallel", default=None)


@contextlib.contextmanager
def data_parallel(group: object = None) -> Iterator[None]:
    """Train the estimators fitted inside the block data-parallel over ``group``.

    Parameters
    ----------
    group : torch.distributed.ProcessGroup or None, default=None
        The processes that train together (None: the default group, which
        ``torch.distributed.init_process_group`` made). Every process of it must run the
        same ``fit`` or ``partial_fit`` call (same parameters and ``random_state``) on its own
        rows, with as many training batches per epoch as the others.

    Yields
    ------
    None
        Inside the block, each mini-batch fit and each ``partial_fit`` call averages its
        gradients, its batch norms' statistics, its losses and its feature importances over
        the processes; a full-batch L-BFGS fit raises a ``ValueError``.

    Raises
    ------
    RuntimeError
        When no ``torch.distributed`` process group is initialized.
    """
    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError(
            "data_parallel needs an initialized torch.distributed process group: run under "
            "torchrun (or call torch.distributed.init_process_group) first"
        )
    token = _GROUP.set((group,))
    try:
        yield
    finally:
        _GROUP.reset(token)


def data_parallel_group() -> tuple[object] | None:
    """``(group,)`` inside :func:`data_parallel` (``group`` None for the default one), else
    None."""
    return _GROUP.get()


def with_data_parallel(
    callbacks: list[tuple[str, Callback]], agreement: Callable[[], Mapping[str, str]]
) -> list[tuple[str, Callback]]:
    """``callbacks`` (a net's, by name) for a training call made here: inside
    :func:`data_parallel`, with a new :class:`AverageGradients` of its group first (so that
    the clipping and the stopping rule see the averaged figures) in place of any earlier
    one; outside, without one. ``agreement()`` gives what the processes' shards must agree
    on (called inside :func:`data_parallel` only). The list is returned as it is when
    nothing changes."""
    parallel = data_parallel_group()
    others = [(name, callback) for name, callback in callbacks if name != DATA_PARALLEL]
    if parallel is None:
        return callbacks if len(others) == len(callbacks) else others
    return [(DATA_PARALLEL, AverageGradients(parallel[0], agreement())), *others]


class AverageGradients(Callback):
    """Average each step's gradients and each epoch's losses over a process group.

    Parameters
    ----------
    group : torch.distributed.ProcessGroup or None
        The processes that train together (None: the default group).
    agreement : mapping of str to str, default=None
        What every process must have learned alike from its shard before training starts,
        each a name (``classes_``) and its value as text: compared first, through their
        digests (a fixed size, so that shards of any size and classes compare), and a
        ``ValueError`` naming each that differs is raised on every process.
    """

    def __init__(self, group: object = None, agreement: Mapping[str, str] | None = None) -> None:
        self.group = group
        self.agreement = agreement

    def _world(self) -> int:
        return dist.get_world_size(self.group)

    def _average(self, tensors: list[torch.Tensor]) -> bool:
        """Replace each tensor by its mean over the processes (one collective for all);
        whether every averaged entry is finite."""
        if not tensors:
            return True
        flat = torch.cat([t.reshape(-1) for t in tensors])
        dist.all_reduce(flat, group=self.group)
        flat /= self._world()
        offset = 0
        for t in tensors:
            t.copy_(flat[offset : offset + t.numel()].view_as(t))
            offset += t.numel()
        return bool(torch.isfinite(flat).all())

    def _check_agreement(self) -> None:
        """Raise, on every process alike, when the processes' ``agreement`` differ."""
        names = sorted(self.agreement or {})
        if not names:
            return
        own = torch.tensor(
            [list(hashlib.sha256(self.agreement[n].encode()).digest()) for n in names],
            dtype=torch.uint8,
        )
        gathered = [torch.zeros_like(own) for _ in range(self._world())]
        dist.all_gather(gathered, own, group=self.group)
        differ = [
            name
            for i, name in enumerate(names)
            if any(not torch.equal(g[i], gathered[0][i]) for g in gathered)
        ]
        if differ:
            ranks = [r for r, g in enumerate(gathered) if not torch.equal(g, gathered[0])]
            shown = "; ".join(f"{n} {self.agreement[n][:200]}" for n in differ)
            raise ValueError(
                f"the processes' shards disagree on {', '.join(differ)} (ranks {ranks} differ "
                f"from rank 0; rank {dist.get_rank(self.group)} has {shown}): data_parallel "
                "trains one network, so "
                "every shard must hold every class, category and column with missing values, "
                "or pass them explicitly (classes=, or one encoding made before the split)"
            )

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        # first, with tensors of one size on every process: what each shard taught the
        # estimator (its classes, categories, ...) must agree, or the networks differ
        self._check_agreement()
        # the same number of steps on every process, or the collectives would wait forever
        dataset_train, _ = net.get_split_datasets(X, y)
        batches = torch.tensor([len(net.get_iterator(dataset_train, training=True))])
        counts = [torch.zeros_like(batches) for _ in range(self._world())]
        dist.all_gather(counts, batches, group=self.group)
        counts = [int(c) for c in counts]
        if len(set(counts)) > 1:
            raise ValueError(
                f"the processes' shards give {counts} training batches per epoch: give every "
                "process as many rows (or set batch_size so that the counts agree)"
            )
        # every process starts from rank 0's weights and buffers
        source = dist.get_global_rank(self.group, 0) if self.group is not None else 0
        for tensor in net.module_.state_dict().values():
            dist.broadcast(tensor, src=source, group=self.group)
        # a faithful TabNet's column selection decides on losses averaged over the processes
        for module in engine_modules(net.module_):
            module.selection_reduce = self._mean
            module.selection_processes = self._world()

    def _mean(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` averaged over the processes (a new tensor)."""
        values = values.clone()
        dist.all_reduce(values, group=self.group)
        return values / self._world()

    def on_train_end(self, net, X=None, y=None, **kwargs):
        for module in engine_modules(net.module_):
            module.selection_reduce = None
            module.selection_processes = 1

    def on_grad_computed(self, net, named_parameters, X=None, y=None, training=None, **kwargs):
        # a non-finite gradient on any process is one on every process after the average:
        # all stop here, together (a process stopping alone would leave the others waiting
        # in the next collective)
        if not self._average([p.grad for _, p in named_parameters if p.grad is not None]):
            raise NonFiniteLossError(
                f"the averaged gradients became non-finite at epoch {len(net.history)}: "
                "the loss diverged on at least one process and training was stopped on "
                f"every one. Try a lower learning rate (lr={net.lr:g}) or scale the features"
            )

    def on_epoch_end(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        # the batch norms' running statistics, which each process moved on its own rows,
        # averaged: every process then holds the same model (and so does each snapshot of
        # the best weights, taken after this callback)
        if not self._average([b for b in net.module_.buffers() if b.is_floating_point()]):
            raise NonFiniteLossError(
                f"the batch norms' running statistics averaged over the processes became "
                f"non-finite at epoch {len(net.history)} (a column of huge values on at "
                "least one process); training was stopped on every one. Scale the features"
            )
        for key in ("train_loss", "valid_loss"):
            if key in net.history[-1]:
                value = torch.tensor([float(net.history[-1, key])], dtype=torch.float64)
                dist.all_reduce(value, group=self.group)
                net.history.record(key, float(value) / self._world())
