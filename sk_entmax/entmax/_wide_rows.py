"""1.5-entmax of wide rows, and the backward pass of entmax-type maps, chunk by chunk.

On CPU the core's passes are bound by memory: at 1024 x 1000 float32 (4 MiB) an in-place
``relu_`` takes about 140 us and a subtraction into another tensor about 280 us, while on a
chunk of 256 rows (1 MiB, resident in the core's L2 cache) the same operations take a half
to a quarter of that per entry. So the rows are solved, and differentiated, a chunk of at
most :data:`CHUNK` entries at a time, every operation of a chunk reading scratch that is
still in cache. Every operation is row-wise, so a row's result does not depend on the chunk
it falls in, nor on the batch: chunked and whole give the same bits.

Wide rows (at least :data:`START_WIDTH` entries) also start their Newton passes closer to
the threshold: from the threshold of the maxima of their 32 residue classes (entries ``i``,
``i + 32``, ``i + 64``, ...). These maxima are a subset of the row that holds its maximum,
and a subset's threshold lies between -1 and the row's (its sum of ``[z - tau]_+ ** 2`` is
smaller at every ``tau``), so the passes over the row still start below the root and never
overshoot it; when the maxima hold the whole support, the start is the root itself. On
random rows 1000 wide this halves the passes over the row (8 to 4), for one pass's worth
of reading. (Residue classes rather than blocks of consecutive entries: their maxima are a
single elementwise ``amax`` over contiguous vectors, and ``-inf`` padding at a row's end
leaves them unchanged.)
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from sk_entmax.entmax._safe_ops import safe_div
from sk_entmax.entmax._sums import ieee_sqrt, row_sum

#: the most entries of a chunk (1 MiB of float32): about L2-resident on current CPUs
CHUNK = 1 << 18

#: rows at least this wide start from the threshold of their residue classes' maxima
START_WIDTH = 256

#: the residue classes of a wide row's start, and the Newton passes over their maxima
_CLASSES, _START_PASSES = 32, 3


def on_support(indicator: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
    """``Z`` where ``indicator`` (0 or 1) is 1, else 0, in ``indicator``'s memory.

    (A product and a NaN cleared cost a third of ``torch.where`` on CPU, which reads and
    writes booleans.)"""
    return indicator.mul_(Z).nan_to_num_(nan=0.0)


def entmax15_closed_form(Zb: torch.Tensor, P: torch.Tensor, dim: int) -> torch.Tensor:
    """1.5-entmax of halved rows ``Zb`` (maximum 0) from the support of ``P``, in place.

    With ``r`` entries in the support, ``sum_i (zb_i - tau)^2 = 1`` gives
    ``tau = mean - sqrt((1 - ss) / r)``, ``ss`` the support's sum of squared deviations.
    The sums (and the one that normalizes the result) are
    :func:`~sk_entmax.entmax._sums.row_sum`'s, so that the result depends on the support
    alone, not on the Newton steps that found it: a row padded with ``-inf`` gives the same
    output, bit for bit.
    """
    indicator = P.sign_()  # P is scratch from here on
    size = indicator.sum(dim, keepdim=True).clamp_(min=1)  # exact: a sum of ones
    masked = on_support(indicator, Zb)
    s1 = row_sum(masked, dim)
    s2 = row_sum(masked.square_(), dim)
    mean = s1 / size
    delta = (1 - (s2 - s1 * mean)) / size
    tau = mean - ieee_sqrt(delta.clamp_(min=0))
    torch.sub(Zb, tau, out=P).relu_().square_()
    # tau's rounding (a few units of |mean|) moves every entry one way: normalize
    total = row_sum(P, dim)
    return P.div_(torch.where(total > 0, total, 1))


def _square_passes(
    Zb: torch.Tensor, tau: torch.Tensor, D: torch.Tensor, passes: int
) -> torch.Tensor:
    """Newton passes on ``||[zb - tau]_+||_2 = 1`` for the rows of ``Zb`` (2-D, maximum 0),
    from ``tau`` (below every row's root), in place; returns the float mask of the rows
    still moving after ``passes`` passes (0 where settled).

    The step and the stopping rule are those of
    :func:`~sk_entmax.entmax._newton._power_newton` at ``m = 2``: a row stops at its
    first step below ``4 eps``, or when a step below ``16 eps`` fails to halve the one before
    (only rounding noise does that). On return ``D`` holds ``[zb - tau]_+ ** 2`` at the
    final ``tau``.
    """
    tol = torch.finfo(Zb.dtype).eps * 4
    active = torch.ones_like(tau)
    moved = torch.empty_like(tau)
    last = None
    for _ in range(passes):
        torch.sub(Zb, tau, out=D).relu_()
        g_sum = D.sum(-1, keepdim=True)
        total = D.square_().sum(-1, keepdim=True)
        last = newton_step(tau, total, g_sum, ieee_sqrt(total), active, moved, last, tol)
        if last is None:
            break
    return active


def newton_step(
    tau: torch.Tensor,
    total: torch.Tensor,
    g_sum: torch.Tensor,
    norm: torch.Tensor,
    active: torch.Tensor,
    moved: torch.Tensor,
    last: torch.Tensor | None,
    tol: float | torch.Tensor,
) -> torch.Tensor | None:
    """One Newton step on ``||[z - tau]_+||_m = 1`` from a pass's sums, in place, and the
    stopping rule of :func:`_square_passes` and
    :func:`~sk_entmax.entmax._newton._power_newton`: ``(N - 1) S / (N sum_i g_i)`` with
    ``S = total``, ``N = norm``; a row stops at its first step below ``tol``, or when a
    step below ``4 tol`` fails to halve the one before. ``active`` (1 while a row moves)
    and ``tau`` are updated; returns the step sizes for the next call, or None once every
    row has stopped (``tau`` then unchanged)."""
    tiny = torch.finfo(total.dtype).tiny
    # a fully masked row has a zero total and 0 rather than 0 / 0 as its step
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
        return None
    tau.addcmul_(step, active)
    return size


def _residue_start(Zb: torch.Tensor) -> torch.Tensor:
    """A threshold at or below each row's root: :data:`_START_PASSES` Newton passes from
    -1 towards the threshold of the maxima of the row's residue classes modulo
    :data:`_CLASSES` (see the module's docstring); -1 for a NaN row.

    Newton's iterates from below stay below the subset's root, which is below the row's, so
    a fixed number of passes serves (no stopping rule: these are passes over 32 entries).
    """
    rows, width = Zb.shape
    full = width // _CLASSES * _CLASSES
    M = Zb[:, :full].unflatten(-1, (-1, _CLASSES)).amax(-2)
    rest = width - full
    if rest:
        torch.maximum(M[:, :rest], Zb[:, full:], out=M[:, :rest])
    tiny = torch.finfo(Zb.dtype).tiny
    tau = M.new_full((rows, 1), -1.0)
    D = torch.empty_like(M)
    for _ in range(_START_PASSES):
        torch.sub(M, tau, out=D).relu_()
        g_sum = D.sum(-1, keepdim=True)
        total = D.square_().sum(-1, keepdim=True)
        norm = total.sqrt()
        tau.add_((norm - 1).mul_(total).div_(norm.mul_(g_sum).clamp_(min=tiny)))
    return tau.nan_to_num_(nan=-1.0)


def entmax15_rows(Zb: torch.Tensor, passes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """1.5-entmax of the halved rows of ``Zb`` (2-D, maximum 0, wider than the column
    layout's rows), chunk by chunk: ``(P, settled)`` as from
    :func:`~sk_entmax.entmax._newton._power_newton` at ``m = 2``, a row being settled
    within ``passes`` Newton passes over it.

    Each chunk takes the Newton passes from -1 (from :func:`_residue_start` for rows of at
    least :data:`START_WIDTH` entries), then :func:`entmax15_closed_form` from the support
    found, computed into the output's rows of that chunk.
    """
    rows, width = Zb.shape
    P = torch.empty_like(Zb)
    settled = torch.empty((rows, 1), dtype=torch.bool, device=Zb.device)
    step = max(1, CHUNK // width)
    for first in range(0, rows, step):
        part = slice(first, first + step)
        Z, D = Zb[part], P[part]
        if width >= START_WIDTH:
            tau = _residue_start(Z)
        else:
            tau = Z.new_full((Z.shape[0], 1), -1.0)
        active = _square_passes(Z, tau, D, passes)
        entmax15_closed_form(Z, D, -1)
        torch.eq(active, 0, out=settled[part])
    return P, settled


def entmax_vjp_rows(
    dY: torch.Tensor, Y: torch.Tensor, gppr_of: Callable[[torch.Tensor], torch.Tensor]
) -> torch.Tensor:
    """The vector-Jacobian product of an entmax-type map along the last axis, with
    ``gppr = gppr_of(Y)`` (``1 / Omega''(p)`` on the support, 0 elsewhere), chunk by chunk.

    The Jacobian is ``diag(g) - g g^T / sum(g)``; rows with an empty support get a zero
    gradient. The same operations on each row as a whole-tensor product, so the same bits;
    chunked only where no graph is recorded (no second derivative being built).
    """
    width = Y.shape[-1]
    if torch.is_grad_enabled() or Y.numel() <= CHUNK or width == 0:
        gppr = gppr_of(Y)
        gdY = gppr * dY
        q = safe_div(gdY.sum(-1, keepdim=True), gppr.sum(-1, keepdim=True))
        if torch.is_grad_enabled():  # building a second derivative: no in-place ops
            return gdY - q * gppr
        return gdY.addcmul_(q, gppr, value=-1)
    Y2 = Y.reshape(-1, width)
    dY2 = dY.expand_as(Y).reshape(-1, width)
    out = torch.empty(Y2.shape, dtype=torch.result_type(dY, Y), device=Y.device)
    step = max(1, CHUNK // width)
    for first in range(0, Y2.shape[0], step):
        part = slice(first, first + step)
        gppr = gppr_of(Y2[part])
        gdY = torch.mul(gppr, dY2[part], out=out[part])
        q = safe_div(gdY.sum(-1, keepdim=True), gppr.sum(-1, keepdim=True))
        gdY.addcmul_(q, gppr, value=-1)
    return out.view(Y.shape)
