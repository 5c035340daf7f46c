"""Root finding against a high-precision truth, and rows padded with ``-inf`` (issue 25).

The truth is an mpmath bisection on the threshold, carried with at least 40 significant
digits in every base ``1 + (alpha - 1)(x_i - t)`` of the support (near the threshold at large
alpha these bases are tiny: ``p ** (alpha - 1)``, ``1e-18`` for ``p = 0.01`` at alpha = 10,
far below the rounding of ``t`` in float64, which is why float64 bisection alone is off by
up to 1e-2 there). The rows are the ones that make a mapping saturate: one class far ahead,
near-ties, an entry just inside or just outside the support, a second entry with a tiny
probability. A row padded with ``-inf``, at the end or between its entries, must give the
same probabilities within 2 ulps wherever bisection runs (alpha outside ``[1.1, 2]``, or
``n_iter < 24``; Newton's range is :mod:`tests.entmax.test_newton`'s).
"""

from __future__ import annotations

import math

import pytest
import torch
from mp_truth import truth

from sk_entmax.entmax import entmax_bisect, sparsemax_bisect

F64 = torch.float64
NEG_INF = float("-inf")
ALPHAS = [1.01, 1.25, 2.5, 4.0, 10.0]
TOL = 1e-12  # float64, against the truth


def _tiny_second(alpha: float, p: float) -> list[float]:
    """Two entries whose exact mapping gives the second one probability ``p`` (up to the
    rounding of the gap), and a third well outside the support."""
    beta = alpha - 1
    return [0.0, -((1 - p) ** beta - p**beta) / beta, -2.0 / beta]


def saturating_rows(alpha: float) -> list[list[float]]:
    beta = alpha - 1
    return [
        [10.0, 0.0, -1.0, NEG_INF],  # one class far ahead
        [1.0, 1.0 - 1e-12, 0.5, -3.0],  # a near-tie on top
        [0.0, -1e-9, -2e-9, -0.3],  # three near-ties
        [3.0, 2.999, 0.0, -2.0],
        [0.0, -0.9 / beta, -0.95 / beta, -1.2 / beta],  # bases near 0 at the threshold
        [0.05109283, -0.03131349, -0.01977934],  # issue 25's estimator scores
        [-0.03761959, -0.03532861, 0.0729482],
        _tiny_second(alpha, 1e-3),
        _tiny_second(alpha, 1e-6),
        [0.0, 0.0, 0.0, -1e-15, -0.5 / beta],  # ties, and an entry within rounding of them
    ]


def _padded(rows: list[list[float]]) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [NEG_INF] * (width - len(r)) for r in rows], dtype=F64)


_TRUTHS: dict[float, torch.Tensor] = {}


