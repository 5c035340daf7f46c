"""The case of an alpha is decided once per call, along every public path (issue 61).

:func:`~sk_entmax.entmax.algorithms.case_for` is the one function that decides which case
(softmax, 1.5-entmax, sparsemax, root finding, root finding per row) serves an alpha. Each
public map and loss, their module twins, attention and ``EntmaxHead`` decide it once and
hand it down (``case=``) to the kernels, the solvers, the entropies and the backward pass;
a function whose name fixes its case (``sparsemax``, ``entmax15_loss``, ...) hands that
case down and decides nothing. The test counts ``case_for``'s calls over a forward and a
backward pass by a spy put in its place, in every module of the package that holds it.
"""

from __future__ import annotations

import importlib
import sys

import pytest
import torch

from sk_entmax.entmax import (
    AdaptiveEntmax,
    Entmax15,
    Entmax15Loss,
    EntmaxBisect,
    EntmaxBisectLoss,
    NormmaxBisect,
    NormmaxBisectLoss,
    Sparsemax,
    SparsemaxBisect,
    SparsemaxBisectLoss,
    SparsemaxLoss,
    algorithms,
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
from sk_entmax.entmax.algorithms import Case
from sk_entmax.nn.head import EntmaxHead

real_case_for = algorithms.case_for  # the deciding function, before any spy

for _name in ("kernels", "kernels.cpu", "_attention_blocks", "_fenchel_young"):
    importlib.import_module(f"sk_entmax.entmax.{_name}")  # every holder of case_for loaded


@pytest.fixture
def decisions(monkeypatch):
    """The cases decided from here on: ``case_for`` replaced, in every module of the package
    that holds it, by a spy that records each case it decides."""
    seen: list[Case] = []

    def spy(alpha):
        case = real_case_for(alpha)
        seen.append(case)
        return case

    holders = [
        module
        for name, module in list(sys.modules.items())
        if name.startswith("sk_entmax") and getattr(module, "case_for", None) is real_case_for
    ]
    assert algorithms in holders
    for module in holders:
        monkeypatch.setattr(module, "case_for", spy)
    return seen


def _scores(width: int = 8) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.randn(4, width, generator=g, dtype=torch.float64).requires_grad_(True)


def _per_row() -> torch.Tensor:
    return torch.tensor([[1.2], [1.5], [1.8], [2.5]], dtype=torch.float64).requires_grad_(True)


def _backward(out) -> None:
    out = out[0] if isinstance(out, tuple) else out
    if out.requires_grad:
        (out * torch.linspace(-1, 1, out.shape[-1], dtype=out.dtype)).sum().backward()


NUMBERS = [1.0, 1.5, 2.0, 1.3, 3.0]
ALPHAS = [*NUMBERS, "per row"]


def _alpha(alpha):
    return _per_row() if alpha == "per row" else alpha


def _expected(alpha) -> list[Case]:
    return [Case.PER_ROW] if alpha == "per row" else [real_case_for(alpha)]


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("width", [8, 128])  # (from 96 on the fused CPU kernel serves more)
@pytest.mark.parametrize("alpha", ALPHAS)
def test_maps_of_an_alpha_decide_once(decisions, alpha, width, training):
    for call in (
        lambda X, a: entmax(X, a, training=training),
        lambda X, a: entmax_bisect(X, a, training=training),
        lambda X, a: EntmaxBisect(a).train(training)(X),
    ):
        decisions.clear()
        _backward(call(_scores(width), _alpha(alpha)))
        assert decisions == _expected(alpha)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize(
    "call",
    [
        lambda X, t: sparsemax(X, training=t),
        lambda X, t: entmax15(X, training=t),
        lambda X, t: sparsemax_bisect(X, training=t),
        lambda X, t: Sparsemax().train(t)(X),
        lambda X, t: Entmax15().train(t)(X),
        lambda X, t: SparsemaxBisect().train(t)(X),
        lambda X, t: normmax_bisect(X, 2.0),  # (no case: a norm's order)
        lambda X, t: NormmaxBisect(2.0).train(t)(X),
    ],
)
def test_maps_named_after_their_case_decide_nothing(decisions, call, training):
    for width in (8, 128):
        _backward(call(_scores(width), training))
    assert decisions == []


def _target() -> torch.Tensor:
    return torch.tensor([0, 3, 1, 5])


@pytest.mark.parametrize("alpha", ALPHAS)
def test_losses_of_an_alpha_decide_once(decisions, alpha):
    """Before issue 61 the loss path decided 3 to 4 times: to project, for each of the two
    entropies, and again inside root finding."""
    for call in (
        entmax_loss,
        entmax_bisect_loss,
        lambda X, t, a: EntmaxBisectLoss(a)(X, t),
        lambda X, t, a: EntmaxHead(a).loss(X, t) if not isinstance(a, torch.Tensor) else X,
    ):
        for width in (8, 128):
            decisions.clear()
            X = _scores(width)
            out = call(X, _target(), _alpha(alpha))
            if out is X:  # (the head takes a number)
                continue
            out.sum().backward()
            assert decisions == _expected(alpha)


@pytest.mark.parametrize(
    "call",
    [
        sparsemax_loss,
        entmax15_loss,
        sparsemax_bisect_loss,
        lambda X, t: SparsemaxLoss()(X, t),
        lambda X, t: Entmax15Loss()(X, t),
        lambda X, t: SparsemaxBisectLoss()(X, t),
        lambda X, t: normmax_bisect_loss(X, t, 2.0),  # (no case)
        lambda X, t: NormmaxBisectLoss(2.0)(X, t),
    ],
)
def test_losses_named_after_their_case_decide_nothing(decisions, call):
    for width in (8, 128):
        call(_scores(width), _target()).sum().backward()
    assert decisions == []


@pytest.mark.parametrize("alpha", NUMBERS)
def test_head_decides_once(decisions, alpha):
    head = EntmaxHead(alpha)
    X = _scores().detach()
    with torch.no_grad():
        head.proba(X)
    assert decisions == _expected(alpha)
    decisions.clear()
    head.loss_and_grad(X, _target())
    assert decisions == _expected(alpha)
    decisions.clear()
    head.proba(X.requires_grad_(True))
    assert decisions == _expected(alpha)


@pytest.mark.parametrize("alpha", [*NUMBERS, "per head"])
def test_attention_decides_once(decisions, alpha):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 2, 6, 4, generator=g, dtype=torch.float64) for _ in range(3))
    a = (
        torch.tensor([1.3, 1.8], dtype=torch.float64).view(1, 2, 1, 1)
        if alpha == "per head"
        else alpha
    )
    expected = [Case.PER_ROW] if alpha == "per head" else [real_case_for(alpha)]
    for call, n_inputs in ((entmax_attention, 3), (entmax_attention_weights, 2)):
        decisions.clear()
        xs = [x.clone().requires_grad_(True) for x in (q, k, v)[:n_inputs]]
        _backward(call(*xs, alpha=a.clone().requires_grad_(True) if alpha == "per head" else a))
        assert decisions == expected


