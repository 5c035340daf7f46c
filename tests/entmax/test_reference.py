"""Agreement with the reference ``entmax==1.3`` package (values and gradients).

Only the configurations where the reference is known to be right are compared here:
positive dims (and -1) with ``k``, finite inputs, alpha away from 1, non-negative
``ignore_index``, explicit ``n_iter=50`` for the bisection-based sparsemax.
"""

import entmax as ref
import pytest
import torch

import sk_entmax.entmax as ours
from sk_entmax.entmax import losses as ours_losses

F64 = torch.float64

# Sort-based maps are exact up to rounding; bisection-based ones agree to ~n_iter bits.
SORT_TOL = {"atol": 1e-10, "rtol": 1e-10}
BISECT_TOL = {"atol": 1e-6, "rtol": 1e-6}

SHAPES = [(6,), (4, 5), (5, 1), (3, 4, 5), (2, 3, 4, 3)]
SHAPE_DIMS = [(shape, dim) for shape in SHAPES for dim in [*range(len(shape)), -1]]
# Budget needs more than `budget` entries along dim.
BUDGET_SHAPE_DIMS = [(shape, dim) for shape, dim in SHAPE_DIMS if shape[dim] >= 4]

K_VALUES = [None, 1, 2, 3, 100]
ALPHAS = [0.5, 0.8, 1.25, 1.5, 2.0, 3.0]
NORMMAX_ALPHAS = [1.5, 2.0, 3.0]

LOSS_SHAPES = [(4, 1), (3, 5), (6, 4), (2, 9)]


def _ids(val):
    return str(val)


def _randn(shape, seed=0, scale=2.0, dtype=F64):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=gen, dtype=dtype) * scale


def _targets(n, n_classes, seed=0):
    gen = torch.Generator().manual_seed(seed + 1000)
    return torch.randint(0, n_classes, (n,), generator=gen)


def _param_shape(shape, dim):
    pshape = list(shape)
    pshape[dim] = 1
    return pshape


def _value_and_grads(fn, inputs, seed=123):
    """Evaluate ``fn(*inputs)`` and its vector-Jacobian product with a random cotangent."""
    inputs = [t.detach().clone().requires_grad_(True) for t in inputs]
    out = fn(*inputs)
    gen = torch.Generator().manual_seed(seed)
    cot = torch.randn(out.shape, generator=gen, dtype=out.dtype)
    grads = torch.autograd.grad(out, inputs, cot)
    return out.detach(), grads


def _compare(fn_ours, fn_ref, inputs, tol):
    out, grads = _value_and_grads(fn_ours, inputs)
    out_ref, grads_ref = _value_and_grads(fn_ref, inputs)
    assert out.shape == out_ref.shape
    assert out.dtype == out_ref.dtype
    torch.testing.assert_close(out, out_ref, **tol)
    for grad, grad_ref in zip(grads, grads_ref):
        assert grad.shape == grad_ref.shape
        torch.testing.assert_close(grad, grad_ref, **tol)


# --------------------------------------------------------------------------------------
# sort-based mappings
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", K_VALUES, ids=_ids)
@pytest.mark.parametrize(("shape", "dim"), SHAPE_DIMS, ids=_ids)
def test_sparsemax_matches_reference(shape, dim, k):
    X = _randn(shape, seed=len(shape) + dim)
    _compare(
        lambda X: ours.sparsemax(X, dim=dim, k=k),
        lambda X: ref.sparsemax(X, dim=dim, k=k),
        [X],
        SORT_TOL,
    )


@pytest.mark.parametrize("k", K_VALUES, ids=_ids)
@pytest.mark.parametrize(("shape", "dim"), SHAPE_DIMS, ids=_ids)
def test_entmax15_matches_reference(shape, dim, k):
    X = _randn(shape, seed=len(shape) + dim + 7)
    _compare(
        lambda X: ours.entmax15(X, dim=dim, k=k),
        lambda X: ref.entmax15(X, dim=dim, k=k),
        [X],
        SORT_TOL,
    )


