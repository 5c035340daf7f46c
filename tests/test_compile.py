"""The core under ``torch.compile(fullgraph=True)``: no graph break, the values and gradients
of eager mode.

Graph breaks are a Dynamo matter, so most cases compile with the ``aot_eager`` backend (Dynamo
and AOTAutograd, no code generation: seconds instead of tens of seconds), the cases of root
finding (whose bisection branch is long to trace: learned alphas, the loss, wide rows and
attention at alpha 1.33) with the ``eager`` backend (Dynamo alone, which is where torch
2.14 broke on root finding's autograd context); one case goes through Inductor, whose
``torch.cond`` branches the compiled solvers rely on.
``fullgraph=True`` turns any graph break into an error.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import sk_entmax.entmax as E
from sk_entmax.entmax.solvers import _traced
from sk_entmax.entmax.solvers._entmax_solvers import _entmax_bisect_traced
from sk_entmax.nn import EntmaxMultiheadAttention, TabNet

ATOL = 1e-5


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield


def _compiled(fn, backend: str = "aot_eager"):
    return torch.compile(fn, fullgraph=True, backend=backend)


def _scores(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _value_and_grads(fn, X: torch.Tensor, *extra: torch.Tensor):
    """``fn(X)`` and the gradients of a fixed cotangent in ``X`` and ``extra``."""
    X = X.detach().requires_grad_()
    out = fn(X)
    cotangent = _scores(*out.shape, seed=1)
    grads = torch.autograd.grad(out, (X, *extra), cotangent)
    return out.detach(), grads


def _assert_same(fn, X: torch.Tensor, *extra: torch.Tensor, backend: str = "aot_eager"):
    want, want_grads = _value_and_grads(fn, X, *extra)
    got, got_grads = _value_and_grads(_compiled(fn, backend), X, *extra)
    torch.testing.assert_close(got, want, atol=ATOL, rtol=0)
    assert torch.equal(got == 0, want == 0)  # the same exact zeros
    for g, w in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, atol=10 * ATOL, rtol=1e-4)


ALPHA = torch.tensor(1.33, requires_grad=True)
TARGET = torch.tensor([0, 3, 7, 2, 9, 1])

MAPPINGS = {
    "sparsemax": E.sparsemax,
    "entmax15": E.entmax15,
    # n_iter=24: the fewest steps at which Newton serves; the bisection branch of torch.cond,
    # unrolled, costs tracing time in proportion to n_iter (the loss covers a float alpha)
    "entmax_bisect tensor alpha": lambda X: E.entmax_bisect(X, ALPHA, n_iter=24),
    "sparsemax eval": lambda X: E.sparsemax(X, training=False),
    "entmax_bisect eval": lambda X: E.entmax_bisect(X, 1.33, n_iter=24, training=False),
    "sparsemax_loss": lambda X: E.sparsemax_loss(X, TARGET),
    "entmax15_loss": lambda X: E.entmax15_loss(X, TARGET),
    "entmax_bisect_loss": lambda X: E.entmax_bisect_loss(X, TARGET, 1.33, n_iter=24),
}


#: the cases whose root finding (bisection's torch.cond branch, unrolled) is long to trace
#: compile with Dynamo alone: graph breaks, and the ctx of root finding's autograd function
#: that torch 2.14's Dynamo lost, are Dynamo's matter (issue 60: CI time)
ROOT_FINDING = ("entmax_bisect tensor alpha", "entmax_bisect_loss")


@pytest.mark.parametrize("name", list(MAPPINGS))
def test_core_compiles_without_graph_break(name):
    X = _scores(6, 10)
    X[0, 4] = float("-inf")  # a masked entry
    extra = (ALPHA,) if "tensor alpha" in name else ()
    _assert_same(
        MAPPINGS[name], X, *extra, backend="eager" if name in ROOT_FINDING else "aot_eager"
    )


def test_inductor_matches_eager():
    _assert_same(E.sparsemax, _scores(8, 40), backend="inductor")


@pytest.mark.parametrize("stages", [(1, 1), (1, 9)])
def test_later_stages(stages):
    """Root finding's compiled Newton passes run in stages: rows of random scores settle in
    4 to 7 passes, so with stages of one pass and one no row has settled and the
    ``torch.cond`` branch of bisection runs; with one and nine, the second stage's branch
    finishes. Either way the result is eager root finding's."""
    X = _scores(5, 30, seed=3)

    def solve(X: torch.Tensor) -> torch.Tensor:
        return _entmax_bisect_traced(X, 1.33, 24, True, stages=stages)

    got = _compiled(solve, backend="eager")(X)
    want = E.entmax_bisect(X, 1.33, n_iter=24)
    torch.testing.assert_close(got, want, atol=ATOL, rtol=0)
    assert torch.equal(got == 0, want == 0)


