"""The command line's arguments: the parser of ``demo`` and ``report`` and their types."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from sk_entmax._version import __version__
from sk_entmax.cli._task import MAX_AUTO_CLASSES, MIN_DISTINCT_SHARE

MODELS = ("tabnet", "entmax", "sparsemax")
TASKS = ("auto", "classification", "regression")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0; got {text!r}")
    return value


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(
            f"must be a number strictly between 0 and 1, e.g. 0.9; got {text!r}"
        )
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sk_entmax",
        description="Exactly sparse probabilities and feature masks: scikit-learn "
        "classifiers built on entmax, and a TabNet regressor with entmax feature masks.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{demo,report}")
    demo = sub.add_parser(
        "demo",
        help="fit the classifiers on bundled data, compare them, write a report "
        "(about 20 s on an idle 2-core machine, minutes on a busy one)",
        description="Fit a softmax baseline, SparsemaxClassifier, EntmaxClassifier and "
        "TabNetEntmaxClassifier on scikit-learn's wine data, print how accurate and how "
        "sparse they are, and write a TabNet feature-mask report (HTML).",
    )
    demo.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where to write the HTML report (default: a new private folder in the system's "
        "temp folder)",
    )
    demo.add_argument(
        "--quick", action="store_true", help="a few epochs only: a smoke test, not a result"
    )
    demo.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar for the TabNet fit (default: one on standard error, with the "
        "time left)",
    )
    report = sub.add_parser(
        "report",
        help="fit a classifier or a regressor on your CSV file and write an HTML report",
        description="Fit a classifier on a CSV file (75% of the rows, stratified) and write "
        "an HTML report on the other 25%: feature masks for TabNet, probability support "
        "for every model. With --confidence, split-conformal prediction sets on the "
        "held-out rows too. A target of numbers that are not all whole (continuous), or too "
        "many distinct numbers to be classes, is a regression target instead (see --task): "
        "TabNetEntmaxRegressor is fitted (75% of the rows, not stratified) and the report "
        "gives its feature masks, R² and RMSE and its predictions against the true values.",
    )
    report.add_argument("--data", required=True, type=Path, help="a CSV file with a header")
    report.add_argument(
        "--target",
        required=True,
        help="the column to predict (class labels, or numbers for regression), named as in "
        "the header; when no column is named exactly so, the one column whose name matches "
        "once leading and trailing spaces are set aside",
    )
    report.add_argument(
        "--task",
        choices=TASKS,
        default="auto",
        help="auto (default): regression when the target holds numbers and either at least "
        "one is not a whole number (scikit-learn's type_of_target: continuous) or they are too "
        f"many to be classes: more than {MAX_AUTO_CLASSES} distinct values and more than "
        f"{MIN_DISTINCT_SHARE:.0%}% of the rows distinct; classification otherwise (text, "
        f"true/false, at most {MAX_AUTO_CLASSES} distinct whole numbers, or few per row); "
        "classification: refuses a continuous target; regression: fits "
        "TabNetEntmaxRegressor, refuses text, and is the way to regress on a few distinct "
        "whole numbers (counts); it takes --model tabnet only and no --confidence",
    )
    report.add_argument(
        "--model",
        choices=MODELS,
        default="tabnet",
        help="the classifier (default: tabnet); entmax and sparsemax are linear classifiers, "
        "refused for a regression target (only tabnet regresses)",
    )
    report.add_argument(
        "--out", type=Path, default=Path("report.html"), help="default: report.html"
    )
    report.add_argument(
        "--max-epochs",
        type=_positive_int,
        default=None,
        help="cap on training epochs (default: the estimator's own)",
    )
    report.add_argument(
        "--random-state",
        type=int,
        default=0,
        help="seeds the split, the fit and the bootstrap (default: 0)",
    )
    report.add_argument(
        "--resamples",
        type=_count,
        default=200,
        metavar="N",
        help="tabnet: bootstrap resamples of the held-out rows for the intervals of the "
        "feature importances (default: 200; 0: no intervals)",
    )
    report.add_argument(
        "--confidence",
        type=_confidence,
        default=None,
        metavar="L",
        help="conformal prediction sets at confidence level L, in (0, 1), e.g. 0.9: the model "
        "is fitted on 80%% of the training rows and a SparseConformalClassifier calibrated "
        "on the other 20%%; the terminal and the report give the target and the empirical "
        "coverage on the held-out rows, the set sizes and a few rows' sets (default: none; "
        "classification only: refused for a regression target)",
    )
    report.add_argument(
        "--no-progress",
        action="store_true",
        help="tabnet: no progress bar (default: a bar over the epochs on standard error, "
        "with the time left, as verbose=1 gives; the linear models take seconds)",
    )
    report.add_argument(
        "--faithful-masks",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="tabnet: faithful masks (the default, faithful_masks=True): a feature whose mask "
        "is 0 at every step provably did not influence the prediction, and the terminal and "
        "the report list, for a few held-out rows, the features the prediction never read, "
        "and the share of (row, feature) pairs never read; --no-faithful-masks fits the "
        "paper's mask design, where zero masks prove nothing",
    )
    return parser
