"""The one alpha-to-algorithm decision: its cases, and the kernels registered against it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sk_entmax.entmax import entmax, entmax15, entmax_bisect, sparsemax
from sk_entmax.entmax.algorithms import (
    NEWTON_MIN_ALPHA,
    NEWTON_MIN_ITER,
    Case,
    case_for,
    kernel_for,
    newton_applies,
    register_kernel,
    unregister_kernel,
)


@pytest.mark.parametrize(
    ("alpha", "expected"),
    [
        (1, Case.SOFTMAX),
        (1.0, Case.SOFTMAX),
        (np.float64(1.5), Case.ENTMAX15),
        (2, Case.SPARSEMAX),
        (2.0, Case.SPARSEMAX),
        (1.25, Case.ROOT),
        (0.5, Case.ROOT),
        (3.0, Case.ROOT),
        (float("nan"), Case.ROOT),
        (torch.tensor(2.0), Case.PER_ROW),
        (torch.full((4, 1), 1.5), Case.PER_ROW),
    ],
)
def test_case_for_each_case(alpha, expected):
    assert case_for(alpha) is expected


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
    register_kernel(Case.SPARSEMAX, "cpu", kernel)
    try:
        assert kernel_for(Case.SPARSEMAX, x.device) is kernel
        assert torch.equal(entmax(x, 2, dim=0, n_iter=7), torch.zeros_like(x))
        assert calls == [(2, 0, 7)]
        torch.testing.assert_close(entmax(x, 1.5), entmax15(x))  # another case: untouched
        assert kernel_for(Case.SPARSEMAX, torch.device("meta")) is None
    finally:
        unregister_kernel(Case.SPARSEMAX, "cpu")
    assert kernel_for(Case.SPARSEMAX, x.device) is None
    torch.testing.assert_close(entmax(x, 2), sparsemax(x))


def test_register_kernel_rejects_what_is_not_a_case_or_not_callable():
    with pytest.raises(TypeError, match="'mapping' parameter of register_kernel must be a Case"):
        register_kernel("sparsemax", "cpu", lambda X, alpha, **kw: X)
    with pytest.raises(
        TypeError, match="'kernel' parameter of register_kernel must be a callable"
    ):
        register_kernel(Case.SPARSEMAX, "cpu", None)
    with pytest.raises(RuntimeError):
        register_kernel(Case.SPARSEMAX, "no-such-device", lambda X, alpha, **kw: X)


def test_old_names_are_deprecated_aliases():
    from sk_entmax.entmax import algorithms

    with pytest.warns(DeprecationWarning, match="use Case"):
        assert algorithms.Mapping is Case
    with pytest.warns(DeprecationWarning, match="use case_for"):
        assert algorithms.mapping_for is case_for
    with pytest.raises(AttributeError):
        algorithms.no_such_name  # noqa: B018


def test_as_kernel_hands_on_the_named_arguments_and_the_fixed_ones():
    from sk_entmax.entmax.algorithms import as_kernel

    seen = {}

    def function(X, **kwargs):
        seen.update(kwargs)
        return X

    kernel = as_kernel(function, "dim", "n_iter", owner="me")
    x = torch.zeros(2, 3)
    assert kernel(x, 1.5, dim=0, n_iter=7, training=False, return_support_size=True) is x
    assert seen == {"dim": 0, "n_iter": 7, "owner": "me"}
    with pytest.raises(ValueError, match="convention"):
        as_kernel(function, "k")
