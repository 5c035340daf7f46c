"""The blockwise computation of entmax attention: per-block scores, thresholds and weights,
and the autograd function.

One job: compute attention for one block of queries at a time, so that no ``(L, S)`` matrix
is ever held. Here are a block's scores (:func:`_block_scores`), the mapping and its
threshold (:func:`_map`, :func:`_threshold`), the weights rebuilt from the threshold
(:func:`_rebuild`), the dropout mask drawn per block (:func:`_dropout_keep`) and
:class:`_EntmaxAttentionFunction`, whose backward recomputes each block. The public
functions and the checks of their arguments are in :mod:`sk_entmax.entmax.attention`.
"""

from __future__ import annotations

import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable

from sk_entmax.entmax import kernels
from sk_entmax.entmax.algorithms import Case, apply_case, as_kernel, case_for
from sk_entmax.entmax.common import DEFAULT_N_ITER, entmax_vjp, row_stats, safe_log, safe_pow
from sk_entmax.entmax.solvers import (
    entmax15_traceable,
    entmax_alpha_vjp,
    entmax_bisect_last,
    entmax_p,
    floor_threshold,
    gppr,
    softmax_last,
    sparsemax_traceable,
)
from sk_entmax.entmax.tracing import compiling


def _block_scores(
    q_blk: torch.Tensor,
    kT: torch.Tensor,
    masks: tuple[tuple[torch.Tensor, bool], ...],
    causal: bool,
    rows: slice,
) -> torch.Tensor:
    """Scores of one block of (pre-scaled) queries against every key, masks applied.

    Each mask is ``(tensor, is_bool)`` of shape ``(..., L or 1, S)``; a boolean one keeps
    the True entries, a float one is added. ``causal`` keeps key ``j`` for query ``i`` when
    ``j <= i`` (the top-left aligned lower triangle of ``scaled_dot_product_attention``).
    """
    Z = torch.matmul(q_blk, kT)
    for mask, is_bool in masks:
        m = mask[..., rows, :] if mask.shape[-2] != 1 else mask
        if is_bool:
            Z.masked_fill_(~m, float("-inf"))
        else:
            Z.add_(m)
    if causal:
        i = torch.arange(rows.start, rows.stop, device=Z.device).unsqueeze(-1)
        j = torch.arange(Z.shape[-1], device=Z.device)
        Z.masked_fill_(j > i, float("-inf"))
    return Z


#: the core's solvers along the last axis, without a graph, with the kernels' convention
#: (:func:`~sk_entmax.entmax.algorithms.as_kernel`); ``alpha`` and ``n_iter`` arrive checked
_SOLVERS = {
    Case.SPARSEMAX: as_kernel(sparsemax_traceable),
    Case.ENTMAX15: as_kernel(entmax15_traceable),
    Case.SOFTMAX: as_kernel(softmax_last),
    **{
        case: as_kernel(entmax_bisect_last, "alpha", "n_iter", ensure_sum_one=True, case=case)
        for case in (Case.ROOT, Case.PER_ROW)
    },
}


def _map(Z: torch.Tensor, alpha: float | torch.Tensor, case: Case) -> torch.Tensor:
    """alpha-entmax of the rows of ``Z`` (no graph), ``case`` being ``alpha``'s: by the
    kernel registered for the case, else by the core's solvers."""
    return apply_case(_SOLVERS, Z, alpha, n_iter=DEFAULT_N_ITER, training=False, case=case)


def _threshold(
    Z: torch.Tensor, P: torch.Tensor, alpha: float | torch.Tensor, case: Case
) -> torch.Tensor:
    """Per-row threshold ``t`` with ``P = f(Z - t)`` (module docstring), read at the row max.

    A fully masked row gets ``t = +inf``, so that its rebuilt weights are 0. ``case`` is
    ``alpha``'s (:func:`~sk_entmax.entmax.algorithms.case_for`), decided once per call.
    """
    m, empty = row_stats(Z)
    p_max = P.amax(-1, keepdim=True)
    mapping = case
    if mapping is Case.PER_ROW:
        beta = alpha - 1
        log_p = safe_log(p_max)
        zero = beta == 0  # softmax rows: the offset is log p itself
        offset = torch.where(zero, log_p, torch.expm1(beta * log_p) / torch.where(zero, 1, beta))
    elif mapping is Case.SPARSEMAX:
        offset = p_max
    elif mapping is Case.ENTMAX15:
        offset = 2 * p_max.sqrt()
    elif mapping is Case.SOFTMAX:
        offset = safe_log(p_max)
    else:
        beta = alpha - 1
        offset = torch.expm1(beta * safe_log(p_max)) / beta
    return torch.where(empty, float("inf"), m - offset)


