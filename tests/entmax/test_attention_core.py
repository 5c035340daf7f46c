"""``entmax_attention``: against a naive reference, SDPA's mask semantics, gradcheck, memory.

The naive reference is the definition: the scores, the core mapping along the keys, then
``@ value``, all through ordinary autograd. At alpha = 1 the function must agree with
``torch.nn.functional.scaled_dot_product_attention`` itself, masks and causality included.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from sk_entmax.entmax import entmax, entmax_attention, entmax_bisect
from sk_entmax.entmax._attention_blocks import _dropout_keep

F64 = torch.float64
NEG_INF = float("-inf")


def _qkv(B=2, H=3, L=5, S=7, E=4, Ev=3, dtype=F64, seed=0, grad=False):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, L, E, generator=gen, dtype=dtype)
    k = torch.randn(B, H, S, E, generator=gen, dtype=dtype)
    v = torch.randn(B, H, S, Ev, generator=gen, dtype=dtype)
    return tuple(x.requires_grad_(grad) for x in (q, k, v))


def naive_attention(q, k, v, alpha=1.5, attn_mask=None, is_causal=False, scale=None, keep=None):
    """The definition, through ordinary autograd: scores, the core mapping, then @ value."""
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1 / math.sqrt(E) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale
    if is_causal:
        scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), NEG_INF)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, NEG_INF)
        else:
            scores = scores + attn_mask
    if isinstance(alpha, torch.Tensor):
        a = alpha.reshape(-1, 1, 1).expand(*scores.shape[:-1], 1)
        P = entmax_bisect(scores, a)
    else:
        P = entmax(scores, alpha)
    if keep is not None:
        P = P * keep
    return P @ v, P


ALPHAS = {
    "softmax": 1.0,
    "entmax15": 1.5,
    "sparsemax": 2.0,
    "root_1.33": 1.33,
    "root_1.05": 1.05,
    "root_2.5": 2.5,
    "root_0.8": 0.8,
    "per_head": torch.tensor([1.2, 1.6, 2.0], dtype=F64),
    "per_head_near_1": torch.tensor([1.0, 1.01, 1.5], dtype=F64),
}


@pytest.mark.parametrize("name", sorted(ALPHAS))
@pytest.mark.parametrize("block_size", [1, 3, None])
def test_matches_the_naive_reference(name, block_size):
    alpha = ALPHAS[name]
    q, k, v = _qkv(seed=1, grad=True)
    out = entmax_attention(q, k, v, alpha=alpha, block_size=block_size)
    ref, _ = naive_attention(q, k, v, alpha)
    assert torch.allclose(out, ref, atol=1e-12)
    W = torch.randn_like(out)
    grads = torch.autograd.grad((out * W).sum(), (q, k, v))
    ref_grads = torch.autograd.grad((ref * W).sum(), (q, k, v))
    for g, r in zip(grads, ref_grads, strict=True):
        assert torch.allclose(g, r, atol=1e-9)


def test_alpha_gradient_matches_the_naive_reference():
    q, k, v = _qkv(seed=2)
    alpha = torch.tensor([1.2, 1.6, 1.9], dtype=F64, requires_grad=True)
    out = entmax_attention(q, k, v, alpha=alpha, block_size=2)
    ref, _ = naive_attention(q, k, v, alpha)
    W = torch.randn_like(out)
    (g,) = torch.autograd.grad((out * W).sum(), alpha)
    (r,) = torch.autograd.grad((ref * W).sum(), alpha)
    assert g.shape == (3,)
    assert torch.allclose(g, r, atol=1e-9)


def test_alpha_shapes_broadcast_to_one_value_per_head():
    q, k, v = _qkv(seed=3)
    per_head = torch.tensor([1.2, 1.6, 2.0], dtype=F64)
    expected = entmax_attention(q, k, v, alpha=per_head)
    for alpha in (per_head.reshape(3, 1, 1), per_head.reshape(1, 3), per_head.reshape(1, 3, 1, 1)):
        assert torch.equal(entmax_attention(q, k, v, alpha=alpha), expected)
    shared = entmax_attention(q, k, v, alpha=torch.tensor(1.6, dtype=F64))
    assert torch.allclose(shared, entmax_attention(q, k, v, alpha=1.6), atol=1e-12)
    with pytest.raises(ValueError, match="one value per head"):
        entmax_attention(q, k, v, alpha=torch.ones(4, dtype=F64))


def test_exact_mappings_at_2_and_1_5_have_exact_zeros():
    q, k, v = _qkv(L=6, S=9, seed=4)
    q = q * 4  # peaked scores: sparse weights
    for alpha in (2.0, 1.5):
        _, P = naive_attention(q, k, v, alpha)
        assert (P == 0).any()
        out, support = entmax_attention(q, k, v, alpha=alpha, return_support_size=True)
        assert torch.equal(support, (P > 0).sum(-1, keepdim=True))
        assert torch.allclose(out, P @ v, atol=1e-12)


# ------------------------------------------------------------------ masks and causality


def _masks(B, H, L, S, seed=5):
    gen = torch.Generator().manual_seed(seed)
    bool_ls = torch.rand(L, S, generator=gen) > 0.3
    bool_ls[:, 0] = True  # no fully masked row here
    padding = torch.ones(B, 1, 1, S, dtype=torch.bool)
    padding[0, ..., -2:] = False
    float_mask = torch.randn(B, H, L, S, generator=gen, dtype=F64)
    float_mask[..., 1] = NEG_INF
    return {"bool_ls": bool_ls, "padding": padding, "float": float_mask}


@pytest.mark.parametrize("mask_name", ["bool_ls", "padding", "float"])
@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0, 1.3])
def test_masks_match_the_naive_reference(mask_name, alpha):
    q, k, v = _qkv(seed=6, grad=True)
    mask = _masks(2, 3, 5, 7)[mask_name]
    out = entmax_attention(q, k, v, alpha=alpha, attn_mask=mask, block_size=2)
    ref, _ = naive_attention(q, k, v, alpha, attn_mask=mask)
    assert torch.allclose(out, ref, atol=1e-12)
    W = torch.randn_like(out)
    for g, r in zip(
        torch.autograd.grad((out * W).sum(), (q, k, v)),
        torch.autograd.grad((ref * W).sum(), (q, k, v)),
        strict=True,
    ):
        assert torch.allclose(g, r, atol=1e-9)


@pytest.mark.parametrize("mask_name", [None, "bool_ls", "padding", "float", "causal"])
@pytest.mark.parametrize(("L", "S"), [(5, 7), (7, 5), (6, 6)])
def test_softmax_is_scaled_dot_product_attention(mask_name, L, S):
    """At alpha = 1 the mask semantics are checked against SDPA itself."""
    q, k, v = _qkv(L=L, S=S, seed=7)
    kwargs = {}
    if mask_name == "causal":
        kwargs["is_causal"] = True
    elif mask_name is not None:
        kwargs["attn_mask"] = _masks(2, 3, L, S)[mask_name]
    expected = F.scaled_dot_product_attention(q, k, v, **kwargs)
    assert torch.allclose(entmax_attention(q, k, v, alpha=1.0, **kwargs), expected, atol=1e-12)
    assert torch.allclose(
        entmax_attention(q, k, v, alpha=1.0, scale=0.3, block_size=2, **kwargs),
        F.scaled_dot_product_attention(q, k, v, scale=0.3, **kwargs),
        atol=1e-12,
    )


@pytest.mark.parametrize("alpha", [1.5, 2.0, 1.3, torch.tensor([1.2, 1.6, 2.0], dtype=F64)])
@pytest.mark.parametrize(("L", "S"), [(5, 7), (7, 5)])
def test_causal_matches_the_naive_reference(alpha, L, S):
    q, k, v = _qkv(L=L, S=S, seed=8, grad=True)
    out = entmax_attention(q, k, v, alpha=alpha, is_causal=True, block_size=3)
    ref, P = naive_attention(q, k, v, alpha, is_causal=True)
    assert torch.allclose(out, ref, atol=1e-12)
    assert torch.equal(P.triu(1), torch.zeros_like(P))  # no weight on a future key
    W = torch.randn_like(out)
    for g, r in zip(
        torch.autograd.grad((out * W).sum(), (q, k, v)),
        torch.autograd.grad((ref * W).sum(), (q, k, v)),
        strict=True,
    ):
        assert torch.allclose(g, r, atol=1e-9)


def test_mask_and_is_causal_together_are_refused():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="cannot both be given"):
        entmax_attention(q, k, v, attn_mask=torch.ones(5, 7, dtype=torch.bool), is_causal=True)


@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0, 1.3, torch.tensor([1.2, 1.6, 2.0], dtype=F64)])
def test_a_fully_masked_row_gives_zeros_and_no_nan(alpha):
    q, k, v = _qkv(seed=9, grad=True)
    if isinstance(alpha, torch.Tensor):
        alpha = alpha.clone().requires_grad_()
    mask = torch.ones(5, 7, dtype=torch.bool)
    mask[2] = False  # query 2 attends to nothing
    float_mask = torch.zeros(5, 7, dtype=F64)
    float_mask[4] = NEG_INF  # query 4 neither
    for m in (mask, float_mask):
        out, support = entmax_attention(
            q, k, v, alpha=alpha, attn_mask=m, block_size=2, return_support_size=True
        )
        row = 2 if m.dtype == torch.bool else 4
        assert torch.equal(out[..., row, :], torch.zeros_like(out[..., row, :]))
        others = [i for i in range(5) if i != row]
        assert (support[..., row, 0] == 0).all() and (support[..., others, 0] > 0).all()
        inputs = (q, k, v, alpha) if isinstance(alpha, torch.Tensor) else (q, k, v)
        grads = torch.autograd.grad(out.square().sum(), inputs)
        assert all(torch.isfinite(g).all() for g in grads)
        assert torch.equal(grads[0][..., row, :], torch.zeros_like(grads[0][..., row, :]))


# ------------------------------------------------------------------------- gradcheck


@pytest.mark.parametrize(
    ("alpha", "kwargs"),
    [
        (1.5, {}),
        (2.0, {"is_causal": True}),
        (1.0, {}),
        (1.3, {"attn_mask": "bool"}),
        ("per_head", {}),
        ("per_head", {"is_causal": True}),
        ("per_head", {"attn_mask": "float"}),
    ],
)
def test_gradcheck_float64(alpha, kwargs):
    gen = torch.Generator().manual_seed(10)
    B, H, L, S, E = 1, 2, 4, 5, 3
    q = torch.randn(B, H, L, E, generator=gen, dtype=F64, requires_grad=True)
    k = torch.randn(B, H, S, E, generator=gen, dtype=F64, requires_grad=True)
    v = torch.randn(B, H, S, 2, generator=gen, dtype=F64, requires_grad=True)
    kwargs = dict(kwargs)
    if kwargs.get("attn_mask") == "bool":
        mask = torch.rand(L, S, generator=gen) > 0.3
        mask[:, 0] = True
        kwargs["attn_mask"] = mask
    elif kwargs.get("attn_mask") == "float":
        kwargs["attn_mask"] = torch.randn(L, S, generator=gen, dtype=F64)
    inputs = [q, k, v]
    if alpha == "per_head":
        inputs.append(torch.tensor([1.3, 1.8], dtype=F64, requires_grad=True))

        def fn(q, k, v, a):
            return entmax_attention(q, k, v, alpha=a, block_size=3, **kwargs)
    else:

        def fn(q, k, v):
            return entmax_attention(q, k, v, alpha=alpha, block_size=3, **kwargs)

    assert torch.autograd.gradcheck(fn, tuple(inputs), atol=1e-6)


# ---------------------------------------------------------------------- bounded memory


class _LargestAllocation(TorchDispatchMode):
    """The largest storage any op creates while active (forward and backward alike)."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.untyped_storage().nbytes())
        return out


