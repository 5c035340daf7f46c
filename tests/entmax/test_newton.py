"""The sort-free Newton solvers behind the default (training) path.

``sparsemax``, ``entmax15`` and ``entmax_bisect`` / ``sparsemax_bisect`` at ``n_iter >= 24``
with a number alpha in ``[1.1, 2]`` find the threshold by Newton steps (see the module
docstrings of ``activations`` and ``root_finding``). Here: float32 results at default
settings against float64 solutions from the independent sort-based and bisection plain
paths, on the benchmark's three shape families at small sizes, with ties, masks, huge
logits and tensor alpha; the behaviour of an explicit small ``n_iter``; and the fallback
for rows that do not settle within the pass cap.
"""

from __future__ import annotations

import pytest
import torch

from sk_entmax.entmax import entmax15, entmax_bisect, sparsemax, sparsemax_bisect
from sk_entmax.entmax.common import _vjp, phi, phi_no_graph
from sk_entmax.entmax.solvers import _newton, entmax_bisect_last

F64 = torch.float64
NEG_INF = float("-inf")
MAX_ERR = 1e-5  # against the float64 solution, float32 inputs, default settings
SUM_ERR = 1e-6

# the benchmark's shape families (4096 x 32, 1024 x 1000, 64 x 20000), small
SHAPES = [(64, 32), (16, 1000), (2, 20000)]
FAST = {
    "sparsemax": (sparsemax, 2.0),
    "entmax15": (entmax15, 1.5),
    "entmax_bisect_1.1": (lambda X, **kw: entmax_bisect(X, 1.1, **kw), 1.1),
    "entmax_bisect_1.33": (lambda X, **kw: entmax_bisect(X, 1.33, **kw), 1.33),
    "entmax_bisect_1.5": (lambda X, **kw: entmax_bisect(X, 1.5, **kw), 1.5),
    "entmax_bisect_1.9": (lambda X, **kw: entmax_bisect(X, 1.9, **kw), 1.9),
    "sparsemax_bisect": (sparsemax_bisect, 2.0),
}


def _exact(X: torch.Tensor, alpha) -> torch.Tensor:
    """The float64 solution by an independent algorithm: a full sort, or long bisection."""
    X = X.to(F64)
    if not isinstance(alpha, torch.Tensor) and alpha == 2.0:
        return sparsemax(X, training=False)
    if not isinstance(alpha, torch.Tensor) and alpha == 1.5:
        return entmax15(X, training=False)
    if isinstance(alpha, torch.Tensor):
        alpha = alpha.to(F64)
    return entmax_bisect(X, alpha, n_iter=120, training=False)


def _assert_accurate(P: torch.Tensor, X: torch.Tensor, alpha) -> None:
    assert P.dtype == X.dtype
    exact = _exact(X, alpha)
    assert (P.to(F64) - exact).abs().max().item() <= MAX_ERR
    assert (P.to(F64).sum(-1) - 1).abs().max().item() <= SUM_ERR
    assert (P >= 0).all()
    # exact zeros where the solution has zeros, up to entries at the threshold itself
    assert (P[exact > 1e-6] > 0).all() and (P[exact == 0] <= 1e-6).all()


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("scale", [0.05, 1.0, 30.0])
@pytest.mark.parametrize("name", list(FAST))
def test_float32_default_settings_accurate(name, shape, scale):
    fn, alpha = FAST[name]
    gen = torch.Generator().manual_seed(shape[1])
    X = torch.randn(shape, generator=gen) * scale
    _assert_accurate(fn(X), X, alpha)


