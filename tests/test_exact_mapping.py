"""``predict_proba`` is the exact alpha-entmax of ``decision_function`` (issue 25).

For every alpha an estimator can reach, given or learned, the probabilities must be the
exact mapping of the float64 scores within 1e-9 (here: 1e-12), checked against an mpmath
bisection with 40 significant digits in the bases of the support (see
``tests/entmax/test_high_precision.py``), on rows that saturate the mapping: points deep in
a cluster (one class far ahead), between clusters (near-ties), and far outside the data; and
a row's probabilities must not depend on the other rows predicted with it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from mp_truth import truth
from sklearn.datasets import make_blobs

from sk_entmax import EntmaxClassifier

TOL = 1e-12


def _data(spread: float):
    """Issue 25's data (``spread`` 0.1), and rows that saturate the mapping."""
    X, y = make_blobs(n_samples=30, n_features=2, centers=3, cluster_std=spread, random_state=0)
    centers = np.array([X[y == k].mean(0) for k in range(3)])
    rows = [
        X[:3],
        centers,
        (centers[[0, 1, 2]] + centers[[1, 2, 0]]) / 2,  # between two clusters
        [centers.mean(0)],  # between all three
        centers * 20,  # far out: one class far ahead
        [centers[0] + 1e-9],
    ]
    return X, y, np.vstack(rows)


@pytest.mark.parametrize(
    ("params", "spread"),
    [
        ({"alpha": 1.01, "max_iter": 30}, 0.1),  # (a short fit: any scores will do)
        ({"alpha": 1.25, "max_iter": 30}, 0.1),
        ({"alpha": 2.5, "max_iter": 30}, 0.1),
        ({"alpha": 4.0, "max_iter": 30}, 0.1),
        ({"alpha": 10.0, "max_iter": 30}, 0.1),
        # issue 25's case: separable clusters, the learned alpha grows large (about 50)
        ({"learn_alpha": True}, 0.1),
    ],
    ids=["1.01", "1.25", "2.5", "4", "10", "learned"],
)
def test_predict_proba_is_the_exact_mapping_of_the_scores(params, spread):
    X, y, rows = _data(spread)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence: a short fit is enough here
        clf = EntmaxClassifier(**params).fit(X, y)
    proba = clf.predict_proba(rows)
    scores = clf.decision_function(rows)
    assert scores.dtype == proba.dtype == np.float64
    exact = np.array([truth(row.tolist(), clf.alpha_) for row in scores])
    np.testing.assert_allclose(proba, exact, rtol=0, atol=TOL)
    assert ((proba == 0) == (exact == 0)).all()  # the same support
    # a row alone gives what it gives among the others
    alone = np.vstack([clf.predict_proba(rows[i : i + 1]) for i in range(len(rows))])
    np.testing.assert_allclose(alone, proba, rtol=0, atol=TOL)