WIDE = {
    "sparsemax": E.sparsemax,
    "entmax15": E.entmax15,
    "entmax_bisect": lambda X: E.entmax_bisect(X, 1.33, n_iter=24),
}


@pytest.mark.parametrize("name", list(WIDE))
def test_wide_rows_start_from_the_blocks(name):
    """Rows from ``_BLOCKED_WIDTH`` on take the block start; 300 is not a multiple of the
    block, a run of -inf fills whole blocks, and one row is fully masked."""
    X = 3 * _scores(4, 300)
    X[1, :100] = float("-inf")
    X[3] = float("-inf")
    assert X.shape[-1] >= _traced._BLOCKED_WIDTH
    _assert_same(WIDE[name], X, backend="eager" if name == "entmax_bisect" else "aot_eager")


def _mass(Z: torch.Tensor, tau: torch.Tensor, m: float) -> torch.Tensor:
    return (Z - tau).clamp(min=0).pow(m).sum(-1)


@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0])
def test_block_start_lies_below_the_root(scale):
    """The start the block maxima give leaves a mass of at least 1 (it lies at or below the
    threshold) and never less than -1's; checked in float64 against the mass itself."""
    from sk_entmax.entmax.solvers._entmax_solvers import _newton_passes

    Z = scale * _scores(64, 1000).double()
    Z = Z - Z.amax(-1, keepdim=True)
    minus_one = torch.full_like(Z[:, :1], -1.0)
    cases = [
        (
            lambda Zb, tau, last, n: _newton_passes(Zb, tau, last, 3.0, n),
            Z / 3,
            (minus_one, torch.full_like(minus_one, float("inf"))),
            3.0,
        ),
    ]
    for passes, Zb, state, m in cases:
        (tau, *_) = _traced._block_start(passes, Zb, state)
        assert bool((tau >= -1).all())
        assert bool((_mass(Zb, tau, m) >= 1 - 1e-12).all())


def test_loss_modules_compile():
    loss = E.Entmax15Loss()
    _assert_same(lambda X: loss(X, TARGET), _scores(6, 10))


@pytest.mark.parametrize("alpha", [1.5, 1.33])
def test_entmax_attention_compiles(alpha):
    q, k, v = (_scores(2, 3, 7, 4, seed=s) for s in range(3))
    backend = "eager" if alpha == 1.33 else "aot_eager"  # root finding: Dynamo alone
    _assert_same(lambda q_: E.entmax_attention(q_, k, v, alpha=alpha), q, backend=backend)


@pytest.mark.parametrize("learn_alpha", [False, True])
def test_multihead_attention_compiles(learn_alpha):
    torch.manual_seed(0)
    mha = EntmaxMultiheadAttention(8, 2, batch_first=True, learn_alpha=learn_alpha)
    fn = lambda x_: mha(x_, x_, x_, need_weights=False)[0]  # noqa: E731
    backend = "eager" if learn_alpha else "aot_eager"
    _assert_same(fn, _scores(2, 5, 8), *mha.parameters(), backend=backend)


def test_attention_dropout_compiles():
    """Dropout's masks differ from eager's draws; the output keeps its shape and finiteness."""
    q, k, v = (_scores(1, 2, 6, 4, seed=s) for s in range(3))
    out = _compiled(lambda q_: E.entmax_attention(q_, k, v, dropout_p=0.5))(q)
    assert out.shape == q.shape and bool(out.isfinite().all())


def test_tabnet_compiles():
    torch.manual_seed(0)
    net = TabNet(5, 3, n_steps=1)
    net.eval()  # training mode's batch statistics would make the two calls differ
    _assert_same(lambda X: net(X)[0], _scores(16, 5), *net.parameters())


#: a process whose first call of the core is compiled: the kernels are looked up on the first
#: choice made, and an import cannot be traced
_FIRST_CALL_COMPILED = """
import torch
import sk_entmax.entmax as E
q = torch.randn(1, 2, 6, 4)
for fn in (E.sparsemax, lambda x: E.entmax_attention(x, x, x, alpha=1.5)):
    torch._dynamo.reset()
    torch.compile(fn, fullgraph=True, backend="eager")(q)
print("compiled")
"""


def test_a_first_call_under_compile_compiles():
    """The first call of a fresh process compiles (it failed on tracing the kernels' import,
    which ``bench_attention.py --compiled`` met); the tests above compare with eager mode
    first, which looks the kernels up."""
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_CALL_COMPILED], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "compiled"
