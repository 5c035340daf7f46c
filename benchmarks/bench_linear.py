"""Accuracy, sparsity and fit time of the linear estimators against scikit-learn baselines.

Run from the repository root::

    python3 benchmarks/bench_linear.py [--threads N] [--repeats 3] [--set NAME=VALUE ...]

Two quality bars, each printed as PASS or FAIL (the exit status is 1 when one fails):

1. Multi-class: on iris, wine, breast_cancer and digits (one stratified train/test split,
   ``test_size=0.25, random_state=0``, a ``StandardScaler`` fitted on the train part) the test
   accuracy of the default ``EntmaxClassifier(random_state=0)`` and
   ``SparsemaxClassifier(random_state=0)`` is within 0.01 of
   ``LogisticRegression(max_iter=1000)``.
2. Multi-label: on ``make_multilabel_classification(n_samples=1000, n_features=20,
   n_classes=5, random_state=0)`` (same split, unstratified, scaled the same way) the micro-F1
   of ``SparsemaxClassifier`` and ``EntmaxClassifier(alpha=1.75)``, whose ``predict`` is the
   support of the predicted label distribution, is at least 0.9 times that of
   ``OneVsRestClassifier(LogisticRegression(max_iter=1000))``. The default
   ``EntmaxClassifier`` (alpha 1.5) is shown beside them: its support keeps too many labels
   for support-based multi-label prediction (see the README).

``EntmaxClassifier(alpha=1.0)`` (softmax, cross-entropy) is shown for reference; no bar
applies to it. "zeros" is the share of exact zeros in ``predict_proba`` on the test set,
"support" the mean number of nonzero classes per test row (for the one-vs-rest baseline, the
mean number of predicted labels). Models are seeded, so their scores do not change between
repeats; each repeat fits every model once, in a rotated order, and the fit time shown is the
median over the repeats. ``--set name=value`` (repeatable) passes a parameter to the three
sk_entmax models, to try other defaults, e.g. ``--set C=0.1 --set solver=adam``
(``alpha`` goes to the EntmaxClassifier row only, ``random_state`` to all three).
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, clone
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_iris,
    load_wine,
    make_multilabel_classification,
)
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier

ACCURACY_TOLERANCE = 0.01
F1_RATIO = 0.9
GATED = ("EntmaxClassifier", "SparsemaxClassifier")
# Multi-label prediction is the support of the predicted distribution; at alpha = 1.5 that
# support keeps every plausible label (4.4 predicted per row against 1.8 true ones, however
# long it trains), so the bar applies to the sparser multi-label configurations, and the
# default-alpha row is reported beside them.
GATED_MULTILABEL = ("SparsemaxClassifier", "EntmaxClassifier(alpha=1.75)")
MULTICLASS: dict[str, Callable] = {
    "iris": load_iris,
    "wine": load_wine,
    "breast_cancer": load_breast_cancer,
    "digits": load_digits,
}


@dataclass
class Row:
    dataset: str
    model: str
    score: float
    zeros: float
    support: float
    epochs: int | None
    times: list[float] = field(default_factory=list)
    reference: float = float("nan")

    @property
    def gated(self) -> bool:
        return self.model in (GATED_MULTILABEL if self.dataset == "multilabel" else GATED)

    def passed(self, multilabel: bool) -> bool:
        if multilabel:
            return self.score >= F1_RATIO * self.reference
        return self.score >= self.reference - ACCURACY_TOLERANCE - 1e-12


def _split(X: np.ndarray, y: np.ndarray, stratify: bool):
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, random_state=0, stratify=y if stratify else None
    )
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test), y_train, y_test


def _tasks() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    tasks = {
        name: _split(*load(return_X_y=True), stratify=True) for name, load in MULTICLASS.items()
    }
    X, Y = make_multilabel_classification(
        n_samples=1000, n_features=20, n_classes=5, random_state=0
    )
    tasks["multilabel"] = _split(X, Y, stratify=False)
    return tasks


def _models(params: dict[str, Any], multilabel: bool) -> dict[str, BaseEstimator]:
    baseline = LogisticRegression(max_iter=1000)
    sparsemax_params = {k: v for k, v in params.items() if k != "alpha"}
    softmax_params = {**params, "alpha": 1.0}
    models = {
        "OneVsRest(LogisticRegression)" if multilabel else "LogisticRegression": (
            OneVsRestClassifier(baseline) if multilabel else baseline
        ),
        "EntmaxClassifier": EntmaxClassifier(**{"random_state": 0, **params}),
        "SparsemaxClassifier": SparsemaxClassifier(**{"random_state": 0, **sparsemax_params}),
        "EntmaxClassifier(alpha=1.0)": EntmaxClassifier(**{"random_state": 0, **softmax_params}),
    }
    if multilabel:
        models["EntmaxClassifier(alpha=1.75)"] = EntmaxClassifier(
            **{"random_state": 0, **params, "alpha": 1.75}
        )
    return models


def _fit_and_score(model: BaseEstimator, data, multilabel: bool) -> tuple[Row, float]:
    X_train, X_test, y_train, y_test = data
    model = clone(model)
    with warnings.catch_warnings():
        # make_multilabel_classification draws some rows with no label; the estimator warns
        # that they get zero weight in the loss (they stay in the test set)
        warnings.filterwarnings("ignore", message=".*multi-label target have no label.*")
        start = time.perf_counter()
        model.fit(X_train, y_train)
        elapsed = time.perf_counter() - start
    pred = model.predict(X_test)
    if multilabel:
        score = f1_score(y_test, pred, average="micro")
    else:
        score = accuracy_score(y_test, pred)
    proba = model.predict_proba(X_test)
    zeros = float((proba == 0).mean())
    # one-vs-rest marginals are not a distribution: count the labels it predicts instead
    support = np.asarray(pred) if isinstance(model, OneVsRestClassifier) else proba > 0
    support = float(support.sum(axis=1).mean())
    epochs = getattr(model, "n_iter_", None)
    epochs = int(epochs) if isinstance(epochs, (int, np.integer)) else None
    return Row("", "", score, zeros, support, epochs), elapsed


def run(tasks: dict, repeats: int, params: dict[str, Any]) -> dict[str, list[Row]]:
    """Fit every model on every task ``repeats`` times; return the rows per task."""
    results: dict[str, list[Row]] = {}
    for name, data in tasks.items():
        multilabel = name == "multilabel"
        models = _models(params, multilabel)
        rows: dict[str, Row] = {}
        names = list(models)
        for repeat in range(repeats):
            order = names[repeat % len(names) :] + names[: repeat % len(names)]
            for model_name in order:
                row, elapsed = _fit_and_score(models[model_name], data, multilabel)
                if model_name not in rows:
                    row.dataset, row.model = name, model_name
                    rows[model_name] = row
                elif row.score != rows[model_name].score:
                    raise RuntimeError(f"{model_name} on {name}: score changed between repeats")
                rows[model_name].times.append(elapsed)
        reference = rows[names[0]].score
        for row in rows.values():
            row.reference = reference
        results[name] = [rows[n] for n in names]
    return results


def _compare(row: Row, multilabel: bool, digits: int = 3) -> str:
    if multilabel:
        return f"{row.score / row.reference:.{digits}f}"
    return f"{row.score - row.reference:+.{digits}f}"


def _verdict(row: Row, multilabel: bool) -> str:
    if not row.gated:
        return ""
    return "PASS" if row.passed(multilabel) else "FAIL"


def _table(rows: list[Row], multilabel: bool) -> list[str]:
    metric = "micro-F1" if multilabel else "accuracy"
    versus = "ratio to OvR" if multilabel else "Δ vs LR"
    lines = [
        f"| dataset | model | {metric} | {versus} | zeros | support | n_iter_ | fit time (s) "
        "| bar |",
        "|---|---|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for row in rows:
        epochs = "" if row.epochs is None else str(row.epochs)
        seconds = statistics.median(row.times)
        lines.append(
            f"| {row.dataset} | {row.model} | {row.score:.3f} | {_compare(row, multilabel)} "
            f"| {row.zeros:.1%} | {row.support:.2f} | {epochs} | {seconds:.2f} "
            f"| {_verdict(row, multilabel)} |"
        )
    return lines


def _parse_set(items: list[str]) -> dict[str, Any]:
    params = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects name=value; got {item!r}")
        try:
            params[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            params[name] = value  # a bare string such as batch_size=auto
    return params


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default: torch's own; the estimators pick theirs, n_jobs)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="fits per model (default 3)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="parameter passed to the sk_entmax models (repeatable)",
    )
    args = parser.parse_args(argv)
    params = _parse_set(args.set)
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    tasks = _tasks()
    results = run(tasks, args.repeats, params)
    multiclass = [row for name in MULTICLASS for row in results[name]]
    multilabel = results["multilabel"]
    settings = ", ".join(f"{k}={v!r}" for k, v in params.items()) or "defaults"
    print(
        f"sk_entmax models: {settings}; torch {torch.__version__}, "
        f"{args.threads or 'default'} thread(s), "
        f"fit time = median of {args.repeats}\n"
    )
    print("\n".join(_table(multiclass, multilabel=False)))
    print()
    print("\n".join(_table(multilabel, multilabel=True)))
    y_test = tasks["multilabel"][3]
    print(
        f"\nmulti-label test set: {y_test.sum(axis=1).mean():.2f} true labels per row, "
        f"{(y_test.sum(axis=1) == 0).mean():.1%} of rows with none\n"
    )

    bars = [
        (
            f"Bar 1: accuracy within {ACCURACY_TOLERANCE} of LogisticRegression",
            [r for r in multiclass if r.gated],
            False,
        ),
        (
            f"Bar 2: multi-label micro-F1 >= {F1_RATIO} x OneVsRest(LogisticRegression)",
            [r for r in multilabel if r.gated],
            True,
        ),
    ]
    all_passed = True
    for title, rows, is_multilabel in bars:
        failed = [r for r in rows if not r.passed(is_multilabel)]
        all_passed = all_passed and not failed
        detail = "; ".join(
            f"{r.dataset} {r.model} {_compare(r, is_multilabel, 4)}" for r in failed
        )
        print(f"{title}: {'FAIL (' + detail + ')' if failed else 'PASS'}")
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
