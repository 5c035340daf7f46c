"""The linear estimators at the sizes users have: fit time, accuracy, objective, threads, memory.

Run from the repository root (``bench_linear.py --scale`` runs this too)::

    python3 benchmarks/bench_linear_scale.py [--sizes 2000 20000 200000 1000000] [--no-load]

On ``make_classification(n_samples=n, n_features=20, n_informative=10, n_classes=5,
random_state=0)`` with 25% held out (a StandardScaler fitted on the rest), every estimator
at its defaults: ``LogisticRegression()``, ``SGDClassifier(loss="log_loss")``,
``SparsemaxClassifier()``, ``EntmaxClassifier()`` (alpha 1.5) and
``EntmaxClassifier(alpha=1.25)``, with torch's default threads. Each row is measured idle
and again while another process keeps one core busy (a ``while True`` loop), side by side in
one run. Printed per model: fit seconds (the median of 3 rounds, each fitting every model
once in turn, in an order rotated between rounds; ``--repeats``) and their ratio to
LogisticRegression's in the same setting, test accuracy, and for ours the relative gap of
the final objective to a reference optimum (the same objective solved in float64 to
``tol=1e-10``). A second table gives the fit time of ``EntmaxClassifier()`` at
``n_jobs=None`` (the default), 1 and 2. A last line gives the peak memory of a fit on 1M x
50 float32 (in a fresh process, from the memory in use before the data; Linux), against the
data's size.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import Iterator

import numpy as np
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier

MODELS = {
    "LogisticRegression": LogisticRegression(),
    "SGDClassifier(log_loss)": SGDClassifier(loss="log_loss", random_state=0),
    "SparsemaxClassifier": SparsemaxClassifier(),
    "EntmaxClassifier(1.5)": EntmaxClassifier(),
    "EntmaxClassifier(1.25)": EntmaxClassifier(alpha=1.25),
}


@contextlib.contextmanager
def busy_core(on: bool) -> Iterator[None]:
    """Another process spinning on one core for the duration of the block (if ``on``)."""
    if not on:
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(1.0)
    try:
        yield
    finally:
        proc.kill()
        proc.wait()


def data(n: int):
    X, y = make_classification(
        n_samples=n, n_features=20, n_informative=10, n_classes=5, random_state=0
    )
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test), y_train, y_test


def fit_once(model, X, y) -> tuple[float, object]:
    """Seconds of one fit of a clone of ``model``, and the fitted clone."""
    fitted = clone(model)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted.fit(X, y)
    return time.perf_counter() - start, fitted


def fit_times(models: dict, X, y, repeats: int) -> dict[str, tuple[float, object]]:
    """The median fit seconds of each model over ``repeats`` rounds, and a fitted copy.

    Each round fits every model once, in turn, so a slow spell of the machine falls on all
    of them alike rather than on one model's repeats; the order rotates between rounds,
    since the first fit of a round is measurably slower at 1M rows (about 20%).
    """
    times: dict = {name: [] for name in models}
    fitted: dict = {}
    names = list(models)
    for round_ in range(repeats):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            seconds, fitted[name] = fit_once(models[name], X, y)
            times[name].append(seconds)
    return {name: (statistics.median(times[name]), fitted[name]) for name in models}


def run(sizes: list[int], load: bool, repeats: int = 3) -> None:
    settings = ["idle", "loaded"] if load else ["idle"]
    print("n        model                    setting  fit s   / LR   acc     objective gap")
    for n in sizes:
        X_train, X_test, y_train, y_test = data(n)
        reference = {}
        for name, model in MODELS.items():
            if name.startswith(("Sparsemax", "Entmax")):
                ref = clone(model).set_params(tol=1e-10, max_iter=5000)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ref.fit(X_train, y_train)
                reference[name] = float(
                    ref.net_.objective({"X": X_train}, _enc(ref, y_train), backward=False)
                )
        for setting in settings:
            with busy_core(setting == "loaded"):
                results = fit_times(MODELS, X_train, y_train, repeats)
            lr_time = results["LogisticRegression"][0]
            for name, (seconds, fitted) in results.items():
                acc = fitted.score(X_test, y_test)
                gap = ""
                if name in reference:
                    value = float(
                        fitted.net_.objective(
                            {"X": X_train}, _enc(fitted, y_train), backward=False
                        )
                    )
                    gap = f"{(value - reference[name]) / abs(reference[name]):.1e}"
                print(
                    f"{n:<8} {name:<24} {setting:<8} {seconds:6.2f} {seconds / lr_time:6.2f}"
                    f"  {acc:.4f}  {gap}",
                    flush=True,
                )
    print()
    print("threads: EntmaxClassifier() fit seconds at n_jobs = None (default), 1, 2")
    for n in sizes:
        X_train, _, y_train, _ = data(n)
        for setting in settings:
            with busy_core(setting == "loaded"):
                results = fit_times(
                    {n_jobs: EntmaxClassifier(n_jobs=n_jobs) for n_jobs in (None, 1, 2)},
                    X_train,
                    y_train,
                    repeats,
                )
            times = {n_jobs: seconds for n_jobs, (seconds, _) in results.items()}
            best = min(times.values())
            print(
                f"{n:<8} {setting:<7} default {times[None]:6.2f}  1: {times[1]:6.2f}  "
                f"2: {times[2]:6.2f}  default / best {times[None] / best:.2f}",
                flush=True,
            )


def _enc(model, y: np.ndarray) -> np.ndarray:
    return np.searchsorted(model.classes_, y).astype(np.int64)


_MEMORY = textwrap.dedent(
    """
    import warnings
    import numpy as np
    from sk_entmax import EntmaxClassifier

    def status(field):  # kB, from /proc/self/status
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field))

    EntmaxClassifier().fit(np.eye(3), [0, 1, 2])  # torch's one-time optimizer imports
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak (VmHWM) starts again from the memory in use now
    baseline = status("VmRSS:")
    rng = np.random.default_rng(0)
    X = np.empty((1_000_000, 50), dtype=np.float32)
    for start in range(0, len(X), 100_000):  # drawn in blocks: no float64 copy of X
        X[start : start + 100_000] = rng.standard_normal((100_000, 50), dtype=np.float32)
    y = (X[:, :5] @ rng.standard_normal((5, 5)).astype(np.float32)).argmax(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        EntmaxClassifier().fit(X, y)
    peak = status("VmHWM:")
    print(f"peak memory of data + fit (1M x 50 float32, 5 classes): "
          f"{(peak - baseline) / 1024:.0f} MB for {X.nbytes / 2**20:.0f} MB of data, "
          f"{(peak - baseline) * 1024 / X.nbytes:.2f} x")
    """
)


def memory() -> None:
    subprocess.run([sys.executable, "-c", _MEMORY], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000, 200000, 1000000])
    parser.add_argument("--no-load", action="store_true", help="skip the busy-core runs")
    parser.add_argument("--no-memory", action="store_true", help="skip the 1M x 50 memory run")
    parser.add_argument(
        "--repeats", type=int, default=3, help="rounds of fits per figure (median)"
    )
    args = parser.parse_args(argv)
    run(args.sizes, load=not args.no_load, repeats=max(1, args.repeats))
    if not args.no_memory:
        memory()
    return 0


if __name__ == "__main__":
    sys.exit(main())