@pytest.mark.parametrize("alpha", [1.5, 2.0, 1.3, torch.tensor([1.4, 1.7])])
def test_no_score_matrix_is_saved_or_allocated(alpha):
    """No (L, S) matrix of one head is saved for backward, or allocated in either pass."""
    B, H, L, S, E = 1, 2, 64, 64, 4
    q, k, v = _qkv(B, H, L, S, E, E, dtype=torch.float32, seed=11, grad=True)
    if isinstance(alpha, torch.Tensor):
        alpha = alpha.clone().requires_grad_()
    padding = torch.ones(B, 1, 1, S, dtype=torch.bool)
    padding[..., -3:] = False
    one_head = L * S * 4  # bytes of one head's float32 score matrix

    def run(fn):
        saved = []

        def pack(t):
            saved.append(t.numel())
            return t

        tracker = _LargestAllocation()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), tracker:
            out = fn()
            out.square().sum().backward()
        return max(saved), tracker.largest

    saved, largest = run(
        lambda: entmax_attention(q, k, v, alpha=alpha, attn_mask=padding, block_size=8)
    )
    assert saved < L * S
    assert largest <= one_head / 4  # one block of 8 queries for both heads: a quarter
    # the check itself sees the naive reference's (H, L, S) matrices
    saved_naive, largest_naive = run(lambda: naive_attention(q, k, v, alpha, padding)[0])
    assert saved_naive >= H * L * S and largest_naive >= H * one_head


