"""Multi-label ``predict`` is the support of ``predict_proba`` on every row (issue 44), for
every estimator that takes a multi-label indicator target; "no label" is the mass a row of
``predict_proba`` does not sum to."""

import numpy as np
import pytest
from sklearn.datasets import make_multilabel_classification

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier

ESTIMATORS = [
    SparsemaxClassifier(random_state=0),
    EntmaxClassifier(alpha=1.5, random_state=0),
    TabNetEntmaxClassifier(
        n_d=4, n_a=4, n_steps=2, n_independent=1, n_shared=1, max_epochs=5, random_state=0
    ),
]


@pytest.fixture(scope="module")
def data():
    X, Y = make_multilabel_classification(
        n_samples=400, n_features=8, n_classes=4, allow_unlabeled=True, random_state=1
    )
    return X[:200], Y[:200], X[200:], Y[200:]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_multilabel_predict_is_the_support_of_predict_proba_on_every_row(estimator, data):
    X, Y, X_test, _ = data
    clf = estimator.fit(X, Y)
    for rows in (X, X_test):
        proba = clf.predict_proba(rows)
        pred = clf.predict(rows)
        np.testing.assert_array_equal(pred, (proba > 0).astype(Y.dtype))
        # "no label": the mass the row does not sum to, 1 exactly where nothing is predicted
        no_label = 1.0 - proba.sum(axis=1)
        np.testing.assert_allclose(no_label, clf._slot_proba(rows)[:, -1], atol=1e-12)
        assert (no_label >= -1e-12).all()
        np.testing.assert_allclose(no_label[~pred.any(axis=1)], 1.0, atol=1e-12)


def test_the_conformal_wrapper_predicts_the_support_of_its_probabilities(data):
    from sk_entmax.conformal import SparseConformalClassifier

    X, Y, X_test, _ = data
    model = SparsemaxClassifier(random_state=0).fit(X[:120], Y[:120])
    wrapper = SparseConformalClassifier(model, prefit=True, confidence_level=0.9)
    wrapper.conformalize(X[120:], Y[120:])
    proba = wrapper.predict_proba(X_test)
    pred = wrapper.predict(X_test)
    np.testing.assert_array_equal(pred, (proba > 0).astype(Y.dtype))
    np.testing.assert_array_equal(pred.astype(bool), wrapper.predict_set(X_test))
