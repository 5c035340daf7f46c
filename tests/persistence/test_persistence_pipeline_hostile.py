"""Hostile Pipeline files, round four (issue 58): a stored joblib cache, bombs and calls in
the skops part, scikit-learn estimators whose compiled code trusts their fitted arrays, a
stored ``n_jobs`` above the cores. Each file is crafted here, from a saved pipeline."""

from __future__ import annotations

import base64
import io
import json
import zipfile

import numpy as np
import pytest
from saved_files import read_saved, write_saved
from sklearn.compose import make_column_transformer
from sklearn.feature_selection import SelectKBest, f_classif
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from sk_entmax import SparsemaxClassifier
from sk_entmax._engine.threads import available_cores
from sk_entmax.persistence import load, save

sio = pytest.importorskip("skops.io")

PLACEHOLDER = "sk_entmax.persistence:model:0"


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    return X, (X[:, 0] > 0).astype(int)


@pytest.fixture(scope="module")
def saved(data, tmp_path_factory):
    """A saved pipeline with a score function: its header and tensors."""
    X, y = data
    pipe = make_pipeline(
        StandardScaler(), SelectKBest(f_classif, k=2), SparsemaxClassifier(max_epochs=2)
    ).fit(X, y)
    path = tmp_path_factory.mktemp("saved") / "pipe.safetensors"
    save(pipe, path)
    return read_saved(path)


def _forge(saved, tmp_path, skeleton) -> str:
    """The saved file with ``skeleton`` (a pipeline holding the placeholder) as its skops
    part."""
    header, tensors = saved
    header = dict(header, pipeline=base64.b64encode(sio.dumps(skeleton)).decode())
    return str(write_saved(tmp_path / "forged.safetensors", header, tensors))


