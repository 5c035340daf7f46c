"""torch's intra-op threads for the duration of a fit or a prediction, then restored.

PyTorch starts one intra-op thread per core. Its OpenMP threads wait for each other at the end
of every operation, so when another process keeps a core busy, every small operation waits
for a thread that is not running: a wine fit took 15.5 s at two threads against 0.34 s at
one, and a 2,000-row TabNet epoch 0.95 s against 0.08 s. And a fit's rounding depends on its
thread count (torch's parallel sums and matrix products split their work by it), which
training amplifies: TabNet models fitted at one and two threads differed by 3.5e-5 in their
probabilities.

So training never runs on more than one torch thread (:data:`TRAINING_THREADS`), whatever
``n_jobs`` is: every mini-batch step (TabNet, the pretrainer, hidden layers, Adam,
``partial_fit``) and whatever a fit computes after training (feature importances, the
multi-label support temperature). The same data and seed then give the same model, bit for
bit, at every ``n_jobs``, idle or busy, and a busy core cannot stall a fit. On these networks'
batches (TabNet's automatic batches of at most 1,024 rows, the linear estimators' 200) one
thread is also the fastest measured on an idle machine: a TabNet epoch of 3,300 rows took
0.083 s at one thread and 0.094 s at two, one of 50,000 rows 0.64 s and 0.69 s; and running
the ghost batches of a step in parallel Python threads (each on one torch thread) was 0.69 to
0.90 times as fast as running them in turn at batches of 256 to 1,024 rows (the interpreter
lock serialises their many small operations). The linear estimators' L-BFGS fits use
``n_jobs`` without changing the model: they evaluate their objective in fixed blocks of rows
on a pool of one-thread workers (:mod:`sk_entmax._engine.solver`), added in the blocks'
order.

Predictions (``predict_proba``, ``decision_function``, ``explain``, ``transform``) use
``n_jobs`` the same way: fixed blocks of rows, each on one torch thread, spread over a pool
of ``n_jobs`` workers (:func:`sk_entmax._engine.inference.map_row_blocks`), so they are the
same at every ``n_jobs`` and a busy core slows only its worker's blocks. The estimators set
the calling thread's count for each call and put back the caller's setting afterwards, after
an error too. The count never depends on the machine's momentary load: ``n_jobs=None`` picks
it from the task's size and the cores alone.

torch keeps the count per calling thread (an OpenMP setting), so fits running in threads of
one process (joblib's threading backend, a Dask worker with several threads) each set and
restore their own, and none changes another's.

Never more threads than cores. :func:`resolve_n_jobs` caps an explicit ``n_jobs`` at the
cores this process may run on (:func:`available_cores`) and warns (a ``UserWarning``, once
per call); the estimator's ``n_jobs`` keeps the value set. Threads beyond the cores only wait
for each other: ``n_jobs=4096`` (set by a user, or read from a model file) scored 200,000
rows in 28 s on two cores against 0.03 s at ``n_jobs=-1``, and left 3,711 idle OS threads.

What a call leaves behind (measured with torch 2.13, CPU build, GNU OpenMP, on Linux).
Raising torch's count starts threads in two process-wide pools; torch's inter-op pool is not
involved (no inter-op thread starts).

- The calling thread's OpenMP (libgomp) pool grows to ``n - 1`` workers at the first
  parallel operation run at ``n`` threads, and does not shrink when the count is restored:
  it releases its surplus workers at the next parallel operation run at a smaller count, and
  frees them all only when the calling thread ends. So after a count it raised,
  :func:`torch_threads` runs one such operation (a 64 KiB fill) at the caller's count: the
  pool keeps ``before - 1`` workers, what the caller's own next parallel operation starts
  anyway. At a count of 1 torch runs everything inline (no parallel region docks the pool),
  so that operation runs at 2 threads, and one idle worker (parked on a futex, no CPU)
  stays until the thread ends: no public torch API releases it.
- The pthreadpool (XNNPACK's and QNNPACK's, unused by these estimators' networks) is created
  by the process's first ``torch.set_num_threads`` with that many threads, and never resized:
  later counts only cap the threads it uses. :func:`torch_threads` sets the caller's count
  before raising it, so a first setting sizes it by the caller's count, not by ``n_jobs``.
  (A first setting below the caller's count, as ``n_jobs=None`` takes one thread on small
  data, leaves the pool that small for the rest of the process; that is torch's own
  behaviour at any ``torch.set_num_threads``.)

OS threads of a fresh process on 2 cores (3 after ``import sk_entmax``: the main thread and
two idle OpenBLAS workers), after a fit on 300 rows, then after ``predict_proba`` on 200,000:

=======================================  ================  ==============
caller's count, ``n_jobs``               before the cap    with the cap
=======================================  ================  ==============
2 (torch's default), ``64``              129, then 67      4, 4
2, ``3``                                 7, then 6         4, 4
2, ``-1`` or ``2``                       4, 4              4, 4
2, ``None``                              3, 4              3, 4
1, ``2``                                 4, 4              4, 4
1, ``64``                                66, 66            4, 4
=======================================  ================  ==============

:func:`torch_threads` itself, at counts above the 2 cores (a caller whose pool exists):
caller at 2, block at 8: 4 threads, 10 inside, 10 after before this change, 4 now; caller
at 4, block at 16: 8, 20, 20 before, 8 now; caller at 1, block at 8: 2, 9, 9 before, 3 now.

The guarantee: the threads used never exceed the available cores, and a call leaves behind
at most what the caller's own count starts at its next parallel operation (``before - 1``
OpenMP workers; one when the caller runs at one thread), plus, when it is the process's
first ``torch.set_num_threads``, a pthreadpool of ``before - 1`` workers.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import torch

__all__ = ["TRAINING_THREADS", "available_cores", "resolve_n_jobs", "torch_threads"]

#: torch threads of every training step, whatever ``n_jobs`` is: the model then cannot
#: depend on ``n_jobs`` (torch's parallel sums round differently at each thread count, and
#: training amplifies it), and a busy core cannot stall the fit. One thread is also the
#: fastest measured on these networks' batches (see the module docstring)
TRAINING_THREADS = 1

#: floating-point work (multiply-adds per pass over the data) from which a second thread
#: pays for itself on an idle machine; below it, one thread is as fast or faster (measured
#: with benchmarks/bench_linear_scale.py: at 200k x 20 x 5 classes, ~4.5e7 per pass, two
#: threads fit in 0.43 s against 0.60 s idle, and in 1.51 s against 0.58 s with one core
#: busy; at 20k rows, ~4.5e6, one and two threads tie idle)
_WORK_PER_THREAD = 1e7


#: this package's directory: a warning names the first caller outside it
_PACKAGE_DIR = os.path.join(os.path.dirname(__file__), "")

#: elements of the operation that docks OpenMP's surplus workers: above torch's grain size
#: (32768), so torch runs it as a parallel region
_DOCK_ELEMENTS = 1 << 16


def available_cores() -> int:
    """The cores this process may run on: ``os.process_cpu_count()`` (Python 3.13+), else
    its CPU affinity where the OS reports it, else the machine's cores."""
    process_cpu_count = getattr(os, "process_cpu_count", None)
    if process_cpu_count is not None:  # Python 3.13+
        return max(1, process_cpu_count() or 1)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS and Windows
        return max(1, os.cpu_count() or 1)


