"""What the report modules share: loading matplotlib, checking and unwrapping the estimator,
choosing rows, writing labels and shares as text, and writing a report file to disk."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sk_entmax._files import check_target, write_whole

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_MISSING_MATPLOTLIB = (
    "sk_entmax.report needs matplotlib, an optional dependency: pip install matplotlib (or, "
    'in a clone of sk_entmax, pip install -e ".[plot]")'
)

_ZERO_COLOR = "white"
_DEFAULT_ROWS = 8


def _require_matplotlib() -> None:
    """Raise an ImportError naming the ``plot`` extra when matplotlib is missing.

    Raises
    ------
    ImportError
        When matplotlib cannot be imported.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError(_MISSING_MATPLOTLIB) from exc


def _new_axes(figsize: tuple[float, float]) -> Axes:
    _require_matplotlib()
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _new_figure(figsize: tuple[float, float]) -> Figure:
    _require_matplotlib()
    import matplotlib.pyplot as plt

    return plt.figure(figsize=figsize, layout="constrained")


def _zero_white_cmap(name: str = "viridis"):
    import matplotlib

    return matplotlib.colormaps[name].with_extremes(bad=_ZERO_COLOR)


def _check_fitted(clf: Any) -> None:
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(clf)


def _split_pipeline(clf: Any, X: Any) -> tuple[Any, Any, list[str] | None]:
    """The final estimator, ``X`` as it sees it, and the feature names that go with it."""
    _check_fitted(clf)
    if hasattr(clf, "steps") and len(clf.steps) > 1:
        head = clf[:-1]
        Xt = head.transform(X) if X is not None else None
        try:
            names = [str(n) for n in head.get_feature_names_out()]
        except (AttributeError, ValueError, TypeError):
            names = None
        return clf[-1], Xt, names
    if hasattr(clf, "steps"):
        clf = clf[-1]
    columns = getattr(X, "columns", None)
    names = [str(c) for c in columns] if columns is not None else None
    return clf, X, names


def _tabnet(clf: Any, X: Any, caller: str) -> tuple[Any, Any, list[str]]:
    est, Xt, names = _split_pipeline(clf, X)
    if not (hasattr(est, "explain") and hasattr(est, "mask_alpha_")):
        raise TypeError(
            f"{caller} needs a fitted TabNetEntmaxClassifier or TabNetEntmaxRegressor (or a "
            f"pipeline ending in one); got {type(est).__name__}. For the output probabilities "
            "of any entmax classifier use plot_class_support, plot_support_sizes or "
            "probability_support_report."
        )
    if names is None:
        fitted = getattr(est, "feature_names_in_", None)
        if fitted is not None:
            names = [str(n) for n in fitted]
        else:
            names = [f"x{i}" for i in range(est.n_features_in_)]
    return est, Xt, names


def _positions(X: Any, rows: Sequence[int] | None) -> tuple[list[int], list[str]]:
    """Positions of the chosen ``rows`` of ``X`` (the first few by default) and their labels."""
    n = X.shape[0]
    if rows is None:
        rows = list(range(min(_DEFAULT_ROWS, n)))
    rows = [int(r) for r in np.atleast_1d(np.asarray(rows))]
    if not rows:
        raise ValueError("rows must name at least one row of X")
    bad = [r for r in rows if not -n <= r < n]
    if bad:
        raise ValueError(f"rows {bad} are outside X, which has {n} rows")
    rows = [r % n for r in rows]
    index = getattr(X, "index", None)
    labels = [str(index[r]) for r in rows] if index is not None else [str(r) for r in rows]
    return rows, labels


def _take(X: Any, rows: list[int]) -> Any:
    if hasattr(X, "iloc"):
        return X.iloc[rows]
    if hasattr(X, "tocsr"):
        return X.tocsr()[rows]
    return np.asarray(X)[rows]


def _mask_zeros(values: np.ndarray) -> np.ma.MaskedArray:
    """Hide exact zeros, which the colormap then paints white."""
    return np.ma.masked_where(values == 0, values)


def _class_names(clf: Any) -> list[str]:
    return [str(c) for c in clf.classes_]


def _is_regressor(est: Any) -> bool:
    """Whether ``est`` (a final step, not a pipeline) is a regressor, by scikit-learn's tags."""
    from sklearn.base import is_regressor

    return bool(is_regressor(est))


def _proba(clf: Any, X: Any) -> np.ndarray:
    _check_fitted(clf)
    est = clf[-1] if hasattr(clf, "steps") else clf
    if _is_regressor(est):
        raise TypeError(
            f"{type(est).__name__} is a regressor: it has no predict_proba, and the "
            "probability figures and probability_support_report are for classifiers; for a "
            "TabNetEntmaxRegressor use feature_mask_report (masks, importances and predicted "
            "against true values)"
        )
    if not hasattr(clf, "predict_proba"):
        raise TypeError(f"{type(clf).__name__} has no predict_proba")
    return np.asarray(clf.predict_proba(X), dtype=np.float64)


def _printable(text: str) -> str:
    """``text`` with every character that is not printable written as Python writes it in a
    string literal: control characters (the escape that starts a terminal's colour codes
    reads ``\\x1b``, a line break ``\\n``) and invisible format characters (``\\u200b``).

    Printable characters, ordinary unicode letters included, are left as they are (the test
    is :meth:`str.isprintable`, the one :func:`repr` uses), so ``"été"`` stays ``"été"``.
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _as_text(labels: Sequence[str]) -> list[str]:
    """Labels for matplotlib, shown as written: it reads text between two ``$`` as math (and
    raises on a bad expression when drawing), unless each ``$`` is escaped as ``\\$``,
    which it then shows as ``$``. Column names, class labels and row labels are data, not
    math. Characters that are not printable are shown escaped (see :func:`_printable`):
    fonts have no glyph for them."""
    return [_printable(str(label)).replace("$", r"\$") for label in labels]


def _rotation(labels: Sequence[str]) -> int:
    """Tilt tick labels that would run into each other side by side."""
    return 45 if len(labels) > 3 and max(len(label) for label in labels) > 4 else 0


def _format_share(value: float) -> str:
    """A share as a percentage; an exact 0 stays "0", a tiny positive share reads "<0.1%"."""
    if value == 0:
        return "0"
    if value < 0.001:
        return "<0.1%"
    return f"{100 * value:.0f}%" if value >= 0.0995 else f"{100 * value:.1f}%"


# ---------------------------------------------------------------------- writing the file


def _existing(path: Path, shown: str) -> int | None:
    """The permission bits of the regular file at ``path``, None when there is nothing;
    a link, a folder or a special file raises an OSError naming ``shown`` (see
    :func:`sk_entmax._files.check_target`)."""
    return check_target(path, shown, "a report")


def _write_atomically(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path``: whole, or not at all, and never through a link
    (see :func:`sk_entmax._files.write_whole`, which says what is refused).

    Parameters
    ----------
    path : str or path-like
        Where to write. Links in its folders are followed (they are the user's choice of
        folder); a link at the path itself is not.
    text : str
        The file's content.

    Returns
    -------
    pathlib.Path
        The path written: its folder resolved to an absolute path without links, then the
        file name as given.

    Raises
    ------
    OSError
        When the file cannot be written, or ``path`` is a link or not a regular file.
    """
    return write_whole(path, text.encode("utf-8"), "a report")
