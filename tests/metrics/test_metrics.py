"""sk_entmax.metrics against independent truth.

The Tsallis loss is checked against its known special cases (scikit-learn's log loss at
alpha = 1, half the Brier score at alpha = 2), against the Bregman divergence written out
from its definition, for being 0 exactly at the truth, and for being proper (numerical
minimisation with scipy finds p = q). The support metrics are checked against
scikit-learn's micro-averaged recall and precision of the support, and the scorers inside
GridSearchCV, cross_validate and permutation_importance against the metric called by hand.
"""

from __future__ import annotations

import inspect
import pickle
import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse
import scipy.stats
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.datasets import load_iris, make_multilabel_classification
from sklearn.inspection import permutation_importance
from sklearn.metrics import brier_score_loss, log_loss, precision_score, recall_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_validate

from sk_entmax import EntmaxClassifier, SparsemaxClassifier
from sk_entmax.metrics import (
    make_coverage_scorer,
    make_tsallis_scorer,
    mean_support_size,
    stratified_coverage,
    support_coverage,
    support_precision,
    tsallis_loss,
)

ALPHAS = [1.1, 1.25, 1.5, 2.0, 3.0]


def bregman_by_definition(q, p, alpha):
    """Omega(q) - Omega(p) - <grad Omega(p), q - p>, written out row by row (alpha > 1)."""
    q, p = np.asarray(q, float), np.asarray(p, float)

    def omega(x):
        return (np.sum(x**alpha, axis=1) - 1) / (alpha * (alpha - 1))

    grad = p ** (alpha - 1) / (alpha - 1)
    return omega(q) - omega(p) - np.sum(grad * (q - p), axis=1)


@st.composite
def sparse_rows(draw, n_classes=None, min_rows=1, max_rows=8, positive=False):
    """A (n, k) array of probability rows, with exact zeros unless ``positive``."""
    k = draw(st.integers(2, 6)) if n_classes is None else n_classes
    n = draw(st.integers(min_rows, max_rows))
    entry = st.floats(0.01, 1.0)
    if not positive:
        entry = st.one_of(st.just(0.0), entry)
    rows = []
    for _ in range(n):
        row = np.array(draw(st.lists(entry, min_size=k, max_size=k)))
        if row.sum() == 0:
            row[draw(st.integers(0, k - 1))] = 1.0
        rows.append(row / row.sum())
    return np.array(rows)


@st.composite
def labelled_rows(draw, positive=False):
    proba = draw(sparse_rows(positive=positive))
    n, k = proba.shape
    y = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    return y, proba


# ---------------------------------------------------------------------- identities


@given(labelled_rows(positive=True))
def test_alpha_one_is_log_loss(data):
    y, proba = data
    labels = np.arange(proba.shape[1])
    expected = log_loss(y, proba, labels=labels)
    assert tsallis_loss(y, proba, alpha=1, labels=labels) == pytest.approx(expected, rel=1e-12)


@given(labelled_rows(positive=True))
def test_alpha_near_one_tends_to_log_loss(data):
    y, proba = data
    labels = np.arange(proba.shape[1])
    expected = log_loss(y, proba, labels=labels)
    # (x**beta - 1) / beta computed naively would lose about 4 digits here
    loss = tsallis_loss(y, proba, alpha=1 + 1e-12, labels=labels)
    assert loss == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_alpha_one_with_weights_strings_and_a_binary_column():
    y = np.array(["spam", "ham", "ham", "spam"])
    proba = np.array([[0.1, 0.9], [0.9, 0.1], [0.8, 0.2], [0.35, 0.65]])
    weights = np.array([1.0, 2.0, 0.5, 3.0])
    expected = log_loss(y, proba, sample_weight=weights)
    assert tsallis_loss(y, proba, alpha=1, sample_weight=weights) == pytest.approx(expected)
    # a 1-d y_proba is the probability of the positive (second sorted) class
    assert tsallis_loss(y, proba[:, 1], alpha=1) == pytest.approx(log_loss(y, proba[:, 1]))
    assert tsallis_loss(y, proba[:, 1:], alpha=1) == pytest.approx(log_loss(y, proba))


