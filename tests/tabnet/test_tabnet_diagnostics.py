"""A collapsed TabNet fit says so (issue 57, point 6): ``fit`` warns when the model reads at
most one column, or (a classifier) predicts one class for every training row."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import make_classification

from sk_entmax import TabNetEntmaxClassifier, TabNetEntmaxRegressor
from sk_entmax._tabnet.diagnostics import Collapse
from sk_entmax._tabnet.explain import MaskExplanationMixin
from sk_entmax.nn.tabnet import TabNet

TINY = {"n_d": 4, "n_a": 4, "n_steps": 2, "n_independent": 1, "n_shared": 1, "lr": 0.05}
NAMES = ["a", "b", "c", "d"]


def _frame(n=120, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.normal(size=(n, len(NAMES))), columns=NAMES)


def _collapse_warnings(record) -> list[str]:
    return [
        str(w.message)
        for w in record
        if issubclass(w.category, UserWarning)
        and ("reads one column" in str(w.message) or "predicts one class" in str(w.message))
    ]


def _fit(est, X, y, method="fit"):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        getattr(est, method)(X, y)
    return _collapse_warnings(record), record


# --------------------------------------------------------------------------- the signs


def test_one_column_of_importances_is_named():
    found = Collapse.of_rows(NAMES, 50, np.array([0.0, 1.0, 0.0, 0.0]))
    assert found.one_column and found.read == [1] and not found.certified
    (message,) = found.messages("X's fit", "the 50 training rows")
    assert message.startswith("X's fit reads one column of 4, 'b', on the 50 training rows")
    assert "every other feature has importance exactly 0 on them" in message
    assert "faithful_masks=False" in message


def test_certified_never_read_counts_as_not_read():
    # every feature has a share, but no row reads 'a', 'c' or 'd'
    found = Collapse.of_rows(NAMES, 50, np.full(4, 0.25), np.array([0, 1, 0, 0], bool))
    assert found.read == [1] and found.certified
    (message,) = found.messages("X's fit", "the 50 training rows")
    assert "is provably never read by any of their predictions" in message
    # the paper's design: no certificate, other advice
    (paper,) = Collapse.of_rows(NAMES, 50, np.array([0, 0, 1.0, 0])).messages(
        "X", "r", faithful=False
    )
    assert "'c'" in paper and "faithful_masks=False" not in paper and "lambda_sparse" in paper


def test_no_column_read_is_said_too():
    found = Collapse.of_rows(NAMES, 50, np.full(4, 0.25), np.zeros(4, bool))
    (message,) = found.messages("X's fit", "the 50 training rows")
    assert "reads none of the 4 columns" in message and "the same prediction" in message


@pytest.mark.parametrize(
    "importances, predicted",
    [
        ([0.5, 0.5, 0.0, 0.0], ["x", "y", "x"]),  # two columns, two classes
        ([1.0], ["x", "y"]),  # a one-column table reads its column
        ([0.2, 0.3, 0.5, 0.0], None),  # a regressor: no classes
    ],
)
def test_a_fit_that_did_not_collapse_says_nothing(importances, predicted):
    names = NAMES[: len(importances)]
    found = Collapse.of_rows(names, 3, np.array(importances), None, predicted, 2)
    assert not found.one_column and found.one_class is None
    assert found.messages("X", "r") == []


def test_one_class_of_several_is_named():
    found = Collapse.of_rows(NAMES, 3, np.full(4, 0.25), None, np.array(["no"] * 3), 2)
    (message,) = found.messages("X's fit", "the 3 training rows")
    assert message.startswith("X's fit predicts one class, 'no', for every one of the 3 ")
    assert "of the 2 classes it was fitted on" in message
    assert "class_weight='balanced'" in message
    # a model fitted on one class predicts it: nothing to say
    assert Collapse.of_rows(NAMES, 3, np.full(4, 0.25), None, ["no"] * 3, 1).one_class is None


# --------------------------------------------------------------------------- fit warns


def test_fit_warns_when_it_predicts_one_class():
    X = _frame(160)
    y = np.where(np.arange(160) < 2, "rare", "common")  # 2 of 160 rows: never predicted
    said, record = _fit(TabNetEntmaxClassifier(**TINY, max_epochs=2, random_state=0), X, y)
    (message,) = [m for m in said if "predicts one class" in m]
    assert message.startswith(
        "TabNetEntmaxClassifier's fit predicts one class, 'common', for every one of the 160 "
        "training rows, of the 2 classes it was fitted on"
    )
    (w,) = [w for w in record if str(w.message) == message]
    assert w.filename == __file__  # the caller's line, not the package's


@pytest.mark.parametrize("cls", [TabNetEntmaxClassifier, TabNetEntmaxRegressor])
def test_fit_warns_when_its_importances_hold_one_column(monkeypatch, cls):
    def one_hot(self, X):
        return np.eye(X.shape[1])[1]  # all the attribution on 'b'

    monkeypatch.setattr(MaskExplanationMixin, "_importances", one_hot)
    X = _frame()
    y = X["b"].to_numpy() if cls is TabNetEntmaxRegressor else (X["b"] > 0).to_numpy()
    said, _ = _fit(cls(**TINY, max_epochs=1, random_state=0, faithful_masks=False), X, y)
    (message,) = [m for m in said if "reads one column" in m]
    assert message.startswith(
        f"{cls.__name__}'s fit reads one column of 4, column 'b', on the 120 training rows: "
        "every other feature has importance exactly 0 on them"
    )
    assert "lambda_sparse" in message  # the paper's design: its own advice
    assert not any("predicts one class" in m for m in said) or cls is TabNetEntmaxClassifier


def test_fit_warns_when_never_read_certifies_all_but_one_column(monkeypatch):
    def all_but_c(self, X):
        never = torch.ones(X.shape[0], X.shape[1], dtype=torch.bool)
        never[:, 2] = False
        return never

    monkeypatch.setattr(TabNet, "never_read", all_but_c)
    X = _frame()
    said, _ = _fit(TabNetEntmaxClassifier(**TINY, max_epochs=1, random_state=0), X, X["c"] > 0)
    (message,) = [m for m in said if "reads one column" in m]
    assert "reads one column of 4, column 'c', on the 120 training rows" in message
    assert "every other feature is provably never read" in message
    assert "refit with faithful_masks=False" in message


def test_numpy_columns_are_named_by_position(monkeypatch):
    monkeypatch.setattr(MaskExplanationMixin, "_importances", lambda self, X: np.eye(4)[3])
    X = _frame().to_numpy()
    said, _ = _fit(TabNetEntmaxRegressor(**TINY, max_epochs=1, random_state=0), X, X[:, 3])
    assert any("reads one column of 4, column 3, on the 120" in m for m in said)


def test_a_fit_that_reads_and_predicts_several_does_not_warn():
    X, y = make_classification(
        n_samples=200, n_features=4, n_informative=4, n_redundant=0, random_state=0
    )
    clf = TabNetEntmaxClassifier(**TINY, max_epochs=5, random_state=0)
    said, _ = _fit(clf, X, y)
    assert said == []
    assert len(np.unique(clf.predict(X))) == 2


def test_partial_fit_chunks_are_not_checked():
    X = _frame(160)
    y = np.where(np.arange(160) < 2, "rare", "common")
    clf = TabNetEntmaxClassifier(**TINY, random_state=0)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        clf.partial_fit(X, y, classes=["common", "rare"])
    assert _collapse_warnings(record) == []
    assert set(clf.predict(X)) == {"common"}  # it does predict one class
