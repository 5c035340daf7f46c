"""Peak memory (RSS) of fit and predict_proba on 1M rows x 50 features, against the data size.

Each case runs in a fresh Python process: it builds the data (float32 built directly, never
through float64), records the resident set size (RSS) once the data is in memory, then fits
with one epoch while a thread samples RSS every 2 ms, then predicts. "Fit overhead" is the
peak RSS during fit minus the RSS before it: what fit itself allocates. For float32
C-contiguous input it is a few MB (the network, one mini-batch at a time, the labels),
far below the 200 MB of X: X is not copied, and no float64 copy exists. float64 input costs
the one float32 copy (200 MB) it has to make; a read-only memmap is read in place.

Run ``python3 benchmarks/bench_memory.py`` (about 2 minutes on 2 cores; needs psutil, which
dask's test extra brings). ``--rows`` and ``--features`` change the shape.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

CASES = {
    "float32": "EntmaxClassifier, float32 array",
    "float32-early-stopping": "EntmaxClassifier(early_stopping=True), float32 array",
    "float32-memmap": "EntmaxClassifier, read-only float32 memmap (.npy)",
    "float64": "EntmaxClassifier, float64 array",
    "tabnet-float32": "TabNetEntmaxClassifier, float32 array",
}


def _rss() -> tuple[int, int]:
    """Resident set size, and its anonymous part (Linux): memory the process allocated, as
    opposed to file pages mapped in (a memmap's pages count in RSS but are not a copy)."""
    import psutil

    rss = psutil.Process().memory_info().rss
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return rss, int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, rss


class _Peak:
    """Sample RSS in a thread; ``peak`` and ``peak_anon`` are the largest values seen."""

    def __init__(self, interval: float = 0.002):
        self.interval = interval
        self.peak, self.peak_anon = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        rss, anon = _rss()
        self.peak, self.peak_anon = max(self.peak, rss), max(self.peak_anon, anon)

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()


def _run_case(case: str, rows: int, features: int) -> dict:
    import numpy as np
    import torch

    torch.set_num_threads(1)
    from sk_entmax import EntmaxClassifier, TabNetEntmaxClassifier

    rng = np.random.default_rng(0)
    X = np.empty((rows, features), dtype=np.float32)
    for start in range(0, rows, 100_000):  # in chunks: no full-size temporary
        X[start : start + 100_000] = rng.standard_normal(
            (min(100_000, rows - start), features), dtype=np.float32
        )
    y = np.digitize(X[:, 0] + X[:, 1] - X[:, 2], [-0.5, 0.5])
    if case == "float64":
        X = X.astype(np.float64)
    elif case == "float32-memmap":
        path = os.path.join(tempfile.mkdtemp(), "X.npy")
        np.save(path, X)
        del X
        X = np.load(path, mmap_mode="r")
    if case.startswith("tabnet"):
        clf = TabNetEntmaxClassifier(max_epochs=1, random_state=0)
    else:
        early = case == "float32-early-stopping"
        clf = EntmaxClassifier(max_epochs=1, batch_size=1024, early_stopping=early, random_state=0)
    # a first, tiny fit and predict: the imports and one-time allocations they trigger
    # (the fused optimizer loads a large part of torch) are not the data's cost
    warm = slice(0, 1000)
    type(clf)(**clf.get_params()).set_params(max_epochs=1).fit(X[warm], y[warm]).predict_proba(
        X[warm]
    )
    before, before_anon = _rss()
    start = time.perf_counter()
    with _Peak() as fit_peak:
        clf.fit(X, y)
    fit_s = time.perf_counter() - start
    _, before_predict_anon = _rss()
    with _Peak() as predict_peak:
        clf.predict_proba(X)
    mb = 2**20
    return {
        "case": case,
        "data_mb": X.nbytes / mb,
        "rss_before_fit_mb": before / mb,
        "fit_peak_mb": fit_peak.peak / mb,
        "fit_overhead_mb": (fit_peak.peak - before) / mb,
        "fit_overhead_anon_mb": (fit_peak.peak_anon - before_anon) / mb,
        "fit_s": fit_s,
        "predict_overhead_anon_mb": (predict_peak.peak_anon - before_predict_anon) / mb,
        "accuracy": float(clf.score(X[:100_000], y[:100_000])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_run_case(args.child, args.rows, args.features)))
        return

    results = []
    for case in args.cases:
        command = [sys.executable, __file__, "--child", case, "--rows", str(args.rows)]
        command += ["--features", str(args.features)]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        result = json.loads(out.strip().splitlines()[-1])
        results.append(result)
        print(
            f"{case}: fit overhead {result['fit_overhead_anon_mb']:.0f} MB allocated over "
            f"{result['data_mb']:.0f} MB of data ({result['fit_s']:.1f} s)",
            flush=True,
        )
    print(f"\n{args.rows:,} rows x {args.features} features, one epoch\n")
    print(
        "| case | X | RSS before fit | peak RSS in fit | fit: RSS growth | fit: allocated "
        "(anonymous RSS growth) | allocated / X | predict_proba: allocated | fit time |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {CASES[r['case']]} | {r['data_mb']:.0f} MB | {r['rss_before_fit_mb']:.0f} MB "
            f"| {r['fit_peak_mb']:.0f} MB | {r['fit_overhead_mb']:.0f} MB "
            f"| {r['fit_overhead_anon_mb']:.0f} MB "
            f"| {r['fit_overhead_anon_mb'] / r['data_mb']:.2f} "
            f"| {r['predict_overhead_anon_mb']:.0f} MB | {r['fit_s']:.0f} s |"
        )


if __name__ == "__main__":
    main()
