"""Triton kernels of fused entmax attention: forward and the two backward passes.

One job: attention with the scores recomputed block by block inside the kernels. The fused
forward (:func:`_attention_forward_kernel`, launched by :func:`attention_forward`) runs the
two-level threshold search of :mod:`sk_entmax.entmax.kernels._triton_maps` for a block of
query rows at once, the scores of each block of keys recomputed by ``tl.dot`` (in IEEE
float32, as ``torch.matmul`` computes them) at every step; the backward
(:func:`attention_backward`) rebuilds the weights from each query's threshold and forms the
gradients of the queries and of the keys and values in two kernels.
"""

from __future__ import annotations

import triton
import triton.language as tl

from sk_entmax.entmax.kernels._triton_maps import _block_sums, _powers


@triton.jit
def _attention_scores(
    q,
    K_bh,
    bias_bh,
    start_n,
    rows,
    S,
    D,
    stride_kn,
    stride_kd,
    stride_bn,
    HAS_BIAS: tl.constexpr,
    CAUSAL: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    """Scores of a block of (scaled) queries against keys ``start_n ...``: ``-inf`` where
    masked (past the keys, after the query when causal, ``-inf`` in the key bias)."""
    cols = start_n + tl.arange(0, BLOCK_N)
    d_offs = tl.arange(0, BLOCK_D)
    k = tl.load(
        K_bh + cols[:, None] * stride_kn + d_offs[None, :] * stride_kd,
        mask=(cols[:, None] < S) & (d_offs[None, :] < D),
        other=0.0,
    )
    s = tl.dot(q, tl.trans(k), input_precision="ieee")
    keep = cols[None, :] < S
    if CAUSAL:
        keep = keep & (cols[None, :] <= rows[:, None])
    if HAS_BIAS:
        s = s + tl.load(bias_bh + cols * stride_bn, mask=cols < S, other=0.0)[None, :]
    return tl.where(keep, s, float("-inf")), cols


@triton.jit
def _attention_sums(
    q,
    K_bh,
    bias_bh,
    rows,
    mx,
    beta,
    tau,
    m,
    n_end,
    S,
    D,
    stride_kn,
    stride_kd,
    stride_bn,
    MODE: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    """:func:`_row_sums` of every query row of the block at its ``tau``, over the keys."""
    a1 = tl.zeros([BLOCK_M], tl.float32)
    a0 = tl.zeros([BLOCK_M], tl.float32)
    ak = tl.zeros([BLOCK_M], tl.float32)
    az = tl.zeros([BLOCK_M], tl.float32)
    azz = tl.zeros([BLOCK_M], tl.float32)
    for start_n in range(0, n_end, BLOCK_N):
        s = _attention_scores(
            q, K_bh, bias_bh, start_n, rows, S, D, stride_kn, stride_kd, stride_bn,
            HAS_BIAS, CAUSAL, BLOCK_N, BLOCK_D,
        )[0]  # fmt: skip
        p, g, k, zs, zz = _block_sums((s - mx[:, None]) * beta, tau[:, None], m, MODE)
        a1 += tl.sum(p, 1)
        a0 += tl.sum(g, 1)
        ak += tl.sum(k, 1)
        az += tl.sum(zs, 1)
        azz += tl.sum(zz, 1)
    return a1, a0, ak, az, azz


@triton.jit
def _attention_forward_kernel(
    Q,
    K,
    V,
    Bias,
    A,
    Out,
    T,
    Sup,
    alpha,
    L,
    S,
    D,
    DV,
    stride_qb,
    stride_qm,
    stride_qd,
    stride_kb,
    stride_kn,
    stride_kd,
    stride_vb,
    stride_vn,
    stride_vd,
    stride_bb,
    stride_bn,
    stride_ob,
    stride_om,
    stride_od,
    MODE: tl.constexpr,
    PER_HEAD: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    CAUSAL: tl.constexpr,
    WANT_SUPPORT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    N_BISECT: tl.constexpr,
    MAX_NEWTON: tl.constexpr,
):
    """Entmax attention for one block of queries of one (batch, head): the threshold of
    each query row first, searched over the keys block by block as the mappings' kernel
    searches a long row (the scores recomputed at each step, never stored), then the
    weighted sum of the values; writes the output, the threshold ``t`` of the torch path's
    convention (:func:`sk_entmax.entmax._attention_blocks._threshold`) and the support size."""
    bh = tl.program_id(1).to(tl.int64)
    start_m = tl.program_id(0) * BLOCK_M
    rows = start_m + tl.arange(0, BLOCK_M)
    d_offs = tl.arange(0, BLOCK_D)
    q = tl.load(
        Q + bh * stride_qb + rows[:, None] * stride_qm + d_offs[None, :] * stride_qd,
        mask=(rows[:, None] < L) & (d_offs[None, :] < D),
        other=0.0,
    )
    K_bh = K + bh * stride_kb
    bias_bh = Bias + bh * stride_bb
    if MODE == 0:
        beta = 1.0
    elif MODE == 1:
        beta = 0.5
    elif PER_HEAD:
        beta = tl.load(A + bh).to(tl.float32) - 1.0
    else:
        beta = alpha - 1.0
    m = 1.0 / beta
    tol = 1.1920929e-07 * (2.0 + 4.0 / m)
    if CAUSAL:
        n_end = tl.minimum(S, start_m + BLOCK_M)
    else:
        n_end = S

    mx = tl.full([BLOCK_M], float("-inf"), tl.float32)
    count = tl.zeros([BLOCK_M], tl.float32)
    for start_n in range(0, n_end, BLOCK_N):
        s = _attention_scores(
            q, K_bh, bias_bh, start_n, rows, S, D, stride_kn, stride_kd, stride_bn,
            HAS_BIAS, CAUSAL, BLOCK_N, BLOCK_D,
        )[0]  # fmt: skip
        mx = tl.maximum(mx, tl.max(s, 1))
        count += tl.sum((s > float("-inf")).to(tl.float32), 1)
    empty = count == 0
    mx = tl.where(empty, 0.0, mx)

    lo = count * 0.0 - 1.0
    hi = -tl.exp2(-beta * tl.log2(tl.maximum(count, 1.0)))
    for _ in range(N_BISECT):
        mid = 0.5 * (lo + hi)
        s1, s0, k, sz, szz = _attention_sums(
            q, K_bh, bias_bh, rows, mx, beta, mid, m, n_end, S, D, stride_kn, stride_kd,
            stride_bn, MODE, HAS_BIAS, CAUSAL, BLOCK_M, BLOCK_N, BLOCK_D,
        )  # fmt: skip
        reach = s1 >= 1.0
        lo = tl.where(reach, mid, lo)
        hi = tl.where(reach, hi, mid)

    tau = lo
    s1, s0, k, sz, szz = _attention_sums(
        q, K_bh, bias_bh, rows, mx, beta, tau, m, n_end, S, D, stride_kn, stride_kd,
        stride_bn, MODE, HAS_BIAS, CAUSAL, BLOCK_M, BLOCK_N, BLOCK_D,
    )  # fmt: skip
    going = ~empty & (rows < L)
    last = count * 0.0 + 2.0
    it = 0
    while (tl.max(going.to(tl.int32), 0) > 0) & (it < MAX_NEWTON):
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
        tau = tl.where(going & (step > 0), new_tau, tau)
        s1, s0, k, sz, szz = _attention_sums(
            q, K_bh, bias_bh, rows, mx, beta, tau, m, n_end, S, D, stride_kn, stride_kd,
            stride_bn, MODE, HAS_BIAS, CAUSAL, BLOCK_M, BLOCK_N, BLOCK_D,
        )  # fmt: skip
        if MODE == 0:
            going = going & (k != last_k) & (step > 0)
        else:
            going = going & (step > tol) & ~((step <= 4.0 * tol) & (2.0 * step >= last))
            last = step
        it += 1
    if MODE == 0:
        tau = (sz - 1.0) / tl.maximum(k, 1.0)
    elif MODE == 1:
        size = tl.maximum(k, 1.0)
        mean = sz / size
        tau = mean - tl.sqrt(tl.maximum((1.0 - (szz - sz * mean)) / size, 0.0))

    # the weighted sum of the values, and the sum and support of the weights
    dv_offs = tl.arange(0, BLOCK_DV)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    total = tl.zeros([BLOCK_M], tl.float32)
    support = tl.zeros([BLOCK_M], tl.float32)
    for start_n in range(0, n_end, BLOCK_N):
        s, cols = _attention_scores(
            q, K_bh, bias_bh, start_n, rows, S, D, stride_kn, stride_kd, stride_bn,
            HAS_BIAS, CAUSAL, BLOCK_N, BLOCK_D,
        )  # fmt: skip
        p = _powers(tl.maximum((s - mx[:, None]) * beta - tau[:, None], 0.0), m, MODE)[0]
        v = tl.load(
            V + bh * stride_vb + cols[:, None] * stride_vn + dv_offs[None, :] * stride_vd,
            mask=(cols[:, None] < S) & (dv_offs[None, :] < DV),
            other=0.0,
        )
        acc += tl.dot(p, v, input_precision="ieee")
        total += tl.sum(p, 1)
        support += tl.sum((p > 0).to(tl.float32), 1)
    if MODE == 0:
        scale = total * 0.0 + 1.0
    else:
        scale = tl.where(total > 0, 1.0 / tl.where(total > 0, total, 1.0), 0.0)
    scale = tl.where(empty, 0.0, scale)
    out = acc * scale[:, None]
    o_mask = (rows[:, None] < L) & (dv_offs[None, :] < DV)
    o_ptrs = Out + bh * stride_ob + rows[:, None] * stride_om + dv_offs[None, :] * stride_od
    tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=o_mask)

    # t with P = f(Z - t), read at the row max as the torch path reads it
    if MODE == 0:
        t = mx + tau
    elif MODE == 1:
        t = mx - 2.0 * tl.sqrt((-tau) * (-tau) * scale)
    else:
        t = mx - ((-tau) * tl.exp2(beta * tl.log2(tl.where(scale > 0, scale, 1.0))) - 1.0) / beta
    t = tl.where(empty, float("inf"), t)
    tl.store(T + bh * L + rows, t, mask=rows < L)
    if WANT_SUPPORT:
        tl.store(Sup + bh * L + rows, support.to(tl.int64), mask=rows < L)


def attention_forward(
    q, k, v, bias, alpha_heads, alpha: float, mode: int, causal: bool, want_support: bool,
    block_m: int, block_n: int, num_warps: int,
):  # fmt: skip
    """Launch the fused attention forward on ``(BH, L, D)`` queries (scaled), keys and
    values; ``bias`` a ``(BH, S)`` float32 key bias or None, ``alpha_heads`` a float32
    ``(BH,)`` alpha or None. Returns ``(out, t, support or None)``."""
    import torch

    BH, L, D = q.shape
    S, DV = k.shape[1], v.shape[-1]
    out = torch.empty((BH, L, DV), dtype=q.dtype, device=q.device)
    t = torch.empty((BH, L), dtype=torch.float32, device=q.device)
    support = torch.empty((BH, L), dtype=torch.int64, device=q.device) if want_support else t
    has_bias = bias is not None
    bias_arg = bias if has_bias else t
    grid = (triton.cdiv(L, block_m), BH)
    _attention_forward_kernel[grid](
        q, k, v, bias_arg, alpha_heads if alpha_heads is not None else t, out, t, support,
        float(alpha), L, S, D, DV,
        q.stride(0), q.stride(1), q.stride(2),
        k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2),
        bias.stride(0) if has_bias else 0, bias.stride(1) if has_bias else 0,
        out.stride(0), out.stride(1), out.stride(2),
        MODE=mode, PER_HEAD=alpha_heads is not None, HAS_BIAS=has_bias, CAUSAL=causal,
        WANT_SUPPORT=want_support, BLOCK_M=block_m, BLOCK_N=block_n,
        BLOCK_D=max(16, triton.next_power_of_2(D)), BLOCK_DV=max(16, triton.next_power_of_2(DV)),
        N_BISECT=4, MAX_NEWTON=60, num_warps=num_warps,
    )  # fmt: skip
    return out, t, (support if want_support else None)


