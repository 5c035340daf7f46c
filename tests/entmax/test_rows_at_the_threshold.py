"""Rows with an entry on the support's boundary get the same bits alone and in any batch.

Such an entry gets an exact 0 or a ``1e-17`` on a single differently rounded operation, so
these rows catch any operation whose rounding depends on where a row sits: torch's
vectorized CPU ``sqrt`` (an ulp off on about 0.6% of values, in the vector body only), or a
sparsemax row that took one more step when the rest of its batch still moved.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sk_entmax.entmax import entmax15, sparsemax
from sk_entmax.entmax.solvers._sums import ieee_sqrt


def _rows_at_the_threshold(alpha: float, width: int, n: int, seed: int) -> torch.Tensor:
    """Random float64 rows, the largest entry off the support moved onto the threshold
    that the float64 sort computes."""
    rng = np.random.default_rng(seed)
    R = rng.normal(size=(n, width)) * rng.choice([0.3, 1.0, 3.0], size=(n, 1))
    Z = R / 2 if alpha == 1.5 else R
    Zs = -np.sort(-Z, axis=1)
    rho = np.arange(1, width + 1)
    if alpha == 1.5:
        mean = np.cumsum(Zs, 1) / rho
        spread = np.cumsum(Zs**2, 1) - rho * mean**2
        tau_r = mean - np.sqrt(np.clip((1 - spread) / rho, 0, None))
    else:
        tau_r = (np.cumsum(Zs, 1) - 1) / rho
    size = (tau_r <= Zs).sum(1)
    tau = tau_r[np.arange(n), size - 1]
    for i in np.where(size < width)[0]:
        j = np.argsort(-Z[i])[size[i]]
        R[i, j] = 2 * tau[i] if alpha == 1.5 else tau[i]
    return torch.from_numpy(R)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_ieee_sqrt_is_correctly_rounded_wherever_the_entry_sits(dtype):
    gen = torch.Generator().manual_seed(0)
    X = torch.rand(20_000, generator=gen, dtype=torch.float64).mul_(4).to(dtype)
    truth = torch.tensor([math.sqrt(v) for v in X.double().tolist()], dtype=torch.float64)
    truth = truth.to(dtype)  # sqrt rounded to float64, then to float32: correctly rounded
    assert torch.equal(ieee_sqrt(X), truth)
    assert torch.equal(ieee_sqrt(X[5:]), truth[5:])  # shifted against the vector lanes
    assert torch.equal(ieee_sqrt(X.view(-1, 1)), truth.view(-1, 1))


@pytest.mark.parametrize("width", [5, 12, 40])
@pytest.mark.parametrize("alpha", [1.5, 2.0])
def test_a_row_at_the_threshold_gets_its_bits_in_any_batch(alpha, width):
    fn = entmax15 if alpha == 1.5 else sparsemax
    rows = _rows_at_the_threshold(alpha, width, n=300, seed=width)
    slow = torch.randn(64, width, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    batch = fn(torch.cat([slow * 30, rows]))[64:]  # rows that take more passes come first
    alone = torch.cat([fn(row[None]) for row in rows])
    assert torch.equal(batch, alone)
    with torch.no_grad():  # the plain gradient-free call takes the same path
        assert torch.equal(fn(rows), alone)
