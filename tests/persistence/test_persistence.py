"""pickle, joblib and the safe path (sk_entmax.persistence: safetensors + JSON, no pickle).

Every estimator, with string labels, learned alphas, multi-label targets and TabNet's
categorical columns; tiny fits, shared by the tests (module scope).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import stat
import subprocess
import sys

import joblib
import numpy as np
import pandas as pd
import pytest
import torch
from saved_files import read_saved, write_saved
from sklearn.datasets import load_iris, make_multilabel_classification
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier
from sk_entmax.persistence import FORMAT_VERSION, load, save
from sk_entmax.persistence._reader import OneRead

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


def _frame_with_gaps():
    """FRAME with missing numbers (NaN and pd.NA): TabNet learns a missing indicator."""
    frame = FRAME.copy()
    frame.loc[::7, "a"] = np.nan
    frame["count"] = pd.array(np.arange(150) % 5, dtype="Int64")
    frame.loc[::11, "count"] = pd.NA
    return frame


FRAME_GAPS = _frame_with_gaps()
TABNET = {"n_d": 4, "n_a": 4, "n_steps": 2, "max_epochs": 3, "random_state": 0}
# early stopping needs the mini-batch solver where the linear estimators have a choice
ADAM = {"solver": "adam"} if "solver" in SparsemaxClassifier().get_params() else {}

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
            lr=0.05,
            max_epochs=8,
            early_stopping=True,
            validation_fraction=0.2,
            random_state=0,
            **ADAM,
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
    "tabnet-missing-numbers": (
        lambda: TabNetEntmaxClassifier(**TABNET),
        FRAME_GAPS,
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
    assert header["format_version"] == 1  # one estimator: still format version 1
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
        timeout=900,
    )
    np.testing.assert_allclose(np.load(result), on_gpu, atol=1e-5)


# --------------------------------------------------------------------------- refusals


def test_save_refuses_unfitted_and_foreign_objects(tmp_path):
    path = tmp_path / "model.safetensors"
    with pytest.raises(NotFittedError):
        save(EntmaxClassifier(), path)
    # a Pipeline saves now (tests/test_persistence_pipeline.py); an object of another
    # package's class does not
    with pytest.raises(TypeError, match="pickle or joblib"):
        save(StandardScaler().fit(X_IRIS), path)

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
    header, tensors = read_saved(path)
    for change, match in [
        ({"format_version": FORMAT_VERSION + 1}, "format version"),
        ({"estimator": "os.system"}, "unknown estimator"),
    ]:
        bad = tmp_path / "bad.safetensors"
        with pytest.raises(ValueError, match=match):
            load(write_saved(bad, {**header, **change}, tensors))


# --------------------------------------------------------------------------- hostile files
#
# Each test edits a real file the way an attacker (or a careless hand) would and checks that
# load refuses it with a ValueError naming the reason, before it builds or allocates anything.


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A tiny saved model of each kind: its path, header and tensors, to be edited."""
    folder = tmp_path_factory.mktemp("hostile")
    out = {}
    for name, (make, X, y) in [
        (
            "linear",
            (lambda: EntmaxClassifier(hidden_layer_sizes=(3,), max_epochs=2), X_IRIS, NAMES),
        ),
        ("multilabel", CASES["sparsemax-multilabel"]),
        ("tabnet", CASES["tabnet-categorical-adaptive"]),
        ("learned", CASES["entmax-strings-hidden-learned"]),
    ]:
        clf = make().set_params(max_epochs=2).fit(X, y)
        path = folder / f"{name}.safetensors"
        save(clf, path)
        header, tensors = read_saved(path)
        out[name] = (clf, X, header, tensors)
    return out


def _write_edited(tmp_path, header, tensors, name="edited.safetensors"):
    return write_saved(tmp_path / name, header, tensors)


def _edit(saved, kind, change=None, tensors=None):
    """A deep copy of a saved header, changed by ``change(header)``, and its tensors."""
    _, _, header, original = saved[kind]
    header = json.loads(json.dumps(header))
    if change is not None:
        change(header)
    return header, dict(original if tensors is None else tensors)


@pytest.fixture
def nothing_built(monkeypatch):
    """Fail loudly if load gets as far as building the network."""
    from skorch import NeuralNet

    def refuse(self, *args, **kwargs):
        raise AssertionError("load built the network from a header it had not checked")

    monkeypatch.setattr(NeuralNet, "initialize", refuse)