@pytest.mark.parametrize("alpha", [1.5, 2.0, 1.3])
def test_a_shared_tensor_alpha_is_decided_once(decisions, alpha):
    """A tensor alpha holding one value for every row (a learned alpha, say) is decided once,
    as ``PER_ROW``, which every kernel, the solver and the backward pass take: its value is
    never read back to be decided again as a number."""
    for width in (8, 128):
        for call in (
            lambda X, a: entmax(X, a),
            lambda X, a: AdaptiveEntmax(min(alpha, 1.9))(X),
            lambda X, a: entmax_loss(X, _target(), a),
        ):
            decisions.clear()
            _backward(call(_scores(width), torch.tensor(alpha, dtype=torch.float64)))
            assert decisions == [Case.PER_ROW]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("alpha", [1.5, 2.0, 1.3])
def test_a_shared_tensor_alpha_solves_as_the_same_alpha_given_per_row(alpha, dtype):
    """One value broadcast to every row and the same value stored once per row take the
    same solver: outputs and both gradients agree bit for bit (the narrow rows the solver
    used to serve with the number read back included)."""
    g = torch.Generator().manual_seed(2)
    X = torch.randn(64, 8, generator=g, dtype=dtype)
    W = torch.randn(64, 8, generator=g, dtype=dtype)
    results = []
    for shared in (True, False):
        Z = X.clone().requires_grad_(True)
        a = torch.tensor(alpha, dtype=dtype).requires_grad_(True)
        P = entmax(Z, a if shared else a.expand(64, 1).contiguous())
        results.append((P.detach(), *torch.autograd.grad((P * W).sum(), (Z, a))))
    for one, per_row in zip(*results, strict=True):
        assert torch.equal(one, per_row)
