"""Sparse scaled dot-product attention: alpha-entmax over the keys, in bounded memory.

:func:`entmax_attention` is :func:`torch.nn.functional.scaled_dot_product_attention` with the
softmax over the key axis replaced by alpha-entmax (Peters et al., 2019; Correia et al., 2019,
"Adaptively Sparse Transformers"):

.. math::

    \\operatorname{out} = \\operatorname{entmax}_\\alpha\\left(
    \\frac{Q K^\\top}{\\sqrt{d}} + M\\right) V ,

exact sparsemax at ``alpha = 2``, exact 1.5-entmax at ``alpha = 1.5``, softmax at 1 and root
finding otherwise (:mod:`sk_entmax.entmax.root_finding`), with one alpha per head if asked,
differentiable in that alpha.

Memory. The queries are processed in blocks, so only one block's score matrix exists at a
time. The backward pass keeps none either: for each query row the forward saves only its
threshold :math:`t`, the one number with which the weights are a closed-form function of the
scores, :math:`p_i = [1 + (\\alpha - 1)(s_i - t)]_+^{1/(\\alpha - 1)}` (:math:`[s_i - t]_+`
at 2, :math:`[(s_i - t)/2]_+^2` at 1.5, :math:`\\exp(s_i - t)` at 1). The backward recomputes
each block's scores, rebuilds its weights from :math:`t` in one pass, and forms the
vector-Jacobian products there (the FlashAttention scheme of Dao et al., 2022, with entmax's
threshold in place of the log-sum-exp). The threshold is read off at each row's largest
score :math:`m`, whose weight :math:`p_{\\max}` is the best conditioned:
:math:`t = m - (p_{\\max}^{\\alpha - 1} - 1) / (\\alpha - 1)`, computed as
``m - expm1(beta log p_max) / beta``, accurate for alpha close to 1 too.

Saved for the backward: the inputs, the ``(..., L, 1)`` thresholds and the masks given
(if any); no ``(L, S)`` matrix. With dropout, each block's mask is drawn from its own seeded
generator and drawn again in the backward.
"""

from __future__ import annotations

import math

import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable

from sk_entmax.entmax import algorithms
from sk_entmax.entmax._axes import _HALF
from sk_entmax.entmax._checks import ALPHA_NUMBER, DEFAULT_N_ITER
from sk_entmax.entmax._entmax_gradients import _entmax_alpha_vjp, _gppr
from sk_entmax.entmax._entmax_solvers import _entmax_bisect_last, _entmax_p, _softmax_last
from sk_entmax.entmax._exact import _entmax15_last, _sparsemax_last
from sk_entmax.entmax._newton import _floor_threshold
from sk_entmax.entmax._safe_ops import row_stats, safe_log, safe_pow
from sk_entmax.entmax._tracing import compiling
from sk_entmax.entmax._vjp import entmax_vjp
from sk_entmax.entmax.algorithms import Case, apply_case, as_kernel, case_for
from sk_entmax.entmax.constraints import AnyOf, Integer, Options, Real, check, invalid
from sk_entmax.entmax.dispatch import entmax

__all__ = ["entmax_attention", "entmax_attention_weights"]

Mask = torch.Tensor | None

# Elements in one block's score matrix when ``block_size`` is not given: 2**22 float32
# entries are 16 MiB; the mapping needs a few such scratch tensors at once.
_BLOCK_ELEMENTS = 2**22

_DROPOUT_P = Real(0.0, 1.0, high_open=True)
#: queries per block, or None to size the blocks by ``_BLOCK_ELEMENTS``
_BLOCK_SIZE = AnyOf(Options((None,)), Integer(1))


# --------------------------------------------------------------------------- per block


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
    Case.SPARSEMAX: as_kernel(_sparsemax_last, k=None),
    Case.ENTMAX15: as_kernel(_entmax15_last, k=None),
    Case.SOFTMAX: as_kernel(_softmax_last),
    Case.ROOT: as_kernel(_entmax_bisect_last, "alpha", "n_iter", ensure_sum_one=True),
    Case.PER_ROW: as_kernel(_entmax_bisect_last, "alpha", "n_iter", ensure_sum_one=True),
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
            P = _entmax_p(Z.sub_(t), beta)
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
        P = _entmax_p(Z.sub_(t), beta)
        return P, _gppr(P, alpha)
    m = 1 / beta
    X = Z.sub_(t).mul_(beta).add_(1).relu_()
    G = torch.clamp(X, min=2.0 ** (-120 / max(m - 1, 1))).log2_().mul_(m - 1).exp2_()
    g_floor = _floor_threshold(m - 1)
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


