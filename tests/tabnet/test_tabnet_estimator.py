"""TabNetEntmaxClassifier as a scikit-learn estimator.

Tiny networks (n_d = n_a = 4, two steps, one shared and one independent GLU layer), small
data and few epochs throughout, so that the module runs in well under two minutes on two
CPU cores. Fitted models that several tests only read are fitted once (``_shared_fit``).
The one test with a real bar, ``test_masks_find_the_informative_features``, trains the
default network.
"""

from __future__ import annotations

import functools
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from expected_failures import EXPECTED_FAILURES
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_iris, make_classification, make_multilabel_classification
from sklearn.feature_selection import SelectFromModel
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import (
    estimator_checks_generator,
    parametrize_with_checks,
)
from sklearn.utils.validation import check_is_fitted

from sk_entmax import TabNetEntmaxClassifier
from sk_entmax.nn.tabnet import ENTMAX_MODES, GhostBatchNorm

TINY = {
    "n_d": 4,
    "n_a": 4,
    "n_steps": 2,
    "n_independent": 1,
    "n_shared": 1,
    "lr": 0.05,
    "random_state": 0,
}

# The mode-specific parameters of the four mask mappings.
MODES = {
    "sparsemax": {"entmax_mode": "sparsemax"},
    "entmax15": {"entmax_mode": "entmax15"},
    "constant": {"entmax_mode": "constant", "entmax_alpha": 1.3},
    "adaptive": {"entmax_mode": "adaptive"},
}


def _tabnet(mode="sparsemax", **params):
    return TabNetEntmaxClassifier(**{**TINY, **MODES[mode], **params})


X_SMALL, Y_SMALL = make_classification(
    n_samples=40, n_features=4, n_informative=2, n_redundant=0, random_state=0
)
X_MED, Y_MED = make_classification(
    n_samples=160, n_features=6, n_informative=3, n_redundant=0, random_state=0
)


def _weights(clf):
    return {
        name: p.detach().cpu().numpy().copy() for name, p in clf.net_.module_.named_parameters()
    }


# --------------------------------------------------------------------------- estimator checks

# Three epochs are the fewest that pass every check in every mode (check_classifiers_train
# asks for an accuracy above 0.83 on its 3-class blobs: with the later steps' rests of
# issue 57, two epochs gave 0.81 in constant mode at alpha 1.3, three 0.90).
CHECK_PARAMS = {"max_epochs": 3}

# Every check for three modes; the adaptive mode, whose learned alpha makes each step about
# three times slower, gets the checks that train and predict (see SUBSET_CHECKS).
FULL_CHECK_MODES = ["sparsemax", "entmax15", "constant"]
SUBSET_CHECK_MODES = ["adaptive"]
SUBSET_CHECKS = {
    "check_estimator_cloneable",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters",
    "check_dict_unchanged",
    "check_fit_check_is_fitted",
    "check_estimators_dtypes",
    "check_estimators_pickle",
    "check_classifiers_train",
    "check_classifiers_one_label_sample_weights",
    "check_classifiers_multilabel_output_format_predict",
    "check_class_weight_classifiers",
    "check_supervised_y_2d",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_fit2d_1sample",
    "check_fit2d_1feature",
    "check_fit_idempotent",
    "check_n_features_in_after_fitting",
}


def _check_estimator(mode):
    return _tabnet(mode, **CHECK_PARAMS)