@triton.jit
def _attention_rebuild(s, t, beta, m, MODE: tl.constexpr):
    """The weights ``P = f(s - t)`` and ``g = P ** (2 - alpha)`` (0 off the support) from
    each query's threshold ``t`` (broadcast along the keys), as
    :func:`sk_entmax.entmax._attention_blocks._rebuild` forms them."""
    if MODE == 0:
        P = tl.maximum(s - t, 0.0)
        g = (P > 0).to(tl.float32)
    elif MODE == 1:
        g = tl.maximum((s - t) * 0.5, 0.0)
        P = g * g
    else:
        X = tl.maximum(1.0 + beta * (s - t), 0.0)
        P, g = _powers(X, m, 2)
    return P, g


@triton.jit
def _attention_backward_queries_kernel(
    Q,
    K,
    V,
    Bias,
    A,
    T,
    DO,
    DQ,
    Delta,
    alpha,
    L,
    S,
    D,
    DV,
    stride_qb,
    stride_qm,
    stride_qd,
    stride_kb,
    stride_kn,
    stride_kd,
    stride_vb,
    stride_vn,
    stride_vd,
    stride_bb,
    stride_bn,
    MODE: tl.constexpr,
    PER_HEAD: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    """For one block of queries: ``delta = sum_j g dP / sum_j g`` per row (``dP = dO V^T``),
    then ``dQ = (g (dP - delta)) K``; ``dO`` and ``dQ`` laid out as ``Q`` and ``V``."""
    bh = tl.program_id(1).to(tl.int64)
    start_m = tl.program_id(0) * BLOCK_M
    rows = start_m + tl.arange(0, BLOCK_M)
    d_offs = tl.arange(0, BLOCK_D)
    dv_offs = tl.arange(0, BLOCK_DV)
    row_ok = rows < L
    q = tl.load(
        Q + bh * stride_qb + rows[:, None] * stride_qm + d_offs[None, :] * stride_qd,
        mask=row_ok[:, None] & (d_offs[None, :] < D),
        other=0.0,
    )
    do = tl.load(
        DO + bh * L * DV + rows[:, None] * DV + dv_offs[None, :],
        mask=row_ok[:, None] & (dv_offs[None, :] < DV),
        other=0.0,
    )
    t = tl.load(T + bh * L + rows, mask=row_ok, other=float("inf"))
    K_bh = K + bh * stride_kb
    V_bh = V + bh * stride_vb
    bias_bh = Bias + bh * stride_bb
    if MODE == 0:
        beta = 1.0
    elif MODE == 1:
        beta = 0.5
    elif PER_HEAD:
        beta = tl.load(A + bh).to(tl.float32) - 1.0
    else:
        beta = alpha - 1.0
    m = 1.0 / beta
    if CAUSAL:
        n_end = tl.minimum(S, start_m + BLOCK_M)
    else:
        n_end = S
    r = tl.zeros([BLOCK_M], tl.float32)
    gs = tl.zeros([BLOCK_M], tl.float32)
    for start_n in range(0, n_end, BLOCK_N):
        s, cols = _attention_scores(
            q, K_bh, bias_bh, start_n, rows, S, D, stride_kn, stride_kd, stride_bn,
            HAS_BIAS, CAUSAL, BLOCK_N, BLOCK_D,
        )  # fmt: skip
        g = _attention_rebuild(s, t[:, None], beta, m, MODE)[1]
        v = tl.load(
            V_bh + cols[:, None] * stride_vn + dv_offs[None, :] * stride_vd,
            mask=(cols[:, None] < S) & (dv_offs[None, :] < DV),
            other=0.0,
        )
        dp = tl.dot(do, tl.trans(v), input_precision="ieee")
        r += tl.sum(g * dp, 1)
        gs += tl.sum(g, 1)
    delta = tl.where(gs > 0, r / tl.where(gs > 0, gs, 1.0), 0.0)
    tl.store(Delta + bh * L + rows, delta, mask=row_ok)
    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for start_n in range(0, n_end, BLOCK_N):
        s, cols = _attention_scores(
            q, K_bh, bias_bh, start_n, rows, S, D, stride_kn, stride_kd, stride_bn,
            HAS_BIAS, CAUSAL, BLOCK_N, BLOCK_D,
        )  # fmt: skip
        g = _attention_rebuild(s, t[:, None], beta, m, MODE)[1]
        v = tl.load(
            V_bh + cols[:, None] * stride_vn + dv_offs[None, :] * stride_vd,
            mask=(cols[:, None] < S) & (dv_offs[None, :] < DV),
            other=0.0,
        )
        k = tl.load(
            K_bh + cols[:, None] * stride_kn + d_offs[None, :] * stride_kd,
            mask=(cols[:, None] < S) & (d_offs[None, :] < D),
            other=0.0,
        )
        ds = g * (tl.dot(do, tl.trans(v), input_precision="ieee") - delta[:, None])
        dq += tl.dot(ds, k, input_precision="ieee")
    tl.store(
        DQ + bh * L * D + rows[:, None] * D + d_offs[None, :],
        dq,
        mask=row_ok[:, None] & (d_offs[None, :] < D),
    )


@triton.jit
def _attention_backward_keys_kernel(
    Q,
    K,
    V,
    Bias,
    A,
    T,
    DO,
    Delta,
    DK,
    DV_out,
    alpha,
    L,
    S,
    D,
    DV,
    stride_qb,
    stride_qm,
    stride_qd,
    stride_kb,
    stride_kn,
    stride_kd,
    stride_vb,
    stride_vn,
    stride_vd,
    stride_bb,
    stride_bn,
    MODE: tl.constexpr,
    PER_HEAD: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    """For one block of keys: ``dV = P^T dO`` and ``dK = (g (dP - delta))^T Q`` over the
    queries (from the thresholds and the ``delta`` of the queries' kernel)."""
    bh = tl.program_id(1).to(tl.int64)
    start_n = tl.program_id(0) * BLOCK_N
    cols = start_n + tl.arange(0, BLOCK_N)
    d_offs = tl.arange(0, BLOCK_D)
    dv_offs = tl.arange(0, BLOCK_DV)
    col_ok = cols < S
    k = tl.load(
        K + bh * stride_kb + cols[:, None] * stride_kn + d_offs[None, :] * stride_kd,
        mask=col_ok[:, None] & (d_offs[None, :] < D),
        other=0.0,
    )
    v = tl.load(
        V + bh * stride_vb + cols[:, None] * stride_vn + dv_offs[None, :] * stride_vd,
        mask=col_ok[:, None] & (dv_offs[None, :] < DV),
        other=0.0,
    )
    bias = tl.zeros([BLOCK_N], tl.float32)
    if HAS_BIAS:
        bias = tl.load(Bias + bh * stride_bb + cols * stride_bn, mask=col_ok, other=0.0)
    if MODE == 0:
        beta = 1.0
    elif MODE == 1:
        beta = 0.5
    elif PER_HEAD:
        beta = tl.load(A + bh).to(tl.float32) - 1.0
    else:
        beta = alpha - 1.0
    m = 1.0 / beta
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_DV], tl.float32)
    if CAUSAL:
        m_start = (start_n // BLOCK_M) * BLOCK_M
    else:
        m_start = 0
    for start_m in range(m_start, L, BLOCK_M):
        rows = start_m + tl.arange(0, BLOCK_M)
        row_ok = rows < L
        q = tl.load(
            Q + bh * stride_qb + rows[:, None] * stride_qm + d_offs[None, :] * stride_qd,
            mask=row_ok[:, None] & (d_offs[None, :] < D),
            other=0.0,
        )
        do = tl.load(
            DO + bh * L * DV + rows[:, None] * DV + dv_offs[None, :],
            mask=row_ok[:, None] & (dv_offs[None, :] < DV),
            other=0.0,
        )
        t = tl.load(T + bh * L + rows, mask=row_ok, other=float("inf"))
        delta = tl.load(Delta + bh * L + rows, mask=row_ok, other=0.0)
        # the transposed block (keys x queries), as FlashAttention's backward forms it
        sT = tl.dot(k, tl.trans(q), input_precision="ieee") + bias[:, None]
        keep = col_ok[:, None] & row_ok[None, :]
        if CAUSAL:
            keep = keep & (cols[:, None] <= rows[None, :])
        sT = tl.where(keep, sT, float("-inf"))
        PT, gT = _attention_rebuild(sT, t[None, :], beta, m, MODE)
        dv += tl.dot(PT, do, input_precision="ieee")
        dsT = gT * (tl.dot(v, tl.trans(do), input_precision="ieee") - delta[None, :])
        dk += tl.dot(dsT, q, input_precision="ieee")
    tl.store(
        DK + bh * S * D + cols[:, None] * D + d_offs[None, :],
        dk,
        mask=col_ok[:, None] & (d_offs[None, :] < D),
    )
    tl.store(
        DV_out + bh * S * DV + cols[:, None] * DV + dv_offs[None, :],
        dv,
        mask=col_ok[:, None] & (dv_offs[None, :] < DV),
    )


def attention_backward(
    q, k, v, bias, alpha_heads, alpha: float, mode: int, causal: bool, t, d_out,
    block_m: int, block_n: int, num_warps: int,
):  # fmt: skip
    """Launch the two backward kernels on ``(BH, L, D)`` queries (scaled), keys, values, the
    ``(BH, L)`` thresholds of the forward pass and the output's gradient; returns
    ``(dq, dk, dv)`` (float32, contiguous)."""
    import torch

    BH, L, D = q.shape
    S, DV = k.shape[1], v.shape[-1]
    d_out = d_out.float().contiguous()
    t = t.reshape(BH, L).float().contiguous()
    dq = torch.empty((BH, L, D), dtype=torch.float32, device=q.device)
    dk = torch.empty((BH, S, D), dtype=torch.float32, device=q.device)
    dv = torch.empty((BH, S, DV), dtype=torch.float32, device=q.device)
    delta = torch.empty((BH, L), dtype=torch.float32, device=q.device)
    has_bias = bias is not None
    bias_arg = bias if has_bias else t
    heads = alpha_heads if alpha_heads is not None else t
    common = (
        q.stride(0), q.stride(1), q.stride(2),
        k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2),
        bias.stride(0) if has_bias else 0, bias.stride(1) if has_bias else 0,
    )  # fmt: skip
    meta = dict(
        MODE=mode, PER_HEAD=alpha_heads is not None, HAS_BIAS=has_bias, CAUSAL=causal,
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_D=max(16, triton.next_power_of_2(D)),
        BLOCK_DV=max(16, triton.next_power_of_2(DV)), num_warps=num_warps,
    )  # fmt: skip
    _attention_backward_queries_kernel[(triton.cdiv(L, block_m), BH)](
        q, k, v, bias_arg, heads, t, d_out, dq, delta, float(alpha), L, S, D, DV, *common,
        **meta,
    )  # fmt: skip
    # the keys' kernel in blocks of at most 32 x 32: compiled for an H100/H200 at d = 64 with
    # 8 warps it holds 128 registers a thread without a spill (64 queries a block spill 8 KB)
    keys = min(block_n, 32)
    meta.update(BLOCK_M=min(block_m, 32), BLOCK_N=keys)
    _attention_backward_keys_kernel[(triton.cdiv(S, keys), BH)](
        q, k, v, bias_arg, heads, t, d_out, delta, dk, dv, float(alpha), L, S, D, DV, *common,
        **meta,
    )  # fmt: skip
    return dq, dk, dv