def _fused_forward(q, k, v, alpha, masks, causal, dropout_p, want_support):
    """``(out, t, support, plan)`` by the fused Triton kernel (:mod:`sk_entmax.entmax.kernels`)
    where it serves: on CUDA, without dropout, masks holding one row for every query (key
    padding) and the alphas the mapping kernels take; else None. The backward pass then
    takes the fused kernels too (:func:`~sk_entmax.entmax.kernels.attention_backward`),
    except for a learned alpha, whose gradient the blocked backward forms."""
    if dropout_p > 0 or q.device.type not in algorithms._TRITON_DEVICES:
        return None
    from sk_entmax.entmax import kernels

    return kernels.attention_forward(q, k, v, alpha, masks, causal, want_support)


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
                                                        dropout_p, want_support)  # fmt: skip
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
            P, gppr = _rebuild(Z, t[..., rows, :], a, ctx.case)
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
                d_alpha += _entmax_alpha_vjp(dP, P, gppr, a - 1).sum(-2, keepdim=True)
            dZ = entmax_vjp(dP, gppr)
            del gppr, P
            if need_q:
                dq[..., rows, :] = torch.matmul(dZ, k)
            if need_k:
                dk += torch.matmul(dZ.transpose(-2, -1), q[..., rows, :])
        return dq, dk, dv, d_alpha, None, None, None, None, None, None


# --------------------------------------------------------------------------- interface


def _check_inputs(query, key, value) -> None:
    for name, x in (("query", query), ("key", key), ("value", value)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor; got {type(x).__name__}")
        if not x.is_floating_point():
            raise TypeError(f"{name} must be a floating point tensor; got dtype {x.dtype}")
        if x.dim() < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., seq, features)")
    if query.dtype != key.dtype or query.dtype != value.dtype:
        raise TypeError(
            f"query, key and value must share a dtype; got {query.dtype}, {key.dtype} "
            f"and {value.dtype}"
        )
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"query and key must have the same feature size; got {query.shape[-1]} and "
            f"{key.shape[-1]}"
        )
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"key and value must have the same sequence length; got {key.shape[-2]} and "
            f"{value.shape[-2]}"
        )


def _check_alpha(alpha, batch: torch.Size, like: torch.Tensor, owner: str):
    """A float, or a tensor broadcast to ``(*batch, 1, 1)`` (one alpha per head); ``owner``
    is the public name the parameter errors name."""
    if isinstance(alpha, torch.Tensor):
        if not alpha.is_floating_point():
            raise invalid("alpha", owner, "a floating point tensor or a number", alpha.dtype)
        a = alpha
        if a.dim() >= 3 and a.shape[-2:] == (1, 1):  # shaped against the scores
            a = a[..., 0, 0]
        try:
            a = a.expand(batch)
        except RuntimeError as exc:
            raise ValueError(
                f"alpha of shape {tuple(alpha.shape)} does not broadcast to one value per "
                f"head: the batch shape {tuple(batch)} of the inputs (e.g. (H,) for "
                f"(B, H, L, d) inputs)"
            ) from exc
        return a.to(like.dtype)[..., None, None]
    return float(check("alpha", alpha, ALPHA_NUMBER, owner))


def _prepare_mask(
    mask: torch.Tensor, batch: torch.Size, L: int, S: int, work: torch.dtype, owner: str
):
    """``(mask, is_bool)`` broadcast to ``(*batch, L or 1, S)`` as a view (float: ``work``)."""
    if not isinstance(mask, torch.Tensor):
        raise invalid("attn_mask", owner, "a torch.Tensor or None", mask)
    is_bool = mask.dtype == torch.bool
    if not is_bool and not mask.is_floating_point():
        must = "a boolean or floating point tensor"
        raise invalid("attn_mask", owner, must, mask.dtype)
    if not is_bool and mask.requires_grad:
        raise ValueError(
            "a float attn_mask that requires grad is not supported (no gradient flows to "
            "the mask); pass attn_mask.detach()"
        )
    if not is_bool:
        mask = mask.to(work)  # before the broadcast: a view, never a copy of the full shape
    rows = L if mask.dim() >= 2 and mask.shape[-2] != 1 else 1
    try:
        mask = mask.expand(*batch, rows, S)
    except RuntimeError as exc:
        raise ValueError(
            f"attn_mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
            f"{(*batch, L, S)}"
        ) from exc
    return mask, is_bool


def _prepare(query, key, value, alpha, masks, scale, owner):
    """Validate, upcast half precision, scale the queries, broadcast the leading axes
    (``owner``: the public name the parameter errors name)."""
    _check_inputs(query, key, value)
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    batch = torch.broadcast_shapes(
        query.shape[:-2],
        key.shape[:-2],
        value.shape[:-2],
        *(m.shape[:-2] for m in masks if m.dim() > 2),
    )
    work = torch.float32 if query.dtype in _HALF else query.dtype
    q, k, v = (x.to(work) for x in (query, key, value))
    scale = 1 / math.sqrt(E) if scale is None else float(scale)
    q = (q * scale).expand(*batch, L, E)
    k = k.expand(*batch, S, E)
    v = v.expand(*batch, S, value.shape[-1])
    alpha = _check_alpha(alpha, batch, q, owner)
    prepared = tuple(_prepare_mask(m, batch, L, S, work, owner) for m in masks)
    return q, k, v, alpha, prepared, batch


