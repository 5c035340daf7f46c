"""Multi-head attention with alpha-entmax weights, a drop-in for ``nn.MultiheadAttention``.

Correia, Niculae & Martins (2019), "Adaptively Sparse Transformers", replace the softmax of
each attention head by alpha-entmax and learn one alpha per head; a head then attends to a
handful of keys (alpha near 2) or to many (alpha near 1), as training finds useful. This
module does that in plain PyTorch on any device, in the memory of
:func:`~sk_entmax.entmax.entmax_attention` (queries in blocks, no ``(L, S)`` matrix kept for
the backward) unless the weights are asked for.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from sk_entmax.entmax import AdaptiveEntmax
from sk_entmax.entmax.tracing import called_as, exporting
from sk_entmax.nn.attention_heads import (
    alpha_values,
    attend_heads,
    batch_first_inputs,
    score_masks,
    split_heads,
    to_sdpa_mask,
)

__all__ = ["EntmaxMultiheadAttention"]

# the range of a learned alpha, (1, _LEARNED_ALPHA_MAX), as AdaptiveEntmax parametrises it
_LEARNED_ALPHA_MAX = 2.0


def _keep_fused_paths_off(module: nn.Module, args: tuple) -> None:
    """A no-op forward pre-hook.

    ``nn.TransformerEncoderLayer`` in ``eval()`` mode takes a fused kernel that reads the
    ``self_attn`` projection weights and computes softmax attention itself, without calling
    ``self_attn.forward``, unless a hook is attached to one of its modules. This hook keeps
    a layer whose ``self_attn`` is this module on the path that calls it.
    """
    return None


class EntmaxMultiheadAttention(nn.MultiheadAttention):
    """``nn.MultiheadAttention`` with alpha-entmax instead of softmax, alpha per head.

    The constructor, the parameters (``in_proj_weight``, ``out_proj``, ``bias_k``, ...,
    so a ``state_dict`` of ``nn.MultiheadAttention`` loads, with ``strict=False`` when
    alpha is learned), the forward arguments and the mask semantics are those of
    :class:`torch.nn.MultiheadAttention`. Each head's weights are
    ``entmax_alpha(q k^T / sqrt(d) + mask)``: exact sparsemax at ``alpha = 2``, exact
    1.5-entmax at 1.5, softmax at 1, root finding otherwise.

    Parameters
    ----------
    embed_dim, num_heads, dropout, bias, add_bias_kv, add_zero_attn, kdim, vdim, \
