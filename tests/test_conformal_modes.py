"""The modes of issue 62 against independent counts over many random splits.

Each guarantee is checked as a property of the estimator over many calibration/test splits
of one set of decision scores (a stub classifier whose ``decision_function`` returns ``X``:
no model is fitted per split, so 400 splits cost well under a second), with the coverage or
the loss counted here, by plain loops or numpy, never by the code under test:

- ``randomized=True``: the mean coverage is the level, within 3 standard errors and 0.005,
  on scores full of ties (most true labels score 0, as on an accurate model), where the
  conservative sets over-cover by far; each set is the smoothed p-value rule, by a loop;
- ``risk="recall"``: the mean false negative rate is at most ``eps`` (within 3 standard
  errors); the threshold is the smallest of a brute-force search;
- ``cv=K``: the out-of-fold scores are those of clones fitted here on the same folds, the
  final model predicts as one fitted on all rows, and over splits of a small table (fast
  linear fits) the mean coverage is at least ``1 - eps - 0.01``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import load_wine
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import RidgeClassifier
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_entmax import SparseConformalClassifier, SparsemaxClassifier
from sk_entmax.conformal import nonconformity_scores

N_SPLITS = 400


class Scores(ClassifierMixin, BaseEstimator):
    """A fitted stub: ``X`` holds the decision scores (``multilabel`` marks a multi-label
    model, as sk_entmax's classifiers do with ``multilabel_``)."""

    def __init__(self, n_classes: int = 5, multilabel: bool = False) -> None:
        self.n_classes = n_classes
        self.multilabel = multilabel

    def fit(self, X, y=None):
        self.classes_ = np.arange(self.n_classes)
        self.multilabel_ = self.multilabel
        self.n_features_in_ = self.n_classes
        return self

    def decision_function(self, X):
        return np.asarray(X, dtype=np.float64)


def _tied_scores(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores rounded to a coarse grid (many ties) and labels from a sharp softmax of them:
    the true label is the top one about 90% of the time, so most true scores are 0."""
    rng = np.random.default_rng(seed)
    z = np.round(rng.normal(size=(n, k)) * 3, 0)
    y = np.argmax(4 * z + rng.gumbel(size=(n, k)), axis=1)
    return z, y


def _split(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    order = rng.permutation(n)
    return order[: n // 2], order[n // 2 :]


def _mean_se(values: list[float]) -> tuple[float, float]:
    a = np.asarray(values)
    return float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.size))


# ---------------------------------------------------------------------- randomized


@pytest.mark.parametrize("class_conditional", [False, True])
def test_randomized_coverage_is_the_level_over_splits(class_conditional):
    z, y = _tied_scores(800, 5, seed=0)
    stub = Scores(5).fit(z)
    rng = np.random.default_rng(1)
    level = 0.9
    exact, conservative, empty = [], [], []
    for seed in range(N_SPLITS):
        cal, test = _split(len(y), rng)
        clf = SparseConformalClassifier(
            stub,
            prefit=True,
            confidence_level=level,
            randomized=True,
            class_conditional=class_conditional,
            random_state=seed,
        ).conformalize(z[cal], y[cal])
        sets = clf.predict_set(z[test])
        exact.append(sets[np.arange(len(test)), y[test]].mean())
        empty.append((~sets.any(axis=1)).mean())
        if seed < 20:
            plain = clf.set_params(randomized=False).conformalize(z[cal], y[cal])
            conservative.append(plain.predict_set(z[test])[np.arange(len(test)), y[test]].mean())
    mean, se = _mean_se(exact)
    assert abs(mean - level) <= max(3 * se, 0.005), (mean, se)
    assert abs(mean - level) <= 0.005, mean
    # the conservative sets over-cover these tied scores by far: the randomization matters
    if not class_conditional:
        assert np.mean(conservative) > level + 0.02
        assert np.mean(empty) > 0.01  # some sets are empty


def test_randomized_sets_are_the_smoothed_p_value_rule_by_a_loop():
    z, y = _tied_scores(120, 4, seed=3)
    stub = Scores(4).fit(z)
    clf = SparseConformalClassifier(
        stub, prefit=True, confidence_level=[0.8, 0.9], randomized=True, random_state=7
    ).conformalize(z[:60], y[:60])
    sets = clf.predict_set(z[60:])
    proba = clf.predict_proba(z[60:])
    cal = nonconformity_scores(z[:60], 2.0)[np.arange(60), y[:60]]
    u = np.random.default_rng(clf.randomization_seed_).random(60)
    test = nonconformity_scores(z[60:], 2.0)
    for i in range(60):
        for label in range(4):
            s = test[i, label]
            greater = sum(1 for c in cal if c > s)
            equal = sum(1 for c in cal if c == s)
            p = (greater + u[i] * (equal + 1)) / 61
            for j, level in enumerate((0.8, 0.9)):
                assert sets[i, label, j] == (p > 1 - level), (i, label, level)
    # the support of predict_proba is the first level's set; an empty set has all zeros
    np.testing.assert_array_equal(proba > 0, sets[:, :, 0])
    full = sets[:, :, 0].any(axis=1)
    np.testing.assert_allclose(proba[full].sum(axis=1), 1.0)
    # and a randomized set is within the conservative one
    plain = clf.set_params(randomized=False).conformalize(z[:60], y[:60]).predict_set(z[60:])
    assert not (sets & ~plain).any()


def test_randomized_draws_are_seeded():
    z, y = _tied_scores(200, 4, seed=5)
    stub = Scores(4).fit(z)

    def sets(random_state):
        clf = SparseConformalClassifier(
            stub, prefit=True, randomized=True, random_state=random_state
        ).conformalize(z[:100], y[:100])
        return clf, clf.predict_set(z[100:])

    (a, first), (_, again) = sets(3), sets(3)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(a.predict_set(z[100:]), first)  # call after call
    assert any(not np.array_equal(first, sets(s)[1]) for s in range(4, 8))


# ---------------------------------------------------------------------- recall risk


def _multilabel_scores(
    n: int, k: int, seed: int, unlabeled: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2
    Y = (rng.random((n, k)) < 1 / (1 + np.exp(-2 * z))).astype(np.int64)
    if unlabeled:
        Y[rng.random(n) < 0.05] = 0  # a few rows without labels
    else:  # MAPIE takes rows with labels only
        Y[np.arange(n), np.argmax(z, axis=1)] |= ~Y.any(axis=1)
    return z, Y


def _fnr(Y: np.ndarray, sets: np.ndarray) -> float:
    total = 0.0
    for labels, kept in zip(Y.astype(bool), sets, strict=True):
        if labels.any():
            total += (labels & ~kept).sum() / labels.sum()
    return total / len(Y)


def _brute_threshold(z: np.ndarray, Y: np.ndarray, level: float) -> float:
    """The smallest lam in {0} and the true labels' scores whose inflated risk is <= eps."""
    scores = nonconformity_scores(z, 2.0)
    n = len(Y)
    candidates = sorted({0.0, *scores[Y.astype(bool)].tolist()})
    for lam in candidates:
        risk = _fnr(Y, scores <= lam)
        if n / (n + 1) * risk + 1 / (n + 1) <= 1 - level + 1e-12:
            return lam
    return math.inf


def test_recall_risk_is_controlled_over_splits():
    z, Y = _multilabel_scores(400, 8, seed=0)
    stub = Scores(8, multilabel=True).fit(z)
    rng = np.random.default_rng(2)
    level = 0.9
    fnr, sizes, strict = [], [], []
    for _ in range(N_SPLITS // 2):
        cal, test = _split(len(Y), rng)
        clf = SparseConformalClassifier(
            stub, prefit=True, confidence_level=level, risk="recall"
        ).conformalize(z[cal], Y[cal])
        sets = clf.predict_set(z[test])
        fnr.append(_fnr(Y[test], sets))
        sizes.append(sets.sum(axis=1).mean())
        if len(strict) < 10:
            whole = SparseConformalClassifier(stub, prefit=True, confidence_level=level)
            strict.append(whole.conformalize(z[cal], Y[cal]).predict_set(z[test]).sum(1).mean())
    mean, se = _mean_se(fnr)
    assert mean <= 1 - level + 3 * se, (mean, se)
    assert mean >= 1 - level - 0.03  # not vacuous: close to the budget
    assert np.mean(sizes) < np.mean(strict)  # smaller than the label-set guarantee's


def test_recall_threshold_is_the_brute_force_one_and_the_support():
    z, Y = _multilabel_scores(80, 6, seed=4)
    stub = Scores(6, multilabel=True).fit(z)
    clf = SparseConformalClassifier(
        stub, prefit=True, confidence_level=[0.9, 0.7], risk="recall"
    ).conformalize(z, Y)
    for i, level in enumerate((0.9, 0.7)):
        assert clf.quantiles_[i, 0] == _brute_threshold(z, Y, level)
    sets = clf.predict_set(z)[:, :, 0]
    np.testing.assert_array_equal(clf.predict_proba(z) > 0, sets)
    np.testing.assert_array_equal(sets, nonconformity_scores(z, 2.0) <= clf.quantiles_[0, 0])
    assert clf.conformity_scores_.size == Y.sum()
    with pytest.warns(UserWarning, match="too few to control the recall"):
        SparseConformalClassifier(stub, prefit=True, risk="recall").conformalize(z[:5], Y[:5])


def test_recall_threshold_is_mapies_conformal_risk_control():
    """MAPIE's own conformal risk control (recall, CRC), an independent implementation,
    given ``-s(x, y)`` as its scores and every candidate threshold as its grid, picks the
    same threshold and the same sets (its sets are ``score > lam``, so the grid is the
    negated candidates, a hair above each)."""
    mapie = pytest.importorskip("mapie.risk_control")
    z, Y = _multilabel_scores(160, 5, seed=6, unlabeled=False)
    stub = Scores(5, multilabel=True).fit(z)
    clf = SparseConformalClassifier(stub, prefit=True, risk="recall").conformalize(z[:80], Y[:80])
    scores = nonconformity_scores(z[:80], 2.0)
    candidates = np.unique(np.r_[0.0, scores[Y[:80].astype(bool)]])
    controller = mapie.MultiLabelClassificationController(
        predict_function=lambda X: -nonconformity_scores(X, 2.0),
        risk="recall",
        method="crc",
        target_level=0.9,
        predict_params=np.sort(-np.nextafter(candidates, np.inf)),
    ).calibrate(z[:80], Y[:80])
    assert controller.best_predict_param[0] == -np.nextafter(clf.quantiles_[0, 0], np.inf)
    np.testing.assert_array_equal(controller.predict(z[80:])[:, :, 0], clf.predict_set(z[80:]))


# ---------------------------------------------------------------------- cross-conformal


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _linear():
    """A linear classifier with a closed-form fit (milliseconds)."""
    return RidgeClassifier(alpha=10.0)


def test_cv_scores_are_out_of_fold_and_the_model_is_fitted_on_all_rows(wine):
    X, y = wine
    clf = SparseConformalClassifier(_linear(), cv=4, random_state=0).fit(X, y)
    folds = StratifiedKFold(4, shuffle=True, random_state=0)
    expected = np.empty(len(y))
    for train, test in folds.split(X, y):
        z = clone(_linear()).fit(X[train], y[train]).decision_function(X[test])
        expected[test] = nonconformity_scores(z, 2.0)[np.arange(len(test)), y[test]]
    np.testing.assert_array_equal(clf.conformity_scores_, expected)
    np.testing.assert_array_equal(clf.conformity_classes_, y)
    assert clf.n_conformalize_samples_ == len(y)
    full = clone(_linear()).fit(X, y)
    np.testing.assert_array_equal(clf.predict(X), full.predict(X))
    np.testing.assert_array_equal(clf.estimator_.coef_, full.coef_)
    np.testing.assert_array_equal(clf.predict_proba(X) > 0, clf.predict_set(X))
    # a per-row fit parameter is cut to each fold's rows
    weighted = SparseConformalClassifier(_linear(), cv=4, random_state=0)
    weighted.fit(X, y, sample_weight=np.ones(len(y)))
    np.testing.assert_allclose(weighted.conformity_scores_, expected, rtol=1e-6, atol=1e-9)


def test_cv_coverage_over_splits(wine):
    """A linear discriminant (a closed-form fit, about a millisecond) over 40 splits."""
    X, y = wine
    level, coverage = 0.8, []
    for seed in range(40):
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=0.4, stratify=y, random_state=seed
        )
        clf = SparseConformalClassifier(
            LinearDiscriminantAnalysis(), confidence_level=level, cv=5, random_state=seed
        ).fit(X_tr, y_tr)
        sets = clf.predict_set(X_te)
        coverage.append(np.mean([sets[i, label] for i, label in enumerate(y_te)]))
    mean, se = _mean_se(coverage)
    assert mean >= level - 0.01 - 3 * se, (mean, se)


def test_cv_with_a_sparse_classifier_a_pipeline_and_multilabel(wine):
    X, y = wine
    model = make_pipeline(StandardScaler(), SparsemaxClassifier(max_epochs=5, random_state=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = SparseConformalClassifier(model, cv=3, randomized=True, random_state=0).fit(X, y)
    assert hasattr(clf, "randomization_seed_") and clf.conformity_scores_.shape == (len(y),)
    np.testing.assert_array_equal(clf.predict_proba(X) > 0, clf.predict_set(X))
    Y = np.stack([y == 0, y == 1, (y == 2) | (X[:, 0] > 0)], axis=1).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        multi = SparseConformalClassifier(
            SparsemaxClassifier(max_epochs=5, random_state=0), cv=3, risk="recall", random_state=0
        ).fit(X, Y)
    assert multi.conformity_rows_.shape == (Y.sum(),)
    assert multi.predict(X).shape == Y.shape


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"cv": 3, "prefit": True}, "cv=3 fits clones"),
        ({"cv": 1}, "cv"),
        ({"cv": "5"}, "cv"),
        ({"risk": "recall", "randomized": True}, "no randomized form"),
        ({"risk": "recall", "class_conditional": True}, "no per-class form"),
        ({"risk": "precision"}, "risk"),
        ({"randomized": "yes"}, "randomized"),
    ],
)
def test_bad_mode_parameters(wine, params, match):
    X, y = wine
    with pytest.raises((ValueError, TypeError), match=match):
        SparseConformalClassifier(_linear(), **params).fit(X, y)


def test_mode_errors_on_the_data(wine):
    X, y = wine
    with pytest.raises(ValueError, match="single row"):
        SparseConformalClassifier(_linear(), cv=3).fit(X[:60], np.r_[y[:59], 2])
    with pytest.raises(ValueError, match="recall is coverage"):
        SparseConformalClassifier(_linear(), cv=3, risk="recall").fit(X, y)
    clf = SparseConformalClassifier(_linear(), cv=3, random_state=0).fit(X, y)
    before = clf.quantiles_.copy()
    with pytest.raises(ValueError, match="recall is coverage"):
        clf.set_params(risk="recall").conformalize(X, y)
    np.testing.assert_array_equal(clf.quantiles_, before)  # a failed call keeps it
