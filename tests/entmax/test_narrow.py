"""Narrow rows: the column layout of the Newton solvers, and the integer powers.

Rows at most ``_NARROW_WIDTH`` wide (the estimators' class axis: 2 to 10 classes) are
solved in a transposed ``(width, rows)`` layout (``_narrow._shifted_columns``). Here:
float64 results against the sort-based and long-bisection solutions, the same results as
the row layout, masking, NaN, leading axes and other ``dim``, the fallback for unsettled
rows, gradients, and the exact integer powers of ``_power_newton`` (alpha = 1.25, 1.125).
"""

from __future__ import annotations

import pytest
import torch

from sk_entmax.entmax import (
    entmax,
    entmax15,
    entmax_bisect,
    entmax_loss,
    sparsemax,
    sparsemax_bisect,
)
from sk_entmax.entmax.solvers import _narrow as layout
from sk_entmax.entmax.solvers import (
    _newton,
    entmax15_traceable,
    entmax_bisect_last,
    sparsemax_traceable,
)

F64 = torch.float64
NEG_INF = float("-inf")
WIDTHS = [1, 2, 3, 5, 8, layout._NARROW_WIDTH, layout._NARROW_WIDTH + 1]
MAPPINGS = {
    "sparsemax": (sparsemax, 2.0),
    "entmax15": (entmax15, 1.5),
    "bisect_1.125": (lambda X, **kw: entmax_bisect(X, 1.125, **kw), 1.125),
    "bisect_1.2": (lambda X, **kw: entmax_bisect(X, 1.2, **kw), 1.2),
    "bisect_1.25": (lambda X, **kw: entmax_bisect(X, 1.25, **kw), 1.25),
    "bisect_1.33": (lambda X, **kw: entmax_bisect(X, 1.33, **kw), 1.33),
    "bisect_1.5": (lambda X, **kw: entmax_bisect(X, 1.5, **kw), 1.5),
    "bisect_1.75": (lambda X, **kw: entmax_bisect(X, 1.75, **kw), 1.75),
    "sparsemax_bisect": (sparsemax_bisect, 2.0),
    "bisect_2_no_sum": (lambda X, **kw: entmax_bisect(X, 2.0, ensure_sum_one=False, **kw), 2.0),
    "bisect_1.25_no_sum": (
        lambda X, **kw: entmax_bisect(X, 1.25, ensure_sum_one=False, **kw),
        1.25,
    ),
}


def _exact(X: torch.Tensor, alpha: float) -> torch.Tensor:
    X = X.to(F64)
    if alpha == 2.0:
        return sparsemax(X, training=False)
    if alpha == 1.5:
        return entmax15(X, training=False)
    return entmax_bisect(X, alpha, n_iter=200, training=False)


def _scores(n: int, width: int, seed: int, dtype=F64) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(n, width, generator=gen, dtype=dtype) * 3
    X[1] = 0.5  # a tie across the whole row
    if width > 1:
        X[2, 0] = X[2, 1] = X[2].max() + 1  # a tie at the top
        X[3, 1:] = -1e6  # one entry dominates
    return X


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(MAPPINGS))
def test_narrow_rows_float64_exact(name, width):
    fn, alpha = MAPPINGS[name]
    X = _scores(300, width, seed=width)
    P = fn(X)
    exact = _exact(X, alpha)
    if name.endswith("no_sum"):
        P = P / P.sum(-1, keepdim=True)
    assert P.dtype == F64 and P.is_contiguous()
    assert (P - exact).abs().max().item() < 1e-13
    assert (P.sum(-1) - 1).abs().max().item() < 1e-13
    assert torch.equal(P == 0, exact == 0)


@pytest.mark.parametrize("name", list(MAPPINGS))
def test_narrow_rows_float32_accurate(name):
    fn, alpha = MAPPINGS[name]
    X = _scores(500, 5, seed=1, dtype=torch.float32)
    P = fn(X)
    if name.endswith("no_sum"):
        P = P / P.sum(-1, keepdim=True)
    assert P.dtype == torch.float32
    exact = _exact(X, alpha)
    assert (P.double() - exact).abs().max().item() < 2e-6
    assert (P[exact > 1e-6] > 0).all() and (P[exact == 0] <= 1e-6).all()


def _solve(name: str, X: torch.Tensor, **keywords) -> torch.Tensor:
    """What ``MAPPINGS[name]`` computes, by its solver, given ``keywords``: the traceable
    form at alpha 2 and 1.5 (``narrow_width``), root finding's Newton steps otherwise
    (``narrow_width``, ``max_passes``)."""
    _, alpha = MAPPINGS[name]
    if alpha in (1.5, 2.0):
        form = sparsemax_traceable if alpha == 2.0 else entmax15_traceable
        return form(X, **keywords)
    return entmax_bisect_last(X, alpha, 50, not name.endswith("no_sum"), **keywords)


#: the mappings whose rows root finding's Newton steps solve
ROOTS = [name for name, (_, alpha) in MAPPINGS.items() if alpha not in (1.5, 2.0)]


@pytest.mark.parametrize("name", list(MAPPINGS))
def test_column_layout_matches_row_layout(name):
    fn, _ = MAPPINGS[name]
    X = _scores(400, 6, seed=2)
    columns = _solve(name, X)
    assert layout._narrow(X) and not layout._narrow(X, 0)
    rows = _solve(name, X, narrow_width=0)  # every width takes the row layout
    assert torch.allclose(columns, rows, atol=1e-14, rtol=0)
    assert torch.equal(columns == 0, rows == 0)
    assert torch.allclose(fn(X), columns, atol=1e-14, rtol=0)