def test_alpha_one_is_not_clipped_at_an_exact_zero():
    y = [0, 1, 2]
    proba = np.array([[0.8, 0.2, 0.0], [0.1, 0.9, 0.0], [0.5, 0.5, 0.0]])
    assert tsallis_loss(y, proba, alpha=1) == np.inf
    # scikit-learn clips that zero to the float64 epsilon: about 36 nats for the row
    assert log_loss(y, proba) == pytest.approx(
        (-np.log(0.8) - np.log(0.9) - np.log(np.finfo(float).eps)) / 3, rel=1e-9
    )
    # a zero on a class that is not the truth costs nothing extra, as in log_loss
    assert tsallis_loss(y[:2], proba[:2], alpha=1, labels=[0, 1, 2]) == pytest.approx(
        log_loss(y[:2], proba[:2], labels=[0, 1, 2])
    )


@given(labelled_rows())
def test_alpha_two_is_half_the_brier_score(data):
    y, proba = data
    k = proba.shape[1]
    closed_form = np.mean(np.sum((np.eye(k)[y] - proba) ** 2, axis=1) / 2)
    loss = tsallis_loss(y, proba, alpha=2, labels=np.arange(k))
    assert loss == pytest.approx(closed_form, rel=1e-12, abs=1e-15)


def test_alpha_two_matches_sklearn_brier_score_loss():
    rng = np.random.default_rng(0)
    proba = rng.dirichlet(np.ones(4), size=30)
    proba[proba < 0.1] = 0.0
    proba /= proba.sum(axis=1, keepdims=True)
    y = rng.integers(0, 4, size=30)
    weights = rng.uniform(0.1, 2.0, size=30)
    # the halved multi-class Brier score by its definition; scikit-learn's from 1.7 on
    expected = 0.5 * np.average(((proba - np.eye(4)[y]) ** 2).sum(axis=1), weights=weights)
    if "scale_by_half" in inspect.signature(brier_score_loss).parameters:
        assert brier_score_loss(
            y, proba, labels=[0, 1, 2, 3], sample_weight=weights, scale_by_half=True
        ) == pytest.approx(expected)
    assert tsallis_loss(
        y, proba, alpha=2, labels=[0, 1, 2, 3], sample_weight=weights
    ) == pytest.approx(expected)
    # binary: the positive class's probability alone; scikit-learn already halves it
    y2, p2 = y % 2, proba[:, 0]
    assert tsallis_loss(y2, p2, alpha=2) == pytest.approx(brier_score_loss(y2, p2))


@pytest.mark.parametrize("alpha", ALPHAS)
@given(data=labelled_rows())
def test_matches_the_bregman_divergence_by_definition(alpha, data):
    y, proba = data
    k = proba.shape[1]
    expected = np.mean(bregman_by_definition(np.eye(k)[y], proba, alpha))
    loss = tsallis_loss(y, proba, alpha=alpha, labels=np.arange(k))
    assert loss == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_finite_on_a_true_class_with_probability_zero(alpha):
    proba = np.array([[0.7, 0.3, 0.0]])
    # p_y = 0: D = (1 / (alpha - 1) + sum_k p_k**alpha) / alpha
    expected = (1 / (alpha - 1) + np.sum(proba**alpha)) / alpha
    assert tsallis_loss([2], proba, alpha=alpha, labels=[0, 1, 2]) == pytest.approx(expected)


@pytest.mark.parametrize("alpha", [1.0, *ALPHAS])
@given(
    n_classes=st.integers(2, 7),
    y=st.lists(st.integers(0, 6), min_size=1, max_size=10),
)
def test_zero_exactly_at_the_one_hot_truth(alpha, n_classes, y):
    y = np.array(y) % n_classes
    proba = np.eye(n_classes)[y]
    assert tsallis_loss(y, proba, alpha=alpha, labels=np.arange(n_classes)) == 0.0


