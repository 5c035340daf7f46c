"""Data-parallel fits over ``torch.distributed`` processes (issue 49): the documented
``torchrun`` example on two CPU processes (gloo, loopback only) gives every process the same
model and rank 0's saved file loads; in one process, a group of one changes nothing."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch.distributed as dist
from loopback import free_port

from sk_entmax import (
    NonFiniteLossError,
    SparsemaxClassifier,
    TabNetEntmaxClassifier,
    TabNetEntmaxRegressor,
)
from sk_entmax.persistence import load
from sk_entmax.scale_out import data_parallel

EXAMPLE = Path(__file__).parents[2] / "examples" / "torchrun" / "tabnet_data_parallel.py"
pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is absent")


def _torchrun(*args: str) -> str:
    """Run the example on two processes; its output."""
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(free_port()),
        str(EXAMPLE),
        *args,
    ]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # torchrun and its workers in one group, killed together
    )
    try:
        output, _ = process.communicate(timeout=240)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0, output[-3000:]
    return output


def test_faithful_masks_drop_the_same_columns_on_every_process(tmp_path):
    """The column selection runs through (a warm-up of 200 steps: 1,200 rows per process in
    batches of 16, 5 epochs) on the losses averaged over the two processes: both drop the
    same columns, make the same check at the end of the warm-up (which may put them back),
    and end with the same model."""
    output = _torchrun(
        *("--rows", "3000", "--epochs", "5", "--batch-size", "16", "--faithful"),
        *("--mask-warmup", "200"),
        *("--out", str(tmp_path / "m.safetensors")),
    )
    unread = sorted(re.findall(r"rank (\d) of 2: never read (\[[^]]*\])", output))
    restored = sorted(re.findall(r"rank (\d) of 2: put back (\[[^]]*\])", output))
    assert [rank for rank, _ in unread] == [r for r, _ in restored] == ["0", "1"], output[-3000:]
    assert unread[0][1] == unread[1][1] and restored[0][1] == restored[1][1], (unread, restored)
    # the selection left columns out: certified never read, or put back by the check (or
    # both: a check that undid only the first step's narrowing keeps the drops out)
    assert unread[0][1] != "[]" or restored[0][1] != "[]", (unread, restored)
    lines = sorted(re.findall(r"rank (\d) of 2: (\d+) epochs, test accuracy ([\d.]+)", output))
    assert lines[0][1:] == lines[1][1:], lines


def test_the_torchrun_example_trains_one_model_on_two_processes(tmp_path):
    out = tmp_path / "model.safetensors"
    output = _torchrun(
        *("--rows", "1500", "--epochs", "3", "--batch-size", "128", "--out", str(out))
    )
    lines = sorted(re.findall(r"rank (\d) of 2: (\d+) epochs, test accuracy ([\d.]+)", output))
    assert [rank for rank, *_ in lines] == ["0", "1"], output[-3000:]
    # one model: the same epochs and the same accuracy on every process
    assert lines[0][1:] == lines[1][1:], lines
    model = load(out)
    assert model.n_iter_ == int(lines[0][1])
    assert model.feature_importances_.shape == (20,)


def test_a_group_of_one_changes_nothing(group_of_one):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    params = {"n_d": 4, "n_a": 4, "n_steps": 2, "max_epochs": 3, "random_state": 0}
    alone = TabNetEntmaxClassifier(**params).fit(X, y)
    with data_parallel():
        grouped = TabNetEntmaxClassifier(**params).fit(X, y)
    np.testing.assert_array_equal(grouped.predict_proba(X), alone.predict_proba(X))
    np.testing.assert_array_equal(grouped.feature_importances_, alone.feature_importances_)
    target = X[:, 0] * 2 + X[:, 1]
    alone = TabNetEntmaxRegressor(**params).fit(X, target)
    with data_parallel():
        grouped = TabNetEntmaxRegressor(**params).fit(X, target)
    np.testing.assert_array_equal(grouped.predict(X), alone.predict(X))
    # a faithful fit's column selection decides on the group's mean losses (here its own)
    faithful = {**params, "faithful_masks": True, "max_epochs": 20, "mask_warmup": 60}
    alone = TabNetEntmaxClassifier(**faithful).fit(X, y)
    with data_parallel():
        grouped = TabNetEntmaxClassifier(**faithful).fit(X, y)
    assert alone.never_read(X).any() and grouped.net_.module_.tabnet.selection_reduce is None
    np.testing.assert_array_equal(grouped.predict_proba(X), alone.predict_proba(X))
    # a diverging fit stops on every process at the same step, with one error
    with data_parallel(), pytest.raises(NonFiniteLossError, match="on every one"):
        TabNetEntmaxRegressor(**params, lr=1e30, clip_value=None).fit(X, target * 1e30)
    with data_parallel(), pytest.raises(ValueError, match="L-BFGS"):
        SparsemaxClassifier().fit(X, y)


def test_data_parallel_needs_a_process_group():
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="torchrun"), data_parallel():
        pass


def test_shards_that_learn_different_classes_are_refused_on_every_process(
    group_of_one, monkeypatch
):
    """A second process is played by what a first fit sent (issue 58, point 7): shards of
    equal size whose labels differ ([0, 1, 2] and [0, 1, 3]) are refused before any
    collective of their networks, naming classes_ alone."""
    import sk_entmax._engine.distributed as distributed

    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3)).astype(np.float32)
    y = np.arange(60) % 3
    params = {"solver": "adam", "max_epochs": 1, "random_state": 0}
    real_gather, sent = dist.all_gather, []

    def record(out, tensor, group=None):
        sent.append(tensor.clone())
        return real_gather(out, tensor, group=group)

    monkeypatch.setattr(distributed.dist, "all_gather", record)
    with data_parallel():
        SparsemaxClassifier(**params).fit(X, y)

    def as_two(out, tensor, group=None):  # rank 0 sends this fit's, rank 1 the first fit's
        out[0].copy_(tensor)
        out[1].copy_(sent[0])

    monkeypatch.setattr(distributed.dist, "all_gather", as_two)
    monkeypatch.setattr(distributed.AverageGradients, "_world", lambda self: 2)
    with data_parallel(), pytest.raises(ValueError, match=r"disagree on classes_ \(ranks \[1\]"):
        SparsemaxClassifier(**params).fit(X, np.where(y == 2, 3, y))


def test_running_statistics_that_average_to_infinity_stop_every_process(group_of_one, monkeypatch):
    """(issue 58, point 8) With the fit's check of wide columns switched off, a column of
    1e19 makes a batch norm's running variance infinite: the epoch's average says so."""
    import sk_entmax._inputs.tabular as tabular

    monkeypatch.setattr(tabular, "_check_spread", lambda *args: None, raising=False)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 3)).astype(np.float32)
    X[::2, 2] = 1e19
    params = {"n_d": 4, "n_a": 4, "n_steps": 1, "max_epochs": 1, "random_state": 0}
    with data_parallel(), pytest.raises(NonFiniteLossError, match="running statistics"):
        TabNetEntmaxClassifier(**params).fit(X, (X[:, 0] > 0).astype(int))
