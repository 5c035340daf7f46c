"""The column layout of narrow rows: rows at most :data:`_NARROW_WIDTH` wide as the columns of a
``(width, rows)`` tensor, in which a row sum is a sum of contiguous vectors.

The solvers themselves (:mod:`._newton`) run along ``dim=0`` in this layout; here are the
layout's width threshold, the transposition in and out, and the index of the rows a solver
left unsettled.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from sk_entmax.entmax.common import row_stats


def _unsettled_rows(settled: torch.Tensor) -> torch.Tensor | None:
    """Boolean index (over the leading axes) of the rows a Newton solver left unfinished."""
    if bool(settled.all()):
        return None
    return ~settled.squeeze(-1)


# Rows at most this wide are solved in a column layout. On CPU a reduction along a short
# last axis, and a row-wise broadcast over one, cost several times an elementwise pass
# (32768 x 5 float64: a row sum about 190 us, a product 35 us), while in the transposed
# ``(width, rows)`` layout a row sum is ``width - 1`` additions of contiguous vectors and a
# broadcast runs along them (about 45 us each). The two transpositions are repaid within
# the first passes up to about 10 wide (measured side by side: 0.35 to 0.7 of the time at
# widths 2 to 5, 0.8 to 0.9 at 10, slower from 12 on in float64).
_NARROW_WIDTH = 10


def _narrow(Z: torch.Tensor, width: int = _NARROW_WIDTH) -> bool:
    """Whether the rows of ``Z`` (its last axis) take the column layout: rows at most
    ``width`` wide (:data:`_NARROW_WIDTH` unless given)."""
    return Z.shape[-1] <= width


def _shifted_columns(Z: torch.Tensor) -> torch.Tensor:
    """The rows of ``Z`` as the columns of a fresh ``(width, rows)`` tensor, shifted to 0.

    Each column's maximum is subtracted as :func:`~sk_entmax.entmax.common._safe_ops.row_stats`
    says (a fully masked row stays ``-inf``, a NaN row NaN); the leading axes of ``Z`` are
    flattened into the rows.
    """
    Z = Z.reshape(-1, Z.shape[-1])
    # a product by 1 (exact) transposes narrow rows two or three times faster than copy_
    ZT = torch.mul(Z.t(), 1.0, out=Z.new_empty(Z.shape[::-1]))
    max_val, _ = row_stats(ZT, dim=0)
    return ZT.sub_(max_val)


def _from_columns(
    PT: torch.Tensor,
    settled: torch.Tensor,
    ZT: torch.Tensor,
    shape: torch.Size,
    finish: Callable[[torch.Tensor], torch.Tensor],
) -> torch.Tensor:
    """A column-layout solution back in ``shape``; unsettled rows redone by ``finish``.

    ``settled`` is ``(1, rows)``; ``finish`` maps the unsettled rows of the solver's input
    ``ZT`` (in the row layout, ``(r, width)``) to their solution.
    """
    P = torch.mul(PT.t(), 1.0, out=PT.new_empty(PT.shape[::-1]))  # as in _shifted_columns
    rows = _unsettled_rows(settled.reshape(-1, 1))
    if rows is not None:
        P[rows] = finish(ZT.t()[rows])
    return P.view(shape)
