"""A failed ``fit`` or ``partial_fit`` leaves the estimator as it was before the call.

A chunk of ``partial_fit`` whose loss becomes non-finite mid-chunk must not leave the first
batches' updates applied, nor an epoch in the history that ``n_iter_`` does not count; a
``fit`` that fails on a fitted estimator keeps the previous fit (as LogisticRegression keeps
its ``coef_``), so that a warm start never loses the weights it starts from.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, NonFiniteLossError, TabNetEntmaxClassifier
from sk_entmax._engine.net import FenchelYoungNet

X_RAW, Y = load_iris(return_X_y=True)
X = StandardScaler().fit_transform(X_RAW)
CLASSES = np.unique(Y)

# partial_fit trains by Adam in batches of 30 rows: 5 batches per call on iris
STREAMS = {
    "linear": lambda: EntmaxClassifier(
        solver="adam", lr=0.05, batch_size=30, max_epochs=3, random_state=0
    ),
    "mlp": lambda: EntmaxClassifier(
        hidden_layer_sizes=(6,), lr=0.05, batch_size=30, max_epochs=3, random_state=0
    ),
}


def _diverge_from(monkeypatch, batch):
    """Make the training loss infinite from the ``batch``-th training batch on (counted from
    now): that batch's step turns the weights into NaN, then the finite-loss check stops the
    call. The batches before it update the weights as usual."""
    original = FenchelYoungNet.get_loss
    seen = []

    def get_loss(self, y_pred, y_true, X=None, training=False):
        loss = original(self, y_pred, y_true, X=X, training=training)
        if training:
            seen.append(None)
            if len(seen) >= batch:
                return loss * float("inf")
        return loss

    monkeypatch.setattr(FenchelYoungNet, "get_loss", get_loss)


def _state(clf):
    """Everything a call could change, copied: the estimator's attributes, and the net's
    weights, optimizer state, history and shuffling generator."""
    net = clf.net_
    generator = net.get_params_for("iterator_train").get("generator")
    return {
        "vars": dict(vars(clf)),
        "module": {k: v.detach().clone() for k, v in net.module_.state_dict().items()},
        "optimizer": copy.deepcopy(net.optimizer_.state_dict()),
        "history": copy.deepcopy(list(net.history)),
        "generator": None if generator is None else generator.get_state(),
        "n_iter": clf.n_iter_,
    }


def _assert_same_tree(a, b, where=""):
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor), where
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True, msg=where)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _assert_same_tree(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same_tree(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


# --------------------------------------------------------------------------- partial_fit


@pytest.mark.parametrize("start", ["partial_fit", "fit"])
@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_partial_fit_that_diverges_mid_chunk_changes_nothing(monkeypatch, name, start):
    clf, twin = STREAMS[name](), STREAMS[name]()
    for est in (clf, twin):
        if start == "fit":
            est.fit(X, Y)
        else:
            est.partial_fit(X, Y, classes=CLASSES)
        est.partial_fit(X, Y)
    proba = clf.predict_proba(X)
    before = _state(clf)
    assert before["optimizer"]["state"]  # Adam has moments to lose

    _diverge_from(monkeypatch, 3)  # 5 batches of 30 rows: batches 1 and 2 update the weights
    with pytest.raises(NonFiniteLossError, match="train batch 3"):
        clf.partial_fit(X, Y)
    monkeypatch.undo()

    np.testing.assert_array_equal(clf.predict_proba(X), proba)
    after = _state(clf)
    assert after["vars"].keys() == before["vars"].keys()
    for key, value in before["vars"].items():
        assert after["vars"][key] is value, key
    _assert_same_tree(after["module"], before["module"], "module")
    _assert_same_tree(after["optimizer"], before["optimizer"], "optimizer")
    assert len(clf.net_.history) == len(before["history"])
    assert after["history"] == before["history"]
    assert clf.n_iter_ == before["n_iter"]
    if before["generator"] is not None:
        assert torch.equal(after["generator"], before["generator"])
    # the stream goes on as if the failed chunk had never come
    clf.partial_fit(X, Y)
    twin.partial_fit(X, Y)
    np.testing.assert_array_equal(clf.predict_proba(X), twin.predict_proba(X))
    assert clf.n_iter_ == twin.n_iter_
    assert len(clf.net_.history) == len(twin.net_.history)


def test_a_partial_fit_that_diverges_after_an_lbfgs_fit_keeps_that_fit(monkeypatch):
    clf = EntmaxClassifier(batch_size=30, random_state=0).fit(X, Y)  # full-batch L-BFGS
    proba, fitted = clf.predict_proba(X), dict(vars(clf))
    _diverge_from(monkeypatch, 3)  # the chunk trains a new Adam net, from the fitted weights
    with pytest.raises(NonFiniteLossError, match="train batch 3"):
        clf.partial_fit(X, Y)
    monkeypatch.undo()
    assert vars(clf).keys() == fitted.keys()
    for key, value in fitted.items():
        assert vars(clf)[key] is value, key
    np.testing.assert_array_equal(clf.predict_proba(X), proba)


@pytest.mark.parametrize("multilabel", [False, True])
def test_a_first_partial_fit_that_fails_leaves_the_estimator_unfitted(monkeypatch, multilabel):
    y = np.eye(3, dtype=int)[Y] | np.eye(3, dtype=int)[(Y + 1) % 3] if multilabel else Y
    classes = None if multilabel else CLASSES
    clf = STREAMS["mlp"]()
    fresh = dict(vars(clf))
    _diverge_from(monkeypatch, 3)
    with pytest.raises(NonFiniteLossError):
        clf.partial_fit(X, y, classes=classes)
    monkeypatch.undo()
    assert vars(clf) == fresh
    with pytest.raises(NotFittedError):
        clf.predict(X)
    clf.partial_fit(X, y, classes=classes)
    twin = STREAMS["mlp"]().partial_fit(X, y, classes=classes)
    np.testing.assert_array_equal(clf.predict_proba(X), twin.predict_proba(X))


def test_a_partial_fit_refused_by_validation_changes_nothing():
    clf = STREAMS["mlp"]().partial_fit(X, Y, classes=CLASSES)
    before = _state(clf)
    with pytest.raises(ValueError, match="not in classes"):
        clf.partial_fit(X, np.full(len(X), 7))
    with pytest.raises(ValueError, match="features"):
        clf.partial_fit(X[:, :2], Y)
    after = _state(clf)
    assert after["vars"].keys() == before["vars"].keys()
    for key, value in before["vars"].items():
        assert after["vars"][key] is value, key
    _assert_same_tree(after["optimizer"], before["optimizer"], "optimizer")


# --------------------------------------------------------------------------- fit


class _Abort(BaseException):
    """Not an Exception: as a KeyboardInterrupt outside the training loop would be."""


def _abort_after_training(monkeypatch, cls):
    def _after_fit(self, X):
        raise _Abort

    monkeypatch.setattr(cls, "_after_fit", _after_fit)


FAILURES = {
    # training diverges: the loss becomes infinite at the 3rd batch of the new fit
    "diverges": (NonFiniteLossError, lambda mp, clf: _diverge_from(mp, 3), (X, Y)),
    # the new fit trains, then is aborted before it finishes setting its attributes
    "aborted": (_Abort, lambda mp, clf: _abort_after_training(mp, type(clf)), (X, Y)),
    # the new data pass the feature checks (resetting n_features_in_), then the target fails
    "one class": (ValueError, lambda mp, clf: None, (X[:, :2], np.zeros(len(X), int))),
}


@pytest.mark.parametrize("warm_start", [False, True])
@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_a_failed_fit_keeps_the_previous_fit(monkeypatch, failure, warm_start):
    error, arrange, data = FAILURES[failure]
    params = dict(solver="adam", batch_size=30, max_epochs=3, random_state=0)
    clf = EntmaxClassifier(warm_start=warm_start, **params).fit(X, Y)
    proba, fitted = clf.predict_proba(X), dict(vars(clf))
    arrange(monkeypatch, clf)
    with pytest.raises(error):
        clf.fit(*data)
    monkeypatch.undo()
    assert vars(clf).keys() == fitted.keys()
    for key, value in fitted.items():
        assert vars(clf)[key] is value, key
    np.testing.assert_array_equal(clf.predict_proba(X), proba)
    # a warm start then starts from the previous fit's weights, as if nothing had failed
    clf.fit(X, Y)
    twin = EntmaxClassifier(warm_start=warm_start, **params).fit(X, Y).fit(X, Y)
    np.testing.assert_array_equal(clf.predict_proba(X), twin.predict_proba(X))


def test_a_warm_start_refused_for_new_features_keeps_the_weights():
    clf = EntmaxClassifier(warm_start=True, solver="adam", max_epochs=3, random_state=0)
    clf.fit(X, Y)
    proba, fitted = clf.predict_proba(X), dict(vars(clf))
    with pytest.raises(ValueError, match="warm_start"):
        clf.fit(X[:, :3], Y)
    assert vars(clf) == fitted
    np.testing.assert_array_equal(clf.predict_proba(X), proba)


def test_a_failed_tabnet_fit_keeps_its_columns_and_categories(monkeypatch):
    frame = pd.DataFrame(X_RAW, columns=["a", "b", "c", "d"])
    frame["color"] = pd.Categorical(np.array(["red", "green", "blue"])[Y % 3])
    clf = TabNetEntmaxClassifier(n_d=4, n_a=4, n_steps=1, max_epochs=2, random_state=0)
    clf.fit(frame, Y)
    proba, fitted = clf.predict_proba(frame), dict(vars(clf))
    other = frame.drop(columns="color").assign(shape=pd.Categorical(["x"] * len(frame)))
    with pytest.raises(ValueError, match="at least 2 classes"):
        clf.fit(other, np.zeros(len(frame), int))
    assert vars(clf).keys() == fitted.keys()
    for key, value in fitted.items():
        assert vars(clf)[key] is value, key
    np.testing.assert_array_equal(clf.predict_proba(frame), proba)


def test_a_failed_first_fit_leaves_the_estimator_unfitted(monkeypatch):
    clf = EntmaxClassifier(solver="adam", batch_size=30, max_epochs=3, random_state=0)
    fresh = dict(vars(clf))
    _diverge_from(monkeypatch, 3)
    with pytest.raises(NonFiniteLossError):
        clf.fit(X, Y)
    assert vars(clf) == fresh
    with pytest.raises(NotFittedError):
        clf.predict(X)
    assert vars(clone(clf)).keys() == vars(clf).keys()