@pytest.mark.parametrize("alpha", [1.0, *ALPHAS])
@given(
    data=labelled_rows(),
    shift=st.floats(1e-3, 1.0),
)
def test_positive_away_from_the_truth(alpha, data, shift):
    y, proba = data
    k = proba.shape[1]
    one_hot = np.eye(k)[y]
    # move a share `shift` of the true class's mass to the other classes: p is not the truth
    away = (1 - shift) * one_hot + shift * (1 - one_hot) / (k - 1)
    assert tsallis_loss(y, away, alpha=alpha, labels=np.arange(k)) > 0


def expected_loss(p, q, alpha):
    """E_{y ~ q} D(e_y, p): the loss of p on every class, weighted by q."""
    k = len(q)
    keep = q > 0
    rows = np.tile(p, (keep.sum(), 1))
    return tsallis_loss(
        np.arange(k)[keep], rows, alpha=alpha, labels=np.arange(k), sample_weight=q[keep]
    )


@pytest.mark.parametrize("alpha", [1.25, 1.5, 2.0, 3.0])
@pytest.mark.parametrize(
    "q", [[0.5, 0.3, 0.2], [0.1, 0.6, 0.25, 0.05], [0.7, 0.0, 0.3, 0.0]], ids=str
)
def test_proper_the_expected_loss_is_minimised_at_q(alpha, q):
    q = np.array(q)

    def objective(z):
        return expected_loss(z / z.sum(), q, alpha)

    start = np.full(len(q), 1.0 / len(q))
    result = scipy.optimize.minimize(
        objective,
        start,
        method="L-BFGS-B",
        bounds=[(0.0, 1.0)] * len(q),
        options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 2000},
    )
    minimiser = result.x / result.x.sum()
    np.testing.assert_allclose(minimiser, q, atol=1e-5)
    # and no other distribution does better (strictly proper)
    at_q = expected_loss(q, q, alpha)
    others = np.random.default_rng(0).dirichlet(np.ones(len(q)), size=200)
    assert all(expected_loss(p, q, alpha) > at_q for p in others)


# ---------------------------------------------------------------------- multi-label


MULTILABEL_Y = np.array([[1, 1, 0], [0, 0, 1], [1, 1, 1], [0, 1, 0]])
MULTILABEL_P = np.array([[0.5, 0.3, 0.2], [0.0, 0.4, 0.6], [0.2, 0.8, 0.0], [0.0, 1.0, 0.0]])


def proportions(y):
    return y / y.sum(axis=1, keepdims=True)


def test_multilabel_against_label_proportions():
    q = proportions(MULTILABEL_Y)
    half_brier = np.mean(np.sum((q - MULTILABEL_P) ** 2, axis=1) / 2)
    assert tsallis_loss(MULTILABEL_Y, MULTILABEL_P, alpha=2) == pytest.approx(half_brier)
    positive = np.full((4, 3), 1 / 3)
    kl = np.mean([scipy.stats.entropy(qi, pi) for qi, pi in zip(q, positive)])
    assert tsallis_loss(MULTILABEL_Y, positive, alpha=1) == pytest.approx(kl)
    for alpha in ALPHAS:
        expected = np.mean(bregman_by_definition(q, MULTILABEL_P, alpha))
        assert tsallis_loss(MULTILABEL_Y, MULTILABEL_P, alpha=alpha) == pytest.approx(expected)
        assert tsallis_loss(MULTILABEL_Y, q, alpha=alpha) == 0.0
    sparse = scipy.sparse.csr_matrix(MULTILABEL_Y)
    assert tsallis_loss(sparse, MULTILABEL_P) == tsallis_loss(MULTILABEL_Y, MULTILABEL_P)


