"""The exact sparsemax and 1.5-entmax along the last axis, without autograd: which solver
serves a call.

Narrow rows take the column layout (:mod:`._narrow`), wider ones Newton's steps along the last
axis (:mod:`._newton`), the unsettled rows and ``k=`` the sort (:mod:`._sorting`); under
``torch.compile`` the staged passes (:mod:`._traced`), under ``torch.export`` the full sort.
:func:`columns_map` is ``predict_proba``'s mapping, in the column layout at any width.
"""

from __future__ import annotations

import torch

from sk_entmax.entmax._narrow import _from_columns, _narrow, _shifted_columns, _unsettled_rows
from sk_entmax.entmax._newton import _power_newton, _sparsemax_newton
from sk_entmax.entmax._safe_ops import row_stats
from sk_entmax.entmax._sorting import (
    _entmax15_plain,
    _entmax15_sorted,
    _entmax15_sorted_rows,
    _sparsemax_plain,
    _sparsemax_sorted,
    _sparsemax_sorted_rows,
    _threshold,
)
from sk_entmax.entmax._traced import _entmax15_traced, _sparsemax_traced
from sk_entmax.entmax.tracing import compiling, exporting


def _sparsemax_fast(Z: torch.Tensor) -> torch.Tensor:
    """Sparsemax of rows whose maximum is 0: Newton, then sorting for unsettled rows."""
    P, settled = _sparsemax_newton(Z)
    rows = _unsettled_rows(settled)
    if rows is not None:
        P[rows] = _sparsemax_sorted_rows(Z[rows])
    return P


def _entmax15_fast(Z: torch.Tensor) -> torch.Tensor:
    """1.5-entmax of halved rows whose maximum is 0: Newton, then sorting if unsettled."""
    P, settled = _power_newton(Z, 2.0)
    rows = _unsettled_rows(settled)
    if rows is not None:
        P[rows] = _entmax15_sorted_rows(Z[rows])
    return P


def _sparsemax_narrow(Z: torch.Tensor) -> torch.Tensor:
    """Sparsemax of narrow rows (any shift) in the column layout."""
    ZT = _shifted_columns(Z)
    PT, settled = _sparsemax_newton(ZT, dim=0)
    return _from_columns(PT, settled, ZT, Z.shape, _sparsemax_sorted_rows)


def _entmax15_narrow(Z: torch.Tensor) -> torch.Tensor:
    """1.5-entmax of narrow rows (any shift) in the column layout."""
    ZT = _shifted_columns(Z).div_(2)
    PT, settled = _power_newton(ZT, 2.0, dim=0)
    return _from_columns(PT, settled, ZT, Z.shape, _entmax15_sorted_rows)


def columns_map(Z: torch.Tensor, alpha: float) -> torch.Tensor:
    """Sparsemax (``alpha=2``) or 1.5-entmax of the rows of ``Z`` (last axis, any width) in
    the column layout, without a gradient: the mapping the estimators' ``predict_proba``
    applies, whose every addition has a fixed order
    (:func:`~sk_entmax.entmax._newton._pass_sum`), so that an ONNX graph of it
    (:func:`sk_entmax.export.to_onnx`) finds the same exact zeros, row by row, wherever
    entries tie on the support's boundary."""
    return _sparsemax_narrow(Z) if alpha == 2 else _entmax15_narrow(Z)


def _sparsemax_last(Z: torch.Tensor, k: int | None) -> torch.Tensor:
    if compiling():
        return _sparsemax_plain(Z) if exporting() else _sparsemax_traced(Z)
    if k is None and _narrow(Z):
        return _sparsemax_narrow(Z)
    max_val, _ = row_stats(Z)
    Z = Z - max_val
    if k is None:
        return _sparsemax_fast(Z)
    tau = _threshold(Z, k, _sparsemax_sorted)
    return (Z - tau).clamp_min(0)


def _entmax15_last(Z: torch.Tensor, k: int | None) -> torch.Tensor:
    if compiling():
        return _entmax15_plain(Z) if exporting() else _entmax15_traced(Z)
    if k is None and _narrow(Z):
        return _entmax15_narrow(Z)
    max_val, _ = row_stats(Z)
    Z = (Z - max_val).div_(2)
    if k is None:
        return _entmax15_fast(Z)
    tau = _threshold(Z, k, _entmax15_sorted)
    return (Z - tau).clamp_min(0).square()