def _edit_archive(saved, tmp_path, edit_schema=None, compression=zipfile.ZIP_DEFLATED) -> str:
    """The saved file with its skops part rewritten: the schema passed through
    ``edit_schema`` (a function of the parsed schema returning its new text), every member
    written with ``compression``."""
    header, tensors = saved
    source = zipfile.ZipFile(io.BytesIO(base64.b64decode(header["pipeline"])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=compression) as archive:
        for member in source.infolist():
            raw = source.read(member)
            if member.filename == "schema.json" and edit_schema is not None:
                raw = edit_schema(json.loads(raw)).encode()
            archive.writestr(member.filename, raw)
    header = dict(header, pipeline=base64.b64encode(out.getvalue()).decode())
    return str(write_saved(tmp_path / "edited.safetensors", header, tensors))


def _find(tree, cls):
    """The schema node of class ``cls``."""
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("__class__") == cls:
                return item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    raise LookupError(cls)


# point 1: a Pipeline's memory, the folder a refit pickles to and unpickles from


def test_save_refuses_a_pipeline_with_a_cache_folder(data, tmp_path):
    X, y = data
    pipe = Pipeline(
        [("scale", StandardScaler()), ("clf", SparsemaxClassifier(max_epochs=1))],
        memory=str(tmp_path / "cache"),
    ).fit(X, y)
    path = tmp_path / "p.safetensors"
    with pytest.raises(ValueError, match=r"memory=.*cache.*set_params\(memory=None\)"):
        save(pipe, path)
    assert not path.exists()


def test_load_refuses_a_file_whose_pipeline_names_a_cache_folder(saved, data, tmp_path):
    """A bundle of a file and a cache folder of pickles: the refit would unpickle them."""
    X, _ = data
    scaler = StandardScaler().fit(X)
    forged = Pipeline([("scale", scaler), ("clf", PLACEHOLDER)], memory=str(tmp_path / "cache"))
    with pytest.raises(ValueError, match=r"cannot load .*memory=.*cache"):
        load(_forge(saved, tmp_path, forged))


# point 2: bombs in the skops part


def test_load_refuses_a_schema_that_unpacks_beyond_its_bound(saved, tmp_path):
    """5 MB of JSON that deflates to a few KB: refused from the archive's sizes."""

    def pad(schema):
        schema["padding"] = " " * (5 * 2**20)
        return json.dumps(schema)

    with pytest.raises(ValueError, match=r"schema unpacks to [\d,]+ bytes"):
        load(_edit_archive(saved, tmp_path, pad))


def test_load_refuses_a_schema_of_too_many_values_before_parsing_it(saved, tmp_path):
    """400,000 values in 1.2 MB (each costs tens of bytes parsed); skops would ignore them."""

    def pad(schema):
        schema["padding"] = [0] * 400_000
        return json.dumps(schema)

    with pytest.raises(ValueError, match=r"about [\d,]+ values"):
        load(_edit_archive(saved, tmp_path, pad))


def test_load_reads_only_stored_and_deflated_members(saved, tmp_path):
    path = _edit_archive(saved, tmp_path, compression=zipfile.ZIP_BZIP2)
    with pytest.raises(ValueError, match=r"compression 12; load reads only stored and deflated"):
        load(path)


# point 3: a trusted function referenced, never called at load


def test_load_never_calls_a_trusted_score_function(saved, tmp_path, monkeypatch):
    """The score function's node made a call of it on stored arguments."""
    import sklearn.feature_selection._univariate_selection as module

    calls = []
    monkeypatch.setattr(module, "f_classif", lambda *args: calls.append(args) or args)

    def call_it(schema):
        node = _find(schema, "f_classif")
        node["__loader__"] = "ConstructorFromReduceNode"
        node["content"] = {
            "__class__": "tuple",
            "__module__": "builtins",
            "__loader__": "TupleNode",
            "content": [
                {
                    "__class__": "str",
                    "__module__": "builtins",
                    "__loader__": "JsonNode",
                    "content": "[[1.0, 2.0], [3.0, 4.0]]",
                    "is_json": True,
                }
            ],
        }
        return json.dumps(schema)

    with pytest.raises(ValueError, match=r"f_classif with skops' 'ConstructorFromReduceNode'"):
        load(_edit_archive(saved, tmp_path, call_it))
    assert calls == []


# point 4: estimators whose compiled code trusts their fitted arrays


def test_save_and_load_refuse_libsvm_estimators(saved, data, tmp_path):
    """An SVC whose ``_n_support`` keeps its sum made predict crash in libsvm."""
    X, y = data
    svc = SVC().fit(X, y)
    with pytest.raises(TypeError, match=r"sklearn\.svm\._classes\.SVC"):
        save(make_pipeline(svc, SparsemaxClassifier(max_epochs=1)).fit(X, y), tmp_path / "p")
    svc._n_support = svc._n_support[::-1].copy()
    forged = Pipeline([("svc", svc), ("clf", PLACEHOLDER)])
    with pytest.raises(ValueError, match=r"cannot load .*sklearn\.svm\._classes\.SVC"):
        load(_forge(saved, tmp_path, forged))


# point 5: a stored n_jobs above the cores


def test_a_stored_n_jobs_above_the_cores_is_capped_with_a_warning(data, tmp_path):
    X, y = data
    many = available_cores() + 14
    columns = make_column_transformer((StandardScaler(), [0, 1, 2]), n_jobs=many)
    pipe = make_pipeline(columns, SparsemaxClassifier(max_epochs=1)).fit(X, y)
    path = tmp_path / "p.safetensors"
    save(pipe, path)
    with pytest.warns(UserWarning, match=rf"n_jobs={many}, more than the .* capped"):
        loaded = load(path)
    assert loaded[0].n_jobs == available_cores()
    assert pipe[0].n_jobs == many
    np.testing.assert_array_equal(loaded.predict_proba(X), pipe.predict_proba(X))


# point 20: what the file holds reaches the terminal escaped


def test_load_errors_escape_the_control_characters_a_file_holds(saved, tmp_path):
    def rename(schema):
        _find(schema, "f_classif")["__class__"] = "f_classif\x1b[2J\x07"
        return json.dumps(schema)

    with pytest.raises(ValueError, match=r"cannot load") as raised:
        load(_edit_archive(saved, tmp_path, rename))
    message = str(raised.value)
    assert "\x1b" not in message and "\x07" not in message
    assert r"f_classif\x1b[2J\x07" in message


def test_random_states_load_and_build_nothing_else(data, saved, tmp_path):
    """A pipeline holding a RandomState and a Generator loads; the node kind that builds a
    RandomState builds nothing else (point 3)."""
    from sklearn.decomposition import PCA

    X, y = data
    pca = PCA(2, random_state=np.random.RandomState(0))
    pipe = make_pipeline(pca, SparsemaxClassifier(max_epochs=1)).fit(X, y)
    pipe[0].generator_ = np.random.default_rng(0)
    path = tmp_path / "p.safetensors"
    save(pipe, path)
    np.testing.assert_array_equal(load(path).predict_proba(X), pipe.predict_proba(X))

    def swap(schema):
        node = _find(schema, "f_classif")
        node.update(__loader__="RandomStateNode", content={})
        return json.dumps(schema)

    with pytest.raises(ValueError, match=r"f_classif with skops' 'RandomStateNode'"):
        load(_edit_archive(saved, tmp_path, swap))