def test_multilabel_rows_without_labels_are_left_out_with_a_warning():
    y = np.vstack([MULTILABEL_Y, [0, 0, 0]])
    proba = np.vstack([MULTILABEL_P, [1.0, 0.0, 0.0]])
    with pytest.warns(UserWarning, match="1 of 5 rows of the multi-label y_true have no label"):
        loss = tsallis_loss(y, proba)
    assert loss == pytest.approx(tsallis_loss(MULTILABEL_Y, MULTILABEL_P))
    with pytest.raises(ValueError, match="Every row of the multi-label y_true has no label"):
        tsallis_loss(np.zeros((2, 3), int), proba[:2])
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="positive sample_weight"):
        tsallis_loss(y, proba, sample_weight=[0, 0, 0, 0, 1])


def test_multilabel_labels_must_match_the_columns():
    with pytest.raises(ValueError, match="3 columns, but labels has 2 entries"):
        tsallis_loss(MULTILABEL_Y, MULTILABEL_P, labels=[0, 1])
    with pytest.raises(ValueError, match="different numbers of labels: 3 vs 2"):
        tsallis_loss(MULTILABEL_Y, MULTILABEL_P[:, :2] / MULTILABEL_P[:, :2].sum(1)[:, None])


# ---------------------------------------------------------------------- conventions


def test_labels_complete_a_y_true_that_lacks_a_class():
    proba = np.array([[0.6, 0.4, 0.0], [0.1, 0.9, 0.0]])
    with pytest.raises(ValueError, match="different numbers of classes: 2 vs 3"):
        tsallis_loss([0, 1], proba)
    assert tsallis_loss([0, 1], proba, labels=[0, 1, 2]) > 0
    with pytest.raises(ValueError, match=r"y_true contains values \[5\] not belonging"):
        tsallis_loss([0, 5], proba, labels=[0, 1, 2])
    with pytest.raises(ValueError, match=r"number of classes in labels \(2\)"):
        tsallis_loss([0, 1], proba, labels=[0, 1])
    with pytest.raises(ValueError, match="y_true contains only one label"):
        tsallis_loss([1, 1], proba[:, :2] / proba[:, :2].sum(1)[:, None])
    with pytest.raises(ValueError, match="at least two labels"):
        tsallis_loss([1, 1], proba, labels=[1])


def test_unsorted_labels_warn_that_columns_are_sorted():
    proba = np.array([[0.6, 0.4], [0.1, 0.9]])
    with pytest.warns(UserWarning, match="taken in sorted order"):
        unsorted = tsallis_loss(["b", "a"], proba, labels=["b", "a"])
    assert unsorted == tsallis_loss(["b", "a"], proba)


def test_string_labels_follow_their_sorted_order():
    proba = np.array([[0.7, 0.3, 0.0], [0.0, 0.2, 0.8]])
    assert tsallis_loss(["cat", "mouse"], proba, labels=["cat", "dog", "mouse"]) == (
        tsallis_loss([0, 2], proba, labels=[0, 1, 2])
    )


@pytest.mark.parametrize("metric", [tsallis_loss, support_coverage, support_precision])
@pytest.mark.parametrize(
    "y_proba, message",
    [
        ([[0.5, 0.6], [0.5, 0.5]], r"y_proba rows must sum to 1 .*row 0 with sum 1\.1"),
        ([[-0.1, 1.1], [0.5, 0.5]], "y_proba contains values lower than 0: -0.1"),
        ([[0.0, 1.5], [0.5, 0.5]], "y_proba contains values greater than 1: 1.5"),
        ([[np.nan, 1.0], [0.5, 0.5]], "Input y_proba contains NaN"),
        ([[np.inf, 1.0], [0.5, 0.5]], "Input y_proba contains infinity"),
        ([[0.5, 0.5]], "inconsistent numbers of samples"),
        (np.full((2, 2, 1), 0.5), "Found array with dim 3"),
    ],
)
def test_invalid_y_proba(metric, y_proba, message):
    with pytest.raises(ValueError, match=message):
        metric([0, 1], y_proba)


