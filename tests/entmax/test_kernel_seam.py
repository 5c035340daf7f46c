"""One kernel seam: a kernel registered for a case serves every user of that case.

Each test registers a counting kernel (the core's own implementation of the case, wrapped
to count its calls) on CPU and shows that the losses, the estimators' ``predict_proba``,
TabNet's masks and entmax attention all call it, with the results they give without it.
Every count asserted here was 0 before the users went through
:func:`sk_entmax.entmax.algorithms.select` (only ``entmax`` asked the registry).
"""

from __future__ import annotations

import contextlib
import warnings
from collections import Counter

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier
from sk_entmax.entmax import (
    EntmaxBisectLoss,
    entmax15,
    entmax15_loss,
    entmax_attention,
    entmax_attention_weights,
    entmax_bisect,
    entmax_bisect_loss,
    entmax_loss,
    sparsemax,
    sparsemax_bisect_loss,
    sparsemax_loss,
)
from sk_entmax.entmax.algorithms import Case, kernel_for, register_kernel, unregister_kernel
from sk_entmax.nn import EntmaxMultiheadAttention
from sk_entmax.nn.head import EntmaxHead


def _real(mapping: Case):
    """The core's implementation of ``mapping`` by a function that never asks the registry."""
    if mapping is Case.SPARSEMAX:
        return lambda X, alpha, *, dim, n_iter, training, return_support_size: sparsemax(
            X, dim, training=training, return_support_size=return_support_size
        )
    if mapping is Case.ENTMAX15:
        return lambda X, alpha, *, dim, n_iter, training, return_support_size: entmax15(
            X, dim, training=training, return_support_size=return_support_size
        )
    return lambda X, alpha, *, dim, n_iter, training, return_support_size: entmax_bisect(
        X, alpha, dim, n_iter, training=training, return_support_size=return_support_size
    )


@contextlib.contextmanager
def counting(*mappings: Case):
    """Register a counting kernel for each of ``mappings`` on CPU; unregister them after."""
    calls: Counter = Counter()

    def make(mapping):
        real = _real(mapping)

        def kernel(X, alpha, *, dim, n_iter, training, return_support_size):
            calls[mapping] += 1
            return real(
                X,
                alpha,
                dim=dim,
                n_iter=n_iter,
                training=training,
                return_support_size=return_support_size,
            )

        return kernel

    try:
        for mapping in mappings:
            register_kernel(mapping, "cpu", make(mapping))
        yield calls
    finally:
        for mapping in mappings:
            unregister_kernel(mapping, "cpu")


ALL = tuple(Case)


@pytest.fixture(autouse=True)
def _no_kernel_left():
    yield
    for mapping in Case:
        unregister_kernel(mapping, "cpu")
    assert all(kernel_for(m, torch.device("cpu")) is None for m in Case)


CASES = [(2.0, Case.SPARSEMAX), (1.5, Case.ENTMAX15), (1.3, Case.ROOT)]
CASES += [(1.0, Case.SOFTMAX)]


# --------------------------------------------------------------------------- losses


