"""Sort-free thresholds of the power form of alpha-entmax (alpha in ``[1.1, 2]``, a number
other than 1.5 and 2, or one per row), by Newton steps.

The steps start below the threshold and never overshoot (:func:`_power_newton`): a handful of
passes over the input instead of a bisection, stopping when the step falls to the level of
rounding. Rows that have not settled after :data:`_MAX_PASSES` passes (it takes crafted
inputs) are reported unsettled, and the caller solves them again by bisection, so the cap
bounds the time, never the accuracy. The solver runs along the last axis, or along ``dim=0``
in the column layout of narrow rows (:mod:`._narrow`). The exact maps (sparsemax, 1.5-entmax)
take their own Newton steps, in their traceable form (:mod:`._traceable`).
"""

from __future__ import annotations

import torch
from torch import nn

from sk_entmax.entmax.solvers._sums import row_sum
from sk_entmax.entmax.solvers._wide_rows import newton_step

# Newton passes before the rows that have not settled yet are handed to bisection; typical
# inputs settle within 4 to 10.
_MAX_PASSES = 40


def floor_threshold(exponent: float) -> float:
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
    Zb: torch.Tensor,
    m: float | torch.Tensor,
    normalize: bool = True,
    dim: int = -1,
    max_passes: int = _MAX_PASSES,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Solve ``sum_i [zb_i - tau]_+ ** m = 1`` for rows whose maximum is 0; ``m >= 1``.

    Returns ``(P, settled)`` with ``P = [zb - tau]_+ ** m``, divided by its row sum if
    ``normalize``, and ``settled`` of ``Zb``'s shape with ``dim`` of size 1, True where the
    row stopped within ``max_passes`` passes (:data:`_MAX_PASSES` unless given; the rows run
    along ``dim``). ``m`` is a
    number other than 2 (1.5-entmax takes :mod:`._traceable`), or a tensor of shape
    ``(..., 1)`` with one exponent per row (then ``dim`` is -1).

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
    scratch tensors serve all the passes (three for an integer ``m - 1`` from 4 on), ``P``
    being computed in place in the last one.

    A row stops at the first step below ``eps (2 + 4 / m)`` (a few units of rounding of
    ``tau``; the steps converge quadratically, and their rounding noise is about ``eps``),
    or when a step below four times that fails to halve the one before, which only rounding
    noise does. The error of ``tau`` is then about that last step, and that of ``p`` about
    ``m`` times it. The start (``-1``) and the sums
    (:func:`~sk_entmax.entmax.solvers._sums.row_sum`) ignore ``-inf`` padding; only ``exp2`` and
    ``log2``, which on CPU round an entry differently by its position (vectorized or not),
    can move a padded row's result, by a unit of rounding (``exp`` and ``log`` would not,
    at 1.5 times the cost).
    """
    per_row = isinstance(m, torch.Tensor)
    integer = None if per_row else _integer_exponent(m)
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
        g_floor = floor_threshold(m - 1)
        mask_g = g_floor == 0
    power_scratch = integer is not None and integer % 2 == 1 and integer > 3
    if mask_g or power_scratch:
        indicator = torch.empty_like(Zb)  # the support's indicator, or the power's scratch
    D = torch.empty_like(Zb)  # [zb - tau]_+
    G = torch.empty_like(Zb)  # g, then p in place
    inv_m = 1 / m
    # 1 while a row moves, 0 once it has settled: float masks, because on CPU comparisons
    # into bool tensors, masked_fill_ and all() cost several float ops each
    active = torch.ones_like(tau)
    moved = torch.empty_like(tau)
    last = None
    for _ in range(max_passes):
        torch.sub(Zb, tau, out=D).relu_()
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
        norm = torch.log2(total).mul_(inv_m).exp2_()
        last = newton_step(tau, total, g_sum, norm, active, moved, last, tol)
        if last is None:
            break
    if normalize:
        G.div_(torch.where(total > 0, total, 1))
    return G, active == 0
