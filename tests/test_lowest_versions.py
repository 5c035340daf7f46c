"""The flows that lean on the dependencies' APIs, small enough to run at every CI run against
the lowest declared versions too (``.ci/run`` installs ``tests/constraints-lowest.txt`` in a
venv of its own and runs the tests marked ``lowest_versions``).

Each test checks an outcome against independent truth (the labels, the support, the saved
model's own predictions), not against a figure of one version.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from sklearn.datasets import load_iris, make_multilabel_classification
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier
from sk_entmax.persistence import load, save

pytestmark = pytest.mark.lowest_versions

X_IRIS, Y_IRIS = load_iris(return_X_y=True, as_frame=True)
NAMES = np.array(["setosa", "versicolor", "virginica"])[Y_IRIS.to_numpy()]


def test_linear_pipeline_search_on_a_frame_with_string_labels():
    search = GridSearchCV(
        make_pipeline(StandardScaler(), EntmaxClassifier(random_state=0)),
        {"entmaxclassifier__alpha": [1.5, 2.0]},
        cv=3,
    ).fit(X_IRIS, NAMES)
    assert search.score(X_IRIS, NAMES) > 0.9
    proba = search.predict_proba(X_IRIS)
    assert (proba == 0).any() and np.allclose(proba.sum(axis=1), 1.0)
    assert set(search.predict(X_IRIS)) <= set(NAMES)


def test_adam_early_stopping_partial_fit_and_sparse_input():
    X = StandardScaler().fit_transform(X_IRIS)
    clf = SparsemaxClassifier(solver="adam", early_stopping=True, max_epochs=50, random_state=0)
    assert clf.fit(scipy.sparse.csr_matrix(X), NAMES).score(X, NAMES) > 0.8
    stream = SparsemaxClassifier(random_state=0)
    for rows in np.array_split(np.random.default_rng(0).permutation(len(X)), 3):
        stream.partial_fit(X[rows], NAMES[rows], classes=np.unique(NAMES))
    assert stream.score(X, NAMES) > 0.6


def test_multilabel_support_and_a_saved_model_predict_the_same(tmp_path):
    X, Y = make_multilabel_classification(n_samples=80, n_features=6, random_state=0)
    X = StandardScaler().fit_transform(X)
    clf = SparsemaxClassifier(max_iter=300).fit(X, Y)
    np.testing.assert_array_equal(clf.predict(X), clf.predict_proba(X) > 0)
    save(clf, tmp_path / "model.safetensors")
    restored = load(tmp_path / "model.safetensors")
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))


def test_tabnet_on_a_frame_with_a_text_column_and_a_gap(tmp_path):
    frame = X_IRIS.copy()
    frame["colour"] = np.where(frame.index % 2 == 0, "red", "blue")
    frame.iloc[3, 0] = np.nan
    clf = TabNetEntmaxClassifier(max_epochs=3, random_state=0).fit(frame, NAMES)
    proba = clf.predict_proba(frame)
    assert proba.shape == (150, 3) and np.allclose(proba.sum(axis=1), 1.0)
    _, masks = clf.explain(frame.iloc[:5])
    assert all(mask.shape == (5, frame.shape[1]) for mask in masks.values())
    save(clf, tmp_path / "tabnet.safetensors")
    restored = load(tmp_path / "tabnet.safetensors")
    np.testing.assert_array_equal(restored.predict_proba(frame), proba)
    assert isinstance(pd.DataFrame(proba, columns=clf.classes_), pd.DataFrame)
