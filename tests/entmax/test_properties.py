"""Property-based tests (hypothesis) of the mappings and the Fenchel-Young losses."""

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import sk_entmax.entmax as ours
from sk_entmax.entmax import losses as ours_losses

F64 = torch.float64
SETTINGS = settings(max_examples=30, deadline=None)
TOL = {"atol": 1e-6, "rtol": 1e-6}

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def matrices(draw, min_cols=1, max_cols=8, max_rows=4):
    rows = draw(st.integers(1, max_rows))
    cols = draw(st.integers(min_cols, max_cols))
    arr = draw(hnp.arrays(np.float64, (rows, cols), elements=finite))
    return torch.from_numpy(arr)


@st.composite
def matrix_and_dim(draw, min_size=1, max_size=8):
    """A 2-d float64 tensor and an axis (in any spelling) with ``min_size..max_size`` entries."""
    dim = draw(st.sampled_from([0, 1, -1, -2]))
    along = draw(st.integers(min_size, max_size))
    other = draw(st.integers(1, 4))
    shape = (along, other) if dim % 2 == 0 else (other, along)
    arr = draw(hnp.arrays(np.float64, shape, elements=finite))
    return torch.from_numpy(arr), dim


MAPPINGS = {
    "sparsemax": lambda X, dim: ours.sparsemax(X, dim=dim),
    "entmax15": lambda X, dim: ours.entmax15(X, dim=dim),
    "sparsemax_bisect": lambda X, dim: ours.sparsemax_bisect(X, dim=dim),
    "entmax_bisect_0.75": lambda X, dim: ours.entmax_bisect(X, alpha=0.75, dim=dim),
    "entmax_bisect_1.25": lambda X, dim: ours.entmax_bisect(X, alpha=1.25, dim=dim),
    "entmax_bisect_1.5": lambda X, dim: ours.entmax_bisect(X, alpha=1.5, dim=dim),
    "entmax_bisect_3": lambda X, dim: ours.entmax_bisect(X, alpha=3.0, dim=dim),
    "normmax_bisect_1.5": lambda X, dim: ours.normmax_bisect(X, alpha=1.5, dim=dim),
    "normmax_bisect_2": lambda X, dim: ours.normmax_bisect(X, alpha=2.0, dim=dim),
    "normmax_bisect_3": lambda X, dim: ours.normmax_bisect(X, alpha=3.0, dim=dim),
}


# --------------------------------------------------------------------------------------
# mappings
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MAPPINGS))
@SETTINGS
@given(data=matrix_and_dim())
def test_output_on_simplex(name, data):
    X, dim = data
    P = MAPPINGS[name](X, dim)
    assert P.shape == X.shape
    assert P.dtype == X.dtype
    assert torch.isfinite(P).all()
    assert (P >= 0).all()
    torch.testing.assert_close(P.sum(dim), torch.ones_like(P.sum(dim)), **TOL)


@SETTINGS
@given(X=matrices())
def test_output_on_simplex_float32(X):
    for name, fn in MAPPINGS.items():
        P = fn(X.float(), -1)
        assert P.dtype == torch.float32, name
        assert torch.isfinite(P).all(), name
        assert (P >= 0).all(), name
        ones = torch.ones_like(P.sum(-1))
        torch.testing.assert_close(P.sum(-1), ones, atol=1e-4, rtol=1e-4, msg=name)


