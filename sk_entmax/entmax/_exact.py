"""The exact sparsemax and 1.5-entmax along the last axis, without autograd, where the fused
kernels do not serve: the traceable form (:mod:`._traceable`), or the partial sort of the
``k`` largest entries (:mod:`._sorting`) when ``k=`` asks for it (outside a traced graph:
the doubling of ``k`` depends on the data, so a graph takes the traceable form).
"""

from __future__ import annotations

import torch

from sk_entmax.entmax._safe_ops import row_stats
from sk_entmax.entmax._sorting import _entmax15_sorted, _sparsemax_sorted, _threshold
from sk_entmax.entmax._traceable import entmax15_traceable, sparsemax_traceable
from sk_entmax.entmax.tracing import compiling


def _sparsemax_last(Z: torch.Tensor, k: int | None) -> torch.Tensor:
    if k is None or compiling() or torch.jit.is_tracing():
        return sparsemax_traceable(Z)
    max_val, _ = row_stats(Z)
    Z = Z - max_val
    return (Z - _threshold(Z, k, _sparsemax_sorted)).clamp_min(0)


def _entmax15_last(Z: torch.Tensor, k: int | None) -> torch.Tensor:
    if k is None or compiling() or torch.jit.is_tracing():
        return entmax15_traceable(Z)
    max_val, _ = row_stats(Z)
    Z = (Z - max_val) / 2
    return (Z - _threshold(Z, k, _entmax15_sorted)).clamp_min(0).square()