@pytest.mark.parametrize("fn_name", ["sparsemax", "entmax15"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=_ids)
def test_sort_based_matches_reference_dtypes(fn_name, dtype):
    X = _randn((5, 8), seed=3, dtype=dtype)
    tol = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float32 else SORT_TOL
    _compare(getattr(ours, fn_name), getattr(ref, fn_name), [X], tol)


# --------------------------------------------------------------------------------------
# bisection-based mappings
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", ALPHAS, ids=_ids)
@pytest.mark.parametrize(("shape", "dim"), SHAPE_DIMS, ids=_ids)
def test_entmax_bisect_matches_reference(shape, dim, alpha):
    X = _randn(shape, seed=len(shape) + dim + 11)
    assert torch.isfinite(ref.entmax_bisect(X, alpha=alpha, dim=dim)).all()
    _compare(
        lambda X: ours.entmax_bisect(X, alpha=alpha, dim=dim),
        lambda X: ref.entmax_bisect(X, alpha=alpha, dim=dim),
        [X],
        BISECT_TOL,
    )


@pytest.mark.parametrize("ensure_sum_one", [True, False])
@pytest.mark.parametrize("n_iter", [30, 50, 80])
@pytest.mark.parametrize("alpha", [1.25, 2.0], ids=_ids)
def test_entmax_bisect_n_iter_and_ensure_sum_one_match_reference(alpha, n_iter, ensure_sum_one):
    X = _randn((4, 6), seed=n_iter)
    kwargs = {"alpha": alpha, "n_iter": n_iter, "ensure_sum_one": ensure_sum_one}
    _compare(
        lambda X: ours.entmax_bisect(X, **kwargs),
        lambda X: ref.entmax_bisect(X, **kwargs),
        [X],
        BISECT_TOL,
    )


@pytest.mark.parametrize("alpha", ALPHAS, ids=_ids)
@pytest.mark.parametrize(("shape", "dim"), [((4, 5), -1), ((4, 5), 0), ((3, 4, 5), 1)], ids=_ids)
def test_entmax_bisect_scalar_tensor_alpha_grad_matches_reference(shape, dim, alpha):
    X = _randn(shape, seed=5)
    alpha_t = torch.tensor(alpha, dtype=F64)
    assert torch.isfinite(ref.entmax_bisect(X, alpha=alpha_t, dim=dim)).all()
    _compare(
        lambda X, a: ours.entmax_bisect(X, alpha=a, dim=dim),
        lambda X, a: ref.entmax_bisect(X, alpha=a, dim=dim),
        [X, alpha_t],
        BISECT_TOL,
    )


@pytest.mark.parametrize(("shape", "dim"), SHAPE_DIMS, ids=_ids)
def test_entmax_bisect_per_row_alpha_matches_reference(shape, dim):
    X = _randn(shape, seed=len(shape) + dim + 17)
    gen = torch.Generator().manual_seed(2)
    choices = torch.tensor([0.6, 0.8, 1.3, 1.5, 1.8, 2.0, 2.6, 3.0], dtype=F64)
    pshape = _param_shape(shape, dim)
    alpha = choices[torch.randint(0, len(choices), pshape, generator=gen)]
    assert torch.isfinite(ref.entmax_bisect(X, alpha=alpha, dim=dim)).all()
    _compare(
        lambda X, a: ours.entmax_bisect(X, alpha=a, dim=dim),
        lambda X, a: ref.entmax_bisect(X, alpha=a, dim=dim),
        [X, alpha],
        BISECT_TOL,
    )


@pytest.mark.parametrize(("shape", "dim"), SHAPE_DIMS, ids=_ids)
def test_sparsemax_bisect_matches_reference(shape, dim):
    X = _randn(shape, seed=len(shape) + dim + 23)
    _compare(
        lambda X: ours.sparsemax_bisect(X, dim=dim, n_iter=50),
        lambda X: ref.sparsemax_bisect(X, dim=dim, n_iter=50),
        [X],
        BISECT_TOL,
    )


@pytest.mark.parametrize("alpha", NORMMAX_ALPHAS, ids=_ids)
@pytest.mark.parametrize(("shape", "dim"), SHAPE_DIMS, ids=_ids)
def test_normmax_bisect_matches_reference(shape, dim, alpha):
    X = _randn(shape, seed=len(shape) + dim + 29)
    _compare(
        lambda X: ours.normmax_bisect(X, alpha=alpha, dim=dim),
        lambda X: ref.normmax_bisect(X, alpha=alpha, dim=dim),
        [X],
        BISECT_TOL,
    )


def test_normmax_bisect_per_row_alpha_matches_reference():
    X = _randn((2, 6, 3), seed=31)
    alpha = torch.tensor([[[1.5, 2.0, 3.0]], [[2.5, 1.7, 2.0]]], dtype=F64)
    _compare(
        lambda X: ours.normmax_bisect(X, alpha=alpha, dim=1),
        lambda X: ref.normmax_bisect(X, alpha=alpha, dim=1),
        [X],
        BISECT_TOL,
    )


@pytest.mark.parametrize("budget", [1.0, 2.0, 2.5, 3.0], ids=_ids)
@pytest.mark.parametrize(("shape", "dim"), BUDGET_SHAPE_DIMS, ids=_ids)
def test_budget_bisect_matches_reference(shape, dim, budget):
    # a small scale so that several entries sit strictly inside (0, 1)
    X = _randn(shape, seed=len(shape) + dim + 37, scale=0.7)
    torch.testing.assert_close(
        ours.budget_bisect(X, budget=budget, dim=dim),
        ref.budget_bisect(X, budget=budget, dim=dim),
        **BISECT_TOL,
    )
    # the reference backward only handles dim=-1 (it squeezes the wrong axis otherwise),
    # so its gradients are taken along the last axis of a transposed copy
    _compare(
        lambda X: ours.budget_bisect(X, budget=budget, dim=dim),
        lambda X: ref.budget_bisect(X.movedim(dim, -1), budget=budget).movedim(-1, dim),
        [X],
        BISECT_TOL,
    )


def test_budget_bisect_per_row_budget_matches_reference():
    X = _randn((3, 7), seed=41, scale=0.7)
    budget = torch.tensor([[1.5], [2.0], [3.5]], dtype=F64)
    _compare(
        lambda X: ours.budget_bisect(X, budget=budget),
        lambda X: ref.budget_bisect(X, budget=budget),
        [X],
        BISECT_TOL,
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=_ids)
@pytest.mark.parametrize(
    "fn_name", ["entmax_bisect", "sparsemax_bisect", "normmax_bisect", "budget_bisect"]
)
def test_bisect_matches_reference_dtypes(fn_name, dtype):
    X = _randn((5, 8), seed=43, dtype=dtype, scale=1.0)
    tol = {"atol": 1e-5, "rtol": 1e-4} if dtype == torch.float32 else BISECT_TOL
    _compare(getattr(ours, fn_name), getattr(ref, fn_name), [X], tol)


# --------------------------------------------------------------------------------------
# training=False
# --------------------------------------------------------------------------------------

TRAINING_FNS = {
    "sparsemax": lambda X, dim, training: ours.sparsemax(X, dim=dim, training=training),
    "sparsemax_k2": lambda X, dim, training: ours.sparsemax(X, dim=dim, k=2, training=training),
    "entmax15": lambda X, dim, training: ours.entmax15(X, dim=dim, training=training),
    "entmax15_k2": lambda X, dim, training: ours.entmax15(X, dim=dim, k=2, training=training),
    "entmax_bisect": lambda X, dim, training: ours.entmax_bisect(
        X, alpha=1.3, dim=dim, training=training
    ),
    "entmax_bisect_alpha_lt_1": lambda X, dim, training: ours.entmax_bisect(
        X, alpha=0.7, dim=dim, training=training
    ),
    "sparsemax_bisect": lambda X, dim, training: ours.sparsemax_bisect(
        X, dim=dim, training=training
    ),
}

TRAINING_REFS = {
    "sparsemax": lambda X, dim: ref.sparsemax(X, dim=dim),
    "sparsemax_k2": lambda X, dim: ref.sparsemax(X, dim=dim, k=2),
    "entmax15": lambda X, dim: ref.entmax15(X, dim=dim),
    "entmax15_k2": lambda X, dim: ref.entmax15(X, dim=dim, k=2),
    "entmax_bisect": lambda X, dim: ref.entmax_bisect(X, alpha=1.3, dim=dim),
    "entmax_bisect_alpha_lt_1": lambda X, dim: ref.entmax_bisect(X, alpha=0.7, dim=dim),
    "sparsemax_bisect": lambda X, dim: ref.sparsemax_bisect(X, dim=dim),
}


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("name", sorted(TRAINING_FNS))
def test_training_false_gives_same_values(name, dim, requires_grad):
    X = _randn((4, 6), seed=dim + 3).requires_grad_(requires_grad)
    fn = TRAINING_FNS[name]
    out_train = fn(X, dim, True).detach()
    out_eval = fn(X, dim, False).detach()
    torch.testing.assert_close(out_eval, out_train, atol=1e-10, rtol=1e-10)
    tol = BISECT_TOL if "bisect" in name else SORT_TOL
    torch.testing.assert_close(out_eval, TRAINING_REFS[name](X.detach(), dim), **tol)


@pytest.mark.parametrize("name", sorted(TRAINING_FNS))
def test_training_false_under_no_grad(name):
    X = _randn((3, 5), seed=9)
    with torch.no_grad():
        out_eval = TRAINING_FNS[name](X, -1, False)
    out_train = TRAINING_FNS[name](X, -1, True)
    torch.testing.assert_close(out_eval, out_train, atol=1e-10, rtol=1e-10)


# --------------------------------------------------------------------------------------
# module classes (mappings)
# --------------------------------------------------------------------------------------

MAPPING_MODULES = [
    ("Sparsemax", {}),
    ("Sparsemax", {"dim": 0, "k": 2}),
    ("Sparsemax", {"dim": 1, "k": 1}),
    ("Entmax15", {}),
    ("Entmax15", {"dim": 0, "k": 3}),
    ("Entmax15", {"dim": -1, "k": 2}),
    ("EntmaxBisect", {}),
    ("EntmaxBisect", {"alpha": 1.25, "dim": 0, "n_iter": 40}),
    ("EntmaxBisect", {"alpha": 0.8, "dim": 1}),
    ("EntmaxBisect", {"alpha": 3.0, "dim": -1, "n_iter": 60}),
    ("SparsemaxBisect", {"dim": 0, "n_iter": 50}),
    ("NormmaxBisect", {}),
    ("NormmaxBisect", {"alpha": 3.0, "dim": 0, "n_iter": 60}),
    ("BudgetBisect", {}),
    ("BudgetBisect", {"budget": 2.5, "dim": 0, "n_iter": 60}),
]


@pytest.mark.parametrize(("cls_name", "kwargs"), MAPPING_MODULES, ids=_ids)
def test_mapping_modules_match_reference(cls_name, kwargs):
    X = _randn((5, 6), seed=47, scale=1.0)
    mod = getattr(ours, cls_name)(**kwargs)
    assert isinstance(mod, torch.nn.Module)
    ref_kwargs = dict(kwargs)
    if cls_name == "SparsemaxBisect":
        ref_kwargs.setdefault("n_iter", 50)  # the reference default (None) is broken
    ref_mod = getattr(ref, cls_name)(**ref_kwargs)
    tol = BISECT_TOL if "Bisect" in cls_name else SORT_TOL
    _compare(mod, ref_mod, [X], tol)


def test_sparsemax_bisect_module_default():
    X = _randn((5, 6), seed=53, scale=1.0)
    _compare(ours.SparsemaxBisect(), ref.SparsemaxBisect(n_iter=50), [X], BISECT_TOL)


def test_entmax_bisect_module_tensor_alpha_grad_matches_reference():
    X = _randn((4, 6), seed=59)
    alpha = torch.tensor([[1.2], [1.6], [2.2], [0.7]], dtype=F64)
    # gradients w.r.t. alpha through the module (alpha captured as an attribute)
    a_ours = alpha.clone().requires_grad_(True)
    a_ref = alpha.clone().requires_grad_(True)
    Xo = X.clone().requires_grad_(True)
    Xr = X.clone().requires_grad_(True)
    out_ours = ours.EntmaxBisect(alpha=a_ours)(Xo)
    out_ref = ref.EntmaxBisect(alpha=a_ref)(Xr)
    cot = _randn(out_ref.shape, seed=61)
    g_ours = torch.autograd.grad(out_ours, [Xo, a_ours], cot)
    g_ref = torch.autograd.grad(out_ref, [Xr, a_ref], cot)
    torch.testing.assert_close(out_ours, out_ref, **BISECT_TOL)
    for go, gr in zip(g_ours, g_ref):
        torch.testing.assert_close(go, gr, **BISECT_TOL)


# --------------------------------------------------------------------------------------
# losses (functions)
# --------------------------------------------------------------------------------------


def test_loss_functions_exported_from_both_paths():
    for name in [
        "sparsemax_loss",
        "entmax15_loss",
        "sparsemax_bisect_loss",
        "entmax_bisect_loss",
        "normmax_bisect_loss",
        "SparsemaxLoss",
        "Entmax15Loss",
        "SparsemaxBisectLoss",
        "EntmaxBisectLoss",
        "NormmaxBisectLoss",
    ]:
        assert getattr(ours, name) is getattr(ours_losses, name)


@pytest.mark.parametrize("k", K_VALUES, ids=_ids)
@pytest.mark.parametrize("shape", LOSS_SHAPES, ids=_ids)
@pytest.mark.parametrize("loss_name", ["sparsemax_loss", "entmax15_loss"])
def test_sort_based_losses_match_reference(loss_name, shape, k):
    X = _randn(shape, seed=shape[1] + 67)
    y = _targets(shape[0], shape[1], seed=shape[1])
    fn, fn_ref = getattr(ours_losses, loss_name), getattr(ref, loss_name)
    _compare(lambda X: fn(X, y, k=k), lambda X: fn_ref(X, y, k=k), [X], SORT_TOL)
    # positional k as in the reference signature
    torch.testing.assert_close(fn(X, y, k), fn_ref(X, y, k), **SORT_TOL)


@pytest.mark.parametrize("shape", LOSS_SHAPES, ids=_ids)
def test_sparsemax_bisect_loss_matches_reference(shape):
    X = _randn(shape, seed=shape[1] + 71)
    y = _targets(shape[0], shape[1], seed=shape[1] + 1)
    _compare(
        lambda X: ours_losses.sparsemax_bisect_loss(X, y, n_iter=50),
        lambda X: ref.sparsemax_bisect_loss(X, y, n_iter=50),
        [X],
        BISECT_TOL,
    )


@pytest.mark.parametrize("alpha", ALPHAS, ids=_ids)
@pytest.mark.parametrize("shape", LOSS_SHAPES, ids=_ids)
def test_entmax_bisect_loss_matches_reference(shape, alpha):
    X = _randn(shape, seed=shape[1] + 73)
    y = _targets(shape[0], shape[1], seed=shape[1] + 2)
    assert torch.isfinite(ref.entmax_bisect_loss(X, y, alpha=alpha)).all()
    _compare(
        lambda X: ours_losses.entmax_bisect_loss(X, y, alpha=alpha),
        lambda X: ref.entmax_bisect_loss(X, y, alpha=alpha),
        [X],
        BISECT_TOL,
    )


@pytest.mark.parametrize("n_iter", [30, 50])
def test_entmax_bisect_loss_n_iter_matches_reference(n_iter):
    X = _randn((3, 6), seed=79)
    y = _targets(3, 6, seed=79)
    torch.testing.assert_close(
        ours_losses.entmax_bisect_loss(X, y, 1.7, n_iter),
        ref.entmax_bisect_loss(X, y, 1.7, n_iter),
        **BISECT_TOL,
    )


@pytest.mark.parametrize("alpha", NORMMAX_ALPHAS, ids=_ids)
@pytest.mark.parametrize("shape", LOSS_SHAPES, ids=_ids)
def test_normmax_bisect_loss_matches_reference(shape, alpha):
    X = _randn(shape, seed=shape[1] + 83)
    y = _targets(shape[0], shape[1], seed=shape[1] + 3)
    _compare(
        lambda X: ours_losses.normmax_bisect_loss(X, y, alpha=alpha),
        lambda X: ref.normmax_bisect_loss(X, y, alpha=alpha),
        [X],
        BISECT_TOL,
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=_ids)
@pytest.mark.parametrize(
    "loss_name",
    [
        "sparsemax_loss",
        "entmax15_loss",
        "sparsemax_bisect_loss",
        "entmax_bisect_loss",
        "normmax_bisect_loss",
    ],
)
def test_losses_match_reference_dtypes(loss_name, dtype):
    X = _randn((6, 5), seed=89, dtype=dtype)
    y = _targets(6, 5, seed=89)
    fn, fn_ref = getattr(ours_losses, loss_name), getattr(ref, loss_name)
    tol = {"atol": 1e-5, "rtol": 1e-4} if dtype == torch.float32 else BISECT_TOL
    _compare(lambda X: fn(X, y), lambda X: fn_ref(X, y), [X], tol)


# --------------------------------------------------------------------------------------
# losses (modules)
# --------------------------------------------------------------------------------------

LOSS_MODULES = [
    ("SparsemaxLoss", {}),
    ("SparsemaxLoss", {"k": 2}),
    ("Entmax15Loss", {}),
    ("Entmax15Loss", {"k": 1}),
    ("Entmax15Loss", {"k": None}),
    ("SparsemaxBisectLoss", {}),
    ("SparsemaxBisectLoss", {"n_iter": 50}),
    ("EntmaxBisectLoss", {}),
    ("EntmaxBisectLoss", {"alpha": 2.5, "n_iter": 60}),
    ("EntmaxBisectLoss", {"alpha": 0.8}),
    ("NormmaxBisectLoss", {}),
    ("NormmaxBisectLoss", {"alpha": 3.0, "n_iter": 40}),
]


@pytest.mark.parametrize("ignore_index", [-100, 1])
@pytest.mark.parametrize("reduction", ["sum", "elementwise_mean", "none"])
@pytest.mark.parametrize(("cls_name", "kwargs"), LOSS_MODULES, ids=_ids)
def test_loss_modules_match_reference(cls_name, kwargs, reduction, ignore_index):
    X = _randn((8, 5), seed=97)
    y = torch.tensor([1, 0, 4, 1, 2, 3, 1, 0])  # class 1 appears, and so do others
    mod = getattr(ours_losses, cls_name)(**kwargs, ignore_index=ignore_index, reduction=reduction)
    ref_mod = getattr(ref, cls_name)(**kwargs, ignore_index=ignore_index, reduction=reduction)
    assert isinstance(mod, torch.nn.Module)
    tol = BISECT_TOL if "Bisect" in cls_name else SORT_TOL
    _compare(lambda X: mod(X, y), lambda X: ref_mod(X, y), [X], tol)

    out = mod(X, y)
    if reduction == "none":
        assert out.shape == (8,)
        if ignore_index == 1:
            assert torch.all(out[y == 1] == 0)
    else:
        assert out.dim() == 0


@pytest.mark.parametrize(("cls_name", "kwargs"), LOSS_MODULES, ids=_ids)
def test_loss_modules_ignore_index_grad_is_zero_on_ignored_rows(cls_name, kwargs):
    X = _randn((6, 4), seed=101).requires_grad_(True)
    y = torch.tensor([2, 0, 2, 1, 3, 2])
    mod = getattr(ours_losses, cls_name)(**kwargs, ignore_index=2, reduction="sum")
    mod(X, y).backward()
    assert torch.all(X.grad[y == 2] == 0)
    assert torch.any(X.grad[y != 2] != 0)