@pytest.mark.parametrize("name", list(MAPPINGS))
@SETTINGS
@given(data=matrix_and_dim(), shift=finite, perm_seed=st.integers(0, 2**16))
def test_shift_invariance_and_permutation_equivariance(name, data, shift, perm_seed):
    X, dim = data
    fn = MAPPINGS[name]
    P = fn(X, dim)
    # a different constant per slice, plus a common one
    per_row = torch.linspace(-3, 3, X.numel() // X.shape[dim], dtype=F64)
    per_row = per_row.reshape([*X.shape[: dim % 2], 1, *X.shape[dim % 2 + 1 :]])
    torch.testing.assert_close(fn(X + per_row + shift, dim), P, **TOL)
    gen = torch.Generator().manual_seed(perm_seed)
    perm = torch.randperm(X.shape[dim], generator=gen)
    torch.testing.assert_close(
        fn(X.index_select(dim, perm), dim), P.index_select(dim, perm), **TOL
    )


@pytest.mark.parametrize("fn_name", ["sparsemax", "entmax15"])
@SETTINGS
@given(data=matrix_and_dim(), k=st.sampled_from([1, 2, 3, 5, 100]))
def test_partial_sort_k_does_not_change_result(fn_name, data, k):
    X, dim = data
    fn = getattr(ours, fn_name)
    torch.testing.assert_close(fn(X, dim=dim, k=k), fn(X, dim=dim), atol=1e-10, rtol=1e-10)


@SETTINGS
@given(data=matrix_and_dim())
def test_sparsemax_sort_and_bisection_agree(data):
    X, dim = data
    expected = ours.sparsemax(X, dim=dim)
    torch.testing.assert_close(ours.sparsemax_bisect(X, dim=dim), expected, **TOL)
    torch.testing.assert_close(ours.entmax_bisect(X, alpha=2.0, dim=dim), expected, **TOL)
    alpha = torch.tensor(2.0, dtype=F64)
    torch.testing.assert_close(ours.entmax_bisect(X, alpha=alpha, dim=dim), expected, **TOL)


@SETTINGS
@given(data=matrix_and_dim())
def test_entmax15_sort_and_bisection_agree(data):
    X, dim = data
    expected = ours.entmax15(X, dim=dim)
    torch.testing.assert_close(ours.entmax_bisect(X, alpha=1.5, dim=dim), expected, **TOL)


@SETTINGS
@given(data=matrix_and_dim())
def test_entmax_bisect_alpha_one_is_softmax(data):
    X, dim = data
    expected = torch.softmax(X, dim=dim)
    torch.testing.assert_close(ours.entmax_bisect(X, alpha=1.0, dim=dim), expected, **TOL)
    alpha = torch.tensor(1.0, dtype=F64)
    torch.testing.assert_close(ours.entmax_bisect(X, alpha=alpha, dim=dim), expected, **TOL)


@SETTINGS
@given(X=matrices(max_rows=6), choices=st.lists(st.sampled_from([1.0, 1.5, 2.0]), min_size=6))
def test_entmax_bisect_per_row_alpha_matches_special_cases(X, choices):
    alpha = torch.tensor(choices[: X.shape[0]], dtype=F64).unsqueeze(1)
    P = ours.entmax_bisect(X, alpha=alpha)
    for i, a in enumerate(alpha[:, 0].tolist()):
        if a == 1.0:
            expected = torch.softmax(X[i], dim=-1)
        elif a == 1.5:
            expected = ours.entmax15(X[i])
        else:
            expected = ours.sparsemax(X[i])
        torch.testing.assert_close(P[i], expected, **TOL)


@st.composite
def budget_inputs(draw):
    X, dim = draw(matrix_and_dim(min_size=2))
    d = X.shape[dim]
    budget = draw(st.floats(0.5, d - 0.5))
    return X, dim, budget


@SETTINGS
@given(data=budget_inputs())
def test_budget_bisect_constraints(data):
    X, dim, budget = data
    P = ours.budget_bisect(X, budget=budget, dim=dim)
    assert P.shape == X.shape
    assert torch.isfinite(P).all()
    assert (P >= 0).all()
    assert (P <= 1).all()
    torch.testing.assert_close(P.sum(dim), torch.full_like(P.sum(dim), budget), **TOL)


@SETTINGS
@given(data=budget_inputs(), shift=finite, perm_seed=st.integers(0, 2**16))
def test_budget_bisect_shift_invariance_and_permutation_equivariance(data, shift, perm_seed):
    X, dim, budget = data
    P = ours.budget_bisect(X, budget=budget, dim=dim)
    torch.testing.assert_close(ours.budget_bisect(X + shift, budget=budget, dim=dim), P, **TOL)
    gen = torch.Generator().manual_seed(perm_seed)
    perm = torch.randperm(X.shape[dim], generator=gen)
    got = ours.budget_bisect(X.index_select(dim, perm), budget=budget, dim=dim)
    torch.testing.assert_close(got, P.index_select(dim, perm), **TOL)


# --------------------------------------------------------------------------------------
# losses
# --------------------------------------------------------------------------------------


def _tsallis(alpha):
    def entropy(P):
        return (1 - (P**alpha).sum(-1)) / (alpha * (alpha - 1))

    return entropy


def _norm_entropy(alpha):
    def entropy(P):
        return 1 - (P**alpha).sum(-1) ** (1 / alpha)

    return entropy


# name -> (loss(X, target), mapping(X), the entropy H(p) row-wise, alpha if sparse else None)
LOSSES = {
    "sparsemax_loss": (
        ours_losses.sparsemax_loss,
        ours.sparsemax,
        _tsallis(2.0),
        2.0,
    ),
    "sparsemax_loss_k2": (
        lambda X, t: ours_losses.sparsemax_loss(X, t, k=2),
        ours.sparsemax,
        _tsallis(2.0),
        2.0,
    ),
    "entmax15_loss": (
        ours_losses.entmax15_loss,
        ours.entmax15,
        _tsallis(1.5),
        1.5,
    ),
    "sparsemax_bisect_loss": (
        ours_losses.sparsemax_bisect_loss,
        ours.sparsemax,
        _tsallis(2.0),
        2.0,
    ),
    "entmax_bisect_loss_0.75": (
        lambda X, t: ours_losses.entmax_bisect_loss(X, t, alpha=0.75),
        lambda X: ours.entmax_bisect(X, alpha=0.75),
        _tsallis(0.75),
        None,
    ),
    "entmax_bisect_loss_1.25": (
        lambda X, t: ours_losses.entmax_bisect_loss(X, t, alpha=1.25),
        lambda X: ours.entmax_bisect(X, alpha=1.25),
        _tsallis(1.25),
        1.25,
    ),
    "entmax_bisect_loss_3": (
        lambda X, t: ours_losses.entmax_bisect_loss(X, t, alpha=3.0),
        lambda X: ours.entmax_bisect(X, alpha=3.0),
        _tsallis(3.0),
        3.0,
    ),
    "normmax_bisect_loss_1.5": (
        lambda X, t: ours_losses.normmax_bisect_loss(X, t, alpha=1.5),
        lambda X: ours.normmax_bisect(X, alpha=1.5),
        _norm_entropy(1.5),
        1.5,
    ),
}


@st.composite
def loss_inputs(draw, min_cols=1):
    X = draw(matrices(min_cols=min_cols))
    n, n_classes = X.shape
    target = draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n))
    return X, torch.tensor(target)