def test_row_sums_tolerate_float32_rounding():
    proba = np.array([[0.1, 0.2, 0.7]], dtype=np.float32) + np.float32(1e-5)
    assert np.isfinite(tsallis_loss([2], proba, labels=[0, 1, 2]))
    with pytest.raises(ValueError, match="must sum to 1"):
        tsallis_loss([2], proba.astype(np.float64), labels=[0, 1, 2])


@pytest.mark.parametrize("metric", [tsallis_loss, support_coverage, support_precision])
@pytest.mark.parametrize(
    "sample_weight, error, message",
    [
        ([1.0, -1.0], ValueError, "sample_weight must be non-negative"),
        ([0.0, 0.0], ValueError, "sample_weight sums to 0"),
        ([1.0, 2.0, 3.0], ValueError, "inconsistent numbers of samples"),
        ([[1.0], [2.0]], ValueError, "sample_weight must be 1-d"),
        ([1.0, np.nan], ValueError, "Input sample_weight contains NaN"),
    ],
)
def test_invalid_sample_weight(metric, sample_weight, error, message):
    with pytest.raises(error, match=message):
        metric([0, 1], [[0.5, 0.5], [0.2, 0.8]], sample_weight=sample_weight)


@pytest.mark.parametrize("alpha", [0.5, 0.999, -1, np.nan, np.inf])
def test_alpha_out_of_range(alpha):
    match = r"The 'alpha' parameter of tsallis_loss must be a real number >= 1 .*Got"
    with pytest.raises(ValueError, match=match):
        tsallis_loss([0, 1], [[0.5, 0.5], [0.2, 0.8]], alpha=alpha)
    with pytest.raises(ValueError, match="'alpha' parameter of make_tsallis_scorer"):
        make_tsallis_scorer(alpha)


@pytest.mark.parametrize("alpha", ["1.5", None, True])
def test_alpha_of_the_wrong_type(alpha):
    with pytest.raises(TypeError, match=r"'alpha' parameter of tsallis_loss must be .* instead"):
        tsallis_loss([0, 1], [[0.5, 0.5], [0.2, 0.8]], alpha=alpha)


def test_y_true_must_be_class_labels():
    with pytest.raises(ValueError, match="got a 'continuous' target"):
        tsallis_loss([0.5, 0.25], [[0.5, 0.5], [0.2, 0.8]])
    with pytest.raises(ValueError, match="got a 'multiclass-multioutput' target"):
        tsallis_loss([[0, 2], [1, 2]], [[0.5, 0.5], [0.2, 0.8]])


def test_integer_alpha_and_numpy_scalars_are_accepted():
    args = ([0, 1], [[0.5, 0.5], [0.2, 0.8]])
    assert tsallis_loss(*args, alpha=2) == tsallis_loss(*args, alpha=np.float32(2.0))


# ---------------------------------------------------------------------- the support


def test_support_metrics_multiclass():
    y = [0, 1, 2, 2]
    proba = np.array([[0.9, 0.1, 0.0], [0.0, 0.0, 1.0], [0.2, 0.0, 0.8], [0.3, 0.3, 0.4]])
    assert support_coverage(y, proba) == 0.75
    assert mean_support_size(proba) == 2.0
    assert support_precision(y, proba) == 3 / 8
    weights = np.array([1.0, 3.0, 1.0, 1.0])
    assert support_coverage(y, proba, sample_weight=weights) == 0.5
    assert mean_support_size(proba, sample_weight=weights) == (2 + 3 + 2 + 3) / 6
    # a dense model covers everything with every class
    dense = np.full((4, 3), 1 / 3)
    assert support_coverage(y, dense) == 1.0
    assert mean_support_size(dense) == 3.0
    # 1-d binary probabilities: the support of [1 - p, p]
    assert mean_support_size([0.0, 0.5, 1.0]) == pytest.approx(4 / 3)
    assert support_coverage([1, 1, 0], [0.0, 0.5, 1.0]) == pytest.approx(1 / 3)


