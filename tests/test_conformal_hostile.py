"""Conformal files and calls that must not break the calibration (issue 45, points 1, 4-6).

Counts that wrap an int64 sum are refused as "cannot load <path>" before any arithmetic;
``load`` recomputes every stored quantile from the stored scores and rows' classes, in work
linear in the levels; ``predict_proba`` computes the sets of the one level it uses; a
failed ``fit`` or ``conformalize`` keeps the previous calibration. Work is bounded by
counting calls and elements, never by a clock.
"""

from __future__ import annotations

import numpy as np
import pytest
from saved_files import read_saved, write_saved
from sklearn.datasets import make_classification, make_multilabel_classification
from sklearn.exceptions import NotFittedError

import sk_entmax._conformal_maths as conformal_maths
from sk_entmax import SparsemaxClassifier
from sk_entmax._conformal_maths import level_temperatures
from sk_entmax.conformal import SparseConformalClassifier
from sk_entmax.persistence import load, save


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        240, 6, n_informative=4, n_classes=3, n_clusters_per_class=1, random_state=0
    )
    return X[:80], y[:80], X[80:], y[80:]


@pytest.fixture(scope="module")
def model(data):
    X_fit, y_fit, _, _ = data
    return SparsemaxClassifier(max_epochs=5, random_state=0).fit(X_fit, y_fit)


def _wrapper(model, data, **kwargs):
    _, _, X_cal, y_cal = data
    return SparseConformalClassifier(model, prefit=True, **kwargs).conformalize(X_cal, y_cal)


def _saved(wrapper, tmp_path):
    path = tmp_path / "conformal.safetensors"
    save(wrapper, path)
    return path


# ---------------------------------------------------------------------- point 1


def test_per_class_counts_whose_int64_sum_wraps_are_refused_before_any_arithmetic(
    model, data, tmp_path
):
    path = _saved(_wrapper(model, data, class_conditional=True), tmp_path)
    header, tensors = read_saved(path)
    counts = header["conformal"]["fitted"]["n_conformalize_samples_"]
    n = sum(counts["values"])
    # each count >= 0, and their int64 sum wraps around to exactly the number of scores
    counts["values"] = [2**63 - 1, 2**63 - 1, n + 2]
    assert int(np.array(counts["values"], dtype=np.int64).sum()) == n
    with pytest.raises(ValueError, match=r"cannot load .*n_conformalize_samples_"):
        load(write_saved(path, header, tensors))


def test_a_count_above_the_stored_rows_is_refused(model, data, tmp_path):
    path = _saved(_wrapper(model, data, class_conditional=True), tmp_path)
    header, tensors = read_saved(path)
    counts = header["conformal"]["fitted"]["n_conformalize_samples_"]["values"]
    counts[0], counts[1] = counts[0] + counts[1] + 5, -5  # same sum, one negative
    with pytest.raises(ValueError, match=r"cannot load .*n_conformalize_samples_"):
        load(write_saved(path, header, tensors))


# ---------------------------------------------------------------------- point 5


