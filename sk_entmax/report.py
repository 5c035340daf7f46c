"""Interpretability reports: figures and a self-contained HTML page from fitted estimators.

For a fitted :class:`~sk_entmax.TabNetEntmaxClassifier`: which features the model uses
(:func:`plot_feature_importances`), the mask of every decision step for chosen rows
(:func:`plot_step_masks`), how many mask entries are exactly zero at each step
(:func:`plot_mask_sparsity`) and the alpha of each step's mask mapping
(:func:`plot_mask_alpha`), and how uncertain each importance is over the rows reported on
(:func:`importance_intervals`). For any of the entmax classifiers (or a pipeline ending in one):
the probability support, that is which classes get probability mass
(:func:`plot_class_support`), how many per row (:func:`plot_support_sizes`) and the sparse
probability rows themselves (:func:`plot_probabilities`).

:func:`feature_mask_report` and :func:`probability_support_report` write all of it as one
HTML file with the images embedded, so it can be mailed or archived as is.

Every ``plot_*`` function draws on ``ax`` (or ``fig``) when given, otherwise on a new
:mod:`matplotlib.pyplot` figure, and returns the matplotlib object it drew on. matplotlib is
an optional dependency: ``pip install "sk-entmax[plot]"``.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "ImportanceIntervals",
    "feature_mask_report",
    "importance_intervals",
    "plot_class_support",
    "plot_feature_importances",
    "plot_mask_alpha",
    "plot_mask_sparsity",
    "plot_probabilities",
    "plot_step_masks",
    "plot_support_sizes",
    "probability_support_report",
]

_MISSING_MATPLOTLIB = (
    'sk_entmax.report needs matplotlib, which is an optional extra: pip install "sk-entmax[plot]"'
)

_ZERO_COLOR = "white"
_DEFAULT_ROWS = 8
_MAX_LABEL_CLASSES = 40


# ---------------------------------------------------------------------- helpers


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
            f"{caller} needs a fitted TabNetEntmaxClassifier (or a pipeline ending in one); "
            f"got {type(est).__name__}. For the output probabilities of any entmax "
            "classifier use plot_class_support, plot_support_sizes or "
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


def _proba(clf: Any, X: Any) -> np.ndarray:
    _check_fitted(clf)
    if not hasattr(clf, "predict_proba"):
        raise TypeError(f"{type(clf).__name__} has no predict_proba")
    return np.asarray(clf.predict_proba(X), dtype=np.float64)


def _as_text(labels: Sequence[str]) -> list[str]:
    """Labels for matplotlib, shown as written: it reads text between two ``$`` as math (and
    raises on a bad expression when drawing), unless each ``$`` is escaped as ``\\$``,
    which it then shows as ``$``. Column names, class labels and row labels are data, not
    math."""
    return [str(label).replace("$", r"\$") for label in labels]


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


# ---------------------------------------------------------------------- TabNet figures


def _importances_from(M_explain: np.ndarray) -> np.ndarray:
    total = M_explain.sum(axis=0)
    if total.sum() <= 0:
        return np.full(M_explain.shape[1], 1.0 / M_explain.shape[1])
    return total / total.sum()


#: resampled rows held at once while bootstrapping (resamples x rows)
_BOOTSTRAP_BLOCK = 2**22
_TOP = 3


@dataclass(frozen=True)
class ImportanceIntervals:
    """Feature importances with bootstrap intervals over the rows they were computed on.

    Made by :func:`importance_intervals`; :func:`feature_mask_report` shows them.

    Attributes
    ----------
    feature_names : list of str
        One name per feature, in the columns' order.
    importances : ndarray of shape (n_features,)
        Each feature's share of the summed ``explain`` attributions on all the rows (sums
        to 1).
    low, high : ndarray of shape (n_features,)
        The ends of each share's percentile interval over the bootstrap resamples.
    confidence : float
        The share of the resamples inside each interval, e.g. 0.9.
    n_rows : int
        The rows resampled.
    n_resamples : int
        The bootstrap resamples drawn.
    """

    feature_names: list[str]
    importances: np.ndarray
    low: np.ndarray
    high: np.ndarray
    confidence: float
    n_rows: int
    n_resamples: int

    def order(self) -> np.ndarray:
        """Feature positions from the most important to the least (ties: column order)."""
        return np.argsort(-self.importances, kind="stable")

    def overlapping(self, top: int = _TOP) -> list[tuple[str, str]]:
        """Neighbours in the ranking whose intervals overlap, among the ``top`` features.

        Parameters
        ----------
        top : int, default=3
            Compare the features ranked 1 to ``top`` with the one ranked next each
            (``top=3`` compares 1 with 2, 2 with 3 and 3 with 4).

        Returns
        -------
        list of (str, str)
            ``(better, next)`` name pairs whose order these rows do not settle: the lower
            end of ``better``'s interval is not above the upper end of ``next``'s. Empty
            when every one of those features stands apart from the next.
        """
        top = _check_count(top, "top", minimum=1)
        order = self.order()
        pairs = []
        for a, b in pairwise(order[: top + 1]):
            if self.low[a] <= self.high[b]:
                pairs.append((self.feature_names[a], self.feature_names[b]))
        return pairs

    def verdict(self, top: int = _TOP) -> str:
        """One paragraph in words: whether these rows settle the ranking of the ``top``.

        Parameters
        ----------
        top : int, default=3
            The features ranked 1 to ``top`` (see :meth:`overlapping`).

        Returns
        -------
        str
            Which neighbours' intervals overlap (their order is a tie on these rows), or
            that each stands apart; then what the intervals leave out: the fit's own
            variation with its seed.
        """
        pairs = self.overlapping(top)
        top = min(top, len(self.feature_names))
        level = f"{100 * self.confidence:.0f}%"
        if pairs:
            listed = "; ".join(f"{a!r} and {b!r}" for a, b in pairs)
            which = "their order" if len(pairs) == 1 else "the order within each pair"
            text = (
                f"Not settled: on these {self.n_rows} rows the {level} intervals of {listed} "
                f"overlap, so {which} could come out either way on other rows like these. "
                "Read them as tied."
            )
        else:
            text = (
                f"The top {top} stand apart on these {self.n_rows} rows: each one's {level} "
                "interval lies above the next one's."
            )
        return (
            f"{text} The intervals cover the choice of rows only, not the fit: a refit with "
            "another random_state, or with the columns in another order, can move the "
            "importances further than that. One fit cannot tell; before relying on a "
            "ranking, refit with a few seeds and compare."
        )


def _check_count(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def _check_confidence(confidence: Any) -> float:
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, (int, float, np.floating))
        or not 0.0 < float(confidence) < 1.0
    ):
        raise ValueError(f"confidence must be a number in (0, 1), e.g. 0.9; got {confidence!r}")
    return float(confidence)


def _intervals_from(
    M_explain: np.ndarray,
    names: list[str],
    n_resamples: int,
    confidence: float,
    random_state: Any,
) -> ImportanceIntervals:
    """Percentile intervals of the importance shares over bootstrap resamples of the rows
    of ``M_explain`` (the attributions are computed once; each resample reweights them)."""
    from sklearn.utils import check_random_state

    rng = check_random_state(random_state)
    M = np.asarray(M_explain, dtype=np.float64)
    n, d = M.shape
    shares = np.empty((n_resamples, d))
    block = max(1, _BOOTSTRAP_BLOCK // max(n, 1))
    uniform = np.full(n, 1.0 / n)
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        counts = rng.multinomial(n, uniform, size=size).astype(np.float64)  # rows drawn
        sums = counts @ M
        totals = sums.sum(axis=1, keepdims=True)
        shares[start : start + size] = np.divide(
            sums, totals, out=np.full_like(sums, 1.0 / d), where=totals > 0
        )
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(shares, [tail, 1.0 - tail], axis=0)
    return ImportanceIntervals(
        feature_names=list(names),
        importances=_importances_from(M),
        low=low,
        high=high,
        confidence=confidence,
        n_rows=n,
        n_resamples=n_resamples,
    )


def importance_intervals(
    clf: Any,
    X: Any,
    *,
    n_resamples: int = 200,
    confidence: float = 0.9,
    random_state: int | np.random.RandomState | None = 0,
) -> ImportanceIntervals:
    """Bootstrap intervals of a fitted TabNet's feature importances on the rows of ``X``.

    ``explain`` runs once on ``X``; each resample draws ``len(X)`` of its rows with
    replacement and recomputes every feature's share of the summed attributions, without
    refitting. The interval of a share is the central ``confidence`` part of its resampled
    values.

    The intervals cover the choice of rows only. A refit with another ``random_state``
    (or the same data with its columns in another order) can move the importances much
    further than that: they do not say how stable the fit is.

    Parameters
    ----------
    clf : TabNetEntmaxClassifier or Pipeline ending in one
        A fitted estimator.
    X : array-like or DataFrame of shape (n_samples, n_features)
        The rows to attribute and resample (held-out data says most).
    n_resamples : int, default=200
        Bootstrap resamples (at least 1). The cost is one matrix product per resample,
        small next to ``explain``.
    confidence : float, default=0.9
        The share of the resampled values each interval holds, in (0, 1).
    random_state : int, RandomState instance or None, default=0
        Seeds the resampling; the same seed gives the same intervals.

    Returns
    -------
    ImportanceIntervals
        The importances on all the rows and each one's interval.

    Raises
    ------
    ValueError
        When ``n_resamples`` or ``confidence`` is out of range.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from sk_entmax import TabNetEntmaxClassifier
    >>> from sk_entmax.report import importance_intervals
    >>> X, y = load_wine(return_X_y=True, as_frame=True)
    >>> clf = TabNetEntmaxClassifier(max_epochs=3, random_state=0).fit(X, y)
    >>> found = importance_intervals(clf, X)
    >>> bool((found.low <= found.importances).all() and (found.importances <= found.high).all())
    True
    >>> found.overlapping()  # doctest: +SKIP
    [('proline', 'flavanoids')]
    """
    n_resamples = _check_count(n_resamples, "n_resamples", minimum=1)
    confidence = _check_confidence(confidence)
    est, Xt, names = _tabnet(clf, X, "importance_intervals")
    M_explain, _ = est.explain(Xt)
    return _intervals_from(M_explain, names, n_resamples, confidence, random_state)


def _draw_importances(
    ax: Axes,
    importances: np.ndarray,
    names: list[str],
    max_features: int,
    intervals: ImportanceIntervals | None = None,
) -> Axes:
    order = np.argsort(-importances, kind="stable")[: max(1, int(max_features))]
    shown = importances[order]
    y = np.arange(len(order))
    bars = ax.barh(y, 100 * shown, color="#3b6ea5")
    ax.set_yticks(y, _as_text([names[i] for i in order]))
    ax.invert_yaxis()
    labels = [_format_share(v) for v in shown]
    right = 100 * float(shown.max())
    if intervals is None:
        ax.bar_label(bars, labels=labels, padding=3)
    else:
        low, high = intervals.low[order], intervals.high[order]
        below = np.clip(shown - low, 0.0, None)
        above = np.clip(high - shown, 0.0, None)
        ax.errorbar(
            100 * shown,
            y,
            xerr=100 * np.vstack([below, above]),
            fmt="none",
            ecolor="#222222",
            elinewidth=1.2,
            capsize=3,
        )
        ends = 100 * np.maximum(shown, high)
        for row, (end, label) in enumerate(zip(ends, labels, strict=True)):
            ax.annotate(
                label,
                (end, row),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
                fontsize=9,
            )
        right = float(ends.max())
    ax.set_xlim(0, max(right, 1e-9) * 1.18)
    xlabel = 'share of the attribution, % (100 over all features; "0": exactly zero)'
    if intervals is not None:
        xlabel += (
            f"\nwhiskers: {100 * intervals.confidence:.0f}% interval over "
            f"{intervals.n_resamples} bootstrap resamples of the {intervals.n_rows} rows"
        )
    ax.set_xlabel(xlabel)
    hidden = len(importances) - len(order)
    title = "Global feature importance"
    if hidden:
        rest = float(importances.sum() - shown.sum())
        title += f" ({hidden} more features, {_format_share(rest)} in all, not shown)"
    ax.set_title(title, loc="left")
    ax.spines[["top", "right"]].set_visible(False)
    return ax


def plot_feature_importances(
    clf: Any,
    X: Any = None,
    *,
    max_features: int = 25,
    n_resamples: int = 0,
    confidence: float = 0.9,
    random_state: int | np.random.RandomState | None = 0,
    ax: Axes | None = None,
) -> Axes:
    """Bar chart of the global feature importances of a fitted TabNet, largest on top.

    Parameters
    ----------
    clf : TabNetEntmaxClassifier or Pipeline ending in one
        A fitted estimator.
    X : array-like or DataFrame of shape (n_samples, n_features), default=None
        Data to attribute: each feature's share of the summed ``explain`` attributions.
        ``None`` plots ``feature_importances_`` (computed on the training data). Feature
        names come from the DataFrame's columns when given, else from the fit.
    max_features : int, default=25
        Show at most this many features (the most important ones).
    n_resamples : int, default=0
        With ``X``, draw each importance's bootstrap interval over this many resamples of
        the rows of ``X`` as a whisker (see :func:`importance_intervals`); 0 draws none.
    confidence : float, default=0.9
        The share of the resampled values each whisker spans.
    random_state : int, RandomState instance or None, default=0
        Seeds the resampling.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.axes.Axes
        The axes, one horizontal bar per feature shown, labelled with its name.

    Raises
    ------
    ValueError
        When ``n_resamples`` is positive without ``X`` (there are no rows to resample), or
        ``n_resamples`` or ``confidence`` is out of range.
    """
    n_resamples = _check_count(n_resamples, "n_resamples", minimum=0)
    confidence = _check_confidence(confidence)
    if n_resamples and X is None:
        raise ValueError(
            "n_resamples > 0 needs X, the rows to resample; with X=None the chart shows "
            "feature_importances_ from the fit, without intervals"
        )
    est, Xt, names = _tabnet(clf, X, "plot_feature_importances")
    intervals = None
    if Xt is None:
        importances = np.asarray(est.feature_importances_, dtype=np.float64)
    else:
        M_explain = est.explain(Xt)[0]
        importances = _importances_from(M_explain)
        if n_resamples:
            intervals = _intervals_from(M_explain, names, n_resamples, confidence, random_state)
    if ax is None:
        n_shown = min(len(importances), max(1, int(max_features)))
        ax = _new_axes((7.5, 1.2 + 0.3 * n_shown + (0.2 if intervals else 0.0)))
    return _draw_importances(ax, importances, names, max_features, intervals)


def plot_step_masks(
    clf: Any,
    X: Any,
    rows: Sequence[int] | None = None,
    *,
    max_features: int = 30,
    fig: Figure | None = None,
) -> Figure:
    """Heatmaps of each decision step's feature mask for chosen rows; exact zeros are white.

    Parameters
    ----------
    clf : TabNetEntmaxClassifier or Pipeline ending in one
        A fitted estimator.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Data holding the rows.
    rows : sequence of int, default=None
        Positions of the rows to show (the first 8 when None). A DataFrame's index labels
        name them in the figure.
    max_features : int, default=30
        Show at most this many features, the most important ones for these rows.
    fig : matplotlib Figure, default=None
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.figure.Figure
        One heatmap per step (features down, rows across) and a shared colorbar.
    """
    est, Xt, names = _tabnet(clf, X, "plot_step_masks")
    positions, labels = _positions(X, rows)
    _, masks = est.explain(_take(Xt, positions))
    return _draw_step_masks(fig, masks, labels, names, max_features)


def _step_masks_size(n_steps: int, n_rows: int, n_features: int) -> tuple[float, float]:
    return min(11.0, 2.8 + n_steps * (0.9 + 0.32 * n_rows)), 1.8 + 0.28 * n_features


def _draw_step_masks(
    fig: Figure | None,
    masks: dict[int, np.ndarray],
    labels: list[str],
    names: list[str],
    max_features: int,
) -> Figure:
    steps = sorted(masks)
    weight = sum(masks[s] for s in steps).sum(axis=0)
    features = np.argsort(-weight, kind="stable")[: max(1, int(max_features))]
    features = np.sort(features)  # keep the columns' own order
    n_feat, n_rows = len(features), len(labels)
    if fig is None:
        fig = _new_figure(_step_masks_size(len(steps), n_rows, n_feat))
    axes = fig.subplots(1, len(steps), sharey=True, squeeze=False)[0]
    cmap = _zero_white_cmap()
    rotation = 90 if max(len(label) for label in labels) > 3 else 0
    image = None
    for ax, step in zip(axes, steps, strict=True):
        values = masks[step][:, features].T
        image = ax.imshow(
            _mask_zeros(values),
            cmap=cmap,
            vmin=0.0,
            vmax=1.0,
            aspect="auto",
            interpolation="nearest",
        )
        zeros = float((values == 0).mean())
        ax.set_title(f"step {step + 1}\n{_format_share(zeros)} exactly 0", fontsize=10)
        ax.set_xticks(np.arange(n_rows), _as_text(labels), rotation=rotation, fontsize=8)
        ax.set_xticks(np.arange(n_rows + 1) - 0.5, minor=True)
        ax.set_yticks(np.arange(n_feat + 1) - 0.5, minor=True)
        ax.grid(which="minor", color="#d0d0d0", linewidth=0.6)
        ax.tick_params(which="minor", length=0)
        ax.set_xlabel("row")
    axes[0].set_yticks(np.arange(n_feat), _as_text([names[i] for i in features]), fontsize=9)
    colorbar = fig.colorbar(image, ax=list(axes), shrink=0.9, pad=0.02)
    colorbar.set_label("mask weight (white: exactly 0)")
    fig.suptitle("Feature masks per decision step", x=0.01, ha="left")
    return fig


def plot_mask_sparsity(clf: Any, X: Any, *, ax: Axes | None = None) -> Axes:
    """Share of exact zeros in each decision step's mask over the rows of ``X``.

    Parameters
    ----------
    clf : TabNetEntmaxClassifier or Pipeline ending in one
        A fitted estimator.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Data to compute the masks on.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.axes.Axes
        One bar per step, labelled with the mean number of features the step uses per row.
    """
    est, Xt, names = _tabnet(clf, X, "plot_mask_sparsity")
    _, masks = est.explain(Xt)
    if ax is None:
        ax = _new_axes((1.8 + 1.0 * len(masks), 3.4))
    return _draw_mask_sparsity(ax, masks, len(names))


def _draw_mask_sparsity(ax: Axes, masks: dict[int, np.ndarray], n_features: int) -> Axes:
    steps = sorted(masks)
    zeros = np.array([float((masks[s] == 0).mean()) for s in steps])
    used = np.array([float((masks[s] > 0).sum(axis=1).mean()) for s in steps])
    x = np.arange(len(steps))
    ax.bar(x, 100 * zeros, color="#3b6ea5", width=0.6)
    ax.bar_label(
        ax.containers[-1],
        labels=[f"{u:.1f} of {n_features}\nused" for u in used],
        padding=3,
        fontsize=9,
    )
    ax.set_xticks(x, [f"step {s + 1}" for s in steps])
    ax.set_ylim(0, 118)
    ax.set_yticks([0, 25, 50, 75, 100])
    ax.set_ylabel("mask entries exactly 0 (%)")
    ax.set_title("Mask sparsity per step", loc="left")
    ax.spines[["top", "right"]].set_visible(False)
    return ax


def plot_mask_alpha(clf: Any, *, ax: Axes | None = None) -> Axes:
    """The alpha of each decision step's mask mapping (learned in ``"adaptive"`` mode).

    Parameters
    ----------
    clf : TabNetEntmaxClassifier or Pipeline ending in one
        A fitted estimator.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.axes.Axes
        One bar per step, from 1 (softmax) up to its alpha, with the reference alphas of
        softmax, 1.5-entmax and sparsemax drawn across.
    """
    est, _, _ = _tabnet(clf, None, "plot_mask_alpha")
    alphas = np.asarray(est.mask_alpha_, dtype=np.float64)
    if ax is None:
        ax = _new_axes((2.6 + 1.0 * len(alphas), 3.4))
    x = np.arange(len(alphas))
    for level, label in ((1.0, "softmax"), (1.5, "1.5-entmax"), (2.0, "sparsemax")):
        ax.axhline(level, color="#888888", linestyle=":", linewidth=1)
        ax.text(len(alphas) - 0.45, level, f" {label}", va="center", fontsize=8, color="#555")
    ax.bar(x, alphas - 1.0, bottom=1.0, color="#c0703b", width=0.6)
    ax.bar_label(ax.containers[-1], labels=[f"{a:.3f}" for a in alphas], padding=3)
    ax.set_xticks(x, [f"step {s + 1}" for s in range(len(alphas))])
    ax.set_xlim(-0.6, len(alphas) + 0.4)
    ax.set_ylim(0.9, 2.2)
    ax.set_ylabel("mask alpha")
    mode = getattr(est, "entmax_mode", "")
    how = "learned" if mode == "adaptive" else "fixed"
    ax.set_title(_as_text([f"Mask alpha per step ({mode}, {how})"])[0], loc="left")
    ax.spines[["top", "right"]].set_visible(False)
    return ax


# ---------------------------------------------------------------------- output figures


def plot_probabilities(
    clf: Any, X: Any, rows: Sequence[int] | None = None, *, ax: Axes | None = None
) -> Axes:
    """Heatmap of ``predict_proba`` for chosen rows: values written in, exact zeros white.

    Parameters
    ----------
    clf : classifier with predict_proba
        A fitted classifier (any, so that softmax models can be shown next to sparse ones).
    X : array-like or DataFrame of shape (n_samples, n_features)
        Data holding the rows.
    rows : sequence of int, default=None
        Positions of the rows to show (the first 8 when None).
    ax : matplotlib Axes, default=None
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.axes.Axes
        Rows down, classes across.
    """
    positions, labels = _positions(X, rows)
    proba = _proba(clf, _take(X, positions))
    classes = _class_names(clf)
    if ax is None:
        ax = _new_axes((1.6 + 0.7 * len(classes), 1.2 + 0.35 * len(labels)))
    return _draw_probabilities(ax, proba, labels, classes)


def _draw_probabilities(
    ax: Axes, proba: np.ndarray, labels: list[str], classes: list[str]
) -> Axes:
    ax.imshow(
        _mask_zeros(proba),
        cmap=_zero_white_cmap("Blues"),
        vmin=0.0,
        vmax=1.0,
        aspect="auto",
        interpolation="nearest",
    )
    if len(classes) <= 15:
        for (i, j), p in np.ndenumerate(proba):
            text = "0" if p == 0 else "1" if p == 1 else f"{p:.2f}" if p >= 0.005 else f"{p:.0e}"
            color = "white" if p > 0.6 else ("#999999" if p == 0 else "black")
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color)
    ax.set_xticks(np.arange(len(classes)), _as_text(classes), rotation=_rotation(classes))
    ax.set_yticks(np.arange(len(labels)), _as_text(labels))
    ax.set_xticks(np.arange(len(classes) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(labels) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="#d0d0d0", linewidth=0.6)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel("class")
    ax.set_ylabel("row")
    return ax


def plot_class_support(clf: Any, X: Any, *, ax: Axes | None = None) -> Axes:
    """For each class, the share of rows whose predicted probability for it is nonzero.

    Parameters
    ----------
    clf : classifier with predict_proba
        A fitted classifier (an entmax classifier, or a pipeline ending in one).
    X : array-like or DataFrame of shape (n_samples, n_features)
        Data to predict on.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.axes.Axes
        One bar per class.
    """
    proba = _proba(clf, X)
    classes = _class_names(clf)
    if ax is None:
        ax = _new_axes((2.4 + 0.55 * len(classes), 3.4))
    return _draw_class_support(ax, proba, classes)


def _draw_class_support(ax: Axes, proba: np.ndarray, classes: list[str]) -> Axes:
    share = (proba > 0).mean(axis=0)
    x = np.arange(len(classes))
    ax.bar(x, 100 * share, color="#3b6ea5", width=0.6)
    if len(classes) <= _MAX_LABEL_CLASSES:
        ax.bar_label(
            ax.containers[-1], labels=[_format_share(s) for s in share], padding=2, fontsize=8
        )
        ax.set_xticks(x, _as_text(classes), rotation=_rotation(classes))
    ax.set_ylim(0, 112)
    ax.set_yticks([0, 25, 50, 75, 100])
    ax.set_xlabel("class")
    ax.set_ylabel("rows with probability > 0 (%)")
    ax.set_title("Which classes get probability mass", loc="left")
    ax.spines[["top", "right"]].set_visible(False)
    return ax


def plot_support_sizes(clf: Any, X: Any, *, ax: Axes | None = None) -> Axes:
    """Histogram of the support size: the number of classes with nonzero probability per row.

    Parameters
    ----------
    clf : classifier with predict_proba
        A fitted classifier (an entmax classifier, or a pipeline ending in one).
    X : array-like or DataFrame of shape (n_samples, n_features)
        Data to predict on.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.axes.Axes
        One bar per support size from 1 to the number of classes.
    """
    proba = _proba(clf, X)
    if ax is None:
        ax = _new_axes((2.4 + 0.45 * proba.shape[1], 3.4))
    return _draw_support_sizes(ax, proba)


def _draw_support_sizes(ax: Axes, proba: np.ndarray) -> Axes:
    n_classes = proba.shape[1]
    sizes = (proba > 0).sum(axis=1)
    counts = np.bincount(sizes, minlength=n_classes + 1)[1:]
    x = np.arange(1, n_classes + 1)
    ax.bar(x, counts, color="#c0703b", width=0.6)
    if n_classes <= _MAX_LABEL_CLASSES:
        labels = [f"{c}\n({_format_share(c / max(len(sizes), 1))})" if c else "" for c in counts]
        ax.bar_label(ax.containers[-1], labels=labels, padding=2, fontsize=8)
    ax.set_xticks(x if n_classes <= 20 else np.unique(np.linspace(1, n_classes, 10).round()))
    ax.set_ylim(0, max(int(counts.max()), 1) * 1.25)
    ax.set_xlabel("classes with probability > 0 (support size)")
    ax.set_ylabel("rows")
    ax.set_title(f"Support sizes (mean {sizes.mean():.2f} of {n_classes})", loc="left")
    ax.spines[["top", "right"]].set_visible(False)
    return ax


# ---------------------------------------------------------------------- HTML


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       max-width: 1100px; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
p.note { color: #555; margin-top: 0.3em; }
table.summary { border-collapse: collapse; margin: 1em 0; }
table.summary td { padding: 0.2em 1.2em 0.2em 0; }
table.summary td:first-child { color: #555; }
img { max-width: 100%; height: auto; display: block; margin: 0.6em 0; }
.row { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
.row img { max-width: calc(50% - 0.75em); }
footer { margin-top: 3em; color: #888; font-size: 0.85em; }
div.trust { padding: 0.6em 0.9em; margin: 0.8em 0; border-left: 4px solid; }
div.trust.warn { border-color: #c0703b; background: #fbf1ea; }
div.trust.ok { border-color: #3b6ea5; background: #eef3f9; }
"""


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _img(fig: Figure, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{_png(fig)}">'


def _figure(figsize: tuple[float, float]) -> Figure:
    """A figure outside pyplot's state: nothing to close, no backend needed."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, layout="constrained")


def _axes(figsize: tuple[float, float]) -> Axes:
    return _figure(figsize).subplots()


def _interval_text(low: float, high: float) -> str:
    return f"{100 * low:.2f}% to {100 * high:.2f}%"


def _importance_table(
    importances: np.ndarray, names: list[str], intervals: ImportanceIntervals | None = None
) -> str:
    """Every feature's importance as text, under a fold: searchable and copyable."""
    order = np.argsort(-importances, kind="stable")
    head = "<td>feature</td><td>share</td>"
    if intervals is not None:
        head += f"<td>{100 * intervals.confidence:.0f}% interval</td>"
    cells = []
    for i in order:
        row = f"<td>{html.escape(names[i])}</td><td>{100 * importances[i]:.2f}%</td>"
        if intervals is not None:
            row += f"<td>{_interval_text(intervals.low[i], intervals.high[i])}</td>"
        row += f"<td>{'exactly 0' if importances[i] == 0 else ''}</td>"
        cells.append(f"<tr>{row}</tr>")
    return (
        f"<details><summary>All {len(names)} features as a table</summary>"
        f'<table class="summary"><tr>{head}<td></td></tr>{"".join(cells)}'
        "</table></details>"
    )


def _trust_section(intervals: ImportanceIntervals) -> str:
    """The verdict on the ranking, in a box that stands out when the ranking is a tie."""
    kind = "warn" if intervals.overlapping() else "ok"
    return (
        f'<div class="trust {kind}"><strong>Can this ranking be trusted?</strong> '
        f"{html.escape(intervals.verdict())}</div>"
    )


def _summary(clf: Any, proba: np.ndarray, y: Any) -> list[tuple[str, str]]:
    est = clf[-1] if hasattr(clf, "steps") else clf
    params = est.get_params(deep=False)
    rows = [("model", type(est).__name__)]
    for key in ("entmax_mode", "alpha", "n_steps"):
        if key in params:
            rows.append((key, str(params[key])))
    n_features = getattr(clf, "n_features_in_", "?")
    rows.append(("rows reported on", f"{proba.shape[0]} x {n_features} features"))
    classes = _class_names(clf)
    rows.append(("classes", ", ".join(classes[:20]) + (" ..." if len(classes) > 20 else "")))
    if y is not None and not getattr(est, "multilabel_", False):
        # predict is the argmax of predict_proba (the estimators define it so)
        predicted = np.asarray(clf.classes_)[proba.argmax(axis=1)]
        accuracy = float(np.mean(predicted == np.asarray(y)))
        rows.append(("accuracy on these rows", f"{accuracy:.3f}"))
    rows.append(("predict_proba entries exactly 0", _format_share(float((proba == 0).mean()))))
    rows.append(
        (
            "mean support (classes with probability > 0)",
            f"{(proba > 0).sum(axis=1).mean():.2f} of {proba.shape[1]}",
        )
    )
    return rows


def _support_sections(
    clf: Any, proba: np.ndarray, positions: list[int], labels: list[str]
) -> list[str]:
    classes = _class_names(clf)
    n_classes = len(classes)
    ax_rows = _axes((1.8 + 0.7 * min(n_classes, 15), 1.3 + 0.35 * len(positions)))
    _draw_probabilities(ax_rows, proba[positions], labels, classes)
    ax_support = _axes((2.6 + 0.55 * min(n_classes, 30), 3.4))
    _draw_class_support(ax_support, proba, classes)
    ax_sizes = _axes((2.6 + 0.45 * min(n_classes, 30), 3.4))
    _draw_support_sizes(ax_sizes, proba)
    return [
        "<h2>Sparse probabilities</h2>",
        '<p class="note">Rows of <code>predict_proba</code>: white cells are exactly 0, not '
        "merely small. Each row sums to 1.</p>",
        _img(ax_rows.figure, "predict_proba rows"),
        "<h2>Probability support</h2>",
        '<p class="note">Left: for each class, the share of rows that give it any probability '
        "at all. Right: how many classes each row keeps (its support size).</p>",
        '<div class="row">',
        _img(ax_support.figure, "classes with probability mass"),
        _img(ax_sizes.figure, "support sizes"),
        "</div>",
    ]


def _rows(pairs: Sequence[tuple[str, str]]) -> str:
    return "".join(
        f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>" for k, v in pairs
    )


def _check_data(data: Sequence[tuple[str, str]] | None) -> list[tuple[str, str]]:
    if data is None:
        return []
    pairs = list(data)
    if not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs):
        raise ValueError(
            "data must be a sequence of (label, text) pairs, e.g. [('rows dropped', '3')]"
        )
    return [(str(k), str(v)) for k, v in pairs]


