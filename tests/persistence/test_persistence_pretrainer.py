"""Saving a TabNetPretrainer, and a supervised TabNet that holds one (issue 48).

A pretrainer round-trips bit for bit: its embeddings, its reconstructions, its weights and
fitted attributes, and a supervised fit started from the loaded pretrainer is the fit started
from the saved one. A supervised TabNet keeps its ``pretrainer`` parameter (frozen, fitted
or unfitted) as a nested entry of its file, checked on load as a file of its own; a forged
nested entry is refused.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from saved_files import read_saved, write_saved
from sklearn.frozen import FrozenEstimator

from sk_entmax import (
    EntmaxClassifier,
    TabNetEntmaxClassifier,
    TabNetEntmaxRegressor,
    TabNetPretrainer,
)
from sk_entmax.persistence import load, save

TINY = {"n_d": 4, "n_a": 4, "n_steps": 2, "n_independent": 1, "n_shared": 1, "lr": 0.05}


def _table(n: int = 80) -> tuple[pd.DataFrame, np.ndarray]:
    """A numeric column, one with gaps (a missing indicator) and a categorical one."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n)
    b = rng.standard_normal(n)
    b[rng.random(n) < 0.2] = np.nan
    colour = pd.Series(rng.choice(["red", "green", "blue"], n), dtype="category")
    return pd.DataFrame({"a": a, "b": b, "colour": colour}), (a > 0).astype(int)


@pytest.fixture(scope="module")
def pretrainer():
    X, _ = _table()
    return TabNetPretrainer(**TINY, max_epochs=2, random_state=0).fit(X)


def _reconstruction(pre: TabNetPretrainer, X: pd.DataFrame) -> np.ndarray:
    """The network's reconstruction of the rows of ``X``, in evaluation mode (the same
    hidden features at every call)."""
    width = pre.net_.module_.reconstruction.out_features
    return pre._blockwise(X, lambda module, rows: module(rows)[0], width)


def test_a_pretrainer_round_trips_bit_for_bit(pretrainer, tmp_path):
    X, _ = _table()
    save(pretrainer, tmp_path / "pre.safetensors")
    back = load(tmp_path / "pre.safetensors")
    assert type(back) is TabNetPretrainer
    assert back.get_params() == pretrainer.get_params()
    np.testing.assert_array_equal(back.transform(X), pretrainer.transform(X))
    np.testing.assert_array_equal(_reconstruction(back, X), _reconstruction(pretrainer, X))
    saved, loaded = pretrainer.net_.module_.state_dict(), back.net_.module_.state_dict()
    assert saved.keys() == loaded.keys()
    assert all(torch.equal(saved[k], loaded[k]) for k in saved)
    for name in ("categories_", "missing_features_", "mask_alpha_", "feature_importances_"):
        np.testing.assert_array_equal(
            np.asarray(getattr(back, name), dtype=object),
            np.asarray(getattr(pretrainer, name), dtype=object),
        )
    assert back._missing_fill == pretrainer._missing_fill
    assert back._reconstruction_scale == pretrainer._reconstruction_scale


def test_a_fit_from_the_loaded_pretrainer_is_the_fit_from_the_saved_one(pretrainer, tmp_path):
    X, y = _table()
    save(pretrainer, tmp_path / "pre.safetensors")
    back = load(tmp_path / "pre.safetensors")
    params = {**TINY, "max_epochs": 2, "random_state": 0}
    want = TabNetEntmaxClassifier(**params, pretrainer=FrozenEstimator(pretrainer)).fit(X, y)
    got = TabNetEntmaxClassifier(**params, pretrainer=FrozenEstimator(back)).fit(X, y)
    np.testing.assert_array_equal(got.predict_proba(X), want.predict_proba(X))


