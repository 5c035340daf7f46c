"""Exact thresholds of sparsemax and 1.5-entmax by sorting (or partial sorting).

For a support made of the ``r`` largest entries the threshold has a closed form; sorting the
row finds the largest ``r`` for which it lies below the ``r``-th entry. This is the fallback
of the traceable form (:mod:`._traceable`) for the rows its Newton passes leave unsettled.
:func:`_threshold` also takes ``k``, a partial sort of the ``k`` largest entries, doubled
for the rows whose support fills all ``k`` slots (exact too): the reference's private
threshold functions that its tests import are served by it (``tests/dropin/shim``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

_NEG_INF = float("-inf")


def _ranks(Zs: torch.Tensor) -> torch.Tensor:
    return torch.arange(1, Zs.shape[-1] + 1, device=Zs.device, dtype=Zs.dtype)


def _sparsemax_sorted(Zs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Threshold and support size from rows sorted in decreasing order.

    ``-inf`` entries (masked) sort last and are never in the support.
    """
    finite = Zs > _NEG_INF
    Zs = torch.where(finite, Zs, 0.0)
    csum = Zs.cumsum(-1) - 1
    support = (_ranks(Zs) * Zs > csum) & finite
    size = support.sum(-1, keepdim=True)
    tau = csum.gather(-1, (size - 1).clamp_min(0)) / size.clamp_min(1).to(Zs.dtype)
    return tau, size


def _entmax15_sorted(Zs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Threshold and support size of 1.5-entmax (inputs already halved), sorted rows.

    For a support made of the ``r`` largest entries, ``sum_i (z_i - tau)^2 = 1`` gives
    ``tau = mean - sqrt((1 - r * var) / r)``; the support is the largest ``r`` for which
    ``tau <= z_r``.
    """
    finite = Zs > _NEG_INF
    Zs = torch.where(finite, Zs, 0.0)
    rho = _ranks(Zs)
    mean = Zs.cumsum(-1) / rho
    mean_sq = (Zs * Zs).cumsum(-1) / rho
    delta = (1 - rho * (mean_sq - mean * mean)) / rho
    tau = mean - delta.clamp_min(0).sqrt()
    size = ((tau <= Zs) & finite).sum(-1, keepdim=True)
    tau = tau.gather(-1, (size - 1).clamp_min(0))
    return tau, size


_Solver = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def _threshold(Z: torch.Tensor, k: int | None, solve: _Solver) -> torch.Tensor:
    """Exact threshold along the last axis, partial-sorting ``k`` entries with doubling."""
    d = Z.shape[-1]
    if k is None or k >= d:
        return solve(Z.sort(dim=-1, descending=True).values)[0]
    tau, size = solve(Z.topk(k, dim=-1).values)
    unsolved = (size == k).squeeze(-1)
    while unsolved.any():
        k = 2 * k
        rows = Z[unsolved]
        if k >= d:
            sub_tau, _ = solve(rows.sort(dim=-1, descending=True).values)
            tau[unsolved] = sub_tau
            break
        sub_tau, sub_size = solve(rows.topk(k, dim=-1).values)
        tau[unsolved] = sub_tau
        still = torch.zeros_like(unsolved)
        still[unsolved] = (sub_size == k).squeeze(-1)
        unsolved = still
    return tau
