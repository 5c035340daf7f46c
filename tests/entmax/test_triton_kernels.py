"""The Triton kernels (:mod:`sk_entmax.entmax.kernels`) under Triton's CPU interpreter.

Without CUDA the kernels run under ``TRITON_INTERPRET=1`` on small CPU tensors (the variable
is set when this module is imported, which must come before Triton's own import: Triton's
library functions are interpreted only if it was set then); with CUDA, compiled, on the
GPU. Each result is compared with the torch path: the zero patterns bit for bit (same
dtype), the values within 1e-6 of the float64 result in float32, the gradients within 1e-5.
Rows longer than one block are tested by shrinking the block to 16 entries (arguments of the
kernels' launches, which the tests pass). Skipped, with
the reason, where Triton does not import. The interpreter is slow: every shape here is tiny.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from sk_entmax.entmax import (
    algorithms,
    entmax,
    entmax15,
    entmax_attention,
    entmax_bisect,
    entmax_loss,
    kernels,
    sparsemax,
)

ON_GPU = torch.cuda.is_available()
DEVICE = "cuda" if ON_GPU else "cpu"
if not ON_GPU and "triton" not in sys.modules:
    os.environ["TRITON_INTERPRET"] = "1"

try:
    import triton  # noqa: F401

    _TRITON_ERROR = None
except ImportError as exc:  # pragma: no cover - depends on the environment
    _TRITON_ERROR = str(exc)

needs_triton = pytest.mark.skipif(
    _TRITON_ERROR is not None,
    reason=f"triton is not installed ({_TRITON_ERROR}): the Triton kernels are not tested; "
    "`pip install triton` runs them here under TRITON_INTERPRET=1",
)


@pytest.fixture(scope="module")
def interpreted():
    """The kernels' module, interpreted on CPU (compiled with CUDA), as the one
    :mod:`sk_entmax.entmax.kernels` launches for this module's tests."""
    saved = kernels._module, kernels._reason
    kernels._module, kernels._reason = None, None
    enabled = kernels.set_enabled(True)
    try:
        module = kernels._load()
        assert module is not None, kernels.absent_reason()
        if not ON_GPU:
            import triton.language.standard as standard

            if type(standard.max).__name__ != "InterpretedFunction":
                pytest.skip(
                    "triton was imported in this process before TRITON_INTERPRET=1 was set, "
                    "so its interpreter cannot run; run this module on its own"
                )
        yield module
    finally:
        kernels._module, kernels._reason = saved
        kernels.set_enabled(enabled)


@pytest.fixture(params=["one block", "blocks of 16"])
def layout(request):
    """The block sizes :func:`~sk_entmax.entmax.kernels.entmax_triton` is given: its
    defaults, or rows read in blocks of 16 entries."""
    if request.param == "blocks of 16":
        return {"max_one_block": 16, "long_block": 16}
    return {}


def _scores(dtype=torch.float32) -> torch.Tensor:
    """Four rows of 37: a plain one, one padded with -inf, a fully masked one and one with
    ties at its top."""
    g = torch.Generator().manual_seed(0)
    X = 3 * torch.randn(4, 37, generator=g)
    X[1, 20:] = float("-inf")
    X[2] = float("-inf")
    X[3, :5] = X[3].max()
    return X.to(dtype)


_ALPHA_ROWS = torch.tensor([[1.2], [2.0], [1.5], [1.7]])


def _torch_path(X: torch.Tensor, alpha) -> torch.Tensor:
    if isinstance(alpha, torch.Tensor):
        return entmax_bisect(X, alpha.to(X.dtype))
    if alpha == 2:
        return sparsemax(X)
    if alpha == 1.5:
        return entmax15(X)
    return entmax_bisect(X, alpha)


ALPHAS = [2, 1.5, 1.3, "per row"]


def _alpha(alpha):
    return _ALPHA_ROWS.clone() if alpha == "per row" else alpha


