"""A row's prediction does not depend on the other rows in its batch, at any thread count.

scikit-learn's ``check_methods_subset_invariance`` asks this of ``predict_proba`` and
``predict`` within ``rtol=1e-7``; ``explain`` owes the same. With several torch threads,
float32 matrix products pick kernels and summation orders by the number of rows, which once
moved TabNet's probabilities by ~4e-7 between a subset and the full batch. The tests run at
torch's default thread count and again at two threads (the most this suite's machines have
cores for, and more than one whatever the default is).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.utils.estimator_checks import check_methods_subset_invariance

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier

X, Y = make_classification(
    n_samples=600, n_features=12, n_informative=6, n_classes=3, random_state=0
)
X = X.astype(np.float32)

ESTIMATORS = [
    EntmaxClassifier(alpha=1.5, random_state=0),
    EntmaxClassifier(alpha=1.25, hidden_layer_sizes=(16,), random_state=0),
    SparsemaxClassifier(random_state=0),
    TabNetEntmaxClassifier(max_epochs=3, random_state=0),
    TabNetEntmaxClassifier(entmax_mode="adaptive", max_epochs=3, random_state=0),
]
IDS = ["entmax15", "entmax-mlp", "sparsemax", "tabnet", "tabnet-adaptive"]


@pytest.fixture(params=["default", 2], ids=["default-threads", "2-threads"])
def threads(request):
    before = torch.get_num_threads()
    if request.param != "default":
        torch.set_num_threads(request.param)
    yield torch.get_num_threads()
    torch.set_num_threads(before)


@pytest.fixture(scope="module", params=ESTIMATORS, ids=IDS)
def fitted(request):
    from sklearn.base import clone

    return clone(request.param).fit(X, Y)


def _subsets():
    rng = np.random.default_rng(0)
    yield np.arange(1)
    yield np.arange(7, 8)
    yield rng.choice(len(X), 33, replace=False)
    yield np.arange(0, len(X), 2)


def test_predict_proba_and_predict_of_a_row_ignore_the_batch(fitted, threads):
    full_proba, full_pred = fitted.predict_proba(X), fitted.predict(X)
    for rows in _subsets():
        np.testing.assert_allclose(
            fitted.predict_proba(X[rows]), full_proba[rows], rtol=1e-7, atol=1e-9
        )
        np.testing.assert_array_equal(fitted.predict(X[rows]), full_pred[rows])


@pytest.fixture(scope="module", params=ESTIMATORS[3:], ids=IDS[3:])
def fitted_tabnet(request):
    from sklearn.base import clone

    return clone(request.param).fit(X, Y)


def test_explain_of_a_row_ignores_the_batch(fitted_tabnet, threads):
    fitted = fitted_tabnet
    full_attr, full_masks = fitted.explain(X)
    for rows in _subsets():
        attr, masks = fitted.explain(X[rows])
        np.testing.assert_allclose(attr, full_attr[rows], rtol=1e-7, atol=1e-9)
        for step, mask in masks.items():
            np.testing.assert_allclose(mask, full_masks[step][rows], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_sklearn_subset_invariance_check_at_two_threads(estimator):
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        check_methods_subset_invariance(type(estimator).__name__, estimator)
    finally:
        torch.set_num_threads(before)
