"""Bad data and training faults: every case gets a clear, tested outcome.

The README's "Hostile inputs" table lists these outcomes; tests/test_linear.py already covers
NaN and infinity in X for the linear estimators, a single class, continuous targets and
empty X, so those are not repeated here. Tiny data and few epochs throughout.
"""

from __future__ import annotations

import re
import threading
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
import torch
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier
from sk_entmax._base import BestWeightsSoFar, FenchelYoungNet, NonFiniteLossError

X_IRIS, Y_IRIS = load_iris(return_X_y=True)
X_IRIS = StandardScaler().fit_transform(X_IRIS)
X32 = np.ascontiguousarray(X_IRIS, dtype=np.float32)

# the training-fault tests are about mini-batch training (epochs, batches, best weights so
# far), so the linear estimators run Adam here; the full-batch solver has its own tests below
FACTORIES = {
    "entmax": lambda **kw: EntmaxClassifier(
        **{"solver": "adam", "lr": 0.05, "max_epochs": 5, "random_state": 0, **kw}
    ),
    "sparsemax": lambda **kw: SparsemaxClassifier(
        **{"solver": "adam", "lr": 0.05, "max_epochs": 5, "random_state": 0, **kw}
    ),
    "tabnet": lambda **kw: TabNetEntmaxClassifier(
        **{"n_d": 4, "n_a": 4, "n_steps": 2, "max_epochs": 2, "random_state": 0, **kw}
    ),
}
LINEAR = ["entmax", "sparsemax"]


def _make(name, **params):
    return FACTORIES[name](**params)


def _same_fit(a, b, X):
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


# --------------------------------------------------------------------------- bad values


@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_tabnet_infinite_numeric_X_raises_naming_the_column(value):
    X = X_IRIS.copy()
    X[3, 1] = value
    with pytest.raises(ValueError, match=r"infinity.*numeric column 1"):
        _make("tabnet").fit(X, Y_IRIS)