def _write_html(
    path: str | Path,
    title: str,
    summary: list[tuple[str, str]],
    sections: list[str],
    data: list[tuple[str, str]] | None = None,
) -> Path:
    from sk_entmax import __version__

    table = _rows(summary)
    prepared = (
        [
            "<h2>Data</h2>",
            '<p class="note">What was done to the data before the model saw it.</p>',
            f'<table class="summary">{_rows(data)}</table>',
        ]
        if data
        else []
    )
    page = "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{_CSS}</style></head><body>",
            f"<h1>{html.escape(title)}</h1>",
            f'<table class="summary">{table}</table>',
            *prepared,
            *sections,
            f"<footer>Written by sk_entmax {html.escape(__version__)}.</footer>",
            "</body></html>",
        ]
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path.resolve()


def feature_mask_report(
    clf: Any,
    X: Any,
    path: str | Path,
    *,
    y: Any = None,
    rows: Sequence[int] | None = None,
    max_features: int = 25,
    title: str | None = None,
    data: Sequence[tuple[str, str]] | None = None,
    n_resamples: int = 200,
    confidence: float = 0.9,
    random_state: int | np.random.RandomState | None = 0,
) -> Path:
    """Write a self-contained HTML report of a fitted TabNet's feature masks.

    The page holds the global feature importances on ``X`` with a bootstrap interval for
    each (over resamples of the rows of ``X``, see :func:`importance_intervals`) and a
    verdict on whether those rows settle the ranking of the top features, each decision
    step's mask for the chosen rows, the share of exact zeros in each step's mask, each
    step's mask alpha, and the sparsity of the output probabilities. Images are embedded as
    PNG, so the file stands alone.

    Parameters
    ----------
    clf : TabNetEntmaxClassifier or Pipeline ending in one
        A fitted estimator.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Data to report on (held-out data says most). DataFrame columns name the features.
    path : str or path-like
        Where to write the HTML file (parent folders are created).
    y : array-like of shape (n_samples,), default=None
        True labels of ``X``; when given, the accuracy on ``X`` is reported.
    rows : sequence of int, default=None
        Positions of the rows whose masks and probabilities are shown (the first 8).
    max_features : int, default=25
        At most this many features in the importance chart and the mask heatmaps.
    title : str, default=None
        Page title.
    data : sequence of (str, str), default=None
        How the data was prepared, as (label, text) pairs shown in a "Data" table near the
        top: rows dropped, values filled, the training size, ... (``python -m sk_entmax
        report`` passes them).
    n_resamples : int, default=200
        Bootstrap resamples of the rows of ``X`` for the importance intervals; 0 leaves the
        intervals and the verdict out.
    confidence : float, default=0.9
        The share of the resampled values each interval holds, in (0, 1).
    random_state : int, RandomState instance or None, default=0
        Seeds the resampling: the same seed writes the same intervals.

    Returns
    -------
    pathlib.Path
        The absolute path of the file written.

    Raises
    ------
    ValueError
        When ``n_resamples`` or ``confidence`` is out of range, or ``data`` is not a
        sequence of pairs.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from sk_entmax import TabNetEntmaxClassifier
    >>> from sk_entmax.report import feature_mask_report
    >>> X, y = load_wine(return_X_y=True, as_frame=True)
    >>> clf = TabNetEntmaxClassifier(max_epochs=3, random_state=0).fit(X, y)
    >>> path = feature_mask_report(clf, X, "wine_masks.html")  # doctest: +SKIP
    """
    _require_matplotlib()
    data = _check_data(data)
    n_resamples = _check_count(n_resamples, "n_resamples", minimum=0)
    confidence = _check_confidence(confidence)
    est, Xt, names = _tabnet(clf, X, "feature_mask_report")
    positions, labels = _positions(X, rows)
    M_explain, masks = est.explain(Xt)
    importances = _importances_from(M_explain)
    intervals = (
        _intervals_from(M_explain, names, n_resamples, confidence, random_state)
        if n_resamples
        else None
    )
    proba = _proba(clf, X)
    n_steps = len(masks)

    extra = 0.2 if intervals is not None else 0.0
    ax_imp = _axes((7.5, 1.2 + extra + 0.3 * min(len(names), int(max_features))))
    _draw_importances(ax_imp, importances, names, max_features, intervals)
    row_masks = {step: M[positions] for step, M in masks.items()}
    n_mask_features = min(len(names), int(max_features))
    fig_masks = _figure(_step_masks_size(n_steps, len(positions), n_mask_features))
    _draw_step_masks(fig_masks, row_masks, labels, names, max_features)
    ax_sparsity = _axes((3.2 + 0.7 * n_steps, 3.4))
    _draw_mask_sparsity(ax_sparsity, masks, len(names))
    ax_alpha = _axes((3.2 + 0.7 * n_steps, 3.4))
    plot_mask_alpha(clf, ax=ax_alpha)
    sections = [
        "<h2>Global feature importance</h2>",
        '<p class="note">Each feature\'s share of the TabNet attribution on these rows: its '
        "mask weights, summed over decision steps and weighted by how much each step "
        "contributes to the decision."
        + (
            f" The whiskers span the central {100 * confidence:.0f}% of each share over "
            f"{n_resamples} bootstrap resamples of these {Xt.shape[0]} rows (the "
            "attributions computed once, no refit)."
            if intervals is not None
            else ""
        )
        + "</p>",
        *([_trust_section(intervals)] if intervals is not None else []),
        _img(ax_imp.figure, "global feature importance"),
        _importance_table(importances, names, intervals),
        "<h2>Feature masks per decision step</h2>",
        '<p class="note">Which features each step looks at, for a few rows. White cells are '
        "exactly 0: the step does not read that feature for that row at all.</p>",
        _img(fig_masks, "feature masks per step"),
        "<h2>Mask sparsity and mask alpha per step</h2>",
        '<p class="note">Left: the share of mask entries that are exactly 0 over all rows, '
        "with the mean number of features a step reads. Right: the alpha of each step's mask "
        "mapping (1 is softmax, never zero; 2 is sparsemax, the sparsest); in "
        '<code>entmax_mode="adaptive"</code> it is learned.</p>',
        '<div class="row">',
        _img(ax_sparsity.figure, "mask sparsity per step"),
        _img(ax_alpha.figure, "mask alpha per step"),
        "</div>",
        *_support_sections(clf, proba, positions, labels),
    ]
    title = title or f"Feature-mask report: {type(est).__name__}"
    summary = _summary(clf, proba, y)
    indicated = [names[i] for i in getattr(est, "missing_features_", [])]
    if indicated:
        summary.append(
            (
                "learned missing indicators (numeric columns with gaps at fit)",
                ", ".join(indicated),
            )
        )
    return _write_html(path, title, summary, sections, data)


