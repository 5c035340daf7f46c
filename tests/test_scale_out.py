"""Out-of-core training and prediction on Dask collections (issue 49): ``fit_blocks`` is
``partial_fit`` over the blocks of rows, with its learning-rate schedule, one block in memory
at a time; ``predict_blocks`` is the estimator's method, block by block, lazily."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from sk_entmax import (
    InvalidParameterError,
    SparsemaxClassifier,
    TabNetEntmaxClassifier,
    TabNetPretrainer,
)
from sk_entmax.scale_out import fit_blocks, predict_blocks

da = pytest.importorskip("dask.array")

W = np.random.default_rng(1).standard_normal((6, 4))


def _data(n: int = 1200, rows: int = 300):
    X = da.random.default_rng(0).standard_normal((n, 6), chunks=(rows, 6))
    y = X.map_blocks(lambda block: np.argmax(block @ W, axis=1), drop_axis=1, dtype=np.int64)
    return X, y


def test_fit_blocks_is_partial_fit_over_the_blocks():
    """fit_blocks has no schedule of its own (no lr_decay): bit for bit partial_fit by
    hand on the computed blocks, in order, whose own schedule decays the step."""
    X, y = _data()
    ours = fit_blocks(SparsemaxClassifier(random_state=0), X, y, passes=2, shuffle=False)
    # the independent truth: partial_fit by hand on the computed blocks, in order
    X_np, y_np = X.compute(), y.compute()
    by_hand = SparsemaxClassifier(random_state=0)
    for _ in range(2):
        for start in range(0, 1200, 300):
            by_hand.partial_fit(
                X_np[start : start + 300], y_np[start : start + 300], classes=range(4)
            )
    np.testing.assert_array_equal(ours.predict_proba(X_np), by_hand.predict_proba(X_np))
    assert ours.lr == 0.01  # the estimator's own rate is untouched
    np.testing.assert_array_equal(ours.classes_, np.arange(4))  # read from y
    with pytest.raises(TypeError, match="lr_decay"):
        fit_blocks(SparsemaxClassifier(), X, y, lr_decay=0.5)


def test_fit_blocks_passes_the_weights_and_takes_multi_label_targets():
    X, y = _data()
    weight = da.from_array(np.linspace(0.5, 2.0, 1200), chunks=300)
    ours = fit_blocks(
        SparsemaxClassifier(random_state=0), X, y, sample_weight=weight, shuffle=False
    )
    X_np, y_np, w_np = X.compute(), y.compute(), weight.compute()
    by_hand = SparsemaxClassifier(random_state=0)
    for start in range(0, 1200, 300):
        rows = slice(start, start + 300)
        by_hand.partial_fit(X_np[rows], y_np[rows], classes=range(4), sample_weight=w_np[rows])
    np.testing.assert_array_equal(ours.predict_proba(X_np), by_hand.predict_proba(X_np))
    # an indicator matrix: labels 0 and 1 of each row, no classes needed
    Y = da.stack([y == 0, (y == 1) | (y == 2)], axis=1).astype(int).rechunk((300, 2))
    multi = fit_blocks(SparsemaxClassifier(random_state=0), X, Y)
    assert multi.multilabel_ and multi.predict(X_np).shape == (1200, 2)


def test_fit_blocks_shuffles_the_blocks_reproducibly():
    X, y = _data()
    a = fit_blocks(SparsemaxClassifier(random_state=0), X, y, random_state=3)
    b = fit_blocks(SparsemaxClassifier(random_state=0), X, y, random_state=3)
    c = fit_blocks(SparsemaxClassifier(random_state=0), X, y, shuffle=False)
    X_np = X.compute()
    np.testing.assert_array_equal(a.predict_proba(X_np), b.predict_proba(X_np))
    assert not np.array_equal(a.predict_proba(X_np), c.predict_proba(X_np))


def test_predict_blocks_is_lazy_and_equals_the_method():
    X, y = _data()
    clf = SparsemaxClassifier(random_state=0).fit(X.compute(), y.compute())
    for method in ("predict", "predict_proba", "decision_function"):
        lazy = predict_blocks(clf, X, method)
        assert isinstance(lazy, da.Array) and lazy.chunks[0] == X.chunks[0]
        np.testing.assert_array_equal(lazy.compute(), getattr(clf, method)(X.compute()))


def test_data_frames_work_too():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y = _data()
    X_np, y_np = X.compute(), y.compute()
    frame = dd.from_pandas(pd.DataFrame(X_np, columns=list("abcdef")), npartitions=4)
    labels = dd.from_pandas(pd.Series(y_np), npartitions=4)
    clf = fit_blocks(SparsemaxClassifier(random_state=0), frame, labels, shuffle=False)
    proba = predict_blocks(clf, frame, "predict_proba").compute()
    np.testing.assert_array_equal(proba, clf.predict_proba(frame.compute()))


def test_bad_arguments_name_themselves():
    X, y = _data()
    with pytest.raises(InvalidParameterError, match="passes"):
        fit_blocks(SparsemaxClassifier(), X, y, passes=0)
    with pytest.raises(InvalidParameterError, match="estimator"):
        fit_blocks(object(), X, y)
    with pytest.raises(InvalidParameterError, match="X"):
        fit_blocks(SparsemaxClassifier(), X.compute(), y)
    with pytest.raises(ValueError, match="blocks of rows"):
        fit_blocks(SparsemaxClassifier(), X, y.rechunk(400))
    with pytest.raises(InvalidParameterError, match="method"):
        predict_blocks(SparsemaxClassifier(), X, "transform")


_MEMORY = textwrap.dedent(
    """
    import json, resource
    import numpy as np
    import dask, dask.array as da
    from sk_entmax import SparsemaxClassifier
    from sk_entmax.scale_out import fit_blocks

    dask.config.set(scheduler="synchronous")
    W = np.random.default_rng(1).standard_normal((20, 5)).astype(np.float32)
    def make(n):
        X = da.random.default_rng(0).standard_normal((n, 20), chunks=(25_000, 20),
                                                     dtype=np.float32)
        y = X.map_blocks(lambda b: np.argmax(b @ W, axis=1), drop_axis=1, dtype=np.int64)
        return X, y
    # batches of 781 rows: 32 steps a block, as before partial_fit averaged (memory is the
    # question here, and the averaged weights are two more copies of 105 numbers)
    make_clf = lambda: SparsemaxClassifier(random_state=0, batch_size=781)
    fit_blocks(make_clf(), *make(50_000))  # imports, first fit
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    clf = fit_blocks(make_clf(), *make(1_000_000))
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"grew_kib": after - before, "data_kib": 1_000_000 * 20 * 4 // 1024}))
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB is Linux's")
def test_one_block_in_memory_at_a_time():
    # 1,000,000 x 20 float32 (78 MiB), generated lazily in blocks of 25,000 rows: the fitting
    # process's peak grows by well under the data's size
    result = subprocess.run(
        [sys.executable, "-c", _MEMORY], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["grew_kib"] < out["data_kib"] / 4, out


# ----------------------------------------------------------------- TabNet through partial_fit


def _table(n: int = 400):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "a": rng.standard_normal(n),
            "b": rng.standard_normal(n),
            "c": pd.Series(rng.choice(list("xyz"), n), dtype="category"),
        }
    )
    return X, np.where(X["a"] + (X["c"] == "x") > 0.3, "yes", "no")