def test_tabnet_nan_in_numeric_X_is_a_missing_value():
    X = X_IRIS.copy()
    X[3, 1] = np.nan
    clf = _make("tabnet").fit(X, Y_IRIS)
    assert clf.missing_features_.tolist() == [1]
    assert np.isfinite(clf.predict_proba(X)).all()


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_nan_in_y_or_sample_weight_raises(name):
    y = Y_IRIS.astype(float)
    y[4] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        _make(name).fit(X_IRIS, y)
    weight = np.ones(len(X_IRIS))
    weight[2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        _make(name).fit(X_IRIS, Y_IRIS, sample_weight=weight)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_values_beyond_float32_raise(name):
    X = X_IRIS.copy()
    X[0, 0] = 1e39
    with pytest.raises(ValueError, match="infinity"), np.errstate(over="ignore"):
        _make(name).fit(X, Y_IRIS)


#: TabNet refuses a column whose batch norm variance would overflow float32 (issue 58)
WIDE = "spreads too widely for float32"


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_huge_finite_values_train_and_predict_finite(name):
    X = X_IRIS * 1e30
    if name == "tabnet":
        with pytest.raises(ValueError, match=rf"numeric column 0 {WIDE}"):
            _make(name).fit(X, Y_IRIS)
        X = X_IRIS * 1e16  # squares that sum within float32's range
    clf = _make(name).fit(X, Y_IRIS)
    proba = clf.predict_proba(X)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_values_that_overflow_the_loss_stop_fit_with_a_clear_error(name):
    clf = _make(name)
    expected = (NonFiniteLossError, r"epoch 1, train batch 1.*lower learning rate")
    if name == "tabnet":  # refused before it trains
        expected = (ValueError, WIDE)
    with (
        pytest.raises(expected[0], match=expected[1]),
        np.errstate(over="ignore", invalid="ignore"),
    ):
        clf.fit(X_IRIS * 1e38, Y_IRIS)
    with pytest.raises(NotFittedError):
        clf.predict(X_IRIS)


@pytest.mark.parametrize("cls", [EntmaxClassifier, SparsemaxClassifier])
def test_full_batch_solver_on_extreme_values_warns_that_it_did_not_converge(cls):
    """The L-BFGS fit reads X in float64, where 1e39 is finite: it trains, and says so when
    the line search cannot make progress on such a scale."""
    X = X_IRIS.copy()
    X[0, 0] = 1e39
    with pytest.warns(ConvergenceWarning, match="not converged"):
        clf = cls().fit(X * 1e-1, Y_IRIS)
    assert np.isfinite(clf.predict_proba(X)).all()


def test_full_batch_nan_objective_stops_fit_with_a_clear_error(monkeypatch):
    from sk_entmax._engine.solver import LbfgsNet

    original = LbfgsNet.objective

    def objective(self, X, y, *, backward):
        return original(self, X, y, backward=backward) * float("nan")

    monkeypatch.setattr(LbfgsNet, "objective", objective)
    clf = EntmaxClassifier()
    with pytest.raises(NonFiniteLossError, match="objective became nan in L-BFGS iteration 1"):
        clf.fit(X_IRIS, Y_IRIS)
    with pytest.raises(NotFittedError):
        clf.predict(X_IRIS)


def test_full_batch_interrupt_keeps_the_weights_reached(monkeypatch):
    from sk_entmax._engine.solver import LbfgsNet

    original, calls = LbfgsNet.objective, []

    def objective(self, X, y, *, backward):
        calls.append(1)
        if len(calls) == 6:
            raise KeyboardInterrupt
        return original(self, X, y, backward=backward)

    monkeypatch.setattr(LbfgsNet, "objective", objective)
    with pytest.warns(UserWarning, match=r"interrupted \(KeyboardInterrupt\) after \d+ L-BFGS"):
        clf = EntmaxClassifier().fit(X_IRIS, Y_IRIS)
    assert np.isfinite(clf.predict_proba(X_IRIS)).all()


def test_scores_that_overflow_at_predict_raise():
    # scores are computed in float64, which a linear model of float32 weights and inputs
    # cannot overflow; stacked layers of huge weights can
    clf = EntmaxClassifier(hidden_layer_sizes=(4,) * 8, max_epochs=2, random_state=0)
    clf.fit(X_IRIS, Y_IRIS)
    with torch.no_grad():
        for layer in clf.net_.module_.layers[::2]:
            layer.weight.fill_(1e38)
    X = X_IRIS[:3].copy()
    X[1] = 3e38
    with pytest.raises(ValueError, match=r"overflow for 1 row\(s\) of X \(the first: row 1\)"):
        clf.predict_proba(X)


# --------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("name", LINEAR)
def test_text_in_X_raises_with_a_hint(name):
    X = X_IRIS.astype(object)
    X[:, 1] = np.where(Y_IRIS == 0, "red", "blue")
    with pytest.raises(ValueError, match=r"could not convert.*OneHotEncoder"):
        _make(name).fit(X, Y_IRIS)
    frame = pd.DataFrame({"height": X_IRIS[:, 0], "color": X[:, 1]})
    with pytest.raises(ValueError, match="needs numeric features"):
        _make(name).fit(frame, Y_IRIS)


def test_tabnet_text_in_an_array_raises():
    X = X_IRIS.astype(object)
    X[:, 1] = "red"  # without a DataFrame or categorical_features, every column is numeric
    with pytest.raises(ValueError, match="could not convert"):
        _make("tabnet").fit(X, Y_IRIS)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_object_and_mixed_numeric_dtypes_fit_as_float(name):
    reference = _make(name).fit(X32, Y_IRIS)
    as_object = _make(name).fit(X32.astype(object), Y_IRIS)
    _same_fit(as_object, reference, X32)
    frame = pd.DataFrame(
        {
            "f64": X32[:, 0].astype(np.float64),
            "f16": X32[:, 1].astype(np.float16).astype(np.float32),
            "int": pd.array(np.round(X32[:, 2] * 4).astype(int), dtype="Int64"),
            "bool": X32[:, 3] > 0,
        }
    )
    clf = _make(name).fit(frame, Y_IRIS)
    np.testing.assert_array_equal(
        clf.predict_proba(frame),
        _make(name).fit(frame.astype(np.float32), Y_IRIS).predict_proba(frame),
    )


@pytest.mark.parametrize("name", LINEAR)
def test_missing_value_in_a_nullable_column_raises(name):
    frame = pd.DataFrame({"a": X_IRIS[:, 0], "b": pd.array(Y_IRIS % 2, dtype="Int64")})
    frame.loc[7, "b"] = pd.NA
    with pytest.raises(ValueError, match="NaN"):
        _make(name).fit(frame, Y_IRIS)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_complex_X_raises(name):
    with pytest.raises(ValueError, match="Complex"):
        _make(name).fit(X_IRIS.astype(complex), Y_IRIS)


# --------------------------------------------------------------------------- sparse


def test_sparse_X_raises_a_clear_error_in_tabnet():
    with pytest.raises(TypeError, match="Sparse data was passed for X, but dense data"):
        _make("tabnet").fit(scipy.sparse.csr_matrix(X_IRIS), Y_IRIS)


@pytest.mark.parametrize("cls", [EntmaxClassifier, SparsemaxClassifier])
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_X_trains_like_dense(cls, fmt):
    X = X32.copy()
    X[np.abs(X) < 0.5] = 0.0
    sparse = scipy.sparse.csr_matrix(X).asformat(fmt)
    params = {"lr": 0.05, "max_epochs": 5, "random_state": 0}
    for solver in ("lbfgs", "adam"):
        dense = cls(solver=solver, **params).fit(X, Y_IRIS)
        clf = cls(solver=solver, **params).fit(sparse, Y_IRIS)
        np.testing.assert_array_equal(clf.predict_proba(sparse), dense.predict_proba(X))
        np.testing.assert_array_equal(clf.predict_proba(X), dense.predict_proba(X))
    early = cls(solver="adam", early_stopping=True, validation_fraction=0.2, **params)
    assert np.isfinite(early.fit(sparse, Y_IRIS).predict_proba(sparse)).all()


# --------------------------------------------------------------------------- tiny shapes


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_one_sample_raises_one_per_class_fits(name):
    with pytest.raises(ValueError, match="2 classes"):
        _make(name).fit(X_IRIS[:1], Y_IRIS[:1])
    rows = [0, 60]
    clf = _make(name).fit(X_IRIS[rows], Y_IRIS[rows])
    assert clf.predict(X_IRIS[:1]).shape == (1,)
    np.testing.assert_allclose(clf.predict_proba(X_IRIS[:1]).sum(), 1.0, atol=1e-6)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_a_1d_sample_at_predict_raises(name):
    clf = _make(name).fit(X_IRIS[::5], Y_IRIS[::5])
    with pytest.raises(ValueError, match="Expected 2D array"):
        clf.predict(X_IRIS[0])


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_one_feature_fits(name):
    clf = _make(name).fit(X_IRIS[:, 2:3], Y_IRIS)
    assert clf.n_features_in_ == 1
    assert clf.predict_proba(X_IRIS[:, 2:3]).shape == (150, 3)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_no_feature_raises(name):
    with pytest.raises(ValueError, match="0 feature"):
        _make(name).fit(X_IRIS[:, :0], Y_IRIS)


def test_tabnet_one_class_raises():
    with pytest.raises(ValueError, match="2 classes"):
        _make("tabnet").fit(X_IRIS, np.zeros(len(X_IRIS)))


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_labels_unseen_at_fit_count_as_errors_in_score(name):
    y = np.array(["setosa", "versicolor", "virginica"])[Y_IRIS]
    clf = _make(name).fit(X_IRIS, y)
    y_new = np.where(y == "virginica", "unseen", y)
    assert set(clf.predict(X_IRIS)) <= set(clf.classes_)
    assert clf.score(X_IRIS, y_new) <= np.mean(y_new != "unseen")


def test_class_weight_for_a_label_not_in_y_is_ignored():
    weights = {0: 1.0, 1: 1.0, 2: 1.0, "other": 5.0}
    clf = _make("entmax", class_weight=weights).fit(X_IRIS, Y_IRIS)
    _same_fit(clf, _make("entmax").fit(X_IRIS, Y_IRIS), X_IRIS)


# --------------------------------------------------------------------------- memmaps


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_read_only_memmap(tmp_path, name, dtype):
    path = tmp_path / "X.npy"
    np.save(path, X32.astype(dtype))
    X = np.load(path, mmap_mode="r")
    weight_path = tmp_path / "w.npy"
    np.save(weight_path, np.linspace(0.5, 1.5, len(X)))
    weight = np.load(weight_path, mmap_mode="r")
    assert not X.flags.writeable and not weight.flags.writeable
    clf = _make(name).fit(X, Y_IRIS, sample_weight=weight)
    reference = _make(name).fit(X32, Y_IRIS, sample_weight=np.linspace(0.5, 1.5, len(X)))
    np.testing.assert_array_equal(clf.predict_proba(X), reference.predict_proba(X32))


def test_float32_memmap_is_not_copied(tmp_path):
    path = tmp_path / "X.npy"
    np.save(path, X32)
    X = np.load(path, mmap_mode="r")
    clf = _make("entmax")
    params = clf._checked_params()
    validated, _ = clf._validate_fit_data(X, Y_IRIS, clf._plan(params), params)
    assert np.shares_memory(validated, X)


# --------------------------------------------------------------------------- training faults


def _fail_at(monkeypatch, epoch, batch, action):
    """Make skorch's on_batch_end hook of the net run ``action`` at one training batch."""
    original = FenchelYoungNet.on_batch_end

    def on_batch_end(self, net, batch=None, training=False, **kwargs):
        original(self, net, batch=batch, training=training, **kwargs)
        done = sum(1 for b in net.history[-1]["batches"] if "train_loss" in b)
        if training and (len(net.history), done) == (epoch, batch_index):
            action(net, kwargs)

    batch_index = batch
    monkeypatch.setattr(FenchelYoungNet, "on_batch_end", on_batch_end)


def _nan_loss(net, step):
    step["loss"].data.fill_(float("nan"))


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_nan_loss_stops_with_an_error_naming_epoch_and_batch(monkeypatch, name):
    clf = _make(name, batch_size=50, max_epochs=5).fit(X_IRIS, Y_IRIS)  # then a refit fails
    before = clf.predict_proba(X_IRIS)
    _fail_at(monkeypatch, 2, 2, _nan_loss)
    with pytest.raises(NonFiniteLossError, match=r"loss became nan at epoch 2, train batch 2"):
        clf.fit(X_IRIS, Y_IRIS)
    # the failed refit leaves the previous fit as it was (as LogisticRegression does)
    np.testing.assert_array_equal(clf.predict_proba(X_IRIS), before)
    fresh = _make(name, batch_size=50, max_epochs=5)
    with pytest.raises(NonFiniteLossError):
        fresh.fit(X_IRIS, Y_IRIS)
    for attribute in ("net_", "classes_", "n_features_in_"):  # a failed first fit: unfitted
        assert not hasattr(fresh, attribute)
    with pytest.raises(NotFittedError):
        fresh.predict(X_IRIS)


def test_nan_validation_loss_stops_too(monkeypatch):
    original = FenchelYoungNet.get_loss

    def get_loss(self, y_pred, y_true, X=None, training=False):
        loss = original(self, y_pred, y_true, X=X, training=training)
        return loss if training else loss * float("nan")

    monkeypatch.setattr(FenchelYoungNet, "get_loss", get_loss)
    clf = _make("entmax", early_stopping=True, validation_fraction=0.2)
    with pytest.raises(NonFiniteLossError, match=r"validation loss became nan at epoch 1, valid"):
        clf.fit(X_IRIS, Y_IRIS)


def _interrupt(net, step):
    raise KeyboardInterrupt


@pytest.mark.parametrize("early_stopping", [False, True])
@pytest.mark.parametrize("name", ["entmax", "tabnet"])
def test_interrupted_fit_keeps_the_best_weights_so_far(monkeypatch, name, early_stopping):
    params = {"batch_size": 30, "max_epochs": 30, "early_stopping": early_stopping}
    if name == "tabnet":  # the paper's design: a faithful fit's warm-up has no best epoch
        params["faithful_masks"] = False
    _fail_at(monkeypatch, 7, 2, _interrupt)
    monitor = "valid_loss" if early_stopping else "train_loss"
    clf = _make(name, **params)
    with pytest.warns(UserWarning, match=r"interrupted \(KeyboardInterrupt\) in epoch 7") as rec:
        clf.fit(X_IRIS, Y_IRIS)
    assert f"the best {monitor} so far" in str(rec[0].message)
    assert clf.n_iter_ == 7
    callbacks = dict(clf.net_.callbacks_)
    if early_stopping:
        best, epoch = callbacks["early_stopping"].best_model_weights_, None
        epoch = callbacks["early_stopping"].best_epoch_
    else:
        best = callbacks["best_weights"].best_weights_
        epoch = callbacks["best_weights"].best_epoch_
    losses = [row[monitor] for row in clf.net_.history[:-1]]
    assert epoch == np.argmin(losses) + 1
    assert f"epoch {epoch}, the best" in str(rec[0].message)
    for key, value in clf.net_.module_.state_dict().items():
        torch.testing.assert_close(value, best[key], rtol=0, atol=0, msg=key)
    assert np.isfinite(clf.predict_proba(X_IRIS)).all()


def test_interrupted_warmup_keeps_the_weights_reached_and_says_why(monkeypatch):
    """Early stopping counts no epoch of a faithful TabNet's warm-up (over 100 epochs here), so
    an interrupt in it keeps the weights reached and says so."""
    _fail_at(monkeypatch, 7, 2, _interrupt)
    clf = _make("tabnet", batch_size=30, max_epochs=30, early_stopping=True)
    with pytest.warns(UserWarning, match=r"interrupted \(KeyboardInterrupt\) in epoch 7") as rec:
        clf.fit(X_IRIS, Y_IRIS)
    assert "every epoch that finished was in the faithful masks' warm-up" in str(rec[0].message)
    assert clf.n_iter_ == 7 and np.isfinite(clf.predict_proba(X_IRIS)).all()


def test_interrupt_before_any_epoch_finished_still_gives_a_model(monkeypatch):
    _fail_at(monkeypatch, 1, 1, _interrupt)
    with pytest.warns(UserWarning, match="no epoch had finished"):
        clf = _make("entmax", batch_size=50).fit(X_IRIS, Y_IRIS)
    assert clf.n_iter_ == 1
    assert np.isfinite(clf.predict_proba(X_IRIS)).all()


def test_best_weights_callback_is_not_pickled_twice():
    clf = _make("entmax").fit(X_IRIS, Y_IRIS)
    best = dict(clf.net_.callbacks_)["best_weights"]
    assert isinstance(best, BestWeightsSoFar)
    assert best.__getstate__()["best_weights_"] is None


def test_fits_in_threads_are_reproducible():
    """Weight initialisation and shuffling do not race on torch's global generator, so the
    threads of one process (joblib's threading backend, a Dask worker) fit as one would."""
    seeds = [0, 1, 2]
    sequential = [_make("entmax", random_state=s).fit(X_IRIS, Y_IRIS) for s in seeds]
    threaded: dict[int, EntmaxClassifier] = {}

    def fit(seed):
        threaded[seed] = _make("entmax", random_state=seed).fit(X_IRIS, Y_IRIS)

    threads = [threading.Thread(target=fit, args=(s,)) for s in seeds]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for seed, clf in zip(seeds, sequential):
        _same_fit(threaded[seed], clf, X_IRIS)


def test_non_finite_loss_error_is_public():
    import sk_entmax

    assert sk_entmax.NonFiniteLossError is NonFiniteLossError
    assert "NonFiniteLossError" in sk_entmax.__all__


# --------------------------------------------------------------------------- unseen categories


def test_tabnet_warns_once_per_column_about_categories_unseen_at_fit():
    every_third = np.arange(150) % 3
    colors = np.array(["red", "green", "blue"])[every_third]
    sizes = np.array(["S", "M", "L"])[every_third]
    frame = pd.DataFrame(
        {
            "x": X_IRIS[:, 0],
            "color": pd.Series(colors, dtype=object),
            "size": pd.Series(sizes, dtype=object),
        }
    )
    clf = _make("tabnet").fit(frame, Y_IRIS)
    new = frame.iloc[:6].copy()
    new["color"] = pd.Series(["red", "purple", "purple", 2.5, None, "green"], dtype=object)
    new["size"] = pd.Series(["S", "M", "XL", "L", "S", "M"], dtype=object)
    with pytest.warns(UserWarning, match="not seen at fit") as record:
        proba = clf.predict_proba(new)
    messages = sorted(str(w.message) for w in record if "not seen at fit" in str(w.message))
    assert len(messages) == 2  # one per column, with its count; a missing value is no news
    assert "'color'" in messages[0] and "3 value(s)" in messages[0] and "'purple'" in messages[0]
    assert "'size'" in messages[1] and "1 value(s)" in messages[1] and "'XL'" in messages[1]
    # they get the reserved "unknown" code, as a missing value does
    unknown = new.copy()
    unknown.loc[:, "color"] = [np.nan if v not in ("red", "green") else v for v in new["color"]]
    unknown.loc[:, "size"] = [np.nan if v == "XL" else v for v in new["size"]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # pandas 1.5's own internals under numpy 1.25 (the declared floors) warn when
        # scikit-learn takes .values of a mixed frame: harmless, gone from pandas 2.0.2 on
        warnings.filterwarnings(
            "ignore", message="np.find_common_type is deprecated", category=DeprecationWarning
        )
        np.testing.assert_array_equal(clf.predict_proba(unknown), proba)
        clf.predict_proba(frame)  # categories seen at fit: silent


def _out_of_memory(net, step):
    raise MemoryError


def test_memory_error_mid_fit_leaves_the_estimator_unfitted(monkeypatch):
    clf = _make("tabnet", batch_size=50, max_epochs=3)
    _fail_at(monkeypatch, 2, 1, _out_of_memory)
    with pytest.raises(MemoryError):
        clf.fit(X_IRIS, Y_IRIS)
    with pytest.raises(NotFittedError):
        clf.predict(X_IRIS)


@pytest.mark.parametrize(("y", "shown"), [([0.0] * 3, "0.0"), (["a"] * 3, "'a'"), ([7] * 3, "7")])
def test_single_class_error_shows_the_label_as_written(y, shown):
    # issue 27.5: it read np.float64(0.0)
    with pytest.raises(ValueError, match=rf"got 1 class: {re.escape(shown)}$"):
        EntmaxClassifier().fit(np.eye(3), y)


def test_text_in_a_plain_array_gets_a_hint_from_tabnet_too():
    # issue 27.5: TabNet gave numpy's bare "could not convert string to float"
    X = np.array([["a", "1"], ["b", "2"], ["c", "3"], ["a", "4"]], dtype=object)
    with pytest.raises(ValueError, match=r"could not convert.*DataFrame.*OrdinalEncoder"):
        TabNetEntmaxClassifier(max_epochs=1).fit(X, [0, 1, 0, 1])


def _dirty_frame(n=60):
    rng = np.random.default_rng(0)
    age = [str(int(v)) for v in rng.integers(18, 80, size=n)]
    age[3] = "?"
    return pd.DataFrame(
        {
            "age": pd.Series(age, dtype=object),
            "name": [f"passenger {i}" for i in range(n)],
            "colour": np.array(["red", "green", "blue"])[np.arange(n) % 3],
            "x": rng.normal(size=n),
        }
    )


def test_dirty_columns_are_named_in_warnings_at_fit():
    # issue 27.4: a numeric column with one stray "?" and an identifier column were embedded
    # as categories silently
    frame, y = _dirty_frame(), np.arange(60) % 2
    with pytest.warns(UserWarning) as record:
        clf = TabNetEntmaxClassifier(max_epochs=1, random_state=0).fit(frame, y)
    messages = [str(w.message) for w in record]
    (age,) = [m for m in messages if "'age'" in m]
    assert "98.3% of its values are numbers" in age and "'?'" in age
    (name,) = [m for m in messages if "'name'" in m]
    assert "60 distinct values in 60 rows" in name and "identifier" in name
    assert not [m for m in messages if "'colour'" in m or "'x'" in m]
    # at predict, a column whose values are mostly unseen says so
    new = _dirty_frame(10)
    new["name"] = [f"someone else {i}" for i in range(10)]
    with pytest.warns(UserWarning, match=r"'name'.*In 10 of 10 rows, most of them"):
        clf.predict_proba(new)


def test_named_categorical_columns_of_numbers_do_not_warn():
    frame = pd.DataFrame({"zip": np.arange(60) % 5, "x": np.linspace(0, 1, 60)})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        # (one epoch on labels no column predicts may predict one class, and says so: not
        # what this test is about)
        warnings.filterwarnings("ignore", message=".* predicts one class", category=UserWarning)
        TabNetEntmaxClassifier(max_epochs=1, categorical_features=["zip"]).fit(
            frame, np.arange(60) % 2
        )


# issue 58, point 8: a finite column too wide for float32's batch norm


def test_tabnet_refuses_a_finite_column_whose_variance_overflows_float32():
    X = X32[:, :3].copy()
    X[::2, 2] = 1e19  # finite, but its squares sum beyond float32's range
    with pytest.raises(ValueError, match=r"numeric column 2 spreads too widely.*Rescale"):
        FACTORIES["tabnet"]().fit(X, Y_IRIS)
    X[:, 2] = 1.7e18 + X32[:, 2] * 3e16  # timestamps in nanoseconds: large but narrow
    FACTORIES["tabnet"](max_epochs=1).fit(X, Y_IRIS)


def test_save_refuses_a_network_holding_non_finite_tensors(tmp_path):
    """Every file save writes loads: load refuses NaN and infinity, so save does."""
    from sk_entmax.persistence import save

    model = FACTORIES["tabnet"](max_epochs=1).fit(X32, Y_IRIS)
    name, buffer = next(
        (n, b) for n, b in model.net_.module_.named_buffers() if n.endswith("running_var")
    )
    buffer[0] = float("inf")
    path = tmp_path / "m.safetensors"
    with pytest.raises(ValueError, match=rf"tensor {re.escape(name)} holds values that are not"):
        save(model, path)
    assert not path.exists()


def test_integer_labels_beyond_int64_are_refused_with_the_way_out():
    """(issue 58, point 18) 10**20 + k: never one collapsed class; as text they fit."""
    y = np.array([10**20 + k % 3 for k in range(len(X32))], dtype=object)
    with pytest.raises(ValueError, match=r"beyond int64's range .*y\.astype\(str\)"):
        FACTORIES["sparsemax"]().fit(X32, y)
    clf = FACTORIES["sparsemax"](max_epochs=1).fit(X32, y.astype(str))
    assert len(clf.classes_) == 3


def test_the_wide_column_check_bounds_a_batch_not_the_whole_table():
    """300,000 nanosecond timestamps spread over about two years: no batch of 16,384 rows
    overflows float32, though the squares of all the rows would sum beyond it."""
    from sk_entmax._inputs.tabular import _MAX_SQUARED_SPREAD, _check_spread

    rng = np.random.default_rng(0)
    values = (1.7e18 + rng.uniform(-1, 1, size=(300_000, 1)) * 6e16).astype(np.float32)
    wide = values.astype(np.float64)
    assert ((wide - wide.mean()) ** 2).sum() > _MAX_SQUARED_SPREAD
    _check_spread(values, None, None, 16_384)
    with pytest.raises(ValueError, match="spreads too widely"):
        _check_spread(values, None, None, 300_000)
