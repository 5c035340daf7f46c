"""``return_support_size=True``: the output and its number of nonzeros (issue 17, point 3).

The support sizes are checked against independent truth: the closed form of sparsemax's
support from a sort, and the nonzeros of the reference ``entmax`` 1.3 outputs in float64.
"""

from __future__ import annotations

import entmax as reference
import pytest
import torch

from sk_entmax.entmax import (
    AdaptiveEntmax,
    BudgetBisect,
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
    budget_bisect,
    entmax,
    entmax15,
    entmax15_loss,
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

F64 = torch.float64


def _separated(shape, seed=0, spread=0.3):
    """Rows of well-separated entries (a shuffled arange with jitter): supports are robust."""
    gen = torch.Generator().manual_seed(seed)
    d = shape[-1]
    rows = torch.stack(
        [torch.randperm(d, generator=gen) for _ in range(int(torch.tensor(shape[:-1]).prod()))]
    )
    noise = torch.rand(rows.shape, generator=gen, dtype=F64) * 0.1
    scale = spread * torch.linspace(0.3, 3.0, rows.shape[0], dtype=F64)[:, None]  # varied sizes
    return ((rows.to(F64) + noise) * scale).reshape(shape)


def _sparsemax_support_closed_form(X: torch.Tensor) -> torch.Tensor:
    """``max{k : 1 + k z_(k) > sum_{j <= k} z_(j)}`` along the last axis (a sort)."""
    Zs = X.sort(-1, descending=True).values
    k = torch.arange(1, X.shape[-1] + 1, dtype=X.dtype)
    return (1 + k * Zs > Zs.cumsum(-1)).sum(-1, keepdim=True)


MAPPINGS = {
    "sparsemax": lambda X, **kw: sparsemax(X, **kw),
    "sparsemax_k2": lambda X, **kw: sparsemax(X, k=2, **kw),
    "entmax15": lambda X, **kw: entmax15(X, **kw),
    "entmax15_k2": lambda X, **kw: entmax15(X, k=2, **kw),
    "entmax_bisect_1.25": lambda X, **kw: entmax_bisect(X, 1.25, **kw),
    "entmax_bisect_tensor": lambda X, **kw: entmax_bisect(X, torch.tensor(1.7, dtype=F64), **kw),
    "entmax_bisect_alpha1": lambda X, **kw: entmax_bisect(X, 1.0, **kw),
    "sparsemax_bisect": lambda X, **kw: sparsemax_bisect(X, **kw),
    "normmax_bisect": lambda X, **kw: normmax_bisect(X, **kw),
    "budget_bisect": lambda X, **kw: budget_bisect(X, **kw),
    "entmax_dispatch_2": lambda X, **kw: entmax(X, 2.0, **kw),
    "entmax_dispatch_1.5": lambda X, **kw: entmax(X, 1.5, **kw),
    "entmax_dispatch_1.33": lambda X, **kw: entmax(X, 1.33, **kw),
}


@pytest.mark.parametrize("name", sorted(MAPPINGS))
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_support_size_counts_the_nonzeros(name, dim):
    fn = MAPPINGS[name]
    X = _separated((3, 6, 5), seed=1).movedim(-1, dim)
    P, support = fn(X, dim=dim, return_support_size=True)
    assert torch.equal(P, fn(X, dim=dim))
    assert support.dtype == torch.int64
    expected_shape = list(X.shape)
    expected_shape[dim] = 1
    assert list(support.shape) == expected_shape
    assert torch.equal(support, (P != 0).sum(dim, keepdim=True))


@pytest.mark.parametrize("training", [True, False])
def test_sparsemax_support_matches_the_closed_form(training):
    X = _separated((40, 9), seed=2, spread=0.15)
    expected = _sparsemax_support_closed_form(X)
    assert expected.min() == 2 and expected.max() == 7  # a mix of support sizes
    for fn in (
        lambda X: sparsemax(X, training=training, return_support_size=True),
        lambda X: sparsemax(X, k=2, return_support_size=True),
        lambda X: sparsemax_bisect(X, training=training, return_support_size=True),
        lambda X: entmax_bisect(X, 2.0, training=training, return_support_size=True),
        lambda X: Sparsemax(return_support_size=True).train(training)(X),
        lambda X: SparsemaxBisect(return_support_size=True).train(training)(X),
    ):
        assert torch.equal(fn(X)[1], expected)


@pytest.mark.parametrize("training", [True, False])
def test_entmax_supports_match_the_reference_nonzeros(training):
    X = _separated((40, 9), seed=3, spread=0.25)
    ref15 = (reference.entmax15(X, dim=-1) > 0).sum(-1, keepdim=True)
    assert ref15.min() < ref15.max()
    assert torch.equal(entmax15(X, training=training, return_support_size=True)[1], ref15)
    assert torch.equal(Entmax15(return_support_size=True).train(training)(X)[1], ref15)
    assert torch.equal(
        entmax_bisect(X, 1.5, training=training, return_support_size=True)[1], ref15
    )
    ref125 = (reference.entmax_bisect(X, 1.25, n_iter=100) > 0).sum(-1, keepdim=True)
    ours = entmax_bisect(X, 1.25, training=training, return_support_size=True)[1]
    assert torch.equal(ours, ref125)
    assert torch.equal(EntmaxBisect(1.25, return_support_size=True).train(training)(X)[1], ref125)


def test_support_of_masked_rows_and_half_precision():
    X = torch.tensor([[0.0, 0.5, float("-inf")], [float("-inf")] * 3])
    for fn in (sparsemax, entmax15, entmax_bisect, sparsemax_bisect):
        _, support = fn(X, return_support_size=True)
        assert support.tolist() == [[2], [0]]
        P, support = fn(X.half(), return_support_size=True)
        assert P.dtype == torch.float16 and support.dtype == torch.int64
        assert support.tolist() == [[2], [0]]


def test_gradients_flow_through_the_output_with_support_size():
    X = torch.randn(4, 6, dtype=F64, requires_grad=True)
    alpha = torch.full((4, 1), 1.4, dtype=F64, requires_grad=True)
    W = torch.randn(4, 6, dtype=F64)
    P, support = entmax_bisect(X, alpha, return_support_size=True)
    assert not support.requires_grad
    gX, ga = torch.autograd.grad((P * W).sum(), (X, alpha))
    gX2, ga2 = torch.autograd.grad((entmax_bisect(X, alpha) * W).sum(), (X, alpha))
    assert torch.equal(gX, gX2) and torch.equal(ga, ga2)


MODULES = [
    Sparsemax(return_support_size=True),
    Sparsemax(-1, 3, True),  # positional, as in the entmax master
    Entmax15(return_support_size=True),
    EntmaxBisect(1.3, return_support_size=True),
    SparsemaxBisect(return_support_size=True),
    NormmaxBisect(return_support_size=True),
    BudgetBisect(return_support_size=True),
    AdaptiveEntmax(1.4, return_support_size=True),
]


@pytest.mark.parametrize("module", MODULES, ids=repr)
def test_modules_return_support_size(module):
    assert "return_support_size=True" in repr(module)
    X = _separated((5, 7), seed=4)
    for training in (True, False):
        P, support = module.train(training)(X)
        assert torch.equal(support, (P != 0).sum(-1, keepdim=True))


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
def test_eval_module_with_support_size_traces():
    module = EntmaxBisect(1.3, return_support_size=True).eval()
    traced = torch.jit.trace(module, (torch.randn(3, 7),))
    X = torch.randn(5, 9) * 3
    for got, expected in zip(traced(X), module(X), strict=True):
        assert torch.equal(got, expected)


LOSS_FUNCTIONS = {
    "sparsemax_loss": (sparsemax_loss, sparsemax),
    "entmax15_loss": (entmax15_loss, entmax15),
    "sparsemax_bisect_loss": (sparsemax_bisect_loss, sparsemax_bisect),
    "entmax_bisect_loss": (
        lambda X, y, **kw: entmax_bisect_loss(X, y, 1.3, **kw),
        lambda X: entmax_bisect(X, 1.3),
    ),
    "normmax_bisect_loss": (normmax_bisect_loss, normmax_bisect),
    "entmax_loss_1.5": (lambda X, y, **kw: entmax_loss(X, y, 1.5, **kw), entmax15),
    "entmax_loss_1.2": (
        lambda X, y, **kw: entmax_loss(X, y, 1.2, **kw),
        lambda X: entmax_bisect(X, 1.2),
    ),
}


@pytest.mark.parametrize("name", sorted(LOSS_FUNCTIONS))
def test_loss_functions_return_support_size(name):
    loss_fn, mapping = LOSS_FUNCTIONS[name]
    X = _separated((2, 3, 6), seed=5)  # leading axes are flattened and restored
    y = torch.randint(0, 6, (2, 3), generator=torch.Generator().manual_seed(5))
    loss, support = loss_fn(X, y, return_support_size=True)
    assert torch.equal(loss, loss_fn(X, y))
    assert support.shape == (2, 3, 1) and support.dtype == torch.int64
    assert torch.equal(support, (mapping(X) != 0).sum(-1, keepdim=True))


def test_sparsemax_loss_support_matches_the_closed_form_positionally():
    X = _separated((30, 8), seed=6, spread=0.15)
    y = torch.randint(0, 8, (30,), generator=torch.Generator().manual_seed(6))
    _, support = sparsemax_loss(X, y, None, True)  # the entmax master's positional order
    assert torch.equal(support, _sparsemax_support_closed_form(X))


LOSS_MODULES = {
    "SparsemaxLoss": (SparsemaxLoss, sparsemax),
    "Entmax15Loss": (Entmax15Loss, entmax15),
    "SparsemaxBisectLoss": (SparsemaxBisectLoss, sparsemax_bisect),
    "EntmaxBisectLoss": (EntmaxBisectLoss, entmax_bisect),
    "NormmaxBisectLoss": (NormmaxBisectLoss, normmax_bisect),
}


@pytest.mark.parametrize("name", sorted(LOSS_MODULES))
@pytest.mark.parametrize("reduction", ["elementwise_mean", "sum", "none"])
def test_loss_modules_return_support_size(name, reduction):
    cls, mapping = LOSS_MODULES[name]
    X = _separated((6, 5), seed=7)
    y = torch.tensor([0, 1, -100, 3, 4, 2])  # one ignored row
    plain = cls(reduction=reduction)
    with_support = cls(reduction=reduction, return_support_size=True)
    assert "return_support_size=True" in repr(with_support)
    loss, support = with_support(X, y)
    assert torch.equal(loss, plain(X, y))
    assert support.shape == (6, 1)
    assert torch.equal(support, (mapping(X) != 0).sum(-1, keepdim=True))
    # a distribution target too
    Q = torch.softmax(torch.randn(6, 5, dtype=F64), -1)
    loss, support = with_support(X, Q)
    assert torch.equal(loss, plain(X, Q)) and support.shape == (6, 1)


def test_loss_module_positional_order_of_the_entmax_master():
    X = _separated((4, 5), seed=8)
    y = torch.tensor([0, 1, 2, 3])
    loss, support = SparsemaxLoss(None, -100, "sum", True)(X, y)
    assert torch.equal(loss, SparsemaxLoss(reduction="sum")(X, y))
    assert torch.equal(support, _sparsemax_support_closed_form(X))


def test_empty_batch_support_size():
    X = torch.zeros(0, 4)
    P, support = sparsemax(X, return_support_size=True)
    assert P.shape == (0, 4) and support.shape == (0, 1)
    loss, support = sparsemax_loss(X, torch.zeros(0, dtype=torch.long), return_support_size=True)
    assert loss.shape == (0,) and support.shape == (0, 1)