def test_default_block_size_bounds_the_block():
    q, k, v = _qkv(1, 1, 64, 64, 4, 4, dtype=torch.float32, grad=True)
    from sk_entmax.entmax.attention import prepared_attention

    tracker = _LargestAllocation()
    with tracker:  # 16 queries per block at S = 64
        out = prepared_attention(
            q, k, v, 1.5, (), 0.0, False, None, None, False, "entmax_attention", 64 * 16
        )
        out.sum().backward()
    assert tracker.largest <= 64 * 16 * 4


# ------------------------------------------------------------------ dtypes and dropout


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("alpha", [1.5, 2.0, 1.3])
def test_half_precision_is_computed_in_float32(dtype, alpha):
    q, k, v = (x.to(dtype).requires_grad_() for x in _qkv(seed=12))
    out = entmax_attention(q, k, v, alpha=alpha)
    assert out.dtype == dtype
    q32, k32, v32 = (x.detach().float().requires_grad_() for x in (q, k, v))
    out32 = entmax_attention(q32, k32, v32, alpha=alpha)
    assert torch.equal(out, out32.to(dtype))
    out.float().sum().backward()
    out32.sum().backward()
    assert q.grad.dtype == dtype
    assert torch.equal(q.grad, q32.grad.to(dtype))


def test_dropout_matches_the_naive_reference_with_the_same_masks():
    q, k, v = _qkv(seed=13, grad=True)
    p, block = 0.3, 2
    torch.manual_seed(123)
    out = entmax_attention(q, k, v, alpha=1.5, dropout_p=p, block_size=block)
    torch.manual_seed(123)
    seed = int(torch.randint(0, 2**62, (), device="cpu"))  # the draw the function makes
    like = torch.empty(2, 3, block, 7, dtype=F64)
    keep = torch.cat(
        [
            _dropout_keep(like[..., : min(block, 5 - s), :].shape, p, seed, b, like)
            for b, s in enumerate(range(0, 5, block))
        ],
        dim=-2,
    )
    assert 0.1 < (keep == 0).double().mean() < 0.5
    ref, _ = naive_attention(q, k, v, 1.5, keep=keep)
    assert torch.allclose(out, ref, atol=1e-12)
    W = torch.randn_like(out)
    for g, r in zip(
        torch.autograd.grad((out * W).sum(), (q, k, v)),
        torch.autograd.grad((ref * W).sum(), (q, k, v)),
        strict=True,
    ):
        assert torch.allclose(g, r, atol=1e-9)
    assert torch.equal(entmax_attention(q, k, v, dropout_p=0.0), entmax_attention(q, k, v))


