"""Command line: ``python -m sk_entmax demo`` and ``python -m sk_entmax report``.

``demo`` fits the estimators on data bundled with scikit-learn and writes a feature-mask
report; ``report`` does the same for a CSV file of the user's, for a classification or a
regression target. Errors in what the user gave
(a missing file, a missing column, a file that is not a table, an ``--out`` that cannot be
written) end with one line on standard error and exit status 2, before any fit where they
can be seen then; anything unforeseen ends with one line and exit status 1, an interrupt
with one line and exit status 130. Never a traceback.

What it prints comes partly from the user's files (column names, class labels, paths):
characters that are not printable, such as the escape that starts a terminal's colour
codes, are printed escaped as in a Python string literal (``\\x1b``), so a CSV cannot
drive the terminal; ordinary unicode letters are printed as they are. Column names are
kept exactly as the CSV's header writes them, spaces included.

``report --confidence L`` (L in (0, 1)) adds split-conformal prediction sets: the training
rows are split again, 80% to fit the model and 20% (stratified like the first split) to
calibrate a :class:`~sk_entmax.conformal.SparseConformalClassifier` at confidence level
``L``; on the held-out rows the terminal and the HTML report give the target and the
empirical coverage (the share of rows whose true label is in the set), how many rows have
a set of each size, and the sets of the first few rows with the classes they rule out.
Everything else in the report is then about the model fitted on those 80%.

``report --task {auto,classification,regression}`` says what the target is. ``auto`` (the
default) decides from the target column: a column of numbers (not true/false) is a
regression target, fitted with :class:`~sk_entmax.TabNetEntmaxRegressor`, when at least
one of its values is not a whole number or is infinite (scikit-learn's ``type_of_target``
calls such a column "continuous"), or when it holds too many distinct values to be classes:
more than :data:`MAX_AUTO_CLASSES` (20) distinct values *and* more than
:data:`MIN_DISTINCT_SHARE` (5%) of the rows distinct (a target such as scikit-learn's
diabetes, whole numbers with 214 distinct values in 442 rows). Anything else (text,
true/false, a few distinct whole numbers) holds class labels, fitted with a classifier.
``--task`` overrides the guess either way. When the classes are many and small (more than
10 classes, half of them with fewer than 10 rows) one line says so, with the ``--task`` to
give if the target is a quantity. ``--task classification``
on a continuous column, and ``--task regression`` on a column holding text, are refused
with one line naming ``--task``. A regression report has no probabilities: its terminal
lines and HTML report give R² and RMSE on the held-out rows and a predicted-against-true
figure, with the masks, importances and never-read lists as for a classifier; the options
that only mean something for class labels (``--confidence``, ``--model entmax`` or
``sparsemax``) are refused for a regression target with one line saying why. The split is
then not stratified. The CLI reads one target column: a multi-output regressor is not
offered here (:func:`~sk_entmax.report.feature_mask_report` draws one, one panel per
target).

TabNet's fit, the long one, shows a progress bar with the time left on standard error
(``verbose=1``) in both commands; ``--no-progress`` hides it.

``report --faithful-masks`` fits the TabNet with ``faithful_masks=True``: each step reads
only the features its mask keeps, so the terminal and the HTML report can list, for a few
held-out rows, the features the prediction provably never read, and give the share of
(row, feature) pairs never read over the held-out rows. Without it (the paper's mask
design) both say that a zero mask is no proof that a feature was not used.
"""

from __future__ import annotations

import argparse
import csv
import math
import numbers
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["main"]

MODELS = ("tabnet", "entmax", "sparsemax")
TASKS = ("auto", "classification", "regression")

#: ``--task auto``: a numeric target of whole numbers is read as a regression target when it
#: has more than this many distinct values ...
MAX_AUTO_CLASSES = 20
#: ... and more than this share of its rows are distinct values
MIN_DISTINCT_SHARE = 0.05
#: "many small classes": more than this many classes, half of them with fewer rows than this
_MANY_CLASSES = 10
_SMALL_CLASS = 10

#: a CSV with more columns is refused before it is parsed (pandas takes seconds per 100000
#: columns, and minutes for a wide header without rows)
MAX_COLUMNS = 100_000
_MAX_HEADER_CHARS = 64 * 2**20