def test_a_classifier_fitted_from_a_frozen_pretrainer_round_trips(pretrainer, tmp_path):
    X, y = _table()
    clf = TabNetEntmaxClassifier(
        **TINY, max_epochs=2, random_state=0, pretrainer=FrozenEstimator(pretrainer)
    ).fit(X, y)
    save(clf, tmp_path / "clf.safetensors")
    back = load(tmp_path / "clf.safetensors")
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(back.explain(X)[0], clf.explain(X)[0])
    assert isinstance(back.pretrainer, FrozenEstimator)
    np.testing.assert_array_equal(back.pretrainer.transform(X), pretrainer.transform(X))
    # the nested pretrainer's tensors are stored under its prefix, the classifier's not
    header, tensors = read_saved(tmp_path / "clf.safetensors")
    assert header["params"]["pretrainer"] is None
    assert header["estimators"]["pretrainer"]["frozen"] is True
    nested = [k for k in tensors if k.startswith("estimators.pretrainer.")]
    assert nested and len(nested) < len(tensors)
    # a refit of the loaded classifier starts from the loaded pretrainer, as the saved one
    np.testing.assert_array_equal(back.fit(X, y).predict_proba(X), clf.fit(X, y).predict_proba(X))


def test_an_unfitted_pretrainer_parameter_round_trips_unfitted(tmp_path):
    X, y = _table()
    spec = TabNetPretrainer(**TINY, max_epochs=1, pretraining_ratio=0.4)
    reg = TabNetEntmaxRegressor(**TINY, max_epochs=2, random_state=0, pretrainer=spec)
    reg.fit(X, y.astype(float))
    save(reg, tmp_path / "reg.safetensors")
    back = load(tmp_path / "reg.safetensors")
    np.testing.assert_array_equal(back.predict(X), reg.predict(X))
    assert type(back.pretrainer) is TabNetPretrainer
    assert back.pretrainer.get_params() == spec.get_params()
    assert not hasattr(back.pretrainer, "net_")


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda h, t: h["estimators"].update(alpha=h["estimators"]["pretrainer"]), "alpha"),
        (lambda h, t: h["params"].update(pretrainer=1), "pretrainer. parameter"),
        (lambda h, t: h["estimators"]["pretrainer"].update(frozen="yes"), "flag"),
        (lambda h, t: h["estimators"]["pretrainer"]["model"].update(estimator="os"), "unknown"),
        (
            lambda h, t: h["estimators"]["pretrainer"]["model"].update(
                conformal=h["estimators"]["pretrainer"]["model"]["fitted"]
            ),
            "wrapper",
        ),
        (lambda h, t: t.update({"estimators.other.w": torch.zeros(2)}), "no nested"),
        (
            lambda h, t: t.update(
                {"estimators.pretrainer.x": torch.zeros(2)},
            ),
            "tensor",
        ),
    ],
    ids=["parameter", "twice", "flag", "class", "wrapper", "stray", "extra-tensor"],
)
def test_a_forged_nested_entry_is_refused(pretrainer, tmp_path, edit, match):
    X, y = _table()
    clf = TabNetEntmaxClassifier(
        **TINY, max_epochs=1, random_state=0, pretrainer=FrozenEstimator(pretrainer)
    ).fit(X, y)
    path = tmp_path / "clf.safetensors"
    save(clf, path)
    header, tensors = read_saved(path)
    edit(header, tensors)
    with pytest.raises(ValueError, match=rf"cannot load .*{match}"):
        load(write_saved(path, header, tensors))


def test_a_nested_estimator_of_the_wrong_class_is_refused(tmp_path):
    """The nested estimator must be one the parameter takes: a classifier's file cannot
    hold an EntmaxClassifier as its pretrainer."""
    X, y = _table()
    spec = TabNetPretrainer(**TINY, max_epochs=1)
    clf = TabNetEntmaxClassifier(**TINY, max_epochs=1, random_state=0, pretrainer=spec)
    path = tmp_path / "clf.safetensors"
    save(clf.fit(X, y), path)
    header, tensors = read_saved(path)
    params = {**EntmaxClassifier().get_params(), "hidden_layer_sizes": {"__tuple__": []}}
    header["estimators"]["pretrainer"]["model"] = {
        "estimator": "EntmaxClassifier",
        "params": params,
    }
    with pytest.raises(ValueError, match=r"cannot load .*pretrainer"):
        load(write_saved(path, header, tensors))
