"""Hypothesis fuzzing of every mapping and loss on hostile inputs.

tests/entmax/test_properties.py checks the properties on small, well-scaled matrices; here the
inputs are what real data throws at the core: any number of dimensions with size-1 and
zero-size axes, scores across +-1e4, ties, ``-inf`` masks and half precision. Required
everywhere: no NaN from finite input, outputs on the simplex, finite gradients, and the
sort-based solutions (sparsemax, entmax15) agreeing with root finding (sparsemax_bisect,
entmax_bisect at alpha 2 and 1.5).
"""

from __future__ import annotations

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import sk_entmax.entmax as E

SETTINGS = settings(max_examples=12, deadline=None)
F64 = torch.float64

# name -> mapping(X, dim); each maps onto the probability simplex along dim
MAPPINGS = {
    "sparsemax": lambda X, dim: E.sparsemax(X, dim=dim),
    "sparsemax_k2": lambda X, dim: E.sparsemax(X, dim=dim, k=2),
    "entmax15": lambda X, dim: E.entmax15(X, dim=dim),
    "sparsemax_bisect": lambda X, dim: E.sparsemax_bisect(X, dim=dim),
    "entmax_bisect_1.25": lambda X, dim: E.entmax_bisect(X, alpha=1.25, dim=dim),
    "entmax_bisect_1.5": lambda X, dim: E.entmax_bisect(X, alpha=1.5, dim=dim),
    "entmax_bisect_2": lambda X, dim: E.entmax_bisect(X, alpha=2.0, dim=dim),
    "entmax_bisect_3": lambda X, dim: E.entmax_bisect(X, alpha=3.0, dim=dim),
    "entmax_tensor_alpha": lambda X, dim: E.entmax_bisect(
        X, alpha=torch.tensor(1.7, dtype=X.dtype), dim=dim
    ),
    "normmax_bisect_2": lambda X, dim: E.normmax_bisect(X, alpha=2.0, dim=dim),
    "entmax_dispatch_1.7": lambda X, dim: E.entmax(X, alpha=1.7, dim=dim),
    "softmax_via_entmax": lambda X, dim: E.entmax(X, alpha=1.0, dim=dim),
}

# the exact algorithms and their root-finding twins
AGREE = [
    ("sparsemax", "sparsemax_bisect"),
    ("sparsemax", "entmax_bisect_2"),
    ("entmax15", "entmax_bisect_1.5"),
]

# name -> loss(X, target) for class-index targets, with X of shape (n, d)
LOSSES = {
    "sparsemax_loss": E.sparsemax_loss,
    "entmax15_loss": E.entmax15_loss,
    "sparsemax_bisect_loss": E.sparsemax_bisect_loss,
    "entmax_bisect_loss_1.25": lambda X, t: E.entmax_bisect_loss(X, t, alpha=1.25),
    "entmax_bisect_loss_3": lambda X, t: E.entmax_bisect_loss(X, t, alpha=3.0),
    "normmax_bisect_loss_2": lambda X, t: E.normmax_bisect_loss(X, t, alpha=2.0),
    "entmax_loss_1.7": lambda X, t: E.entmax_loss(X, t, alpha=1.7),
    "entmax_loss_1": lambda X, t: E.entmax_loss(X, t, alpha=1.0),
}

# values across +-1e4, with ties made likely by a few repeated values
wide = st.one_of(
    st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from([-1e4, -1.0, 0.0, 0.5, 1.0, 1e4]),
)


@st.composite
def tensors(draw, min_side=0, max_ndim=3, elements=wide):
    """A float64 tensor of 1 to ``max_ndim`` dims, sides 0..4 (so size-1 and zero-size
    axes are common), and an axis to reduce over, in any spelling."""
    ndim = draw(st.integers(1, max_ndim))
    shape = tuple(draw(st.lists(st.integers(min_side, 4), min_size=ndim, max_size=ndim)))
    arr = draw(hnp.arrays(np.float64, shape, elements=elements))
    dim = draw(st.integers(-ndim, ndim - 1))
    return torch.from_numpy(arr), dim


