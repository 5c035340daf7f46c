"""``n_jobs`` changes only the speed (issue 42): the same data and ``random_state`` give the
same fitted model at every ``n_jobs``, on an idle machine and on one whose every core is busy
with another process, for every mini-batch estimator; and the automatic batch sizes are
chosen for the device a fit trains on.

The data are large enough that torch's parallel operations run: before every training step ran
on one thread, ``n_jobs=1`` and ``n_jobs=2`` gave TabNet models whose probabilities differed
by 3.5e-5 here, and linear models with Adam by 2e-7 to 6e-7.
"""

from __future__ import annotations

import subprocess
import sys
import time
import warnings

import numpy as np
import pandas as pd
import pytest

from sk_entmax import (
    EntmaxClassifier,
    SparsemaxClassifier,
    TabNetEntmaxClassifier,
    TabNetEntmaxRegressor,
    TabNetPretrainer,
)
from sk_entmax._engine.threads import available_cores
from sk_entmax._tabnet.sizing import auto_batch_size, auto_virtual_batch_size

N_JOBS = (1, 2, 4, None)
TINY = {"n_d": 8, "n_a": 8, "n_steps": 2, "max_epochs": 2, "batch_size": 512}


def _data(n: int = 600, seed: int = 0, n_features: int = 12):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n_features)).astype(np.float32)
    logits = X[:, :3] @ np.array([[2.0, -1.0, 0.5], [0.5, 1.5, -1.0], [-1.0, 0.5, 2.0]])
    y = logits.argmax(axis=1)
    return X, y, (X[:, 0] * 2 + X[:, 1] ** 2).astype(np.float64)


ESTIMATORS = {
    "tabnet": (lambda: TabNetEntmaxClassifier(**TINY), "predict_proba", "y"),
    "tabnet-entmax15": (
        lambda: TabNetEntmaxClassifier(**TINY, entmax_mode="entmax15", faithful_masks=True),
        "predict_proba",
        "y",
    ),
    "tabnet-regressor": (lambda: TabNetEntmaxRegressor(**TINY), "predict", "target"),
    "pretrainer": (lambda: TabNetPretrainer(**TINY), "transform", None),
    "mlp": (
        lambda: EntmaxClassifier(hidden_layer_sizes=(256,), max_epochs=2, batch_size=1024),
        "predict_proba",
        "y",
    ),
    "adam": (
        lambda: SparsemaxClassifier(solver="adam", max_epochs=2, batch_size=1024),
        "predict_proba",
        "y",
    ),
}
#: the linear estimators' products need wider data and batches before torch splits them
#: across threads (2,000 x 100, batches of 1,024: 2e-7 to 6e-7 apart before)
WIDE = {"mlp", "adam"}


def _fitted_output(name: str, n_jobs, X, y, target) -> np.ndarray:
    make, method, kind = ESTIMATORS[name]
    estimator = make().set_params(n_jobs=n_jobs, random_state=0)
    with warnings.catch_warnings():
        # n_jobs=4 above the cores is capped with a warning: the point is the model
        warnings.filterwarnings("ignore", message=".*threads, but this process")
        if kind is None:
            estimator.fit(X)
        else:
            estimator.fit(X, y if kind == "y" else target)
        # every prediction at n_jobs=1: the fitted models are compared
        return np.asarray(getattr(estimator.set_params(n_jobs=1), method)(X))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_the_fitted_model_is_the_same_at_every_n_jobs(name):
    X, y, target = _data(2000, n_features=100) if name in WIDE else _data()
    outputs = {n_jobs: _fitted_output(name, n_jobs, X, y, target) for n_jobs in N_JOBS}
    for n_jobs in N_JOBS[1:]:
        assert np.max(np.abs(outputs[n_jobs] - outputs[1])) <= 1e-12, n_jobs


