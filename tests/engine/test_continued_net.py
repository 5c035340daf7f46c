"""A ``partial_fit`` call trains the net it continues as it trains a net it builds
(issue 61.1): whether the net came from ``fit``, an earlier ``partial_fit`` or
:func:`sk_entmax.persistence.load`, the call has the callbacks of a new ``partial_fit``
net (the finite-loss check and gradient clipping among them) and trains on every row of
its chunk."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris

from sk_entmax import EntmaxClassifier, TabNetEntmaxClassifier
from sk_entmax._engine.net import NonFiniteLossError
from sk_entmax.persistence import load, save

pytest.importorskip("safetensors")

TINY_TABNET = {"n_d": 4, "n_a": 4, "n_steps": 2, "max_epochs": 2, "random_state": 0}


def _iris() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_iris(return_X_y=True)
    return ((X - X.mean(0)) / X.std(0)).astype(np.float32), y


def _names(model) -> list[str]:
    return [name for name, _ in model.net_.callbacks]


def _loaded(model, path):
    save(model, path)
    return load(path)


@pytest.mark.filterwarnings("ignore:.*predicts one class")  # two epochs
def test_every_route_to_a_partial_fit_trains_with_its_own_callbacks(tmp_path, group_of_one):
    """TabNet clips its gradients (``clip_value``) in every ``partial_fit`` call: on a
    stream from scratch, after ``fit``, after a load (of a fitted or a streamed model),
    inside ``data_parallel`` too. A loaded model's net had no callbacks at all."""
    from sk_entmax.scale_out import data_parallel

    X, y = _iris()
    frame = pd.DataFrame(X, columns=list("abcd"))
    stream = TabNetEntmaxClassifier(**TINY_TABNET).partial_fit(frame, y, classes=[0, 1, 2])
    stream.partial_fit(frame, y)
    expected = _names(stream)
    assert "finite_loss" in expected and "gradient_clipping" in expected

    fitted = TabNetEntmaxClassifier(**TINY_TABNET).fit(frame, y)
    routes = {
        "after fit": fitted,
        "after loading a fit": _loaded(fitted, tmp_path / "fit.skx"),
        "after loading a stream": _loaded(stream, tmp_path / "stream.skx"),
    }
    for route, model in routes.items():
        model.partial_fit(frame, y)
        assert _names(model) == expected, route
    model = _loaded(fitted, tmp_path / "fit.skx")
    with data_parallel():
        model.partial_fit(frame, y)
    assert _names(model) == ["data_parallel", *expected]


def test_a_partial_fit_after_an_early_stopped_fit_trains_on_every_row():
    """``fit`` held out rows for early stopping; a ``partial_fit`` chunk that continues its
    net trains on all of its rows (the old net kept holding a tenth of each chunk out). A
    failed call gives the net back its held-out rows."""
    X, y = _iris()
    model = EntmaxClassifier(
        solver="adam", early_stopping=True, max_epochs=3, batch_size=16, random_state=0
    ).fit(X, y)
    split = model.net_.train_split
    assert split is not None and "valid_loss" in model.net_.history[-1]
    model.partial_fit(X, y)
    last = model.net_.history[-1]
    assert "valid_loss" not in last
    assert len(last["batches"]) == math.ceil(len(X) / 16)

    model = EntmaxClassifier(
        solver="adam", early_stopping=True, max_epochs=3, batch_size=16, random_state=0
    ).fit(X, y)
    split = model.net_.train_split
    model.set_params(lr=1e37)
    with pytest.raises(NonFiniteLossError):
        model.partial_fit(X * 1e6, y)
    assert model.net_.train_split is split
    assert [name for name, _ in model.net_.callbacks][-1] == "early_stopping"


def test_a_loaded_model_stops_a_diverging_partial_fit_as_the_original_does(tmp_path):
    """At a learning rate that makes the loss NaN, ``partial_fit`` raises
    :class:`NonFiniteLossError` and leaves the model as it was, loaded or not (a loaded
    model's net trained on, with weights of NaN)."""
    X, y = _iris()
    original = EntmaxClassifier(random_state=0).fit(X, y).partial_fit(X, y)
    loaded = _loaded(original, tmp_path / "m.skx")
    before = loaded.predict_proba(X)
    for model in (original, loaded):
        model.set_params(lr=1e37)
        with pytest.raises(NonFiniteLossError, match="training loss became nan"):
            model.partial_fit(X * 1e6, y)
    np.testing.assert_array_equal(loaded.predict_proba(X), before)
    np.testing.assert_array_equal(original.predict_proba(X), before)
