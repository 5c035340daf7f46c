"""ONNX export of fitted classifiers: onnxruntime against ``predict_proba``."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
ort = pytest.importorskip("onnxruntime")

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier  # noqa: E402
from sk_entmax.export import to_onnx  # noqa: E402


def _data(n: int = 90, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 0.8)
    return X, y


def _onnx_proba(estimator, X, tmp_path):
    path = to_onnx(estimator, tmp_path / "model.onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"X": X.astype(np.float64)})[0]


def _assert_matches(estimator, X, tmp_path):
    got = _onnx_proba(estimator, X, tmp_path)
    want = estimator.predict_proba(X)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-6
    assert np.array_equal(got == 0, want == 0)  # the same exact zeros, every row


@pytest.mark.parametrize(
    "estimator",
    [
        SparsemaxClassifier(max_epochs=3, random_state=0),
        EntmaxClassifier(max_epochs=3, random_state=0, alpha=1.33),
    ],
    ids=["SparsemaxClassifier", "EntmaxClassifier"],
)
def test_linear_classifiers_match_predict_proba(estimator, tmp_path):
    X, y = _data()
    estimator.fit(X, y)
    X_new, _ = _data(37, seed=1)  # another number of rows than the export's example
    _assert_matches(estimator, X_new, tmp_path)
    assert (estimator.predict_proba(X_new) == 0).any()  # zeros to compare


def test_tabnet_matches_predict_proba_with_gaps(tmp_path):
    X, y = _data()
    X[::7, 3] = np.nan  # a numeric column with gaps: filled and flagged inside the graph
    clf = TabNetEntmaxClassifier(max_epochs=2, batch_size=32, random_state=0, n_steps=2)
    clf.fit(X, y)
    X_new, _ = _data(25, seed=2)
    X_new[::3, 3] = np.nan
    _assert_matches(clf, X_new, tmp_path)


def test_categorical_columns_are_refused_by_name(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = _data(60)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["colour"] = np.where(X[:, 0] > 0, "red", "blue")
    clf = TabNetEntmaxClassifier(max_epochs=1, batch_size=32, random_state=0).fit(frame, y)
    with pytest.raises(ValueError, match="colour"):
        to_onnx(clf, tmp_path / "model.onnx")


def test_refuses_what_is_not_a_fitted_classifier(tmp_path):
    with pytest.raises(TypeError, match="LinearRegression"):
        from sklearn.linear_model import LinearRegression

        to_onnx(LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0]), tmp_path / "m.onnx")
    with pytest.raises(TypeError, match="path"):
        to_onnx(SparsemaxClassifier(), 3)
