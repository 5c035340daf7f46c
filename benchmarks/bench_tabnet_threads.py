"""TabNet's time per epoch at each ``n_jobs``, idle and with every core busy, against
pytorch-tabnet at each thread count (issue 42).

Run from the repository root (``pytorch-tabnet`` is needed by this benchmark only)::

    python3 -m pip install pytorch-tabnet==4.1.0
    PYTHONPATH=. python3 benchmarks/bench_tabnet_threads.py          # 3,300, 50,000, 200,000 rows
    PYTHONPATH=. python3 benchmarks/bench_tabnet_threads.py --sizes 3300 --repeats 3
    PYTHONPATH=. python3 benchmarks/bench_tabnet_threads.py --quick  # checks the script

What runs, per condition ("idle", then "loaded": one process per core spinning in a Python
loop, started by this script and killed when the condition ends) and per size (rows of
``make_classification(n_features=20, n_informative=8, random_state=0)``, standardized):

- ours: ``TabNetEntmaxClassifier(random_state=r, max_epochs=E, patience=E)`` at its defaults
  (``batch_size`` and ``virtual_batch_size`` "auto") with ``n_jobs`` 1, 2 and None (the
  default);
- pytorch-tabnet: ``TabNetClassifier(seed=r)`` with our automatic batch and ghost batch sizes
  on a CPU (``helpers.batch_sizes``: equal sizes on both sides), the last batch kept, no
  early stopping, at torch threads 1, 2 and torch's default (the machine's cores), set with
  ``torch.set_num_threads``.

The script uses the public API only. Up to commit 3711e74 it also fitted "ours before", the
default as it trained up to f441029 (each training step on the torch threads that
``n_jobs=None`` resolves to), by patching private globals of the package while it ran; that
column's figures are on the benchmark's page, and the script of 3711e74 still makes them.

"epoch s" is the median over epochs 2..E of each fit's epoch times (skorch's ``dur``; a
callback around each pytorch-tabnet epoch), then the median over ``--repeats`` fits. A
pytorch-tabnet fit still running after ``--cap`` seconds (default 60: a busy core can stall
torch's threads for minutes an epoch) is cut, and its epoch is estimated as its median
batch time (after the first three batches) times the batches of an epoch, marked "~" in the
table. Ours is never cut: it trains on one torch thread at every ``n_jobs``, which a busy
core cannot stall. The fits of one repeat run one after the other in one process, in an
order that rotates with the repeat. Run each condition and size in a process of its own
(``--conditions``, ``--sizes``, ``--json``) and print the whole table with ``--merge``: in
one long process the later fits ran slower than in a fresh one, which is the process's
state, not the setting (the figures are on ``doc/benchmarks/bench_tabnet_threads.md``).
Ratios are medians over the repeats of the per-repeat ratios: "default/1" (ours,
n_jobs=None over n_jobs=1: the loaded-machine goal is at most 1.5) and "ours/ref 1 thread"
(at most 1).
``--json PATH`` writes every fit's figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np
import torch

# the script's folder is on sys.path when it runs
from helpers import EpochTimer, batch_sizes
from pytorch_tabnet.callbacks import Callback
from pytorch_tabnet.tab_model import TabNetClassifier
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from sk_entmax import TabNetEntmaxClassifier

SIZES = (3_300, 50_000, 200_000)
#: a busy process: spins until it has run an hour or this script has ended (its parent changes)
BUSY = (
    "import os, time\nparent, end = os.getppid(), time.monotonic() + 3600\n"
    "while time.monotonic() < end and os.getppid() == parent:\n    pass\n"
)
OURS = (("ours n_jobs=1", 1), ("ours n_jobs=2", 2), ("ours default", None))
REFERENCE = (("ref 1 thread", 1), ("ref 2 threads", 2), ("ref default", None))


def available_cores() -> int:
    """The cores this process may run on: its CPU affinity where the OS reports it, else the
    machine's cores (what ``n_jobs=-1`` uses)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS and Windows
        return max(1, os.cpu_count() or 1)


def default_epochs(n_rows: int) -> int:
    return 10 if n_rows <= 5_000 else (4 if n_rows <= 60_000 else 3)