def test_tabnet_partial_fit_is_one_epoch_of_fit():
    """In the paper's design a chunk is one epoch of fit, bit for bit. With faithful masks
    the warm-up of a fit is two thirds of its planned steps, while partial_fit, whose
    steps are open-ended, takes the full 600: the same epoch, another schedule."""
    X, y = _table()
    params = {"n_d": 4, "n_a": 4, "n_steps": 2, "batch_size": 64, "random_state": 0}
    faithful = TabNetEntmaxClassifier(**params).partial_fit(X, y, classes=["no", "yes"])
    assert faithful.net_.module_.tabnet.first_mask_warmup == 600
    one = TabNetEntmaxClassifier(**params, max_epochs=1).fit(X, y)
    steps = math.ceil(len(y) / 64)  # one epoch
    assert one.net_.module_.tabnet.first_mask_warmup == math.ceil(2 * steps / 3)
    params["faithful_masks"] = False
    streamed = TabNetEntmaxClassifier(**params).partial_fit(X, y, classes=["no", "yes"])
    fitted = TabNetEntmaxClassifier(**params, max_epochs=1).fit(X, y)
    np.testing.assert_array_equal(streamed.predict_proba(X), fitted.predict_proba(X))
    np.testing.assert_array_equal(streamed.feature_importances_, fitted.feature_importances_)
    np.testing.assert_array_equal(streamed.categories_[0], fitted.categories_[0])
    # later chunks continue, encoded with the first chunk's columns
    streamed.partial_fit(X[:200], y[:200])
    assert streamed.n_iter_ == 2
    with pytest.raises(ValueError, match="pretrainer"):
        TabNetEntmaxClassifier(pretrainer=TabNetPretrainer()).partial_fit(
            X, y, classes=["no", "yes"]
        )