def _weights(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    alpha: float | torch.Tensor,
    masks: tuple[torch.Tensor, ...],
    is_causal: bool,
    scale: float | None,
    owner: str = "EntmaxMultiheadAttention",
) -> torch.Tensor:
    """The full ``(..., L, S)`` weights through the core's differentiable mappings."""
    q, k, _, alpha, prepared, _ = _prepare(query, key, value, alpha, masks, scale, owner)
    return _full_weights(q, k, alpha, prepared, is_causal)


def _full_weights(q, k, alpha, prepared, is_causal) -> torch.Tensor:
    """The full ``(..., L, S)`` weights of prepared inputs (see :func:`_prepare`) through the
    core's differentiable mappings."""
    Z = _block_scores(q, k.transpose(-2, -1), prepared, is_causal, slice(0, q.shape[-2]))
    if isinstance(alpha, torch.Tensor):
        alpha = alpha.expand(*Z.shape[:-1], 1)
    return entmax(Z, alpha, dim=-1)


def _dropped_out(q, k, v, alpha, prepared, is_causal, dropout_p):
    """Attention with dropout from the full ``(..., L, S)`` weights (inputs prepared), for
    ``torch.compile``: ``(out, support)`` in the working dtype."""
    P = _full_weights(q, k, alpha, prepared, is_causal)
    support = (P != 0).sum(-1, keepdim=True)
    return torch.nn.functional.dropout(P, p=dropout_p) @ v, support


