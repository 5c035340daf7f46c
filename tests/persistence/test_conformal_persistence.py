"""save and load of a SparseConformalClassifier (issue 28.1): the loaded wrapper gives the
same sets and probabilities, and load refuses a calibration that is not what conformalize
computes from the stored scores."""

from __future__ import annotations

import json

import numpy as np
import pytest
from saved_files import read_saved, write_saved
from sklearn.base import clone
from sklearn.datasets import load_wine
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline, make_pipeline
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


# ---------------------------------------------------------------------- issue 62's modes


def _multilabel(data):
    X_fit, X_rest, y_fit, y_rest = data
    Y_fit = np.stack([y_fit == "barolo", y_fit != "barbera", X_fit[:, 0] > 0], 1).astype(int)
    Y_rest = np.stack([y_rest == "barolo", y_rest != "barbera", X_rest[:, 0] > 0], 1).astype(int)
    return X_fit, X_rest, Y_fit, Y_rest


@pytest.mark.parametrize(
    "mode",
    ["randomized", "randomized-mondrian", "recall", "cv"],
)
def test_modes_round_trip(mode, data, tmp_path):
    X_fit, X_rest, y_fit, y_rest = _multilabel(data) if mode == "recall" else data
    params = {
        "randomized": {"randomized": True, "random_state": 3},
        "randomized-mondrian": {"randomized": True, "class_conditional": True},
        "recall": {"risk": "recall", "confidence_level": [0.9, 0.8]},
        "cv": {"cv": 3, "random_state": 0, "randomized": True},
    }[mode]
    clf = SparseConformalClassifier(SparsemaxClassifier(max_epochs=20), **params)
    clf.fit(X_fit, y_fit)
    if mode != "cv":
        clf.conformalize(X_rest, y_rest)
    save(clf, tmp_path / "m.safetensors")
    restored = load(tmp_path / "m.safetensors")
    _assert_same(restored, clf, X_rest)
    assert restored.get_params(deep=False).keys() == clf.get_params(deep=False).keys()
    for key, value in params.items():
        assert restored.get_params()[key] == value
    for key in ("randomization_seed_", "conformity_rows_", "conformity_classes_"):
        assert hasattr(restored, key) == hasattr(clf, key)
        if hasattr(clf, key):
            np.testing.assert_array_equal(getattr(restored, key), getattr(clf, key))


def test_a_wrapper_around_a_pipeline_saves_without_pickle(data, tmp_path):
    """Issue 60.2: the conformal guide's own example, a wrapper around a Pipeline, saves
    (the Pipeline as a version 2 file, the wrapper's entry beside it) and loads with its
    calibration checked; so does one around a Pipeline of scikit-learn's estimators."""
    X_fit, X_rest, y_fit, y_rest = data
    for model in (
        make_pipeline(StandardScaler(), SparsemaxClassifier(max_epochs=20)),
        make_pipeline(StandardScaler(), LogisticRegression()),
    ):
        for prefit in (False, True) if model[-1].__module__.startswith("sk_entmax") else (False,):
            if prefit:
                clf = SparseConformalClassifier(clone(model).fit(X_fit, y_fit), prefit=True)
            else:
                clf = SparseConformalClassifier(model, class_conditional=True).fit(X_fit, y_fit)
            clf.conformalize(X_rest, y_rest)
            save(clf, tmp_path / "p.safetensors")
            header, _ = read_saved(tmp_path / "p.safetensors")
            assert "pipeline" in header and "conformal" in header
            restored = load(tmp_path / "p.safetensors")
            _assert_same(restored, clf, X_rest)
            assert type(restored.estimator_) is Pipeline
            if prefit:
                assert restored.estimator is restored.estimator_
            else:  # an unfitted clone of the fitted pipeline
                assert type(restored.estimator) is Pipeline
                assert not hasattr(restored.estimator[-1], "classes_")


@pytest.fixture(scope="module")
def saved_modes(data, tmp_path_factory):
    """Three saved files: a randomized wrapper around a Pipeline, a recall one and a cv one."""
    X_fit, X_rest, y_fit, y_rest = data
    folder = tmp_path_factory.mktemp("modes")
    files = {}
    pipe = make_pipeline(StandardScaler(), SparsemaxClassifier(max_epochs=20))
    clf = SparseConformalClassifier(pipe, randomized=True, random_state=0).fit(X_fit, y_fit)
    files["pipeline"] = clf.conformalize(X_rest, y_rest)
    Xm, Xr, Ym, Yr = _multilabel(data)
    files["recall"] = SparseConformalClassifier(SparsemaxClassifier(max_epochs=20), risk="recall")
    files["recall"].fit(Xm, Ym).conformalize(Xr, Yr)
    out = {}
    for name, model in files.items():
        save(model, folder / f"{name}.safetensors")
        out[name] = read_saved(folder / f"{name}.safetensors")
    return out


def _bump_rows(entry):
    rows = _values(entry, "conformity_rows_")
    rows[1] = rows[0]
    _values(entry, "conformity_classes_")[1] = _values(entry, "conformity_classes_")[0]


@pytest.mark.parametrize(
    ("which", "change", "match"),
    [
        ("pipeline", _bump_quantile, "quantiles_"),
        ("pipeline", lambda e: e["fitted"].pop("randomization_seed_"), "randomization_seed_"),
        ("pipeline", lambda e: e["fitted"].update(randomization_seed_=-1), "randomization_seed_"),
        ("pipeline", lambda e: e["params"].update(randomized=False), "randomization_seed_"),
        ("pipeline", lambda e: e["params"].update(cv=1), "cv"),
        ("pipeline", lambda e: e.update(estimator="default"), "estimator=None wraps"),
        ("pipeline", lambda e: e["fitted"]["classes_"]["values"].reverse(), "classes_"),
        ("recall", _bump_quantile, "quantiles_"),
        ("recall", _bump_rows, "conformity_rows_"),
        ("recall", lambda e: e["params"].update(risk=None), "conformity_rows_"),
        ("recall", lambda e: e["params"].update(risk="precision"), "risk"),
        ("recall", lambda e: e["fitted"].update(n_conformalize_samples_=2**60), "n_conformal"),
        ("recall", lambda e: _values(e, "conformity_rows_").__setitem__(0, 10**6), "rows_"),
    ],
)
def test_load_refuses_an_altered_mode(saved_modes, tmp_path, which, change, match):
    header, tensors = saved_modes[which]
    header = json.loads(json.dumps(header))
    change(header["conformal"])
    path = write_saved(tmp_path / "edited.safetensors", header, tensors)
    with pytest.raises(ValueError, match=f"cannot load .*{match}"):
        load(path)


def test_a_pipeline_file_with_a_malformed_wrapper_entry_is_refused(saved_modes, tmp_path):
    header, tensors = saved_modes["pipeline"]
    for entry, match in ((5, "not an object"), ({"params": {}}, "conformal entry")):
        path = write_saved(tmp_path / "e.safetensors", dict(header, conformal=entry), tensors)
        with pytest.raises(ValueError, match=f"cannot load .*{match}"):
            load(path)
    unaltered = write_saved(tmp_path / "u.safetensors", header, tensors)
    assert (
        load(unaltered).randomization_seed_ == header["conformal"]["fitted"]["randomization_seed_"]
    )