class UsageError(Exception):
    """A problem with the user's input, reported as one line without a traceback."""


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
    sub = parser.add_subparsers(dest="command", required=True, metavar="{demo,report}")
    demo = sub.add_parser(
        "demo",
        help="fit the classifiers on bundled data, compare them, write a report (< 1 min)",
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
        action="store_true",
        help="tabnet: fit with faithful_masks=True, so that a feature whose mask is 0 at "
        "every step provably did not influence the prediction; the terminal and the report "
        "then list, for a few held-out rows, the features the prediction never read, and the "
        "share of (row, feature) pairs never read (default: the paper's mask design, where "
        "zero masks prove nothing)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments (``sys.argv[1:]`` when None).

    Returns
    -------
    int
        The exit status: 0 on success, 2 for a usage error (argparse exits with 2 itself),
        1 for an unexpected error, 130 when interrupted; each error is one line on standard
        error.
    """
    args = _parser().parse_args(argv)
    prefix = f"python -m sk_entmax {args.command}"
    try:
        if args.out is not None:
            _check_out(args.out)
        if args.command == "demo":
            from sk_entmax._demo import run_demo

            try:
                run_demo(args.out, quick=args.quick, progress=not args.no_progress)
            except OSError as exc:
                where = exc.filename or args.out or "the report"
                raise UsageError(f"cannot write {where}: {exc.strerror or exc}") from None
        else:
            _report(args)
    except UsageError as exc:
        _say(f"{prefix}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prefix}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug or a case not foreseen: still one line, no traceback
        _say(f"{prefix}: error: {type(exc).__name__}: {_first_line(exc)}", file=sys.stderr)
        return 1
    return 0


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _printable(text: str) -> str:
    """``text`` with its characters that are not printable escaped (``\\x1b``, ``\\n``);
    ordinary unicode letters are kept."""
    from sk_entmax.report._common import _printable

    return _printable(text)


def _say(text: str, **kwargs: Any) -> None:
    """Print ``text`` with its characters that are not printable escaped: it may hold what
    the user's files hold (names, labels, paths, and the messages that quote them)."""
    print(_printable(text), **kwargs)


def _name(name: Any) -> str:
    """A column name as printed: as it is when that reads unambiguously (not empty,
    printable, without leading or trailing spaces, not starting with a quote), otherwise as
    Python's ``repr`` writes it, quoted and escaped: ``' a'``, ``'\\x1b[31mred'``."""
    text = str(name)
    if text and text.isprintable() and text == text.strip() and text[0] not in "'\"":
        return text
    return repr(text)


def _check_out(path: Path) -> None:
    """Refuse an ``--out`` that cannot or must not be written, before any work is done."""
    if path.is_symlink():
        raise UsageError(
            f"--out {path} is a symbolic link (to {os.readlink(path)}); writing the report "
            "would overwrite its target, so it is refused: remove the link or choose "
            "another file"
        )
    if path.is_dir():
        raise UsageError(
            f"--out {path} is a folder; give a file name, e.g. {path / 'report.html'}"
        )
    if path.exists() and not path.is_file():  # a named pipe, a socket, a device
        raise UsageError(
            f"--out {path} is not a regular file (a named pipe, a socket or a device); "
            "the report is written to a file: choose another name"
        )
    parent = path.absolute().parent
    while not parent.exists():  # the report creates missing folders: check the first that is
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"cannot write --out {path}: {parent} is not a folder")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise UsageError(f"cannot write --out {path}: permission denied")
    elif not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write --out {path}: no permission to write in {parent}")


# ---------------------------------------------------------------------- report command


_BOMS = [
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
]


