"""What the training engine asks of a network's modules, declared once.

The engine (:mod:`sk_entmax._engine`) trains any torch module that has ``loss`` and
``proba``; a module may also speak to it through :class:`EngineModule`: the stopping rule
counts no epoch while a module is ``settling``, and a data-parallel fit hands a module its
``selection_reduce`` and ``selection_processes``. The engine asks
``isinstance(module, EngineModule)``, never an attribute by name, so a module declares what
it offers by having all three members.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import torch
from torch import nn

__all__ = ["EngineModule", "engine_modules"]


@runtime_checkable
class EngineModule(Protocol):
    """A module that tells the training engine about its own training.

    Attributes
    ----------
    settling : bool
        Read-only: whether the module's objective still changes by design (a faithful
        TabNet's mask warm-up): while it is True, the stopping rule counts no epoch and
        none is a best one.
    selection_reduce : callable or None
        Set by the engine: inside a data-parallel fit, a function that returns a tensor
        averaged over the processes (the same on every process), so that a decision the
        module takes from its own batches is taken alike everywhere; None otherwise.
    selection_processes : int
        Set by the engine with ``selection_reduce``: the number of processes (1 otherwise),
        which turns such a mean back into a sum.
    """

    @property
    def settling(self) -> bool: ...

    selection_reduce: Callable[[torch.Tensor], torch.Tensor] | None
    selection_processes: int


def engine_modules(root: nn.Module) -> list[EngineModule]:
    """The modules of ``root``'s tree (``root`` included) that are :class:`EngineModule`.

    Parameters
    ----------
    root : torch.nn.Module
        A network.

    Returns
    -------
    list of EngineModule
        Its modules that speak to the engine, in ``root.modules()`` order.
    """
    return [module for module in root.modules() if isinstance(module, EngineModule)]
