"""Padding with ``-inf`` is invisible: a row padded at its end gives the row's own output.

This is what attention with a key-padding mask relies on (the same sentence gets the same
weights however long its batch's padding), and what the reference ``entmax`` 1.3's own
``test_mask`` checks (run against our core in ``tests/dropin``). The exact mappings promise
it bit for bit where one form serves both widths, at every width (including a narrow row
padded past the column layout's width), dtype and batch size; where the fused CPU kernel
takes the padded row and a torch form the row, the same support and values within 4 units
of rounding of 1. Root finding within 2 units of rounding of 1 (8 where the kernel takes the
padded row and the torch form the row).
"""

from __future__ import annotations

import pytest
import torch

from sk_entmax.entmax import (
    Entmax15,
    Sparsemax,
    entmax,
    entmax15,
    entmax_bisect,
    sparsemax,
    sparsemax_bisect,
)
from sk_entmax.entmax.kernels import cpu
from sk_entmax.entmax.solvers._sums import row_sum

NEG_INF = float("-inf")
WIDTHS = [2, 3, 9, 10, 11, 17, 100, 257]
PADS = [1, 300]
EXACT = {
    "sparsemax": sparsemax,
    "entmax15": entmax15,
    "Sparsemax(k=4)": Sparsemax(k=4),
    "Entmax15(k=4)": Entmax15(k=4),
    "entmax_bisect_1.5": lambda X: entmax_bisect(X, 1.5),
    "sparsemax_bisect": sparsemax_bisect,
    "entmax(alpha=2)": lambda X: entmax(X, 2.0),
    "eval": lambda X: entmax15(X, training=False),
}


def _one_form(name: str, width: int, padded: int) -> bool:
    """Whether one form of the mapping serves both widths: the fused CPU kernel takes
    1.5-entmax rows from ``MIN_WIDTH`` entries on (sparsemax at every width), the torch
    forms the narrower ones."""
    if name not in ("entmax15", "Entmax15(k=4)", "entmax_bisect_1.5") or not cpu.available():
        return True
    floor = cpu.MIN_WIDTH[cpu.ENTMAX15]
    return (width >= floor) == (padded >= floor)


def _rows(width: int, rows: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    scale = torch.tensor([0.05, 1.0, 8.0], dtype=dtype).repeat(rows)[:rows, None]
    return torch.randn(rows, width, generator=gen, dtype=dtype) * scale


def _padded(X: torch.Tensor, pad: int) -> torch.Tensor:
    return torch.cat([X, X.new_full((X.shape[0], pad), NEG_INF)], dim=1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", list(EXACT))
def test_exact_mappings_ignore_padding_bit_for_bit(name, dtype):
    fn = EXACT[name]
    for width in WIDTHS:
        for rows in (1, 64):
            X = _rows(width, rows, dtype, seed=width * 100 + rows)
            P = fn(X)
            for pad in PADS:
                Pp = fn(_padded(X, pad))
                assert (Pp[:, width:] == 0).all()
                if _one_form(name, width, width + pad):
                    assert torch.equal(Pp[:, :width], P), (width, rows, pad)
                else:  # the fused CPU kernel takes the padded row, the torch form the row:
                    # the same support, values within 4 units of rounding of 1 (issue 59)
                    assert torch.equal(Pp[:, :width] > 0, P > 0), (width, rows, pad)
                    eps = torch.finfo(dtype).eps
                    assert (Pp[:, :width] - P).abs().max().item() <= 4 * eps, (width, rows, pad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("alpha", [1.05, 1.3, 1.7, 1.9, 2.5, "per row"])
def test_root_finding_ignores_padding_to_rounding(alpha, dtype):
    """Within 2 units of rounding of 1 (Newton's powers, exp2 and log2, round an entry
    differently by its position on CPU; the bisection's are exact to the bit), where one
    form serves both widths; within 8 where the fused CPU kernel takes the padded row and
    the torch form the row (the kernel lies within 1.5 units of rounding of the float64
    solution, the torch form within 12 on these rows)."""
    eps = torch.finfo(dtype).eps
    worst = 0.0
    floor = cpu.MIN_WIDTH[cpu.GENERAL] if cpu.available() else 0
    kernel = isinstance(alpha, float) and 1.1 <= alpha <= 2
    for width in WIDTHS:
        for rows in (1, 64):
            X = _rows(width, rows, dtype, seed=width + rows)
            a = (
                torch.linspace(1.1, 3.0, rows, dtype=dtype)[:, None]
                if alpha == "per row"
                else alpha
            )
            P = entmax_bisect(X, a)
            for pad in PADS:
                Pp = entmax_bisect(_padded(X, pad), a)
                error = (Pp[:, :width] - P).abs().max().item() / eps
                two_forms = kernel and (width >= floor) != (width + pad >= floor)
                worst = max(worst, error / 4 if two_forms else error)
                assert (Pp[:, width:] == 0).all()
    assert worst <= 2, worst


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_row_sum_is_padding_and_batch_invariant(dtype):
    gen = torch.Generator().manual_seed(0)
    for width in [1, 2, 3, 7, 8, 9, 16, 17, 31, 272, 273, 1000]:
        X = torch.rand(5, width, generator=gen, dtype=dtype) * torch.logspace(
            -6, 6, width, dtype=dtype
        )
        alone = row_sum(X)
        assert alone.shape == (5, 1)
        for pad in (1, width, 513):
            padded = torch.cat([X, X.new_zeros(5, pad)], dim=1)
            assert torch.equal(row_sum(padded), alone)
            if width <= 10:  # a narrow row's sum in the column layout
                assert torch.equal(row_sum(padded.t().contiguous(), 0).t(), alone)
        for i in range(5):  # a row alone, as in any batch
            assert torch.equal(row_sum(X[i : i + 1]), alone[i : i + 1])
        rtol = 1e-12 if dtype == torch.float64 else 1e-5
        torch.testing.assert_close(alone, X.sum(-1, keepdim=True), rtol=rtol, atol=0)