# ------------------------------------------------------------------- shapes and errors


def test_broadcast_batch_axes_and_unbatched_inputs():
    q, k, v = _qkv(B=2, H=3, seed=14, grad=True)
    k1, v1 = (x[:, :1].detach().requires_grad_() for x in (k, v))  # one key set for all heads
    out = entmax_attention(q, k1, v1, alpha=1.3)
    ref, _ = naive_attention(q, k1, v1, 1.3)
    assert torch.allclose(out, ref, atol=1e-12)
    gk, gv = torch.autograd.grad(out.sum(), (k1, v1))
    rk, rv = torch.autograd.grad(ref.sum(), (k1, v1))
    assert gk.shape == k1.shape and torch.allclose(gk, rk, atol=1e-9)
    assert torch.allclose(gv, rv, atol=1e-9)
    # 2-d inputs: one sequence, no batch axes
    out2 = entmax_attention(q[0, 0], k[0, 0], v[0, 0], alpha=2.0)
    assert torch.allclose(out2, naive_attention(q[0, 0], k[0, 0], v[0, 0], 2.0)[0], atol=1e-12)


def test_empty_sequences():
    q, k, v = _qkv(L=0, seed=15, grad=True)
    out = entmax_attention(q, k, v)
    assert out.shape == (2, 3, 0, 3)
    out.sum().backward()
    assert torch.equal(k.grad, torch.zeros_like(k))


