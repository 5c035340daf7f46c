"""SparseConformalClassifier against independent truth.

Coverage is checked by Monte Carlo over 500 random calibration/test splits around one
fitted model (the decision scores are computed once, the splits run in numpy through the
class's own calibration routine): the mean coverage must lie in the split-conformal band
``[1 - eps, 1 - eps + 1 / (n + 1)]`` within 3 standard errors. The sets are checked against
a brute-force loop over rows and labels that never goes through the temperature, and the
temperature route against the unmasked entmax mapping of the core.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import make_classification, make_multilabel_classification
from sklearn.exceptions import DataConversionWarning, NotFittedError
from sklearn.linear_model import LogisticRegression, RidgeClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import parametrize_with_checks

from sk_entmax import (
    EntmaxClassifier,
    SparseConformalClassifier,
    SparsemaxClassifier,
    TabNetEntmaxClassifier,
)
from sk_entmax._conformal_inputs import default_estimator
from sk_entmax._conformal_maths import _label_scores, _top_sets, calibrate, calibrated_proba
from sk_entmax.conformal import conformal_quantile, nonconformity_scores
from sk_entmax.entmax import entmax
from sk_entmax.metrics import mean_support_size, stratified_coverage, support_coverage

N_SPLITS = 500
EPSILONS = [0.05, 0.1, 0.2]


def brute_score(z, y, alpha):
    """s(x, y) by a plain loop over the labels ranked above y."""
    delta = 1.0 / (alpha - 1.0)
    total = 0.0
    for value in z:
        if value > z[y]:
            total += (float(value) - float(z[y])) ** delta
    return total ** (1.0 / delta)


def brute_quantile(scores, level):
    ordered = sorted(float(s) for s in scores)
    rank = math.ceil((len(ordered) + 1) * level - 1e-9)
    return math.inf if rank > len(ordered) else ordered[rank - 1]


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=1600,
        n_features=12,
        n_informative=8,
        n_classes=8,
        n_clusters_per_class=1,
        class_sep=0.8,
        random_state=0,
    )
    return X, y


@pytest.fixture(scope="module")
def sparsemax_model(data):
    X, y = data
    return SparsemaxClassifier(max_epochs=30, random_state=0).fit(X[:400], y[:400])


@pytest.fixture(scope="module")
def learned_model(data):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return EntmaxClassifier(
            alpha=1.3, learn_alpha=True, alpha_max=1.7, max_epochs=30, random_state=0
        ).fit(X[:400], y[:400])


# ---------------------------------------------------------------------- coverage, Monte Carlo


def _splits(n, rng):
    for _ in range(N_SPLITS):
        order = rng.permutation(n)
        yield order[: n // 2], order[n // 2 :]


def test_marginal_coverage_over_500_splits(data, sparsemax_model):
    X, y = data
    z = sparsemax_model.decision_function(X[400:])
    codes = y[400:]
    scores = nonconformity_scores(z, 2.0)
    true_scores = scores[np.arange(len(codes)), codes]
    levels = 1 - np.array(EPSILONS)
    rng = np.random.default_rng(0)
    coverage = np.empty((N_SPLITS, len(levels)))
    for i, (cal, test) in enumerate(_splits(len(codes), rng)):
        quantiles, _ = calibrate(true_scores[cal], codes[cal], 8, levels)
        sets = scores[test][:, :, None] <= quantiles.T[None]
        coverage[i] = sets[np.arange(len(test)), codes[test]].mean(axis=0)
        # in every split, the support of the calibrated mapping is the set
        temperature = (np.nextafter(quantiles[1, 0], np.inf)) * 1.0
        proba = calibrated_proba(z[test], sets[:, :, 1], temperature, 2.0)
        assert np.array_equal(proba > 0, sets[:, :, 1])
    n = len(codes) // 2
    mean = coverage.mean(axis=0)
    se = coverage.std(axis=0, ddof=1) / np.sqrt(N_SPLITS)
    assert np.all(mean >= levels - 3 * se), (mean, levels, se)
    assert np.all(mean <= levels + 1 / (n + 1) + 3 * se), (mean, levels, se)


def test_class_conditional_coverage_per_class(data, sparsemax_model):
    X, y = data
    z = sparsemax_model.decision_function(X[400:])
    codes = y[400:]
    scores = nonconformity_scores(z, 2.0)
    true_scores = scores[np.arange(len(codes)), codes]
    level = np.array([0.9])
    rng = np.random.default_rng(1)
    per_class = np.full((N_SPLITS, 8), np.nan)
    for i, (cal, test) in enumerate(_splits(len(codes), rng)):
        quantiles, _ = calibrate(true_scores[cal], codes[cal], 8, level, class_conditional=True)
        covered = true_scores[test] <= quantiles[0, codes[test]]
        for c in range(8):
            per_class[i, c] = covered[codes[test] == c].mean()
    mean = per_class.mean(axis=0)
    se = per_class.std(axis=0, ddof=1) / np.sqrt(N_SPLITS)
    assert np.all(mean >= 0.9 - 3 * se), mean


# ---------------------------------------------------------------------- brute force


@pytest.mark.parametrize("kind", ["sparsemax", "entmax15", "learned"])
def test_sets_match_brute_force_and_the_core_mapping(data, sparsemax_model, learned_model, kind):
    X, y = data
    if kind == "sparsemax":
        model, alpha = sparsemax_model, "auto"
    elif kind == "entmax15":
        model, alpha = sparsemax_model, 1.5
    else:
        model, alpha = learned_model, "auto"
    clf = SparseConformalClassifier(model, prefit=True, mapping_alpha=alpha)
    clf.conformalize(X[400:1000], y[400:1000])
    a = clf.mapping_alpha_
    if kind == "learned":
        assert a == pytest.approx(learned_model.alpha_) and a not in (1.5, 2.0)
        assert 1.0 < a < 1.7
    z = model.decision_function(X[1000:1200])
    z_cal = model.decision_function(X[400:1000])
    q_hat = brute_quantile(
        [brute_score(row, label, a) for row, label in zip(z_cal, y[400:1000])], 0.9
    )
    assert clf.quantiles_[0, 0] == pytest.approx(q_hat, rel=1e-12)
    expected = np.array([[brute_score(row, j, a) <= q_hat for j in range(8)] for row in z])
    sets = clf.predict_set(X[1000:1200])
    assert sets.dtype == bool and sets.shape == (200, 8)
    assert np.array_equal(sets, expected)
    proba = clf.predict_proba(X[1000:1200])
    assert np.array_equal(proba > 0, sets)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    # the temperature route: the unmasked core mapping of z / T has the same support
    plain = entmax(torch.from_numpy(z / clf.temperature_), a, n_iter=100).numpy()
    assert np.array_equal(plain > 0, sets)
    np.testing.assert_allclose(plain, proba, atol=1e-7)
    assert np.array_equal(clf.predict(X[1000:1200]), model.predict(X[1000:1200]))


def test_ties_at_the_quantile_are_in_the_set():
    # duplicated rows: a test score equals q_hat exactly
    z = np.array([[2.0, 1.0, 0.0], [1.0, 0.5, 0.2], [3.0, 0.0, 2.5]] * 10)
    scores = nonconformity_scores(z, 2.0)
    q_hat = conformal_quantile(scores[:, 1], 0.5)
    sets = scores <= q_hat
    assert (scores == q_hat).any()
    proba = calibrated_proba(z, sets, np.nextafter(q_hat, np.inf), 2.0)
    assert np.array_equal(proba > 0, sets)
    # q_hat = 0: only the top label, no overflow
    sets0 = scores <= 0.0
    proba0 = calibrated_proba(z, sets0, np.nextafter(0.0, np.inf), 1.5)
    assert np.array_equal(proba0 > 0, sets0) and np.allclose(proba0.sum(axis=1), 1)


@pytest.mark.parametrize("alpha", [2.0, 1.5, 1.25, 1.3])
def test_scores_and_sets_do_not_depend_on_the_rows_around(alpha):
    # rows are scored in blocks that fit in cache: a row scores the same float alone or
    # anywhere in a batch of many blocks, and a batch's sets are each label's score <= q_hat
    rng = np.random.default_rng(0)
    z = np.round(rng.normal(size=(10_000, 7)), 1)  # coarse: ties within rows
    labels = rng.integers(0, 7, len(z))
    # each row three times, in different blocks: ties across rows
    shuffle = rng.permutation(3 * len(z))
    z, labels = np.tile(z, (3, 1))[shuffle], np.tile(labels, 3)[shuffle]
    delta = 1.0 / (alpha - 1.0)
    scores = _label_scores(z, labels, delta)
    some = rng.choice(len(z), 300, replace=False)
    alone = [_label_scores(z[i : i + 1], labels[i : i + 1], delta)[0] for i in some]
    assert np.array_equal(scores[some], alone)
    q_hat = conformal_quantile(scores, 0.9)
    assert (scores == q_hat).sum() > 1  # ties at the quantile
    sets = _top_sets(z, delta, q_hat)
    assert np.array_equal(sets, nonconformity_scores(z, alpha) <= q_hat)
    assert sets[np.arange(len(z)), labels][scores == q_hat].all()


# ---------------------------------------------------------------------- the estimator API


def test_fit_conformalize_levels_and_metrics(data):
    X, y = data
    clf = SparseConformalClassifier(
        SparsemaxClassifier(max_epochs=20, random_state=0), confidence_level=[0.8, 0.95]
    )
    assert clf.fit(X[:400], y[:400]) is clf
    assert clf.conformalize(X[400:1000], y[400:1000]) is clf
    sets = clf.predict_set(X[1000:])
    assert sets.shape == (600, 8, 2)
    assert np.all(sets[:, :, 0] <= sets[:, :, 1])  # nested
    assert clf.quantiles_.shape == (2, 8) and clf.temperatures_.shape == (2,)
    proba = clf.predict_proba(X[1000:])  # the first level
    assert np.array_equal(proba > 0, sets[:, :, 0])
    coverage = support_coverage(y[1000:], sets)
    assert coverage.shape == (2,) and np.all(coverage > [0.7, 0.88])
    assert coverage[0] == pytest.approx(support_coverage(y[1000:], proba))
    sizes = mean_support_size(sets)
    assert sizes[0] == pytest.approx(mean_support_size(proba))
    _strata, cov, counts = stratified_coverage(y[1000:], sets[:, :, 0])
    assert counts.sum() == 600
    assert np.average(cov, weights=counts) == pytest.approx(coverage[0])
    classes, cov_c, counts_c = stratified_coverage(y[1000:], sets[:, :, 0], by="class")
    assert classes.tolist() == list(range(8))
    assert np.average(cov_c, weights=counts_c) == pytest.approx(coverage[0])


def test_class_conditional_estimator(data, sparsemax_model):
    X, y = data
    clf = SparseConformalClassifier(sparsemax_model, prefit=True, class_conditional=True)
    clf.conformalize(X[400:1200], y[400:1200])
    assert clf.quantiles_.shape == (1, 8) and len(set(clf.quantiles_[0])) > 1
    assert clf.n_conformalize_samples_.sum() == 800
    sets = clf.predict_set(X[1200:])
    scores = nonconformity_scores(sparsemax_model.decision_function(X[1200:]), 2.0)
    assert np.array_equal(sets, scores <= clf.quantiles_[0][None])
    proba = clf.predict_proba(X[1200:])
    assert np.array_equal(proba > 0, sets)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("alpha", ["auto", 1.5])
def test_logistic_regression(binary, alpha):
    n_classes = 2 if binary else 4
    X, y = make_classification(
        600, 6, n_informative=4, n_classes=n_classes, n_clusters_per_class=1, random_state=3
    )
    labels = np.array(["ant", "bee", "cat", "dog"])[y]
    clf = SparseConformalClassifier(LogisticRegression(), mapping_alpha=alpha)
    clf.fit(X[:200], labels[:200]).conformalize(X[200:400], labels[200:400])
    assert clf.mapping_alpha_ == (2.0 if alpha == "auto" else 1.5)
    assert clf.classes_.tolist() == sorted(set(labels))
    sets = clf.predict_set(X[400:])
    assert sets.shape == (200, n_classes)
    proba = clf.predict_proba(X[400:])
    assert np.array_equal(proba > 0, sets)
    assert np.array_equal(clf.predict(X[400:]), clf.estimator_.predict(X[400:]))
    if binary:  # decision_function of shape (n,): the score of classes_[1] minus classes_[0]
        d = clf.estimator_.decision_function(X[400:])
        a = clf.mapping_alpha_
        z = np.column_stack([np.zeros_like(d), d])
        expected = [[brute_score(r, j, a) <= clf.quantiles_[0, 0] for j in range(2)] for r in z]
        assert np.array_equal(sets, np.array(expected))


def test_svc_and_pipelines(data):
    X, y = data
    # the pipeline wrapped
    clf = SparseConformalClassifier(make_pipeline(StandardScaler(), SVC()))
    clf.fit(X[:300], y[:300]).conformalize(X[300:600], y[300:600])
    assert clf.mapping_alpha_ == 2.0
    assert np.array_equal(clf.predict_proba(X[600:700]) > 0, clf.predict_set(X[600:700]))
    # auto alpha sees through a pipeline to the sk_entmax classifier
    inner = make_pipeline(StandardScaler(), EntmaxClassifier(alpha=1.5, max_epochs=10))
    wrapped = SparseConformalClassifier(inner).fit(X[:300], y[:300])
    assert wrapped.mapping_alpha_ == 1.5
    # the conformal estimator as the last step
    pipe = make_pipeline(
        StandardScaler(), SparseConformalClassifier(SparsemaxClassifier(max_epochs=10))
    )
    pipe.fit(X[:300], y[:300])
    pipe[-1].conformalize(pipe[:-1].transform(X[300:600]), y[300:600])
    sets = pipe[-1].predict_set(pipe[:-1].transform(X[600:700]))
    assert np.array_equal(pipe.predict_proba(X[600:700]) > 0, sets)
    assert pipe.predict(X[600:700]).shape == (100,)


def test_clone_get_set_params():
    clf = SparseConformalClassifier(
        LogisticRegression(C=2.0), confidence_level=[0.8, 0.9], mapping_alpha=1.5
    )
    params = clf.get_params()
    assert params["confidence_level"] == [0.8, 0.9] and params["estimator__C"] == 2.0
    copy = clone(clf)
    assert copy.get_params()["mapping_alpha"] == 1.5 and copy.estimator is not clf.estimator
    copy.set_params(estimator__C=0.5, class_conditional=True)
    assert copy.estimator.C == 0.5 and copy.class_conditional is True
    default = SparseConformalClassifier()
    assert default.estimator is None
    assert default_estimator(default.estimator).__class__ is SparsemaxClassifier


# ---------------------------------------------------------------------- edge cases


def test_too_few_calibration_rows_warns_and_keeps_every_class(data, sparsemax_model):
    X, y = data
    clf = SparseConformalClassifier(sparsemax_model, prefit=True, confidence_level=0.95)
    with pytest.warns(UserWarning, match="too few for confidence_level=0.95"):
        clf.conformalize(X[400:410], y[400:410])
    assert math.isinf(clf.temperature_)
    assert clf.predict_set(X[:20]).all()
    proba = clf.predict_proba(X[:20])
    np.testing.assert_allclose(proba, 1 / 8)
    clf = SparseConformalClassifier(sparsemax_model, prefit=True, class_conditional=True)
    with pytest.warns(UserWarning, match="too few for confidence_level=0.9 .* rows per class"):
        clf.conformalize(X[400:460], y[400:460])
    assert np.isinf(clf.quantiles_).any()


def test_unknown_label(data, sparsemax_model):
    X, y = data
    clf = SparseConformalClassifier(sparsemax_model, prefit=True)
    with pytest.raises(ValueError, match=r"unknown to the fitted estimator"):
        clf.conformalize(X[400:500], np.where(y[400:500] == 0, 42, y[400:500]))


@pytest.fixture(scope="module")
def multilabel_model():
    X, Y = make_multilabel_classification(3000, 10, n_classes=6, random_state=0)
    X = StandardScaler().fit_transform(X)
    return X, Y, SparsemaxClassifier().fit(X[:1000], Y[:1000])


def test_multilabel_label_set_coverage_over_splits(multilabel_model):
    """P(every true label in the set) >= 1 - eps: over 200 calibration/test splits of the
    held-out rows, the mean coverage of whole label sets lies within 3 Monte-Carlo SE of
    [1 - eps, 1 - eps + 1 / (n + 1)]; and a row is covered exactly when the largest score of
    its labels is at most q_hat (brute force, through nonconformity_scores)."""
    X, Y, model = multilabel_model
    X_rest, Y_rest = X[1000:], Y[1000:]
    rng = np.random.default_rng(0)
    eps, n = 0.1, 500
    coverage = []
    for split in range(200):
        order = rng.permutation(len(X_rest))
        cal, test = order[:n], order[n : n + 500]
        clf = SparseConformalClassifier(model, prefit=True, confidence_level=1 - eps)
        clf.conformalize(X_rest[cal], Y_rest[cal])
        sets = clf.predict_set(X_rest[test])
        covered = ~(Y_rest[test].astype(bool) & ~sets).any(axis=1)
        coverage.append(covered.mean())
        if split < 3:  # the rule, brute force
            scores = nonconformity_scores(model.decision_function(X_rest[test]), 2.0)
            q_hat = clf.quantiles_[0, 0]
            assert np.array_equal(sets, scores <= q_hat)
            worst = np.where(Y_rest[test].astype(bool), scores, 0.0).max(axis=1)
            assert np.array_equal(covered, worst <= q_hat)
            assert np.array_equal(clf.predict_proba(X_rest[test]) > 0, sets)
    mean, se = np.mean(coverage), np.std(coverage, ddof=1) / np.sqrt(len(coverage))
    assert 1 - eps - 3 * se <= mean <= 1 - eps + 1 / (n + 1) + 3 * se


def test_multilabel_fit_and_errors(multilabel_model):
    X, Y, _ = multilabel_model
    clf = SparseConformalClassifier(SparsemaxClassifier(), confidence_level=0.8)
    clf.fit(X[:600], Y[:600]).conformalize(X[600:1200], Y[600:1200])
    assert clf.predict_set(X[:5]).shape == (5, 6)
    # the label set is the support of the calibrated probabilities (issue 44)
    np.testing.assert_array_equal(clf.predict(X[:5]).astype(bool), clf.predict_set(X[:5]))
    with pytest.raises(ValueError, match="indicator matrix"):
        clf.conformalize(X[600:700], Y[600:700, 0])
    mondrian = SparseConformalClassifier(clf.estimator_, prefit=True, class_conditional=True)
    with pytest.raises(ValueError, match="class_conditional"):
        mondrian.conformalize(X[600:700], Y[600:700])


def test_not_fitted_errors(data):
    X, y = data
    with pytest.raises(NotFittedError, match="prefit=True but the estimator"):
        SparseConformalClassifier(LogisticRegression(), prefit=True).conformalize(X, y)
    with pytest.raises(NotFittedError, match="call fit before conformalize"):
        SparseConformalClassifier(LogisticRegression()).conformalize(X, y)
    clf = SparseConformalClassifier(LogisticRegression()).fit(X[:200], y[:200])
    with pytest.raises(NotFittedError, match="not conformalized yet"):
        clf.predict_set(X)
    with pytest.raises(NotFittedError, match="not conformalized yet"):
        clf.predict_proba(X)
    with pytest.raises(NotFittedError):
        SparseConformalClassifier().predict_set(X)


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"confidence_level": 1.0}, ValueError, "'confidence_level'"),
        ({"confidence_level": []}, ValueError, "'confidence_level'"),
        ({"confidence_level": "high"}, TypeError, "'confidence_level'"),
        ({"mapping_alpha": 1.0}, ValueError, "'mapping_alpha'"),
        ({"mapping_alpha": "sparsemax"}, ValueError, "'mapping_alpha'"),
        ({"mapping_alpha": None}, TypeError, "'mapping_alpha'"),
        ({"prefit": "yes"}, TypeError, "'prefit'"),
        ({"class_conditional": 1}, TypeError, "'class_conditional'"),
        ({"estimator": object()}, TypeError, "'estimator'"),
    ],
)
def test_bad_parameters(data, params, error, match):
    X, y = data
    params.setdefault("estimator", LogisticRegression())
    with pytest.raises(error, match=match):
        SparseConformalClassifier(**params).fit(X[:100], y[:100])


def test_softmax_estimator_gets_sparsemax_on_its_scores(data):
    """A softmax model (alpha 1, the LogisticRegression equivalent) has no sparse output:
    "auto" maps its scores with sparsemax, as for any other classifier."""
    X, y = data
    model = EntmaxClassifier(alpha=1.0, max_epochs=5).fit(X[:200], y[:200])
    auto = SparseConformalClassifier(model, prefit=True).conformalize(X[200:400], y[200:400])
    clf = SparseConformalClassifier(model, prefit=True, mapping_alpha=2.0)
    clf.conformalize(X[200:400], y[200:400])
    assert auto.mapping_alpha_ == 2.0
    np.testing.assert_array_equal(auto.predict_proba(X[400:500]), clf.predict_proba(X[400:500]))
    assert np.array_equal(clf.predict_proba(X[400:500]) > 0, clf.predict_set(X[400:500]))


# ---------------------------------------------------------------------- scikit-learn's checks

#: ``fit`` alone does not conformalize (the protocol is fit, then conformalize on held-out
#: rows), so every check that calls predict_proba right after fit meets the NotFittedError
#: that asks for conformalize; ``CROSS_CONFORMAL`` runs these checks through the real
#: methods below.
_NOT_CONFORMALIZED = (
    "fit does not conformalize: predict_proba needs conformalize on held-out rows first, "
    "and raises NotFittedError right after fit"
)
CONFORMAL_EXPECTED_FAILURES = dict.fromkeys(
    [
        "check_n_features_in_after_fitting",
        "check_estimators_dtypes",
        "check_estimators_pickle",
        "check_classifiers_train",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_dict_unchanged",
        "check_fit_idempotent",
        "check_fit2d_predict1d",
    ],
    _NOT_CONFORMALIZED,
)


#: with ``cv``, ``fit`` alone calibrates (on out-of-fold scores), so the wrapper passes every
#: check through its real methods, predict_proba and pickling included
#: (RidgeClassifier: a closed-form fit, so the 55 checks take about 2 s)
CROSS_CONFORMAL = SparseConformalClassifier(RidgeClassifier(), cv=2, random_state=0)


@parametrize_with_checks(
    [SparseConformalClassifier(), CROSS_CONFORMAL],
    expected_failed_checks=lambda est: (
        {} if est.get_params()["cv"] is not None else CONFORMAL_EXPECTED_FAILURES
    ),
)
def test_sklearn_compatible_conformal(estimator, check):
    check(estimator)


def test_conformal_expected_failures_really_fail():
    """Each allowed failure of the plain class is real, and is the missing conformalize."""
    from sklearn.utils import estimator_checks as ec

    for name in CONFORMAL_EXPECTED_FAILURES:
        with pytest.raises((NotFittedError, AssertionError)) as caught:
            getattr(ec, name)("SparseConformalClassifier", SparseConformalClassifier())
        assert "not conformalized yet" in str(caught.value) or isinstance(
            caught.value.__context__, NotFittedError
        ), name


def test_column_vector_y_conformalize(data, sparsemax_model):
    X, y = data
    clf = SparseConformalClassifier(sparsemax_model, prefit=True)
    with pytest.warns(DataConversionWarning):
        clf.conformalize(X[400:800], y[400:800, np.newaxis])
    flat = SparseConformalClassifier(sparsemax_model, prefit=True).conformalize(
        X[400:800], y[400:800]
    )
    assert clf.quantiles_.tolist() == flat.quantiles_.tolist()


def test_unknown_label_type_and_sparse_tag():
    X = np.arange(20.0).reshape(10, 2)
    y = np.array([{"a": i % 2} for i in range(10)], dtype=object)
    with pytest.raises(ValueError, match="Unknown label type"):
        SparseConformalClassifier(LogisticRegression()).fit(X, y)
    # sparse X is accepted exactly when the wrapped estimator accepts it
    assert get_tags(SparseConformalClassifier()).input_tags.sparse  # SparsemaxClassifier
    for inner in (SVC(), make_pipeline(StandardScaler(), LogisticRegression())):
        tags = get_tags(SparseConformalClassifier(inner)).input_tags
        assert tags.sparse == get_tags(inner).input_tags.sparse
    assert not get_tags(SparseConformalClassifier(object())).input_tags.sparse  # no crash


# ---------------------------------------------------------------------- TabNet end to end


def test_tabnet_end_to_end():
    X, y = make_classification(
        n_samples=900,
        n_features=8,
        n_informative=5,
        n_classes=3,
        n_clusters_per_class=1,
        random_state=1,
    )
    X = X.astype(np.float32)
    tabnet = TabNetEntmaxClassifier(max_epochs=2, random_state=0)
    clf = SparseConformalClassifier(tabnet, confidence_level=0.9, mapping_alpha="auto")
    clf.fit(X[:300], y[:300]).conformalize(X[300:600], y[300:600])
    assert clf.estimator_ is not tabnet  # cloned
    # "auto" takes TabNet's output alpha (1.5 by default), not the sparsemax fallback
    assert clf.mapping_alpha_ == clf.estimator_.alpha_ == pytest.approx(1.5)
    assert 0 < clf.temperature_ < math.inf
    sets = clf.predict_set(X[600:])
    proba = clf.predict_proba(X[600:])
    assert sets.shape == proba.shape == (300, 3)
    assert np.array_equal(proba > 0, sets)
    assert sets.any(axis=1).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-6)
    # coverage: at least 0.9 in expectation; 0.8 is four standard errors below
    assert 0.8 <= support_coverage(y[600:], sets) <= 1.0
    assert np.array_equal(clf.predict(X[600:]), clf.estimator_.predict(X[600:]))


def test_class_conditional_shortfall_is_one_warning_naming_the_classes():
    """issue 44: at 0.99 with 10 classes, once 10 warnings, one per class index."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    labels = np.array([f"c{i}" for i in range(10)])[np.arange(200) % 10]
    model = SparsemaxClassifier(max_epochs=2, random_state=0).fit(X[:100], labels[:100])
    clf = SparseConformalClassifier(
        model, prefit=True, confidence_level=0.99, class_conditional=True
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.conformalize(X[100:], labels[100:])
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == 1, messages
    assert "of 10 classes are too few for confidence_level=0.99" in messages[0]
    assert all(f"'c{i}' (10 rows)" in messages[0] for i in range(10))
