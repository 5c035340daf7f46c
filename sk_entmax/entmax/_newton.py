"""Sort-free thresholds of sparsemax and of the power form of entmax, by Newton steps.

The steps start below the threshold and never overshoot (see :func:`_sparsemax_newton` and
:func:`_power_newton`): a handful of passes over the input, each a subtraction, a clamp and
two row sums, instead of a sort. Sparsemax stops exactly, when the support stops shrinking;
the power form when the step falls to the level of rounding. Rows that have not settled after
:data:`_MAX_PASSES` passes (it takes crafted inputs) are reported unsettled, and the caller
solves them again by sorting (:mod:`._sorting`) or bisection, so the cap bounds the time,
never the accuracy. The solvers run along the last axis, or along ``dim=0`` in the column
layout of narrow rows (:mod:`._narrow`).
"""

from __future__ import annotations

import torch
from torch import nn

from sk_entmax.entmax._narrow import _narrow
from sk_entmax.entmax._sums import ieee_sqrt, row_sum
from sk_entmax.entmax._wide_rows import entmax15_closed_form as _entmax15_closed_form
from sk_entmax.entmax._wide_rows import entmax15_rows, newton_step
from sk_entmax.entmax._wide_rows import on_support as _on_support

# Newton passes before the rows that have not settled yet are handed to the sort-based (or
# bisection) solver; typical inputs settle within 4 to 10.
_MAX_PASSES = 40


def _pass_sum(T: torch.Tensor, dim: int) -> torch.Tensor:
    """The row sums of a Newton pass (``dim`` kept): torch's along the last axis, and in the
    column layout (``dim=0``) :func:`~sk_entmax.entmax._sums.row_sum`'s pairwise tree of
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
    ``tau = (sum_S z - 1) / |S|`` with :func:`~sk_entmax.entmax._sums.row_sum`: it
    depends on the support alone, not on the steps that found it, so a row padded with
    ``-inf`` gives the same output as the row alone, bit for bit.

    The rows run along ``dim``: ``-1``, or ``0`` for the column layout of narrow rows (see
    :func:`~sk_entmax.entmax._narrow._shifted_columns`), where a row sum is a sum of ``d``
    contiguous vectors.

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
    (``-1``) and the sums (:func:`~sk_entmax.entmax._sums.row_sum`) ignore ``-inf``
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
        last = newton_step(tau, total, g_sum, norm, active, moved, last, tol)
        if last is None:
            break
    if square:
        return _entmax15_closed_form(Zb, G, dim), active == 0
    if normalize:
        G.div_(torch.where(total > 0, total, 1))
    return G, active == 0
