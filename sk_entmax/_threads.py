"""torch's intra-op threads for the duration of a fit or a prediction, then restored.

PyTorch starts one intra-op thread per core. Its OpenMP threads wait for each other at the end
of every operation, so when another process keeps one core busy, every small operation of a
fit waits for a thread that is not running: a wine fit took 15.5 s at two threads against
0.34 s at one. The estimators therefore set the thread count themselves (their ``n_jobs``
parameter) around ``fit``, ``partial_fit``, ``predict_proba``, ``decision_function`` and
``explain``, and put back the caller's setting afterwards, after an error too.

torch keeps the count per calling thread (an OpenMP setting), so fits running in threads of
one process (joblib's threading backend, a Dask worker with several threads) each set and
restore their own, and none changes another's.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

import torch

__all__ = ["available_cores", "resolve_n_jobs", "torch_threads"]

#: floating-point work (multiply-adds per pass over the data) from which a second thread
#: pays for itself on an idle machine; below it, one thread is as fast or faster (measured
#: with benchmarks/bench_linear_scale.py: at 200k x 20 x 5 classes, ~4.5e7 per pass, two
#: threads fit in 0.43 s against 0.60 s idle, and in 1.51 s against 0.58 s with one core
#: busy; at 20k rows, ~4.5e6, one and two threads tie idle)
_WORK_PER_THREAD = 1e7

#: how often, and how far apart, the machine's runnable tasks are counted before a
#: multi-threaded task (about 8 ms in all)
_SAMPLES = 8
_SAMPLE_GAP_SECONDS = 0.001


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS reports it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS and Windows
        return max(1, os.cpu_count() or 1)


def _runnable_tasks(proc: str = "/proc") -> int | None:
    """Tasks of other processes running or ready to run now, from /proc (Linux); None
    where there is none.

    The machine's count (/proc/loadavg) includes this process's own threads: this one, and
    torch's OpenMP workers, which spin for a while after each parallel operation. Those are
    counted in /proc/self/task and left out.
    """
    try:
        with open(f"{proc}/loadavg") as loadavg:
            total = int(loadavg.read().split()[3].split("/")[0])
        own = 0
        for task in os.listdir(f"{proc}/self/task"):
            try:
                with open(f"{proc}/self/task/{task}/stat") as stat:
                    line = stat.read()
            except OSError:  # the thread ended meanwhile
                continue
            state = line.rindex(")") + 2  # the state follows the (name), which may hold ")"
            own += line[state : state + 1] == "R"
    except (OSError, ValueError, IndexError):
        return None
    return max(0, total - max(own, 1))


def _idle_cores() -> float:
    """Cores that other processes leave idle right now.

    Other processes' runnable tasks are counted 8 times 1 ms apart (Linux), so a process
    that started a second ago counts; the 1-minute load average would take a minute to show
    it, and is the fallback elsewhere.
    """
    cores = os.cpu_count() or available_cores()
    counts = []
    for i in range(_SAMPLES):
        count = _runnable_tasks()
        if count is None:
            break
        counts.append(count)
        if i + 1 < _SAMPLES:
            time.sleep(_SAMPLE_GAP_SECONDS)
    if counts:
        return max(0.0, cores - sum(counts) / len(counts))
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - Windows
        return float(cores)
    return max(0.0, cores - load)


def resolve_n_jobs(n_jobs: Any, work: float) -> int:
    """The number of torch threads for ``n_jobs`` and a task of ``work`` multiply-adds.

    Parameters
    ----------
    n_jobs : int or None
        The estimator's ``n_jobs`` as its constraint table checked it (None, -1 or an int
        >= 1; an estimator never passes an unchecked value). ``None`` picks by the size of
        the task: one thread, unless the task is large enough for more to pay (about ``1e7``
        multiply-adds per pass per thread); then as many as the cores that other processes
        leave idle (sampled over about 8 ms), never more than the available cores. On a
        machine with a busy core, threads that wait for each other at every operation are
        slower than one. ``-1`` uses every available core, a positive
        int that many threads.
    work : float
        Multiply-adds of one pass over the data (rows x features x outputs, say).

    Returns
    -------
    int
        A thread count >= 1.
    """
    if n_jobs is None:
        wanted = min(int(work // _WORK_PER_THREAD), available_cores())
        if wanted <= 1:
            return 1
        return max(1, min(wanted, int(_idle_cores() + 0.25)))
    if n_jobs == -1:
        return available_cores()
    return int(n_jobs)


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads, then restore the caller's count."""
    before = torch.get_num_threads()
    if n != before:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
