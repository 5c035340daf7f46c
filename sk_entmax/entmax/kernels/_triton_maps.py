"""Triton kernels of the mappings: forward (threshold search) and backward, one row a program.


The mapping of a row ``x`` (scores, max ``M``) is ``p_i = [zb_i - tau]_+ ** m`` with
``zb = (alpha - 1) (x - M)`` and ``m = 1 / (alpha - 1)``; the three modes are sparsemax
(``m = 1``), 1.5-entmax (``m = 2``) and alpha-entmax for alpha in ``[1.1, 2]`` (``m`` in
``[1, 10]``, one alpha per row or one for all). The threshold ``tau`` is searched in two
levels: a few bisection steps in the bracket ``[-1, -n ** -(alpha - 1)]`` (``n`` the entries
that are not ``-inf``; the max entry alone reaches 1 at ``-1``, every entry is at most ``1 / n``
at the other end), then Newton steps from the bracket's lower end. ``f(tau) = sum p - 1`` is
convex and decreasing for ``m >= 1``, so Newton's iterates from the left increase to the root
without overshooting, and the support shrinks to the exact one: for sparsemax the step is
Michelot's ``tau = (sum_S zb - 1) / |S|``, exact once the support stops changing; for
1.5-entmax the threshold is then taken in closed form from the support, as the torch path
(:func:`~sk_entmax.entmax.solvers._traceable._entmax15_closed`) does. A row that fits in one
block (``ONE_BLOCK``) is loaded once and searched in registers; a longer one is read block
by block at each step.

The backward pass is ``dx = g (dy - sum(g dy) / sum(g))`` with ``g = p ** (2 - alpha)`` on the
support (the indicator for sparsemax, ``sqrt(p)`` for 1.5-entmax).

Every sum is accumulated in float32 (half precision is read and written as such).
"""

from __future__ import annotations

import triton
import triton.language as tl

SPARSEMAX = 0
ENTMAX15 = 1
GENERAL = 2


@triton.jit
def _powers(d, m, MODE: tl.constexpr):
    """``(d ** m, d ** (m - 1))`` for ``d >= 0``, both 0 where ``d`` is 0.

    In the general mode ``d ** (m - 1)`` is ``exp2((m - 1) log2(d))`` on ``d`` clamped up to a
    floor at which it is still a normal number (``2 ** -120``), as the torch path computes it,
    so that every entry with ``d > 0`` keeps a positive ``p`` (the same support).
    """
    positive = d > 0
    if MODE == 0:
        g = positive.to(tl.float32)
        p = d
    elif MODE == 1:
        g = d
        p = d * d
    else:
        floor = tl.exp2(-120.0 / tl.maximum(m - 1.0, 1.0))
        log_d = tl.log2(tl.maximum(d, floor))
        g = tl.where(positive, tl.exp2((m - 1.0) * log_d), 0.0)
        p = g * d
    return p, g


@triton.jit
def _block_sums(zb, tau, m, MODE: tl.constexpr):
    """Entrywise terms at ``tau`` of one block of ``zb``: ``p``, ``g = p / d``, the support
    indicator, ``zb`` and ``zb ** 2`` on the support."""
    d = tl.maximum(zb - tau, 0.0)
    p, g = _powers(d, m, MODE)
    inside = d > 0
    zs = tl.where(inside, zb, 0.0)
    return p, g, inside.to(tl.float32), zs, zs * zs