def test_predictions_are_the_same_at_every_n_jobs():
    X, y, _ = _data()
    clf = TabNetEntmaxClassifier(**TINY, random_state=0).fit(X, y)
    X_big = np.tile(X, (20, 1))  # 12,000 rows: torch's parallel operations run
    first = clf.set_params(n_jobs=1).predict_proba(X_big)
    for n_jobs in (2, None):
        other = clf.set_params(n_jobs=n_jobs).predict_proba(X_big)
        assert np.max(np.abs(other - first)) <= 1e-12
        assert np.array_equal(other == 0, first == 0)


def test_the_columns_chosen_are_the_same_at_every_n_jobs():
    """The default (faithful) TabNet chooses its columns with probes during its warm-up:
    the same columns and the same model at every n_jobs (a warm-up of 90 steps here)."""
    X, y, _ = _data()
    params = {**TINY, "batch_size": 256, "max_epochs": 32, "mask_warmup": 90}  # 3 steps an epoch
    kept, outputs = {}, {}
    for n_jobs in N_JOBS:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*threads, but this process")
            clf = TabNetEntmaxClassifier(**params, random_state=0, n_jobs=n_jobs).fit(X, y)
        tabnet = clf.net_.module_.tabnet
        kept[n_jobs] = (tabnet.selection.alive, tabnet.first_mask_logits.tolist())
        outputs[n_jobs] = clf.set_params(n_jobs=1).predict_proba(X)
    # the probes decided something: columns dropped, or the first step narrowed
    assert any(logit != 0 for logit in kept[1][1]), kept[1]
    for n_jobs in N_JOBS[1:]:
        assert kept[n_jobs] == kept[1], n_jobs
        assert np.max(np.abs(outputs[n_jobs] - outputs[1])) <= 1e-12, n_jobs


# ------------------------------------------------------------------ a busy machine

_BUSY = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass\n"


def test_the_model_is_the_same_on_a_machine_whose_every_core_is_busy():
    X, y, _ = _data(seed=1)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    idle = TabNetEntmaxClassifier(**TINY, random_state=0, n_jobs=1).fit(frame, y)
    expected = idle.predict_proba(frame)
    # one busy process per core, each ending by itself within a minute and killed at the end
    busy = [
        subprocess.Popen([sys.executable, "-c", _BUSY.format(seconds=60)])
        for _ in range(available_cores())
    ]
    try:
        time.sleep(0.2)
        assert all(process.poll() is None for process in busy)
        for n_jobs in (None, 2):
            loaded = TabNetEntmaxClassifier(**TINY, random_state=0, n_jobs=n_jobs).fit(frame, y)
            assert np.max(np.abs(loaded.predict_proba(frame) - expected)) <= 1e-12, n_jobs
    finally:
        for process in busy:
            process.kill()
        for process in busy:
            process.wait(timeout=10)


# ------------------------------------------------------------------ sizes for the device


def test_the_automatic_sizes_are_chosen_for_the_device():
    # a GPU takes large batches and ghost batches; a CPU keeps its own
    assert auto_batch_size(200_000, "cpu") == 1024
    assert auto_virtual_batch_size(1024, "cpu") == 128
    assert auto_batch_size(200_000, "cuda") == 16384
    assert auto_batch_size(200_000, "cuda:1") == 16384
    assert auto_virtual_batch_size(16384, "cuda") == 1024
    assert auto_batch_size(50_000, "cuda") == 4096
    assert auto_virtual_batch_size(4096, "cuda") == 256
    # small data: the same on both (several steps an epoch), never above the rows
    for n in (1, 10, 300, 3_300):
        assert auto_batch_size(n, "cuda") == auto_batch_size(n, "cpu") <= max(n, 1)
    assert auto_virtual_batch_size(8, "cuda") == auto_virtual_batch_size(8, "cpu") == 8
    # through the estimator's own hook, from its checked parameters
    clf = TabNetEntmaxClassifier()
    params = {"batch_size": "auto", "virtual_batch_size": "auto"}
    cpu, cuda = {**params, "device": "cpu"}, {**params, "device": "cuda"}
    assert clf._batch_size(cuda, 200_000) != clf._batch_size(cpu, 200_000)
    assert clf._virtual_batch_size(cuda, 16384) == 1024
    assert clf._virtual_batch_size(cpu, 16384) == 128