batch_first, device, dtype
        As in :class:`torch.nn.MultiheadAttention`.
    alpha : float or sequence of float, default=1.5
        The entmax alpha, shared or one per head (``num_heads`` values). With
        ``learn_alpha`` it is the starting value, strictly inside ``(1, 2)`` (it is not
        clipped into the range: a value outside raises).
    learn_alpha : bool, default=False
        Learn one alpha per head (Correia et al., 2019), as
        ``alpha = 1 + sigmoid(alpha_raw)`` (the map of
        :class:`~sk_entmax.entmax.AdaptiveEntmax` with ``alpha_max=2``): in ``(1, 2]`` by
        construction (2 only where the sigmoid rounds to 1), whatever the optimizer does.
    block_size : int or None, default=None
        Queries per block (see :func:`~sk_entmax.entmax.entmax_attention`).

    Attributes
    ----------
    alpha_raw : torch.nn.Parameter of shape (num_heads,)
        Only with ``learn_alpha``: the unconstrained parameter behind :attr:`alpha`.
    last_support_size : torch.Tensor of shape (num_heads,) or None
        After each forward: per head, the mean number of keys a query attends to (its
        nonzero weights), over the batch and the queries; ``None`` before the first.

    Notes
    -----
    With ``need_weights=True`` the weights are computed in full, ``(N, L, S)`` averaged over
    the heads or ``(N, num_heads, L, S)``, with their exact zeros (as in
    ``nn.MultiheadAttention``, after dropout); with ``need_weights=False`` (what
    ``nn.TransformerEncoderLayer`` asks) the memory stays bounded. A query whose keys are
    all masked gets a zero output, where softmax attention gives NaN. As the ``self_attn``
    of an ``nn.TransformerEncoderLayer`` this module keeps the layer off its fused
    ``eval()`` kernel, which would compute softmax; with ``nn.TransformerEncoder`` pass
    ``enable_nested_tensor=False``.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.nn import EntmaxMultiheadAttention
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> mha = EntmaxMultiheadAttention(16, 4, batch_first=True, learn_alpha=True)
    >>> x = torch.randn(2, 5, 16)
    >>> out, weights = mha(x, x, x)
    >>> out.shape, weights.shape
    (torch.Size([2, 5, 16]), torch.Size([2, 5, 5]))
    >>> mha.alpha
    tensor([1.5000, 1.5000, 1.5000, 1.5000], grad_fn=<AddBackward0>)
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        *,
        alpha: float | Sequence[float] | torch.Tensor = 1.5,
        learn_alpha: bool = False,
        block_size: int | None = None,
    ) -> None:
        super().__init__(
            embed_dim,
            num_heads,
            dropout=dropout,
            bias=bias,
            add_bias_kv=add_bias_kv,
            add_zero_attn=add_zero_attn,
            kdim=kdim,
            vdim=vdim,
            batch_first=batch_first,
            device=device,
            dtype=dtype,
        )
        self.learn_alpha = bool(learn_alpha)
        self.block_size = block_size
        self.last_support_size: torch.Tensor | None = None
        values = alpha_values(alpha, num_heads)
        if self.learn_alpha:
            with called_as("EntmaxMultiheadAttention"):
                raw = [AdaptiveEntmax.raw_of_alpha(a, _LEARNED_ALPHA_MAX) for a in values]
            raw = torch.tensor(raw, dtype=dtype)
            self.alpha_raw = nn.Parameter(raw.to(device=device, dtype=dtype or torch.float32))
            self._fixed_alpha: float | None = None
        elif len(set(values)) == 1:
            self._fixed_alpha = values[0]
        else:
            self._fixed_alpha = None
            self.register_buffer(
                "alpha_per_head",
                torch.tensor(values, device=device, dtype=dtype or torch.float32),
                persistent=False,  # a constructor argument: state_dicts stay torch's
            )
        self.register_forward_pre_hook(_keep_fused_paths_off)

    @property
    def alpha(self) -> float | torch.Tensor:
        """The alpha in use: a number, or one value per head (differentiable if learned)."""
        if self.learn_alpha:
            return AdaptiveEntmax.alpha_of_raw(self.alpha_raw, _LEARNED_ALPHA_MAX)
        if self._fixed_alpha is not None:
            return self._fixed_alpha
        return self.alpha_per_head

    def extra_repr(self) -> str:
        alpha = "learned" if self.learn_alpha else self.alpha
        if isinstance(alpha, torch.Tensor):
            alpha = [round(a, 4) for a in alpha.tolist()]
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
            f"batch_first={self.batch_first}, alpha={alpha}"
        )

    # ------------------------------------------------------------------ forward

    def _project(self, query, key, value):
        E = self.embed_dim
        if self._qkv_same_embed_dim:
            w_q, w_k, w_v = self.in_proj_weight.split(E)
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        if self.in_proj_bias is None:
            b_q = b_k = b_v = None
        else:
            b_q, b_k, b_v = self.in_proj_bias.split(E)
        return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        need_weights: bool = True,
        attn_mask: torch.Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attention of ``query`` over ``key``/``value``, as ``nn.MultiheadAttention``.

        Parameters
        ----------
        query : torch.Tensor of shape (L, N, E), (N, L, E) if batch_first, or (L, E)
            Queries.
        key : torch.Tensor of shape (S, N, kdim), (N, S, kdim) if batch_first, or (S, kdim)
            Keys.
        value : torch.Tensor of shape (S, N, vdim), (N, S, vdim) if batch_first, or (S, vdim)
            Values.
        key_padding_mask : torch.Tensor of shape (N, S) or (S,), optional
            Keys to ignore: boolean True ignores; float is added to the scores.
        need_weights : bool, default=True
            Also return the attention weights (computed in full).
        attn_mask : torch.Tensor of shape (L, S) or (N * num_heads, L, S), optional
            Boolean True forbids attending; float is added to the scores.
        average_attn_weights : bool, default=True
            Return the weights averaged over the heads, else per head.
        is_causal : bool, default=False
            A hint that ``attn_mask`` is the causal mask, as in ``nn.MultiheadAttention``
            (``attn_mask`` is required).

        Returns
        -------
        attn_output : torch.Tensor
            Shaped like ``query`` with ``embed_dim`` features.
        attn_weights : torch.Tensor or None
            With ``need_weights``: (N, L, S), or (N, num_heads, L, S) when not averaged
            ((L, S) or (num_heads, L, S) for unbatched input), with exact zeros.
        """
        if is_causal and attn_mask is None:
            raise RuntimeError(
                "Need attn_mask if specifying the is_causal hint (as in "
                "nn.MultiheadAttention); e.g. nn.Transformer.generate_square_subsequent_mask"
            )
        batched = query.dim() == 3
        query, key, value, key_padding_mask = batch_first_inputs(
            query, key, value, key_padding_mask, batched, self.batch_first
        )
        N, L, _ = query.shape
        H = self.num_heads
        q, k, v = self._project(query, key, value)
        dtype = q.dtype
        sdpa_masks = (
            to_sdpa_mask(attn_mask, dtype, "attn_mask"),
            to_sdpa_mask(key_padding_mask, dtype, "key_padding_mask"),
        )
        q, k, v, sdpa_masks, S = split_heads(
            q, k, v, sdpa_masks, H, (self.bias_k, self.bias_v, self.add_zero_attn)
        )
        masks = score_masks(*sdpa_masks, (N, H, L, S))
        causal = False
        if is_causal and sdpa_masks[1] is None and not need_weights:
            masks, causal = [], True  # the hint, taken as nn.MultiheadAttention takes it
        out, weights, support = attend_heads(
            (q, k, v),
            self.alpha,
            masks,
            causal,
            self.dropout if self.training else 0.0,
            self.block_size,
            (need_weights, average_attn_weights),
            dtype,
        )
        if not exporting():  # an exported program holds no such state
            self.last_support_size = support.to(torch.float32).mean(dim=(0, 2)).reshape(H).detach()
        out = out.to(dtype).transpose(1, 2).reshape(N, L, self.embed_dim)
        out = self.out_proj(out)
        if not batched:
            out = out.squeeze(0)
            weights = None if weights is None else weights.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        return out, weights
