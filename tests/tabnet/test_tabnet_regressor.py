"""TabNetEntmaxRegressor: scikit-learn's checks, the target's scale, multi-output targets,
tables with categories and gaps, explanations, certificates, persistence and meta-estimators."""

import functools
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from expected_failures import MINIBATCH_FAILURES
from sklearn.base import clone, is_regressor
from sklearn.datasets import make_friedman1
from sklearn.ensemble import StackingRegressor, VotingRegressor
from sklearn.linear_model import LinearRegression, RidgeCV
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.utils.estimator_checks import check_regressors_train, parametrize_with_checks

from sk_entmax import TabNetEntmaxClassifier, TabNetEntmaxRegressor
from sk_entmax.persistence import load, save

TINY = {"n_d": 4, "n_a": 4, "n_steps": 2, "n_independent": 1, "n_shared": 1, "lr": 0.05}
X_F, Y_F = make_friedman1(n_samples=300, n_features=8, noise=0.1, random_state=0)


def _reg(**params):
    return TabNetEntmaxRegressor(**{**TINY, "random_state": 0, **params})


# Two epochs keep the checks fast. check_regressors_train asks for R^2 > 0.5 on its data:
# two epochs reach it with the default design of issue 57 (two epochs of issue 46's did
# not, 0.35), and it runs below at ten epochs too
REGRESSOR_FAILURES = MINIBATCH_FAILURES


@parametrize_with_checks(
    [_reg(max_epochs=2)], expected_failed_checks=lambda estimator: REGRESSOR_FAILURES
)
def test_sklearn_compatible_regressor(estimator, check):
    check(estimator)


def test_check_regressors_train_at_ten_epochs():
    check_regressors_train("TabNetEntmaxRegressor", _reg(max_epochs=10))


def test_predict_undoes_the_standardized_target_the_network_learns():
    y = 1000.0 + 50.0 * Y_F  # far from mean 0, scale 1
    reg = _reg(max_epochs=3).fit(X_F, y)
    np.testing.assert_allclose(reg._target_mean, [y.mean()])
    np.testing.assert_allclose(reg._target_scale, [y.std()])
    scores = reg._scores(X_F).numpy()[:, 0]
    np.testing.assert_allclose(reg.predict(X_F), scores * y.std() + y.mean())


def test_the_loss_is_the_squared_error_of_the_standardized_target():
    reg = _reg(max_epochs=2, lambda_sparse=0.0).fit(X_F, Y_F)
    module = reg._inference_module()
    with torch.no_grad():
        output = module(torch.as_tensor(X_F))
        z = (Y_F - Y_F.mean()) / Y_F.std()
        per_row = module.loss(output, torch.as_tensor(z)).numpy()
    predicted = (reg.predict(X_F) - Y_F.mean()) / Y_F.std()
    np.testing.assert_allclose(per_row, (predicted - z) ** 2, rtol=1e-6, atol=1e-9)


def test_weighted_standardization_and_zero_weight_rows():
    w = np.r_[np.zeros(50), np.ones(250)]
    y = Y_F.copy()
    y[:50] = 1e6  # rows of weight 0 count nowhere
    reg = _reg(max_epochs=2).fit(X_F, y, sample_weight=w)
    np.testing.assert_allclose(reg._target_mean, [Y_F[50:].mean()])
    np.testing.assert_allclose(reg._target_scale, [Y_F[50:].std()])


def test_multi_output_targets_keep_their_columns():
    Y = np.c_[Y_F, -3.0 * Y_F + 7.0, np.full(len(Y_F), 2.0)]  # a constant column too
    reg = _reg(max_epochs=3).fit(X_F, Y)
    assert reg.n_outputs_ == 3 and reg.predict(X_F[:5]).shape == (5, 3)
    # a constant column: standardized to 0, which the network learns to about 0
    np.testing.assert_allclose(reg.predict(X_F[:5])[:, 2], 2.0, atol=0.5)
    assert reg.predict(X_F[:5]).ndim == 2
    one = _reg(max_epochs=2).fit(X_F, Y_F.reshape(-1, 1))
    assert one.predict(X_F[:5]).shape == (5,)


def test_it_learns_friedman1_as_well_as_a_linear_model_and_reads_its_columns():
    X, y = make_friedman1(n_samples=1500, n_features=10, noise=0.5, random_state=1)
    tr, te = slice(0, 1200), slice(1200, None)
    reg = TabNetEntmaxRegressor(max_epochs=60, random_state=0).fit(X[tr], y[tr])
    linear = RidgeCV().fit(X[tr], y[tr])
    assert reg.score(X[te], y[te]) > linear.score(X[te], y[te])
    # the five informative columns hold most of the importance
    assert reg.feature_importances_[:5].sum() > 0.6