def _set(path, value):
    def change(header):
        node = header
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


def _fitted(header, name):
    return header["fitted"][name]


# 1. sizes: checked against the tensors' shapes before anything is built


def _set_network_argument(header, key, value):
    pairs = header["net"]["module_kwargs"]["__dict__"]
    [index] = [i for i, (name, _) in enumerate(pairs) if name == key]
    pairs[index][1] = value


@pytest.mark.parametrize(
    ("kind", "key", "value"),
    [
        ("linear", "n_features", 100_000),
        ("linear", "hidden_layer_sizes", {"__tuple__": [100_000]}),
        ("tabnet", "cat_dims", [10**9, 4]),
        ("tabnet", "n_steps", 10**7),
        ("tabnet", "n_d", 5),  # within every bound, and still not the stored network
    ],
    ids=["n_features", "hidden", "cat_dims", "n_steps", "n_d-mismatch"],
)
def test_load_refuses_sizes_the_tensors_do_not_have(
    saved, tmp_path, nothing_built, kind, key, value
):
    header, tensors = _edit(saved, kind, lambda h: _set_network_argument(h, key, value))
    with pytest.raises(ValueError, match="network"):
        load(_write_edited(tmp_path, header, tensors))


def test_load_refuses_an_array_dtype_wider_than_its_values(saved, tmp_path):
    # the attack used <U300000000 (1.2 GB); a width far above the values' is enough here
    header, tensors = _edit(saved, "linear")
    _fitted(header, "classes_")["__ndarray__"] = "<U1000000"
    with pytest.raises(ValueError, match="U1000000"):
        load(_write_edited(tmp_path, header, tensors))


# 2. fitted attributes: only the documented ones, each checked


@pytest.mark.parametrize(
    ("kind", "name", "value", "match"),
    [
        ("linear", "__dict__", {"__dict__": []}, "unknown fitted attribute '__dict__'"),
        ("linear", "predict_proba", 1, "unknown fitted attribute 'predict_proba'"),
        ("linear", "n_features_in_", 7, "n_features_in_"),
        ("linear", "n_features_in_", "4", "n_features_in_"),
        ("linear", "multilabel_", 1, "multilabel_"),
        ("linear", "alpha_", {"__float__": "nan"}, "alpha_"),
        (
            "linear",
            "classes_",
            {"__ndarray__": "<U10", "shape": [2], "values": ["a", "b"]},
            "classes_",
        ),
        ("multilabel", "_y_dtype", {"__dtype__": "<U9"}, "_y_dtype"),
        (
            "tabnet",
            "feature_importances_",
            {"__ndarray__": "<f8", "shape": [2], "values": [0.5, 0.5]},
            "feature_importances_",
        ),
        (
            "tabnet",
            "categorical_features_",
            {"__ndarray__": "<i8", "shape": [2], "values": [0, 1]},
            "categorical_features_",
        ),
        (
            "tabnet",
            "restored_features_",
            {"__ndarray__": "<i8", "shape": [1], "values": [99]},
            "restored_features_.*beyond",
        ),
    ],
)
def test_load_accepts_only_the_documented_fitted_attributes(
    saved, tmp_path, kind, name, value, match
):
    header, tensors = _edit(saved, kind, _set(("fitted", name), value))
    with pytest.raises(ValueError, match=match):
        load(_write_edited(tmp_path, header, tensors))


def test_missing_indicators_round_trip_and_are_checked(tmp_path):
    clf = TabNetEntmaxClassifier(**TABNET).fit(FRAME_GAPS, NAMES)
    # by name (issue 27.5): the frame's columns 0 and 6
    np.testing.assert_array_equal(clf.missing_features_, FRAME_GAPS.columns[[0, 6]].to_numpy())
    path = tmp_path / "gaps.safetensors"
    save(clf, path)
    restored = load(path)
    np.testing.assert_array_equal(restored.missing_features_, clf.missing_features_)
    assert restored.net_.module_.tabnet.missing_idxs == [0, 6]
    rows = FRAME_GAPS.iloc[:8].copy()
    rows["b"] = np.nan  # a gap where fit had none: filled with the same training mean
    with pytest.warns(UserWarning, match="numeric column 'b'"):
        expected = clf.predict_proba(rows)
    with pytest.warns(UserWarning, match="numeric column 'b'"):
        np.testing.assert_array_equal(restored.predict_proba(rows), expected)
    header, tensors = read_saved(path)
    edited = json.loads(json.dumps(header))
    edited["fitted"]["missing_features_"]["values"] = FRAME_GAPS.columns[[0, 1]].tolist()
    with pytest.raises(ValueError, match=r"missing_features_.*missing_idxs"):
        load(_write_edited(tmp_path, edited, tensors))
    edited = json.loads(json.dumps(header))
    _set_network_argument(edited, "missing_idxs", [0, 1])
    with pytest.raises(ValueError, match="network"):
        load(_write_edited(tmp_path, edited, tensors))