def _caller_stacklevel() -> int:
    """``stacklevel`` for a ``warnings.warn`` in the function that calls this one: the first
    frame outside this package (the user's call of ``fit``, ``predict_proba``, ...), however
    deep in the package the warning is raised."""
    level = 1
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


def resolve_n_jobs(n_jobs: Any, work: float) -> int:
    """The number of torch threads for ``n_jobs`` and a task of ``work`` multiply-adds,
    never more than the cores this process may run on.

    Every estimator method that sets torch's threads (``fit``, ``partial_fit``,
    ``predict_proba``, ``decision_function``, ``explain``, ...) takes its count from here,
    once per call.

    Parameters
    ----------
    n_jobs : int or None
        The estimator's ``n_jobs`` as its constraint table checked it (None, -1 or an int
        >= 1; an estimator never passes an unchecked value). ``None`` picks by the size of
        the task and the cores alone, never by the machine's load (so results do not change
        when another process is busy): one thread per ``1e7`` multiply-adds of a pass (at
        least one), never more than the available cores. ``-1`` uses every available core
        (:func:`available_cores`). A
        positive int uses that many threads, capped at the available cores: threads beyond
        them only wait for each other (``n_jobs=4096`` scored 200,000 rows in 28 s on two
        cores, against 0.03 s at two threads).
    work : float
        Multiply-adds of one pass over the data (rows x features x outputs, say).

    Returns
    -------
    int
        A thread count between 1 and :func:`available_cores`.

    Warns
    -----
    UserWarning
        When a positive ``n_jobs`` exceeds the available cores (naming ``n_jobs``, the count
        asked for and the cap). The estimator's ``n_jobs`` keeps its value; only the
        threads used are capped.
    """
    cores = available_cores()
    if n_jobs is None:
        return max(1, min(int(work // _WORK_PER_THREAD), cores))
    if n_jobs == -1:
        return cores
    n_jobs = int(n_jobs)
    if n_jobs > cores:
        warnings.warn(
            f"n_jobs={n_jobs} asks for {n_jobs} threads, but this process may run on "
            f"{cores} core(s): using {cores} threads (more would only wait for each other; "
            "n_jobs=-1 uses every available core)",
            UserWarning,
            stacklevel=_caller_stacklevel(),
        )
        return cores
    return n_jobs


def _dock_openmp_workers(count: int) -> None:
    """Release the calling thread's OpenMP workers beyond ``count - 1`` (at least one).

    libgomp keeps the workers of its largest team until a parallel region with a smaller team
    starts in the same thread; torch runs an operation as a parallel region of its whole
    thread count when it has more elements than its grain size. At a count of 1 torch runs
    everything inline, so the region runs at 2 threads (keeping one worker).
    """
    if count >= 2:
        torch.empty(_DOCK_ELEMENTS, dtype=torch.uint8).fill_(0)
        return
    torch.set_num_threads(2)
    try:
        torch.empty(_DOCK_ELEMENTS, dtype=torch.uint8).fill_(0)
    finally:
        torch.set_num_threads(count)


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads, then restore the caller's count.

    When ``n`` is above the caller's count, the caller's count is set first (so torch's
    pthreadpool, sized by the process's first setting, takes the caller's size), and after
    the block the OpenMP workers started beyond the caller's count are released (see the
    module docstring for what remains).
    """
    before = torch.get_num_threads()
    if n != before:
        if n > before:
            torch.set_num_threads(before)
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
        if n > before and not (before == 1 and n == 2):
            _dock_openmp_workers(before)