def _attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    alpha: float | torch.Tensor,
    masks: tuple[torch.Tensor, ...],
    dropout_p: float,
    is_causal: bool,
    scale: float | None,
    block_size: int | None,
    return_support_size: bool,
    owner: str = "EntmaxMultiheadAttention",
):
    """The shared driver of :func:`entmax_attention` and the multi-head module, whose name
    ``owner`` is."""
    dropout_p = check("dropout_p", dropout_p, _DROPOUT_P, owner)
    block_size = check("block_size", block_size, _BLOCK_SIZE, owner)
    q, k, v, alpha, prepared, batch = _prepare(query, key, value, alpha, masks, scale, owner)
    dtype, L, S = query.dtype, q.shape[-2], k.shape[-2]
    if block_size is None:
        n_batch = math.prod(batch)
        block_size = max(1, _BLOCK_ELEMENTS // max(1, n_batch * S))
    block = min(block_size, max(L, 1))
    if L == 0 or S == 0 or math.prod(batch) == 0:
        out = q.new_zeros((*batch, L, value.shape[-1]))
        out = out + 0 * (q.sum() + k.sum() + v.sum())  # keeps the graph for gradients
        support = torch.zeros((*batch, L, 1), dtype=torch.int64, device=q.device)
        out = out.to(dtype)
        return (out, support) if return_support_size else out
    if dropout_p > 0 and compiling():
        # the blocks' dropout masks come from seeded generators, which torch.compile cannot
        # create: the full weights through the differentiable mappings, then F.dropout
        out, support = _dropped_out(q, k, v, alpha, prepared, is_causal, dropout_p)
        return (out.to(dtype), support) if return_support_size else out.to(dtype)
    alpha_t = alpha if isinstance(alpha, torch.Tensor) else None
    result = _EntmaxAttentionFunction.apply(
        q,
        k,
        v,
        alpha_t,
        None if alpha_t is not None else alpha,
        prepared,
        bool(is_causal),
        float(dropout_p),
        block,
        return_support_size,
    )
    if return_support_size:
        out, support = result
        return out.to(dtype), support
    return result.to(dtype)


def entmax_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    *,
    alpha: float | torch.Tensor = 1.5,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    block_size: int | None = None,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention with alpha-entmax weights, in bounded memory.

    Computes ``entmax_alpha(query @ key^T * scale + mask) @ value`` with the mapping taken
    along the key axis (Peters et al., 2019; Correia et al., 2019), processing the queries
    in blocks so that no ``(L, S)`` score matrix exists beyond one block, in the forward or
    the backward pass (see the module docstring). The arguments and the mask semantics are
    those of :func:`torch.nn.functional.scaled_dot_product_attention`.

    Parameters
    ----------
    query : torch.Tensor of shape (..., L, E)
        Queries; the leading axes (batch, heads) broadcast against those of ``key``,
        ``value`` and the mask.
    key : torch.Tensor of shape (..., S, E)
        Keys.
    value : torch.Tensor of shape (..., S, Ev)
        Values.
    alpha : float or torch.Tensor, default=1.5
        The entmax alpha: 2 is exact sparsemax, 1.5 exact 1.5-entmax, 1 softmax, any other
        number root finding (:func:`~sk_entmax.entmax.entmax_bisect`). A tensor gives one
        alpha per head: it must broadcast to the inputs' leading axes, e.g. shape ``(H,)``
        for ``(B, H, L, E)`` inputs; with two trailing axes of size 1 (``(H, 1, 1)``) it is
        broadcast against the scores ``(..., L, S)`` instead. It is solved by root finding
        and receives a gradient.
    attn_mask : torch.Tensor or None, default=None
        Broadcastable to ``(..., L, S)``. Boolean: True means attend (as in
        ``scaled_dot_product_attention``). Float: added to the scores (``-inf`` masks). A
        query row with every key masked gets zero weights and a zero output (softmax
        attention gives NaN there). A float mask receives no gradient.
    dropout_p : float, default=0.0
        Dropout probability on the attention weights (always applied when positive, as in
        ``scaled_dot_product_attention``: pass 0 at evaluation).
    is_causal : bool, default=False
        Query ``i`` attends to keys ``j <= i`` (top-left aligned). An error to combine with
        ``attn_mask``, as in ``scaled_dot_product_attention``.
    scale : float or None, default=None
        Score scaling; ``None`` is ``1 / sqrt(E)``.
    block_size : int or None, default=None
        Queries per block. ``None`` picks it so that a block's score matrix holds about
        ``2**22`` entries (16 MiB in float32).
    return_support_size : bool, default=False
        Also return the number of keys each query attends to (the nonzero weights), an
        int64 tensor of shape ``(..., L, 1)``.

    Returns
    -------
    out : torch.Tensor of shape (..., L, Ev)
        The attention output, in the inputs' dtype. float16 and bfloat16 are computed in
        float32.
    support_size : torch.Tensor of shape (..., L, 1), optional
        Only with ``return_support_size=True``.

    Notes
    -----
    Gradients flow to ``query``, ``key``, ``value`` and a tensor ``alpha`` (first order
    only). The backward recomputes each block's scores and rebuilds the weights from one
    saved threshold per query row.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import entmax_attention
    >>> q = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    >>> k = torch.tensor([[[4.0, 0.0], [0.0, 4.0], [0.0, 0.0]]])
    >>> v = torch.eye(3).unsqueeze(0)
    >>> entmax_attention(q, k, v, alpha=2.0, scale=1.0)
    tensor([[[1., 0., 0.],
             [0., 1., 0.]]])
    """
    if is_causal and attn_mask is not None:
        raise ValueError(
            "attn_mask and is_causal=True cannot both be given (as in "
            "scaled_dot_product_attention); fold the causal mask into attn_mask"
        )
    masks = () if attn_mask is None else (attn_mask,)
    return _attention(
        query,
        key,
        value,
        alpha,
        masks,
        dropout_p,
        is_causal,
        scale,
        block_size,
        return_support_size,
        "entmax_attention",
    )


def entmax_attention_weights(
    query: torch.Tensor,
    key: torch.Tensor,
    *,
    alpha: float | torch.Tensor = 1.5,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> torch.Tensor:
    """The attention weights of :func:`entmax_attention`, as one ``(..., L, S)`` tensor.

    ``entmax_alpha(query @ key^T * scale + mask)`` along the key axis, through the core's
    differentiable mappings, with their exact zeros. This materialises the full weights (it
    is what ``need_weights=True`` costs); :func:`entmax_attention` never does.

    Parameters
    ----------
    query : torch.Tensor of shape (..., L, E)
        Queries.
    key : torch.Tensor of shape (..., S, E)
        Keys.
    alpha, attn_mask, is_causal, scale
        As in :func:`entmax_attention`.

    Returns
    -------
    torch.Tensor of shape (..., L, S)
        Non-negative weights, each query row summing to 1 (0 for a fully masked row), in
        the inputs' dtype.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import entmax_attention_weights
    >>> q = torch.tensor([[1.0, 0.0]])
    >>> k = torch.tensor([[2.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    >>> entmax_attention_weights(q, k, alpha=2.0, scale=1.0)
    tensor([[1., 0., 0.]])
    """
    if is_causal and attn_mask is not None:
        raise ValueError(
            "attn_mask and is_causal=True cannot both be given (as in "
            "scaled_dot_product_attention); fold the causal mask into attn_mask"
        )
    masks = () if attn_mask is None else (attn_mask,)
    value = key.new_empty((*key.shape[:-1], 0))
    weights = _weights(
        query, key, value, alpha, masks, is_causal, scale, "entmax_attention_weights"
    )
    return weights.to(query.dtype)