def _encoding(path: Path, head: bytes) -> str:
    """The text encoding of a CSV file from its first bytes: a byte-order mark names it;
    otherwise UTF-16 without a mark (every other byte NUL), UTF-8, or else Latin-1."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    if b"\x00" in head:
        even, odd = head[0::2], head[1::2]
        if odd.count(0) > 0.9 * len(odd) and not even.count(0):
            return "utf-16-le"
        if even.count(0) > 0.9 * len(even) and not odd.count(0):
            return "utf-16-be"
        raise UsageError(
            f"{path} is not a CSV file (it holds binary data, and is not UTF-8, UTF-16 or "
            "UTF-32 text)"
        )
    try:
        head.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as exc:
        # a multi-byte character cut at the end of the sample is still UTF-8
        return "utf-8" if exc.start >= len(head) - 3 else "latin-1"


def _sniff(path: Path, encoding: str) -> tuple[str, int]:
    """The separator and the number of columns, from the header line; refuses a header of
    more than MAX_COLUMNS columns or one without any data row, before pandas parses it."""
    try:
        with open(path, encoding=encoding, errors="replace", newline="") as handle:
            first = handle.readline(_MAX_HEADER_CHARS)
            if len(first) >= _MAX_HEADER_CHARS:
                raise UsageError(
                    f"{path} has a header line of over {_MAX_HEADER_CHARS} characters; the "
                    f"report reads tables of up to {MAX_COLUMNS} columns"
                )
            has_rows = any(line.strip() for line in iter(lambda: handle.readline(65536), ""))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    sep = max([",", ";", "\t"], key=first.count)
    n_columns = len(next(csv.reader([first.rstrip("\r\n")], delimiter=sep), []))
    if n_columns > MAX_COLUMNS:
        raise UsageError(
            f"{path} has {n_columns} columns; the report reads tables of up to "
            f"{MAX_COLUMNS} columns"
        )
    if not has_rows:
        raise UsageError(
            f"{path} has a header ({n_columns} columns) and no data rows; the report needs at "
            "least 10 labelled rows"
        )
    return sep, n_columns


@dataclass
class _Table:
    """A CSV table read for the report: features, labels, and what reading left out."""

    X: Any
    y: Any
    target: str  # the name of the label column, as in the file
    n_rows: int  # data rows in the file
    n_unlabelled: int  # rows without a label, dropped (the model needs a label per row)
    task: str = "classification"  # what the target is: "classification" or "regression"


def _read_table(path: Path, target: str, task: str = "auto") -> _Table:
    """Read the CSV file, find the target column and check it for ``task`` (``--task``);
    the table says which task the target calls for (see :func:`_resolve_task`)."""
    import pandas as pd

    if not path.exists():
        raise UsageError(f"no such file: {path}")
    if path.is_dir():
        raise UsageError(f"{path} is a folder, not a CSV file")
    try:
        with open(path, "rb") as handle:
            head = handle.read(65536)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not head.strip():
        raise UsageError(f"{path} is empty")
    encoding = _encoding(path, head)
    sep, _ = _sniff(path, encoding)
    try:
        # low_memory=False: a column's type is inferred from all of it, not chunk by chunk
        # (chunks would mix numbers and text in one column)
        frame = pd.read_csv(path, sep=sep, encoding=encoding, low_memory=False)
    except (pd.errors.ParserError, UnicodeError, ValueError) as exc:
        raise UsageError(
            f"{path} is not a readable CSV table ({encoding}): {_first_line(exc)}"
        ) from None
    frame.columns = [str(c) for c in frame.columns]  # as written: " a" and "a " are two
    if frame.shape[1] < 2:
        raise UsageError(
            f"{path} has {frame.shape[1]} column; a table needs at least one feature column "
            "and the target column (is it comma, semicolon or tab separated, with a header?)"
        )
    target = _find_target(list(frame.columns), target, path)
    n_rows = len(frame)
    frame = frame[frame[target].notna()]
    X = frame.drop(columns=[target])
    y = _as_numbers(frame[target])
    if len(frame) < 10:
        raise UsageError(f"{path} has {len(frame)} labelled rows; the report needs at least 10")
    task = _resolve_task(y, target, task)
    if task == "regression":
        _check_regression_target(y, target)
    else:
        _check_target(y, target)
    return _Table(X, y, target, n_rows, n_rows - len(frame), task)


def _as_numbers(y: Any) -> Any:
    """``y`` as float64 numbers when pandas kept numbers as objects (integers beyond 64 bits,
    such as ``2**70``), else as it is: such a column is a column of numbers, for ``--task``
    and for the fit alike."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        return y
    if not all(isinstance(v, numbers.Number) and not isinstance(v, bool) for v in y):
        return y
    return pd.to_numeric(y).astype("float64")


def _too_many_to_be_classes(y: Any) -> bool:
    """The second rule of ``--task auto``: a numeric column (not true/false) with more than
    :data:`MAX_AUTO_CLASSES` distinct values, more than :data:`MIN_DISTINCT_SHARE` of its
    rows distinct, is a quantity, not class labels."""
    import pandas as pd

    if not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        return False
    n_distinct = y.nunique()
    return n_distinct > MAX_AUTO_CLASSES and n_distinct > MIN_DISTINCT_SHARE * len(y)


def _is_continuous(y: Any) -> bool:
    """The rule of ``--task auto``: a column of numbers (not true/false) at least one of
    which is not a whole number, or is infinite, is continuous: a regression target. For
    finite numbers this is scikit-learn's ``type_of_target(y) == "continuous"``."""
    import numpy as np
    import pandas as pd

    if not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        return False
    values = y.to_numpy(dtype=np.float64)
    return bool(np.any(~np.isfinite(values) | (values != np.round(values))))


def _why_regression(y: Any) -> str:
    """Why ``--task auto`` read ``y`` as a regression target, in a few words."""
    if _is_continuous(y):
        return "numbers, not all whole"
    return (
        f"numbers, {y.nunique()} distinct values in {len(y)} rows: too many to be classes "
        f"(> {MAX_AUTO_CLASSES} and > {MIN_DISTINCT_SHARE:.0%} of the rows)"
    )


def _many_small_classes_note(y: Any, target: str, task: str) -> list[tuple[str, str]]:
    """One ("classes", text) note when the classes are many and small: more than
    ``_MANY_CLASSES`` of them, half with fewer than ``_SMALL_CLASS`` rows; for a numeric
    target it names ``--task regression``; else no note."""
    import pandas as pd

    counts = y.value_counts()
    small = int((counts < _SMALL_CLASS).sum())
    if len(counts) <= _MANY_CLASSES or 2 * small < len(counts):
        return []
    text = (
        f"{len(counts)} classes in {target!r}, {small} of them with fewer than {_SMALL_CLASS} "
        "rows: too few rows per class to learn each one well"
    )
    if pd.api.types.is_numeric_dtype(y) and not pd.api.types.is_bool_dtype(y):
        given = " (you gave --task classification)" if task == "classification" else ""
        text += f"; if {target!r} is a quantity, give --task regression{given}"
    return [("classes", text)]


