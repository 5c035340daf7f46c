"""``EntmaxMultiheadAttention``: a drop-in for ``nn.MultiheadAttention`` with entmax heads.

At alpha = 1 it must give what ``nn.MultiheadAttention`` gives with the same weights, for
every mask and layout argument; at other alphas, what a naive re-implementation (the
projections, the core mapping per head, the output projection) gives.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from sk_entmax.entmax import entmax, entmax_bisect
from sk_entmax.nn import EntmaxMultiheadAttention

F64 = torch.float64
E, H = 8, 2


def _pair(seed=0, **kwargs):
    """A torch MHA and ours with the same weights (float64)."""
    torch.manual_seed(seed)
    alpha = kwargs.pop("alpha", 1.0)
    ref = nn.MultiheadAttention(E, H, dtype=F64, **kwargs)
    ours = EntmaxMultiheadAttention(E, H, dtype=F64, alpha=alpha, **kwargs)
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def _inputs(batch_first, N=3, L=4, S=5, kdim=E, vdim=E, seed=1):
    gen = torch.Generator().manual_seed(seed)
    shape = (lambda n, s, d: (n, s, d)) if batch_first else (lambda n, s, d: (s, n, d))
    q = torch.randn(shape(N, L, E), generator=gen, dtype=F64)
    k = torch.randn(shape(N, S, kdim), generator=gen, dtype=F64)
    v = torch.randn(shape(N, S, vdim), generator=gen, dtype=F64)
    return q, k, v


def _masks(N=3, L=4, S=5, seed=2):
    gen = torch.Generator().manual_seed(seed)
    bool_attn = torch.rand(L, S, generator=gen) > 0.6
    bool_attn[:, 0] = False  # True forbids; keep key 0 open for every query
    padding = torch.zeros(N, S, dtype=torch.bool)
    padding[0, -2:] = True
    return {
        "attn_bool": {"attn_mask": bool_attn},
        "attn_float": {"attn_mask": torch.randn(L, S, generator=gen, dtype=F64)},
        "attn_3d": {"attn_mask": torch.randn(N * H, L, S, generator=gen, dtype=F64)},
        "padding_bool": {"key_padding_mask": padding},
        "padding_float": {"key_padding_mask": torch.where(padding, -1e9, 0.0).to(F64)},
        "both": {"attn_mask": bool_attn, "key_padding_mask": padding},
    }


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("mask", [None, *_masks()])
@pytest.mark.parametrize("need_weights", [True, False])
def test_softmax_heads_are_torch_multihead_attention(batch_first, mask, need_weights):
    ref, ours = _pair(batch_first=batch_first)
    q, k, v = _inputs(batch_first)
    kwargs = {} if mask is None else _masks()[mask]
    expected, expected_w = ref(q, k, v, need_weights=need_weights, **kwargs)
    out, w = ours(q, k, v, need_weights=need_weights, **kwargs)
    assert torch.allclose(out, expected, atol=1e-12)
    if need_weights:
        assert torch.allclose(w, expected_w, atol=1e-12)
    else:
        assert w is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"add_bias_kv": True},
        {"add_zero_attn": True},
        {"add_bias_kv": True, "add_zero_attn": True},
        {"kdim": 3, "vdim": 6},
        {"bias": False},
    ],
    ids=repr,
)
@pytest.mark.parametrize("mask", [None, "both"])
def test_softmax_heads_match_with_every_constructor_option(kwargs, mask):
    ref, ours = _pair(batch_first=True, **kwargs)
    q, k, v = _inputs(True, kdim=kwargs.get("kdim", E), vdim=kwargs.get("vdim", E))
    margs = {} if mask is None else _masks()[mask]
    for need_weights in (True, False):
        expected, expected_w = ref(q, k, v, need_weights=need_weights, **margs)
        out, w = ours(q, k, v, need_weights=need_weights, **margs)
        assert torch.allclose(out, expected, atol=1e-12)
        if need_weights:
            assert torch.allclose(w, expected_w, atol=1e-12)


def test_softmax_heads_unbatched_and_per_head_weights():
    ref, ours = _pair()
    q, k, v = (x[:, 0] for x in _inputs(False))
    for average in (True, False):
        expected, expected_w = ref(q, k, v, average_attn_weights=average)
        out, w = ours(q, k, v, average_attn_weights=average)
        assert out.shape == (4, E) and torch.allclose(out, expected, atol=1e-12)
        assert w.shape == expected_w.shape and torch.allclose(w, expected_w, atol=1e-12)


def naive_mha(module, q, k, v, alpha, key_padding_mask=None, attn_mask=None):
    """Batch-first reference: projections, scores per head, the core mapping, out_proj."""
    N, L, _ = q.shape
    S = k.shape[1]
    wq, wk, wv = module.in_proj_weight.split(E)
    bq, bk, bv = module.in_proj_bias.split(E)
    d = E // H

    def heads(x, n):
        return x.reshape(N, n, H, d).transpose(1, 2)

    qh, kh, vh = heads(q @ wq.T + bq, L), heads(k @ wk.T + bk, S), heads(v @ wv.T + bv, S)
    scores = qh @ kh.transpose(-2, -1) / math.sqrt(d)
    if attn_mask is not None:
        scores = scores.masked_fill(attn_mask, float("-inf"))
    if key_padding_mask is not None:
        scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
    if isinstance(alpha, torch.Tensor):
        P = entmax_bisect(scores, alpha.reshape(1, H, 1, 1).expand(N, H, L, 1))
    else:
        P = entmax(scores, alpha)
    out = (P @ vh).transpose(1, 2).reshape(N, L, E)
    return module.out_proj(out), P


@pytest.mark.parametrize("alpha", [1.5, 2.0, 1.3, (1.2, 1.8)])
@pytest.mark.parametrize("mask", [None, "both"])
def test_entmax_heads_match_the_naive_reference(alpha, mask):
    _, ours = _pair(batch_first=True, alpha=alpha)
    q, k, v = _inputs(True)
    margs = {} if mask is None else _masks()[mask]
    a = torch.tensor(alpha, dtype=F64) if isinstance(alpha, tuple) else alpha
    expected, P = naive_mha(ours, q, k, v, a, **margs)
    out, w = ours(q, k, v, average_attn_weights=False, **margs)
    assert torch.allclose(out, expected, atol=1e-12)
    assert torch.allclose(w, P, atol=1e-12)
    out_bounded, none = ours(q, k, v, need_weights=False, **margs)
    assert none is None and torch.allclose(out_bounded, expected, atol=1e-12)
    if alpha in (1.5, 2.0):
        assert (w == 0).any()  # exact zeros
    expected_support = (P != 0).sum(-1).double().mean(dim=(0, 2))
    assert ours.last_support_size.shape == (H,)
    assert torch.allclose(ours.last_support_size.double(), expected_support)
    ours(q, k, v, need_weights=True, **margs)
    assert torch.allclose(ours.last_support_size.double(), expected_support)


def test_learned_alpha_per_head_is_moved_by_an_optimizer_and_stays_in_range():
    torch.manual_seed(3)
    mha = EntmaxMultiheadAttention(E, H, batch_first=True, learn_alpha=True, alpha=(1.3, 1.7))
    assert torch.allclose(mha.alpha, torch.tensor([1.3, 1.7]))
    start = mha.alpha.detach().clone()
    opt = torch.optim.SGD([mha.alpha_raw], lr=5.0)
    x = torch.randn(4, 6, E)
    target = torch.randn(4, 6, E)
    for _ in range(5):
        opt.zero_grad()
        out, _ = mha(x, x, x, need_weights=False)
        ((out - target) ** 2).mean().backward()
        assert mha.alpha_raw.grad is not None and (mha.alpha_raw.grad != 0).all()
        opt.step()
        assert ((1 < mha.alpha) & (mha.alpha <= 2)).all()
    moved = (mha.alpha.detach() - start).abs()
    assert (moved > 1e-3).all()  # each head's alpha moved
    # a huge step saturates, never leaves (1, 2]
    with torch.no_grad():
        mha.alpha_raw.copy_(torch.tensor([-1e4, 1e4]))
    assert ((1 <= mha.alpha) & (mha.alpha <= 2)).all()


def test_learned_alpha_gradcheck():
    torch.manual_seed(4)
    mha = EntmaxMultiheadAttention(4, 2, batch_first=True, learn_alpha=True, dtype=F64)
    x = torch.randn(2, 3, 4, dtype=F64, requires_grad=True)
    raw = torch.tensor([0.2, -0.4], dtype=F64, requires_grad=True)

    def fn(x, raw):
        kwargs = {"need_weights": False}
        return torch.func.functional_call(mha, {"alpha_raw": raw}, (x, x, x), kwargs)[0]

    assert torch.autograd.gradcheck(fn, (x, raw), atol=1e-6)


def test_alpha_arguments():
    assert EntmaxMultiheadAttention(E, H).alpha == 1.5
    fixed = EntmaxMultiheadAttention(E, H, alpha=[1.2, 2.0])
    assert torch.equal(fixed.alpha, torch.tensor([1.2, 2.0]))
    assert "alpha=[1.2, 2.0]" in repr(fixed)
    assert "alpha=learned" in repr(EntmaxMultiheadAttention(E, H, learn_alpha=True))
    with pytest.raises(
        ValueError,
        match=r"of EntmaxMultiheadAttention must be a real number > 1 and < 2 \(the start",
    ):
        EntmaxMultiheadAttention(E, H, alpha=2.0, learn_alpha=True)
    with pytest.raises(ValueError, match="one per head"):
        EntmaxMultiheadAttention(E, H, alpha=[1.2, 1.3, 1.4])
    with pytest.raises(TypeError, match="'alpha' parameter of EntmaxMultiheadAttention must be"):
        EntmaxMultiheadAttention(E, H, alpha="1.5")


def test_state_dict_of_torch_mha_loads():
    ref = nn.MultiheadAttention(E, H)
    EntmaxMultiheadAttention(E, H).load_state_dict(ref.state_dict())  # strict
    learned = EntmaxMultiheadAttention(E, H, learn_alpha=True)
    missing, unexpected = learned.load_state_dict(ref.state_dict(), strict=False)
    assert missing == ["alpha_raw"] and unexpected == []


def test_is_causal_is_a_hint_about_attn_mask():
    _, ours = _pair(batch_first=True, alpha=1.5)
    q, k, v = _inputs(True, L=5, S=5)
    causal = nn.Transformer.generate_square_subsequent_mask(5, dtype=F64)
    expected, _ = ours(q, k, v, attn_mask=causal)
    for need_weights in (True, False):
        out, _ = ours(q, k, v, attn_mask=causal, is_causal=True, need_weights=need_weights)
        assert torch.allclose(out, expected, atol=1e-12)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        ours(q, k, v, is_causal=True)


def test_fully_masked_query_gives_zeros_not_nan():
    _, ours = _pair(batch_first=True, alpha=1.5)
    q, k, v = _inputs(True)
    mask = torch.zeros(4, 5, dtype=torch.bool)
    mask[1] = True  # query 1 may attend to nothing
    for need_weights in (True, False):
        out, _ = ours(q, k, v, attn_mask=mask, need_weights=need_weights)
        assert torch.isfinite(out).all()
        assert torch.allclose(out[:, 1], ours.out_proj.bias.expand(3, E))  # zero attention


def test_dropout_only_in_training():
    torch.manual_seed(5)
    mha = EntmaxMultiheadAttention(E, H, dropout=0.5, batch_first=True)
    x = torch.randn(2, 6, E)
    mha.eval()
    # no dropout in evaluation: the full-weights path and the blocks agree (to rounding:
    # the first maps with the CPU kernel, the blocks with the traceable form)
    torch.testing.assert_close(
        mha(x, x, x)[0], mha(x, x, x, need_weights=False)[0], rtol=1e-6, atol=1e-6
    )
    mha.train()
    a = mha(x, x, x, need_weights=False)[0]
    b = mha(x, x, x, need_weights=False)[0]
    assert not torch.equal(a, b)
    _, w = mha(x, x, x, average_attn_weights=False)
    assert (w == 0).float().mean() > 0.2  # dropped weights


def test_as_the_self_attention_of_a_transformer_encoder_layer():
    """Swapped into nn.TransformerEncoderLayer, it runs in train and in eval mode."""
    torch.manual_seed(6)
    layer = nn.TransformerEncoderLayer(E, H, dim_feedforward=16, dropout=0.0, batch_first=True)
    softmax_attn = layer.self_attn
    entmax_attn = EntmaxMultiheadAttention(E, H, batch_first=True, alpha=2.0)
    entmax_attn.load_state_dict(softmax_attn.state_dict())
    x = torch.randn(2, 5, E)
    calls = []
    forward = entmax_attn.forward  # a spy that is not a hook (a hook alone would do)
    entmax_attn.forward = lambda *args, **kwargs: (calls.append(1), forward(*args, **kwargs))[1]
    layer.self_attn = entmax_attn
    layer.eval()
    with torch.no_grad():
        out = layer(x)
    assert calls  # our forward ran: the fused softmax kernel was not taken
    expected = layer.norm2(
        (h := layer.norm1(x + entmax_attn(x, x, x, need_weights=False)[0]))
        + layer.linear2(layer.activation(layer.linear1(h)))
    )
    assert torch.allclose(out, expected, atol=1e-6)
    layer.self_attn = softmax_attn
    with torch.no_grad():
        assert not torch.allclose(layer(x), out, atol=1e-3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    torch.manual_seed(7)
    mha = EntmaxMultiheadAttention(E, H, batch_first=True, learn_alpha=True)
    x = torch.randn(2, 5, E)
    out = mha(x, x, x, need_weights=False)[0]
    out_c = mha.cuda()(x.cuda(), x.cuda(), x.cuda(), need_weights=False)[0]
    assert torch.allclose(out_c.cpu(), out, atol=1e-5)