@pytest.mark.parametrize("name", list(FAST))
def test_ties_masks_and_huge_logits(name):
    fn, alpha = FAST[name]
    X = torch.tensor(
        [
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],  # all tied
            [1.0, 1.0, 1.0, 0.0, 0.0, -1.0],  # integer ties at the threshold
            [3.0, 3.0, -2.0, NEG_INF, NEG_INF, 1.0],  # masked entries
            [NEG_INF] * 6,  # a fully masked row
            [1e30, -1e30, 1e30, 0.0, 5e29, 1e30],  # huge logits
            [3e38, -3e38, 1.0, 2.0, 3e38, 0.0],  # at the float32 range
            [1e-30, 2e-30, 0.0, -1e-30, 0.0, 0.0],  # below the resolution: uniform
        ]
    )
    X.requires_grad_()
    P = fn(X)
    assert torch.isfinite(P).all()
    finite = torch.isfinite(X.detach()).all(-1) | (X.detach() == NEG_INF).any(-1)
    keep = [0, 1, 2, 4, 5, 6]
    assert finite[keep].all()
    assert torch.equal(P[3], torch.zeros(6))
    assert (P[2, 3:5] == 0).all()
    expected = _exact(X.detach().clamp(min=-3.4e38), alpha)  # same problem, finite masks
    expected[3] = 0
    assert (P.detach().double() - expected).abs().max() <= MAX_ERR
    assert torch.allclose(P[keep].sum(-1), torch.ones(len(keep)), atol=SUM_ERR)
    (grad,) = torch.autograd.grad((P * torch.arange(6.0)).sum(), X)
    assert torch.isfinite(grad).all() and (grad[3] == 0).all() and (grad[2, 3:5] == 0).all()


@pytest.mark.parametrize("training", [True, False])
def test_tensor_alpha_float32_accurate(training):
    gen = torch.Generator().manual_seed(3)
    X = torch.randn(6, 1000, generator=gen) * 3
    alpha = torch.tensor([[1.05], [1.33], [1.5], [1.8], [2.0], [2.5]], requires_grad=True)
    P = entmax_bisect(X, alpha, training=training)
    _assert_accurate(P.detach(), X, alpha.detach())
    (grad,) = torch.autograd.grad(P[:, 0].sum(), alpha)
    assert torch.isfinite(grad).all()


@pytest.mark.parametrize("alpha", [1.33, 1.5, 2.0])
def test_small_n_iter_is_bisection_and_large_is_converged(alpha):
    """Below 24 steps ``n_iter`` bisection steps run (the reference's algorithm); from 24
    on the result is at least as accurate as that many steps would make it."""
    gen = torch.Generator().manual_seed(4)
    X = torch.randn(32, 50, generator=gen, dtype=F64)
    exact = _exact(X, alpha)
    errors = {
        n: (entmax_bisect(X, alpha, n_iter=n) - exact).abs().max().item() for n in (3, 10, 23)
    }
    assert errors[3] > errors[10] > errors[23] > 1e-9
    for n in (3, 10, 23):  # exactly the plain path's n_iter bisection steps
        plain = entmax_bisect(X, alpha, n_iter=n, training=False)
        assert torch.allclose(entmax_bisect(X, alpha, n_iter=n), plain, atol=1e-14)
    for n in (24, 30, 50):
        assert (entmax_bisect(X, alpha, n_iter=n) - exact).abs().max().item() < 1e-13
    # float32: from 24 steps on, the working precision
    P = entmax_bisect(X.float(), alpha, n_iter=24)
    assert (P.double() - exact).abs().max().item() <= MAX_ERR


@pytest.mark.parametrize("alpha", [1.1, 1.33, 1.9])
def test_unsettled_rows_are_finished_by_the_fallback(alpha):
    """Root finding's Newton steps at most ``max_passes`` passes (sparsemax and 1.5-entmax
    take the traceable form, whose own fallback is the sort's); the rows still moving are
    bisected."""
    gen = torch.Generator().manual_seed(5)
    X = torch.randn(40, 300, generator=gen) * 2
    X[3] = NEG_INF
    X[5, 10] = float("nan")
    Zb = (X[6:] - X[6:].amax(-1, keepdim=True)) * (alpha - 1)
    _, settled = _newton._power_newton(Zb, 1 / (alpha - 1), max_passes=2)
    assert not settled.all()  # rows still moving after 2 passes: the fallback runs
    P = entmax_bisect_last(X, alpha, 50, True, max_passes=2)
    assert torch.equal(P[3], torch.zeros(300)) and P[5].isnan().all()
    rows = [i for i in range(40) if i not in (3, 5)]
    _assert_accurate(P[rows], X[rows], alpha)