def _resolve_task(y: Any, target: str, task: str) -> str:
    """``"classification"`` or ``"regression"``: what ``--task`` asks for, or for ``auto``
    what the target is (:func:`_is_continuous`); a task the target cannot have is a
    UsageError naming ``--task``."""
    import pandas as pd

    continuous = _is_continuous(y)
    if task == "auto":
        regression = continuous or _too_many_to_be_classes(y)
        return "regression" if regression else "classification"
    if task == "classification" and continuous:
        raise UsageError(
            f"column {target!r} holds continuous numbers ({y.nunique()} distinct values), not "
            "class labels: --task classification cannot fit it; leave out --task (or give "
            "--task regression) to fit a TabNetEntmaxRegressor"
        )
    if task == "regression" and not (
        pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y)
    ):
        numbers = pd.to_numeric(y, errors="coerce")
        example = y[numbers.isna()].iloc[0] if numbers.isna().any() else y.iloc[0]
        raise UsageError(
            f"column {target!r} holds text ({example!r}), not numbers: --task regression "
            "needs a numeric target; leave out --task (or give --task classification) for "
            "class labels"
        )
    return task


def _check_regression_target(y: Any, target: str) -> None:
    """A regression target: finite numbers, not all the same."""
    import numpy as np

    values = y.to_numpy(dtype=np.float64)
    infinite = int(np.isinf(values).sum())
    if infinite:
        raise UsageError(
            f"column {target!r} holds {infinite} infinite value(s); a regression target must "
            "be finite: remove those rows, or empty those cells (rows without a target value "
            "are dropped)"
        )
    if y.nunique() < 2:
        value = y.iloc[0]
        value = value.item() if hasattr(value, "item") else value  # 2, not np.int64(2)
        raise UsageError(
            f"column {target!r} holds a single value ({value!r}) in every row; a "
            "regressor needs a target that varies"
        )


def _find_target(columns: list[str], target: str, path: Path) -> str:
    """The column ``--target`` names: the one named exactly so, or else the one column
    whose name is the same once leading and trailing spaces are set aside (a header written
    ``x, y, label``); several such columns, or none, is a UsageError naming them in full."""
    if target in columns:
        return target
    near = [c for c in columns if c.strip() == target.strip()]
    if len(near) == 1:
        return near[0]
    if near:
        raise UsageError(
            f"no column {target!r} in {path}, and {len(near)} columns differ from it only in "
            f"leading or trailing spaces: {', '.join(map(repr, near))}; give the one you "
            "mean exactly, spaces included"
        )
    names = ", ".join(map(repr, columns[:12])) + (", ..." if len(columns) > 12 else "")
    raise UsageError(f"no column {target!r} in {path}; its columns are: {names}")


def _label_kind(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "missing values"
    if isinstance(value, str):
        return "text"
    if isinstance(value, numbers.Number):
        return "numbers"
    return type(value).__name__


def _check_target(y: Any, target: str) -> None:
    import pandas as pd
    from sklearn.utils.multiclass import type_of_target

    values = y.to_numpy()
    if values.dtype == object:
        examples: dict[str, Any] = {}
        for value in values:
            kind = _label_kind(value)
            if kind == "text" and not pd.isna(pd.to_numeric(value, errors="coerce")):
                kind = "numbers"  # a CSV cell such as "1.5" in a column that also holds text
            examples.setdefault(kind, value)
        if len(examples) > 1:
            kinds = sorted(examples)
            shown = " and ".join(f"{k} ({examples[k]!r})" for k in kinds)
            raise UsageError(
                f"column {target!r} mixes {shown}; class labels must be all text or all "
                "numbers, without gaps"
            )
    try:
        kind = type_of_target(values)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"column {target!r} does not hold class labels: {exc}") from None
    n_classes = y.nunique()
    if kind == "continuous":
        raise UsageError(
            f"column {target!r} holds continuous numbers ({n_classes} distinct values), not "
            "class labels: give --task regression to fit a TabNetEntmaxRegressor"
        )
    if n_classes < 2:
        raise UsageError(f"column {target!r} holds a single class; a classifier needs two")
    if n_classes > len(y) // 2:
        hint = (
            " If it is a quantity, give --task regression."
            if pd.api.types.is_numeric_dtype(y) and not pd.api.types.is_bool_dtype(y)
            else ""
        )
        raise UsageError(
            f"column {target!r} has {n_classes} distinct values in {len(y)} rows: under two "
            f"rows per class, too few to learn from (is it an identifier?{hint})"
        )


