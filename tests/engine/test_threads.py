"""torch threads: ``n_jobs`` is capped at the available cores (with a warning), and a call
leaves no pool of threads behind (issue 26).

The thread counts are taken in fresh subprocesses: torch's pools are process-wide, and the
pytest process has run other fits at other counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch

from sk_entmax import EntmaxClassifier
from sk_entmax._engine import threads as _threads
from sk_entmax._engine.threads import available_cores, resolve_n_jobs, torch_threads

# ----------------------------------------------------------------- the cap, in-process


def _cap_warnings(record) -> list[str]:
    return [str(w.message) for w in record if "threads, but this process" in str(w.message)]


def test_available_cores_prefers_process_cpu_count(monkeypatch):
    monkeypatch.setattr(_threads.os, "process_cpu_count", lambda: 3, raising=False)
    assert available_cores() == 3
    monkeypatch.setattr(_threads.os, "process_cpu_count", lambda: None, raising=False)
    assert available_cores() == 1
    monkeypatch.delattr(_threads.os, "process_cpu_count", raising=False)
    if hasattr(os, "sched_getaffinity"):
        assert available_cores() == len(os.sched_getaffinity(0))


def test_n_jobs_above_the_cores_is_capped_with_a_warning(monkeypatch):
    monkeypatch.setattr(_threads, "available_cores", lambda: 4)
    with pytest.warns(UserWarning) as record:
        assert resolve_n_jobs(4096, work=1e6) == 4
    (message,) = _cap_warnings(record)
    assert "n_jobs=4096" in message and "4096 threads" in message and "4 core(s)" in message
    assert record[0].filename == __file__  # the caller's line, not the package's
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_n_jobs(4, work=1e6) == 4
        assert resolve_n_jobs(3, work=1e6) == 3
        assert resolve_n_jobs(-1, work=1e6) == 4  # every core, no warning
        assert resolve_n_jobs(None, work=1e12) == 4  # None never warns, never exceeds


def test_an_estimator_warns_once_per_call_and_keeps_its_n_jobs(monkeypatch):
    monkeypatch.setattr(_threads, "available_cores", lambda: 1)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = EntmaxClassifier(n_jobs=3, random_state=0)
    calls = [
        ("fit", lambda: clf.fit(X, y)),
        ("predict_proba", lambda: clf.predict_proba(X)),
        ("predict", lambda: clf.predict(X)),
        ("decision_function", lambda: clf.decision_function(X)),
        ("score", lambda: clf.score(X, y)),
    ]
    before = torch.get_num_threads()
    for name, call in calls:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            call()
        messages = _cap_warnings(record)
        assert len(messages) == 1, (name, messages)
        assert "n_jobs=3 asks for 3 threads" in messages[0] and "1 core(s)" in messages[0]
        assert torch.get_num_threads() == before
    assert clf.get_params()["n_jobs"] == 3  # only the threads used are capped


# ---------------------------------------------------------- OS threads, in subprocesses

_SCENARIO = textwrap.dedent(
    """
    import json, os, sys, time, warnings
    import numpy as np
    import torch

    from sk_entmax import EntmaxClassifier
    from sk_entmax._engine.threads import available_cores, torch_threads

    # the caller's count: -1 for the available cores (torch's default counts the machine's
    # cores, not those of the process's affinity)
    CALLER_THREADS = int(sys.argv[1])
    torch.set_num_threads(available_cores() if CALLER_THREADS == -1 else CALLER_THREADS)

    def threads():
        return len(os.listdir("/proc/self/task"))

    def settled(bound):
        # the count once it is at most bound, waiting up to 3 s: released OpenMP workers
        # leave /proc/self/task only once they get a core to exit on
        for _ in range(300):
            count = threads()
            if count <= bound:
                break
            time.sleep(0.01)
        return count

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    X_big = rng.normal(size=(100_000, 4))  # large enough for parallel operations
    cores = available_cores()
    baseline = threads()
    bound = baseline + (1 if CALLER_THREADS == 1 else cores)
    out = {"cores": cores, "baseline": baseline, "steps": []}
    for n_jobs in json.loads(sys.argv[2]):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            clf = EntmaxClassifier(n_jobs=n_jobs, random_state=0).fit(X, y)
            after_fit = settled(bound)
            clf.predict_proba(X_big)
            after_predict = settled(bound)
        out["steps"].append({
            "n_jobs": n_jobs,
            "after_fit": after_fit,
            "after_predict": after_predict,
            "warnings": [str(w.message) for w in record if "core(s)" in str(w.message)],
            "torch_threads": torch.get_num_threads(),
        })
    if CALLER_THREADS == 1:
        # torch_threads itself, above a caller at 2 threads whose pool already exists
        big = torch.ones(1 << 20)
        torch.set_num_threads(2)
        big.add_(1)
        out["caller_2"] = threads()
        with torch_threads(8):
            big.add_(1)
            out["inside_8"] = threads()
        out["after_8"] = settled(out["caller_2"])
        out["restored"] = torch.get_num_threads()
    print(json.dumps(out))
    """
)


def _run(caller_threads: int, n_jobs: list) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", _SCENARIO, str(caller_threads), json.dumps(n_jobs)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _big(cores: int) -> int:
    return max(64, 2 * cores)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts Linux threads")
def test_n_jobs_above_the_cores_starts_no_more_threads_than_cores():
    cores = available_cores()
    out = _run(-1, [_big(cores), -1, None, 1])
    assert out["cores"] == cores
    base = out["baseline"]
    big, *others = out["steps"]
    # before the cap: 64 threads on 2 cores left 66 OS threads after the fit (OpenMP's pool
    # of 63 workers; 129 when torch's pthreadpool was first sized by the fit as well)
    assert big["after_fit"] <= base + cores, out
    assert big["after_predict"] <= base + cores, out
    assert len(big["warnings"]) == 2, out  # one for fit, one for predict_proba
    assert (
        f"n_jobs={_big(cores)}" in big["warnings"][0]
        and f"{cores} core(s)" in (big["warnings"][0])
    )
    for step in others:
        assert step["warnings"] == [], out
        assert step["after_fit"] <= base + cores and step["after_predict"] <= base + cores, out


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts Linux threads")
def test_a_caller_at_one_thread_gets_no_threads_left_behind():
    cores = available_cores()
    out = _run(1, [2, _big(cores)])
    base = out["baseline"]
    for step in out["steps"]:
        assert step["torch_threads"] == 1, out  # the caller's count is restored
        # OpenMP keeps at most one idle worker for a caller at one thread
        assert step["after_fit"] <= base + 1 and step["after_predict"] <= base + 1, out
    assert [len(step["warnings"]) for step in out["steps"]] == [2 if cores < 2 else 0, 2], out
    # torch_threads(8) above a caller at 2: OpenMP's 7 workers go back to the caller's 1
    assert out["inside_8"] > out["caller_2"], out
    assert out["after_8"] <= out["caller_2"], out
    assert out["restored"] == 2, out


def test_torch_threads_restores_the_count_after_an_error():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError, match="boom"), torch_threads(before + 1):
        assert torch.get_num_threads() == before + 1
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before