def data(n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    X, y = make_classification(n_rows, 20, n_informative=8, random_state=0)
    return StandardScaler().fit_transform(X).astype(np.float32), y


class Clock:
    """Times the training batches of a fit and stops it (KeyboardInterrupt) once it has run
    ``cap`` seconds: a fit stalled by busy cores is then measured on the batches it ran."""

    def __init__(self, cap: float) -> None:
        self.cap, self.start, self.batches, self._begin = cap, time.perf_counter(), [], 0.0
        self.cut = False

    def begin(self) -> None:
        self._begin = time.perf_counter()

    def end(self) -> None:
        now = time.perf_counter()
        self.batches.append(now - self._begin)
        if now - self.start > self.cap:
            self.cut = True
            raise KeyboardInterrupt


class ReferenceClock(Callback):
    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock

    def on_batch_begin(self, batch, logs=None):
        self.clock.begin()

    def on_batch_end(self, batch, logs=None):
        self.clock.end()


def epoch_figure(epochs: list[float], clock: Clock, n_batches: int) -> tuple[float, bool]:
    """Seconds per epoch: the median of epochs 2.. when the fit ran at least two whole
    epochs, else (a fit cut at its time cap) the median batch time after the first three
    batches times the batches of an epoch; and whether it was estimated that way."""
    if not clock.cut and len(epochs) >= 2:
        return statistics.median(epochs[1:]), False
    times = clock.batches[3:] or clock.batches
    return statistics.median(times) * n_batches, True


def ours(X, y, n_jobs, seed: int, epochs: int, cap: float) -> tuple[float, bool]:
    """Seconds per epoch of our fit at ``n_jobs`` (never cut: ``cap`` is unused), and
    False (not estimated)."""
    clf = TabNetEntmaxClassifier(
        random_state=seed, max_epochs=epochs, patience=epochs, n_jobs=n_jobs
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        clf.fit(X, y)
    durations = [float(d) for d in clf.net_.history[:, "dur"]]
    return statistics.median(durations[1:] or durations), False


def reference(X, y, threads, seed: int, epochs: int, cap: float) -> tuple[float, bool]:
    batch, virtual = batch_sizes(len(X))
    timer, clock = EpochTimer(), Clock(cap)
    previous = torch.get_num_threads()
    torch.set_num_threads(available_cores() if threads is None else threads)
    try:
        model = TabNetClassifier(seed=seed, verbose=0, device_name="cpu")
        with warnings.catch_warnings(), contextlib.suppress(KeyboardInterrupt):
            warnings.simplefilter("ignore", UserWarning)
            model.fit(
                X,
                y,
                max_epochs=epochs,
                patience=0,
                batch_size=batch,
                virtual_batch_size=virtual,
                drop_last=False,
                callbacks=[timer, ReferenceClock(clock)],
            )
    finally:
        torch.set_num_threads(previous)
    return epoch_figure(timer.durations, clock, -(-len(X) // batch))


@contextlib.contextmanager
def condition(name: str):
    busy = []
    if name == "loaded":
        busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(available_cores())]
        time.sleep(0.5)
    try:
        yield
    finally:
        for process in busy:
            process.kill()
        for process in busy:
            process.wait(timeout=10)


def run(conditions, sizes, repeats: int, epochs_for, cap: float) -> list[dict]:
    rows = []
    runs = [*((name, ours, arg) for name, arg in OURS), *((n, reference, a) for n, a in REFERENCE)]
    for cond in conditions:
        with condition(cond):
            for n_rows in sizes:
                X, y = data(n_rows)
                epochs = epochs_for(n_rows)
                for repeat in range(repeats):
                    shift = repeat % len(runs)
                    for name, fit, arg in runs[shift:] + runs[:shift]:
                        start = time.perf_counter()
                        epoch_s, estimated = fit(X, y, arg, repeat, epochs, cap)
                        rows.append(
                            {
                                "condition": cond,
                                "rows": n_rows,
                                "repeat": repeat,
                                "fit": name,
                                "epoch_s": epoch_s,
                                "estimated": estimated,
                                "fit_s": time.perf_counter() - start,
                            }
                        )
                        print(json.dumps(rows[-1]), flush=True)
    return rows


def _ratio(rows, cond, n_rows, top, bottom) -> float:
    per = {}
    for r in rows:
        if r["condition"] == cond and r["rows"] == n_rows:
            per.setdefault(r["repeat"], {})[r["fit"]] = r["epoch_s"]
    values = [p[top] / p[bottom] for p in per.values() if top in p and bottom in p]
    return statistics.median(values) if values else float("nan")


def table(rows) -> str:
    names = [name for name, _ in OURS] + [name for name, _ in REFERENCE]
    head = "| condition | rows | " + " | ".join(names) + " | default/1 | ours/ref 1 thread |"
    lines = [head, "|" + "---|" * (len(names) + 4)]
    keys = sorted(
        {(r["condition"], r["rows"]) for r in rows}, key=lambda k: (k[0] != "idle", k[1])
    )
    for cond, n_rows in keys:
        cells = []
        for name in names:
            values = [
                r["epoch_s"]
                for r in rows
                if r["condition"] == cond and r["rows"] == n_rows and r["fit"] == name
            ]
            cut = any(
                r["estimated"]
                for r in rows
                if r["condition"] == cond and r["rows"] == n_rows and r["fit"] == name
            )
            text = f"{statistics.median(values):.3f}" if values else ""
            cells.append(f"~{text}" if cut else text)
        ratios = [
            _ratio(rows, cond, n_rows, "ours default", "ours n_jobs=1"),
            _ratio(rows, cond, n_rows, "ours n_jobs=1", "ref 1 thread"),
        ]
        lines.append(
            f"| {cond} | {n_rows:,} | "
            + " | ".join(cells)
            + " | "
            + " | ".join(f"{v:.2f}" for v in ratios)
            + " |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--conditions", nargs="+", default=["idle", "loaded"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=None, help="epochs per fit (by size)")
    parser.add_argument(
        "--cap", type=float, default=60.0, help="seconds after which a fit is cut (estimated)"
    )
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--merge", nargs="+", default=None, help="print the table of these --json files only"
    )
    parser.add_argument("--quick", action="store_true", help="2,000 rows, 3 epochs, 1 repeat")
    args = parser.parse_args(argv)
    if args.merge:
        rows = []
        for path in args.merge:
            with open(path, encoding="utf-8") as f:
                rows += json.load(f)
        print(table(rows))
        return
    if args.quick:
        args.sizes, args.repeats, args.epochs = [2_000], 1, 3
    print(
        f"cores: {available_cores()}, torch {torch.__version__}, "
        f"torch default threads: {torch.get_num_threads()}",
        flush=True,
    )
    rows = run(
        args.conditions,
        args.sizes,
        args.repeats,
        (lambda n: args.epochs) if args.epochs else default_epochs,
        args.cap,
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    print()
    print(
        "Median seconds per epoch; ratios are medians of per-repeat ratios; ~: a fit cut at "
        f"--cap {args.cap:g} s, its epoch estimated from its batch times"
    )
    print(table(rows))


if __name__ == "__main__":
    main()
