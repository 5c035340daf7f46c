"""Figures of a fitted TabNet's feature masks: importances, step masks, mask sparsity and
alpha; and which features each prediction provably never read (``faithful_masks=True``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._common import (
    _as_text,
    _format_share,
    _mask_zeros,
    _new_axes,
    _new_figure,
    _positions,
    _tabnet,
    _take,
    _zero_white_cmap,
)
from .intervals import _check_confidence, _check_count, _importances_from, _intervals_from

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from sk_entmax._tabnet.diagnostics import Collapse

    from .intervals import ImportanceIntervals


#: what the report says of a model fitted with faithful_masks=False (the paper's design)
NOT_PROOF = (
    "This model uses the paper's mask design: the first step reads every feature, so a "
    "feature whose mask is 0 at every step can still change the prediction. Fit with "
    "{how} for masks that certify non-use."
)

#: what the report says of a model fitted with faithful_masks=True
PROOF = (
    "This model uses faithful masks (faithful_masks=True): each step reads only the features "
    "its mask keeps, so a feature whose mask is 0 at every step provably did not influence "
    "that row's prediction, whatever its value."
)


def _share_text(share: float) -> str:
    if share == 0:
        return "0%"
    if share < 0.001:
        return "<0.1%"
    return f"{100 * share:.1f}%"


@dataclass(frozen=True)
class _NeverRead:
    """Which features the predictions on some rows provably never read.

    ``faithful`` False: the model's masks prove nothing (the paper's design), and nothing
    was computed: ``n_never`` is 0 and ``unread`` empty; show :meth:`not_proof` instead.
    """

    faithful: bool
    feature_names: list[str]
    n_rows: int  # the rows the share is over
    n_never: int  # (row, feature) pairs never read, over those rows
    labels: list[str]  # the rows listed one by one
    unread: list[list[int]]  # per listed row, the positions of the features it never read
    # per feature, whether some row's prediction reads it (None when not faithful)
    ever_read: np.ndarray | None = None

    @property
    def n_pairs(self) -> int:
        return self.n_rows * len(self.feature_names)

    @property
    def share(self) -> float:
        return self.n_never / self.n_pairs if self.n_pairs else 0.0

    def share_text(self) -> str:
        """``6.8% (13 of 190 (row, feature) pairs)``."""
        counts = f"{self.n_never} of {self.n_pairs} (row, feature) pairs"
        return f"{_share_text(self.share)} ({counts})"

    def row_lines(self, name: Callable[[str], str] = str) -> list[tuple[str, str]]:
        """(row label, "this prediction never read: a, b") for each listed row ("none" when
        it read every feature); ``name`` writes a feature name."""
        return [
            (
                label,
                "this prediction never read: "
                + (", ".join(name(self.feature_names[i]) for i in features) or "none"),
            )
            for label, features in zip(self.labels, self.unread, strict=True)
        ]

    @staticmethod
    def not_proof(how: str = "faithful_masks=True") -> str:
        """The statement that zero masks prove nothing, with ``how`` to fit a model whose
        masks do."""
        return NOT_PROOF.format(how=how)


def _never_read(
    est: Any, Xt: Any, names: list[str], positions: list[int], labels: list[str]
) -> _NeverRead:
    """``est.never_read`` on the rows of ``Xt`` (once, all rows) when the model was fitted
    with ``faithful_masks=True``; the rows at ``positions`` listed one by one."""
    # the fitted network's design, not the parameter (set_params after fit changes the latter)
    if not est.net_.module_.tabnet.faithful_masks:
        return _NeverRead(False, names, int(Xt.shape[0]), 0, labels, [])
    never = np.asarray(est.never_read(Xt), dtype=bool)
    unread = [np.flatnonzero(never[p]).tolist() for p in positions]
    ever_read = ~never.all(axis=0)
    return _NeverRead(True, names, never.shape[0], int(never.sum()), labels, unread, ever_read)


def _collapse(
    never: _NeverRead,
    importances: np.ndarray | None,
    predicted: np.ndarray | None = None,
    n_classes: int = 0,
) -> Collapse:
    """What the rows ``never`` is over show of a collapsed fit (:mod:`sk_entmax._tabnet.
    diagnostics`): the features read (a share of ``importances`` above 0, when given, and
    with faithful masks some row reading them) and whether the ``predicted`` labels (a
    single-label classifier's; None for a regressor) are one of several (``n_classes``)."""
    from sk_entmax._tabnet.diagnostics import Collapse

    d = len(never.feature_names)
    return Collapse.of_rows(
        never.feature_names,
        never.n_rows,
        np.ones(d) if importances is None else importances,
        never.ever_read if never.faithful else None,
        predicted,
        n_classes,
    )


def _never_read_rows(clf: Any, X: Any, rows: Sequence[int] | None = None) -> _NeverRead:
    """What :func:`~sk_entmax.report.feature_mask_report` shows of the features never read:
    the share over the rows of ``X`` and the rows ``rows`` (the first 8) one by one."""
    est, Xt, names = _tabnet(clf, X, "the never-read list")
    positions, labels = _positions(X, rows)
    return _never_read(est, Xt, names, positions, labels)


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
    n_resamples = _check_count(n_resamples, "n_resamples", 0, "plot_feature_importances")
    confidence = _check_confidence(confidence, "plot_feature_importances")
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
