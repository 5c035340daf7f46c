"""TabNet data-parallel on two processes against one process on all the rows (issue 49).

Run from the repository root::

    PYTHONPATH=. python3 benchmarks/bench_data_parallel.py                # 5 seeds
    PYTHONPATH=. python3 benchmarks/bench_data_parallel.py --quick        # checks the script

The data: ``make_classification(rows, n_features=20, n_informative=8, random_state=0)``, a
fifth held out as the test set, standardized. For each seed and each task (the classifier,
and the regressor on ``make_regression``), at the same global batch:

- one process: ``fit`` on all the training rows, ``batch_size=2 * B``;
- two processes (``torchrun --nproc_per_node 2``, gloo on the loopback interface): each
  fits on every other training row, ``batch_size=B``, inside
  :func:`sk_entmax.scale_out.data_parallel`.

Both at ``max_epochs=--epochs`` (default 30) and otherwise the defaults. The two are not the
same model to 1e-6 and cannot be: each process shuffles its own shard (a step's 2B rows are
another draw than one process's), and TabNet's first batch norm normalizes each process's B
rows with their own statistics. What the table shows is what that costs: test accuracy (or
RMSE) +- 2 SE over the seeds, the paired difference +- 2 paired SE, and seconds per epoch.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np


def data(task: str, rows: int):
    from sklearn.datasets import make_classification, make_regression
    from sklearn.preprocessing import StandardScaler

    if task == "classifier":
        X, y = make_classification(rows, n_features=20, n_informative=8, random_state=0)
    else:
        X, y = make_regression(rows, n_features=20, n_informative=8, noise=10.0, random_state=0)
    n_test = rows // 5
    scaler = StandardScaler().fit(X[n_test:])
    X = scaler.transform(X).astype(np.float32)
    return X[n_test:], y[n_test:], X[:n_test], y[:n_test]


def fit_and_score(task: str, X, y, X_te, y_te, seed: int, batch: int, epochs: int) -> dict:
    from sk_entmax import TabNetEntmaxClassifier, TabNetEntmaxRegressor

    cls = TabNetEntmaxClassifier if task == "classifier" else TabNetEntmaxRegressor
    model = cls(random_state=seed, max_epochs=epochs, batch_size=batch)
    start = time.perf_counter()
    model.fit(X, y)
    elapsed = time.perf_counter() - start
    if task == "classifier":
        score = float(model.score(X_te, y_te))
    else:
        score = float(np.sqrt(np.mean((model.predict(X_te) - y_te) ** 2)))
    return {"score": score, "epoch_s": elapsed / model.n_iter_, "epochs": model.n_iter_}


def worker(args) -> None:
    import torch.distributed as dist

    from sk_entmax.scale_out import data_parallel

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    results = []
    for task in args.tasks:
        X, y, X_te, y_te = data(task, args.rows)
        rows = np.arange(rank, len(X) - len(X) % world, world)
        for seed in range(args.seeds):
            with data_parallel():
                r = fit_and_score(
                    task, X[rows], y[rows], X_te, y_te, seed, args.batch, args.epochs
                )
            results.append({"task": task, "seed": seed, **r})
    if rank == 0:
        with open(args.worker_out, "w", encoding="utf-8") as f:
            json.dump(results, f)
    dist.destroy_process_group()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=256, help="rows per process and step")
    parser.add_argument("--tasks", nargs="+", default=["classifier", "regressor"])
    parser.add_argument("--quick", action="store_true", help="2,000 rows, 2 seeds, 3 epochs")
    parser.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.seeds, args.epochs = 2_000, 2, 3
    if args.worker_out:
        worker(args)
        return
    single = []
    for task in args.tasks:
        X, y, X_te, y_te = data(task, args.rows)
        for seed in range(args.seeds):
            r = fit_and_score(task, X, y, X_te, y_te, seed, 2 * args.batch, args.epochs)
            single.append({"task": task, "seed": seed, **r})
            print(json.dumps({"one process": single[-1]}), flush=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "two.json")
        forwarded = [
            *("--rows", str(args.rows), "--seeds", str(args.seeds)),
            *("--epochs", str(args.epochs), "--batch", str(args.batch)),
            "--tasks",
            *args.tasks,
            "--worker-out",
            out,
        ]
        subprocess.run(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nproc_per_node",
                "2",
                "--master_addr",
                "127.0.0.1",
                "--master_port",
                str(port),
                __file__,
                *forwarded,
            ],
            check=True,
        )
        with open(out, encoding="utf-8") as f:
            two = json.load(f)
    from helpers import mean_2se, paired_2se

    print("\n| task | score | one process | two processes | two - one (2 paired SE) |")
    print("|---|---|---|---|---|")
    for task in args.tasks:
        a = [r["score"] for r in single if r["task"] == task]
        b = [r["score"] for r in two if r["task"] == task]
        (ma, sa), (mb, sb) = mean_2se(a), mean_2se(b)
        d, sd = paired_2se(b, a)
        name = "accuracy" if task == "classifier" else "RMSE"
        print(
            f"| {task} | {name} | {ma:.4f} +- {sa:.4f} | {mb:.4f} +- {sb:.4f} | "
            f"{d:+.4f} +- {sd:.4f} |"
        )
        ea = np.median([r["epoch_s"] for r in single if r["task"] == task])
        eb = np.median([r["epoch_s"] for r in two if r["task"] == task])
        print(f"| {task} | s per epoch | {ea:.3f} | {eb:.3f} | |")


if __name__ == "__main__":
    main()