@pytest.mark.parametrize("name", list(FAST))
def test_row_result_does_not_depend_on_the_batch(name):
    fn, _ = FAST[name]
    gen = torch.Generator().manual_seed(6)
    X = torch.randn(20, 500, generator=gen)
    X[7] *= 100  # a row that settles at a different pass than the others
    P = fn(X)
    for i in (0, 7, 19):
        assert torch.allclose(fn(X[i : i + 1])[0], P[i], atol=1e-7, rtol=0)


@pytest.mark.parametrize("alpha", [1.25, 1.33, 1.5, 1.75, 2.0])
def test_fast_backward_matches_safe_backward_float32(alpha):
    gen = torch.Generator().manual_seed(7)
    X = (torch.randn(8, 200, generator=gen) * 2).requires_grad_()
    W = torch.randn(8, 200, generator=gen)
    P = entmax_bisect(X, alpha)
    (fast,) = torch.autograd.grad(P, X, W, retain_graph=True)
    # create_graph takes the differentiable backward (safe_pow)
    (safe,) = torch.autograd.grad(P, X, W, create_graph=True)
    assert torch.allclose(fast, safe.detach(), atol=1e-6, rtol=1e-5)
    assert (fast[P.detach() == 0] == 0).all()


@pytest.mark.parametrize("alpha", [1.999999, 1.9999, 1.96, 1.94, 1.1001])
def test_alpha_close_to_the_ends_of_the_newton_range(alpha):
    """Near alpha = 2 the floor's ``g`` is close to 1 and has to be masked, not thresholded."""
    gen = torch.Generator().manual_seed(8)
    X = (torch.randn(16, 300, generator=gen) * 2).requires_grad_()
    W = torch.randn(16, 300, generator=gen)
    P = entmax_bisect(X, alpha)
    _assert_accurate(P.detach(), X.detach(), alpha)
    (fast,) = torch.autograd.grad(P, X, W, retain_graph=True)
    (safe,) = torch.autograd.grad(P, X, W, create_graph=True)
    assert torch.allclose(fast, safe.detach(), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("rows", ["one", "per_row", "per_row_m_at_least_2"])
def test_tensor_alpha_newton_values_and_alpha_gradient(rows):
    gen = torch.Generator().manual_seed(9)
    X = torch.randn(6, 400, generator=gen) * 2
    if rows == "per_row":  # every row in [1.1, 2]: all by Newton, one exponent per row
        values = torch.tensor([[1.1], [1.25], [1.5], [1.5], [1.9], [2.0]])
    elif rows == "per_row_m_at_least_2":  # alpha <= 1.5 in every row: no support mask
        values = torch.tensor([[1.1], [1.2], [1.25], [1.33], [1.4], [1.5]])
    else:  # one alpha broadcast to the rows: solved per row too
        values = torch.tensor(1.33)
    alpha = values.clone().requires_grad_()
    P = entmax_bisect(X, alpha)
    expected = _exact(X, values.expand(6, 1))
    assert (P.detach().double() - expected).abs().max() <= MAX_ERR
    (grad,) = torch.autograd.grad((P * X).sum(), alpha)
    alpha64 = values.double().requires_grad_()
    P64 = entmax_bisect(X.double(), alpha64, n_iter=120, training=False)
    (grad64,) = torch.autograd.grad((P64 * X.double()).sum(), alpha64)
    assert torch.allclose(grad.double(), grad64, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(FAST))
def test_large_tied_support_float32(name):
    """Hundreds of entries tied at the maximum: one long first step lands on the true
    support, and the threshold must still be exact to rounding (the sum within 1e-6)."""
    fn, alpha = FAST[name]
    gen = torch.Generator().manual_seed(10)
    X = torch.randint(-3, 4, (8, 5000), generator=gen).float()
    X[1] = 0.0  # all 5000 tied
    _assert_accurate(fn(X), X, alpha)


@pytest.mark.parametrize("alpha", [[1.05, 1.33, 1.5, 1.8, 2.0, 2.5], [1.1, 1.25, 1.33, 1.5]])
def test_fast_alpha_gradient_matches_safe_alpha_gradient(alpha):
    """Without a graph the derivatives of one alpha per row take fewer, in-place ops
    (``phi_no_graph``, ``exp2(log2(.))`` for the weights when every alpha is in (1, 2]);
    with ``create_graph`` the safe differentiable ones: the same gradients."""
    gen = torch.Generator().manual_seed(11)
    X = torch.randn(len(alpha), 300, generator=gen) * 2
    W = torch.randn(len(alpha), 300, generator=gen)
    for dtype, tol in ((torch.float32, 1e-5), (F64, 1e-12)):
        a = torch.tensor(alpha, dtype=dtype).unsqueeze(-1).requires_grad_()
        x = X.to(dtype).requires_grad_()
        P = entmax_bisect(x, a)
        fast = torch.autograd.grad(P, (x, a), W.to(dtype), retain_graph=True)
        safe = torch.autograd.grad(P, (x, a), W.to(dtype), create_graph=True)
        for f, s in zip(fast, safe):
            assert torch.allclose(f, s.detach(), rtol=tol, atol=tol)
        assert (fast[0][P.detach() == 0] == 0).all()  # exact zeros off the support


def test_phi_no_graph_matches_phi():
    z = torch.cat(
        [
            torch.linspace(-3, 3, 6001, dtype=F64),
            torch.logspace(-12, 1.8, 300, dtype=F64),
            -torch.logspace(-12, 1, 300, dtype=F64),
            torch.zeros(1, dtype=F64),
        ]
    )
    exact = phi(z)
    assert torch.allclose(phi_no_graph(z.clone()), exact, rtol=1e-15, atol=0)
    assert torch.allclose(phi_no_graph(z.float()).double(), exact, rtol=2e-6, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_sqrt_support_is_sqrt_with_exact_zeros(dtype):
    """The backward's sqrt for 1.5-entmax avoids sqrt(0) (slow on CPU) but keeps its zeros."""
    Y = torch.tensor([0.0, 1e-40, 2.0**-119, 1e-20, 0.25, 1.0], dtype=dtype)
    G = _vjp.sqrt_support(Y)
    assert G[0] == 0 and G[1] == 0  # 0 and anything below 2 ** -120 weigh nothing
    assert torch.allclose(G[2:], Y[2:].sqrt(), rtol=1e-6, atol=0)


@pytest.mark.parametrize("fn", [entmax15, lambda X: entmax_bisect(X, 1.5)])
def test_entmax15_gradient_is_exactly_zero_off_the_support(fn):
    gen = torch.Generator().manual_seed(3)
    X = (torch.randn(64, 50, generator=gen) * 3).requires_grad_()
    P = fn(X)
    (g,) = torch.autograd.grad(P, X, torch.randn(64, 50, generator=gen))
    assert (P == 0).any()
    assert torch.equal(g[P == 0], torch.zeros_like(g[P == 0]))
    X64 = X.detach().double().requires_grad_()
    (g64,) = torch.autograd.grad(entmax15(X64, training=False), X64, torch.ones(64, 50, dtype=F64))
    (g32,) = torch.autograd.grad(fn(X), X, torch.ones(64, 50))
    assert torch.allclose(g32.double(), g64, atol=1e-5)