@pytest.mark.parametrize(("alpha", "mapping"), CASES)
def test_entmax_loss_and_the_head_compute_p_with_the_kernel(alpha, mapping):
    torch.manual_seed(0)
    X = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 1, 2, 3, 1])
    head = EntmaxHead(alpha)
    expected = entmax_loss(X, y, alpha)
    (expected_grad,) = torch.autograd.grad(expected.sum(), X)
    expected_fast = head.loss_and_grad(X.detach(), y)
    with counting(mapping) as calls:
        loss = entmax_loss(X, y, alpha)
        assert calls[mapping] == 1
        (grad,) = torch.autograd.grad(loss.sum(), X)
        head.loss(X, y)
        assert calls[mapping] == 2
        fast = head.loss_and_grad(X.detach(), y)
        assert calls[mapping] == 3
        head.proba(X)
        assert calls[mapping] == 4
    torch.testing.assert_close(loss, expected, rtol=0, atol=0)
    torch.testing.assert_close(grad, expected_grad, rtol=0, atol=0)
    for got, want in zip(fast, expected_fast, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_the_named_losses_and_a_tensor_alpha_use_the_kernel_of_their_case():
    torch.manual_seed(0)
    X = torch.randn(4, 6)
    y = torch.tensor([0, 5, 2, 3])
    with counting(*ALL) as calls:
        sparsemax_loss(X, y)
        sparsemax_bisect_loss(X, y)
        assert calls[Case.SPARSEMAX] == 2
        entmax15_loss(X, y)
        assert calls[Case.ENTMAX15] == 1
        entmax_bisect_loss(X, y, alpha=1.3)
        EntmaxBisectLoss(alpha=1.3)(X, y)
        assert calls[Case.ROOT] == 2
        entmax_bisect_loss(X, y, alpha=torch.full((4,), 1.4))
        entmax_loss(X, y, alpha=torch.full((4, 1), 1.4))
        assert calls[Case.PER_ROW] == 2
        assert sum(calls.values()) == 7


# --------------------------------------------------------------------------- estimators

_RNG = np.random.default_rng(0)
_X = _RNG.normal(size=(30, 3))
_Y = (_X[:, 0] > 0).astype(int) + (_X[:, 1] > 0.5)


@pytest.mark.parametrize(
    ("make", "mapping"),
    [
        (lambda: EntmaxClassifier(random_state=0, max_iter=5), Case.ENTMAX15),
        (lambda: SparsemaxClassifier(random_state=0, max_iter=5), Case.SPARSEMAX),
        (lambda: EntmaxClassifier(alpha=1.3, random_state=0, max_iter=5), Case.ROOT),
        # the minibatch solvers train through EntmaxHead.loss, softmax's L-BFGS through
        # loss_and_grad's softmax: both bypassed the registry before
        (lambda: EntmaxClassifier(solver="adam", max_epochs=1, random_state=0), Case.ENTMAX15),
        (lambda: EntmaxClassifier(alpha=1.0, random_state=0, max_iter=5), Case.SOFTMAX),
    ],
)
def test_fit_and_predict_proba_of_an_estimator_use_the_kernel(make, mapping):
    with counting(mapping) as calls, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = make().fit(_X, _Y)
        fitted = calls[mapping]
        assert fitted > 0
        proba = clf.predict_proba(_X)
        assert calls[mapping] > fitted
    np.testing.assert_allclose(proba.sum(1), 1.0)


@pytest.mark.parametrize(
    ("mode", "mapping"), [("sparsemax", Case.SPARSEMAX), ("entmax15", Case.ENTMAX15)]
)
def test_tabnet_masks_use_the_kernel_in_fit_predict_and_explain(mode, mapping):
    # the head's alpha (1.3) is another case: the count is the masks' alone
    clf = TabNetEntmaxClassifier(
        alpha=1.3,
        entmax_mode=mode,
        max_epochs=1,
        n_steps=2,
        n_d=4,
        n_a=4,
        batch_size=16,
        random_state=0,
    )
    with counting(mapping) as calls:
        clf.fit(_X, _Y)
        assert calls[mapping] > 0
        before = calls[mapping]
        clf.predict(_X)
        assert calls[mapping] > before
        before = calls[mapping]
        M, _masks = clf.explain(_X)
        assert calls[mapping] > before
    assert M.shape == _X.shape


# --------------------------------------------------------------------------- attention


@pytest.mark.parametrize(("alpha", "mapping"), CASES)
def test_entmax_attention_weights_come_from_the_kernel(alpha, mapping):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4, requires_grad=True) for _ in range(3))
    expected = entmax_attention(q, k, v, alpha=alpha, block_size=2)
    expected_grads = torch.autograd.grad(expected.sum(), (q, k, v))
    with counting(mapping) as calls:
        out = entmax_attention(q, k, v, alpha=alpha, block_size=2)
        assert calls[mapping] == 3  # one per block of queries
        grads = torch.autograd.grad(out.sum(), (q, k, v))
        entmax_attention_weights(q, k, alpha=alpha)
        assert calls[mapping] == 4
    # the kernel here is the public mapping (training=False: plain ops), not the solver
    # attention calls without one, so the results agree to rounding only
    torch.testing.assert_close(out, expected)
    for got, want in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(got, want)


def test_multihead_attention_uses_the_kernel_with_one_alpha_per_head():
    torch.manual_seed(0)
    fixed = EntmaxMultiheadAttention(8, 2, alpha=1.5, batch_first=True)
    learned = EntmaxMultiheadAttention(8, 2, alpha=1.5, learn_alpha=True, batch_first=True)
    x = torch.randn(2, 5, 8)
    with counting(*ALL) as calls:
        fixed(x, x, x, need_weights=False)
        assert calls[Case.ENTMAX15] == 1
        fixed(x, x, x, need_weights=True)
        assert calls[Case.ENTMAX15] == 2
        learned(x, x, x, need_weights=False)
        assert calls[Case.PER_ROW] == 1
