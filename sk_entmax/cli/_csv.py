"""Reading the user's CSV file: its encoding, its separator, its width, and the target column."""

from __future__ import annotations

import csv
import difflib
import numbers
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sk_entmax.cli._errors import UsageError, _first_line
from sk_entmax.cli._task import _check_regression_target, _check_target, _resolve_task

#: a CSV with more columns is refused before it is parsed (pandas takes seconds per 100000
#: columns, and minutes for a wide header without rows)
MAX_COLUMNS = 100_000
_MAX_HEADER_CHARS = 64 * 2**20
#: the longest column name the report reads (it prints and draws every name; a 100 KB name
#: was printed in full twice, and one over 128 KiB failed in the CSV reader)
MAX_NAME_CHARS = 1000


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


def _sniff(path: Path, encoding: str, *, max_columns: int = MAX_COLUMNS) -> tuple[str, int]:
    """The separator and the number of columns, from the header line; refuses a header of
    more than ``max_columns`` columns or one without any data row, before pandas parses
    it."""
    try:
        with open(path, encoding=encoding, errors="replace", newline="") as handle:
            first = handle.readline(_MAX_HEADER_CHARS)
            if len(first) >= _MAX_HEADER_CHARS:
                raise UsageError(
                    f"{path} has a header line of over {_MAX_HEADER_CHARS} characters; the "
                    f"report reads tables of up to {max_columns} columns"
                )
            has_rows = any(line.strip() for line in iter(lambda: handle.readline(65536), ""))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    sep = max([",", ";", "\t"], key=first.count)
    limit = csv.field_size_limit()
    try:
        csv.field_size_limit(max(limit, _MAX_HEADER_CHARS))
        names = next(csv.reader([first.rstrip("\r\n")], delimiter=sep), [])
    except csv.Error as exc:
        raise UsageError(f"{path} has a header that is not CSV: {exc}") from None
    finally:
        csv.field_size_limit(limit)
    n_columns = len(names)
    longest = max(range(n_columns), key=lambda i: len(names[i]), default=None)
    if longest is not None and len(names[longest]) > MAX_NAME_CHARS:
        raise UsageError(
            f"{path}: the name of column {longest + 1} has {len(names[longest]):,} characters "
            f"(it begins {names[longest][:40]!r}); the report reads column names of up to "
            f"{MAX_NAME_CHARS:,} characters, which it prints and draws"
        )
    if n_columns > max_columns:
        raise UsageError(
            f"{path} has {n_columns} columns; the report reads tables of up to "
            f"{max_columns} columns"
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


def _read_table(
    path: Path, target: str, task: str = "auto", *, max_columns: int = MAX_COLUMNS
) -> _Table:
    """Read the CSV file, find the target column and check it for ``task`` (``--task``);
    the table says which task the target calls for (see :func:`_resolve_task`). A table
    of more than ``max_columns`` columns is refused before it is parsed."""
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
    sep, _ = _sniff(path, encoding, max_columns=max_columns)
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


#: a cell that is a whole number, as written in a CSV file
_WHOLE = re.compile(r"[+-]?[0-9]+")


def _as_numbers(y: Any) -> Any:
    """``y`` as float64 numbers when pandas kept numbers as objects (integers beyond 64 bits,
    such as ``2**70``), else as it is: such a column is a column of numbers, for ``--task``
    and for the fit alike. Integers that float64 would merge (``10**20 + k``) are kept
    exact, as text labels."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        return y
    if all(isinstance(v, str) and _WHOLE.fullmatch(v) for v in y):
        # pandas before 2 reads integers beyond 64 bits as their digits: as Python ints
        y = y.map(int)
    if not all(isinstance(v, numbers.Number) and not isinstance(v, bool) for v in y):
        return y
    as_float = pd.to_numeric(y).astype("float64")
    if as_float.nunique() < y.nunique():
        # distinct integers that float64 cannot tell apart (10**20 and 10**20 + 1): labels,
        # read exactly as their digits, never merged into one
        return y.map(str)
    return as_float


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
    hint = _near_match(columns, target)
    hint = f" (did you mean {hint!r}?)" if hint is not None else ""
    raise UsageError(f"no column {target!r} in {path}{hint}; its columns are: {names}")


def _near_match(columns: list[str], target: str) -> str | None:
    """The column ``target`` was probably meant to name: the one that differs only in case
    (``Vote`` for ``vote``), else the closest name by :func:`difflib.get_close_matches`
    (similarity at least 0.75, case aside), else None."""
    folded = {}
    for column in columns:
        folded.setdefault(str(column).strip().casefold(), column)
    key = target.strip().casefold()
    if key in folded:
        return folded[key]
    close = difflib.get_close_matches(key, list(folded), n=1, cutoff=0.75)
    return folded[close[0]] if close else None