@needs_triton
@pytest.mark.parametrize("alpha", ALPHAS)
def test_forward_backward_float32(interpreted, layout, alpha):
    alpha = _alpha(alpha)
    X = _scores()
    X_k = X.clone().to(DEVICE).requires_grad_(True)
    X_t = X.clone().requires_grad_(True)
    tensor = isinstance(alpha, torch.Tensor)
    a_k = alpha.clone().to(DEVICE).requires_grad_(True) if tensor else alpha
    a_t = alpha.clone().requires_grad_(True) if tensor else alpha
    P = kernels.entmax_triton(X_k, a_k, **layout)
    R = _torch_path(X_t, a_t)
    P_cpu = P.detach().cpu()
    assert P.dtype == X.dtype
    assert torch.equal(P_cpu == 0, R == 0)
    a64 = alpha.double() if isinstance(alpha, torch.Tensor) else alpha
    R64 = _torch_path(X.double(), a64)
    torch.testing.assert_close(P_cpu.double(), R64, rtol=0, atol=1e-6)
    w = torch.linspace(-1, 1, X.shape[-1])
    (P * w.to(DEVICE)).sum().backward()
    (R * w).sum().backward()
    torch.testing.assert_close(X_k.grad.cpu(), X_t.grad, rtol=1e-4, atol=1e-5)
    if tensor:
        torch.testing.assert_close(a_k.grad.cpu(), a_t.grad, rtol=1e-4, atol=1e-5)


@needs_triton
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("alpha", [2, 1.5, 1.3])
def test_half_precision(interpreted, dtype, alpha):
    X = _scores(dtype)
    P = kernels.entmax_triton(X.to(DEVICE), alpha).cpu()
    R = _torch_path(X, alpha)
    assert P.dtype == dtype
    assert torch.equal(P == 0, R == 0)
    torch.testing.assert_close(P.float(), R.float(), rtol=0, atol=8e-3)


@needs_triton
def test_nan_row_and_axis(interpreted):
    X = _scores()[:2].t().contiguous()  # the mapping along dim 0
    X[3, 1] = float("nan")  # (a NaN in column 1: row 1 of the mapping)
    P = kernels.entmax_triton(X.to(DEVICE), 1.5, dim=0).cpu()
    R = entmax15(X, dim=0)
    assert torch.isnan(P[:, 1]).all() and torch.isnan(R[:, 1]).all()
    assert torch.equal(P[:, 0] == 0, R[:, 0] == 0)
    torch.testing.assert_close(P[:, 0], R[:, 0], rtol=0, atol=1e-6)


@needs_triton
def test_second_derivative(interpreted):
    X = _scores()[:1].to(DEVICE).requires_grad_(True)
    (g,) = torch.autograd.grad((kernels.entmax_triton(X, 1.5) ** 2).sum(), X, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), X)
    h = h.cpu()
    X_t = X.detach().cpu().requires_grad_(True)
    (g_t,) = torch.autograd.grad((entmax15(X_t) ** 2).sum(), X_t, create_graph=True)
    (h_t,) = torch.autograd.grad(g_t.sum(), X_t)
    torch.testing.assert_close(h, h_t, rtol=1e-4, atol=1e-5)


@pytest.fixture
def seam_on_cpu(interpreted, monkeypatch):
    """The (interpreted) kernels serve CPU tensors too, so ``select`` offers them there;
    counts their calls."""
    enabled = kernels.set_enabled(True, devices=("cuda", "cpu"))
    calls = []
    real = kernels.entmax_triton

    def counting(X, alpha, dim=-1, owner=None, **keywords):
        calls.append(alpha if not isinstance(alpha, torch.Tensor) else "tensor")
        return real(X, alpha, dim, owner, **keywords)

    monkeypatch.setattr(kernels, "entmax_triton", counting)
    yield calls
    kernels.set_enabled(enabled, devices=("cuda",))