def test_a_file_from_before_missing_indicators_loads(saved, tmp_path):
    """A TabNet file without missing_idxs, missing_fill and missing_features_ (as written
    before they existed) loads, predicts as saved, and has no missing indicator."""
    clf, X, _, _ = saved["tabnet"]

    def strip(h):
        pairs = h["net"]["module_kwargs"]["__dict__"]
        pairs[:] = [p for p in pairs if p[0] not in ("missing_idxs", "missing_fill")]
        h["fitted"].pop("missing_features_")

    edited, tensors = _edit(saved, "tabnet", strip)
    restored = load(_write_edited(tmp_path, edited, tensors))
    assert not hasattr(restored, "missing_features_")
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))


def test_load_refuses_a_missing_fitted_attribute(saved, tmp_path):
    header, tensors = _edit(saved, "linear", lambda h: h["fitted"].pop("classes_"))
    with pytest.raises(ValueError, match="classes_"):
        load(_write_edited(tmp_path, header, tensors))


def test_multilabel_no_label_output_and_temperature_are_checked_together(saved, tmp_path):
    """A multi-label model has one output more than labels ("no label") and stores its
    support temperature; either without the other is refused."""
    _, _, header, _ = saved["multilabel"]
    assert "support_temperature_" in header["fitted"]
    edited, tensors = _edit(saved, "multilabel", lambda h: h["fitted"].pop("support_temperature_"))
    with pytest.raises(ValueError, match=r"classes_: .* n_outputs"):
        load(_write_edited(tmp_path, edited, tensors))
    edited, tensors = _edit(saved, "linear", _set(("fitted", "support_temperature_"), 0.5))
    with pytest.raises(ValueError, match="support_temperature_"):
        load(_write_edited(tmp_path, edited, tensors))


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (_set(("params", "weight_decay_typo"), 1.0), "weight_decay_typo"),
        (lambda h: h["params"].pop("lr"), "lr"),
        (_set(("params", "lr"), {"__ndarray__": "<f8", "shape": [0], "values": []}), "lr"),
        (_set(("params", "lr"), {"__ordinal_encoder__": {}, "categories_": []}), "lr"),
    ],
    ids=["unknown", "missing", "array", "object"],
)
def test_load_checks_the_parameters_names_and_types(saved, tmp_path, change, match):
    header, tensors = _edit(saved, "linear", change)
    with pytest.raises(ValueError, match=match):
        load(_write_edited(tmp_path, header, tensors))


def test_save_refuses_an_attribute_load_would_not_accept(tmp_path):
    clf = EntmaxClassifier(max_epochs=2).fit(X_IRIS, Y_IRIS)
    clf.notes_ = "mine"
    with pytest.raises(TypeError, match="notes_"):
        save(clf, tmp_path / "model.safetensors")


# 3. malformed headers: a ValueError with the reason, whatever is wrong


def _deep(depth):
    return json.loads("[" * depth + "]" * depth)