@triton.jit
def _load_zb(x_row, start, n_cols, mx, beta, BLOCK: tl.constexpr):
    offs = start + tl.arange(0, BLOCK)
    z = tl.load(x_row + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
    return (z - mx) * beta


@triton.jit
def _row_sums(x_row, n_cols, mx, beta, tau, m, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """``(sum p, sum g, |S|, sum_S zb, sum_S zb ** 2)`` at ``tau`` over a row read block by
    block."""
    a1 = tl.zeros([BLOCK], tl.float32)
    a0 = tl.zeros([BLOCK], tl.float32)
    ak = tl.zeros([BLOCK], tl.float32)
    az = tl.zeros([BLOCK], tl.float32)
    azz = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        zb = _load_zb(x_row, start, n_cols, mx, beta, BLOCK)
        p, g, k, zs, zz = _block_sums(zb, tau, m, MODE)
        a1 += p
        a0 += g
        ak += k
        az += zs
        azz += zz
    return tl.sum(a1, 0), tl.sum(a0, 0), tl.sum(ak, 0), tl.sum(az, 0), tl.sum(azz, 0)


@triton.jit
def _sums(x_row, zb, n_cols, mx, beta, tau, m, MODE: tl.constexpr, BLOCK: tl.constexpr,
          ONE_BLOCK: tl.constexpr):  # fmt: skip
    """:func:`_row_sums`, from the registers when the row fits in one block."""
    if ONE_BLOCK:
        p, g, k, zs, zz = _block_sums(zb, tau, m, MODE)
        return tl.sum(p, 0), tl.sum(g, 0), tl.sum(k, 0), tl.sum(zs, 0), tl.sum(zz, 0)
    else:
        return _row_sums(x_row, n_cols, mx, beta, tau, m, MODE, BLOCK)


@triton.jit
def _forward_kernel(
    X,
    Y,
    A,
    alpha,
    n_cols,
    stride_x,
    stride_y,
    MODE: tl.constexpr,
    PER_ROW: tl.constexpr,
    BLOCK: tl.constexpr,
    ONE_BLOCK: tl.constexpr,
    N_BISECT: tl.constexpr,
    MAX_NEWTON: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = X + row * stride_x
    y_row = Y + row * stride_y
    offs = tl.arange(0, BLOCK)
    if MODE == 0:
        beta = 1.0
    elif MODE == 1:
        beta = 0.5
    elif PER_ROW:
        beta = tl.load(A + row).to(tl.float32) - 1.0
    else:
        beta = alpha - 1.0
    m = 1.0 / beta
    tol = 1.1920929e-07 * (2.0 + 4.0 / m)  # Newton's tolerance on tau, as the torch path's

    # the row's max, its count of entries that are not -inf, and whether it holds a NaN
    if ONE_BLOCK:
        z = tl.load(x_row + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        mx = tl.max(z, 0)
        count = tl.sum((z > float("-inf")).to(tl.float32), 0)
        nans = tl.sum((z != z).to(tl.float32), 0)
    else:
        vmax = tl.full([BLOCK], float("-inf"), tl.float32)
        vcount = tl.zeros([BLOCK], tl.float32)
        vnan = tl.zeros([BLOCK], tl.float32)
        for start in range(0, n_cols, BLOCK):
            o = start + offs
            zc = tl.load(x_row + o, mask=o < n_cols, other=float("-inf")).to(tl.float32)
            vmax = tl.maximum(vmax, zc)
            vcount += (zc > float("-inf")).to(tl.float32)
            vnan += (zc != zc).to(tl.float32)
        mx = tl.max(vmax, 0)
        count = tl.sum(vcount, 0)
        nans = tl.sum(vnan, 0)
    empty = count == 0
    mx = tl.where(empty, 0.0, mx)
    if ONE_BLOCK:
        zb = (z - mx) * beta
    else:
        zb = tl.zeros([BLOCK], tl.float32)  # unused: the row is read block by block

    # level 1: bisection steps in the bracket; sum p >= 1 at lo, below 1 at hi
    lo = count * 0.0 - 1.0
    hi = -tl.exp2(-beta * tl.log2(tl.maximum(count, 1.0)))
    for _ in range(N_BISECT):
        mid = 0.5 * (lo + hi)
        s1, s0, k, sz, szz = _sums(x_row, zb, n_cols, mx, beta, mid, m, MODE, BLOCK, ONE_BLOCK)
        reach = s1 >= 1.0
        lo = tl.where(reach, mid, lo)
        hi = tl.where(reach, hi, mid)

    # level 2: Newton steps from lo (Michelot's for sparsemax), increasing to the root; for
    # the other modes on ``||p||_(1/m) - 1``, convex and decreasing too, and linear in tau
    # where one entry dominates (where Newton on the sum crawls), as the torch path steps
    tau = lo
    s1, s0, k, sz, szz = _sums(x_row, zb, n_cols, mx, beta, tau, m, MODE, BLOCK, ONE_BLOCK)
    it = 0
    going = ~empty
    last = count * 0.0 + 2.0
    while going & (it < MAX_NEWTON):
        if MODE == 0:
            new_tau = (sz - 1.0) / tl.maximum(k, 1.0)
        else:
            if MODE == 1:
                norm = tl.sqrt(s1)
            else:
                norm = tl.exp2(tl.log2(s1) / m)
            new_tau = tau + (norm - 1.0) * s1 / tl.maximum(norm * s0, 1.1754944e-38)
        step = new_tau - tau
        last_k = k
        # never step back: rounding past the root is the end
        tau = tl.where(step > 0, new_tau, tau)
        s1, s0, k, sz, szz = _sums(x_row, zb, n_cols, mx, beta, tau, m, MODE, BLOCK, ONE_BLOCK)
        if MODE == 0:
            going = (k != last_k) & (step > 0)
        else:
            # done below the tolerance, or within 4 times it without halving the step before
            going = (step > tol) & ~((step <= 4.0 * tol) & (2.0 * step >= last))
            last = step
        it += 1
    if MODE == 0:
        tau = (sz - 1.0) / tl.maximum(k, 1.0)
    elif MODE == 1:
        size = tl.maximum(k, 1.0)
        mean = sz / size
        tau = mean - tl.sqrt(tl.maximum((1.0 - (szz - sz * mean)) / size, 0.0))
    if MODE != 0:  # the sum of the final p, to normalise it
        s1, s0, k, sz, szz = _sums(x_row, zb, n_cols, mx, beta, tau, m, MODE, BLOCK, ONE_BLOCK)
        scale = tl.where(s1 > 0, 1.0 / tl.where(s1 > 0, s1, 1.0), 0.0)
    else:
        scale = 1.0
    scale = tl.where(empty, 0.0, scale)
    scale = tl.where(nans > 0, float("nan"), scale)

    if ONE_BLOCK:
        p = _powers(tl.maximum(zb - tau, 0.0), m, MODE)[0]
        tl.store(y_row + offs, (p * scale).to(Y.dtype.element_ty), mask=offs < n_cols)
    else:
        for start in range(0, n_cols, BLOCK):
            zb_c = _load_zb(x_row, start, n_cols, mx, beta, BLOCK)
            p = _powers(tl.maximum(zb_c - tau, 0.0), m, MODE)[0]
            o = start + offs
            tl.store(y_row + o, (p * scale).to(Y.dtype.element_ty), mask=o < n_cols)


@triton.jit
def _gppr(y, exponent, MODE: tl.constexpr):
    """``y ** (2 - alpha)`` on the support (``exponent = 2 - alpha``), 0 elsewhere."""
    positive = y > 0
    if MODE == 0:
        return positive.to(tl.float32)
    elif MODE == 1:
        return tl.sqrt(tl.maximum(y, 0.0))
    else:
        log_y = tl.log2(tl.where(positive, y, 1.0))
        return tl.where(positive, tl.exp2(exponent * log_y), 0.0)


@triton.jit
def _backward_kernel(
    Y,
    DY,
    DX,
    A,
    alpha,
    n_cols,
    stride_y,
    stride_dy,
    stride_dx,
    MODE: tl.constexpr,
    PER_ROW: tl.constexpr,
    BLOCK: tl.constexpr,
    ONE_BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    y_row = Y + row * stride_y
    dy_row = DY + row * stride_dy
    dx_row = DX + row * stride_dx
    offs = tl.arange(0, BLOCK)
    if MODE == 2:
        if PER_ROW:
            exponent = 2.0 - tl.load(A + row).to(tl.float32)
        else:
            exponent = 2.0 - alpha
    else:
        exponent = 0.0
    if ONE_BLOCK:
        mask = offs < n_cols
        y = tl.load(y_row + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_row + offs, mask=mask, other=0.0).to(tl.float32)
        g = _gppr(y, exponent, MODE)
        gd = g * dy
        sg = tl.sum(g, 0)
        q = tl.where(sg > 0, tl.sum(gd, 0) / tl.where(sg > 0, sg, 1.0), 0.0)
        tl.store(dx_row + offs, (gd - q * g).to(DX.dtype.element_ty), mask=mask)
    else:
        ag = tl.zeros([BLOCK], tl.float32)
        agd = tl.zeros([BLOCK], tl.float32)
        for start in range(0, n_cols, BLOCK):
            o = start + offs
            mask = o < n_cols
            y = tl.load(y_row + o, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_row + o, mask=mask, other=0.0).to(tl.float32)
            g = _gppr(y, exponent, MODE)
            ag += g
            agd += g * dy
        sg = tl.sum(ag, 0)
        q = tl.where(sg > 0, tl.sum(agd, 0) / tl.where(sg > 0, sg, 1.0), 0.0)
        for start in range(0, n_cols, BLOCK):
            o = start + offs
            mask = o < n_cols
            y = tl.load(y_row + o, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_row + o, mask=mask, other=0.0).to(tl.float32)
            g = _gppr(y, exponent, MODE)
            tl.store(dx_row + o, (g * (dy - q)).to(DX.dtype.element_ty), mask=mask)


def forward(
    X, Y, alpha_rows, alpha: float, mode: int, block: int, one_block: bool, num_warps: int
) -> None:
    """Launch the forward kernel on the rows of ``X`` (2-d, last axis contiguous) into
    ``Y``; ``alpha_rows`` a float32 tensor of one alpha per row, or None for ``alpha``."""
    n_rows, n_cols = X.shape
    per_row = alpha_rows is not None
    _forward_kernel[(n_rows,)](
        X,
        Y,
        alpha_rows if per_row else X,
        float(alpha),
        n_cols,
        X.stride(0),
        Y.stride(0),
        MODE=mode,
        PER_ROW=per_row,
        BLOCK=block,
        ONE_BLOCK=one_block,
        N_BISECT=4,
        MAX_NEWTON=60,
        num_warps=num_warps,
    )


def backward(
    Y, dY, dX, alpha_rows, alpha: float, mode: int, block: int, one_block: bool, num_warps: int
) -> None:
    """Launch the backward kernel: ``dX`` from the output ``Y`` and its gradient ``dY``."""
    n_rows, n_cols = Y.shape
    per_row = alpha_rows is not None
    _backward_kernel[(n_rows,)](
        Y,
        dY,
        dX,
        alpha_rows if per_row else Y,
        float(alpha),
        n_cols,
        Y.stride(0),
        dY.stride(0),
        dX.stride(0),
        MODE=mode,
        PER_ROW=per_row,
        BLOCK=block,
        ONE_BLOCK=one_block,
        num_warps=num_warps,
    )