def probability_support_report(
    clf: Any,
    X: Any,
    path: str | Path,
    *,
    y: Any = None,
    rows: Sequence[int] | None = None,
    title: str | None = None,
    data: Sequence[tuple[str, str]] | None = None,
) -> Path:
    """Write a self-contained HTML report of a classifier's sparse probabilities.

    For :class:`~sk_entmax.SparsemaxClassifier`, :class:`~sk_entmax.EntmaxClassifier` (or
    any classifier with ``predict_proba``, a pipeline included): a few probability rows,
    which classes get probability mass, and the distribution of support sizes.

    Parameters
    ----------
    clf : classifier with predict_proba
        A fitted classifier.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Data to report on.
    path : str or path-like
        Where to write the HTML file (parent folders are created).
    y : array-like of shape (n_samples,), default=None
        True labels of ``X``; when given, the accuracy on ``X`` is reported.
    rows : sequence of int, default=None
        Positions of the rows whose probabilities are shown (the first 8).
    title : str, default=None
        Page title.
    data : sequence of (str, str), default=None
        How the data was prepared, as (label, text) pairs shown in a "Data" table near the
        top (see :func:`feature_mask_report`).

    Returns
    -------
    pathlib.Path
        The absolute path of the file written.
    """
    _require_matplotlib()
    data = _check_data(data)
    proba = _proba(clf, X)
    positions, labels = _positions(X, rows)
    est = clf[-1] if hasattr(clf, "steps") else clf
    title = title or f"Probability support report: {type(est).__name__}"
    sections = _support_sections(clf, proba, positions, labels)
    return _write_html(path, title, _summary(clf, proba, y), sections, data)
