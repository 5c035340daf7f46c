"""What the target column is (``--task``): regression or classification, and whether the
target fits the task."""

from __future__ import annotations

import math
import numbers
from typing import Any

from sk_entmax.cli._errors import UsageError

#: ``--task auto``: a numeric target of whole numbers is read as a regression target when it
#: has more than this many distinct values ...
MAX_AUTO_CLASSES = 20
#: ... and more than this share of its rows are distinct values
MIN_DISTINCT_SHARE = 0.05
#: the most classes a report is made for: it draws and tabulates each class (a probability
#: column, a row of the per-class figures), and its fits grow with the class count (20,000
#: classes asked L-BFGS for gigabytes and TabNet for minutes per epoch)
MAX_REPORT_CLASSES = 1000
#: the most a regression target may stray from its mean for the report: its squared errors,
#: summed over the rows, stay within float64 (1e200 gave "RMSE inf" after 10 warnings)
MAX_REPORT_SPREAD = 1e150
#: "many small classes": more than this many classes, half of them with fewer rows than this
_MANY_CLASSES = 10
_SMALL_CLASS = 10


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
    spread = float(np.max(np.abs(values - values.mean()))) if values.size else 0.0
    if not spread <= MAX_REPORT_SPREAD:
        raise UsageError(
            f"column {target!r} has values {spread:.3g} from their mean; the report's R² "
            f"and RMSE square them, which overflows beyond about {MAX_REPORT_SPREAD:.0e}: "
            "rescale the target (divide it by a power of ten) and run the report again"
        )
    if y.nunique() < 2:
        value = y.iloc[0]
        value = value.item() if hasattr(value, "item") else value  # 2, not np.int64(2)
        raise UsageError(
            f"column {target!r} holds a single value ({value!r}) in every row; a "
            "regressor needs a target that varies"
        )


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
    if n_classes > MAX_REPORT_CLASSES:
        raise UsageError(
            f"column {target!r} has {n_classes:,} classes; the report is made for at most "
            f"{MAX_REPORT_CLASSES:,}: it shows every class (a probability column, a row of "
            "per-class figures), and its models grow with the classes. Group the rare "
            "classes, or fit the estimators from Python"
        )
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
