"""Latency of an exported classifier under onnxruntime against ``predict_proba`` (issue 33).

Run from the repository root (needs the onnx extra: ``pip install -e .[onnx]``)::

    PYTHONPATH=. python3 benchmarks/bench_onnx.py [--threads 1] [--repeats 7] [--rows 10000]

Fits SparsemaxClassifier, EntmaxClassifier (alpha 1.5) and TabNetEntmaxClassifier on a
synthetic 20-feature, 5-class set (``--rows`` rows, a few epochs: the weights do not matter for
the latency), writes each with :func:`sk_entmax.export.to_onnx`, and times one row (median
over 200 calls, per call) and the ``--rows`` batch (median of ``--repeats``), onnxruntime and
``predict_proba`` back to back in shuffled order, at the same thread count. It also reports the
largest difference between the two and whether their zeros agree on every row.

``--export-time`` times :func:`~sk_entmax.export.to_onnx` itself instead (issue 60.1): each
estimator at its defaults fitted on scikit-learn's digits, then ``--repeats`` exports in the
same process after imports and a first export (reported apart: it includes the exporter's
own first-call costs), wall-clock and the process's CPU time (on one thread, what the wall
clock would read on an idle core), with the graph's size and whether its probabilities have
the zeros of ``predict_proba``::

    PYTHONPATH=. python3 benchmarks/bench_onnx.py --export-time --repeats 3
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier
from sk_entmax.export import to_onnx

N_FEATURES, N_CLASSES, SINGLE_CALLS = 20, 5, 200


def _data(rows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, N_FEATURES))
    y = (X[:, :N_CLASSES] + 0.5 * rng.normal(size=(rows, N_CLASSES))).argmax(axis=1)
    return X, y


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(estimator, X: np.ndarray, repeats: int, threads: int, folder: Path) -> dict:
    """Latencies (seconds) of one row and of all of ``X``, onnxruntime and predict_proba."""
    path = to_onnx(estimator, folder / f"{type(estimator).__name__}.onnx")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    got = session.run(None, {"X": X})[0]
    want = estimator.predict_proba(X)
    row = X[:1]
    contenders = {
        "onnx_row": lambda: session.run(None, {"X": row}),
        "proba_row": lambda: estimator.predict_proba(row),
        "onnx_batch": lambda: session.run(None, {"X": X}),
        "proba_batch": lambda: estimator.predict_proba(X),
    }
    times: dict[str, list[float]] = {key: [] for key in contenders}
    for _ in range(repeats):
        order = list(contenders.items())
        random.shuffle(order)
        for key, fn in order:
            calls = SINGLE_CALLS if key.endswith("row") else 1
            times[key].append(_median_time(fn, calls))
    result = {key: statistics.median(values) for key, values in times.items()}
    result["max_diff"] = float(np.abs(got - want).max())
    result["same_zeros"] = bool(np.array_equal(got == 0, want == 0))
    result["zeros"] = float((want == 0).mean())
    return result


def export_times(repeats: int, threads: int) -> None:
    """Print the seconds of ``to_onnx`` for each estimator at its defaults, fitted on digits:
    the first export of the process, then the median and range of ``repeats`` more."""
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    estimators = [
        SparsemaxClassifier(n_jobs=threads),
        EntmaxClassifier(n_jobs=threads),
        TabNetEntmaxClassifier(random_state=0, n_jobs=threads),
    ]
    print(
        f"torch {torch.__version__}, {threads} thread(s), digits ({X.shape[0]} x {X.shape[1]}, "
        f"10 classes), defaults; to_onnx seconds: the first export, then {repeats} more\n"
        "| estimator | fit (s) | first export (s) | exports (s), median [min, max] "
        "| their CPU time (s), median | graph (KB) | same zeros |\n|---|---|---|---|---|---|---|"
    )
    with tempfile.TemporaryDirectory() as folder:
        for estimator in estimators:
            start = time.perf_counter()
            estimator.fit(X, y)
            fit = time.perf_counter() - start
            path = Path(folder) / f"{type(estimator).__name__}.onnx"
            seconds, cpu = [], []
            for _ in range(repeats + 1):
                start, start_cpu = time.perf_counter(), time.process_time()
                to_onnx(estimator, path)
                seconds.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            got = session.run(None, {"X": X.astype(np.float32)})[0]
            same = np.array_equal(got == 0, estimator.predict_proba(X.astype(np.float32)) == 0)
            rest = seconds[1:]
            print(
                f"| {type(estimator).__name__} | {fit:.1f} | {seconds[0]:.1f} "
                f"| {statistics.median(rest):.1f} [{min(rest):.1f}, {max(rest):.1f}] "
                f"| {statistics.median(cpu[1:]):.1f} "
                f"| {path.stat().st_size / 1024:.0f} | {'yes' if same else 'NO'} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--export-time", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.export_time:
        export_times(args.repeats, args.threads)
        return
    X, y = _data(args.rows)
    estimators = [
        SparsemaxClassifier(max_epochs=5, random_state=0, n_jobs=args.threads),
        EntmaxClassifier(max_epochs=5, random_state=0, n_jobs=args.threads),
        TabNetEntmaxClassifier(max_epochs=2, random_state=0, n_jobs=args.threads),
    ]
    print(
        f"torch {torch.__version__}, onnxruntime {ort.__version__}, {args.threads} thread(s), "
        f"{N_FEATURES} features, {N_CLASSES} classes, float64; medians of {args.repeats} "
        f"repeats (one row: median of {SINGLE_CALLS} calls each)\n"
        "| estimator              | onnx 1 row (ms) | predict_proba 1 row (ms) "
        f"| onnx {args.rows} rows (ms) | predict_proba {args.rows} rows (ms) "
        "| max abs diff | same zeros |"
    )
    print(f"|{'-' * 24}|{'-' * 17}|{'-' * 26}|{'-' * 22}|{'-' * 31}|{'-' * 14}|{'-' * 12}|")
    with tempfile.TemporaryDirectory() as folder:
        for estimator in estimators:
            estimator.fit(X, y)
            r = measure(estimator, X, args.repeats, args.threads, Path(folder))
            print(
                f"| {type(estimator).__name__:<22} | {1e3 * r['onnx_row']:>15.3f} "
                f"| {1e3 * r['proba_row']:>24.3f} | {1e3 * r['onnx_batch']:>20.1f} "
                f"| {1e3 * r['proba_batch']:>29.1f} | {r['max_diff']:>12.1e} "
                f"| {'yes' if r['same_zeros'] else 'NO':>10} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