@parametrize_with_checks(
    [_check_estimator(mode) for mode in FULL_CHECK_MODES],
    expected_failed_checks=lambda estimator: EXPECTED_FAILURES,
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def _check_name_and_keywords(check):
    keywords = {}
    while isinstance(check, functools.partial):
        keywords.update(check.keywords)
        check = check.func
    return check.__name__, keywords


def _subset_checks():
    params = []
    for mode in SUBSET_CHECK_MODES:
        for item in estimator_checks_generator(
            _check_estimator(mode), legacy=True, expected_failed_checks=EXPECTED_FAILURES
        ):
            estimator, check = item
            name, keywords = _check_name_and_keywords(check)
            # the read-only memmap variants only repeat the input handling of the full runs;
            # scikit-learn 1.6 yields check_estimator_cloneable twice: once is enough
            listed = {p.id for p in params}
            if name in SUBSET_CHECKS and not keywords and f"{mode}-{name}" not in listed:
                params.append(pytest.param(estimator, check, id=f"{mode}-{name}"))
    return params


SUBSET = _subset_checks()


def test_subset_covers_every_listed_check():
    names = {p.id.split("-", 1)[1] for p in SUBSET}
    assert names == SUBSET_CHECKS
    assert len(SUBSET) == len(SUBSET_CHECKS) * len(SUBSET_CHECK_MODES)


@pytest.mark.parametrize(("estimator", "check"), SUBSET)
def test_sklearn_checks_subset_for_adaptive_mode(estimator, check):
    check(estimator)


# --------------------------------------------------------------------------- shared fits


@functools.cache
def _shared_fit(mode, faithful_masks=True):
    """A tiny model per mask mode (and design), fitted on X_MED once (tests only read it)."""
    return _tabnet(mode, max_epochs=15, batch_size=40, faithful_masks=faithful_masks).fit(
        X_MED, Y_MED
    )


@pytest.fixture(params=list(MODES))
def fitted(request):
    return _shared_fit(request.param)


# --------------------------------------------------------------------------- mask alphas


def test_adaptive_mask_alphas_are_learned_one_per_step():
    # the paper's design: every step's mask reads the data, so every alpha is learned
    clf = _shared_fit("adaptive", faithful_masks=False)
    assert clf.entmax_alpha == 1.5  # the starting alpha
    alphas = clf.mask_alpha_
    assert alphas.shape == (TINY["n_steps"],)
    assert np.all((alphas > 1.0) & (alphas < 2.0))
    # each step's alpha moved away from the start during fit...
    assert np.all(np.abs(alphas - 1.5) > 1e-3), alphas
    # ...on its own: one learned alpha per step, not one shared by all
    assert abs(alphas[0] - alphas[1]) > 1e-4, alphas
    learned = [
        float(step.alpha.detach()) for step in clf.net_.module_.tabnet.attentive_transformers
    ]
    np.testing.assert_allclose(alphas, learned)


def test_the_faithful_first_mask_keeps_its_starting_alpha():
    """The default design's first mask is uniform over the columns kept, which every alpha
    maps alike: its alpha gets no gradient and stays at the start; the later ones learn."""
    alphas = _shared_fit("adaptive").mask_alpha_
    assert alphas[0] == 1.5 and abs(alphas[1] - 1.5) > 1e-3, alphas


@pytest.mark.parametrize(
    ("mode", "entmax_alpha", "expected"),
    [
        ("sparsemax", 1.3, 2.0),
        ("entmax15", 1.3, 1.5),
        ("constant", 1.3, 1.3),
        ("constant", 1.0, 1.0),
        ("constant", 2.0, 2.0),
        ("constant", 1.75, 1.75),
    ],
)
def test_fixed_mask_alphas(mode, entmax_alpha, expected):
    clf = _tabnet(mode, entmax_alpha=entmax_alpha, n_steps=3, max_epochs=2)
    clf.fit(X_SMALL, Y_SMALL)
    np.testing.assert_array_equal(clf.mask_alpha_, [expected] * 3)
    assert clf.entmax_alpha == entmax_alpha  # the parameter is not rewritten


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("mode", ["softmax", "Sparsemax", "entmax", "", None, 1.5])
def test_invalid_entmax_mode_raises_at_fit_only(mode):
    clf = TabNetEntmaxClassifier(entmax_mode=mode, max_epochs=1)  # no error here
    assert clf.get_params()["entmax_mode"] == mode
    clf.set_params(entmax_mode=mode)  # nor here
    with pytest.raises(ValueError, match="entmax_mode") as info:
        clf.fit(X_SMALL, Y_SMALL)
    message = str(info.value)
    for valid in ENTMAX_MODES:
        assert valid in message
    assert not hasattr(clf, "net_")


@pytest.mark.parametrize("entmax_alpha", [0.5, 2.5, float("nan"), "x", float("inf"), None])
@pytest.mark.parametrize("mode", ["constant", "adaptive"])
def test_invalid_entmax_alpha_raises_at_fit_only(entmax_alpha, mode):
    clf = TabNetEntmaxClassifier(entmax_mode=mode, entmax_alpha=entmax_alpha, max_epochs=1)
    clf.set_params(entmax_alpha=entmax_alpha)
    with pytest.raises(ValueError, match="entmax_alpha"):
        clf.fit(X_SMALL, Y_SMALL)
    assert not hasattr(clf, "net_")


# --------------------------------------------------------------------------- small data


@pytest.mark.parametrize("n_rows", [40, 17])
def test_small_data_trains(n_rows):
    """Defaults on a few rows take optimizer steps (17 rows: a last batch of one row)."""
    X, y = X_SMALL[:n_rows], Y_SMALL[:n_rows]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the "auto" sizes never warn
        clf = _tabnet(max_epochs=5).fit(X, y)
    assert clf.n_iter_ >= 1
    batches = [batch for epoch in clf.net_.history[:, "batches"] for batch in epoch]
    assert len(batches) >= clf.n_iter_
    assert sum(batch["train_batch_size"] for batch in batches) == clf.n_iter_ * n_rows
    assert np.all(np.isfinite([batch["train_loss"] for batch in batches]))
    # Compare with the same seed trained at a learning rate far too small to move a float32
    # weight: the initial weights. Training must have moved at least one of them.
    frozen = clone(clf).set_params(lr=1e-12).fit(X, y)
    trained, initial = _weights(clf), _weights(frozen)
    assert trained.keys() == initial.keys()
    moved = [name for name in trained if not np.allclose(trained[name], initial[name])]
    assert moved, "no weight changed during fit: no optimizer step happened"
    assert clf.predict(X).shape == (n_rows,)


def test_tiny_learning_rate_leaves_the_initial_weights():
    """The reference of test_small_data_trains: same seed, same initial weights (but the
    first mask's logits, which the column selection sets, not the learning rate: the
    longer fit's selection narrows its first step, the shorter one's has no time to)."""
    a = _tabnet(max_epochs=2, lr=1e-12).fit(X_SMALL, Y_SMALL)
    b = _tabnet(max_epochs=1, lr=1e-12).fit(X_SMALL, Y_SMALL)
    for name, value in _weights(a).items():
        if name != "tabnet.first_mask_logits":
            np.testing.assert_allclose(value, _weights(b)[name], atol=1e-7, err_msg=name)


def test_batch_size_above_the_data_warns_and_trains():
    clf = _tabnet(batch_size=1000, max_epochs=4)
    with pytest.warns(UserWarning, match="batch_size"):
        clf.fit(X_SMALL, Y_SMALL)
    assert clf.batch_size == 1000  # the parameter is not rewritten
    assert clf.n_iter_ >= 1
    for epoch in clf.net_.history[:, "batches"]:
        assert [batch["train_batch_size"] for batch in epoch] == [len(X_SMALL)]
    frozen = clone(clf).set_params(lr=1e-12)
    with pytest.warns(UserWarning, match="batch_size"):
        frozen.fit(X_SMALL, Y_SMALL)
    trained, initial = _weights(clf), _weights(frozen)
    assert any(not np.allclose(trained[name], initial[name]) for name in trained)


def test_virtual_batch_size_above_the_batch_size_warns():
    clf = _tabnet(batch_size=16, virtual_batch_size=64, max_epochs=2)
    with pytest.warns(UserWarning, match="virtual_batch_size"):
        clf.fit(X_SMALL, Y_SMALL)
    assert clf.virtual_batch_size == 64
    sizes = {
        m.virtual_batch_size for m in clf.net_.module_.modules() if isinstance(m, GhostBatchNorm)
    }
    assert sizes == {16}
    assert clf.n_iter_ >= 1


def test_virtual_batch_size_within_the_batch_size_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        clf = _tabnet(batch_size=16, virtual_batch_size=8, max_epochs=1).fit(X_SMALL, Y_SMALL)
    sizes = {
        m.virtual_batch_size for m in clf.net_.module_.modules() if isinstance(m, GhostBatchNorm)
    }
    assert sizes == {8}


# --------------------------------------------------------------------------- categorical data


def _mixed_frame(n=120, seed=0):
    """Two numeric columns, a string (object) column and a pandas category column."""
    rng = np.random.RandomState(seed)
    color = rng.choice(["red", "green", "blue"], n)
    size = pd.Categorical(rng.choice(["S", "M", "L"], n), categories=["S", "M", "L"])
    x0, x1 = rng.randn(n), rng.randn(n)
    frame = pd.DataFrame(
        {"x0": x0, "color": pd.Series(color, dtype=object), "size": size, "x1": x1}
    )
    labels = np.where(x0 + 2.0 * (color == "red") > 0.7, "yes", "no").astype(object)
    return frame, labels


FRAME, FRAME_LABELS = _mixed_frame()
CAT_PARAMS = {"cat_emb_dim": 2, "max_epochs": 10, "batch_size": 40}


@pytest.fixture(scope="module")
def fitted_frame():
    clf = _tabnet(**CAT_PARAMS)
    params = clf.get_params()
    clf.fit(FRAME, FRAME_LABELS)
    return clf, params


def test_category_and_object_columns_are_embedded(fitted_frame):
    clf, _ = fitted_frame
    assert FRAME["color"].dtype == object
    assert isinstance(FRAME["size"].dtype, pd.CategoricalDtype)
    np.testing.assert_array_equal(clf.categorical_features_, [1, 2])
    assert len(clf.categories_) == 2
    assert list(clf.categories_[0]) == ["blue", "green", "red"]
    assert sorted(clf.categories_[1]) == ["L", "M", "S"]
    tabnet = clf.net_.module_.tabnet
    assert tabnet.cat_idxs == [1, 2]
    assert tabnet.cat_dims == [4, 4]  # three categories and the "unknown" code
    assert tabnet.post_embedding_dim == 6  # two numeric columns, two embeddings of width 2
    np.testing.assert_array_equal(clf.feature_names_in_, FRAME.columns)
    assert set(clf.predict(FRAME)) <= {"yes", "no"}
    assert clf.score(FRAME, FRAME_LABELS) > 0.6


def test_explain_and_importances_are_per_original_column(fitted_frame):
    clf, _ = fitted_frame
    n_columns = FRAME.shape[1]
    assert clf.n_features_in_ == n_columns
    assert clf.feature_importances_.shape == (n_columns,)
    np.testing.assert_allclose(clf.feature_importances_.sum(), 1.0)
    M_explain, masks = clf.explain(FRAME)
    assert M_explain.shape == (len(FRAME), n_columns)
    assert sorted(masks) == list(range(TINY["n_steps"]))
    for mask in masks.values():
        assert mask.shape == (len(FRAME), n_columns)
        # an embedded column's share is the sum of its embedding's shares
        np.testing.assert_allclose(mask.sum(axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("column", ["color", "size"])
def test_unseen_and_missing_categories_map_to_unknown(fitted_frame, column):
    clf, _ = fitted_frame
    rows = pd.concat([FRAME.iloc[[0]]] * 3, ignore_index=True)
    if column == "color":
        rows["color"] = pd.Series(["purple", None, np.nan], dtype=object)
    else:
        rows["size"] = pd.Categorical(["XL", None, np.nan], categories=["S", "M", "L", "XL"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the unseen category is announced (tests/test_hostile_inputs.py checks the
        # warning); missing values are silent
        warnings.filterwarnings("ignore", message=".*not seen at fit")
        # pandas 1.5's own internals under numpy 1.25 (the declared floors), when
        # scikit-learn's check_array takes .values of a frame with a categorical column:
        # harmless, and gone from pandas 2.0.2 on
        warnings.filterwarnings(
            "ignore", message="np.find_common_type is deprecated", category=DeprecationWarning
        )
        proba = clf.predict_proba(rows)
        pred = clf.predict(rows)
        M_explain, masks = clf.explain(rows)
    assert proba.shape == (3, 2)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(pred) <= {"yes", "no"}
    assert M_explain.shape == (3, 4)
    # the unseen category, None and NaN are all the same "unknown" code (identical rows
    # up to float rounding within a batch)
    np.testing.assert_allclose(proba[1:], proba[[0, 0]], rtol=0, atol=1e-6)
    np.testing.assert_allclose(M_explain[1:], M_explain[[0, 0]], rtol=1e-5, atol=1e-6)
    for mask in masks.values():
        np.testing.assert_allclose(mask[1:], mask[[0, 0]], rtol=1e-5, atol=1e-6)


def _frame_with_missing_values():
    frame = FRAME.copy()
    color = frame["color"].copy()
    color[:10] = None
    color[10:20] = np.nan
    frame["color"] = color
    size = frame["size"].copy()
    size[:15] = np.nan
    frame["size"] = size
    assert frame["color"].isna().sum() == 20 and frame["size"].isna().sum() == 15
    return frame


def test_missing_values_in_categorical_columns_at_fit():
    frame = _frame_with_missing_values()
    clf = _tabnet(**CAT_PARAMS).fit(frame, FRAME_LABELS)
    np.testing.assert_array_equal(clf.categorical_features_, [1, 2])
    proba = clf.predict_proba(frame)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(clf.predict(frame)) <= {"yes", "no"}
    M_explain, masks = clf.explain(frame)
    assert np.all(np.isfinite(M_explain))
    assert M_explain.shape == (len(frame), 4)
    for mask in masks.values():
        np.testing.assert_allclose(mask.sum(axis=1), 1.0, atol=1e-5)
    assert clf.feature_importances_.shape == (4,)


def test_none_and_nan_seen_at_fit_both_map_to_unknown():
    """Documented: a category unseen at fit *or missing* maps to the "unknown" code.

    So a missing value, None or NaN, predicts like an unseen category, also when the
    training data held missing values.
    """
    clf = _tabnet(**CAT_PARAMS).fit(_frame_with_missing_values(), FRAME_LABELS)
    rows = pd.concat([FRAME.iloc[[0]]] * 3, ignore_index=True)
    rows["color"] = pd.Series(["purple", np.nan, None], dtype=object)
    proba = clf.predict_proba(rows)
    np.testing.assert_allclose(proba[1], proba[0], rtol=0, atol=1e-6, err_msg="NaN")
    np.testing.assert_allclose(proba[2], proba[0], rtol=0, atol=1e-6, err_msg="None")


# --------------------------------------------------------------------------- missing numbers


def _survey_frame(n=160, seed=0):
    """A small survey like carData's Chile: text and category columns, a nullable integer
    column, and gaps in the numeric columns as NaN, None and pd.NA."""
    rng = np.random.RandomState(seed)
    region = rng.choice(["north", "centre", "south"], n)
    age = rng.uniform(18, 80, n)
    income = rng.lognormal(10, 0.6, n)
    score = rng.randn(n)
    labels = np.where(score + 0.8 * (region == "south") > 0.3, "yes", "no").astype(object)
    age[rng.rand(n) < 0.05] = np.nan
    income = pd.Series(income, dtype=object)
    income[rng.rand(n) < 0.2] = None
    size = pd.array(rng.randint(1, 6, n), dtype="Int64")
    size[rng.rand(n) < 0.1] = pd.NA
    score[rng.rand(n) < 0.1] = np.nan
    frame = pd.DataFrame(
        {
            "region": pd.Series(region, dtype=object),
            "age": age,
            "income": pd.to_numeric(income),
            "size": size,
            "sex": pd.Categorical(rng.choice(["F", "M"], n)),
            "score": score,
        }
    )
    return frame, labels


SURVEY, SURVEY_LABELS = _survey_frame()
SURVEY_NUMERIC_GAPS = [1, 2, 3, 5]  # age, income, size, score


@pytest.fixture(scope="module")
def fitted_survey():
    return _tabnet(max_epochs=8, batch_size=40).fit(SURVEY, SURVEY_LABELS)


def test_a_frame_with_missing_numbers_fits_as_it_is(fitted_survey):
    clf = fitted_survey
    assert SURVEY.isna().sum()[["age", "income", "size", "score"]].min() > 0
    np.testing.assert_array_equal(clf.categorical_features_, [0, 4])
    # by name (issue 27.5: they were indices)
    np.testing.assert_array_equal(clf.missing_features_, SURVEY.columns[SURVEY_NUMERIC_GAPS])
    tabnet = clf.net_.module_.tabnet
    assert tabnet.missing_idxs == SURVEY_NUMERIC_GAPS
    # a value and its indicator per column with gaps, two one-wide embeddings
    assert tabnet.post_embedding_dim == SURVEY.shape[1] + len(SURVEY_NUMERIC_GAPS)
    proba = clf.predict_proba(SURVEY)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(clf.predict(SURVEY)) <= {"yes", "no"}
    assert clf.score(SURVEY, SURVEY_LABELS) > 0.6


def test_missing_indicators_stay_in_their_columns_group(fitted_survey):
    clf = fitted_survey
    n_columns = SURVEY.shape[1]
    importances = clf.feature_importances_
    assert importances.shape == (n_columns,)
    assert np.all(importances >= 0)
    np.testing.assert_allclose(importances.sum(), 1.0)
    M_explain, masks = clf.explain(SURVEY)
    assert M_explain.shape == (len(SURVEY), n_columns)
    assert np.all(np.isfinite(M_explain))
    np.testing.assert_allclose(importances, M_explain.sum(axis=0) / M_explain.sum())
    for step, mask in masks.items():
        assert mask.shape == (len(SURVEY), n_columns)
        _assert_mask_sums(step, mask)


def test_rows_with_missing_numbers_predict_finite_and_valid(fitted_survey):
    clf = fitted_survey
    rows = SURVEY.iloc[:6].copy()
    rows["age"] = np.nan
    rows["income"] = pd.Series([None, np.nan, pd.NA, 1e4, None, 5e4], dtype=object).to_numpy()
    rows["size"] = pd.array([pd.NA] * 6, dtype="Int64")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every column here had gaps at fit: no warning
        proba = clf.predict_proba(rows)
        M_explain, _ = clf.explain(rows)
    assert np.all(np.isfinite(proba)) and np.all(np.isfinite(M_explain))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # None, NaN and pd.NA are the same missing value
    same = rows.iloc[[0, 0, 0]].copy()
    same["income"] = pd.Series([None, np.nan, pd.NA], dtype=object).to_numpy()
    p = clf.predict_proba(same)
    np.testing.assert_allclose(p[1:], p[[0, 0]], rtol=0, atol=1e-12)


def test_numpy_input_with_nan():
    rng = np.random.RandomState(0)
    X = rng.randn(120, 4)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    X[rng.rand(120) < 0.2, 1] = np.nan
    X_object = X.astype(object)
    X_object[np.isnan(X)] = None
    clf = _tabnet(max_epochs=4, batch_size=40).fit(X, y)
    np.testing.assert_array_equal(clf.missing_features_, [1])
    proba = clf.predict_proba(X)
    assert np.all(np.isfinite(proba))
    # an object array with None is read the same way
    same = _tabnet(max_epochs=4, batch_size=40).fit(X_object, y)
    np.testing.assert_array_equal(same.predict_proba(X_object), proba)


def test_missing_values_where_fit_had_none_are_filled_with_the_mean():
    X, y = X_MED.copy(), Y_MED
    clf = _tabnet(max_epochs=4, batch_size=40).fit(X, y)
    assert clf.missing_features_.size == 0
    assert clf.net_.module_.tabnet.post_embedding_dim == X.shape[1]
    rows = X[:5].copy()
    rows[:, 2] = np.nan
    with pytest.warns(UserWarning, match=r"numeric column 2: 5 missing value\(s\).*training mean"):
        proba = clf.predict_proba(rows)
    assert np.all(np.isfinite(proba))
    filled = X[:5].copy()
    filled[:, 2] = X[:, 2].astype(np.float32).mean(dtype=np.float64)
    np.testing.assert_allclose(proba, clf.predict_proba(filled), rtol=0, atol=1e-9)
    # the frame's column name is in the warning
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    named = _tabnet(max_epochs=2, batch_size=40).fit(frame, y)
    gap = frame.iloc[:3].copy()
    gap.loc[:, "f4"] = np.nan
    with pytest.warns(UserWarning, match="numeric column 'f4'"):
        named.predict(gap)


def _missingness_only(n, seed):
    """Class 1 leaves column 0 blank 80% of the time, class 0 10%; the values themselves
    and the other columns are noise, so only the gaps carry the class."""
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 2, n)
    X = rng.randn(n, 4)
    blank = rng.rand(n) < np.where(y == 1, 0.8, 0.1)
    X[blank, 0] = np.nan
    return X, y


def test_a_column_informative_only_through_its_gaps_is_learned():
    accuracies, shares, imputed = [], [], []
    for seed in range(3):
        X, y = _missingness_only(240, seed)
        X_test, y_test = _missingness_only(400, seed + 100)
        params = {"max_epochs": 10, "batch_size": 32, "random_state": seed}
        clf = _tabnet(**params).fit(X, y)
        accuracies.append(clf.score(X_test, y_test))
        shares.append(clf.feature_importances_[0])
        # the same network on mean-imputed data, where only the imputed value marks a gap
        mean = np.nanmean(X[:, 0])
        X_filled, X_test_filled = np.nan_to_num(X, nan=mean), np.nan_to_num(X_test, nan=mean)
        imputed.append(_tabnet(**params).fit(X_filled, y).score(X_test_filled, y_test))
    # chance is 0.5 and the best possible 0.85 (0.84 measured); the values are noise
    assert np.mean(accuracies) > 0.75, accuracies
    assert np.mean(shares) > 0.4, shares
    # the indicator is what carries it (mean imputation: 0.73 measured)
    assert np.mean(accuracies) > np.mean(imputed) + 0.05, (accuracies, imputed)


def test_missing_labels_are_an_error_not_dropped():
    y = pd.Series(SURVEY_LABELS.copy())
    y[[3, 9]] = None
    with pytest.raises(ValueError, match=r"missing label.*in 2 of 160 rows, the first in row 3"):
        _tabnet(max_epochs=1).fit(SURVEY, y)
    as_string = pd.Series(SURVEY_LABELS, dtype="string")
    as_string[5] = pd.NA
    with pytest.raises(ValueError, match=r"contains NaN.*row 5"):
        _tabnet(max_epochs=1).fit(SURVEY, as_string)
    numbers = Y_MED.astype(float)
    numbers[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        _tabnet(max_epochs=1).fit(X_MED, numbers)


@pytest.mark.parametrize("as_frame", [True, False])
def test_infinity_is_an_error_naming_the_column(as_frame):
    # a copy: pandas before 3 makes a frame a view of the array, and X_MED is shared
    frame = pd.DataFrame(X_MED.copy(), columns=[f"f{i}" for i in range(X_MED.shape[1])])
    frame.loc[7, "f3"] = -np.inf
    frame.loc[9, "f3"] = np.inf
    frame.loc[2, "f1"] = np.nan  # a gap is fine
    X = frame if as_frame else frame.to_numpy()
    column = "'f3'" if as_frame else "3"
    with pytest.raises(ValueError, match=rf"infinity.*column {column}: 2 value\(s\).*row 7"):
        _tabnet(max_epochs=1).fit(X, Y_MED)
    clf = _tabnet(max_epochs=1).fit(X[:7], Y_MED[:7])  # the rows before the first infinity
    with pytest.raises(ValueError, match=rf"infinity.*column {column}"):
        clf.predict(X)


def test_network_missing_indicator_layout_and_validation():
    import torch

    from sk_entmax.nn import TabNet

    net = TabNet(4, 2, n_steps=1, cat_idxs=[1], cat_dims=[3], missing_idxs=[2],
                 missing_fill=[0.0, 0.0, 5.0, 0.0])  # fmt: skip
    X = torch.tensor([[1.0, 2.0, float("nan"), 3.0], [1.0, 0.0, 4.0, float("nan")]])
    features = net.embed(X)
    # column 0, the embedding of column 1, column 2 and its indicator, column 3
    assert features.shape == (2, 5)
    np.testing.assert_array_equal(features[:, 2:].detach().numpy(), [[5, 1, 3], [4, 0, 0]])
    np.testing.assert_array_equal(net._group.numpy(), [0, 1, 2, 2, 3])
    for bad, match in [
        ({"missing_idxs": [1]}, "categorical"),
        ({"missing_idxs": [4]}, "missing_idxs"),
        ({"missing_idxs": [2, 2]}, "repeat"),
        ({"missing_fill": [0.0]}, "missing_fill"),
        ({"missing_fill": [0.0, 0.0, float("inf"), 0.0]}, "missing_fill"),
    ]:
        with pytest.raises(ValueError, match=match):
            TabNet(4, 2, cat_idxs=[1], cat_dims=[3], **bad)


def _coded_frame(n=80, seed=0):
    rng = np.random.RandomState(seed)
    code = rng.randint(0, 4, n)
    x0, x1 = rng.randn(n), rng.randn(n)
    frame = pd.DataFrame({"x0": x0, "code": code, "x1": x1})
    return frame, (x0 + (code == 2) > 0.5).astype(int)


SPECS = {
    "name": ["code"],
    "tuple-of-names": ("code",),
    "index": [1],
    "negative-index": [-2],
    "mask": np.array([False, True, False]),
}


@pytest.mark.parametrize(
    ("spec", "as_frame"),
    [
        pytest.param(spec, as_frame, id=f"{key}-{'frame' if as_frame else 'array'}")
        for key, spec in SPECS.items()
        for as_frame in (True, False)
        if as_frame or "name" not in key  # column names need a DataFrame
    ],
)
def test_categorical_features_by_name_or_index(spec, as_frame):
    frame, y = _coded_frame()
    X = frame if as_frame else frame.to_numpy()
    clf = _tabnet(categorical_features=spec, max_epochs=3, batch_size=40)
    clf.fit(X, y)
    assert clf.get_params()["categorical_features"] is spec  # not rewritten
    np.testing.assert_array_equal(clf.categorical_features_, [1])
    assert len(clf.categories_) == 1
    np.testing.assert_array_equal(np.asarray(clf.categories_[0], dtype=float), [0, 1, 2, 3])
    assert clf.net_.module_.tabnet.cat_idxs == [1]
    assert clf.net_.module_.tabnet.cat_dims == [5]
    assert clf.feature_importances_.shape == (3,)
    # a code not seen at fit is unknown, not an error
    unseen = frame.iloc[:2].copy()
    unseen["code"] = [7, 0]
    unseen = unseen if as_frame else unseen.to_numpy()
    assert clf.predict_proba(unseen).shape == (2, 2)


def test_integer_column_of_a_frame_is_numeric_without_spec():
    frame, y = _coded_frame()
    clf = _tabnet(max_epochs=2, batch_size=40).fit(frame, y)
    assert clf.categorical_features_.size == 0
    assert clf.categories_ == []
    assert clf.net_.module_.tabnet.cat_idxs == []


def test_get_params_unchanged_by_fit_and_clone_refits_identically(fitted_frame):
    clf, params_before = fitted_frame
    assert clf.get_params() == params_before
    assert clf.categorical_features is None
    assert clf.batch_size == 40 and clf.virtual_batch_size == "auto"
    cloned = clone(clf)
    assert cloned.get_params() == params_before
    assert not hasattr(cloned, "net_")
    cloned.fit(FRAME, FRAME_LABELS)
    np.testing.assert_array_equal(cloned.predict_proba(FRAME), clf.predict_proba(FRAME))
    np.testing.assert_array_equal(cloned.feature_importances_, clf.feature_importances_)
    np.testing.assert_array_equal(cloned.categorical_features_, clf.categorical_features_)


def test_explicit_categorical_spec_is_not_mutated_by_fit():
    spec = ["color", "size"]
    clf = _tabnet(categorical_features=spec, **CAT_PARAMS)
    clf.fit(FRAME, FRAME_LABELS)
    assert spec == ["color", "size"]
    assert clf.get_params()["categorical_features"] is spec
    np.testing.assert_array_equal(clf.categorical_features_, [1, 2])
    again = clone(clf).fit(FRAME, FRAME_LABELS)
    np.testing.assert_array_equal(again.predict_proba(FRAME), clf.predict_proba(FRAME))


# --------------------------------------------------------------------------- explain


def _assert_mask_sums(step, mask):
    """The faithful design's (the default's) masks: the first step's rows sum to 1, a later
    step's to at most 1 (the rest is the share it read of nothing)."""
    sums = mask.sum(axis=1)
    if step == 0:
        np.testing.assert_allclose(sums, 1.0, atol=1e-5)
    else:
        assert np.all(sums <= 1.0 + 1e-5) and np.all(sums >= 0.0)


def test_explain_shapes_and_masks_on_the_simplex(fitted):
    M_explain, masks = fitted.explain(X_MED)
    n, d = X_MED.shape
    assert M_explain.shape == (n, d)
    assert np.all(np.isfinite(M_explain))
    assert np.all(M_explain >= 0)
    assert isinstance(masks, dict)
    assert sorted(masks) == list(range(TINY["n_steps"]))
    for step, mask in masks.items():
        assert mask.shape == (n, d)
        assert np.all(mask >= 0)
        _assert_mask_sums(step, mask)


def test_sparsemax_masks_hold_exact_zeros():
    # the paper's design: every step's mask is the mapping of data-dependent scores
    _, masks = _shared_fit("sparsemax", faithful_masks=False).explain(X_MED)
    for step, mask in masks.items():
        assert np.mean(mask == 0) > 0.2, f"step {step}: too few exact zeros"
        # zeros are exact, not merely small: the rest are clearly positive
        assert np.all((mask == 0) | (mask > 1e-9))


def test_explain_normalize(fitted):
    M_explain, masks = fitted.explain(X_MED)
    M_norm, masks_norm = fitted.explain(X_MED, normalize=True)
    sums = M_norm.sum(axis=1)
    zero_rows = M_explain.sum(axis=1) == 0
    np.testing.assert_allclose(sums[~zero_rows], 1.0, atol=1e-9)
    np.testing.assert_array_equal(sums[zero_rows], 0.0)
    expected = M_explain[~zero_rows] / M_explain[~zero_rows].sum(axis=1, keepdims=True)
    np.testing.assert_allclose(M_norm[~zero_rows], expected)
    for step in masks:
        np.testing.assert_array_equal(masks_norm[step], masks[step])


def test_explain_does_not_change_predictions(fitted):
    before = fitted.predict_proba(X_MED)
    fitted.explain(X_MED[:7])  # a short batch, in evaluation mode
    np.testing.assert_array_equal(fitted.predict_proba(X_MED), before)


# --------------------------------------------------------------------------- importances


def test_feature_importances(fitted):
    importances = fitted.feature_importances_
    assert importances.shape == (fitted.n_features_in_,) == (X_MED.shape[1],)
    assert np.all(importances >= 0)
    np.testing.assert_allclose(importances.sum(), 1.0)
    # the share of the training data's explain attribution per column
    M_explain, _ = fitted.explain(X_MED)
    if M_explain.sum() > 0:
        np.testing.assert_allclose(importances, M_explain.sum(axis=0) / M_explain.sum())


def test_select_from_model_prefit(fitted):
    selector = SelectFromModel(fitted, prefit=True)
    X_selected = selector.transform(X_MED)
    support = selector.get_support()
    importances = fitted.feature_importances_
    np.testing.assert_array_equal(support, importances >= importances.mean())
    assert 1 <= support.sum() < X_MED.shape[1]
    assert X_selected.shape == (len(X_MED), support.sum())
    np.testing.assert_array_equal(X_selected, X_MED[:, support])


def test_masks_find_the_informative_features():
    X, y = make_classification(
        n_samples=600,
        n_features=10,
        n_informative=3,
        n_redundant=0,
        n_repeated=0,
        shuffle=False,
        random_state=0,
    )
    # Default network, sparsemax masks, three seeds: on one the selection's check may put
    # every column back (the importances then spread), so the median is what is asserted;
    # the accuracy over the seeds (one of them can drop a feature it had not learned when
    # it was measured: issue 57, open)
    fits = [TabNetEntmaxClassifier(max_epochs=40, random_state=s).fit(X, y) for s in range(3)]
    shares = [clf.feature_importances_[:3].sum() for clf in fits]
    share = float(np.median(shares))
    assert share >= 0.8, f"median share of importances on the informative columns: {shares}"
    assert np.mean([clf.score(X, y) for clf in fits]) > 0.75


# --------------------------------------------------------------------------- model selection


def test_grid_search_over_modes_in_pipeline_on_a_frame_with_string_labels():
    frame, labels = _mixed_frame(n=80, seed=1)
    frame = frame.drop(columns="size")
    pre = ColumnTransformer(
        [("num", StandardScaler(), ["x0", "x1"]), ("cat", "passthrough", ["color"])]
    ).set_output(transform="pandas")
    pipe = make_pipeline(pre, _tabnet(max_epochs=3, batch_size=20))
    grid = {
        "tabnetentmaxclassifier__entmax_mode": list(ENTMAX_MODES),
        "tabnetentmaxclassifier__entmax_alpha": [1.3, 1.7],
    }
    search = GridSearchCV(pipe, grid, cv=2, n_jobs=1, error_score="raise").fit(frame, labels)
    assert len(search.cv_results_["params"]) == 8
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert set(search.best_params_) == set(grid)
    best = search.best_estimator_[-1]
    check_is_fitted(best)
    assert best.entmax_mode == search.best_params_["tabnetentmaxclassifier__entmax_mode"]
    assert best.entmax_alpha == search.best_params_["tabnetentmaxclassifier__entmax_alpha"]
    np.testing.assert_array_equal(best.categorical_features_, [2])  # the passed-through color
    pred = search.predict(frame)
    assert pred.shape == (len(frame),)
    assert set(pred) <= {"yes", "no"}
    np.testing.assert_array_equal(search.classes_, ["no", "yes"])


# --------------------------------------------------------------------------- multi-label


@pytest.mark.parametrize("mode", ["sparsemax", "entmax15", "constant", "adaptive"])
def test_multilabel_indicator_target(mode):
    X, Y = make_multilabel_classification(
        n_samples=80, n_features=5, n_classes=3, n_labels=2, allow_unlabeled=True, random_state=0
    )
    assert (Y.sum(axis=1) == 0).any()  # rows without labels: in the loss, no warning
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*no label")
        clf = _tabnet(mode, max_epochs=8, batch_size=40).fit(X, Y)
    assert clf.multilabel_
    np.testing.assert_array_equal(clf.classes_, [0, 1, 2])
    proba = clf.predict_proba(X)
    assert proba.shape == Y.shape
    assert np.all(proba >= 0) and np.all(proba.sum(axis=1) <= 1 + 1e-9)
    # with the "no label" output the rows sum to 1
    full = clf._slot_proba(X)
    np.testing.assert_allclose(full.sum(axis=1), 1.0, atol=1e-9)
    pred = clf.predict(X)
    assert pred.shape == Y.shape
    assert pred.dtype == Y.dtype
    np.testing.assert_array_equal(pred, (proba > 0).astype(Y.dtype))  # on every row
    assert clf.support_temperature_ > 0
    # the predicted label sets are, on average, no larger than the true ones
    assert pred.sum(axis=1).mean() <= Y.sum(axis=1).mean()
    assert clf.feature_importances_.shape == (5,)


# --------------------------------------------------------------------------- pickle / seeds


def test_pickle_round_trip_gives_identical_predictions(fitted):
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.predict_proba(X_MED), fitted.predict_proba(X_MED))
    np.testing.assert_array_equal(restored.predict(X_MED), fitted.predict(X_MED))
    np.testing.assert_array_equal(restored.mask_alpha_, fitted.mask_alpha_)
    np.testing.assert_array_equal(restored.feature_importances_, fitted.feature_importances_)
    M_restored, masks_restored = restored.explain(X_MED)
    M_explain, masks = fitted.explain(X_MED)
    np.testing.assert_array_equal(M_restored, M_explain)
    for step in masks:
        np.testing.assert_array_equal(masks_restored[step], masks[step])
    assert restored.get_params() == fitted.get_params()


def test_pickle_round_trip_with_categorical_columns(fitted_frame):
    clf, _ = fitted_frame
    restored = pickle.loads(pickle.dumps(clf))
    rows = FRAME.iloc[:5].copy()
    rows["color"] = pd.Series(["purple", None, "red", "blue", "green"], dtype=object)
    np.testing.assert_array_equal(restored.predict_proba(rows), clf.predict_proba(rows))
    np.testing.assert_array_equal(restored.predict(FRAME), clf.predict(FRAME))


@pytest.mark.parametrize("mode", list(MODES))
def test_same_random_state_gives_identical_probabilities(mode):
    a = _tabnet(mode, max_epochs=3, random_state=3).fit(X_SMALL, Y_SMALL)
    b = _tabnet(mode, max_epochs=3, random_state=3).fit(X_SMALL, Y_SMALL)
    np.testing.assert_array_equal(a.predict_proba(X_SMALL), b.predict_proba(X_SMALL))
    np.testing.assert_array_equal(a.mask_alpha_, b.mask_alpha_)
    c = _tabnet(mode, max_epochs=3, random_state=4).fit(X_SMALL, Y_SMALL)
    assert not np.array_equal(a.predict_proba(X_SMALL), c.predict_proba(X_SMALL))


def test_clip_value_wires_gradient_norm_clipping():
    X, y = load_iris(return_X_y=True)
    tiny = {"n_d": 4, "n_a": 4, "n_steps": 1, "max_epochs": 1, "random_state": 0}
    clipped = TabNetEntmaxClassifier(clip_value=0.5, **tiny).fit(X, y)
    callbacks = dict(clipped.net_.callbacks_)
    assert callbacks["gradient_clipping"].gradient_clip_value == 0.5
    unclipped = TabNetEntmaxClassifier(clip_value=None, **tiny).fit(X, y)
    assert "gradient_clipping" not in dict(unclipped.net_.callbacks_)
    with pytest.raises(ValueError, match="clip_value"):
        TabNetEntmaxClassifier(clip_value=0.0, **tiny).fit(X, y)


# ---------------------------------------------------------------- issue 60, point 4


@pytest.mark.filterwarnings("ignore:TabNetEntmax\\w+'s fit:UserWarning")  # one epoch's fit
@pytest.mark.parametrize("kind", ["classifier", "regressor"])
@pytest.mark.parametrize(("n_rows", "held_out"), [(10_000, False), (10_001, True)])
def test_early_stopping_is_auto_by_default(kind, n_rows, held_out):
    """HistGradientBoosting's convention: by default a validation split (and its loss in
    the history, the one the stopping rule watches) only above 10,000 rows."""
    from sk_entmax import TabNetEntmaxRegressor

    X, y = make_classification(n_samples=n_rows, n_features=3, n_redundant=0, random_state=0)
    cls = TabNetEntmaxClassifier if kind == "classifier" else TabNetEntmaxRegressor
    assert cls().early_stopping == "auto"
    est = cls(n_d=2, n_a=2, n_steps=1, max_epochs=1, random_state=0).fit(X, y)
    assert ("valid_loss" in est.net_.history[-1]) is held_out
    assert dict(est.net_.callbacks_)["early_stopping"].monitor == (
        "valid_loss" if held_out else "train_loss"
    )
