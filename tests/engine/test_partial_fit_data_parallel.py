"""``partial_fit`` inside ``data_parallel()`` averages over the processes, as ``fit`` does
(issue 61.1): two CPU processes (gloo, loopback only) each stream their own shard, and end
with one model, the one a single process learns from both shards' rows together; a call
outside the block trains on its own shard again.

Run as a script, this file is one of the two processes (see :func:`_worker`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.distributed as dist
from loopback import free_port

from sk_entmax._engine.callbacks import StoppingRule
from sk_entmax._engine.net import FenchelYoungNet, NonFiniteLossError
from sk_entmax.nn.protocols import EngineModule, engine_modules

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is absent")

ROWS, CALLS = 48, 3  # rows per shard; partial_fit calls inside data_parallel
#: one Adam step per call (a batch is the whole shard); C so large that the penalty, scaled
#: by each process's own rows seen, cannot tell two processes from one
PARAMS = {"alpha": 1.5, "C": 1e12, "average": True, "random_state": 0}


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2 * ROWS, 5)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 1).astype(int)
    return X, y


def _weights(model) -> np.ndarray:
    return np.concatenate([p.detach().numpy().ravel() for p in model.net_.module_.parameters()])


def _worker(rank: int, port: int, out: str) -> None:
    """One process: ``CALLS`` calls on its shard (every other row) inside data_parallel,
    then one outside; saves its weights after each part."""
    from sk_entmax import EntmaxClassifier
    from sk_entmax.scale_out import data_parallel

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        X, y = _data()
        X, y = X[rank::2], y[rank::2]
        model = EntmaxClassifier(**PARAMS, batch_size=ROWS)
        with data_parallel():
            for _ in range(CALLS):
                model.partial_fit(X, y, classes=[0, 1, 2])
        inside = _weights(model)
        model.partial_fit(X, y)  # outside: this process's shard alone
        np.savez(out, inside=inside, outside=_weights(model))
    finally:
        dist.destroy_process_group()


def test_partial_fit_averages_over_the_processes(tmp_path):
    port = free_port()
    outs = [str(tmp_path / f"rank{rank}.npz") for rank in range(2)]
    processes = [
        subprocess.Popen(
            [sys.executable, __file__, str(rank), str(port), outs[rank]],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        for rank in range(2)
    ]
    logs = []
    try:
        for process in processes:
            logs.append(process.communicate(timeout=120)[0])
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    for process, log in zip(processes, logs, strict=True):
        assert process.returncode == 0, log[-3000:]
    ranks = [np.load(out) for out in outs]
    # one model on both processes, though each trained on its own rows
    np.testing.assert_array_equal(ranks[0]["inside"], ranks[1]["inside"])
    # the model one process learns from the rows of both shards, a call's batch being
    # both shards' (the mean of the two batch means is the mean over both batches)
    from sk_entmax import EntmaxClassifier

    X, y = _data()
    order = np.concatenate([np.arange(0, 2 * ROWS, 2), np.arange(1, 2 * ROWS, 2)])
    alone = EntmaxClassifier(**PARAMS, batch_size=2 * ROWS)
    for _ in range(CALLS):
        alone.partial_fit(X[order], y[order], classes=[0, 1, 2])
    np.testing.assert_allclose(ranks[0]["inside"], _weights(alone), rtol=1e-5, atol=1e-6)
    # outside data_parallel a call trains on its own shard: the processes part
    assert not np.allclose(ranks[0]["outside"], ranks[1]["outside"])


def test_each_call_averages_as_it_is_made_inside_or_outside(group_of_one, monkeypatch):
    """A net built inside data_parallel (here by fit) trains alone in a partial_fit call
    outside it, and averaging again in a call inside; a call that fails gives the net
    back its callbacks."""
    from sk_entmax import EntmaxClassifier
    from sk_entmax.scale_out import data_parallel

    X, y = _data()
    model = EntmaxClassifier(**PARAMS, solver="adam", max_epochs=2, batch_size=16)

    def averaging() -> bool:
        return "data_parallel" in dict(model.net_.callbacks_)

    with data_parallel():
        model.fit(X, y)
    assert averaging()
    model.partial_fit(X, y)
    assert not averaging()
    with data_parallel():
        model.partial_fit(X, y)
    assert averaging()
    callbacks = model.net_.callbacks
    real, seen = FenchelYoungNet.get_loss, []

    def diverge(self, *args, training=False, **kwargs):  # the third batch's loss is inf
        seen.append(training)
        loss = real(self, *args, training=training, **kwargs)
        return loss * float("inf") if sum(seen) >= 3 else loss

    monkeypatch.setattr(FenchelYoungNet, "get_loss", diverge)
    with pytest.raises(NonFiniteLossError):
        model.partial_fit(X, y)  # outside: without the averaging, until it fails
    assert model.net_.callbacks is callbacks and averaging()


@pytest.mark.filterwarnings("ignore::UserWarning")  # a one-epoch TabNet's diagnostics
def test_the_engine_asks_modules_through_the_protocol():
    """The stopping rule and the data-parallel callback find the modules that speak to
    the engine by the protocol: a TabNet network's encoder."""
    from sk_entmax import TabNetEntmaxClassifier

    X, y = _data()
    tabnet = TabNetEntmaxClassifier(n_d=2, n_a=2, n_steps=1, max_epochs=1, random_state=0)
    module = tabnet.fit(X, y).net_.module_
    assert engine_modules(module) == [module.tabnet]
    assert isinstance(module.tabnet, EngineModule) and not module.tabnet.settling

    class Settling(torch.nn.Module):
        settling = True
        selection_reduce = None
        selection_processes = 1

    rule = StoppingRule(monitor="train_loss")
    rule.settling_ = False
    rule.on_epoch_end(SimpleNamespace(module_=torch.nn.Sequential(Settling())))
    assert rule.settling_  # no epoch counted while a module settles
    assert engine_modules(torch.nn.Linear(2, 2)) == []


if __name__ == "__main__":
    _worker(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
