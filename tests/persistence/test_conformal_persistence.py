"""save and load of a SparseConformalClassifier (issue 28.1): the loaded wrapper gives the
same sets and probabilities, and load refuses a calibration that is not what conformalize
computes from the stored scores."""

from __future__ import annotations

import json

import numpy as np
import pytest
from saved_files import read_saved, write_saved
from sklearn.datasets import load_wine
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier
from sk_entmax.conformal import SparseConformalClassifier
from sk_entmax.persistence import load, save


@pytest.fixture(scope="module")
def data():
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    names = np.array(["barolo", "grignolino", "barbera"])[y]
    return train_test_split(X, names, test_size=0.6, random_state=0, stratify=y)


def _assert_same(restored, original, X):
    assert type(restored) is SparseConformalClassifier
    np.testing.assert_array_equal(restored.predict_set(X), original.predict_set(X))
    np.testing.assert_array_equal(restored.predict_proba(X), original.predict_proba(X))
    np.testing.assert_array_equal(restored.classes_, original.classes_)
    for key in ("quantiles_", "temperatures_", "conformity_scores_", "confidence_levels_"):
        np.testing.assert_array_equal(getattr(restored, key), getattr(original, key))
    assert restored.temperature_ == original.temperature_
    assert restored.mapping_alpha_ == original.mapping_alpha_


@pytest.mark.parametrize(
    ("make", "prefit"),
    [
        (lambda: SparseConformalClassifier(confidence_level=[0.8, 0.9]), False),
        (
            lambda: SparseConformalClassifier(
                EntmaxClassifier(alpha=1.5), class_conditional=True, confidence_level=0.9
            ),
            False,
        ),
        (lambda: EntmaxClassifier(learn_alpha=True), True),
    ],
    ids=["default-levels", "entmax-mondrian", "prefit-learned"],
)
def test_round_trip(make, prefit, data, tmp_path):
    X_fit, X_rest, y_fit, y_rest = data
    X_cal, X_test, y_cal, y_test = train_test_split(X_rest, y_rest, test_size=0.5, random_state=0)
    if prefit:
        clf = SparseConformalClassifier(make().fit(X_fit, y_fit), prefit=True)
    else:
        clf = make().fit(X_fit, y_fit)
    clf.conformalize(X_cal, y_cal)
    path = tmp_path / "conformal.safetensors"
    save(clf, path)
    restored = load(path)
    _assert_same(restored, clf, X_test)
    params, original = restored.get_params(deep=False), clf.get_params(deep=False)
    assert params.keys() == original.keys()
    for key in params.keys() - {"estimator"}:
        assert params[key] == original[key]
    if prefit:
        assert restored.estimator is restored.estimator_  # prefit: the fitted model itself
    elif original["estimator"] is None:
        assert params["estimator"] is None
    else:  # an unfitted estimator with the fitted one's parameters
        assert type(params["estimator"]) is type(original["estimator"])
        assert not hasattr(params["estimator"], "net_")
        assert params["estimator"].get_params() == original["estimator"].get_params()
    # the loaded wrapper calibrates again as the original does
    again = restored.conformalize(X_test, y_test).quantiles_
    np.testing.assert_array_equal(again, clf.conformalize(X_test, y_test).quantiles_)


def test_fitted_not_conformalized_round_trips(data, tmp_path):
    X_fit, X_rest, y_fit, _ = data
    clf = SparseConformalClassifier().fit(X_fit, y_fit)
    save(clf, tmp_path / "m.safetensors")
    restored = load(tmp_path / "m.safetensors")
    with pytest.raises(NotFittedError, match="not conformalized"):
        restored.predict_set(X_rest)
    np.testing.assert_array_equal(restored.predict(X_rest), clf.predict(X_rest))


def test_too_few_rows_round_trip_with_an_infinite_quantile(data, tmp_path):
    X_fit, X_rest, y_fit, y_rest = data
    clf = SparseConformalClassifier(confidence_level=0.99).fit(X_fit, y_fit)
    with pytest.warns(UserWarning, match="too few"):
        clf.conformalize(X_rest[:20], y_rest[:20])
    assert np.isinf(clf.quantiles_).all()
    save(clf, tmp_path / "m.safetensors")
    restored = load(tmp_path / "m.safetensors")
    _assert_same(restored, clf, X_rest)
    assert restored.predict_set(X_rest).all()


def test_save_refuses_what_it_cannot_store(data, tmp_path):
    X_fit, _, y_fit, _ = data
    with pytest.raises(NotFittedError):
        save(SparseConformalClassifier(), tmp_path / "m.safetensors")
    foreign = SparseConformalClassifier(LogisticRegression()).fit(X_fit, y_fit)
    with pytest.raises(TypeError, match=r"wraps a LogisticRegression.*pickle"):
        save(foreign, tmp_path / "m.safetensors")
    assert not (tmp_path / "m.safetensors").exists()


@pytest.fixture(scope="module")
def saved(data, tmp_path_factory):
    X_fit, X_rest, y_fit, y_rest = data
    clf = SparseConformalClassifier(SparsemaxClassifier(), confidence_level=[0.8, 0.9])
    clf.fit(X_fit, y_fit).conformalize(X_rest, y_rest)
    path = tmp_path_factory.mktemp("conformal") / "m.safetensors"
    save(clf, path)
    header, tensors = read_saved(path)
    return header, tensors


def _edited(saved, tmp_path, change):
    header, tensors = saved
    header = json.loads(json.dumps(header))
    change(header["conformal"])
    return write_saved(tmp_path / "edited.safetensors", header, tensors)


def _values(entry, name):
    return entry["fitted"][name]["values"]


def _bump_quantile(entry):
    values = _values(entry, "quantiles_")
    values[0] = 0.123 if values[0] != 0.123 else 0.5


def _bump_score(entry):
    values = _values(entry, "conformity_scores_")
    values[0] = -1.0


def _bump_temperature(entry):
    values = _values(entry, "temperatures_")
    values[1] = values[1] * 2


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (_bump_quantile, "quantiles_"),
        (_bump_score, "conformity_scores_"),
        (_bump_temperature, "temperatures_"),
        (lambda e: e["fitted"].pop("quantiles_"), "half calibrated"),
        (lambda e: e["fitted"].update(extra_=1), "unknown conformal fitted attribute"),
        (lambda e: e["params"].update(confidence_level=1.5), "confidence_level"),
        (lambda e: e["params"].update(mapping_alpha=1.5), "mapping_alpha_"),
        (lambda e: e.update(estimator="fitted"), "contradicts prefit"),
        (lambda e: e.update(estimator="code"), "estimator entry"),
        (lambda e: e["fitted"]["classes_"]["values"].reverse(), "classes_"),
        (lambda e: e.pop("fitted"), "lacks"),
    ],
    ids=[
        "quantile",
        "score",
        "temperature",
        "half",
        "extra",
        "level",
        "alpha",
        "prefit",
        "kind",
        "classes",
        "keys",
    ],
)
def test_load_refuses_an_altered_calibration(saved, tmp_path, change, match):
    path = _edited(saved, tmp_path, change)
    with pytest.raises(ValueError, match=f"cannot load .*{match}"):
        load(path)


def test_the_unaltered_file_loads(saved, tmp_path):
    path = _edited(saved, tmp_path, lambda entry: None)
    assert load(path).quantiles_.shape == (2, 3)
