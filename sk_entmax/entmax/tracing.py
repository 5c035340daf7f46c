"""Whether ``torch.compile`` or ``torch.export`` traces the caller, and the name a parameter
error names (the public function called, or the module twin calling it).

Public (no underscore) because the networks of :mod:`sk_entmax.nn` ask it too; its names
are not part of the core's API.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch

# The public name a parameter error names: a public function passes its own name as the
# ``owner`` of its checks; a module twin (``EntmaxBisectLoss``) calls its function inside
# :func:`called_as`, so that the function's checks name the module the user built instead.
_CALLER: ContextVar[str | None] = ContextVar("sk_entmax_caller", default=None)


def compiling() -> bool:
    """Whether ``torch.compile`` or ``torch.export`` is tracing the caller.

    The eager solvers read tensors back to the host (``.item()``, ``bool(...)``) to stop
    early or to pick a branch; a traced graph cannot, so each such solver takes its traced
    form (a ``torch.while_loop``, staged ``torch.cond`` branches, a fixed number of steps)
    while this is True.
    """
    return torch.compiler.is_compiling()


def exporting() -> bool:
    """Whether ``torch.export`` (or the ONNX exporter) is tracing the caller: then the
    root-finding solvers take their plain forms (a fixed number of bisection steps), whose
    graphs hold no ``torch.cond`` (its data-dependent output shapes hold an exported program
    to batches of two rows or more)."""
    return torch.compiler.is_exporting()


def owner_of(owner: str | None) -> str | None:
    """The name a parameter error names: the module being called, else ``owner``.

    While compiling it is ``owner``: ``torch.compile`` cannot read a ``ContextVar``.
    """
    if compiling():
        return owner
    return _CALLER.get() or owner


@contextmanager
def called_as(owner: str) -> Iterator[None]:
    """Name ``owner`` in the parameter errors of the core's functions called within."""
    if compiling():
        yield
        return
    token = _CALLER.set(owner)
    try:
        yield
    finally:
        _CALLER.reset(token)