def test_tables_with_categories_and_gaps():
    rng = np.random.default_rng(0)
    n = 240
    df = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "c": rng.choice(["x", "y", None], size=n),
            "d": np.where(rng.random(n) < 0.2, np.nan, rng.normal(size=n)),
        }
    )
    y = 2.0 * df["a"].to_numpy() + (df["c"] == "x") + rng.normal(0, 0.1, n)
    reg = _reg(max_epochs=3).fit(df, y)
    assert list(reg.feature_names_in_) == ["a", "c", "d"]
    assert reg.categorical_features_.tolist() == [1]
    assert reg.missing_features_.tolist() == ["d"]
    M, masks = reg.explain(df)
    assert M.shape == (n, 3) and sorted(masks) == [0, 1]
    assert np.isclose(reg.feature_importances_.sum(), 1.0)
    assert np.isfinite(reg.predict(df)).all()


@functools.cache
def _friedman_fit() -> TabNetEntmaxRegressor:
    """The elimination on the squared error, warm-up shortened to 150 steps."""
    return _reg(max_epochs=25, faithful_masks=True, mask_warmup=150).fit(X_F, Y_F)


def test_faithful_masks_certify_non_use_for_a_regressor_too():
    """The certificate covers noise columns, and what it certifies moves nothing."""
    reg = _friedman_fit()
    never = reg.never_read(X_F)
    assert never[:, 5:].mean() >= 0.5
    rng = np.random.default_rng(0)
    X2 = np.where(never, rng.normal(size=X_F.shape) * 100, X_F)
    np.testing.assert_array_equal(reg.predict(X2), reg.predict(X_F))


def test_the_regressor_selection_keeps_every_informative_column():
    """x2's effect is a square: in a 150-step warm-up the network had not learned it when it
    was measured, and the elimination dropped it (a strict xfail until the residual test,
    which sees it in the squares of its normal scores, kept it). 60 rows held out, below
    the minimum: the probes run on the batches, the residual test on all 300 rows."""
    dropped = _friedman_fit().net_.module_.tabnet.first_mask_logits.detach().numpy() < -1e5
    assert not dropped[:5].any()


def test_save_and_load_give_the_same_predictions(tmp_path):
    reg = _reg(max_epochs=2, entmax_mode="adaptive").fit(X_F, np.c_[Y_F, Y_F**2])
    save(reg, tmp_path / "r.safetensors")
    back = load(tmp_path / "r.safetensors")
    assert type(back) is TabNetEntmaxRegressor
    np.testing.assert_array_equal(back.predict(X_F), reg.predict(X_F))
    np.testing.assert_array_equal(back.explain(X_F)[0], reg.explain(X_F)[0])


def test_meta_estimators_see_a_regressor():
    reg = _reg(max_epochs=2)
    assert is_regressor(reg) and not is_regressor(TabNetEntmaxClassifier())
    scores = cross_val_score(reg, X_F, Y_F, cv=KFold(3))
    assert scores.shape == (3,)
    search = GridSearchCV(reg, {"entmax_mode": ["sparsemax", "entmax15"]}, cv=2).fit(X_F, Y_F)
    assert search.best_params_["entmax_mode"] in ("sparsemax", "entmax15")
    for meta in (
        StackingRegressor([("tabnet", reg), ("ols", LinearRegression())], cv=2),
        VotingRegressor([("tabnet", reg), ("ols", LinearRegression())]),
    ):
        assert clone(meta).fit(X_F, Y_F).predict(X_F[:4]).shape == (4,)


@pytest.mark.parametrize(
    ("params", "name"),
    [({"alpha": 1.5}, "alpha"), ({"class_weight": "balanced"}, "class_weight")],
)
def test_classifier_only_parameters_are_not_the_regressors(params, name):
    with pytest.raises(TypeError, match=name):
        TabNetEntmaxRegressor(**params)


def test_a_non_numeric_target_is_refused_with_a_pointer_to_the_classifier():
    with pytest.raises(ValueError, match="numeric target"):
        _reg(max_epochs=1).fit(X_F, np.array(["a", "b"] * 150))


# ----------------------------------------------------------------- targets of any finite scale


def test_a_target_whose_squares_overflow_fits_saves_and_predicts(tmp_path):
    # 1e200 times N(0, 1): its squares overflow float64; the scale was inf before, every
    # prediction +-inf, and the saved file was refused by load
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 3))
    unit = X[:, 0] + 0.1 * rng.standard_normal(120)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        big = _reg(max_epochs=3).fit(X, 1e200 * unit)
        small = _reg(max_epochs=3).fit(X, unit)
        predictions = big.predict(X)
    assert np.isfinite(big._target_scale).all() and np.isfinite(big._target_mean).all()
    assert np.isfinite(predictions).all()
    # the same model in other units: the target is standardized in its own scale
    np.testing.assert_allclose(predictions / 1e200, small.predict(X), rtol=1e-4, atol=1e-6)
    save(big, tmp_path / "big.safetensors")
    np.testing.assert_array_equal(load(tmp_path / "big.safetensors").predict(X), predictions)


def test_the_infinity_message_names_the_regressor():
    X = np.array([[0.0, 1.0], [np.inf, 2.0], [1.0, 3.0], [2.0, 4.0]])
    with pytest.raises(ValueError, match="TabNetEntmaxRegressor needs finite numbers"):
        _reg(max_epochs=1).fit(X, np.arange(4.0))
