"""The GPU branches of the core, run on CPU tensors (issue 43: a CUDA-only crash).

The solvers test the device once (:func:`sk_entmax.entmax.common.cpu_branch`): on CPU they
sum with ``cumsum`` and stop bisection early, elsewhere they sum with
:func:`~sk_entmax.entmax.solvers._sums.row_sum`'s tree. That tree once wrote into a scratch tensor
with ``out=``, which autograd refuses, so ``entmax_bisect(x, 1.33, training=False)`` with an
``x`` requiring a gradient crashed on CUDA only. :func:`~sk_entmax.entmax.common.device_branch`
makes the helpers take the CUDA branch on CPU tensors, so that this suite catches that class
of bug without a GPU: every public mapping, loss and attention function, with an input that
requires a gradient, in ``training=True``, ``training=False`` and under ``torch.no_grad()``,
must give what the CPU branch gives, gradients included (``gradcheck`` in float64).
"""

from __future__ import annotations

import contextlib

import pytest
import torch

from sk_entmax.entmax import (
    budget_bisect,
    entmax,
    entmax15,
    entmax15_loss,
    entmax_attention,
    entmax_attention_weights,
    entmax_bisect,
    entmax_bisect_loss,
    entmax_loss,
    normmax_bisect,
    normmax_bisect_loss,
    sparsemax,
    sparsemax_bisect,
    sparsemax_bisect_loss,
    sparsemax_loss,
)
from sk_entmax.entmax.common import cpu_branch, device_branch
from sk_entmax.entmax.solvers._entmax_solvers import _row_sum
from sk_entmax.entmax.solvers._sums import _tree_sum, row_sum
from sk_entmax.nn import EntmaxMultiheadAttention

# width 300: row_sum's head (256), its blocks and its zero-padded tail all take part
WIDTH = 300


def _alpha_rows() -> torch.Tensor:
    return torch.tensor([[1.2], [1.5], [2.5]], dtype=torch.float64)


# name -> f(X, training) for the mappings (X of shape (3, WIDTH))
MAPPINGS = {
    "sparsemax": lambda X, t: sparsemax(X, training=t),
    "entmax15": lambda X, t: entmax15(X, training=t),
    "entmax_bisect-1.33": lambda X, t: entmax_bisect(X, 1.33, training=t),
    "entmax_bisect-1.5": lambda X, t: entmax_bisect(X, 1.5, training=t),
    "entmax_bisect-3": lambda X, t: entmax_bisect(X, 3.0, training=t),
    "entmax_bisect-1.05-unnormalised": lambda X, t: entmax_bisect(
        X, 1.05, ensure_sum_one=False, training=t
    ),
    "entmax_bisect-per-row": lambda X, t: entmax_bisect(X, _alpha_rows(), training=t),
    "sparsemax_bisect": lambda X, t: sparsemax_bisect(X, training=t),
    "entmax-1": lambda X, t: entmax(X, 1.0, training=t),
    "entmax-1.33": lambda X, t: entmax(X, 1.33, training=t),
    "entmax-1.5": lambda X, t: entmax(X, 1.5, training=t),
    "entmax-2": lambda X, t: entmax(X, 2.0, training=t),
    "entmax-per-row": lambda X, t: entmax(X, _alpha_rows(), training=t),
    "normmax_bisect": lambda X, t: normmax_bisect(X, 2.0, n_iter=40),
    "budget_bisect": lambda X, t: budget_bisect(X, 3.0, n_iter=40),
}

# name -> f(X) for the losses (per-row losses of (3, WIDTH) scores against class targets)
_TARGET = torch.tensor([0, 7, 20])  # row 2's target is not among its -inf padding
LOSSES = {
    "sparsemax_loss": lambda X: sparsemax_loss(X, _TARGET),
    "entmax15_loss": lambda X: entmax15_loss(X, _TARGET),
    "sparsemax_bisect_loss": lambda X: sparsemax_bisect_loss(X, _TARGET),
    "entmax_bisect_loss-1.33": lambda X: entmax_bisect_loss(X, _TARGET, 1.33),
    "entmax_bisect_loss-per-row": lambda X: entmax_bisect_loss(X, _TARGET, _alpha_rows()),
    "entmax_loss-1.33": lambda X: entmax_loss(X, _TARGET, 1.33),
    "entmax_loss-2": lambda X: entmax_loss(X, _TARGET, 2.0),
    "normmax_bisect_loss": lambda X: normmax_bisect_loss(X, _TARGET, 2.0, n_iter=40),
}

MODES = ("training", "plain", "no_grad")


