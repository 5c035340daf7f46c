"""The compiled (``torch.compile``) form of the alpha-entmax Newton solver: data-independent
passes in stages, each stage's branch taken by ``torch.cond``. (The exact maps' traceable
form, :mod:`._traceable`, runs its passes in one ``torch.while_loop`` instead.)

A compiled graph cannot stop as soon as a row settles: the passes run in stages
(:data:`_TRACED_STAGES`), the result finished after the first stage at which every row has
settled, bisection taken when one has not after the last. Wide rows start from
the threshold of their blocks' maxima (:func:`_block_start`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from sk_entmax.entmax.solvers._sorting import _NEG_INF

# The compiled solvers' Newton passes, in stages (a compiled graph cannot stop as soon as it
# may): after each stage, if every row has settled the result is finished, else the next stage
# runs, in branches of ``torch.cond`` that run only then; after the last one every row is
# solved again by bisection. Typical rows settle within the first two
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
    n: int = sum(_TRACED_STAGES),
) -> tuple[torch.Tensor, ...]:
    """The state that the compiled Newton passes over the rows of ``Z`` (maximum 0) start
    from: ``state`` itself, or for rows at least :data:`_BLOCKED_WIDTH` wide a threshold
    closer to the root: the larger of ``state``'s (itself below the root) and that of the
    blocks' maxima (:func:`_block_maxima`), after ``n`` passes over them from -1 (as many as
    the stages of :data:`_TRACED_STAGES` unless given).

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
    _, block_tau, *_ = passes(_block_maxima(Z), *start, n)
    return (torch.maximum(tau, block_tau), *rest)


def _staged(
    passes: Callable[..., tuple[torch.Tensor, ...]],
    finish: Callable[..., torch.Tensor],
    fallback: Callable[[torch.Tensor], torch.Tensor],
    Z: torch.Tensor,
    state: tuple[torch.Tensor, ...],
    stages: tuple[int, ...] = _TRACED_STAGES,
) -> torch.Tensor:
    """The compiled solvers' stages (``stages``, :data:`_TRACED_STAGES` unless given):
    ``passes(Z, *state, n)`` returns ``(settled, *state)`` after ``n`` Newton passes,
    ``finish(Z, *state)`` the result of a settled state and ``fallback(Z)`` bisection's, taken
    when a row has not settled after the last stage."""
    n, *rest = stages
    settled, *state = passes(Z, *state, n)
    if rest:

        def more(Z: torch.Tensor, *state: torch.Tensor) -> torch.Tensor:
            return _staged(passes, finish, fallback, Z, state, tuple(rest))

    else:

        def more(Z: torch.Tensor, *state: torch.Tensor) -> torch.Tensor:
            return fallback(Z)

    return torch.cond(settled.all(), finish, more, (Z, *state))
