"""From ``nn.MultiheadAttention``'s inputs to entmax attention per head.

The plumbing of :class:`~sk_entmax.nn.EntmaxMultiheadAttention`'s forward, one step per
function: the alpha it is built with as one value per head, the inputs batch first, the
masks in SDPA's convention and checked against the scores' shape, the projections split into
heads with the keys ``add_bias_kv`` and ``add_zero_attn`` add, and the entmax attention of
the heads, in full when the weights are asked for and in blocks otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch.nn import functional as F

from sk_entmax.entmax.attention import prepared_attention, prepared_weights
from sk_entmax.entmax.constraints import invalid

__all__ = [
    "alpha_values",
    "attend_heads",
    "batch_first_inputs",
    "score_masks",
    "split_heads",
    "to_sdpa_mask",
]


def alpha_values(
    alpha: float | Sequence[float] | torch.Tensor,
    num_heads: int,
    owner: str = "EntmaxMultiheadAttention",
) -> list[float]:
    """``alpha`` as one float per head: a number is shared, a sequence has one or
    ``num_heads`` values; anything else, or a NaN, raises naming ``alpha`` of ``owner``."""
    if isinstance(alpha, torch.Tensor):
        alpha = alpha.detach().reshape(-1).tolist()
    if isinstance(alpha, (int, float)) and not isinstance(alpha, bool):
        values = [float(alpha)] * num_heads
    elif isinstance(alpha, Sequence) and not isinstance(alpha, str):
        values = [float(a) for a in alpha]
        if len(values) == 1:
            values = values * num_heads
    else:
        raise invalid("alpha", owner, "a number or a sequence of numbers", alpha)
    if len(values) != num_heads or any(math.isnan(a) for a in values):
        raise invalid("alpha", owner, f"one number or {num_heads} (one per head)", alpha)
    return values


def to_sdpa_mask(mask: torch.Tensor | None, dtype: torch.dtype, name: str) -> torch.Tensor | None:
    """MHA's mask (bool: True is masked) as an SDPA one (bool: True attends); a float mask
    is added to the scores, in ``dtype``."""
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        return ~mask
    if not mask.is_floating_point():
        raise TypeError(f"only bool and floating types of {name} are supported")
    return mask.to(dtype)


def batch_first_inputs(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    key_padding_mask: torch.Tensor | None,
    batched: bool,
    batch_first: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """The inputs of the forward as batch-first ``(N, T, features)`` tensors.

    Parameters
    ----------
    query, key, value : torch.Tensor
        The inputs of the forward.
    key_padding_mask : torch.Tensor or None
        The key padding mask of the forward; given a batch dimension when the input is
        unbatched.
    batched : bool
        Whether the input has a batch dimension (``query.dim() == 3``).
    batch_first : bool
        The module's ``batch_first``: whether batched input is already ``(N, T, features)``.

    Returns
    -------
    query, key, value : torch.Tensor
        Of shape (N, L, E), (N, S, kdim) and (N, S, vdim).
    key_padding_mask : torch.Tensor or None
        Of shape (N, S) when given.
    """
    if not batched:
        query, key, value = (x.unsqueeze(0) for x in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    elif not batch_first:
        query, key, value = (x.transpose(0, 1) for x in (query, key, value))
    return query, key, value, key_padding_mask


def _pad_mask(mask: torch.Tensor | None) -> torch.Tensor | None:
    """``mask`` with one more key that every query may attend (``None`` stays ``None``)."""
    if mask is None:
        return None
    return F.pad(mask, (0, 1), value=True if mask.dtype == torch.bool else 0.0)


def split_heads(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    masks: tuple[torch.Tensor | None, torch.Tensor | None],
    num_heads: int,
    added: tuple[torch.Tensor | None, torch.Tensor | None, bool],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[torch.Tensor | None], int]:
    """Add the ``bias_k``/``bias_v`` key and the zero key, and split the projections into
    heads.

    Parameters
    ----------
    q, k, v : torch.Tensor of shape (N, L, E), (N, S, E), (N, S, E)
        The projected queries, keys and values.
    masks : (attn_mask, key_padding_mask), each torch.Tensor or None
        The SDPA masks, padded with one key (that every query may attend) for each key
        added.
    num_heads : int
        The number of heads H; the head width D is E / H.
    added : (bias_k, bias_v, add_zero_attn)
        The module's learned extra key and value (both or neither), and whether a zero key
        and value are appended.

    Returns
    -------
    q, k, v : torch.Tensor of shape (N, H, L, D), (N, H, S, D), (N, H, S, D)
        Per head, with the added keys.
    masks : [attn_mask, key_padding_mask]
        The padded masks.
    S : int
        The number of keys, the added ones included.
    """
    N, L, E = q.shape
    H, D = num_heads, E // num_heads
    bias_k, bias_v, add_zero_attn = added
    masks = list(masks)
    if bias_k is not None and bias_v is not None:
        k = torch.cat([k, bias_k.expand(N, 1, -1)], dim=1)
        v = torch.cat([v, bias_v.expand(N, 1, -1)], dim=1)
        masks = [_pad_mask(m) for m in masks]
    S = k.shape[1]
    q = q.reshape(N, L, H, D).transpose(1, 2)
    k = k.reshape(N, S, H, D).transpose(1, 2)
    v = v.reshape(N, S, H, D).transpose(1, 2)
    if add_zero_attn:
        k = torch.cat([k, k.new_zeros(N, H, 1, D)], dim=2)
        v = torch.cat([v, v.new_zeros(N, H, 1, D)], dim=2)
        masks = [_pad_mask(m) for m in masks]
        S += 1
    return q, k, v, masks, S


def score_masks(
    attn_mask: torch.Tensor | None,
    key_padding_mask: torch.Tensor | None,
    shape: tuple[int, int, int, int],
) -> list[torch.Tensor]:
    """Check the masks' shapes and return them broadcastable to the (N, H, L, S) scores.

    Parameters
    ----------
    attn_mask : torch.Tensor of shape (L, S) or (N * H, L, S), or None
        The SDPA attention mask.
    key_padding_mask : torch.Tensor of shape (N, S), or None
        The SDPA key padding mask.
    shape : (N, H, L, S)
        The batch size, the number of heads, of queries and of keys.

    Returns
    -------
    masks : list of torch.Tensor
        The attention mask, then the key padding mask as (N, 1, 1, S), those given.

    Raises
    ------
    RuntimeError
        When a 2-d ``attn_mask`` is not (L, S), or ``key_padding_mask`` not (N, S).
    """
    N, H, L, S = shape
    masks = []
    if attn_mask is not None:
        if attn_mask.dim() == 3:
            attn_mask = attn_mask.reshape(N, H, L, S)
        elif attn_mask.shape != (L, S):
            raise RuntimeError(
                f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should "
                f"be {(L, S)}."
            )
        masks.append(attn_mask)
    if key_padding_mask is not None:
        if key_padding_mask.shape != (N, S):
            raise RuntimeError(
                f"key_padding_mask of shape {tuple(key_padding_mask.shape)} should be {(N, S)}"
            )
        masks.append(key_padding_mask.reshape(N, 1, 1, S))
    return masks


def attend_heads(
    qkv: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    alpha: float | torch.Tensor,
    masks: list[torch.Tensor],
    causal: bool,
    dropout_p: float,
    block_size: int | None,
    weights_wanted: tuple[bool, bool],
    dtype: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """Entmax attention of the heads: in full with the weights, else in blocks.

    Parameters
    ----------
    qkv : (q, k, v), torch.Tensor of shape (N, H, L, D), (N, H, S, D), (N, H, S, D)
        Queries, keys and values per head.
    alpha : float or torch.Tensor of shape (H,)
        The entmax alpha, shared or per head.
    masks : list of torch.Tensor
        Masks broadcastable to the (N, H, L, S) scores.
    causal : bool
        Apply the causal mask (then ``masks`` is empty).
    dropout_p : float
        Dropout on the weights (0 in evaluation).
    block_size : int or None
        Queries per block when the weights are not asked for.
    weights_wanted : (need_weights, average_attn_weights)
        Compute the weights in full and return them; average them over the heads.
    dtype : torch.dtype
        The dtype of the returned weights.

    Returns
    -------
    out : torch.Tensor of shape (N, H, L, D)
        The attention output per head.
    weights : torch.Tensor or None
        With ``need_weights``: (N, L, S), or (N, H, L, S) when not averaged.
    support : torch.Tensor
        Per query and head, the number of keys with nonzero weight.
    """
    q, k, v = qkv
    need_weights, average_attn_weights = weights_wanted
    if not need_weights:
        out, support = prepared_attention(
            q, k, v, alpha, tuple(masks), dropout_p, causal, None, block_size, True
        )
        return out, None, support
    P = prepared_weights(q, k, v, alpha, tuple(masks), causal, None)
    support = (P != 0).sum(-1, keepdim=True)
    if dropout_p > 0:
        P = F.dropout(P, p=dropout_p)
    out = P @ v.to(P.dtype)
    weights = P.mean(dim=1) if average_attn_weights else P
    return out, weights.to(dtype), support