@given(
    st.integers(2, 5).flatmap(
        lambda k: st.tuples(
            sparse_rows(n_classes=k, min_rows=2),
            st.lists(st.lists(st.booleans(), min_size=k, max_size=k), min_size=8, max_size=8),
            st.lists(st.floats(0.1, 3.0), min_size=8, max_size=8),
        )
    )
)
def test_support_metrics_multilabel_are_micro_recall_and_precision(data):
    proba, y, weights = data
    n = proba.shape[0]
    y, weights = np.array(y[:n], dtype=int), np.array(weights[:n])
    y[0, 0] = 1  # at least one true label
    support = (proba > 0).astype(int)
    for w in (None, weights):
        assert support_coverage(y, proba, sample_weight=w) == pytest.approx(
            recall_score(y, support, average="micro", sample_weight=w)
        )
        assert support_precision(y, proba, sample_weight=w) == pytest.approx(
            precision_score(y, support, average="micro", sample_weight=w)
        )
        expected_size = np.average(support.sum(axis=1), weights=w)
        assert mean_support_size(proba, sample_weight=w) == pytest.approx(expected_size)


def test_coverage_needs_a_true_label():
    with pytest.raises(ValueError, match="no true label"):
        support_coverage(np.zeros((2, 3), int), [[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]])


def test_mean_support_size_validates():
    with pytest.raises(ValueError, match="must sum to 1"):
        mean_support_size([[0.5, 0.6]])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        mean_support_size([[0.5, 0.5]], sample_weight=[1.0, 1.0])


# ---------------------------------------------------------------------- scorers


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


def tiny_entmax(**params):
    return EntmaxClassifier(max_epochs=20, lr=0.05, random_state=0, **params)


@pytest.fixture(scope="module")
def fitted(iris):
    X, y = iris
    return tiny_entmax().fit(X, y)


def test_scorers_negate_the_loss_and_report_coverage(fitted, iris):
    X, y = iris
    proba = fitted.predict_proba(X)
    assert (proba == 0).any()  # the check means something only with exact zeros
    for alpha in (1.5, 2.0):
        scorer = make_tsallis_scorer(alpha)
        assert scorer(fitted, X, y) == pytest.approx(-tsallis_loss(y, proba, alpha=alpha))
    assert make_coverage_scorer()(fitted, X, y) == support_coverage(y, proba)
    restored = pickle.loads(pickle.dumps(make_tsallis_scorer(2.0)))
    assert restored(fitted, X, y) == make_tsallis_scorer(2.0)(fitted, X, y)


def test_scorers_pass_labels_for_a_subset_lacking_a_class(fitted, iris):
    X, y = iris
    part = y < 2
    with pytest.raises(ValueError, match="different numbers of classes"):
        make_tsallis_scorer()(fitted, X[part], y[part])
    scorer = make_tsallis_scorer(labels=[0, 1, 2])
    expected = -tsallis_loss(y[part], fitted.predict_proba(X[part]), labels=[0, 1, 2])
    assert scorer(fitted, X[part], y[part]) == pytest.approx(expected)
    assert make_coverage_scorer(labels=[0, 1, 2])(fitted, X[part], y[part]) == (
        support_coverage(y[part], fitted.predict_proba(X[part]), labels=[0, 1, 2])
    )


def test_grid_search_over_alpha_with_the_scorers(iris):
    X, y = iris
    splits = list(StratifiedKFold(n_splits=2, shuffle=True, random_state=0).split(X, y))
    search = GridSearchCV(
        tiny_entmax(),
        {"alpha": [1.5, 2.0]},
        scoring={
            "tsallis": make_tsallis_scorer(),
            "coverage": make_coverage_scorer(),
            "accuracy": "accuracy",
        },
        refit="tsallis",
        cv=splits,
    )
    search.fit(X, y)
    results = search.cv_results_
    # every score is what the metric says about a model fitted by hand on the same split
    train, test = splits[0]
    for i, alpha in enumerate(results["param_alpha"]):
        proba = clone(tiny_entmax(alpha=alpha)).fit(X[train], y[train]).predict_proba(X[test])
        assert results["split0_test_tsallis"][i] == pytest.approx(
            -tsallis_loss(y[test], proba), rel=1e-9
        )
        assert results["split0_test_coverage"][i] == support_coverage(y[test], proba)
    assert np.all(np.asarray(results["mean_test_tsallis"]) < 0)
    best = int(np.argmax(results["mean_test_tsallis"]))
    assert search.best_params_ == results["params"][best]
    assert search.best_score_ == results["mean_test_tsallis"][best]


