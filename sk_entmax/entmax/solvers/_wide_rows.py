"""The backward pass of entmax-type maps chunk by chunk, and the Newton step of the power
form.

On CPU the core's passes are bound by memory: at 1024 x 1000 float32 (4 MiB) an in-place
``relu_`` takes about 140 us and a subtraction into another tensor about 280 us, while on a
chunk of 256 rows (1 MiB, resident in the core's L2 cache) the same operations take a half
to a quarter of that per entry. So the vector-Jacobian product is formed a chunk of at most
:data:`CHUNK` entries at a time, every operation of a chunk reading scratch that is still in
cache. Every operation is row-wise, so a row's result does not depend on the chunk it falls
in, nor on the batch: chunked and whole give the same bits.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from sk_entmax.entmax.common import safe_div

#: the most entries of a chunk (1 MiB of float32): about L2-resident on current CPUs
CHUNK = 1 << 18


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
    stopping rule of :func:`~sk_entmax.entmax.solvers._newton._power_newton`:
    ``(N - 1) S / (N sum_i g_i)`` with ``S = total``, ``N = norm``; a row stops at its
    first step below ``tol``, or when a step below ``4 tol`` fails to halve the one before.
    ``active`` (1 while a row moves) and ``tau`` are updated; returns the step sizes for the
    next call, or None once every row has stopped (``tau`` then unchanged)."""
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


def entmax_vjp_rows(
    dY: torch.Tensor,
    Y: torch.Tensor,
    gppr_of: Callable[[torch.Tensor], torch.Tensor],
    chunk: int = CHUNK,
) -> torch.Tensor:
    """The vector-Jacobian product of an entmax-type map along the last axis, with
    ``gppr = gppr_of(Y)`` (``1 / Omega''(p)`` on the support, 0 elsewhere), chunk by chunk
    (chunks of whole rows, at most ``chunk`` entries or one row each).

    The Jacobian is ``diag(g) - g g^T / sum(g)``; rows with an empty support get a zero
    gradient. The same operations on each row as a whole-tensor product, so the same bits;
    chunked only where no graph is recorded (no second derivative being built).
    """
    width = Y.shape[-1]
    if torch.is_grad_enabled() or Y.numel() <= chunk or width == 0:
        gppr = gppr_of(Y)
        gdY = gppr * dY
        q = safe_div(gdY.sum(-1, keepdim=True), gppr.sum(-1, keepdim=True))
        if torch.is_grad_enabled():  # building a second derivative: no in-place ops
            return gdY - q * gppr
        return gdY.addcmul_(q, gppr, value=-1)
    Y2 = Y.reshape(-1, width)
    dY2 = dY.expand_as(Y).reshape(-1, width)
    out = torch.empty(Y2.shape, dtype=torch.result_type(dY, Y), device=Y.device)
    step = max(1, chunk // width)
    for first in range(0, Y2.shape[0], step):
        part = slice(first, first + step)
        gppr = gppr_of(Y2[part])
        gdY = torch.mul(gppr, dY2[part], out=out[part])
        q = safe_div(gdY.sum(-1, keepdim=True), gppr.sum(-1, keepdim=True))
        gdY.addcmul_(q, gppr, value=-1)
    return out.view(Y.shape)