def _rebuild(
    Z: torch.Tensor, t: torch.Tensor, alpha: float | torch.Tensor, case: Case
) -> tuple[torch.Tensor, torch.Tensor]:
    """The weights ``P = f(Z - t)`` and ``g = P ** (2 - alpha)`` on the support (0 off it).

    ``Z`` is overwritten. For alpha in ``[1.1, 2]`` both come from the base
    ``X = [1 + beta (z - t)]_+``: ``g = X ** (1 / beta - 1)`` and ``P = g X``, one ``pow``
    (as ``exp2(log2(.))`` on a floor, as in the core's solvers) for the two; at 1.5 and 2
    no ``pow`` at all. Other alphas (and alpha close to 1) take the log1p form. ``case`` is
    ``alpha``'s, decided once per call.
    """
    mapping = case
    if mapping is Case.PER_ROW:
        beta = alpha - 1
        # (compiling: the range test would read beta back; the log1p form serves any beta)
        if compiling() or not bool(((0.1 <= beta) & (beta <= 1)).all()):
            P = entmax_p(Z.sub_(t), beta)
            return P, safe_pow(P, 1 - beta)
        m = 1 / beta
        X = Z.sub_(t).mul_(beta).add_(1).relu_()
        floor = torch.exp2(-120 / (m - 1).clamp(min=1))
        G = torch.maximum(X, floor).log2_().mul_(m - 1).exp2_().mul_(torch.sign(X))
        return G * X, G
    if mapping is Case.SPARSEMAX:
        P = Z.sub_(t).relu_()
        return P, torch.sign(P)
    if mapping is Case.ENTMAX15:
        G = Z.sub_(t).div_(2).relu_()
        return G.square(), G
    if mapping is Case.SOFTMAX:
        P = Z.sub_(t).exp_()
        return P, P
    beta = alpha - 1
    if not 0.1 <= beta < 1:
        P = entmax_p(Z.sub_(t), beta)
        return P, gppr(P, alpha, case=case)
    m = 1 / beta
    X = Z.sub_(t).mul_(beta).add_(1).relu_()
    G = torch.clamp(X, min=2.0 ** (-120 / max(m - 1, 1))).log2_().mul_(m - 1).exp2_()
    g_floor = floor_threshold(m - 1)
    if g_floor == 0:
        G.mul_(torch.sign(X))
    elif m < 2:
        torch.nn.functional.threshold_(G, g_floor, 0.0)
    return G * X, G


def _dropout_keep(
    shape: torch.Size, p: float, seed: int, block: int, like: torch.Tensor
) -> torch.Tensor:
    """The dropout multiplier of one block (0 or ``1 / (1 - p)``), the same on every call."""
    gen = torch.Generator(device=like.device)
    gen.manual_seed(seed + block)
    keep = torch.rand(shape, generator=gen, device=like.device, dtype=like.dtype) >= p
    return keep.to(like.dtype).div_(1 - p)


def _fused_forward(q, k, v, alpha, masks, causal, dropout_p, want_support, case):
    """``(out, t, support, plan)`` by the fused Triton kernel (:mod:`sk_entmax.entmax.kernels`)
    where it serves: on CUDA (:func:`~sk_entmax.entmax.kernels.devices`), without dropout,
    masks holding one row for every query (key padding) and the alphas the mapping kernels
    take (``case``: ``alpha``'s); else None. The backward pass then takes the fused kernels
    too (:func:`~sk_entmax.entmax.kernels.attention_backward`), except for a learned alpha,
    whose gradient the blocked backward forms."""
    if dropout_p > 0:
        return None
    return kernels.attention_forward(q, k, v, alpha, masks, causal, want_support, case)