def _estimator(
    model: str,
    X: Any,
    max_epochs: int | None,
    random_state: int,
    *,
    faithful_masks: bool = False,
    task: str = "classification",
    progress: bool = False,
):
    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier

    kwargs: dict[str, Any] = {"random_state": random_state}
    if max_epochs is not None:
        kwargs["max_epochs"] = max_epochs
    # TabNet's fit is the long one: a progress bar with the time left (verbose=1)
    tabnet = {**kwargs, "faithful_masks": faithful_masks, "verbose": int(progress)}
    if task == "regression":  # _check_task_options let only --model tabnet through
        from sk_entmax import TabNetEntmaxRegressor

        return TabNetEntmaxRegressor(**tabnet)
    if model == "tabnet":
        return TabNetEntmaxClassifier(**tabnet)
    numeric = make_column_selector(dtype_include=["number", "bool"])
    other = make_column_selector(dtype_exclude=["number", "bool"])
    preprocess = make_column_transformer(
        (make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
        (
            make_pipeline(
                SimpleImputer(strategy="most_frequent"),
                OneHotEncoder(handle_unknown="ignore", sparse_output=False),
            ),
            other,
        ),
        verbose_feature_names_out=False,
    )
    cls = SparsemaxClassifier if model == "sparsemax" else EntmaxClassifier
    return make_pipeline(preprocess, cls(**kwargs))


def _infinite_to_missing(X: Any) -> tuple[Any, dict[str, int]]:
    """Read ``inf`` and ``-inf`` in numeric columns as missing values, counted per column: a
    CSV's "inf" is most often a failed computation, and the models take gaps, not infinity."""
    import numpy as np
    import pandas as pd

    counts = {}
    for column in X.columns:
        values = X[column]
        if pd.api.types.is_float_dtype(values):
            infinite = np.isinf(values.to_numpy(dtype=np.float64, na_value=np.nan))
            if infinite.any():
                if not counts:
                    X = X.copy()
                X[column] = values.mask(infinite)
                counts[str(column)] = int(infinite.sum())
    return X, counts


def _gaps(X: Any) -> tuple[dict[str, int], dict[str, int]]:
    """Missing values per numeric column and per other (text) column, where there are any."""
    import pandas as pd

    numeric, other = {}, {}
    for column, count in X.isna().sum().items():
        if count:
            is_number = pd.api.types.is_numeric_dtype(X[column])
            (numeric if is_number else other)[str(column)] = int(count)
    return numeric, other


def _counted(train: dict[str, int], test: dict[str, int]) -> str:
    """``name (n training, m held out)`` for each column with gaps in either part."""
    return ", ".join(
        f"{_name(name)} ({train.get(name, 0)} training, {test.get(name, 0)} held out)"
        for name in dict.fromkeys([*train, *test])
    )


def _data_notes(
    table: _Table,
    X_train: Any,
    X_test: Any,
    model: str,
    infinite: dict[str, int],
    stratified: bool,
    target: str,
) -> list[tuple[str, str]]:
    """What the report did to the data before the fit, as (label, text) lines for the
    terminal and the HTML report: nothing is dropped or filled without saying so."""
    notes = _row_notes(table, X_train, X_test, stratified, target)
    if infinite:
        notes.append(
            (
                "infinite values read as missing",
                ", ".join(f"{_name(name)} ({count})" for name, count in infinite.items()),
            )
        )
    tabnet = "TabNetEntmaxRegressor" if table.task == "regression" else "TabNetEntmaxClassifier"
    notes.append(_missing_values_note(X_train, X_test, model, tabnet))
    return notes


def _row_notes(
    table: _Table, X_train: Any, X_test: Any, stratified: bool, target: str
) -> list[tuple[str, str]]:
    """The rows in the file, the rows dropped (no label) and the split, as (label, text)."""
    n_train, n_test = len(X_train), len(X_test)
    notes = [("rows in the file", f"{table.n_rows} x {X_train.shape[1] + 1} columns")]
    if table.n_unlabelled:
        what = "target value" if table.task == "regression" else "label"
        notes.append(
            (
                "rows dropped",
                f"{table.n_unlabelled} of {table.n_rows}, with no value in {target!r} "
                f"(no {what} to learn or score); {len(table.y)} labelled rows kept",
            )
        )
    else:
        notes.append(("rows dropped", f"none (every row has a value in {target!r})"))
    split = "stratified by class" if stratified else "not stratified"
    notes.append(
        (
            "training rows",
            f"{n_train} of {n_train + n_test} (75%, {split}); the other {n_test} are held out: "
            "the rows this report is on",
        )
    )
    return notes


def _missing_values_note(
    X_train: Any, X_test: Any, model: str, tabnet: str = "TabNetEntmaxClassifier"
) -> tuple[str, str]:
    """How the missing values of either part are handled by ``model`` (``tabnet`` names
    the TabNet estimator fitted), as (label, text)."""
    (num_train, cat_train), (num_test, cat_test) = _gaps(X_train), _gaps(X_test)
    parts = []
    if model == "tabnet":
        learned = num_train
        unseen = {k: v for k, v in num_test.items() if k not in num_train}
        if learned:
            parts.append(
                "numeric columns "
                + _counted(learned, {k: v for k, v in num_test.items() if k in learned})
                + " get a learned missing indicator"
            )
        if unseen:
            parts.append(
                f"numeric columns {_counted({}, unseen)}, complete in the training rows, "
                "take their training mean"
            )
        if cat_train or cat_test:
            parts.append(
                f"categorical columns {_counted(cat_train, cat_test)} take the 'unknown' code"
            )
        text = f"kept, nothing imputed beforehand: {tabnet} handles them; "
    else:
        if num_train or num_test:
            parts.append(f"the median of the training rows in {_counted(num_train, num_test)}")
        if cat_train or cat_test:
            parts.append(
                "the most frequent value of the training rows in " + _counted(cat_train, cat_test)
            )
        text = "filled by the model's pipeline (SimpleImputer) with "
    return ("missing values", text + "; ".join(parts) if parts else "none")


def _check_task_options(args: argparse.Namespace, why: str) -> None:
    """Refuse, for a regression target, the options that only mean something for class
    labels; ``why`` says why the target is a regression target."""
    if args.model != "tabnet":
        raise UsageError(
            f"--model {args.model} is a linear classifier, for class labels, and only --model "
            f"tabnet regresses; {why}: leave out --model (or give --model tabnet)"
        )
    if args.confidence is not None:
        raise UsageError(
            "--confidence gives conformal prediction sets of class labels, for "
            f"classification only; {why}: leave out --confidence"
        )


def _report(args: argparse.Namespace) -> None:
    if args.faithful_masks and args.model != "tabnet":
        raise UsageError(
            "--faithful-masks is for --model tabnet (the feature masks of a TabNet); "
            f"{args.model} has no feature masks"
        )
    if args.task == "regression":  # refused before any reading
        _check_task_options(args, "--task regression asks for a regressor")
    _require_matplotlib()
    table = _read_table(args.data, args.target, args.task)
    target = table.target  # the column's name as in the file
    regression = table.task == "regression"
    if regression and args.task == "auto":
        _check_task_options(
            args,
            f"column {target!r} holds {_why_regression(table.y)}: a regression target "
            "(--task auto)",
        )
    X, infinite = _infinite_to_missing(table.X)
    y = table.y
    clf = _estimator(
        args.model,
        X,
        args.max_epochs,
        args.random_state,
        faithful_masks=args.faithful_masks,
        task=table.task,
        progress=not args.no_progress,
    )
    X_train, X_test, y_train, y_test, stratified = _split(
        X, y, args.random_state, by_class=not regression
    )
    notes = _data_notes(table, X_train, X_test, args.model, infinite, stratified, target)
    if regression:
        how = (
            f"(--task auto: {_why_regression(y)})"
            if args.task == "auto"
            else "(--task regression)"
        )
        notes.insert(0, ("task", f"regression on {target!r} {how}"))
    else:
        notes += _many_small_classes_note(y, target, args.task)
    if target != args.target:
        notes.insert(
            0,
            (
                "target column",
                f"{target!r}, the one column named {args.target!r} once leading and trailing "
                "spaces are set aside",
            ),
        )
    X_fit, y_fit = X_train, y_train
    if args.confidence is not None:
        X_fit, X_cal, y_fit, y_cal, cal_stratified = _split(
            X_train, y_train, args.random_state, test_size=0.2
        )
        split = "stratified by class" if cal_stratified else "not stratified"
        notes.append(
            (
                "calibration rows",
                f"{len(X_cal)} of the {len(X_train)} training rows (20%, {split}) calibrate "
                f"the conformal sets; the model is fitted on the other {len(X_fit)}",
            )
        )
    for label, text in notes:
        _say(f"{label}: {text}")
    name = type(clf[-1] if hasattr(clf, "steps") else clf).__name__
    fit_said = _fit(clf, name, X_fit, y_fit, X, y, target, regression=regression)
    proba, predicted, said = _predict_held_out(clf, X_test, regression=regression)
    conformal = None
    if args.confidence is not None:
        conformal, cal_said = _conformalize(clf, args.confidence, X_cal, y_cal, X_test, y_test)
        said = [*said, *cal_said]
    said = list(dict.fromkeys([*fit_said, *said]))
    notes += [("note", message) for message in said]
    path, intervals, never = _write_report(
        clf, name, X_test, y_test, notes, said, target, args, conformal
    )
    if regression:
        _print_regression_outcome(clf, predicted, X_test, y_test, intervals, path, never)
    else:
        _print_outcome(proba, predicted, X_test, y_test, intervals, path, conformal, never)


def _require_matplotlib() -> None:
    """Refuse the report command, before any reading or fitting, when matplotlib is missing."""
    from sk_entmax.report import _MISSING_MATPLOTLIB

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(_MISSING_MATPLOTLIB) from None


def _split(
    X: Any, y: Any, random_state: int, test_size: float = 0.25, *, by_class: bool = True
) -> tuple[Any, Any, Any, Any, bool]:
    """75% of the rows for training, 25% held out (``test_size``), stratified by class where
    every class has two rows and there are few classes (never when not ``by_class``: a
    regression target); the last item says whether it was stratified."""
    from sklearn.model_selection import train_test_split

    counts = y.value_counts()
    few = counts.min() >= 2 and len(counts) <= test_size * len(y)
    stratify = y if by_class and few else None
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_size, stratify=stratify, random_state=random_state
    )
    return X_train, X_test, y_train, y_test, stratify is not None


