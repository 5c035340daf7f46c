"""Wide rows: the backward pass chunk by chunk (``sk_entmax.entmax._wide_rows``) gives the
same bits as whole, and the traceable form's results against the sort's float64 truth."""

from __future__ import annotations

import pytest
import torch

from sk_entmax.entmax import _wide_rows, entmax15, entmax_bisect, sparsemax
from sk_entmax.entmax._traceable import entmax15_traceable


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


@pytest.mark.parametrize("width", [11, 300, 1000])
def test_chunks_give_the_bits_of_the_whole(width, monkeypatch):
    X = _rows(96, width, seed=width)
    dY = torch.randn(96, width, generator=torch.Generator().manual_seed(1))
    whole = {}
    for chunk in (1 << 30, width * 7, 1):  # one chunk, 7 rows a chunk, a row a chunk
        monkeypatch.setattr(_wide_rows, "CHUNK", chunk)
        got = []
        for fn in (entmax15, sparsemax, lambda X: entmax_bisect(X, 1.5)):
            Xg = X.clone().requires_grad_()
            Y = fn(Xg)
            Y.backward(dY)
            got += [Y.detach(), Xg.grad]
        if not whole:
            whole = got
        for a, b in zip(got, whole, strict=True):
            assert torch.equal(a, b), chunk


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_wide_rows_against_the_float64_sort(dtype):
    X = _rows(60, 2500, seed=3, dtype=dtype)
    X[7, 100:] = float("-inf")  # a padded row
    want = _entmax15_sorted64(X)
    P = entmax15_traceable(X)
    err = (P.double() - want).abs().max().item()
    assert err <= (2e-6 if dtype == torch.float32 else 1e-13), err
    assert torch.equal(P[7, 100:], torch.zeros(2400, dtype=dtype))