@pytest.mark.parametrize("class_conditional", [False, True])
def test_a_self_consistent_edited_quantile_is_refused(model, data, tmp_path, class_conditional):
    """A quantile moved to another stored score, the temperatures edited to match: what the
    rows' classes let load recompute."""
    wrapper = _wrapper(model, data, class_conditional=class_conditional)
    path = _saved(wrapper, tmp_path)
    header, tensors = read_saved(path)
    fitted = header["conformal"]["fitted"]
    scores = np.sort(wrapper.conformity_scores_)
    quantiles = wrapper.quantiles_.copy()
    quantiles[0, :] = scores[len(scores) // 2]  # a lower quantile: less coverage
    fitted["quantiles_"]["values"] = quantiles.ravel().tolist()
    temperatures = level_temperatures(quantiles, wrapper.mapping_alpha_)
    fitted["temperatures_"]["values"] = temperatures.tolist()
    fitted["temperature_"] = float(temperatures[0])
    with pytest.raises(ValueError, match=r"cannot load .*quantiles_.*\[0, 0\]"):
        load(write_saved(path, header, tensors))


def test_rows_classes_that_contradict_the_counts_are_refused(model, data, tmp_path):
    path = _saved(_wrapper(model, data, class_conditional=True), tmp_path)
    header, tensors = read_saved(path)
    codes = header["conformal"]["fitted"]["conformity_classes_"]["values"]
    codes[codes.index(0)] = 1
    with pytest.raises(ValueError, match=r"cannot load .*rows per class"):
        load(write_saved(path, header, tensors))


def test_a_class_conditional_file_without_the_rows_classes_loads_uncalibrated(
    model, data, tmp_path
):
    """A file saved before the rows' classes were stored (or stripped of them, its
    quantiles edited): its per-class quantiles cannot be recomputed, so the model loads and
    the calibration is dropped, with a warning saying why and what to do."""
    wrapper = _wrapper(model, data, class_conditional=True)
    path = _saved(wrapper, tmp_path)
    header, tensors = read_saved(path)
    fitted = header["conformal"]["fitted"]
    del fitted["conformity_classes_"]
    quantiles = wrapper.quantiles_.copy()
    quantiles[0, :] = np.sort(wrapper.conformity_scores_)[5]  # still stored scores
    fitted["quantiles_"]["values"] = quantiles.ravel().tolist()
    temperatures = level_temperatures(quantiles, wrapper.mapping_alpha_)
    fitted["temperatures_"]["values"] = temperatures.tolist()
    fitted["temperature_"] = float(temperatures[0])
    with pytest.warns(UserWarning, match="cannot recompute.*not conformalized.*conformalize"):
        restored = load(write_saved(path, header, tensors))
    assert not hasattr(restored, "quantiles_")
    with pytest.raises(NotFittedError, match="not conformalized"):
        restored.predict_set(data[2])
    np.testing.assert_array_equal(restored.predict(data[2]), wrapper.predict(data[2]))
    # with the held-out rows, the same calibration as before
    _, _, X_cal, y_cal = data
    np.testing.assert_array_equal(
        restored.conformalize(X_cal, y_cal).quantiles_, wrapper.quantiles_
    )


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_multilabel_calibration_round_trips(tmp_path):
    X, Y = make_multilabel_classification(120, 5, n_classes=3, random_state=0)
    inner = SparsemaxClassifier(max_epochs=3, random_state=0).fit(X[:60], Y[:60])
    wrapper = SparseConformalClassifier(inner, prefit=True).conformalize(X[60:], Y[60:])
    assert (wrapper.conformity_classes_ == -1).all()
    restored = load(_saved(wrapper, tmp_path))
    np.testing.assert_array_equal(restored.predict_set(X), wrapper.predict_set(X))


# ---------------------------------------------------------------------- point 4


def test_load_work_is_linear_in_the_levels(model, data, tmp_path, monkeypatch):
    """Many levels: load sorts the stored scores once, not once per level (counted as
    elements passed to numpy's sorts and selections)."""
    levels = np.linspace(0.5, 0.95, 400).tolist()
    wrapper = _wrapper(model, data, confidence_level=levels)
    path = _saved(wrapper, tmp_path)
    n = wrapper.conformity_scores_.size
    seen = []
    for name in ("sort", "partition", "argsort", "lexsort", "argpartition"):
        original = getattr(np, name)

        def counted(a, *args, _original=original, **kwargs):
            seen.append(np.size(a))
            return _original(a, *args, **kwargs)

        monkeypatch.setattr(np, name, counted)
    restored = load(path)
    monkeypatch.undo()
    assert sum(seen) <= 4 * n + 1000, sum(seen)  # per level it would be 400 * n
    np.testing.assert_array_equal(restored.quantiles_, wrapper.quantiles_)


def test_predict_proba_computes_the_sets_of_one_level(model, data, monkeypatch):
    wrapper = _wrapper(model, data, confidence_level=[0.8, 0.85, 0.9, 0.95])
    X = data[2][:10]
    want = wrapper.predict_proba(X)
    calls = []
    original = conformal_maths._top_sets
    monkeypatch.setattr(conformal_maths, "_top_sets", lambda *a: calls.append(1) or original(*a))
    np.testing.assert_array_equal(wrapper.predict_proba(X), want)
    assert len(calls) == 1  # the first level's, not one per level


# ---------------------------------------------------------------------- point 6


def _calibration(wrapper):
    return {k: getattr(wrapper, k) for k in ("estimator_", "quantiles_", "conformity_scores_")}


@pytest.mark.parametrize(
    "bad",
    ["unknown label", "nan", "length"],
)
def test_a_failed_conformalize_keeps_the_previous_calibration(model, data, bad):
    _, _, X_cal, y_cal = data
    wrapper = _wrapper(model, data)
    before = _calibration(wrapper)
    X, y = X_cal.copy(), y_cal.copy()
    if bad == "unknown label":
        y[0] = 7
    elif bad == "nan":
        X[0, 0] = np.nan
    else:
        y = y[:-1]
    with pytest.raises(ValueError):
        wrapper.conformalize(X, y)
    after = _calibration(wrapper)
    assert after.keys() == before.keys()
    for key, value in before.items():
        assert after[key] is value, key
    np.testing.assert_array_equal(wrapper.predict_set(X_cal), wrapper.predict_set(X_cal))


def test_a_failed_fit_keeps_the_previous_model_and_calibration(data):
    X_fit, y_fit, X_cal, y_cal = data
    wrapper = SparseConformalClassifier(SparsemaxClassifier(max_epochs=2, random_state=0))
    wrapper.fit(X_fit, y_fit).conformalize(X_cal, y_cal)
    before = _calibration(wrapper)
    with pytest.raises(ValueError):
        wrapper.fit(X_fit, np.linspace(0, 1, len(y_fit)))  # a continuous target
    X_nan = X_fit.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError):
        wrapper.fit(X_nan, y_fit)
    after = _calibration(wrapper)
    for key, value in before.items():
        assert after[key] is value, key