def test_cross_validate_and_permutation_importance(fitted, iris):
    X, y = iris
    scores = cross_validate(
        tiny_entmax(),
        X,
        y,
        cv=StratifiedKFold(n_splits=2, shuffle=True, random_state=0),
        scoring={"tsallis": make_tsallis_scorer(2.0), "coverage": make_coverage_scorer()},
    )
    assert np.all(np.isfinite(scores["test_tsallis"])) and np.all(scores["test_tsallis"] < 0)
    assert np.all((scores["test_coverage"] > 0) & (scores["test_coverage"] <= 1))
    result = permutation_importance(
        fitted, X, y, scoring=make_tsallis_scorer(), n_repeats=3, random_state=0
    )
    assert result.importances.shape == (4, 3) and np.all(np.isfinite(result.importances))
    # scrambling the petal measurements costs far more than scrambling the sepal width
    assert result.importances_mean[2:].min() > result.importances_mean[1]


def test_scorers_on_a_binary_problem(iris):
    X, y = iris
    part = y > 0
    X, y = X[part], y[part]
    clf = tiny_entmax().fit(X, y)
    proba = clf.predict_proba(X)
    # scikit-learn passes the positive column alone for binary targets
    assert make_tsallis_scorer()(clf, X, y) == pytest.approx(-tsallis_loss(y, proba))
    assert make_coverage_scorer()(clf, X, y) == support_coverage(y, proba)