def _fit(
    clf: Any,
    name: str,
    X_train: Any,
    y_train: Any,
    X: Any,
    y: Any,
    target: str,
    *,
    regression: bool = False,
) -> list[str]:
    """Fit ``clf`` on the training rows, saying so and how long it took; a ValueError from
    the fit is the data's fault, a UsageError. Returns the distinct UserWarning messages of
    the fit (a column of numbers with stray text, an identifier column), each printed once
    as a note."""
    if regression:
        spread = f"{y.nunique()} distinct values, {y.min():.4g} to {y.max():.4g}"
        what = f"regression on {target!r}: {spread}"
    else:
        what = f"{y.nunique()} classes in {target!r}"
    bar = getattr(clf, "verbose", 0) == 1  # its progress bar goes to standard error
    _say(
        f"fitting {name} on {len(X_train)} rows x {X.shape[1]} columns ({what}) ...",
        end="\n" if bar else "",
        flush=True,
    )
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            clf.fit(X_train, y_train)
    except ValueError as exc:
        if not bar:
            print()
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else "ValueError"
        raise UsageError(f"fitting failed: {message}") from None
    seconds = f"{time.perf_counter() - start:.1f} s"
    print(f"fitted in {seconds}" if bar else f" {seconds}")
    for w in caught:  # other warnings (a ConvergenceWarning) go out as they would have
        if w.category is not UserWarning:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    said = list(dict.fromkeys(str(w.message) for w in caught if w.category is UserWarning))
    for message in said:
        _say(f"note: {message}")
    return said