def test_input_errors():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="feature size"):
        entmax_attention(q, k[..., :2], v)
    with pytest.raises(ValueError, match="sequence length"):
        entmax_attention(q, k, v[..., :3, :])
    with pytest.raises(TypeError, match="share a dtype"):
        entmax_attention(q, k.float(), v)
    with pytest.raises(ValueError, match="dropout_p"):
        entmax_attention(q, k, v, dropout_p=1.0)
    with pytest.raises(ValueError, match="block_size"):
        entmax_attention(q, k, v, block_size=0)
    with pytest.raises(ValueError, match="does not broadcast"):
        entmax_attention(q, k, v, attn_mask=torch.ones(4, 7, dtype=torch.bool))
    with pytest.raises(ValueError, match="requires grad"):
        entmax_attention(q, k, v, attn_mask=torch.zeros(5, 7, dtype=F64, requires_grad=True))
    with pytest.raises(TypeError, match="boolean or floating"):
        entmax_attention(q, k, v, attn_mask=torch.ones(5, 7, dtype=torch.int64))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("alpha", [1.5, 2.0, 1.3, "per_head"])
def test_cuda_matches_cpu(alpha):
    q, k, v = _qkv(seed=16, dtype=torch.float32, grad=True)
    if alpha == "per_head":
        alpha = torch.tensor([1.2, 1.6, 2.0])
    mask = _masks(2, 3, 5, 7)["padding"]
    out = entmax_attention(q, k, v, alpha=alpha, attn_mask=mask, block_size=2)
    out.square().sum().backward()
    qc, kc, vc = (x.detach().cuda().requires_grad_() for x in (q, k, v))
    ac = alpha.cuda() if isinstance(alpha, torch.Tensor) else alpha
    out_c = entmax_attention(qc, kc, vc, alpha=ac, attn_mask=mask.cuda(), block_size=2)
    out_c.square().sum().backward()
    assert torch.allclose(out_c.cpu(), out, atol=1e-5)
    for x, xc in ((q, qc), (k, kc), (v, vc)):
        assert torch.allclose(xc.grad.cpu(), x.grad, atol=1e-4)


@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0, 1.3, torch.tensor([1.2, 1.6, 2.0], dtype=F64)])
@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"attn_mask": "padding"}], ids=repr)
def test_attention_weights_are_the_naive_weights(alpha, kwargs):
    from sk_entmax.entmax import entmax_attention_weights

    q, k, v = _qkv(seed=17)
    kwargs = dict(kwargs)
    if kwargs.get("attn_mask") == "padding":
        kwargs["attn_mask"] = _masks(2, 3, 5, 7)["padding"]
    W = entmax_attention_weights(q, k, alpha=alpha, **kwargs)
    _, P = naive_attention(q, k, v, alpha, **kwargs)
    assert torch.allclose(W, P, atol=1e-12)
    assert torch.allclose(W @ v, entmax_attention(q, k, v, alpha=alpha, **kwargs), atol=1e-12)
