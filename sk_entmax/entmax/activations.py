"""Exact sparse mappings: sparsemax and 1.5-entmax by sorting (or partial sorting).

Both maps solve, along one axis,

.. math::

    \\operatorname{entmax}_\\alpha(x) = \\arg\\max_{p \\in \\Delta} \\langle x, p \\rangle
    + H^T_\\alpha(p),

with the Tsallis entropy :math:`H^T_\\alpha`. For :math:`\\alpha = 2` (sparsemax, Martins &
Astudillo 2016) the solution is :math:`p = [x - \\tau]_+`, for :math:`\\alpha = 1.5` (Peters
et al. 2019) it is :math:`p = [x/2 - \\tau]_+^2`. The threshold :math:`\\tau` has a closed form
once the support is known.

By default (``k=None``) the threshold is found without sorting, by Newton steps that start
below it and never overshoot (see :func:`_sparsemax_newton` and :func:`_power_newton`): a
handful of passes over the input, each a subtraction, a clamp and two row sums, instead of a
sort. Sparsemax stops exactly, when the support stops shrinking; 1.5-entmax when the step
falls to the level of rounding. Rows that have not settled after ``_MAX_PASSES`` passes (it
takes crafted inputs) are solved again by sorting, so the cap bounds the time, never the
accuracy. ``k`` asks for a partial sort of the ``k`` largest entries instead; rows whose
support turns out to fill all ``k`` slots are solved again with ``2 k``, and so on, so that
result is exact too.

Each map has a custom autograd function whose backward pass uses only the saved output,
and a plain-op path (``training=False``) that ``torch.jit.trace``, ``torch.export`` and ONNX
can take. The plain path always sorts fully, because the number of Newton passes and the
doubling of ``k`` both depend on the data.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.autograd import Function

from sk_entmax.entmax._common import (
    _MappingModule,
    apply_last,
    compiling,
    exporting,
    ieee_sqrt,
    owner_of,
    row_stats,
    row_sum,
    safe_div,
    with_support,
)
from sk_entmax.entmax._wide_rows import entmax15_closed_form as _entmax15_closed_form
from sk_entmax.entmax._wide_rows import entmax15_rows, entmax_vjp_rows
from sk_entmax.entmax._wide_rows import on_support as _on_support
from sk_entmax.entmax.algorithms import triton_path
from sk_entmax.entmax.constraints import invalid

__all__ = ["Entmax15", "Sparsemax", "entmax15", "sparsemax"]

_NEG_INF = float("-inf")


def _check_k(k: int | None, owner: str | None = None) -> int | None:
    """``k`` (a parameter of ``owner``): None or a positive Python int."""
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise invalid("k", owner_of(owner), "None or an integer >= 1", k)
    return k


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


# --------------------------------------------------------------------------- sort-free


# Newton passes before the rows that have not settled yet are handed to the sort-based (or
# bisection) solver; typical inputs settle within 4 to 10.
_MAX_PASSES = 40


def _pass_sum(T: torch.Tensor, dim: int) -> torch.Tensor:
    """The row sums of a Newton pass (``dim`` kept): torch's along the last axis, and in the
    column layout (``dim=0``) :func:`~sk_entmax.entmax._common.row_sum`'s pairwise tree of
    elementwise additions. The tree's order is fixed: torch's sum over the first axis adds
    the columns one after the other when there are many rows, but as the lanes of one
    vector when there is a single row, so a row alone would round otherwise than in a batch;
    and an exported graph repeats the tree exactly (:mod:`sk_entmax.export`)."""
    return row_sum(T, 0) if dim == 0 else T.sum(dim, keepdim=True)


def _sparsemax_newton(Z: torch.Tensor, dim: int = -1) -> tuple[torch.Tensor, torch.Tensor]:
    """Sparsemax of rows whose maximum is 0, without sorting; returns ``(P, settled)``.

    ``f(tau) = sum_i [z_i - tau]_+ - 1`` is convex, decreasing and piecewise linear, and
    each pass takes the Newton step ``tau += f(tau) / |S|`` with ``S = {i : z_i > tau}``,
    which is the closed-form threshold of the current support (Michelot, 1986). Started
    below the solution (``-1`` and ``(sum z - 1) / d`` both are), the steps never overshoot
    and the supports shrink; once a pass finds the same support size as the one before, the
    support is the true one. Such rows are frozen where they are (without that pass's step),
    so that the passes the rest of the batch still takes find the same support for them: a
    row stops where it would stop alone, whatever the rest of the batch. ``settled``
    (``Z``'s shape with ``dim`` of size 1) marks the rows that stopped within
    :data:`_MAX_PASSES` passes; the others hold a valid but unfinished iterate that the
    caller must replace.

    The result is then computed once more from the support found, by the closed form
    ``tau = (sum_S z - 1) / |S|`` with :func:`~sk_entmax.entmax._common.row_sum`: it
    depends on the support alone, not on the steps that found it, so a row padded with
    ``-inf`` gives the same output as the row alone, bit for bit.

    The rows run along ``dim``: ``-1``, or ``0`` for the column layout of narrow rows (see
    :func:`_shifted_columns`), where a row sum is a sum of ``d`` contiguous vectors.

    One scratch tensor serves each pass, first for ``[z - tau]_+`` and then, in place, for
    its indicator; ``P`` is computed into it once more at the end. (On CPU a fresh tensor
    costs more than two passes over a reused one: its pages are zeroed on first touch.)
    """
    d = Z.shape[dim]
    tau = _pass_sum(Z, dim).sub_(1).div_(d).clamp_(min=-1)
    P = torch.empty_like(Z)
    # 1 while a row moves, 0 once it has settled: float masks, because on CPU comparisons
    # into bool tensors, masked_fill_ and all() cost several float ops each
    active = torch.ones_like(tau)
    moved = torch.empty_like(tau)
    size = None
    for _ in range(_MAX_PASSES):
        mass = _pass_sum(torch.sub(Z, tau, out=P).relu_(), dim)
        # the top entry (0 > tau) is always in a row's support: the size is 0 only in a
        # fully masked or a NaN row, where 1 serves as well (no NaN; settled next pass)
        new_size = P.sign_().sum(dim, keepdim=True).clamp_(min=1)
        step = mass.sub_(1).div_(new_size)
        if size is None:
            tau.add_(step)
        else:
            # a row whose support kept its size has its support: it stops where it is, so
            # that the passes other rows of the batch still take recompute the same support
            # for it (the threshold itself comes from the closed form below)
            active.mul_(torch.ne(new_size, size, out=moved))
            if active.amax().item() == 0:
                break
            tau.addcmul_(step, active)
        size = new_size
    # the threshold of the support found, in closed form: P holds its indicator, and the
    # product's 0 * -inf outside the support is NaN, set to 0
    tau = row_sum(_on_support(P, Z), dim).sub_(1).div_(new_size)
    return torch.sub(Z, tau, out=P).relu_(), active == 0


def _floor_threshold(exponent: float) -> float:
    """For ``0 < exponent < 1``, a value just above ``(2 ** -120) ** exponent``, or 0.

    Entries clamped up to ``2 ** -120`` and raised to ``exponent`` (by ``exp2(log2(.))``)
    all fall below it, while entries above ``2 ** -120 * 1.001 ** (1 / exponent)`` (at most
    ``1.02 * 2 ** -120``) stay above it. Below ``exponent = 0.05`` no such value separates
    them reliably: 0 tells the caller to mask with the support's indicator instead.
    """
    if exponent >= 1:
        return 2.0**-120  # negligible: nothing to threshold
    if exponent < 0.05:
        return 0.0
    return 1.001 * 2.0 ** (-120 * exponent)


def _integer_exponent(m: float) -> int | None:
    """``m - 1`` as an int when it is exactly an integer from 2 to 9, else None.

    Then ``[zb - tau]_+ ** (m - 1)`` is a few multiplications, more accurate than
    ``exp2(log2(.))`` and many times cheaper. ``m = 1 / (alpha - 1)`` is exact for alpha =
    1.25 (4) or 1.125 (8), not for alpha = 1.2 (5 plus a unit of rounding): rounding such
    an ``m`` would move the result by a few units of float64 rounding, so it is left alone.
    """
    k = int(m - 1)
    return k if 2 <= k <= 9 and m - 1 == k else None


def _integer_power_(G: torch.Tensor, k: int, scratch: torch.Tensor) -> torch.Tensor:
    """``G ** k`` in place for ``1 <= k <= 9``, by squarings and products (``scratch``: G's size).

    (``pow`` by 2 and 3 is as cheap as a product on CPU, by any other integer it is not.)
    """
    if k % 2:
        if k == 3:
            return G.pow_(3)
        if k > 1:
            scratch.copy_(G)
            _integer_power_(G, k - 1, scratch)
            G.mul_(scratch)
        return G
    G.square_()
    return G if k == 2 else _integer_power_(G, k // 2, scratch)


def _power_newton(
    Zb: torch.Tensor, m: float | torch.Tensor, normalize: bool = True, dim: int = -1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Solve ``sum_i [zb_i - tau]_+ ** m = 1`` for rows whose maximum is 0; ``m >= 1``.

    Returns ``(P, settled)`` with ``P = [zb - tau]_+ ** m``, divided by its row sum if
    ``normalize``, and ``settled`` of ``Zb``'s shape with ``dim`` of size 1, as in
    :func:`_sparsemax_newton` (the rows run along ``dim``). ``m`` is a number, or a tensor
    of shape ``(..., 1)`` with one exponent per row (then ``dim`` is -1).

    The solution lies in ``[-1, 0)``. Newton runs on ``h(tau) = ||[zb - tau]_+||_m - 1``
    rather than on the sum itself: ``h`` is convex and decreasing too, so from a start below
    the root (``-1``) the steps never overshoot, and unlike the sum it is linear in ``tau``
    when a single entry dominates, which is where plain Newton on a power crawls. The step is
    ``(N - 1) S / (N sum_i g_i)`` with ``S = sum p``, ``N = S ** (1 / m)``,
    ``g = [zb - tau]_+ ** (m - 1)`` and ``p = g [zb - tau]_+``. On CPU ``pow`` costs several
    times ``exp2(log2(.))``, and both are slow on zeros, infinities and subnormal numbers, so
    ``g`` is computed from the entries clamped up to a floor at which ``g`` is still a
    normal number; below ``m = 2`` the floor's ``g`` is not negligible and is thresholded
    back to 0 (``p`` has exact zeros anyway; with one ``m`` per row of which some are below
    2, or ``m`` within 0.05 of 1, the support's indicator masks it, in a third scratch
    tensor). When ``m - 1`` is an integer (alpha = 1.25 or 1.125:
    :func:`_integer_exponent`), ``g`` is a few products of the clamped entries instead. Two
    scratch tensors serve all the passes (one for ``m = 2``, three for an integer ``m - 1``
    from 4 on), ``P`` being computed in place in the last one.

    A row stops at the first step below ``eps (2 + 4 / m)`` (a few units of rounding of
    ``tau``; the steps converge quadratically, and their rounding noise is about ``eps``),
    or when a step below four times that fails to halve the one before, which only rounding
    noise does. The error of ``tau`` is then about that last step, and that of ``p`` about
    ``m`` times it. For ``m = 2`` (1.5-entmax) the result is then computed again from the
    support found, in closed form (:func:`_entmax15_closed_form`), so that it does not depend
    on the steps taken, and so not on ``-inf`` padding either. For other ``m`` the start
    (``-1``) and the sums (:func:`~sk_entmax.entmax._common.row_sum`) ignore ``-inf``
    padding; only ``exp2`` and ``log2``, which on CPU round an entry differently by its
    position (vectorized or not), can move a padded row's result, by a unit of rounding
    (``exp`` and ``log`` would not, at 1.5 times the cost).
    """
    per_row = isinstance(m, torch.Tensor)
    square = not per_row and m == 2
    if square and dim in (-1, Zb.dim() - 1) and not _narrow(Zb):
        # wide rows of 1.5-entmax: chunk by chunk, from a closer start (_wide_rows)
        P, settled = entmax15_rows(Zb.reshape(-1, Zb.shape[-1]), _MAX_PASSES)
        return P.view(Zb.shape), settled.view(*Zb.shape[:-1], 1)
    integer = None if per_row or square else _integer_exponent(m)
    start = list(Zb.shape)
    start[dim] = 1
    # -1 is below the root of every row, and unlike a start from the row's mean it does not
    # depend on how many -inf entries pad the row
    tau = Zb.new_full(start, -1.0)
    tol = torch.finfo(Zb.dtype).eps * (2 + 4 / m)
    # floor ** (m - 1) >= 2 ** -120, a normal number; g_floor: just above it
    if per_row:
        floor = torch.exp2(-120 / (m - 1).clamp(min=1))
        # the floor's g is 2 ** -120 (negligible) in rows with m >= 2; below, mask it
        mask_g = bool((m < 2).any())
    else:
        floor = 2.0 ** (-120 / max(m - 1, 1))
        g_floor = _floor_threshold(m - 1)
        mask_g = g_floor == 0
    power_scratch = integer is not None and integer % 2 == 1 and integer > 3
    if mask_g or power_scratch:
        indicator = torch.empty_like(Zb)  # the support's indicator, or the power's scratch
    D = torch.empty_like(Zb)  # [zb - tau]_+, then p in place when m = 2
    G = D if square else torch.empty_like(Zb)  # g, then p in place
    tiny = torch.finfo(Zb.dtype).tiny
    inv_m = 1 / m
    active = torch.ones_like(tau)  # float masks, as in _sparsemax_newton
    moved = torch.empty_like(tau)
    last = None
    for _ in range(_MAX_PASSES):
        torch.sub(Zb, tau, out=D).relu_()
        if square:
            g_sum = _pass_sum(D, dim)
            total = _pass_sum(D.square_(), dim)
        else:
            torch.clamp(D, min=floor, out=G)
            if integer is not None:  # m - 1 >= 2: the floor's g is negligible
                _integer_power_(G, integer, indicator if power_scratch else G)
            else:
                G.log2_().mul_(m - 1).exp2_()
                if mask_g:
                    G.mul_(torch.sign(D, out=indicator))
                elif not per_row and m < 2:
                    nn.functional.threshold_(G, g_floor, 0.0)
            # sums that -inf padding cannot change: the steps, and so the result, do not
            # depend on it
            g_sum = row_sum(G, dim)
            total = row_sum(G.mul_(D), dim)
        # S ** (1 / m) as exp2(log2(S) / m): pow costs several times that on CPU
        norm = ieee_sqrt(total) if square else torch.log2(total).mul_(inv_m).exp2_()
        # a fully masked row has S = 0, and 0 rather than 0 / 0 as its step; elsewhere the
        # denominator is at least 1 / d ** 2
        step = (norm - 1).mul_(total).div_(norm.mul_(g_sum).clamp_(min=tiny))
        size = step.abs()
        # NaN (a NaN row) compares False: that row is done
        active.mul_(torch.gt(size, tol, out=moved))
        if last is not None:
            # still moving: above 4 tol, or less than half the step before
            torch.sub(last, size, alpha=2, out=moved)
            torch.maximum(moved, size - 4 * tol, out=moved)
            active.mul_(moved.gt_(0))
        if active.amax().item() == 0:
            break
        tau.addcmul_(step, active)
        last = size
    if square:
        return _entmax15_closed_form(Zb, G, dim), active == 0
    if normalize:
        G.div_(torch.where(total > 0, total, 1))
    return G, active == 0


def _unsettled_rows(settled: torch.Tensor) -> torch.Tensor | None:
    """Boolean index (over the leading axes) of the rows a Newton solver left unfinished."""
    if bool(settled.all()):
        return None
    return ~settled.squeeze(-1)


def _sparsemax_sorted_rows(Z: torch.Tensor) -> torch.Tensor:
    """Sparsemax of rows whose maximum is 0 by a full sort (the Newton fallback)."""
    return (Z - _threshold(Z, None, _sparsemax_sorted)).clamp_min(0)


def _entmax15_sorted_rows(Z: torch.Tensor) -> torch.Tensor:
    """1.5-entmax of halved rows whose maximum is 0 by a full sort (the Newton fallback)."""
    return (Z - _threshold(Z, None, _entmax15_sorted)).clamp_min(0).square()


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


# --------------------------------------------------------------------------- narrow rows

# Rows at most this wide are solved in a column layout. On CPU a reduction along a short
# last axis, and a row-wise broadcast over one, cost several times an elementwise pass
# (32768 x 5 float64: a row sum about 190 us, a product 35 us), while in the transposed
# ``(width, rows)`` layout a row sum is ``width - 1`` additions of contiguous vectors and a
# broadcast runs along them (about 45 us each). The two transpositions are repaid within
# the first passes up to about 10 wide (measured side by side: 0.35 to 0.7 of the time at
# widths 2 to 5, 0.8 to 0.9 at 10, slower from 12 on in float64).
_NARROW_WIDTH = 10


def _narrow(Z: torch.Tensor) -> bool:
    """Whether the rows of ``Z`` (its last axis) take the column layout."""
    return Z.shape[-1] <= _NARROW_WIDTH


def _shifted_columns(Z: torch.Tensor) -> torch.Tensor:
    """The rows of ``Z`` as the columns of a fresh ``(width, rows)`` tensor, shifted to 0.

    Each column's maximum is subtracted as :func:`row_stats` says (a fully masked row stays
    ``-inf``, a NaN row NaN); the leading axes of ``Z`` are flattened into the rows.
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
    applies, whose every addition has a fixed order (:func:`_pass_sum`), so that an ONNX
    graph of it (:func:`sk_entmax.export.to_onnx`) finds the same exact zeros, row by row,
    wherever entries tie on the support's boundary."""
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


# --------------------------------------------------------------------------- compiled

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
    """``n`` steps of :func:`_sparsemax_newton` in data-independent ops (no row frozen: a
    settled row's steps only correct rounding); a row is settled when its support size
    did not change in the last pass."""
    for _ in range(n):
        D = (Z - tau).relu()
        last, size = size, (D > 0).to(Z.dtype).sum(-1, keepdim=True).clamp(min=1)
        tau = tau + (D.sum(-1, keepdim=True) - 1) / size
    return size == last, tau, size


def _sparsemax_finish(Z: torch.Tensor, tau: torch.Tensor, size: torch.Tensor) -> torch.Tensor:
    """Sparsemax from the support ``Z > tau`` of ``size`` entries, its threshold in closed
    form (as at the end of :func:`_sparsemax_newton`)."""
    tau = (torch.where(Z > tau, Z, 0.0).sum(-1, keepdim=True) - 1) / size
    return (Z - tau).relu()


def _sparsemax_traced(Z: torch.Tensor) -> torch.Tensor:
    """:func:`_sparsemax_last` for ``torch.compile`` (:func:`_staged`)."""
    max_val, _ = row_stats(Z)
    Z = Z - max_val
    tau = Z.sum(-1, keepdim=True).sub(1).div(Z.shape[-1]).clamp(min=-1)
    state = _block_start(_sparsemax_passes, Z, (tau, torch.zeros_like(tau)))
    return _staged(_sparsemax_passes, _sparsemax_finish, _sparsemax_sorted_rows, Z, state)


def _entmax15_passes(Z: torch.Tensor, tau: torch.Tensor, n: int):
    """``n`` steps of :func:`_power_newton` at ``m = 2`` in data-independent ops; a row is
    settled when its last step fell within the tolerance (a NaN row is settled)."""
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
    :func:`_entmax15_closed_form`."""
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
    """:func:`_entmax15_last` for ``torch.compile`` (:func:`_staged`)."""
    max_val, _ = row_stats(Z)
    Z = (Z - max_val) / 2
    state = _block_start(_entmax15_passes, Z, (torch.full_like(max_val, -1.0),))
    return _staged(_entmax15_passes, _entmax15_finish, _entmax15_sorted_rows, Z, state)


def _sparsemax_plain(Z: torch.Tensor) -> torch.Tensor:
    """Sparsemax by a full sort, in plain ops that tracing and export can take."""
    max_val, _ = row_stats(Z)
    Z = Z - max_val
    tau = _threshold(Z, None, _sparsemax_sorted)
    return (Z - tau).clamp_min(0)


def _entmax15_plain(Z: torch.Tensor) -> torch.Tensor:
    """1.5-entmax by a full sort, in plain ops that tracing and export can take."""
    max_val, _ = row_stats(Z)
    Z = (Z - max_val) / 2
    tau = _threshold(Z, None, _entmax15_sorted)
    return (Z - tau).clamp_min(0).square()


# Entries below this are raised to it before a square root; sqrt(2 ** -120) = 2 ** -60.
_SQRT_FLOOR = 2.0**-120


def sqrt_support(Y: torch.Tensor) -> torch.Tensor:
    """``sqrt(Y)`` for ``Y >= 0``, with exact zeros where ``Y`` is 0 (or below ``2 ** -120``).

    On CPU ``sqrt`` of 0 costs several times ``sqrt`` of a positive number, and the output of
    a sparse mapping is mostly zeros; so ``Y`` is raised to ``2 ** -120`` first, and the
    entries left at ``2 ** -60`` are set back to 0: three cheap passes instead of one slow
    one. Entries below ``2 ** -120`` weigh nothing in a gradient (their ``sqrt`` is below
    ``1e-18``).
    """
    G = torch.clamp(Y, min=_SQRT_FLOOR).sqrt_()
    return nn.functional.threshold_(G, 1.001 * 2.0**-60, 0.0)


def entmax_vjp(dY: torch.Tensor, gppr: torch.Tensor) -> torch.Tensor:
    """Vector-Jacobian product of an entmax-type map along the last axis.

    With ``gppr = 1 / Omega''(p)`` on the support (0 elsewhere), the Jacobian is
    ``diag(g) - g g^T / sum(g)``. Rows with an empty support get a zero gradient.
    """
    gdY = gppr * dY
    q = safe_div(gdY.sum(-1, keepdim=True), gppr.sum(-1, keepdim=True))
    if torch.is_grad_enabled():  # building a second derivative: no in-place ops
        return gdY - q * gppr
    return gdY.addcmul_(q, gppr, value=-1)


class SparsemaxFunction(Function):
    """Autograd function for sparsemax along the last axis; saves only the output."""

    @staticmethod
    def forward(ctx, Z: torch.Tensor, k: int | None) -> torch.Tensor:
        Y = _sparsemax_last(Z, k)
        ctx.save_for_backward(Y)
        return Y

    @staticmethod
    def backward(ctx, dY: torch.Tensor):
        (Y,) = ctx.saved_tensors
        return entmax_vjp_rows(dY, Y, torch.sign), None  # Y >= 0: the support's indicator


class Entmax15Function(Function):
    """Autograd function for 1.5-entmax along the last axis; saves only the output."""

    @staticmethod
    def forward(ctx, Z: torch.Tensor, k: int | None) -> torch.Tensor:
        Y = _entmax15_last(Z, k)
        ctx.save_for_backward(Y)
        return Y

    @staticmethod
    def backward(ctx, dY: torch.Tensor):
        (Y,) = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph: keep sqrt's gradient finite at 0
            positive = Y > 0
            gppr = torch.where(positive, torch.where(positive, Y, 1).sqrt(), 0)
            return entmax_vjp(dY, gppr), None
        return entmax_vjp_rows(dY, Y, sqrt_support), None


def _sparse_map(
    function: type[Function],
    plain: Callable[[torch.Tensor], torch.Tensor],
    X: torch.Tensor,
    dim: int,
    k: int | None,
    training: bool,
    return_support_size: bool,
    owner: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """The body of :func:`sparsemax` and :func:`entmax15`, ``k`` checked: the custom
    autograd ``function`` (its ``apply`` looked up now) when ``training``, else the plain-op
    ``plain``. ``owner`` is the public name an error about ``dim`` names. On CUDA the
    Triton kernels serve it when they can (:func:`~sk_entmax.entmax.algorithms.triton_path`)."""
    if not compiling():  # (a traced graph holds no Triton launch)
        alpha = 2.0 if function is SparsemaxFunction else 1.5
        P = triton_path(X, alpha, dim, None, owner)
        if P is not None:
            return with_support(P, dim, return_support_size)
    if training:
        P = apply_last(function.apply, X, dim, k, owner=owner)
    else:
        P = apply_last(plain, X, dim, owner=owner)
    return with_support(P, dim, return_support_size)


def _sparsemax(
    X: torch.Tensor,
    dim: int = -1,
    k: int | None = None,
    training: bool = True,
    return_support_size: bool = False,
    owner: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """:func:`sparsemax` with ``k`` already checked by the public function calling it."""
    return _sparse_map(
        SparsemaxFunction, _sparsemax_plain, X, dim, k, training, return_support_size, owner
    )


def _entmax15(
    X: torch.Tensor,
    dim: int = -1,
    k: int | None = None,
    training: bool = True,
    return_support_size: bool = False,
    owner: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """:func:`entmax15` with ``k`` already checked by the public function calling it."""
    return _sparse_map(
        Entmax15Function, _entmax15_plain, X, dim, k, training, return_support_size, owner
    )


def sparsemax(
    X: torch.Tensor,
    dim: int = -1,
    k: int | None = None,
    training: bool = True,
    *,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """sparsemax: the Euclidean projection onto the probability simplex.

    Solves ``min_p ||x - p||^2`` subject to ``p >= 0, sum(p) == 1`` along ``dim``
    (Martins & Astudillo, 2016). The result has exact zeros wherever ``x`` falls below the
    threshold.

    Parameters
    ----------
    X : torch.Tensor
        Scores. ``-inf`` entries are masked: they get probability 0, and a row that is all
        ``-inf`` maps to all zeros with a zero gradient. A NaN gives NaN in its row only.
        So does ``+inf``, which has no limit defined here (as in ``torch.softmax``): its
        row gets NaN at least at the ``+inf`` entries; clip scores that may overflow.
        float16 and bfloat16 are computed in float32 and returned in the input dtype.
    dim : int, default=-1
        The axis along which to project; any axis, negative or not.
    k : int or None, default=None
        Partial-sort only the ``k`` largest entries; best slightly above the expected
        support size. Rows whose support reaches ``k`` are solved again with ``2 k``, so the
        result is exact for any ``k``. ``None`` sorts fully.
    training : bool, default=True
        ``True`` uses the custom autograd function (backward from the output alone);
        ``False`` uses plain ops with a full sort, for ``torch.jit.trace``,
        ``torch.export`` and ONNX. Both give the same values.
    return_support_size : bool, default=False
        Also return the support size: the number of nonzero entries along ``dim``, an
        int64 tensor shaped like ``X`` with ``dim`` of size 1 (as in the ``entmax``
        package's unreleased master). Keyword-only here, since the fourth positional
        argument is Ludwig's ``training``.

    Returns
    -------
    P : torch.Tensor
        Same shape and dtype as ``X``; non-negative, summing to 1 along ``dim``.
    support_size : torch.Tensor, optional
        Only with ``return_support_size=True``: the number of nonzeros of ``P`` along
        ``dim`` (int64, ``dim`` of size 1).

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import sparsemax
    >>> sparsemax(torch.tensor([-2.0, 0.0, 0.5]))
    tensor([0.0000, 0.2500, 0.7500])
    >>> sparsemax(torch.tensor([[-2.0, 0.0, 0.5]]), return_support_size=True)
    (tensor([[0.0000, 0.2500, 0.7500]]), tensor([[2]]))
    """
    k = _check_k(k, "sparsemax")
    return _sparsemax(X, dim, k, training, return_support_size, "sparsemax")


def entmax15(
    X: torch.Tensor,
    dim: int = -1,
    k: int | None = None,
    training: bool = True,
    *,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """1.5-entmax: a sparse mapping between softmax and sparsemax (Peters et al., 2019).

    Solves ``max_p <x, p> + H_1.5(p)`` subject to ``p >= 0, sum(p) == 1`` along ``dim``,
    where ``H_1.5(p) = (1 - sum p^1.5) / 0.75`` is the Tsallis 1.5-entropy. The solution is
    ``p = [x / 2 - tau]_+^2``.

    Parameters
    ----------
    X : torch.Tensor
        Scores; ``-inf`` masking, NaN, ``+inf`` and half precision are handled as in
        :func:`sparsemax`.
    dim : int, default=-1
        The axis along which to apply the mapping.
    k : int or None, default=None
        Partial-sort size with doubling, as in :func:`sparsemax`.
    training : bool, default=True
        Custom autograd function (``True``) or traceable plain ops (``False``).
    return_support_size : bool, default=False
        Also return the support size: the number of nonzero entries along ``dim``, an
        int64 tensor shaped like ``X`` with ``dim`` of size 1 (as in the ``entmax``
        package's unreleased master). Keyword-only here, since the fourth positional
        argument is Ludwig's ``training``.

    Returns
    -------
    P : torch.Tensor
        Same shape and dtype as ``X``; non-negative, summing to 1 along ``dim``.
    support_size : torch.Tensor, optional
        Only with ``return_support_size=True``, as in :func:`sparsemax`.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import entmax15
    >>> entmax15(torch.tensor([-2.0, 0.0, 0.5]))
    tensor([0.0000, 0.3260, 0.6740])
    """
    k = _check_k(k, "entmax15")
    return _entmax15(X, dim, k, training, return_support_size, "entmax15")


class _ExactModule(_MappingModule):
    """Shared module logic of :class:`Sparsemax` and :class:`Entmax15`: both hold ``dim``,
    ``k`` and ``return_support_size``, and pass ``training`` on from the module's mode."""

    _argument_names = ("dim", "k")

    def __init__(
        self, dim: int = -1, k: int | None = None, return_support_size: bool = False
    ) -> None:
        super().__init__(return_support_size, dim=dim, k=k)

    def extra_repr(self) -> str:
        return self._with_support(f"dim={self.dim}, k={self.k}")


class Sparsemax(_ExactModule):
    """Module twin of :func:`sparsemax`; uses the plain-op path in ``eval()`` mode.

    Parameters
    ----------
    dim : int, default=-1
        The axis along which to project.
    k : int or None, default=None
        Partial-sort size with doubling (see :func:`sparsemax`).
    return_support_size : bool, default=False
        Return ``(P, support_size)`` (see :func:`sparsemax`).

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import Sparsemax
    >>> Sparsemax(dim=-1)(torch.tensor([[1.0, 2.0, 0.0]]))
    tensor([[0., 1., 0.]])
    """

    _function = staticmethod(sparsemax)


class Entmax15(_ExactModule):
    """Module twin of :func:`entmax15`; uses the plain-op path in ``eval()`` mode.

    Parameters
    ----------
    dim : int, default=-1
        The axis along which to apply the mapping.
    k : int or None, default=None
        Partial-sort size with doubling (see :func:`sparsemax`).
    return_support_size : bool, default=False
        Return ``(P, support_size)`` (see :func:`sparsemax`).

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import Entmax15
    >>> Entmax15()(torch.tensor([[-2.0, 0.0, 0.5]]))
    tensor([[0.0000, 0.3260, 0.6740]])
    """

    _function = staticmethod(entmax15)
