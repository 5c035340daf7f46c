"""Wide rows: the backward pass chunk by chunk (``sk_entmax.entmax.solvers._wide_rows``)
gives the same bits as whole, and the traceable form's results against the sort's float64
truth."""

from __future__ import annotations

import pytest
import torch

from sk_entmax.entmax import entmax15, entmax_bisect, sparsemax
from sk_entmax.entmax.common import sqrt_support
from sk_entmax.entmax.solvers import entmax15_traceable, entmax_vjp_rows, gppr


def _rows(rows: int, width: int, seed: int, dtype=torch.float32) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    scale = torch.tensor([0.05, 1.0, 8.0], dtype=dtype).repeat(rows)[:rows, None]
    return torch.randn(rows, width, generator=gen, dtype=dtype) * scale


def _entmax15_sorted64(X: torch.Tensor) -> torch.Tensor:
    """1.5-entmax in float64 by a full sort (the closed form over every prefix)."""
    Z = (X.double() - X.double().amax(-1, keepdim=True)) / 2
    Zs = Z.sort(-1, descending=True).values
    rho = torch.arange(1, Z.shape[-1] + 1, dtype=torch.float64)
    mean = Zs.cumsum(-1) / rho
    ss = (Zs * Zs).cumsum(-1) / rho - mean * mean
    tau = mean - ((1 - rho * ss) / rho).clamp_min(0).sqrt()
    size = (tau <= Zs).sum(-1, keepdim=True)
    return (Z - tau.gather(-1, size - 1)).clamp_min(0) ** 2


#: each map and its Jacobian weights (``1 / Omega''(p)`` on the support)
GPPR = {
    "sparsemax": (sparsemax, torch.sign),
    "entmax15": (entmax15, sqrt_support),
    "entmax_bisect": (lambda X: entmax_bisect(X, 1.5), lambda Y: gppr(Y, 1.5)),
}


@pytest.mark.parametrize("width", [11, 300, 1000])
@pytest.mark.parametrize("name", list(GPPR))
def test_chunks_give_the_bits_of_the_whole(width, name):
    """The backward pass 7 rows a chunk and a row a chunk gives the bits of one chunk, and
    in one chunk the values of the mapping's own backward pass."""
    fn, gppr_of = GPPR[name]
    X = _rows(96, width, seed=width)
    dY = torch.randn(96, width, generator=torch.Generator().manual_seed(1))
    Xg = X.clone().requires_grad_()
    Y = fn(Xg)
    Y.backward(dY)
    with torch.no_grad():  # chunks only where no graph is recorded
        whole = entmax_vjp_rows(dY, Y.detach(), gppr_of, chunk=1 << 30)
        for chunk in (width * 7, 1):
            got = entmax_vjp_rows(dY, Y.detach(), gppr_of, chunk=chunk)
            assert torch.equal(got, whole), chunk
    torch.testing.assert_close(whole, Xg.grad, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_wide_rows_against_the_float64_sort(dtype):
    X = _rows(60, 2500, seed=3, dtype=dtype)
    X[7, 100:] = float("-inf")  # a padded row
    want = _entmax15_sorted64(X)
    P = entmax15_traceable(X)
    err = (P.double() - want).abs().max().item()
    assert err <= (2e-6 if dtype == torch.float32 else 1e-13), err
    assert torch.equal(P[7, 100:], torch.zeros(2400, dtype=dtype))