@pytest.mark.parametrize(
    "edit",
    [
        lambda h: "{not json",
        lambda h: "[1, 2]",
        lambda h: json.dumps({**h, "net": 5}),
        lambda h: json.dumps({k: v for k, v in h.items() if k != "net"}),
        lambda h: json.dumps({**h, "fitted": []}),
        lambda h: json.dumps({**h, "estimator": ["EntmaxClassifier"]}),
        lambda h: json.dumps({**h, "params": {**h["params"], "lr": _deep(950)}}),
        lambda h: json.dumps({**h, "params": {**h["params"], "lr": {"__float__": 1}}}),
        lambda h: json.dumps({**h, "params": {**h["params"], "lr": {"__evil__": 1}}}),
        lambda h: json.dumps({**h, "net": {**h["net"], "history": [[1]]}}),
        lambda h: json.dumps({**h, "net": {**h["net"], "aliases": {"x": "y"}}}),
        lambda h: json.dumps({**h, "net": {**h["net"], "batch_size": "big"}}),
        lambda h: json.dumps({**h, "net": {**h["net"], "module_kwargs": [1]}}),
        lambda h: json.dumps(h).replace('"fitted"', '"fitted_"'),
        lambda h: "[" * 5000 + "]" * 5000,
    ],
    ids=[
        "not-json",
        "not-an-object",
        "net-not-an-object",
        "no-net",
        "fitted-a-list",
        "estimator-a-list",
        "950-deep",
        "bad-float",
        "unknown-tag",
        "history",
        "aliases",
        "batch-size",
        "module-kwargs",
        "unknown-entry",
        "json-recursion",
    ],
)
def test_load_says_the_file_is_bad_whatever_is_malformed(saved, tmp_path, edit):
    _, _, header, tensors = saved["linear"]
    path = _write_edited(tmp_path, edit(json.loads(json.dumps(header))), dict(tensors))
    with pytest.raises(ValueError, match="cannot load"):
        load(path)


def test_load_says_a_file_that_is_not_safetensors_is_bad(tmp_path):
    path = tmp_path / "junk.safetensors"
    path.write_bytes(b"\xff" * 64)
    with pytest.raises(ValueError, match="not a safetensors file"):
        load(path)


# 4. wrong data: refused, not cast or read


@pytest.mark.parametrize("version", [0, -1, True, 1.0, "1"])
def test_load_refuses_format_versions_it_does_not_know(saved, tmp_path, version):
    header, tensors = _edit(saved, "linear", _set(("format_version",), version))
    with pytest.raises(ValueError, match="format version"):
        load(_write_edited(tmp_path, header, tensors))


def test_load_refuses_tensors_of_another_dtype(saved, tmp_path):
    _, _, header, tensors = saved["linear"]
    ints = {k: v.to(torch.int32) for k, v in tensors.items()}
    with pytest.raises(ValueError, match=r"layers\.0\.weight.*int32.*float32"):
        load(_write_edited(tmp_path, header, ints))


def test_load_refuses_float_weights_of_another_precision(saved, tmp_path):
    _, _, header, tensors = saved["tabnet"]  # trained (and built) in float32
    doubles = {k: v.double() if v.is_floating_point() else v for k, v in tensors.items()}
    with pytest.raises(ValueError, match=r"stored as float64; .* holds float32"):
        load(_write_edited(tmp_path, header, doubles))


def test_load_refuses_non_finite_weights(saved, tmp_path):
    _, _, header, tensors = saved["tabnet"]
    broken = dict(tensors)
    name = sorted(k for k, v in broken.items() if v.is_floating_point())[0]
    broken[name] = broken[name].clone()
    broken[name].view(-1)[0] = float("nan")
    with pytest.raises(ValueError, match=rf"{name}.*not finite"):
        load(_write_edited(tmp_path, header, broken))


def test_load_refuses_extra_and_missing_tensors_without_reading_them(saved, tmp_path, monkeypatch):
    _, _, header, tensors = saved["linear"]
    extra = {**tensors, "payload": torch.zeros(1000)}
    path = _write_edited(tmp_path, header, extra)
    read = []
    original = OneRead.get_tensor

    def spy(self, key):
        read.append(key)
        return original(self, key)

    monkeypatch.setattr(OneRead, "get_tensor", spy)
    with pytest.raises(ValueError, match="payload"):
        load(path)
    assert read == []
    missing = dict(tensors)
    missing.pop("layers.0.bias")
    with pytest.raises(ValueError, match=r"layers\.0\.bias"):
        load(_write_edited(tmp_path, header, missing, "missing.safetensors"))


# 5. load and threads: the global generator left alone


def test_load_keeps_the_global_generator(saved, tmp_path):
    """The skeleton draws nothing (meta device) and the network is initialised as fit
    initialises one: the caller's seeded random numbers are those it would have drawn."""
    clf, X, header, tensors = saved["tabnet"]
    path = _write_edited(tmp_path, header, tensors)
    torch.manual_seed(7)
    expected = torch.rand(4)
    torch.manual_seed(7)
    restored = load(path)
    assert torch.equal(torch.rand(4), expected)
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))