def _predict_held_out(
    clf: Any, X_test: Any, *, regression: bool = False
) -> tuple[Any, Any, list[str]]:
    """The probabilities (None for a regressor) and predictions on the held-out rows, and
    the distinct UserWarning messages the model gave on them (each printed once as a note)."""
    # what the model says about the held-out rows (a gap in a column that had none in the
    # training rows, a category it never saw) goes into the report and on the terminal once
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        proba = None if regression else clf.predict_proba(X_test)
        predicted = clf.predict(X_test)
    said = list(dict.fromkeys(str(w.message) for w in caught if w.category is UserWarning))
    for message in said:
        _say(f"note: {message}")
    return proba, predicted, said


def _conformalize(
    clf: Any, confidence: float, X_cal: Any, y_cal: Any, X_test: Any, y_test: Any
) -> tuple[Any, list[str]]:
    """Calibrate a SparseConformalClassifier around the fitted ``clf`` on the calibration
    rows and sum up its sets on the held-out rows; also returns the distinct UserWarning
    messages (too few calibration rows, say), each printed once as a note."""
    from sk_entmax.conformal import SparseConformalClassifier
    from sk_entmax.report import conformal_sets

    wrapped = SparseConformalClassifier(clf, prefit=True, confidence_level=confidence)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            wrapped.conformalize(X_cal, y_cal)
        except ValueError as exc:
            raise UsageError(f"conformal calibration failed: {_first_line(exc)}") from None
        sets = conformal_sets(wrapped, X_test, y_test)
    said = list(dict.fromkeys(str(w.message) for w in caught if w.category is UserWarning))
    for message in said:
        _say(f"note: {message}")
    return sets, said


def _write_report(
    clf: Any,
    name: str,
    X_test: Any,
    y_test: Any,
    notes: list[tuple[str, str]],
    said: list[str],
    target: str,
    args: argparse.Namespace,
    conformal: Any = None,
) -> tuple[Path, Any, Any]:
    """Write the HTML report on the held-out rows (the warnings already said silenced);
    returns the path written and, for TabNet, the importance intervals and the features
    the predictions never read (else None, None).

    The report functions write a temporary file and rename it over ``--out``: a link put
    at ``--out`` after :func:`_check_out` (during the fit, say) is refused, never written
    through, and ends as a UsageError naming ``--out``."""
    from sk_entmax.report import feature_mask_report, probability_support_report

    title = f"{name} on {args.data.name}: {target}"
    write = feature_mask_report if args.model == "tabnet" else probability_support_report
    try:
        with warnings.catch_warnings():
            for message in said:
                warnings.filterwarnings("ignore", message=re.escape(message), category=UserWarning)
            if args.model == "tabnet":
                options = {"n_resamples": args.resamples, "random_state": args.random_state}
                path = write(
                    clf,
                    X_test,
                    args.out,
                    y=y_test,
                    title=title,
                    data=notes,
                    conformal=conformal,
                    **options,
                )
                intervals = _intervals(clf, X_test, args)
                never = _never_read_rows(clf, X_test)  # the rows the report lists
            else:
                path = write(
                    clf, X_test, args.out, y=y_test, title=title, data=notes, conformal=conformal
                )
                intervals = never = None
    except OSError as exc:  # the folder changed during the fit, say: a link planted there
        raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    return path, intervals, never


