"""``torch.export`` of the evaluation-mode modules with a dynamic batch axis: the program
gives eager's values at batch sizes other than the example's."""

from __future__ import annotations

import pytest
import torch

import sk_entmax.entmax as E
from sk_entmax.export import export_module
from sk_entmax.nn import EntmaxMultiheadAttention, TabNet


def _rows(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _modules():
    torch.manual_seed(0)
    return {
        "Sparsemax": (E.Sparsemax(), (_rows(3, 9),)),
        "Entmax15": (E.Entmax15(), (_rows(3, 9),)),
        "EntmaxBisect": (E.EntmaxBisect(alpha=1.33), (_rows(3, 9),)),
        "EntmaxMultiheadAttention": (
            EntmaxMultiheadAttention(8, 2, batch_first=True, alpha=[1.5, 2.0]),
            (_rows(3, 5, 8),) * 3,
        ),
        "TabNet": (TabNet(5, 3, n_steps=2, missing_idxs=[1]), (_rows(12, 5),)),
    }


@pytest.mark.parametrize("name", list(_modules()))
def test_exported_program_equals_eager_at_other_batch_sizes(name):
    module, args = _modules()[name]
    module.eval()
    program = export_module(module, args)
    for rows in (1, 7):
        other = tuple(_rows(rows, *a.shape[1:], seed=rows) for a in args)
        if name == "TabNet":
            other[0][0, 1] = float("nan")  # a gap, filled inside the program
        got, want = program.module()(*other), module(*other)
        got, want = (got[0], want[0]) if isinstance(want, tuple) else (got, want)
        assert got.shape[0] == rows
        torch.testing.assert_close(got, want, atol=1e-6, rtol=0)
        if name != "TabNet":
            assert torch.equal(got == 0, want == 0)


def test_export_module_names_a_bad_argument():
    with pytest.raises(TypeError, match=r"args\[0\]"):
        export_module(E.Sparsemax(), [[1.0, 2.0]])
    with pytest.raises(TypeError, match="module"):
        export_module(E.sparsemax, [torch.zeros(2, 3)])
