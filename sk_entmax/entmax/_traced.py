"""The compiled (``torch.compile``) forms of the Newton solvers: data-independent passes in
stages, each stage's branch taken by ``torch.cond``.

A compiled graph cannot stop as soon as a row settles: the passes run in stages
(:data:`_TRACED_STAGES`), the result finished after the first stage at which every row has
settled, the sort (or bisection) taken when one has not after the last. Wide rows start from
the threshold of their blocks' maxima (:func:`_block_start`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from sk_entmax.entmax._safe_ops import row_stats
from sk_entmax.entmax._sorting import _NEG_INF, _entmax15_sorted_rows, _sparsemax_sorted_rows

# The compiled solvers' Newton passes, in stages (a compiled graph cannot stop as soon as it
# may): after each stage, if every row has settled the result is finished, else the next stage
# runs, in branches of ``torch.cond`` that run only then; after the last one every row is
# solved again by the full sort (or bisection). Typical rows settle within the first two
# stages: random rows in 4 to 7 passes from -1, in 2 to 4 from the block start of wide rows
# (:func:`_block_start`). Every pass reads the whole input, so a stage is worth its cond
# (a host read of one flag) on every input but the smallest.
_TRACED_STAGES = (3, 3, 4)


# Rows at least this wide start the compiled passes from the threshold of their blocks'
# maxima, blocks of _BLOCK entries (see _block_start)
_BLOCK = 32


_BLOCKED_WIDTH = 256


def _block_maxima(Z: torch.Tensor) -> torch.Tensor:
    """The maximum of each block of :data:`_BLOCK` consecutive entries of each row (the last
    block padded with ``-inf``): shape ``(..., ceil(width / _BLOCK))``."""
    width = Z.shape[-1]
    blocks = -(-width // _BLOCK)
    pad = blocks * _BLOCK - width
    if pad:
        Z = nn.functional.pad(Z, (0, pad), value=_NEG_INF)
    return Z.reshape(*Z.shape[:-1], blocks, _BLOCK).amax(-1)


def _block_start(
    passes: Callable[..., tuple[torch.Tensor, ...]],
    Z: torch.Tensor,
    state: tuple[torch.Tensor, ...],
) -> tuple[torch.Tensor, ...]:
    """The state that the compiled Newton passes over the rows of ``Z`` (maximum 0) start
    from: ``state`` itself, or for rows at least :data:`_BLOCKED_WIDTH` wide a threshold
    closer to the root: the larger of ``state``'s (itself below the root) and that of the
    blocks' maxima (:func:`_block_maxima`), after ``sum(_TRACED_STAGES)`` passes over them
    from -1.

    The maxima are a subset of the row's entries that holds its maximum, and a subset's
    threshold lies between -1 and the row's (its sum of ``[z - tau]_+`` terms is smaller at
    every ``tau``); the passes, started below the subset's root, never overshoot it. So the
    start stays below the row's root, as the passes over the row need, and is the root itself
    when the maxima hold the whole support. On rows 20000 wide this cuts the passes over the
    row from 6 or 7 to 2 or 3, for about one pass's worth of reading. ``passes(Z, *state,
    n)`` returns ``(settled, tau, *rest)``; only ``tau`` is kept, the rest of ``state``
    starting afresh.
    """
    if Z.shape[-1] < _BLOCKED_WIDTH:
        return state
    tau, *rest = state
    start = (torch.full_like(tau, -1.0), *rest)
    _, block_tau, *_ = passes(_block_maxima(Z), *start, sum(_TRACED_STAGES))
    return (torch.maximum(tau, block_tau), *rest)


def _staged(
    passes: Callable[..., tuple[torch.Tensor, ...]],
    finish: Callable[..., torch.Tensor],
    fallback: Callable[[torch.Tensor], torch.Tensor],
    Z: torch.Tensor,
    state: tuple[torch.Tensor, ...],
    stages: tuple[int, ...] | None = None,
) -> torch.Tensor:
    """The compiled solvers' stages (:data:`_TRACED_STAGES`, or ``stages``):
    ``passes(Z, *state, n)`` returns ``(settled, *state)`` after ``n`` Newton passes,
    ``finish(Z, *state)`` the result of a settled state and ``fallback(Z)`` the sort's, taken
    when a row has not settled after the last stage."""
    n, *rest = _TRACED_STAGES if stages is None else stages
    settled, *state = passes(Z, *state, n)
    if rest:

        def more(Z: torch.Tensor, *state: torch.Tensor) -> torch.Tensor:
            return _staged(passes, finish, fallback, Z, state, tuple(rest))

    else:

        def more(Z: torch.Tensor, *state: torch.Tensor) -> torch.Tensor:
            return fallback(Z)

    return torch.cond(settled.all(), finish, more, (Z, *state))


def _sparsemax_passes(Z: torch.Tensor, tau: torch.Tensor, size: torch.Tensor, n: int):
    """``n`` steps of :func:`~sk_entmax.entmax._newton._sparsemax_newton` in
    data-independent ops (no row frozen: a settled row's steps only correct rounding); a row
    is settled when its support size did not change in the last pass."""
    for _ in range(n):
        D = (Z - tau).relu()
        last, size = size, (D > 0).to(Z.dtype).sum(-1, keepdim=True).clamp(min=1)
        tau = tau + (D.sum(-1, keepdim=True) - 1) / size
    return size == last, tau, size


def _sparsemax_finish(Z: torch.Tensor, tau: torch.Tensor, size: torch.Tensor) -> torch.Tensor:
    """Sparsemax from the support ``Z > tau`` of ``size`` entries, its threshold in closed
    form (as at the end of :func:`~sk_entmax.entmax._newton._sparsemax_newton`)."""
    tau = (torch.where(Z > tau, Z, 0.0).sum(-1, keepdim=True) - 1) / size
    return (Z - tau).relu()


def _sparsemax_traced(Z: torch.Tensor) -> torch.Tensor:
    """:func:`~sk_entmax.entmax._exact._sparsemax_last` for ``torch.compile`` (:func:`_staged`)."""
    max_val, _ = row_stats(Z)
    Z = Z - max_val
    tau = Z.sum(-1, keepdim=True).sub(1).div(Z.shape[-1]).clamp(min=-1)
    state = _block_start(_sparsemax_passes, Z, (tau, torch.zeros_like(tau)))
    return _staged(_sparsemax_passes, _sparsemax_finish, _sparsemax_sorted_rows, Z, state)


def _entmax15_passes(Z: torch.Tensor, tau: torch.Tensor, n: int):
    """``n`` steps of :func:`~sk_entmax.entmax._newton._power_newton` at ``m = 2`` in
    data-independent ops; a row is settled when its last step fell within the tolerance (a
    NaN row is settled)."""
    tol = torch.finfo(Z.dtype).eps * 4
    tiny = torch.finfo(Z.dtype).tiny
    for _ in range(n):
        D = (Z - tau).relu()
        g_sum = D.sum(-1, keepdim=True)
        total = D.square().sum(-1, keepdim=True)
        norm = total.sqrt()
        step = (norm - 1) * total / (norm * g_sum).clamp(min=tiny)
        tau = tau + step
    return ~(step.abs() > tol), tau


def _entmax15_finish(Z: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """1.5-entmax of halved rows from the support ``Z > tau``, in the closed form of
    :func:`~sk_entmax.entmax._wide_rows.entmax15_closed_form`."""
    support = Z > tau
    size = support.sum(-1, keepdim=True).clamp(min=1).to(Z.dtype)
    Zs = torch.where(support, Z, 0.0)
    s1 = Zs.sum(-1, keepdim=True)
    s2 = Zs.square().sum(-1, keepdim=True)
    mean = s1 / size
    tau = mean - ((1 - (s2 - s1 * mean)) / size).clamp(min=0).sqrt()
    P = (Z - tau).relu().square()
    total = P.sum(-1, keepdim=True)
    return P / torch.where(total > 0, total, 1)


def _entmax15_traced(Z: torch.Tensor) -> torch.Tensor:
    """:func:`~sk_entmax.entmax._exact._entmax15_last` for ``torch.compile`` (:func:`_staged`)."""
    max_val, _ = row_stats(Z)
    Z = (Z - max_val) / 2
    state = _block_start(_entmax15_passes, Z, (torch.full_like(max_val, -1.0),))
    return _staged(_entmax15_passes, _entmax15_finish, _entmax15_sorted_rows, Z, state)