@needs_triton
def test_seam_serves_entmax_losses_and_attention(seam_on_cpu):
    """``entmax``, the losses and attention take the kernels, with the torch path's results."""
    X = _scores().to(DEVICE)
    target = torch.tensor([0, 3, 1, 5], device=DEVICE)
    X[2, 1] = 0.0  # a masked row would make an infinite loss
    g = torch.Generator().manual_seed(1)
    q = k = v = torch.randn(1, 1, 5, 3, generator=g).to(DEVICE)

    def run():
        P = [entmax(X, alpha) for alpha in (2.0, 1.5, 1.3)]
        Xg = X.clone().requires_grad_(True)
        entmax_loss(Xg, target, 1.3).sum().backward()
        return [*P, Xg.grad, entmax_attention(q, k, v, alpha=1.5)]

    ours = run()
    assert seam_on_cpu == [2.0, 1.5, 1.3, 1.3]  # attention: the fused kernel (below)
    previous = kernels.set_enabled(False)  # the torch path, for comparison
    try:
        theirs = run()
    finally:
        kernels.set_enabled(previous)
    assert len(seam_on_cpu) == 4
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


@needs_triton
def test_seam_keeps_the_torch_path_elsewhere(seam_on_cpu):
    X = _scores().to(DEVICE)
    entmax(X, 1.0)  # softmax
    entmax(X, 1.05)  # near 1: log1p bisection
    entmax(X, 3.0)  # above 2: exact polish
    entmax(X, 1.3, n_iter=10)  # bisection steps asked
    entmax(X.double(), 1.5)  # float64
    entmax(X, torch.tensor([[1.05], [1.5], [1.5], [1.5]], device=DEVICE))  # one out of range
    assert seam_on_cpu == []
    entmax_bisect(X, 1.3, ensure_sum_one=False)  # the kernels always normalise
    assert seam_on_cpu == []
    previous = kernels.set_enabled(False)
    try:
        entmax(X, 1.5)
        sparsemax(X)
    finally:
        kernels.set_enabled(previous)
    assert seam_on_cpu == []


@needs_triton
def test_named_functions_take_the_kernels(seam_on_cpu):
    """The drop-in functions ask for the package's kernels (not the registry) too."""
    X = _scores().to(DEVICE)
    rows = _ALPHA_ROWS.to(DEVICE)

    def run():
        return [sparsemax(X), entmax15(X), entmax_bisect(X, 1.3), entmax_bisect(X, rows)]

    ours = run()
    assert seam_on_cpu == [2.0, 1.5, 1.3, "tensor"]
    previous = kernels.set_enabled(False)
    try:
        theirs = run()
    finally:
        kernels.set_enabled(previous)
    for a, b in zip(ours, theirs, strict=True):
        assert torch.equal(a == 0, b == 0)
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


@pytest.fixture
def fused_calls(seam_on_cpu, interpreted, monkeypatch):
    """The fused attention kernel launched with blocks of 16 queries and 16 keys (the
    launches' arguments), its calls counted."""
    calls = []
    real = interpreted.attention_forward
    blocks = {"block_m": 16, "block_n": 16}

    def counting(*args, **kwargs):
        calls.append(args[6])  # the mode
        return real(*args, **{**kwargs, **blocks})

    real_backward = interpreted.attention_backward

    def counting_backward(*args, **kwargs):
        calls.append("backward")
        return real_backward(*args, **{**kwargs, **blocks})

    monkeypatch.setattr(interpreted, "attention_forward", counting)
    monkeypatch.setattr(interpreted, "attention_backward", counting_backward)
    return calls


def _without_kernels(fn):
    previous = kernels.set_enabled(False)
    try:
        return fn()
    finally:
        kernels.set_enabled(previous)


