"""pickle, joblib and the safe path (sk_entmax.persistence: safetensors + JSON, no pickle).

Every estimator, with string labels, learned alphas, multi-label targets and TabNet's
categorical columns; tiny fits, shared by the tests (module scope).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import joblib
import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import load_iris, make_multilabel_classification
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier
from sk_entmax.persistence import FORMAT_VERSION, load, save

safetensors = pytest.importorskip("safetensors")

X_IRIS, Y_IRIS = load_iris(return_X_y=True)
X_IRIS = StandardScaler().fit_transform(X_IRIS)
NAMES = np.array(["setosa", "versicolor", "virginica"])[Y_IRIS]
X_ML, Y_ML = make_multilabel_classification(
    n_samples=60, n_features=5, n_classes=4, allow_unlabeled=False, random_state=0
)


def _frame():
    frame = pd.DataFrame(X_IRIS, columns=["a", "b", "c", "d"])
    frame["color"] = pd.Series(np.array(["red", "green", None])[np.arange(150) % 3], dtype=object)
    frame["size"] = pd.Categorical(np.array(["S", "M", "L"])[np.arange(150) % 3])
    return frame


FRAME = _frame()
TABNET = {"n_d": 4, "n_a": 4, "n_steps": 2, "max_epochs": 3, "random_state": 0}

CASES = {
    "entmax-strings-hidden-learned": (
        lambda: EntmaxClassifier(
            alpha=1.3,
            learn_alpha=True,
            hidden_layer_sizes=(6,),
            class_weight={"setosa": 1.0, "versicolor": 2.0, "virginica": 1.0},
            lr=0.05,
            max_epochs=8,
            random_state=0,
        ),
        X_IRIS,
        NAMES,
    ),
    "sparsemax-early-stopping": (
        lambda: SparsemaxClassifier(
            lr=0.05, max_epochs=8, early_stopping=True, validation_fraction=0.2, random_state=0
        ),
        X_IRIS,
        Y_IRIS,
    ),
    "sparsemax-multilabel": (
        lambda: SparsemaxClassifier(lr=0.05, max_epochs=8, random_state=0),
        X_ML,
        Y_ML.astype(np.uint8),
    ),
    "tabnet-categorical-adaptive": (
        lambda: TabNetEntmaxClassifier(entmax_mode="adaptive", **TABNET),
        FRAME,
        NAMES,
    ),
    "tabnet-numeric-entmax15": (
        lambda: TabNetEntmaxClassifier(entmax_mode="entmax15", alpha=2.0, **TABNET),
        X_IRIS,
        Y_IRIS,
    ),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    make, X, y = CASES[request.param]
    return make().fit(X, y), X, y


def _assert_same_model(restored, original, X):
    assert type(restored) is type(original)
    np.testing.assert_array_equal(restored.predict_proba(X), original.predict_proba(X))
    pred = restored.predict(X)
    np.testing.assert_array_equal(pred, original.predict(X))
    assert pred.dtype == original.predict(X).dtype
    assert restored.get_params() == original.get_params()
    np.testing.assert_array_equal(restored.classes_, original.classes_)
    assert restored.classes_.dtype == original.classes_.dtype
    for attr in ("n_features_in_", "n_iter_", "alpha_", "multilabel_"):
        assert getattr(restored, attr) == getattr(original, attr), attr
    if isinstance(original, TabNetEntmaxClassifier):
        np.testing.assert_array_equal(restored.mask_alpha_, original.mask_alpha_)
        np.testing.assert_array_equal(restored.feature_importances_, original.feature_importances_)
        M_a, masks_a = restored.explain(X)
        M_b, masks_b = original.explain(X)
        np.testing.assert_array_equal(M_a, M_b)
        for step in masks_b:
            np.testing.assert_array_equal(masks_a[step], masks_b[step])


def test_pickle_round_trip(case):
    clf, X, _ = case
    _assert_same_model(pickle.loads(pickle.dumps(clf)), clf, X)


def test_joblib_round_trip(case, tmp_path):
    clf, X, _ = case
    joblib.dump(clf, tmp_path / "model.joblib", compress=3)
    _assert_same_model(joblib.load(tmp_path / "model.joblib"), clf, X)


def test_safe_round_trip(case, tmp_path):
    clf, X, y = case
    path = tmp_path / "model.safetensors"
    save(clf, path)
    restored = load(path)
    _assert_same_model(restored, clf, X)
    assert restored.score(X, y) == clf.score(X, y)
    assert len(restored.net_.history) == len(clf.net_.history)


def test_a_loaded_model_refits_like_the_original(tmp_path):
    clf = CASES["entmax-strings-hidden-learned"][0]().fit(X_IRIS, NAMES)
    save(clf, tmp_path / "model.safetensors")
    restored = load(tmp_path / "model.safetensors").fit(X_IRIS, NAMES)
    np.testing.assert_array_equal(restored.predict_proba(X_IRIS), clf.predict_proba(X_IRIS))


def test_safe_file_is_plain_tensors_and_json(tmp_path):
    clf = CASES["tabnet-categorical-adaptive"][0]().fit(FRAME, NAMES)
    path = tmp_path / "model.safetensors"
    save(clf, path)
    with safetensors.safe_open(str(path), framework="pt") as handle:
        header = json.loads(handle.metadata()["sk_entmax"])
        keys = list(handle.keys())
        assert all(handle.get_tensor(k).device.type == "cpu" for k in keys)
    assert header["format_version"] == FORMAT_VERSION
    assert header["estimator"] == "TabNetEntmaxClassifier"
    # TabNet's shared GLU layers are stored once, under aliases
    assert header["net"]["aliases"]
    assert not set(header["net"]["aliases"]) & set(keys)
    assert b"pickle" not in path.read_bytes()[:8]


def test_load_never_unpickles(tmp_path, monkeypatch):
    clf = CASES["entmax-strings-hidden-learned"][0]().fit(X_IRIS, NAMES)
    path = tmp_path / "model.safetensors"
    save(clf, path)

    def refuse(*args, **kwargs):
        raise AssertionError("load used pickle")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(torch, "load", refuse)
    _assert_same_model(load(path), clf, X_IRIS)


def test_model_with_a_cuda_device_parameter_loads_on_cpu(tmp_path):
    """The file keeps no device: ``load(path, device)`` decides where the weights go."""
    clf = CASES["sparsemax-early-stopping"][0]().fit(X_IRIS, Y_IRIS)
    clf.set_params(device="cuda")  # as if trained on a GPU; the parameter is only read at fit
    path = tmp_path / "model.safetensors"
    save(clf, path)
    restored = load(path, device="cpu")
    assert restored.net_.device == "cpu"
    assert next(restored.net_.module_.parameters()).device.type == "cpu"
    assert restored.device == "cuda"  # parameters are restored as saved
    np.testing.assert_array_equal(restored.predict_proba(X_IRIS), clf.predict_proba(X_IRIS))
    auto = load(path, device="auto")
    np.testing.assert_allclose(auto.predict_proba(X_IRIS), clf.predict_proba(X_IRIS), atol=1e-6)
    with pytest.raises(ValueError, match="device"):
        load(path, device="gpu")


_CPU_LOAD = """
import sys
import numpy as np
import torch
assert not torch.cuda.is_available()
from sk_entmax.persistence import load
clf = load(sys.argv[1])
np.save(sys.argv[3], clf.predict_proba(np.load(sys.argv[2])))
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", ["sparsemax-early-stopping", "tabnet-categorical-adaptive"])
def test_saved_on_gpu_loads_on_a_cpu_only_machine(tmp_path, name):
    make, X, y = CASES[name]
    clf = make().set_params(device="cuda").fit(X, y)
    on_gpu = clf.predict_proba(X)
    path, data, result = tmp_path / "m.safetensors", tmp_path / "X.npy", tmp_path / "p.npy"
    save(clf, path)
    np.testing.assert_allclose(load(path, device="cuda").predict_proba(X), on_gpu, atol=1e-6)
    if isinstance(X, pd.DataFrame):
        pytest.skip("the subprocess check takes arrays")
    np.save(data, X)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    subprocess.run(
        [sys.executable, "-c", _CPU_LOAD, str(path), str(data), str(result)],
        check=True,
        env=env,
        timeout=120,
    )
    np.testing.assert_allclose(np.load(result), on_gpu, atol=1e-5)


