"""The core under ``torch.compile(fullgraph=True)``: no graph break, the values and gradients
of eager mode.

Graph breaks are a Dynamo matter, so most cases compile with the ``aot_eager`` backend (Dynamo
and AOTAutograd, no code generation: seconds instead of tens of seconds), the learned alphas
(whose bisection branch is long to trace) with the ``eager`` backend (Dynamo alone); one case
goes through Inductor, whose ``torch.cond`` branches the compiled solvers rely on.
``fullgraph=True`` turns any graph break into an error.
"""

from __future__ import annotations

import pytest
import torch

import sk_entmax.entmax as E
from sk_entmax.entmax import activations
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


@pytest.mark.parametrize("name", list(MAPPINGS))
def test_core_compiles_without_graph_break(name):
    X = _scores(6, 10)
    X[0, 4] = float("-inf")  # a masked entry
    learned = "tensor alpha" in name
    extra = (ALPHA,) if learned else ()
    _assert_same(MAPPINGS[name], X, *extra, backend="eager" if learned else "aot_eager")


def test_inductor_matches_eager():
    _assert_same(E.sparsemax, _scores(8, 40), backend="inductor")


@pytest.mark.parametrize("mapping", [E.sparsemax, E.entmax15])
def test_unsettled_rows_take_the_sort(monkeypatch, mapping):
    """With one Newton pass no row settles: the ``torch.cond`` branch of the sort runs."""
    monkeypatch.setattr(activations, "_TRACED_PASSES", 1)
    _assert_same(mapping, _scores(5, 30, seed=3))


def test_loss_modules_compile():
    loss = E.Entmax15Loss()
    _assert_same(lambda X: loss(X, TARGET), _scores(6, 10))


@pytest.mark.parametrize("alpha", [1.5, 1.33])
def test_entmax_attention_compiles(alpha):
    q, k, v = (_scores(2, 3, 7, 4, seed=s) for s in range(3))
    _assert_same(lambda q_: E.entmax_attention(q_, k, v, alpha=alpha), q)


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
