"""save and load a scikit-learn Pipeline or ColumnTransformer (issue 44): the scikit-learn
part through skops with trusted types only, this package's estimators as model entries of
the same file; still no pickle, nothing run on load, forged files refused."""

from __future__ import annotations

import base64
import copy
import os

import numpy as np
import pandas as pd
import pytest
from saved_files import read_saved, write_saved
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import ColumnTransformer, make_column_selector, make_column_transformer
from sklearn.datasets import load_wine
from sklearn.feature_selection import SelectKBest, f_classif
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetPretrainer
from sk_entmax.persistence import load, save

pytest.importorskip("skops")


@pytest.fixture(scope="module")
def quickstart():
    """The README Quickstart's model."""
    X, y = load_wine(return_X_y=True, as_frame=True)
    pipe = make_pipeline(StandardScaler(), SparsemaxClassifier(random_state=0)).fit(X, y)
    return pipe, X


@pytest.fixture(scope="module")
def frame_model():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "a": np.where(rng.random(60) < 0.1, np.nan, rng.normal(size=60)),
            "b": rng.normal(size=60),
            "colour": rng.choice(["red", "blue", "green"], size=60),
        }
    )
    y = np.where(X["b"] > 0, "up", "down")
    columns = make_column_transformer(
        (make_pipeline(SimpleImputer(), StandardScaler()), ["a", "b"]),
        (OneHotEncoder(handle_unknown="ignore"), ["colour"]),
    )
    pipe = make_pipeline(columns, EntmaxClassifier(alpha=1.5, max_epochs=3, random_state=0))
    return pipe.fit(X, y), X


def test_the_quickstart_pipeline_saves_and_loads(quickstart, tmp_path):
    pipe, X = quickstart
    path = tmp_path / "pipe.safetensors"
    save(pipe, path)
    loaded = load(path)
    assert isinstance(loaded, Pipeline)
    assert [type(s).__name__ for _, s in loaded.steps] == ["StandardScaler", "SparsemaxClassifier"]
    proba = loaded.predict_proba(X)
    np.testing.assert_array_equal(proba, pipe.predict_proba(X))  # exact zeros included
    assert (proba == 0).any()
    np.testing.assert_array_equal(loaded.predict(X), pipe.predict(X))
    header, tensors = read_saved(path)
    assert header["format_version"] == 2 and len(header["models"]) == 1
    assert all(key.startswith("models.0.") for key in tensors)


def test_a_column_transformer_pipeline_and_a_bare_one_save_and_load(frame_model, tmp_path):
    pipe, X = frame_model
    path = tmp_path / "pipe.safetensors"
    save(pipe, path)
    loaded = load(path)
    np.testing.assert_array_equal(loaded.predict_proba(X), pipe.predict_proba(X))
    np.testing.assert_array_equal(loaded.predict(X), pipe.predict(X))
    columns = pipe[0]
    save(columns, path)
    again = load(path)
    assert isinstance(again, ColumnTransformer)
    np.testing.assert_array_equal(again.transform(X), columns.transform(X))


def test_selectors_score_functions_and_ufuncs_of_everyday_pipelines_load(tmp_path):
    """make_column_selector (the CLI's pipelines), SelectKBest(f_classif), np.log1p."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.random(40), "b": rng.random(40), "c": rng.choice(["x", "y"], 40)})
    y = (X["a"] > 0.5).astype(int)
    columns = make_column_transformer(
        (FunctionTransformer(np.log1p), make_column_selector(dtype_include="number")),
        (OneHotEncoder(), make_column_selector(dtype_exclude="number")),
    )
    pipe = make_pipeline(columns, SelectKBest(f_classif, k=2), SparsemaxClassifier(random_state=0))
    pipe.fit(X, y)
    path = tmp_path / "p.safetensors"
    save(pipe, path)
    np.testing.assert_array_equal(load(path).predict_proba(X), pipe.predict_proba(X))


class _Custom(TransformerMixin, BaseEstimator):
    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return X


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda: make_pipeline(_Custom(), SparsemaxClassifier(max_epochs=1)), "_Custom"),
        (lambda: make_pipeline(FunctionTransformer(copy.deepcopy), StandardScaler()), "deepcopy"),
        (  # this package's estimators are stored as steps of a Pipeline only
            lambda: make_column_transformer(
                (TabNetPretrainer(n_d=2, n_a=2, n_steps=1, max_epochs=1), [0, 1])
            ),
            "TabNetPretrainer inside a ColumnTransformer",
        ),
    ],
    ids=["custom-class", "function", "ours-in-a-column-transformer"],
)
def test_save_refuses_what_load_would_refuse_naming_it(make, named, tmp_path):
    obj = make()
    if not hasattr(obj, "transformers"):
        obj.fit(np.random.default_rng(0).normal(size=(20, 2)), np.arange(20) % 2)
    else:
        obj.fit(np.random.default_rng(0).normal(size=(20, 2)))
    path = tmp_path / "p.safetensors"
    with pytest.raises(TypeError, match=named):
        save(obj, path)
    assert not path.exists()


def test_load_refuses_a_forged_pipeline_without_running_it(quickstart, tmp_path, monkeypatch):
    """A pipeline entry naming a function (os.system here) is refused before skops builds
    anything: its name is the error."""
    import skops.io as sio

    pipe, _ = quickstart
    path = tmp_path / "pipe.safetensors"
    save(pipe, path)
    header, tensors = read_saved(path)
    forged = make_pipeline(FunctionTransformer(os.system), "sk_entmax.persistence:model:0")
    header["pipeline"] = base64.b64encode(sio.dumps(forged)).decode()
    called = []
    monkeypatch.setattr(os, "system", lambda *a: called.append(a))
    with pytest.raises(ValueError, match=r"cannot load .*types load does not build: .*system"):
        load(write_saved(tmp_path / "forged.safetensors", header, tensors))
    assert not called


def _second_model(header, tensors):
    """A second model entry that no step of the pipeline names."""
    header["models"] = header["models"] * 2
    tensors.update({k.replace("models.0.", "models.1."): v.clone() for k, v in tensors.items()})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda h, t: h.update(pipeline="not base64!"), "not base64"),
        (lambda h, t: h.update(pipeline=base64.b64encode(b"PK junk").decode()), "skops archive"),
        (lambda h, t: h.update(models=[]), "belongs to no model entry"),
        (lambda h, t: _second_model(h, t), "exactly one step"),
        (lambda h, t: t.update(extra=t["models.0.layers.0.weight"].clone()), "no model entry"),
        (lambda h, t: h["models"][0].update(format_version=2), "format version"),
    ],
    ids=["base64", "zip", "no-models", "model-twice", "stray-tensor", "entry-version"],
)
def test_load_refuses_an_edited_pipeline_file_saying_why(quickstart, tmp_path, change, message):
    pipe, _ = quickstart
    path = tmp_path / "pipe.safetensors"
    save(pipe, path)
    header, tensors = read_saved(path)
    change(header, tensors)
    with pytest.raises(ValueError, match=message):
        load(write_saved(tmp_path / "edited.safetensors", header, tensors))
