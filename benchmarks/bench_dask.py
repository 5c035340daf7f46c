"""GridSearchCV on a Dask cluster: search time against the number of workers.

A ``distributed.LocalCluster`` on the loopback interface with 1, 2 and 4 single-thread worker
processes runs the same search through joblib's dask backend; ``n_jobs=1`` without Dask is
the reference. The search is TabNetEntmaxClassifier over ``entmax_mode`` x ``alpha`` on a
synthetic data set (2000 x 20; 8 candidates x 3 folds = 24 fits, plus the refit). Every run
must give the reference's scores exactly. Cluster start-up, with a warm-up fit on every
worker, is timed apart from the search. The table notes the machine's load average: other
processes on the cores slow the runs.

Run ``python3 benchmarks/bench_dask.py`` (needs ``pip install -e ".[test]"``; about 5
minutes on 2 cores). It prints a Markdown table and writes ``benchmarks/bench_dask.png``.
On a 2-core machine more than 2 workers cannot help: the figure shows where the cores run
out, not how far a real cluster scales.
"""

from __future__ import annotations

import argparse
import os
import time

import joblib
import numpy as np
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, StratifiedKFold

GRID = {"entmax_mode": ["sparsemax", "entmax15", "constant", "adaptive"], "alpha": [1.5, 2.0]}


def _search(n_jobs: int) -> GridSearchCV:
    from sk_entmax import TabNetEntmaxClassifier

    X, y = make_classification(
        n_samples=2000, n_features=20, n_informative=8, n_classes=3, random_state=0
    )
    estimator = TabNetEntmaxClassifier(
        n_d=8, n_a=8, n_steps=3, entmax_alpha=1.3, max_epochs=5, random_state=0
    )
    cv = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    return GridSearchCV(estimator, GRID, cv=cv, n_jobs=n_jobs).fit(X, y)


def _warm_up() -> None:
    """A tiny fit: the first fit in a process imports torch._dynamo (torch's optimizers do),
    about 3 s here, paid once per process; it is counted in start-up, not in the search."""
    from sk_entmax import TabNetEntmaxClassifier

    X, y = make_classification(n_samples=64, n_features=4, random_state=0)
    TabNetEntmaxClassifier(max_epochs=1, random_state=0).fit(X, y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument(
        "--figure", default=os.path.join(os.path.dirname(__file__), "bench_dask.png")
    )
    args = parser.parse_args()

    import torch
    from distributed import Client, LocalCluster

    torch.set_num_threads(1)  # as each worker process: the nanny sets OMP_NUM_THREADS=1
    _warm_up()
    start = time.perf_counter()
    reference = _search(n_jobs=1)
    local_s = time.perf_counter() - start
    scores = reference.cv_results_["mean_test_score"]
    rows = [("n_jobs=1, no Dask", 1, local_s, 0.0, True, os.getloadavg()[0])]
    print(f"n_jobs=1: {local_s:.1f} s, best {reference.best_params_} {reference.best_score_:.3f}")
    for n_workers in args.workers:
        start = time.perf_counter()
        with (
            LocalCluster(
                n_workers=n_workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
            ) as cluster,
            Client(cluster) as client,
        ):
            client.run(_warm_up)
            startup_s = time.perf_counter() - start
            start = time.perf_counter()
            with joblib.parallel_backend("dask"):
                search = _search(n_jobs=-1)
            search_s = time.perf_counter() - start
        same = bool(np.array_equal(search.cv_results_["mean_test_score"], scores))
        load = os.getloadavg()[0]
        rows.append((f"Dask, {n_workers} worker(s)", n_workers, search_s, startup_s, same, load))
        print(f"{n_workers} worker(s): {search_s:.1f} s (start-up {startup_s:.1f} s), same={same}")

    print(f"\n{os.cpu_count()} CPU cores; 24 fits + refit, TabNet, 2000 x 20\n")
    print(
        "| run | search time | speed-up | cluster start-up | same scores as n_jobs=1 "
        "| 1-min load average after |"
    )
    print("|---|---:|---:|---:|---|---:|")
    for name, _, search_s, startup_s, same, load in rows:
        startup = f"{startup_s:.1f} s" if startup_s else ""
        print(
            f"| {name} | {search_s:.1f} s | {local_s / search_s:.2f}x | {startup} | {same} "
            f"| {load:.1f} |"
        )

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2), dpi=120)
    dask_rows = rows[1:]
    ax.plot([r[1] for r in dask_rows], [r[2] for r in dask_rows], "o-", label="Dask workers")
    ax.axhline(local_s, color="gray", linestyle="--", label="n_jobs=1, no Dask")
    ax.set_xlabel("workers (1 thread each)")
    ax.set_ylabel("search time (s)")
    ax.set_xticks([r[1] for r in dask_rows])
    ax.set_ylim(0, max(local_s, *(r[2] for r in dask_rows)) * 1.15)
    ax.set_title(f"GridSearchCV, 24 TabNet fits, {os.cpu_count()} CPU cores", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.figure)
    print(f"\nfigure: {args.figure}")


if __name__ == "__main__":
    main()