def test_fit_blocks_trains_tabnet_on_a_data_frame():
    dd = pytest.importorskip("dask.dataframe")
    X, y = _table(600)
    frame = dd.from_pandas(X, npartitions=3)
    labels = dd.from_pandas(__import__("pandas").Series(y), npartitions=3)
    clf = fit_blocks(
        TabNetEntmaxClassifier(n_d=4, n_a=4, n_steps=2, random_state=0), frame, labels, passes=2
    )
    assert clf.n_iter_ == 6 and list(clf.classes_) == ["no", "yes"]
    proba = predict_blocks(clf, frame, "predict_proba").compute()
    np.testing.assert_array_equal(proba, clf.predict_proba(X))


def test_predict_blocks_takes_empty_blocks_and_no_rows():
    """(issue 58, point 14) An empty first block or partition, and X of 0 rows."""
    import dask.dataframe as dd
    import pandas as pd

    X, y = _data(600, 300)
    clf = fit_blocks(SparsemaxClassifier(random_state=0), X, y)
    X_np = X.compute()
    gappy = da.concatenate([da.zeros((0, 6), chunks=(0, 6)), X, X[:0]])
    for method in ("predict", "predict_proba"):
        out = predict_blocks(clf, gappy, method=method).compute()
        np.testing.assert_array_equal(out, getattr(clf, method)(X_np))
        empty = predict_blocks(clf, X[:0], method=method).compute()
        assert empty.shape == (0, *getattr(clf, method)(X_np[:1]).shape[1:])
    frame = pd.DataFrame(X_np, columns=list("abcdef"))
    parts = dd.concat([dd.from_pandas(frame.iloc[:0], npartitions=1), dd.from_pandas(frame, 2)])
    np.testing.assert_array_equal(predict_blocks(clf, parts).compute(), clf.predict(frame))
    none = dd.from_pandas(frame.iloc[:0], npartitions=1)
    assert predict_blocks(clf, none, method="predict_proba").compute().shape == (0, 4)


def test_a_fit_blocks_that_fails_at_a_later_block_leaves_the_estimator_as_it_was():
    """(issue 58, point 12) Chunks that differ are refused before any training, and a
    partial_fit error at block 2 (a NaN) undoes blocks 0 and 1."""
    X, y = _data(900, 300)
    clf = SparsemaxClassifier(random_state=0)
    with pytest.raises(ValueError, match=r"\(300, 300, 300\) rows and y's \(300, 200, 400\)"):
        fit_blocks(clf, X, y.rechunk(((300, 200, 400),)), classes=range(4), shuffle=False)
    assert not hasattr(clf, "net_")
    X_nan = da.concatenate([X[:600], da.full((300, 6), np.nan, chunks=(300, 6))])
    with pytest.raises(ValueError, match="NaN"):
        fit_blocks(clf, X_nan, y, classes=range(4), shuffle=False)
    assert not hasattr(clf, "net_")
    fitted = fit_blocks(SparsemaxClassifier(random_state=0), X[:300], y[:300], classes=range(4))
    proba = fitted.predict_proba(X[:300].compute())
    with pytest.raises(ValueError, match="NaN"):
        fit_blocks(fitted, X_nan, y, shuffle=False)
    np.testing.assert_array_equal(fitted.predict_proba(X[:300].compute()), proba)