# --------------------------------------------------------------------------- refusals


def test_save_refuses_unfitted_and_foreign_objects(tmp_path):
    path = tmp_path / "model.safetensors"
    with pytest.raises(NotFittedError):
        save(EntmaxClassifier(), path)
    pipe = make_pipeline(StandardScaler(), EntmaxClassifier(max_epochs=2)).fit(X_IRIS, Y_IRIS)
    with pytest.raises(TypeError, match="pickle or joblib"):
        save(pipe, path)

    class Custom(EntmaxClassifier):
        pass

    with pytest.raises(TypeError, match="Custom"):
        save(Custom(max_epochs=2).fit(X_IRIS, Y_IRIS), path)
    assert not path.exists()


def test_save_refuses_a_random_state_instance_naming_it(tmp_path):
    clf = EntmaxClassifier(max_epochs=2, random_state=np.random.RandomState(0))
    clf.fit(X_IRIS, Y_IRIS)
    with pytest.raises(TypeError, match="parameter random_state: an object of type RandomState"):
        save(clf, tmp_path / "model.safetensors")
    clf.set_params(random_state=0)
    save(clf, tmp_path / "model.safetensors")


def test_save_refuses_categories_it_cannot_store(tmp_path):
    from decimal import Decimal

    codes = [Decimal(i % 3) for i in range(150)]
    frame = pd.DataFrame({"x": X_IRIS[:, 0], "code": pd.Series(codes, dtype=object)})
    clf = TabNetEntmaxClassifier(**TABNET).fit(frame, Y_IRIS)
    with pytest.raises(TypeError, match=r"categories_\[0\]\[0\]: an object of type Decimal"):
        save(clf, tmp_path / "model.safetensors")


def test_load_refuses_files_it_did_not_write(tmp_path):
    plain = tmp_path / "plain.safetensors"
    safetensors.torch.save_file({"w": torch.zeros(2)}, str(plain))
    with pytest.raises(ValueError, match="not written by"):
        load(plain)
    clf = EntmaxClassifier(max_epochs=2).fit(X_IRIS, Y_IRIS)
    path = tmp_path / "model.safetensors"
    save(clf, path)
    with safetensors.safe_open(str(path), framework="pt") as handle:
        header = json.loads(handle.metadata()["sk_entmax"])
        tensors = {k: handle.get_tensor(k) for k in handle.keys()}
    for change, match in [
        ({"format_version": FORMAT_VERSION + 1}, "format version"),
        ({"estimator": "os.system"}, "unknown estimator"),
    ]:
        bad = tmp_path / "bad.safetensors"
        safetensors.torch.save_file(
            tensors, str(bad), metadata={"sk_entmax": json.dumps({**header, **change})}
        )
        with pytest.raises(ValueError, match=match):
            load(bad)
