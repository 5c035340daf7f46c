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

from sk_entmax.entmax._attention_blocks import _block_scores, _EntmaxAttentionFunction
from sk_entmax.entmax.common import ALPHA_NUMBER, HALF
from sk_entmax.entmax.constraints import AnyOf, Integer, Options, Real, check, invalid
from sk_entmax.entmax.dispatch import entmax
from sk_entmax.entmax.tracing import compiling

__all__ = ["entmax_attention", "entmax_attention_weights"]

Mask = torch.Tensor | None

# Elements in one block's score matrix when ``block_size`` is not given: 2**22 float32
# entries are 16 MiB; the mapping needs a few such scratch tensors at once.
_BLOCK_ELEMENTS = 2**22

_DROPOUT_P = Real(0.0, 1.0, high_open=True)
#: queries per block, or None to size the blocks by ``_BLOCK_ELEMENTS``
_BLOCK_SIZE = AnyOf(Options((None,)), Integer(1))


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
    work = torch.float32 if query.dtype in HALF else query.dtype
    q, k, v = (x.to(work) for x in (query, key, value))
    scale = 1 / math.sqrt(E) if scale is None else float(scale)
    q = (q * scale).expand(*batch, L, E)
    k = k.expand(*batch, S, E)
    v = v.expand(*batch, S, value.shape[-1])
    alpha = _check_alpha(alpha, batch, q, owner)
    prepared = tuple(_prepare_mask(m, batch, L, S, work, owner) for m in masks)
    return q, k, v, alpha, prepared, batch


def prepared_weights(
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
    core's differentiable mappings. Not in ``__all__``: the shared driver of
    :func:`entmax_attention_weights` and of :mod:`sk_entmax.nn`'s multi-head module, whose
    inputs are checked already."""
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


def prepared_attention(
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
    block_elements: int = _BLOCK_ELEMENTS,
):
    """The shared driver of :func:`entmax_attention` and the multi-head module, whose name
    ``owner`` is; without ``block_size``, a block's score matrix holds about
    ``block_elements`` entries."""
    dropout_p = check("dropout_p", dropout_p, _DROPOUT_P, owner)
    block_size = check("block_size", block_size, _BLOCK_SIZE, owner)
    q, k, v, alpha, prepared, batch = _prepare(query, key, value, alpha, masks, scale, owner)
    dtype, L, S = query.dtype, q.shape[-2], k.shape[-2]
    if block_size is None:
        n_batch = math.prod(batch)
        block_size = max(1, block_elements // max(1, n_batch * S))
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
    return prepared_attention(
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
    weights = prepared_weights(
        query, key, value, alpha, masks, is_causal, scale, "entmax_attention_weights"
    )
    return weights.to(query.dtype)