# --------------------------------------------------------------------------- load's messages


@pytest.mark.parametrize(
    ("name", "value"), [("lr", -1.0), ("C", 0.0), ("n_jobs", 0), ("n_jobs", "two")]
)
def test_a_bad_parameter_in_a_file_reads_cannot_load(saved, tmp_path, name, value):
    header, tensors = _edit(saved, "linear", lambda h: h["params"].__setitem__(name, value))
    path = _write_edited(tmp_path, header, tensors)
    match = rf"^cannot load .*: The '{name}' parameter of EntmaxClassifier must be"
    with pytest.raises(ValueError, match=match):
        load(path)


def test_a_directory_reads_as_a_directory(tmp_path):
    with pytest.raises(IsADirectoryError, match="directory"):
        load(tmp_path)


# --------------------------------------------------------------------------- fitted attributes
# against the network: what the stored tensors and network arguments make of them


def _floats(*values):
    return {"__ndarray__": "<f8", "shape": [len(values)], "values": list(values)}


@pytest.mark.parametrize(
    ("kind", "name", "value", "match"),
    [
        ("linear", "alpha_", 1.7, r"alpha_.*1\.5"),  # a fixed alpha of 1.5
        ("learned", "alpha_", 1.9, "alpha_"),  # a learned one: the stored tensor's
        ("tabnet", "alpha_", 2.0, "alpha_"),
        ("tabnet", "mask_alpha_", _floats(1.2, 1.9), "mask_alpha_"),
        ("tabnet", "feature_importances_", _floats(*[0.2] * 6), "feature_importances_.*sum"),
        ("tabnet", "feature_importances_", _floats(*[0.5] + [0.1] * 4 + [0.0]), "sum"),
        (
            "tabnet",
            "feature_importances_",
            _floats(*[1.0] + [0.0] * 4 + [{"__float__": "nan"}]),
            "feature_importances_",
        ),
        (
            "tabnet",
            "feature_names_in_",
            {"__ndarray__": "|O", "shape": [6], "values": ["a", "a", "b", "c", "d", "e"]},
            "feature_names_in_.*repeat",
        ),
    ],
    ids=[
        "alpha-fixed",
        "alpha-learned",
        "alpha-tabnet",
        "mask-alpha",
        "importances-sum",
        "importances-sum-below",
        "importances-nan",
        "names-repeated",
    ],
)
def test_load_checks_fitted_attributes_against_the_network(
    saved, tmp_path, kind, name, value, match
):
    header, tensors = _edit(saved, kind, _set(("fitted", name), value))
    with pytest.raises(ValueError, match=rf"^cannot load .*{match}"):
        load(_write_edited(tmp_path, header, tensors))


def test_a_learned_alpha_is_checked_within_float32_rounding(saved, tmp_path):
    clf, _, header, tensors = saved["learned"]
    assert isinstance(clf.net_.module_.alpha, torch.Tensor)
    close = float(np.nextafter(np.float32(clf.alpha_), np.float32(3.0)))  # one float32 ulp
    header, tensors = _edit(saved, "learned", _set(("fitted", "alpha_"), close))
    assert load(_write_edited(tmp_path, header, tensors)).alpha_ == close


@pytest.mark.parametrize("shape", [[0, 2**63], [0, 2**62, 4], [0, 2**31 - 1, 2**31 - 1, 2**31]])
def test_an_array_shape_numpy_cannot_hold_reads_cannot_load(saved, tmp_path, shape):
    header, tensors = _edit(
        saved,
        "linear",
        _set(("fitted", "classes_"), {"__ndarray__": "<i8", "shape": shape, "values": []}),
    )
    with pytest.raises(ValueError, match=r"^cannot load .*classes_"):
        load(_write_edited(tmp_path, header, tensors))


# --------------------------------------------------------------------------- save's target


@pytest.fixture(scope="module")
def small():
    return EntmaxClassifier(max_epochs=2).fit(X_IRIS, Y_IRIS)