def test_coverage_scorer_on_a_multilabel_estimator():
    X, Y = make_multilabel_classification(
        n_samples=80, n_features=6, n_classes=3, allow_unlabeled=False, random_state=0
    )
    clf = SparsemaxClassifier(max_epochs=20, lr=0.05, random_state=0).fit(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        coverage = make_coverage_scorer()(clf, X, Y)
        loss = -make_tsallis_scorer(2.0)(clf, X, Y)
    # predict is the support, so the coverage is the micro-averaged recall of predict
    assert coverage == pytest.approx(recall_score(Y, clf.predict(X), average="micro"))
    assert support_precision(Y, clf.predict_proba(X)) == pytest.approx(
        precision_score(Y, clf.predict(X), average="micro")
    )
    q = proportions(Y)
    assert loss == pytest.approx(np.mean(np.sum((q - clf.predict_proba(X)) ** 2, axis=1) / 2))


# ---------------------------------------------------------------------- prediction sets


def test_boolean_sets_are_read_as_sets():
    rng = np.random.default_rng(0)
    sets = rng.random((50, 4)) < 0.5
    y = rng.integers(0, 4, 50)
    y[:4] = [0, 1, 2, 3]
    expected = np.mean([sets[i, y[i]] for i in range(50)])
    assert support_coverage(y, sets) == pytest.approx(expected)
    assert mean_support_size(sets) == pytest.approx(sets.sum() / 50)
    # probabilities with that support give the same numbers (rows with a nonempty set)
    keep = sets.any(axis=1)
    proba = sets[keep] / sets[keep].sum(axis=1, keepdims=True)
    assert support_coverage(y[keep], proba) == support_coverage(y[keep], sets[keep])
    assert mean_support_size(proba) == mean_support_size(sets[keep])
    # one value per level for 3-d sets
    stacked = np.stack([sets, np.ones_like(sets)], axis=2)
    assert support_coverage(y, stacked).tolist() == pytest.approx([expected, 1.0])
    assert mean_support_size(stacked).tolist() == pytest.approx([sets.sum() / 50, 4.0])
    with pytest.raises(ValueError, match="prediction sets"):
        mean_support_size(np.ones(3, dtype=bool))


def test_stratified_coverage_against_loops():
    rng = np.random.default_rng(1)
    sets = rng.random((200, 5)) < 0.4
    labels = np.array(list("abcde"))
    y = labels[rng.integers(0, 5, 200)]
    covered = np.array([sets[i, "abcde".index(y[i])] for i in range(200)])
    sizes, coverage, counts = stratified_coverage(y, sets)
    assert sizes.tolist() == sorted(set(sets.sum(axis=1).tolist()))
    for size, cov, count in zip(sizes, coverage, counts):
        rows = sets.sum(axis=1) == size
        assert count == rows.sum() and cov == pytest.approx(covered[rows].mean())
    classes, coverage, counts = stratified_coverage(y, sets, by="class")
    assert classes.tolist() == list("abcde")
    for c, cov, count in zip(classes, coverage, counts):
        assert count == (y == c).sum() and cov == pytest.approx(covered[y == c].mean())
    # a class missing from y_true: count 0, coverage NaN
    keep = y != "c"
    classes, coverage, counts = stratified_coverage(y[keep], sets[keep], by="class", labels=labels)
    assert counts[2] == 0 and np.isnan(coverage[2])
    with pytest.raises(ValueError, match="'by'"):
        stratified_coverage(y, sets, by="size")
    with pytest.raises(ValueError, match="one confidence level"):
        stratified_coverage(y, np.stack([sets, sets], axis=2))


def test_size_stratified_coverage_in_bins():
    # worked by hand: sizes 4, 2, 3, 2, 3; every row covered but the last; the sizes 0..4
    # in two bins, [0, 2] and [3, 4] (MAPIE's classification_ssc example gives 1 and 2/3)
    y = np.array([3, 3, 1, 2, 2])
    sets = np.array(
        [[1, 1, 1, 1], [0, 1, 0, 1], [1, 1, 1, 0], [0, 0, 1, 1], [1, 1, 0, 1]], dtype=bool
    )
    bins, coverage, counts = stratified_coverage(y, sets, labels=range(4), n_bins=2)
    assert bins.tolist() == [[0, 2], [3, 4]]
    assert coverage.tolist() == pytest.approx([1.0, 2 / 3]) and counts.tolist() == [2, 3]
    # one bin per possible size: the sizes that occur as without bins, NaN for the others
    bins, coverage, counts = stratified_coverage(y, sets, labels=range(4), n_bins=5)
    assert bins.tolist() == [[s, s] for s in range(5)] and counts.tolist() == [0, 0, 2, 2, 1]
    sizes, by_size, _ = stratified_coverage(y, sets, labels=range(4))
    assert coverage[sizes].tolist() == by_size.tolist()
    assert np.isnan(coverage[:2]).all()
    # against a loop on random sets: 3 bins over the sizes 0..6 (widths 3, 2, 2)
    rng = np.random.default_rng(2)
    sets = rng.random((300, 6)) < 0.5
    y = rng.integers(0, 6, 300)
    bins, coverage, counts = stratified_coverage(y, sets, n_bins=3)
    assert bins.tolist() == [[0, 2], [3, 4], [5, 6]]
    size, covered = sets.sum(axis=1), sets[np.arange(300), y]
    for (low, high), cov, count in zip(bins, coverage, counts):
        rows = (low <= size) & (size <= high)
        assert count == rows.sum() and cov == pytest.approx(covered[rows].mean())
    for bad in (0, 8, 2.0, True):
        with pytest.raises(ValueError, match="n_bins"):
            stratified_coverage(y, sets, n_bins=bad)
    with pytest.raises(ValueError, match="n_bins"):
        stratified_coverage(y, sets, by="class", n_bins=2)