def _scores(seed: int = 0, width: int = WIDTH) -> torch.Tensor:
    """(3, width) float64 scores, spread so that supports hold a few dozen entries, with
    ``-inf`` padding on the last row."""
    g = torch.Generator().manual_seed(seed)
    X = 4 * torch.randn(3, width, generator=g, dtype=torch.float64)
    X[2, width // 2 :] = float("-inf")
    return X


def _run(f, X: torch.Tensor, mode: str, branch: str):
    """``f`` on a leaf copy of ``X`` in ``mode`` through the ``branch`` device's helpers;
    returns the output and the gradient of a weighted sum (None under no_grad)."""
    X = X.clone().requires_grad_(True)
    weights = torch.linspace(-1, 1, X.shape[-1], dtype=X.dtype)
    with device_branch(branch):
        assert cpu_branch(X) is (branch == "cpu")
        if mode == "no_grad":
            with torch.no_grad():
                return f(X, True), None
        Y = f(X, mode == "training")
        (Y * weights[: Y.shape[-1]]).sum().backward()
    return Y.detach(), X.grad


def test_device_branch_forces_and_restores():
    X = torch.zeros(2)
    assert cpu_branch(X)
    with device_branch("cuda"):
        assert not cpu_branch(X)
        with device_branch("cpu"):
            assert cpu_branch(X)
        assert not cpu_branch(X)
    assert cpu_branch(X)


@pytest.mark.parametrize("width", [1, 2, 3, 5, 8, 256, 257, 300, 600])
def test_row_sum_under_autograd(width):
    """The sum that exact results depend on works under autograd, bit for bit as without."""
    T = torch.randn(3, width, dtype=torch.float64)
    expected = row_sum(T)
    leaf = T.clone().requires_grad_(True)
    total = row_sum(leaf)
    assert torch.equal(total.detach(), expected)
    total.sum().backward()
    assert torch.equal(leaf.grad, torch.ones_like(T))
    columns = T.t().contiguous()
    leaf = columns.clone().requires_grad_(True)
    assert torch.equal(_tree_sum(leaf, 0).detach(), row_sum(columns, 0))
    assert torch.autograd.gradcheck(lambda t: row_sum(t), (T[:, :40].clone().requires_grad_(),))


def test_row_sum_cuda_branch_under_autograd():
    p = torch.rand(2, WIDTH, dtype=torch.float64, requires_grad=True)
    with device_branch("cuda"):
        total = _row_sum(p)
    torch.testing.assert_close(total, p.sum(-1, keepdim=True), rtol=1e-15, atol=0)
    total.sum().backward()
    assert torch.equal(p.grad, torch.ones_like(p))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(MAPPINGS))
def test_mappings_cuda_branch(name, mode):
    f = MAPPINGS[name]
    X = _scores()
    Y_cpu, g_cpu = _run(f, X, mode, "cpu")
    Y_gpu, g_gpu = _run(f, X, mode, "cuda")
    if name != "entmax_bisect-1.05-unnormalised":  # its bisection stops elsewhere on CPU
        assert torch.equal(Y_gpu == 0, Y_cpu == 0)
    torch.testing.assert_close(Y_gpu, Y_cpu, rtol=1e-9, atol=1e-12)
    if g_cpu is not None:
        torch.testing.assert_close(g_gpu, g_cpu, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("mode", ("training", "no_grad"))
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses_cuda_branch(name, mode):
    f = LOSSES[name]
    X = _scores(1)
    Y_cpu, g_cpu = _run(lambda X, t: f(X), X, mode, "cpu")
    Y_gpu, g_gpu = _run(lambda X, t: f(X), X, mode, "cuda")
    torch.testing.assert_close(Y_gpu, Y_cpu, rtol=1e-9, atol=1e-12)
    if g_cpu is not None:
        torch.testing.assert_close(g_gpu, g_cpu, rtol=1e-7, atol=1e-9)


# the plain paths, whose graphs go through row_sum's tree on a GPU
GRADCHECKED = {
    "entmax_bisect-1.33-plain": lambda X: entmax_bisect(X, 1.33, training=False),
    "entmax_bisect-per-row-plain": lambda X: entmax_bisect(
        X, torch.tensor([[1.3], [1.7]], dtype=X.dtype), training=False
    ),
    "entmax_bisect-1.5": lambda X: entmax_bisect(X, 1.5),
    "entmax15-plain": lambda X: entmax15(X, training=False),
    "sparsemax-plain": lambda X: sparsemax(X, training=False),
    "entmax_loss-1.33": lambda X: entmax_loss(X, torch.tensor([0, 3]), 1.33),
}


@pytest.mark.parametrize("width", [7, 260])
@pytest.mark.parametrize("name", sorted(GRADCHECKED))
def test_gradcheck_cuda_branch(name, width):
    X = torch.randn(2, width, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    X.requires_grad_(True)
    with device_branch("cuda"):
        assert torch.autograd.gradcheck(GRADCHECKED[name], (X,), fast_mode=True)


@pytest.mark.parametrize("mode", ("grad", "no_grad"))
@pytest.mark.parametrize("alpha", [1.5, 1.33, "per-head"])
def test_attention_cuda_branch(alpha, mode):
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 2, 6, 4, generator=g, dtype=torch.float64) for _ in range(3))
    if alpha == "per-head":
        alpha = torch.tensor([1.3, 1.8], dtype=torch.float64).view(1, 2, 1, 1)
    padding = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    padding[1, ..., 4:] = False

    def run(branch: str):
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
        context = torch.no_grad() if mode == "no_grad" else contextlib.nullcontext()
        with device_branch(branch), context:
            out = entmax_attention(*leaves, alpha=alpha, attn_mask=padding, block_size=4)
            out = out + entmax_attention(*leaves, alpha=alpha, is_causal=True)
            W = entmax_attention_weights(*leaves[:2], alpha=alpha, attn_mask=padding)
            if mode == "no_grad":
                return out, W, None
            (out.sum() + (W * W).sum()).backward()
        return out.detach(), W.detach(), [t.grad for t in leaves]

    out_cpu, W_cpu, g_cpu = run("cpu")
    out_gpu, W_gpu, g_gpu = run("cuda")
    torch.testing.assert_close(out_gpu, out_cpu, rtol=1e-9, atol=1e-12)
    assert torch.equal(W_gpu == 0, W_cpu == 0)
    if g_cpu is not None:
        for a, b in zip(g_gpu, g_cpu, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("training", [True, False])
def test_multihead_attention_cuda_branch(training):
    torch.manual_seed(0)
    mha = EntmaxMultiheadAttention(8, 2, alpha=1.33, learn_alpha=True, batch_first=True).double()
    mha.train(training)
    x = torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True)
    with device_branch("cuda"):
        out, _ = mha(x, x, x)
        out.sum().backward()
    assert torch.isfinite(x.grad).all()