def _refuse_fifo(clf, fifo):
    """save(clf, fifo) must raise an OSError naming it and leave it a fifo."""
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that no writer could block
    try:
        with pytest.raises(OSError, match=re.escape(os.path.basename(fifo))) as raised:
            save(clf, fifo)
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    return raised.value


def test_save_refuses_a_fifo_and_leaves_it_as_it_was(small, tmp_path):
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    error = _refuse_fifo(small, fifo)
    assert "regular file" in str(error)
    assert os.listdir(tmp_path) == ["pipe.safetensors"]  # no temporary file left behind


def test_save_refuses_a_symlink_to_a_fifo(small, tmp_path):
    fifo, link = tmp_path / "pipe", tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    _refuse_fifo(small, link)
    assert link.is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["model.safetensors", "pipe"]


def test_save_refuses_a_directory_with_an_oserror(small, tmp_path):
    folder = tmp_path / "model.safetensors"
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match=r"model\.safetensors"):
        save(small, folder)
    assert folder.is_dir() and not any(folder.iterdir())
    assert os.listdir(tmp_path) == ["model.safetensors"]


def test_save_refuses_device_files(small, tmp_path):
    """Only once a fifo is refused (so a broken save cannot get this far): character devices
    such as /dev/null and /dev/full are refused before anything is written, and stay
    devices (save as root used to replace them with a regular file)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    _refuse_fifo(small, fifo)
    devices = [d for d in ("/dev/null", "/dev/full") if os.path.exists(d)]
    devices = [d for d in devices if stat.S_ISCHR(os.stat(d).st_mode)]
    if not devices:
        pytest.skip("no /dev/null or /dev/full character device here")
    for device in devices:
        with pytest.raises(OSError, match=device):
            save(small, device)
        assert stat.S_ISCHR(os.stat(device).st_mode), device


def test_save_through_a_symlink_writes_the_file_it_names(small, tmp_path):
    target, link = tmp_path / "real.safetensors", tmp_path / "link.safetensors"
    target.write_bytes(b"old")
    link.symlink_to(target)
    save(small, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    np.testing.assert_array_equal(load(target).predict_proba(X_IRIS), small.predict_proba(X_IRIS))


def test_a_failed_save_raises_oserror_and_leaves_the_old_file(small, tmp_path, monkeypatch):
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"old model")

    def full_disk(tensors, filename, metadata=None):
        with open(filename, "wb") as partial:
            partial.write(b"half a mod")
        raise safetensors.SafetensorError("Error while serializing: No space left on device")

    monkeypatch.setattr(safetensors.torch, "save_file", full_disk)
    with pytest.raises(OSError, match=r"No space left.*model\.safetensors") as raised:
        save(small, path)
    assert not isinstance(raised.value, safetensors.SafetensorError)
    assert path.read_bytes() == b"old model"
    assert os.listdir(tmp_path) == ["model.safetensors"]


def test_save_keeps_the_mode_of_a_file_it_replaces_and_the_umask_for_a_new_one(small, tmp_path):
    old = tmp_path / "old.safetensors"
    old.write_bytes(b"")
    os.chmod(old, 0o640)
    save(small, old)
    assert stat.S_IMODE(os.stat(old).st_mode) == 0o640
    reference = tmp_path / "reference"
    reference.write_bytes(b"")  # created as open() creates files, under the umask
    new = tmp_path / "new.safetensors"
    save(small, new)
    assert stat.S_IMODE(os.stat(new).st_mode) == stat.S_IMODE(os.stat(reference).st_mode)


def test_save_documents_its_oserrors():
    raises = save.__doc__.split("Raises\n    ------")[1].split("Notes\n")[0]
    assert "\n    OSError\n" in raises and "\n    IsADirectoryError\n" in raises


def test_saving_needs_nothing_beyond_the_first_set_up_command():
    # issue 27.5: the README's first command installs ".[plot]"; save needs safetensors, so it
    # is a dependency of the package itself (it was only in an extra no command installed),
    # and no install hint names the package as if it were on PyPI
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pyproject = (root / "pyproject.toml").read_text()
    dependencies = pyproject.split("dependencies = [", 1)[1].split("]", 1)[0]
    assert '"safetensors' in dependencies
    for path in [root / "README.md", *sorted((root / "sk_entmax").rglob("*.py"))]:
        assert 'pip install "sk-entmax[' not in path.read_text(encoding="utf-8"), path