@needs_triton
@pytest.mark.parametrize(
    "alpha, masking",
    [
        (2.0, "padding"),
        (1.5, "causal"),
        ("per head", "causal"),
        ("per head, fixed", "padding"),
    ],
)
def test_fused_attention_matches_the_blocked_path(fused_calls, alpha, masking):
    """Output, support sizes and gradients (alpha's too) within 1e-5 of the blocked path;
    rows fully masked by the padding give zeros as there."""
    g = torch.Generator().manual_seed(2)
    B, H, L, S = 2, 2, 12, 20
    q, k = (torch.randn(B, H, n, 4, generator=g).to(DEVICE) for n in (L, S))
    v = torch.randn(B, H, S, 5, generator=g).to(DEVICE)
    per_head = alpha == "per head"  # learned: its gradient too
    fixed = alpha == "per head, fixed"
    a = torch.tensor([1.2, 1.8], device=DEVICE).view(1, H, 1, 1) if per_head or fixed else alpha
    kw = {"is_causal": True} if masking == "causal" else {}
    if masking == "padding":
        padding = torch.ones(B, 1, 1, S, dtype=torch.bool, device=DEVICE)
        padding[1, ..., 6:] = False
        padding[1, 0, 0, :] = False  # a batch entry with every key masked
        kw["attn_mask"] = padding

    def run():
        xs = [x.clone().requires_grad_(True) for x in (q, k, v)]
        a_x = a.clone().requires_grad_(True) if per_head else a
        out, support = entmax_attention(*xs, alpha=a_x, return_support_size=True, **kw)
        (out * torch.linspace(-1, 1, 5, device=DEVICE)).sum().backward()
        grads = [x.grad for x in xs] + ([a_x.grad] if per_head else [])
        return out.detach(), support, grads

    out, support, grads = run()
    mode = {2.0: 0, 1.5: 1}.get(alpha, 2)
    # a learned alpha's gradient: the blocked backward
    assert fused_calls == [mode] if per_head else [mode, "backward"]
    calls = len(fused_calls)
    out_ref, support_ref, grads_ref = _without_kernels(run)
    assert len(fused_calls) == calls
    torch.testing.assert_close(out, out_ref, atol=1e-5, rtol=0)
    assert torch.equal(support, support_ref)
    for mine, theirs in zip(grads, grads_ref, strict=True):
        torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=1e-5)


@needs_triton
def test_multihead_attention_takes_the_fused_kernel(fused_calls):
    from sk_entmax.nn import EntmaxMultiheadAttention

    torch.manual_seed(0)
    mha = EntmaxMultiheadAttention(8, 2, alpha=[1.5, 1.3], batch_first=True).to(DEVICE)
    x = torch.randn(2, 7, 8, device=DEVICE)
    padding = torch.zeros(2, 7, dtype=torch.bool, device=DEVICE)
    padding[0, 5:] = True  # True: a padded key, as in nn.MultiheadAttention
    out, _ = mha(x, x, x, key_padding_mask=padding, need_weights=False)
    assert fused_calls == [2]
    ref, _ = _without_kernels(lambda: mha(x, x, x, key_padding_mask=padding, need_weights=False))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)


def test_off_unless_asked_for(monkeypatch):
    """Never measured on a GPU, the kernels are opt-in: ``SK_ENTMAX_TRITON=1`` only."""
    monkeypatch.delenv("SK_ENTMAX_TRITON", raising=False)
    assert not kernels.asked_for()
    monkeypatch.setenv("SK_ENTMAX_TRITON", "0")
    assert not kernels.asked_for()
    monkeypatch.setenv("SK_ENTMAX_TRITON", "1")
    assert kernels.asked_for()
    enabled = kernels.set_enabled(False)
    try:
        assert kernels.devices() == ()
        defaults = dict.fromkeys(algorithms.Case, sparsemax)
        assert algorithms.select(1.5, torch.device("cuda"), defaults) is sparsemax
    finally:
        kernels.set_enabled(enabled)


