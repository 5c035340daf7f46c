"""Tuning alpha for sparsity (issue 44): the support-size scorer and the one-standard-error
refit rule that picks the sparsest candidate near the best score."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from sk_entmax import SparsemaxClassifier
from sk_entmax.metrics import make_support_size_scorer, mean_support_size, sparsest_within_one_se


def _results(means, stds, sizes, n_splits=5):
    results = {
        "mean_test_accuracy": np.array(means),
        "std_test_accuracy": np.array(stds),
        "mean_test_support_size": -np.array(sizes),
    }
    for i in range(n_splits):
        results[f"split{i}_test_accuracy"] = np.array(means)
    return results


def test_the_refit_rule_picks_the_sparsest_within_one_standard_error():
    refit = sparsest_within_one_se("accuracy", "support_size")
    # best 0.97 (sd 0.02 over 5 folds: se 0.0089); 0.962 is within, 0.95 is not
    results = _results([0.97, 0.962, 0.95, 0.969], [0.02, 0.01, 0.01, 0.01], [3, 1.5, 1.1, 1.8])
    assert refit(results) == 1
    # a tie in size goes to the first in the grid
    assert refit(_results([0.9, 0.9], [0.0, 0.0], [2.0, 2.0])) == 0


def test_the_refit_rule_names_a_missing_score():
    with pytest.raises(KeyError, match=r"no score 'support_size'.*make_support_size_scorer"):
        sparsest_within_one_se()({"mean_test_accuracy": [1.0], "std_test_accuracy": [0.0]})


def test_the_support_size_scorer_is_minus_the_mean_support_size():
    X, y = load_iris(return_X_y=True)
    clf = SparsemaxClassifier(C=0.1, random_state=0).fit(X[::3], y[::3])
    assert make_support_size_scorer()(clf, X, y) == -mean_support_size(clf.predict_proba(X))