@st.composite
def distribution_inputs(draw):
    X = draw(matrices())
    weights = draw(
        hnp.arrays(np.float64, X.shape, elements=st.sampled_from([0.0, 0.1, 0.5, 1.0, 3.0]))
    )
    weights[:, 0] += 0.01  # every row keeps some mass
    Q = torch.from_numpy(weights)
    return X, Q / Q.sum(dim=1, keepdim=True)


@pytest.mark.parametrize("name", list(LOSSES))
@SETTINGS
@given(data=loss_inputs())
def test_loss_integer_target(name, data):
    """Non-negative, equal to the one-hot target's loss and to H(p*) + <p*, X> - X[y]."""
    X, target = data
    fn, mapping, entropy, _ = LOSSES[name]
    loss = fn(X, target)
    assert loss.shape == (X.shape[0],)
    assert torch.isfinite(loss).all()
    assert (loss >= -1e-8).all()
    onehot = torch.nn.functional.one_hot(target, X.shape[1]).to(F64)
    torch.testing.assert_close(fn(X, onehot), loss, **TOL)
    P = mapping(X)
    expected = entropy(P) + (P * X).sum(-1) - X.gather(1, target[:, None])[:, 0]
    torch.testing.assert_close(loss, expected, **TOL)


@pytest.mark.parametrize("name", [n for n, spec in LOSSES.items() if spec[3] is not None])
@SETTINGS
@given(data=loss_inputs())
def test_loss_zero_for_argmax_target_with_large_margin(name, data):
    X, target = data
    fn, mapping, _, alpha = LOSSES[name]
    margin = 2.0 + 1.0 / (alpha - 1.0)  # enough for a one-hot prediction
    X = X.clone()
    rows = torch.arange(X.shape[0])
    X[rows, target] = X.max(dim=1).values + margin
    onehot = torch.nn.functional.one_hot(target, X.shape[1]).to(F64)
    torch.testing.assert_close(mapping(X), onehot)
    for tgt in (target, onehot):
        loss = fn(X, tgt)
        torch.testing.assert_close(loss, torch.zeros_like(loss), atol=1e-7, rtol=0)


@pytest.mark.parametrize("name", list(LOSSES))
@SETTINGS
@given(data=distribution_inputs())
def test_loss_distribution_target(name, data):
    """Non-negative Fenchel-Young loss H(p*) - H(q) + <p* - q, X>, gradient p* - q,
    and zero when the target is the prediction itself."""
    X, Q = data
    fn, mapping, entropy, _ = LOSSES[name]
    X = X.clone().requires_grad_(True)
    loss = fn(X, Q)
    assert loss.shape == (X.shape[0],)
    assert torch.isfinite(loss).all()
    assert (loss >= -1e-8).all()
    P = mapping(X.detach())
    expected = entropy(P) - entropy(Q) + ((P - Q) * X.detach()).sum(-1)
    torch.testing.assert_close(loss.detach(), expected, **TOL)
    (grad,) = torch.autograd.grad(loss.sum(), X)
    torch.testing.assert_close(grad, P - Q, **TOL)
    loss_at_prediction = fn(X.detach(), P)
    torch.testing.assert_close(loss_at_prediction, torch.zeros_like(loss_at_prediction), **TOL)
