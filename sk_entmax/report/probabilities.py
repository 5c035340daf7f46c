"""Figures of predicted probabilities: the sparse rows, which classes get mass, support sizes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._common import (
    _as_text,
    _class_names,
    _format_share,
    _mask_zeros,
    _new_axes,
    _positions,
    _proba,
    _rotation,
    _take,
    _zero_white_cmap,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

_MAX_LABEL_CLASSES = 40


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
