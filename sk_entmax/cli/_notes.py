"""What the report did to the data before the fit, as (label, text) notes for the terminal
and the HTML report: nothing is dropped or filled without saying so."""

from __future__ import annotations

from typing import Any

from sk_entmax.cli._csv import _Table
from sk_entmax.cli._printing import _name


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
