"""``entmax.activations``: ours, plus the two private helpers the reference's tests import.

The reference's ``test_topk.py`` imports ``_sparsemax_threshold_and_support`` and
``_entmax_threshold_and_support``, private functions that return a threshold and a support
size; our core has no such public function. They are served here by our own sort-based
solver (the one ``k=`` partial sorting uses, with the same doubling of ``k``), along any
``dim``. The tests' assertions (the same threshold and support with and without ``k``) are
kept as they are.
"""

from __future__ import annotations

import torch

from sk_entmax.entmax.activations import *  # noqa: F403
from sk_entmax.entmax.activations import __all__  # noqa: F401
from sk_entmax.entmax.solvers._sorting import _entmax15_sorted, _sparsemax_sorted, _threshold


def _threshold_and_support(X: torch.Tensor, dim: int, k: int | None, solve):
    Z = X.movedim(dim, -1)
    tau = _threshold(Z, k, solve)
    size = (Z > tau).sum(-1, keepdim=True)
    return tau.movedim(-1, dim), size.movedim(-1, dim)


def _sparsemax_threshold_and_support(X: torch.Tensor, dim: int = -1, k: int | None = None):
    """Threshold and support size of sparsemax along ``dim``."""
    return _threshold_and_support(X, dim, k, _sparsemax_sorted)


def _entmax_threshold_and_support(X: torch.Tensor, dim: int = -1, k: int | None = None):
    """Threshold and support size of 1.5-entmax along ``dim`` (``X`` already halved)."""
    return _threshold_and_support(X, dim, k, _entmax15_sorted)
