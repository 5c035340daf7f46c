"""Which algorithm serves which alpha: the one place that decides it.

Every mapping, loss and entropy of the core asks :func:`mapping_for` which case an alpha is,
and the root finders ask :func:`newton_applies` whether Newton steps may replace bisection;
none compares alpha with 1, 1.5 or 2 on its own. The numeric forms each case is computed in
(``exp2``/``log2`` powers, square roots, floors, scratch buffers) stay beside the solver
they tune.

The cases, for alpha a Python number:

- ``SOFTMAX`` (alpha = 1): softmax, and cross-entropy as its loss;
- ``ENTMAX15`` (alpha = 1.5): the exact 1.5-entmax (Peters et al., 2019);
- ``SPARSEMAX`` (alpha = 2): the exact sparsemax (Martins and Astudillo, 2016);
- ``ROOT`` (any other number): root finding on the threshold, by Newton steps for alpha in
  ``[NEWTON_MIN_ALPHA, 2]`` when ``n_iter >= NEWTON_MIN_ITER``, by bisection otherwise;

and ``PER_ROW`` for a tensor alpha (learned, one per row or one per head): root finding,
Newton on the rows whose alpha lies in the Newton range, bisection on the others, with a
gradient in alpha.

It is also where another implementation of a case registers for a device, for instance a
CUDA or Triton kernel: :func:`register_kernel` ``(mapping, device_type, kernel)``, after
which :func:`sk_entmax.entmax.entmax` sends every input of that case on that device to
``kernel(X, alpha, dim=..., n_iter=..., training=..., return_support_size=...)``. None is
registered by default.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import torch

from sk_entmax.entmax._common import Param

__all__ = [
    "NEWTON_MIN_ALPHA",
    "NEWTON_MIN_ITER",
    "Mapping",
    "kernel_for",
    "mapping_for",
    "newton_applies",
    "register_kernel",
    "unregister_kernel",
]


class Mapping(enum.Enum):
    """The cases of alpha (module docstring)."""

    SOFTMAX = "softmax"
    ENTMAX15 = "entmax15"
    SPARSEMAX = "sparsemax"
    ROOT = "root finding"
    PER_ROW = "root finding, alpha per row"


_EXACT = ((1, Mapping.SOFTMAX), (1.5, Mapping.ENTMAX15), (2, Mapping.SPARSEMAX))


def mapping_for(alpha: Param) -> Mapping:
    """The case that serves ``alpha``: a number equal to 1, 1.5 or 2 has an exact algorithm,
    any other number takes root finding, and a tensor takes root finding per row."""
    if isinstance(alpha, torch.Tensor):
        return Mapping.PER_ROW
    for value, mapping in _EXACT:
        if alpha == value:
            return mapping
    return Mapping.ROOT


# From this many bisection steps on (float32 precision), Newton replaces bisection ...
NEWTON_MIN_ITER = 24
# ... for alpha in [NEWTON_MIN_ALPHA, 2], where the Newton iteration on the power form
# ``[beta x - tau]_+ ** (1 / beta)`` is accurate; nearer 1 the log1p form of bisection is.
NEWTON_MIN_ALPHA = 1.1


def newton_applies(alpha: Param, n_iter: int) -> bool | torch.Tensor:
    """Whether Newton steps replace ``n_iter`` bisection steps at ``alpha``: a bool for a
    number, booleans shaped like ``alpha`` for a tensor (all False below NEWTON_MIN_ITER)."""
    inside = (NEWTON_MIN_ALPHA <= alpha) & (alpha <= 2)
    if n_iter < NEWTON_MIN_ITER:
        return torch.zeros_like(inside) if isinstance(inside, torch.Tensor) else False
    return inside


Kernel = Callable[..., Any]
_KERNELS: dict[tuple[Mapping, str], Kernel] = {}


def register_kernel(mapping: Mapping, device_type: str, kernel: Kernel) -> None:
    """Serve ``mapping`` on ``device_type`` (``"cuda"``, ``"cpu"``, ...) by ``kernel``.

    Parameters
    ----------
    mapping : Mapping
        The case the kernel implements.
    device_type : str
        ``torch.device(...).type`` of the inputs it takes.
    kernel : callable
        Called as ``kernel(X, alpha, dim=..., n_iter=..., training=...,
        return_support_size=...)``, returning what :func:`sk_entmax.entmax.entmax` returns.
    """
    if not isinstance(mapping, Mapping):
        raise TypeError(f"mapping must be a Mapping; got {mapping!r}")
    if not callable(kernel):
        raise TypeError(f"kernel must be callable; got {kernel!r}")
    _KERNELS[(mapping, torch.device(device_type).type)] = kernel


def unregister_kernel(mapping: Mapping, device_type: str) -> None:
    """Drop the kernel registered for ``mapping`` on ``device_type``, if any."""
    _KERNELS.pop((mapping, torch.device(device_type).type), None)


def kernel_for(mapping: Mapping, device: torch.device) -> Kernel | None:
    """The kernel registered for ``mapping`` on ``device``'s type, or None."""
    return _KERNELS.get((mapping, device.type))