def _cases(alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The saturating rows (float64, ``-inf``-padded) and their truth, computed once."""
    X = _padded(saturating_rows(alpha))
    if alpha not in _TRUTHS:
        _TRUTHS[alpha] = torch.tensor([truth(r, alpha) for r in X.tolist()], dtype=F64)
    return X, _TRUTHS[alpha]


def test_truth_of_a_known_case():
    """The truth reproduces a closed form: two entries 0 and -delta at alpha = 3 give
    ``p1 ** 2 - p2 ** 2 = 2 delta``, so ``p1 - p2 = 2 delta``."""
    p = truth([0.0, -0.1], 3.0)
    assert p == pytest.approx([0.6, 0.4], abs=1e-15)
    assert truth([0.0, NEG_INF, -0.1], 3.0)[1] == 0.0


@pytest.mark.parametrize("alpha", ALPHAS)
def test_entmax_bisect_matches_the_truth(alpha):
    X, P = _cases(alpha)
    assert (entmax_bisect(X, alpha) - P).abs().max().item() <= TOL
    # one alpha as a 0-d tensor (a learned alpha), and one per row
    shared = torch.tensor(alpha, dtype=F64)
    assert (entmax_bisect(X, shared) - P).abs().max().item() <= TOL
    per_row = torch.full((X.shape[0], 1), alpha, dtype=F64)
    assert (entmax_bisect(X, per_row) - P).abs().max().item() <= TOL


def test_per_row_alphas_match_the_truth():
    """Rows of different alphas in one tensor: each row is its own alpha's truth."""
    cases = [_cases(alpha) for alpha in ALPHAS]
    n = min(X.shape[0] for X, _ in cases)
    width = max(X.shape[1] for X, _ in cases)

    def widen(T, fill):
        return torch.cat([T[:n], T.new_full((n, width - T.shape[1]), fill)], -1)

    X = torch.cat([widen(X, NEG_INF) for X, _ in cases])
    P = torch.cat([widen(P, 0.0) for _, P in cases])
    alpha = torch.tensor([a for a in ALPHAS for _ in range(n)], dtype=F64).unsqueeze(-1)
    assert (entmax_bisect(X, alpha) - P).abs().max().item() <= TOL


@pytest.mark.parametrize("alpha", [2.5, 10.0])
def test_saturation_edges(alpha):
    """A row whose second entry is at the support's edge, just inside and just outside it;
    and a row far ahead maps to a one-hot vector."""
    beta = alpha - 1
    edge = -1 / beta  # 2 entries: the second one enters the support above this score
    rows = [[0.0, edge * (1 - 1e-9), -5.0], [0.0, edge * (1 + 1e-9), -5.0], [1e6, 0.0, -1e6]]
    X = torch.tensor(rows, dtype=F64)
    P = entmax_bisect(X, alpha)
    expected = torch.tensor([truth(r, alpha) for r in rows], dtype=F64)
    assert (P - expected).abs().max().item() <= TOL
    assert P[0, 1] > 0 and P[1, 1] == 0 and torch.equal(P[2], torch.tensor([1.0, 0, 0], dtype=F64))


def _ulps(A: torch.Tensor, B: torch.Tensor) -> float:
    """The largest difference of ``A`` and ``B`` in units of the last place of the larger
    entry (0 where they are equal)."""
    big = torch.maximum(A.abs(), B.abs())
    ulp = torch.nextafter(big, torch.full_like(big, math.inf)) - big
    diff = (A - B).abs()
    return torch.where(diff == 0, 0.0, diff.double() / ulp.double()).max().item()


def _pad(X: torch.Tensor, extra: int, gen: torch.Generator, interleave: bool):
    """``X`` with ``extra`` columns of ``-inf``, at the end or spread between its entries;
    returns the padded tensor and the columns of ``X``'s entries in it."""
    width = X.shape[-1] + extra
    if interleave:
        columns = torch.randperm(width, generator=gen)[: X.shape[-1]].sort().values
    else:
        columns = torch.arange(X.shape[-1])
    padded = X.new_full((X.shape[0], width), NEG_INF)
    padded[:, columns] = X
    return padded, columns


# the bisection's cases: alpha outside [1.1, 2] at the default n_iter, any alpha below 24
BISECTION = [
    (0.8, 50),
    (1.05, 50),
    (2.5, 50),
    (4.0, 50),
    (10.0, 50),
    (1.05, 10),
    (1.3, 10),
    (2.0, 10),
    (4.0, 10),
]


@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize(("alpha", "n_iter"), BISECTION)
def test_padding_with_neg_inf_changes_nothing(alpha, n_iter, dtype):
    gen = torch.Generator().manual_seed(0)
    worst = 0.0
    for width in (2, 3, 7, 33, 300):
        X = (torch.randn(16, width, generator=gen, dtype=F64) * 2).to(dtype)
        X[0, 0] = X[0, -1]  # a tie
        alone = entmax_bisect(X, alpha, n_iter=n_iter)
        for extra, interleave in ((1, False), (5, True), (64, True)):
            padded, columns = _pad(X, extra, gen, interleave)
            padded_rows = entmax_bisect(padded, alpha, n_iter=n_iter)[:, columns]
            worst = max(worst, _ulps(alone, padded_rows))
    assert worst <= 2


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_padding_changes_nothing_with_alpha_per_row(dtype):
    gen = torch.Generator().manual_seed(1)
    X = (torch.randn(6, 40, generator=gen, dtype=F64) * 2).to(dtype)
    alpha = torch.tensor([[0.8], [1.05], [1.5], [2.5], [4.0], [10.0]], dtype=dtype)
    for n_iter in (10, 50):
        alone = entmax_bisect(X, alpha, n_iter=n_iter)
        for interleave in (False, True):
            padded, columns = _pad(X, 23, gen, interleave)
            rows = entmax_bisect(padded, alpha, n_iter=n_iter)[:, columns]
            if n_iter >= 24:  # Newton's rows (alpha in [1.1, 2]) are test_newton's
                rows, alone_rows = rows[[0, 1, 3, 4, 5]], alone[[0, 1, 3, 4, 5]]
            else:
                alone_rows = alone
            assert _ulps(alone_rows, rows) <= 2


def test_sparsemax_bisect_padding_with_few_steps():
    gen = torch.Generator().manual_seed(2)
    X = torch.randn(32, 50, generator=gen)
    alone = sparsemax_bisect(X, n_iter=12)
    padded, columns = _pad(X, 30, gen, interleave=True)
    assert _ulps(alone, sparsemax_bisect(padded, n_iter=12)[:, columns]) <= 2


@pytest.mark.parametrize("alpha", [1.05, 4.0, 10.0])
def test_a_row_does_not_depend_on_the_batch(alpha):
    gen = torch.Generator().manual_seed(3)
    X = torch.randn(64, 9, generator=gen, dtype=F64) / (alpha - 1)
    X[5, :3] = X[5, 0]  # ties
    batch = entmax_bisect(X, alpha)
    for i in (0, 5, 63):
        assert torch.equal(entmax_bisect(X[i : i + 1], alpha), batch[i : i + 1])
    shared = torch.tensor(alpha, dtype=F64)
    assert torch.equal(entmax_bisect(X[5:6], shared), entmax_bisect(X, shared)[5:6])


@pytest.mark.parametrize("alpha", [2.5, 10.0])
def test_float32_is_accurate(alpha):
    """float32 rows at alpha > 2: within float32 rounding of the float64 mapping of the same
    (rounded) scores, itself checked against the truth above."""
    X = _cases(alpha)[0].float()
    exact = entmax_bisect(X.double(), alpha)
    assert (entmax_bisect(X, alpha).double() - exact).abs().max().item() <= 1e-6