def _check_on_simplex(P, X, dim, atol):
    assert P.shape == X.shape
    assert P.dtype == X.dtype
    assert not torch.isnan(P).any()
    assert (P >= 0).all()
    if P.numel():
        sums = P.double().sum(dim)
        torch.testing.assert_close(sums, torch.ones_like(sums), atol=atol, rtol=0)


@pytest.mark.parametrize("name", list(MAPPINGS))
@SETTINGS
@given(data=tensors())
def test_any_shape_and_scale_stays_on_the_simplex_with_finite_gradients(name, data):
    X, dim = data
    X = X.clone().requires_grad_(True)
    P = MAPPINGS[name](X, dim)
    _check_on_simplex(P.detach(), X.detach(), dim, atol=1e-8)
    (grad,) = torch.autograd.grad((P * torch.linspace(-1, 1, P.numel()).view_as(P)).sum(), X)
    assert grad.shape == X.shape
    assert torch.isfinite(grad).all()


@pytest.mark.parametrize("name", list(MAPPINGS))
@SETTINGS
@given(data=tensors())
def test_float32_across_1e4_stays_on_the_simplex(name, data):
    X, dim = data
    P = MAPPINGS[name](X.float(), dim)
    _check_on_simplex(P, X.float(), dim, atol=1e-4)


@pytest.mark.parametrize(("exact", "root"), AGREE)
@SETTINGS
@given(data=tensors())
def test_sort_and_root_finding_agree_across_1e4_and_ties(exact, root, data):
    X, dim = data
    torch.testing.assert_close(MAPPINGS[root](X, dim), MAPPINGS[exact](X, dim), atol=1e-7, rtol=0)


@SETTINGS
@given(data=tensors(min_side=1), values=st.lists(wide, min_size=1, max_size=3))
def test_ties_get_equal_probability(data, values):
    """Entries with equal scores in a slice get equal probabilities, in every mapping."""
    X, dim = data
    # overwrite every slice with a few repeated values: many ties along dim
    pattern = torch.tensor(values, dtype=F64)[torch.arange(X.shape[dim]) % len(values)]
    shape = [1] * X.ndim
    shape[dim] = -1
    X = X * 0 + pattern.view(shape)
    for name, fn in MAPPINGS.items():
        P = fn(X, dim).movedim(dim, -1).reshape(-1, X.shape[dim])
        for v in values:
            tied = P[:, (pattern == v)]
            torch.testing.assert_close(
                tied, tied[:, :1].expand_as(tied), atol=1e-7, rtol=0, msg=name
            )


@st.composite
def masked(draw):
    """Scores with a random ``-inf`` mask; some rows entirely masked."""
    X, dim = draw(tensors(min_side=1, max_ndim=2))
    mask = draw(hnp.arrays(np.bool_, tuple(X.shape)))
    return X.masked_fill(torch.from_numpy(mask), float("-inf")), torch.from_numpy(mask), dim


@pytest.mark.parametrize("name", list(MAPPINGS))
@SETTINGS
@given(data=masked())
def test_neg_inf_entries_get_zero_and_the_rest_is_the_unmasked_mapping(name, data):
    X, mask, dim = data
    fn = MAPPINGS[name]
    X = X.clone().requires_grad_(True)
    P = fn(X, dim)
    assert not torch.isnan(P).any()
    assert (P[mask] == 0).all()
    (grad,) = torch.autograd.grad(P.sum(), X)
    assert torch.isfinite(grad).all()
    all_masked = mask.all(dim=dim)
    sums = P.detach().sum(dim)
    torch.testing.assert_close(sums[all_masked], torch.zeros_like(sums[all_masked]))
    torch.testing.assert_close(sums[~all_masked], torch.ones_like(sums[~all_masked]))
    # each partly masked slice equals the mapping of its finite entries alone
    Xs, Ps, Ms = (t.detach().movedim(dim, -1).reshape(-1, X.shape[dim]) for t in (X, P, mask))
    for row in range(Xs.shape[0]):
        keep = ~Ms[row]
        if keep.any():
            alone = fn(Xs[row, keep], -1)
            torch.testing.assert_close(Ps[row, keep], alone, atol=1e-7, rtol=0, msg=name)