def _print_outcome(
    proba: Any,
    predicted: Any,
    X_test: Any,
    y_test: Any,
    intervals: Any,
    path: Path,
    conformal: Any = None,
    never: Any = None,
) -> None:
    """The held-out accuracy and sparsity, the top importances and the features never read
    (TabNet), the conformal sets (with ``--confidence``), and the path the report was
    written to (as the report function returns it)."""
    accuracy = float((predicted == y_test.to_numpy()).mean())
    print(
        f"held-out accuracy {accuracy:.3f} on {len(X_test)} rows; "
        f"{(proba == 0).mean():.0%} of predict_proba entries exactly 0; "
        f"mean support {(proba > 0).sum(axis=1).mean():.2f} of {proba.shape[1]} classes"
    )
    _say_mask_lines(intervals, never)
    if conformal is not None:
        for line in conformal.lines():
            _say(line)
    _say(f"report written to {path}")


def _say_mask_lines(intervals: Any, never: Any) -> None:
    """The top importances and the features never read (TabNet), for either task."""
    lines = []
    if intervals is not None:
        lines += _importance_lines(intervals)
    if never is not None:
        lines += _never_read_lines(never)
    for line in lines:
        _say(line)


def _print_regression_outcome(
    clf: Any,
    predicted: Any,
    X_test: Any,
    y_test: Any,
    intervals: Any,
    path: Path,
    never: Any = None,
) -> None:
    """A regressor's held-out R² and RMSE, the top importances, the features never read,
    and the path the report was written to."""
    from sk_entmax.report.regression import _fit_of

    fit = _fit_of(clf, predicted, y_test, "report")
    print(
        f"held-out R² {fit.r2_text(0)} and RMSE {fit.rmse[0]:.4g} on {len(X_test)} rows "
        f"(the true values' standard deviation there: {float(fit.y_true.std()):.4g})"
    )
    _say_mask_lines(intervals, never)
    _say(f"report written to {path}")


#: the features listed on the terminal (the report lists all of them)
_TERMINAL_FEATURES = 5


def _intervals(clf: Any, X: Any, args: argparse.Namespace) -> Any:
    """The importance intervals the report shows (same rows, resamples and seed), or None."""
    if not args.resamples:
        return None
    from sk_entmax.report import importance_intervals

    return importance_intervals(clf, X, n_resamples=args.resamples, random_state=args.random_state)


def _never_read_rows(clf: Any, X: Any) -> Any:
    """What the report shows of the features never read (same rows): a ``_NeverRead``."""
    from sk_entmax.report.masks import _never_read_rows

    return _never_read_rows(clf, X)


def _never_read_lines(never: Any) -> list[str]:
    """The share of (row, feature) pairs never read and, per row the report lists, the
    features its prediction never read (names as :func:`_name` prints them); for the
    paper's mask design, the note that zero masks prove nothing."""
    if not never.faithful:
        return [
            "never read: not available. "
            + never.not_proof(how="--faithful-masks (faithful_masks=True)")
        ]
    lines = [
        f"never read: {never.share_text()} over the {never.n_rows} held-out rows; with "
        "faithful masks these predictions provably did not depend on those features, "
        "whatever their values:"
    ]
    lines += [f"  row {label}: {text}" for label, text in never.row_lines(_name)]
    return lines


def _importance_lines(intervals: Any) -> list[str]:
    """The top features with their intervals, and whether the rows settle their ranking;
    the names as :func:`_name` prints them (escaped and quoted where need be)."""
    order = intervals.order()[:_TERMINAL_FEATURES]
    shown = {i: _name(intervals.feature_names[i]) for i in order}
    width = max(len(shown[i]) for i in order)
    lines = [
        f"feature importances on the {intervals.n_rows} held-out rows, "
        f"{100 * intervals.confidence:.0f}% interval over {intervals.n_resamples} bootstrap "
        f"resamples of them (top {len(order)} of {len(intervals.feature_names)}):"
    ]
    for i in order:
        lines.append(
            f"  {shown[i]:<{width}}  {100 * intervals.importances[i]:5.1f}% "
            f"({100 * intervals.low[i]:.1f}% to {100 * intervals.high[i]:.1f}%)"
        )
    lines.append(f"ranking: {intervals.verdict()}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
