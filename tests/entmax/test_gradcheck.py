"""First and second derivatives checked against finite differences (float64).

The mappings are only piecewise smooth (the support can change), so every input here is
built with well-separated entries: a shuffled ``arange`` with a small jitter. That keeps
every coordinate far (relative to gradcheck's eps) from the support boundary.
"""

import pytest
import torch
from torch.autograd import gradcheck, gradgradcheck

import sk_entmax.entmax as ours
from sk_entmax.entmax import losses as ours_losses

F64 = torch.float64


def _ids(val):
    return str(val)


def _separated(shape, dim=-1, seed=0, spread=0.4, jitter=0.1):
    """Entries along ``dim`` are a random permutation of ``arange * spread`` plus jitter."""
    gen = torch.Generator().manual_seed(seed)
    ranks = torch.rand(shape, generator=gen, dtype=F64).argsort(dim=dim).to(F64)
    noise = torch.rand(shape, generator=gen, dtype=F64) * jitter
    return (ranks * spread + noise).requires_grad_(True)


def _param(pshape, values, requires_grad=True):
    """A tensor of shape ``pshape`` filled by cycling through ``values``."""
    values = torch.tensor(values, dtype=F64)
    numel = torch.Size(pshape).numel()
    values = values.repeat(-(-numel // len(values)))[:numel]
    return values.reshape(pshape).clone().requires_grad_(requires_grad)


def _param_shape(shape, dim):
    pshape = list(shape)
    pshape[dim] = 1
    return pshape


def _check(fn, inputs, second_order=True, fast=False):
    """First derivatives in full (or ``fast``, projected) mode; second ones projected.

    ``fast_mode`` compares ``v^T J u`` for random ``u, v`` instead of the whole Jacobian,
    which catches the same mistakes at a fraction of the cost.
    """
    assert gradcheck(fn, inputs, fast_mode=fast)
    if second_order:
        assert gradgradcheck(fn, inputs, fast_mode=True)


def _distribution(n, n_classes, seed=0, sparse=True):
    """Rows on the simplex; with ``sparse`` some entries are exactly zero."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.rand(n, n_classes, generator=gen, dtype=F64) + 0.1
    if sparse and n_classes > 1:
        drop = torch.rand(n, n_classes, generator=gen) < 0.4
        drop[:, 0] = False  # keep at least one entry per row
        q = q.masked_fill(drop, 0.0)
    return q / q.sum(dim=1, keepdim=True)


# --------------------------------------------------------------------------------------
# mappings w.r.t. X
# --------------------------------------------------------------------------------------

MAPPINGS = {
    "sparsemax": lambda X, dim: ours.sparsemax(X, dim=dim),
    "sparsemax_k1": lambda X, dim: ours.sparsemax(X, dim=dim, k=1),
    "sparsemax_k2": lambda X, dim: ours.sparsemax(X, dim=dim, k=2),
    "entmax15": lambda X, dim: ours.entmax15(X, dim=dim),
    "entmax15_k1": lambda X, dim: ours.entmax15(X, dim=dim, k=1),
    "entmax15_k2": lambda X, dim: ours.entmax15(X, dim=dim, k=2),
    "sparsemax_bisect": lambda X, dim: ours.sparsemax_bisect(X, dim=dim),
    "entmax_bisect_0.75": lambda X, dim: ours.entmax_bisect(X, alpha=0.75, dim=dim),
    "entmax_bisect_1.25": lambda X, dim: ours.entmax_bisect(X, alpha=1.25, dim=dim),
    "entmax_bisect_1.5": lambda X, dim: ours.entmax_bisect(X, alpha=1.5, dim=dim),
    "entmax_bisect_2": lambda X, dim: ours.entmax_bisect(X, alpha=2.0, dim=dim),
    "entmax_bisect_3": lambda X, dim: ours.entmax_bisect(X, alpha=3.0, dim=dim),
    "normmax_bisect_1.5": lambda X, dim: ours.normmax_bisect(X, alpha=1.5, dim=dim),
    "normmax_bisect_2": lambda X, dim: ours.normmax_bisect(X, alpha=2.0, dim=dim),
    "normmax_bisect_3": lambda X, dim: ours.normmax_bisect(X, alpha=3.0, dim=dim),
    "budget_bisect_1.5": lambda X, dim: ours.budget_bisect(X, budget=1.5, dim=dim),
}

SHAPE_DIMS = [
    ((5,), 0),
    ((3, 4), 0),
    ((2, 4, 3), -2),
    ((2, 1, 3, 2), 2),
]

# second derivatives are pricier; check them on a representative subset of layouts
SECOND_ORDER_SHAPE_DIMS = {((2, 4, 3), -2), ((2, 1, 3, 2), 2)}


@pytest.mark.parametrize(("shape", "dim"), SHAPE_DIMS, ids=_ids)
@pytest.mark.parametrize("name", list(MAPPINGS))
def test_mapping_gradcheck(name, shape, dim):
    X = _separated(shape, dim=dim, seed=len(shape) + 10 * (dim % len(shape)))
    fn = MAPPINGS[name]
    _check(lambda X: fn(X, dim), (X,), second_order=(shape, dim) in SECOND_ORDER_SHAPE_DIMS)


@pytest.mark.parametrize("name", list(MAPPINGS))
def test_mapping_gradcheck_wide_spread(name):
    # a wider spread gives sparser outputs (several exact zeros per row); dim=-1, k > size
    X = _separated((3, 6), seed=5, spread=0.9)
    fn = MAPPINGS[name]
    _check(lambda X: fn(X, -1), (X,))


@pytest.mark.parametrize(
    ("cls_name", "kwargs"),
    [
        ("Sparsemax", {"dim": 0, "k": 2}),
        ("Entmax15", {"dim": 0, "k": 2}),
        ("EntmaxBisect", {"alpha": 1.7, "dim": 0}),
        ("SparsemaxBisect", {"dim": 0}),
        ("NormmaxBisect", {"alpha": 2.5, "dim": 0}),
        ("BudgetBisect", {"budget": 2.0, "dim": 0}),
    ],
    ids=_ids,
)
def test_mapping_module_gradcheck(cls_name, kwargs):
    X = _separated((5, 3), dim=0, seed=7)
    _check(getattr(ours, cls_name)(**kwargs), (X,))


# --------------------------------------------------------------------------------------
# mappings w.r.t. alpha / budget
# --------------------------------------------------------------------------------------


SCALAR_ALPHA_CASES = [((3, 5), -1, alpha) for alpha in [0.75, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0]] + [
    ((2, 5, 2), 1, alpha) for alpha in [0.75, 1.5, 2.5]
]


@pytest.mark.parametrize(("shape", "dim", "alpha"), SCALAR_ALPHA_CASES, ids=_ids)
def test_entmax_bisect_scalar_alpha_gradcheck(shape, dim, alpha):
    X = _separated(shape, dim=dim, seed=11)
    a = torch.tensor(alpha, dtype=F64, requires_grad=True)
    fast = dim != -1 or alpha not in (0.75, 1.5, 3.0)  # full Jacobians for a few alphas
    _check(lambda X, a: ours.entmax_bisect(X, alpha=a, dim=dim), (X, a), fast=fast)


@pytest.mark.parametrize(("shape", "dim"), [((4, 5), -1), ((4, 5), 0), ((2, 5, 2), 1)], ids=_ids)
def test_entmax_bisect_per_row_alpha_gradcheck(shape, dim):
    X = _separated(shape, dim=dim, seed=13)
    a = _param(_param_shape(shape, dim), [0.75, 1.3, 1.75, 2.5])
    _check(lambda X, a: ours.entmax_bisect(X, alpha=a, dim=dim), (X, a), fast=dim != -1)


def test_entmax_bisect_alpha_gradcheck_alpha_only():
    X = _separated((3, 6), seed=17).detach()
    a = _param([3, 1], [0.8, 1.6, 2.4])
    _check(lambda a: ours.entmax_bisect(X, alpha=a), (a,))


def test_entmax_bisect_module_tensor_alpha_gradcheck():
    X = _separated((3, 5), seed=19)
    a = _param([3, 1], [1.2, 1.9, 2.6])
    _check(lambda X, a: ours.EntmaxBisect(alpha=a)(X), (X, a))


@pytest.mark.parametrize("alpha", [1.5, 2.0, 3.0], ids=_ids)
@pytest.mark.parametrize(("shape", "dim"), [((3, 5), -1), ((2, 5, 2), 1)], ids=_ids)
def test_normmax_bisect_scalar_alpha_gradcheck(shape, dim, alpha):
    X = _separated(shape, dim=dim, seed=23)
    a = torch.tensor(alpha, dtype=F64, requires_grad=True)
    _check(lambda X, a: ours.normmax_bisect(X, alpha=a, dim=dim), (X, a), fast=dim != -1)


@pytest.mark.parametrize(("shape", "dim"), [((4, 5), -1), ((4, 5), 0)], ids=_ids)
def test_normmax_bisect_per_row_alpha_gradcheck(shape, dim):
    X = _separated(shape, dim=dim, seed=29)
    a = _param(_param_shape(shape, dim), [1.5, 2.0, 2.5, 3.0])
    _check(lambda X, a: ours.normmax_bisect(X, alpha=a, dim=dim), (X, a), fast=dim != -1)


@pytest.mark.parametrize("budget", [1.5, 2.0, 2.5], ids=_ids)
@pytest.mark.parametrize(("shape", "dim"), [((3, 6), -1), ((2, 6, 2), 1)], ids=_ids)
def test_budget_bisect_scalar_budget_gradcheck(shape, dim, budget):
    X = _separated(shape, dim=dim, seed=31, spread=0.3)
    b = torch.tensor(budget, dtype=F64, requires_grad=True)
    _check(lambda X, b: ours.budget_bisect(X, budget=b, dim=dim), (X, b), fast=dim != -1)


@pytest.mark.parametrize(("shape", "dim"), [((3, 6), -1), ((6, 3), 0)], ids=_ids)
def test_budget_bisect_per_row_budget_gradcheck(shape, dim):
    X = _separated(shape, dim=dim, seed=37, spread=0.3)
    b = _param(_param_shape(shape, dim), [1.5, 2.2, 3.4])
    _check(lambda X, b: ours.budget_bisect(X, budget=b, dim=dim), (X, b))


# --------------------------------------------------------------------------------------
# losses
# --------------------------------------------------------------------------------------

LOSSES = {
    "sparsemax_loss": lambda X, t: ours_losses.sparsemax_loss(X, t),
    "sparsemax_loss_k1": lambda X, t: ours_losses.sparsemax_loss(X, t, k=1),
    "entmax15_loss": lambda X, t: ours_losses.entmax15_loss(X, t),
    "entmax15_loss_k1": lambda X, t: ours_losses.entmax15_loss(X, t, k=1),
    "sparsemax_bisect_loss": lambda X, t: ours_losses.sparsemax_bisect_loss(X, t),
    "entmax_bisect_loss_0.75": lambda X, t: ours_losses.entmax_bisect_loss(X, t, alpha=0.75),
    "entmax_bisect_loss_1.5": lambda X, t: ours_losses.entmax_bisect_loss(X, t, alpha=1.5),
    "entmax_bisect_loss_2.5": lambda X, t: ours_losses.entmax_bisect_loss(X, t, alpha=2.5),
    "normmax_bisect_loss_1.5": lambda X, t: ours_losses.normmax_bisect_loss(X, t, alpha=1.5),
    "normmax_bisect_loss_2": lambda X, t: ours_losses.normmax_bisect_loss(X, t),
    "normmax_bisect_loss_3": lambda X, t: ours_losses.normmax_bisect_loss(X, t, alpha=3.0),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_gradcheck_integer_target(name):
    X = _separated((4, 5), seed=41)
    target = torch.tensor([0, 3, 4, 1])
    fn = LOSSES[name]
    _check(lambda X: fn(X, target), (X,))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_gradcheck_distribution_target(name, sparse):
    X = _separated((4, 5), seed=43)
    q = _distribution(4, 5, seed=43, sparse=sparse)
    fn = LOSSES[name]
    _check(lambda X: fn(X, q), (X,), fast=not sparse)


@pytest.mark.parametrize("alpha", [0.75, 1.5, 3.0], ids=_ids)
@pytest.mark.parametrize("target_kind", ["index", "distribution"])
def test_entmax_bisect_loss_scalar_alpha_gradcheck(target_kind, alpha):
    X = _separated((4, 5), seed=47)
    target = torch.tensor([2, 0, 4, 1]) if target_kind == "index" else _distribution(4, 5, 47)
    a = torch.tensor(alpha, dtype=F64, requires_grad=True)
    fast = target_kind == "distribution" or alpha != 1.5  # full Jacobian once
    _check(lambda X, a: ours_losses.entmax_bisect_loss(X, target, alpha=a), (X, a), fast=fast)


@pytest.mark.parametrize("target_kind", ["index", "distribution"])
def test_entmax_bisect_loss_per_row_alpha_gradcheck(target_kind):
    X = _separated((4, 5), seed=53)
    target = torch.tensor([1, 1, 3, 0]) if target_kind == "index" else _distribution(4, 5, 53)
    a = _param([4, 1], [0.75, 1.3, 1.8, 2.6])
    _check(lambda X, a: ours_losses.entmax_bisect_loss(X, target, alpha=a), (X, a))


@pytest.mark.parametrize("alpha", [1.5, 2.0, 3.0], ids=_ids)
@pytest.mark.parametrize("target_kind", ["index", "distribution"])
def test_normmax_bisect_loss_scalar_alpha_gradcheck(target_kind, alpha):
    X = _separated((4, 5), seed=59)
    target = torch.tensor([4, 0, 2, 2]) if target_kind == "index" else _distribution(4, 5, 59)
    a = torch.tensor(alpha, dtype=F64, requires_grad=True)
    fast = target_kind == "distribution"
    _check(lambda X, a: ours_losses.normmax_bisect_loss(X, target, alpha=a), (X, a), fast=fast)


@pytest.mark.parametrize("target_kind", ["index", "distribution"])
def test_normmax_bisect_loss_per_row_alpha_gradcheck(target_kind):
    X = _separated((4, 5), seed=61)
    target = torch.tensor([0, 1, 2, 3]) if target_kind == "index" else _distribution(4, 5, 61)
    a = _param([4, 1], [1.5, 2.0, 2.5, 3.0])
    _check(lambda X, a: ours_losses.normmax_bisect_loss(X, target, alpha=a), (X, a))


@pytest.mark.parametrize(
    ("cls_name", "kwargs"),
    [
        ("SparsemaxLoss", {"k": 2}),
        ("Entmax15Loss", {}),
        ("SparsemaxBisectLoss", {}),
        ("EntmaxBisectLoss", {"alpha": 1.3}),
        ("NormmaxBisectLoss", {"alpha": 2.5}),
    ],
    ids=_ids,
)
@pytest.mark.parametrize("reduction", ["sum", "elementwise_mean", "none"])
def test_loss_module_gradcheck(cls_name, kwargs, reduction):
    X = _separated((5, 4), seed=67)
    target = torch.tensor([0, 2, 3, 2, 1])
    mod = getattr(ours_losses, cls_name)(**kwargs, ignore_index=2, reduction=reduction)
    _check(lambda X: mod(X, target), (X,), second_order=reduction == "sum")