class _EntmaxAttentionFunction(Function):
    """Block-wise entmax attention; saves the inputs and one threshold per query row."""

    @staticmethod
    def forward(ctx, q, k, v, alpha_t, alpha, masks, causal, dropout_p, block, want_support):
        alpha = alpha_t if alpha_t is not None else alpha
        L = q.shape[-2]
        kT = k.transpose(-2, -1)
        out = q.new_empty((*q.shape[:-1], v.shape[-1]))
        needs_grad = any(ctx.needs_input_grad[:4])
        t = q.new_empty((*q.shape[:-1], 1)) if needs_grad else None
        support = (
            torch.empty((*q.shape[:-1], 1), dtype=torch.int64, device=q.device)
            if want_support
            else None
        )
        seed = int(torch.randint(0, 2**62, (), device="cpu")) if dropout_p > 0 else 0
        case = case_for(alpha)  # decided once: every block, and the backward pass, use it
        plan = None
        fused = None if compiling() else _fused_forward(q, k, v, alpha, masks, causal,
                                                        dropout_p, want_support, case)  # fmt: skip
        if fused is not None:  # the fused kernel: the same output, thresholds and supports
            out, t_fused, support_fused, plan = fused
            t = t_fused if needs_grad else None
            support = support_fused if want_support else None
        else:
            for b, start in enumerate(range(0, L, block)):
                rows = slice(start, min(start + block, L))
                Z = _block_scores(q[..., rows, :], kT, masks, causal, rows)
                a = alpha.expand(*Z.shape[:-1], 1) if alpha_t is not None else alpha
                P = _map(Z, a, case)
                if needs_grad:
                    t[..., rows, :] = _threshold(Z, P, a, case)
                if want_support:
                    support[..., rows, :] = (P != 0).sum(-1, keepdim=True)
                if dropout_p > 0:
                    P.mul_(_dropout_keep(P.shape, dropout_p, seed, b, P))
                out[..., rows, :] = torch.matmul(P, v)
        ctx.alpha = alpha if alpha_t is None else None
        ctx.case = case
        ctx.plan = plan if needs_grad else None
        ctx.masks, ctx.causal, ctx.dropout_p = masks, causal, dropout_p
        ctx.block, ctx.seed = block, seed
        if needs_grad:
            saved = (q, k, v, t) if alpha_t is None else (q, k, v, t, alpha_t)
            ctx.save_for_backward(*saved)
        if want_support:
            ctx.mark_non_differentiable(support)
            return out, support
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, d_out, *_):
        q, k, v, t, *rest = ctx.saved_tensors
        alpha_t = rest[0] if rest else None
        alpha = alpha_t if alpha_t is not None else ctx.alpha
        need_q, need_k, need_v, need_alpha = ctx.needs_input_grad[:4]
        if ctx.plan is not None and not need_alpha:  # the fused kernels' backward
            from sk_entmax.entmax import kernels

            dq, dk, dv = kernels.attention_backward(ctx.plan, t, d_out)
            return (
                dq.to(q.dtype) if need_q else None,
                dk.to(k.dtype) if need_k else None,
                dv.to(v.dtype) if need_v else None,
                None, None, None, None, None, None, None,
            )  # fmt: skip
        L = q.shape[-2]
        kT = k.transpose(-2, -1)
        dq = torch.empty_like(q) if need_q else None
        dk = torch.zeros_like(k) if need_k else None
        dv = torch.zeros_like(v) if need_v else None
        d_alpha = torch.zeros_like(alpha_t) if need_alpha else None
        for b, start in enumerate(range(0, L, ctx.block)):
            rows = slice(start, min(start + ctx.block, L))
            d_blk = d_out[..., rows, :]
            Z = _block_scores(q[..., rows, :], kT, ctx.masks, ctx.causal, rows)
            a = alpha.expand(*Z.shape[:-1], 1) if alpha_t is not None else alpha
            P, weights = _rebuild(Z, t[..., rows, :], a, ctx.case)
            del Z
            dP = torch.matmul(d_blk, v.transpose(-2, -1))
            if ctx.dropout_p > 0:
                keep = _dropout_keep(P.shape, ctx.dropout_p, ctx.seed, b, P)
                dP.mul_(keep)
                if need_v:
                    dv += torch.matmul((P * keep).transpose(-2, -1), d_blk)
                del keep
            elif need_v:
                dv += torch.matmul(P.transpose(-2, -1), d_blk)
            if not (need_q or need_k or need_alpha):
                continue
            if need_alpha:
                d_alpha += entmax_alpha_vjp(dP, P, weights, a - 1).sum(-2, keepdim=True)
            dZ = entmax_vjp(dP, weights)
            del weights, P
            if need_q:
                dq[..., rows, :] = torch.matmul(dZ, k)
            if need_k:
                dk += torch.matmul(dZ.transpose(-2, -1), q[..., rows, :])
        return dq, dk, dv, d_alpha, None, None, None, None, None, None