@pytest.mark.parametrize("name", list(MAPPINGS))
def test_narrow_masks_nan_and_axes(name):
    fn, alpha = MAPPINGS[name]
    X = _scores(50, 4, seed=3)
    X[5] = NEG_INF  # fully masked
    X[6, 2] = NEG_INF  # one masked entry
    X[7, 1] = float("nan")
    P = fn(X)
    assert torch.equal(P[5], torch.zeros(4, dtype=F64))
    assert P[6, 2] == 0
    assert P[7].isnan().all()
    others = [i for i in range(50) if i != 7]
    assert not P[others].isnan().any()
    good = [i for i in range(50) if i not in (5, 7)]
    exact = _exact(X[good], alpha)
    Pg = P[good] / P[good].sum(-1, keepdim=True) if name.endswith("no_sum") else P[good]
    assert (Pg - exact).abs().max().item() < 1e-13
    # leading axes and another dim: the same rows
    X3 = X[good].reshape(4, 12, 4)
    assert torch.allclose(fn(X3).reshape(-1, 4), P[good], atol=1e-15, rtol=0)
    assert torch.allclose(fn(X3.transpose(1, 2), dim=1).transpose(1, 2), fn(X3), atol=1e-15)


@pytest.mark.parametrize("name", ROOTS)
def test_narrow_unsettled_rows_finished_by_the_fallback(name):
    _, alpha = MAPPINGS[name]
    X = _scores(60, 7, seed=4)
    X[5] = NEG_INF
    X[8, 3] = float("nan")
    P = _solve(name, X, max_passes=1)  # almost every row is unsettled
    assert torch.equal(P[5], torch.zeros(7, dtype=F64)) and P[8].isnan().all()
    rows = [i for i in range(60) if i not in (5, 8)]
    Pr = P[rows] / P[rows].sum(-1, keepdim=True) if name.endswith("no_sum") else P[rows]
    assert (Pr - _exact(X[rows], alpha)).abs().max().item() < 1e-12


@pytest.mark.parametrize("name", list(MAPPINGS))
def test_narrow_row_does_not_depend_on_the_batch(name):
    fn, _ = MAPPINGS[name]
    X = _scores(40, 5, seed=5)
    X[9] *= 1000
    P = fn(X)
    for i in (0, 3, 9, 39):
        assert torch.allclose(fn(X[i : i + 1])[0], P[i], atol=1e-15, rtol=0)


@pytest.mark.parametrize(
    "fn",
    [
        sparsemax,
        entmax15,
        lambda X: entmax_bisect(X, 1.25),
        lambda X: entmax_bisect(X, 1.33),
        lambda X: entmax_bisect(X, torch.tensor(1.25, dtype=F64, requires_grad=True)),
    ],
    ids=["sparsemax", "entmax15", "bisect_1.25", "bisect_1.33", "bisect_tensor_1.25"],
)
def test_narrow_gradcheck(fn):
    gen = torch.Generator().manual_seed(6)
    X = (torch.randn(7, 5, generator=gen, dtype=F64) * 2).requires_grad_()
    assert torch.autograd.gradcheck(fn, (X,))


def test_broadcast_tensor_alpha_is_one_alpha_in_half_precision():
    """A 0-d alpha stays one value (stride 0) after the float16 -> float32 conversion, so
    that it takes the same solver as the float alpha."""
    gen = torch.Generator().manual_seed(7)
    X = torch.randn(6, 9, generator=gen).half()
    P = entmax_bisect(X, torch.tensor(1.25, dtype=torch.float16))
    assert torch.equal(P, entmax_bisect(X, 1.25))


@pytest.mark.parametrize("alpha", [1.25, 1.5, 2.0, 1.33])
def test_estimator_block_loss_and_mapping(alpha):
    """The estimators' use: a float64 block of 5 classes, mapping and loss."""
    gen = torch.Generator().manual_seed(8)
    X = (torch.randn(2000, 5, generator=gen, dtype=F64) * 3).requires_grad_()
    y = torch.randint(0, 5, (2000,), generator=gen)
    P = entmax(X, alpha)
    assert (P.detach() - _exact(X.detach(), alpha)).abs().max().item() < 1e-13
    loss = entmax_loss(X, y, alpha)
    (grad,) = torch.autograd.grad(loss.sum(), X)
    expected = P.detach() - torch.nn.functional.one_hot(y, 5).to(F64)
    assert torch.allclose(grad, expected, atol=1e-13)


@pytest.mark.parametrize(
    ("m", "expected"),
    [(4.0, 3), (8.0, 7), (2.0, None), (3.0, 2), (10.0, 9), (11.0, None), (1 / (1.2 - 1), None)],
)
def test_integer_exponent(m, expected):
    assert _newton._integer_exponent(m) == expected


@pytest.mark.parametrize("k", range(1, 10))
def test_integer_power(k):
    gen = torch.Generator().manual_seed(k)
    G = torch.rand(3, 50, generator=gen, dtype=F64) + 0.5
    expected = G**k
    assert torch.allclose(_newton._integer_power_(G.clone(), k, torch.empty_like(G)), expected)
