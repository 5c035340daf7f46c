"""The one alpha-to-algorithm decision: its cases, and the kernels registered against it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sk_entmax.entmax import entmax, entmax15, entmax_bisect, sparsemax
from sk_entmax.entmax.algorithms import (
    NEWTON_MIN_ALPHA,
    NEWTON_MIN_ITER,
    Mapping,
    kernel_for,
    mapping_for,
    newton_applies,
    register_kernel,
    unregister_kernel,
)


@pytest.mark.parametrize(
    ("alpha", "expected"),
    [
        (1, Mapping.SOFTMAX),
        (1.0, Mapping.SOFTMAX),
        (np.float64(1.5), Mapping.ENTMAX15),
        (2, Mapping.SPARSEMAX),
        (2.0, Mapping.SPARSEMAX),
        (1.25, Mapping.ROOT),
        (0.5, Mapping.ROOT),
        (3.0, Mapping.ROOT),
        (float("nan"), Mapping.ROOT),
        (torch.tensor(2.0), Mapping.PER_ROW),
        (torch.full((4, 1), 1.5), Mapping.PER_ROW),
    ],
)
def test_mapping_for_each_case(alpha, expected):
    assert mapping_for(alpha) is expected


def test_newton_applies_on_its_range_only_from_enough_steps():
    assert newton_applies(NEWTON_MIN_ALPHA, NEWTON_MIN_ITER)
    assert newton_applies(2.0, 50)
    assert not newton_applies(1.05, 50)
    assert not newton_applies(2.5, 50)
    assert not newton_applies(1.5, NEWTON_MIN_ITER - 1)
    rows = torch.tensor([[1.0], [1.3], [2.0], [2.2]])
    assert newton_applies(rows, 50).squeeze(-1).tolist() == [False, True, True, False]
    assert not newton_applies(rows, 10).any()


@pytest.mark.parametrize(
    ("alpha", "exact"),
    [(2.0, sparsemax), (1.5, entmax15), (1.0, lambda x: torch.softmax(x, -1))],
)
def test_entmax_serves_the_exact_cases_by_their_algorithm(alpha, exact):
    x = torch.randn(6, 9, dtype=torch.float64)
    torch.testing.assert_close(entmax(x, alpha), exact(x), rtol=1e-12, atol=1e-12)


def test_entmax_serves_other_alphas_by_root_finding():
    x = torch.randn(6, 9, dtype=torch.float64)
    torch.testing.assert_close(entmax(x, 1.3), entmax_bisect(x, 1.3), rtol=0, atol=0)


def test_a_registered_kernel_serves_its_case_on_its_device_and_nothing_else():
    calls = []

    def kernel(X, alpha, **kw):
        calls.append((alpha, kw["dim"], kw["n_iter"]))
        return torch.zeros_like(X)

    x = torch.randn(3, 5)
    register_kernel(Mapping.SPARSEMAX, "cpu", kernel)
    try:
        assert kernel_for(Mapping.SPARSEMAX, x.device) is kernel
        assert torch.equal(entmax(x, 2, dim=0, n_iter=7), torch.zeros_like(x))
        assert calls == [(2, 0, 7)]
        torch.testing.assert_close(entmax(x, 1.5), entmax15(x))  # another case: untouched
        assert kernel_for(Mapping.SPARSEMAX, torch.device("meta")) is None
    finally:
        unregister_kernel(Mapping.SPARSEMAX, "cpu")
    assert kernel_for(Mapping.SPARSEMAX, x.device) is None
    torch.testing.assert_close(entmax(x, 2), sparsemax(x))


def test_register_kernel_rejects_what_is_not_a_case_or_not_callable():
    with pytest.raises(
        TypeError, match="'mapping' parameter of register_kernel must be a Mapping"
    ):
        register_kernel("sparsemax", "cpu", lambda X, alpha, **kw: X)
    with pytest.raises(
        TypeError, match="'kernel' parameter of register_kernel must be a callable"
    ):
        register_kernel(Mapping.SPARSEMAX, "cpu", None)
    with pytest.raises(RuntimeError):
        register_kernel(Mapping.SPARSEMAX, "no-such-device", lambda X, alpha, **kw: X)