half_range = st.floats(-6e4, 6e4, allow_nan=False, allow_infinity=False, width=16)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", list(MAPPINGS))
@settings(max_examples=8, deadline=None)
@given(data=tensors(elements=st.one_of(half_range, st.sampled_from([-1.0, 0.0, 1.0]))))
def test_half_precision_returns_its_dtype_on_the_simplex(name, dtype, data):
    X, dim = data
    X = X.to(dtype)
    P = MAPPINGS[name](X, dim)
    _check_on_simplex(P, X, dim, atol=2e-2)
    expected = MAPPINGS[name](X.float(), dim)
    torch.testing.assert_close(P.float(), expected, atol=1e-2, rtol=0)


# --------------------------------------------------------------------------- losses


def _scale(X: torch.Tensor) -> torch.Tensor:
    """1 + the largest finite |score| of each row: losses grow with the scores."""
    return 1 + X.abs().nan_to_num(posinf=0.0).amax(-1)


@st.composite
def loss_inputs(draw, elements=wide):
    """(n, d) scores with n >= 0 rows, targets, and optionally a -inf mask that spares the
    target."""
    n = draw(st.integers(0, 4))
    d = draw(st.integers(1, 5))
    X = torch.from_numpy(draw(hnp.arrays(np.float64, (n, d), elements=elements)))
    target = torch.tensor(draw(st.lists(st.integers(0, d - 1), min_size=n, max_size=n)))
    target = target.long().reshape(n)
    if draw(st.booleans()):
        mask = torch.from_numpy(draw(hnp.arrays(np.bool_, (n, d))))
        mask[torch.arange(n), target] = False
        X = X.masked_fill(mask, float("-inf"))
    return X, target


@pytest.mark.parametrize("name", list(LOSSES))
@SETTINGS
@given(data=loss_inputs())
def test_losses_finite_non_negative_with_finite_gradients(name, data):
    X, target = data
    X = X.clone().requires_grad_(True)
    loss = LOSSES[name](X, target)
    assert loss.shape == (X.shape[0],)
    assert torch.isfinite(loss).all()
    assert (loss >= -1e-8 * _scale(X.detach())).all()
    (grad,) = torch.autograd.grad(loss.sum(), X)
    assert torch.isfinite(grad).all()


@pytest.mark.parametrize("name", list(LOSSES))
@SETTINGS
@given(data=loss_inputs())
def test_losses_take_float32_across_1e4(name, data):
    X, target = data
    loss = LOSSES[name](X.float(), target)
    assert loss.dtype == torch.float32
    assert torch.isfinite(loss).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", list(LOSSES))
@settings(max_examples=8, deadline=None)
@given(data=loss_inputs(elements=st.floats(-100, 100, width=16)))
def test_losses_in_half_precision(name, dtype, data):
    X, target = data
    X = X.to(dtype).requires_grad_(True)
    loss = LOSSES[name](X, target)
    assert loss.dtype == dtype
    assert torch.isfinite(loss).all()
    expected = LOSSES[name](X.detach().float(), target)
    torch.testing.assert_close(loss.float(), expected, atol=0.5, rtol=2e-2)
    (grad,) = torch.autograd.grad(loss.float().sum(), X)
    assert grad.dtype == dtype
    assert torch.isfinite(grad).all()


@pytest.mark.parametrize(
    ("exact", "root"),
    [
        ("sparsemax_loss", "sparsemax_bisect_loss"),
        ("entmax15_loss", "entmax_bisect_loss_1.5"),
    ],
)
@SETTINGS
@given(data=loss_inputs())
def test_exact_and_root_finding_losses_agree(exact, root, data):
    X, target = data
    losses = {**LOSSES, "entmax_bisect_loss_1.5": lambda X, t: E.entmax_bisect_loss(X, t, 1.5)}
    expected = losses[exact](X, target)
    scale = _scale(X)
    torch.testing.assert_close(
        losses[root](X, target) / scale, expected / scale, atol=1e-9, rtol=0
    )