def test_without_triton(monkeypatch):
    """Where Triton does not import, the seam keeps the torch path and says why."""
    monkeypatch.setitem(sys.modules, "triton", None)
    monkeypatch.setitem(sys.modules, "sk_entmax.entmax.kernels._triton", None)
    monkeypatch.setattr(kernels, "_module", None)
    monkeypatch.setattr(kernels, "_reason", None)
    assert not kernels.available()
    assert "triton does not import" in kernels.absent_reason()
    assert kernels.wrap(algorithms.Case.ENTMAX15, sparsemax) is None
    defaults = dict.fromkeys(algorithms.Case, sparsemax)
    assert algorithms.select(1.5, torch.device("cuda"), defaults) is sparsemax


_COMPILE = """
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from sk_entmax.entmax.kernels import _triton_attention as TA
from sk_entmax.entmax.kernels import _triton_maps as T

FORWARD = ("X", "Y", "A", "alpha", "n_cols", "stride_x", "stride_y")
BACKWARD = ("Y", "DY", "DX", "A", "alpha", "n_cols", "stride_y", "stride_dy", "stride_dx")
TYPES = {"A": "*fp32", "alpha": "fp32", "n_cols": "i32"}


def compile(kernel, names, dtype, **constexprs):
    signature = {n: TYPES.get(n, "i32" if n.startswith("stride") else dtype) for n in names}
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    source = ASTSource(fn=kernel, signature=signature, constexprs=constexprs)
    triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})


compile(T._forward_kernel, FORWARD, "*bf16", MODE=2, PER_ROW=True, BLOCK=256,
        ONE_BLOCK=False, N_BISECT=4, MAX_NEWTON=60)
compile(T._forward_kernel, FORWARD, "*fp32", MODE=1, PER_ROW=False, BLOCK=1024,
        ONE_BLOCK=True, N_BISECT=4, MAX_NEWTON=60)
compile(T._backward_kernel, BACKWARD, "*fp16", MODE=2, PER_ROW=False, BLOCK=256,
        ONE_BLOCK=False)
ATTENTION = ("Q", "K", "V", "Bias", "A", "Out", "T", "Sup", "alpha", "L", "S", "D", "DV") + tuple(
    f"stride_{x}" for x in ("qb", "qm", "qd", "kb", "kn", "kd", "vb", "vn", "vd", "bb", "bn",
                            "ob", "om", "od"))
TYPES.update({"Sup": "*i64", "L": "i32", "S": "i32", "D": "i32", "DV": "i32"})
TYPES.update(dict.fromkeys(("T", "DO", "Delta", "DK", "DV_out"), "*fp32"))
compile(TA._attention_forward_kernel, ATTENTION, "*fp32", MODE=2, PER_HEAD=True, HAS_BIAS=True,
        CAUSAL=True, WANT_SUPPORT=True, BLOCK_M=16, BLOCK_N=16, BLOCK_D=16, BLOCK_DV=16,
        N_BISECT=4, MAX_NEWTON=60)
BACKWARD_ATTENTION = ("Q", "K", "V", "Bias", "A", "T", "DO", "Delta", "DK", "DV_out", "alpha",
                      "L", "S", "D", "DV") + ATTENTION[13:24]
compile(TA._attention_backward_keys_kernel, BACKWARD_ATTENTION, "*fp32", MODE=1, PER_HEAD=False,
        HAS_BIAS=True, CAUSAL=True, BLOCK_M=16, BLOCK_N=16, BLOCK_D=16, BLOCK_DV=16)
print("compiled")
"""


@needs_triton
@pytest.mark.skipif(ON_GPU, reason="with CUDA the kernels above ran compiled")
def test_kernels_compile_for_a_gpu():
    """Triton's compiler (to a Hopper cubin, without a GPU) takes what its interpreter runs:
    the interpreter does not check the types of loop-carried values, for one."""
    pytest.importorskip("triton.backends.nvidia.compiler")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    result = subprocess.run(
        [sys.executable, "-c", _COMPILE], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0 and "compiled" in result.stdout, result.stderr[-3000:]
