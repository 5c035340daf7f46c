"""The sections of the HTML page and the helpers that format them: escaped text, embedded PNG
figures, tables of summary rows.

One job: turn a fitted estimator's figures and numbers into HTML fragments (the summary
rows, the collapse warnings, the prediction, support, importance, mask, never-read and
conformal sections). The page
around them, its style, the argument checks and the two ``*_report`` functions that write it
are in :mod:`sk_entmax.report.html_page`.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._common import (
    _class_names,
    _format_share,
    _printable,
)
from .masks import (
    PROOF,
    _draw_importances,
    _draw_mask_sparsity,
    _draw_step_masks,
    _NeverRead,
    _step_masks_size,
    plot_mask_alpha,
)
from .probabilities import _draw_class_support, _draw_probabilities, _draw_support_sizes
from .regression import MAX_PANELS, _draw_predicted_vs_true, _Fit

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from sk_entmax._tabnet.diagnostics import Collapse

    from .conformal import ConformalSets
    from .intervals import ImportanceIntervals


def _escape(text: Any) -> str:
    """``text`` for the page: every character that is not printable written as Python
    writes it in a string literal (ESC reads ``\\x1b``, BEL ``\\x07``, the right-to-left
    override ``\\u202e``), as the terminal output shows it, so that no label or column name
    can hide or reorder what the page shows; then HTML's own characters escaped."""
    return html.escape(_printable(str(text)))


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _img(fig: Figure, alt: str) -> str:
    return f'<img alt="{_escape(alt)}" src="data:image/png;base64,{_png(fig)}">'


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
        row = f"<td>{_escape(names[i])}</td><td>{100 * importances[i]:.2f}%</td>"
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
        f"{_escape(intervals.verdict())}</div>"
    )


def _restored_sections(est: Any, names: list[str]) -> list[str]:
    """A box when the check at the end of a faithful fit's column selection put columns
    back (``restored_features_``): which, and why."""
    from sk_entmax._tabnet.diagnostics import restored_note

    note = restored_note(est, names)
    if note is None:
        return []
    headline, text = note
    return [
        f'<div class="collapse warn"><strong>{_escape(headline)}</strong> {_escape(text)}</div>'
    ]


def _needed_sections(est: Any, names: list[str]) -> list[str]:
    """A box when a faithful fit's column selection kept columns the model's loss still
    depended on (``needed_features_``): which, and why."""
    from sk_entmax._tabnet.diagnostics import needed_note

    note = needed_note(est, names)
    if note is None:
        return []
    return [
        '<div class="collapse ok"><strong>Columns kept because the model needed them.</strong> '
        f"{_escape(note)}</div>"
    ]


def _collapse_sections(collapse: Collapse, faithful: bool) -> list[str]:
    """A box per sign that the fit collapsed on these rows (it reads at most one column, or
    a classifier predicts one class for every row): the first thing under the summary."""
    notes = collapse.notes("This model", f"these {collapse.n_rows} rows", faithful=faithful)
    return [
        f'<div class="collapse warn"><strong>{_escape(headline)}</strong> {_escape(text)}</div>'
        for headline, text in notes
    ]


def _summary(clf: Any, proba: np.ndarray, y: Any) -> list[tuple[str, str]]:
    est = clf[-1] if hasattr(clf, "steps") else clf
    params = est.get_params(deep=False)
    rows = [("model", type(est).__name__)]
    for key in ("entmax_mode", "faithful_masks", "alpha", "n_steps"):
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


def _regressor_summary(clf: Any, n_rows: int, fit: _Fit | None) -> list[tuple[str, str]]:
    """The summary rows of a regressor's report: the model, its mask parameters, the rows,
    and R² and RMSE on them when the true values are given."""
    est = clf[-1] if hasattr(clf, "steps") else clf
    params = est.get_params(deep=False)
    rows = [("model", type(est).__name__)]
    for key in ("entmax_mode", "faithful_masks", "n_steps"):
        if key in params:
            rows.append((key, str(params[key])))
    n_features = getattr(clf, "n_features_in_", "?")
    rows.append(("rows reported on", f"{n_rows} x {n_features} features"))
    n_targets = getattr(est, "n_outputs_", 1)
    if fit is None:
        rows.append(("targets", str(n_targets)))
        return rows
    rows.append(("targets", ", ".join(fit.names)))
    rows.append(("R² on these rows", fit.mean_r2_text()))
    rows.append(("RMSE on these rows", fit.rmse_text()))
    return rows


def _prediction_sections(fit: _Fit | None) -> list[str]:
    """The "Predicted against true" section of a regressor's report: one scatter per target
    with the line y = x, R² and RMSE in the caption; without true values, a note."""
    if fit is None:
        return [
            "<h2>Predicted against true</h2>",
            '<p class="note">No true values were given (<code>y=None</code>): pass '
            "<code>y</code> for the predicted-against-true figure, R² and RMSE.</p>",
        ]
    scores = "; ".join(
        f"{_escape(name)}: {_escape(fit.caption(j))}" for j, name in enumerate(fit.names)
    )
    left_out = (
        f" Panels for the first {MAX_PANELS} of the {fit.n_targets} targets; the scores are "
        "given for all."
        if fit.n_targets > MAX_PANELS
        else ""
    )
    return [
        "<h2>Predicted against true</h2>",
        '<p class="note predicted-vs-true">Each point is a row: its prediction '
        "(<code>predict</code>, vertical) against its true value (horizontal). On the dashed "
        f"line y = x the prediction is exact. {scores}.{left_out}</p>",
        _img(_draw_predicted_vs_true(fit), "predicted against true"),
    ]


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


def _importance_sections(
    importances: np.ndarray,
    names: list[str],
    max_features: int,
    intervals: ImportanceIntervals | None,
) -> list[str]:
    """The global importance chart, with its whiskers, verdict and table when ``intervals``."""
    extra = 0.2 if intervals is not None else 0.0
    ax_imp = _axes((7.5, 1.2 + extra + 0.3 * min(len(names), int(max_features))))
    _draw_importances(ax_imp, importances, names, max_features, intervals)
    return [
        "<h2>Global feature importance</h2>",
        '<p class="note">Each feature\'s share of the TabNet attribution on these rows: its '
        "mask weights, summed over decision steps and weighted by how much each step "
        "contributes to the decision."
        + (
            f" The whiskers span the central {100 * intervals.confidence:.0f}% of each share "
            f"over {intervals.n_resamples} bootstrap resamples of these {intervals.n_rows} rows "
            "(the attributions computed once, no refit)."
            if intervals is not None
            else ""
        )
        + "</p>",
        *([_trust_section(intervals)] if intervals is not None else []),
        _img(ax_imp.figure, "global feature importance"),
        _importance_table(importances, names, intervals),
    ]


def _never_read_section(never: _NeverRead) -> list[str]:
    """Per listed row, the features its prediction provably never read; or, for the paper's
    mask design, a box saying that zero masks prove nothing (and no list)."""
    if not never.faithful:
        return [
            '<div class="never-read warn"><strong>Zero masks are not proof of '
            f"non-use.</strong> {_escape(never.not_proof())}</div>"
        ]
    lines = "".join(
        f"<tr><td>row {_escape(label)}</td><td>{_escape(text)}</td></tr>"
        for label, text in never.row_lines()
    )
    return [
        "<h3>Features each prediction never read</h3>",
        f'<div class="never-read ok">{_escape(PROOF)} Over these {never.n_rows} '
        f"rows: {_escape(never.share_text())} never read.</div>",
        f'<table class="summary never-read">{lines}</table>',
    ]


def _never_read_summary(never: _NeverRead) -> list[tuple[str, str]]:
    """The summary row with the share of (row, feature) pairs never read."""
    if never.faithful:
        text = never.share_text() + ", provably (faithful_masks=True)"
    else:
        text = "not available: with faithful_masks=False a zero mask proves nothing"
    return [("(row, feature) pairs never read", text)]


def _mask_sections(
    clf: Any,
    masks: dict[int, np.ndarray],
    positions: list[int],
    labels: list[str],
    names: list[str],
    max_features: int,
    never: _NeverRead,
) -> list[str]:
    """Each step's mask for the chosen rows and the features their predictions never read,
    then each step's mask sparsity and mask alpha."""
    n_steps = len(masks)
    row_masks = {step: M[positions] for step, M in masks.items()}
    n_mask_features = min(len(names), int(max_features))
    fig_masks = _figure(_step_masks_size(n_steps, len(positions), n_mask_features))
    _draw_step_masks(fig_masks, row_masks, labels, names, max_features)
    ax_sparsity = _axes((3.2 + 0.7 * n_steps, 3.4))
    _draw_mask_sparsity(ax_sparsity, masks, len(names))
    ax_alpha = _axes((3.2 + 0.7 * n_steps, 3.4))
    plot_mask_alpha(clf, ax=ax_alpha)
    if never.faithful:
        zero = "the step does not read that feature for that row at all."
    else:
        zero = (
            "the step leaves that feature out of its masked input for that row, which in "
            "this model's design does not mean the prediction ignores it (see below)."
        )
    return [
        "<h2>Feature masks per decision step</h2>",
        '<p class="note">Which features each step looks at, for a few rows. White cells are '
        f"exactly 0: {zero}</p>",
        _img(fig_masks, "feature masks per step"),
        *_never_read_section(never),
        "<h2>Mask sparsity and mask alpha per step</h2>",
        '<p class="note">Left: the share of mask entries that are exactly 0 over all rows, '
        "with the mean number of features a step reads. Right: the alpha of each step's mask "
        "mapping (1 is softmax, never zero; 2 is sparsemax, the sparsest); in "
        '<code>entmax_mode="adaptive"</code> it is learned.</p>',
        '<div class="row">',
        _img(ax_sparsity.figure, "mask sparsity per step"),
        _img(ax_alpha.figure, "mask alpha per step"),
        "</div>",
    ]


def _indicator_rows(est: Any, names: list[str]) -> list[tuple[str, str]]:
    """The summary row naming the columns that got a learned missing indicator, if any."""
    features = getattr(est, "missing_features_", np.array([], dtype=np.int64))
    # names where the training data had them, else indices
    indicated = [str(f) if features.dtype == object else names[f] for f in features.tolist()]
    if indicated:
        return [
            (
                "learned missing indicators (numeric columns with gaps at fit)",
                ", ".join(indicated),
            )
        ]
    return []


def _conformal_sections(sets: ConformalSets | None) -> list[str]:
    """The "Conformal prediction sets" section: coverage, set sizes, a few rows' sets."""
    if sets is None:
        return []
    covered = int(sets.covered.sum())
    summary = [
        ("target coverage", f"{sets.confidence:g}"),
        (
            "empirical coverage",
            f"{sets.coverage:.3f} ({covered} of {sets.n_rows} sets hold the true label)",
        ),
        ("calibration rows", f"{sets.n_calibration}, {sets.calibration}"),
    ]
    sizes = [
        (f"{size} {'class' if size == 1 else 'classes'}", f"{count} rows")
        for size, count in sets.size_counts()
    ]
    examples = "".join(
        f"<tr><td>{_escape(row)}</td><td>{_escape(true)}</td>"
        f"<td>{_escape(', '.join(kept))}</td>"
        f"<td>{_escape(', '.join(ruled_out) or 'none')}</td>"
        f"<td>{'yes' if hit else 'no'}</td></tr>"
        for row, true, kept, ruled_out, hit in sets.row_sets()
    )
    return [
        "<h2>Conformal prediction sets</h2>",
        '<p class="note">Split-conformal sets (SparseConformalClassifier): the classes left '
        "in the support of the calibrated sparse mapping. Under exchangeability a set holds "
        "the true label with probability at least the target coverage, on average over "
        "rows.</p>",
        f'<table class="summary conformal">{_rows(summary)}</table>',
        "<p>Set sizes:</p>",
        f'<table class="summary set-sizes">{_rows(sizes)}</table>',
        _size_histogram(sets.size_counts()),
        "<p>Coverage per class (on the rows of that class):</p>",
        _class_table(sets),
        "<p>Sets of the first rows:</p>",
        '<table class="summary conformal-rows"><tr><td>row</td><td>true label</td>'
        "<td>in the set</td><td>ruled out</td><td>covered</td></tr>"
        f"{examples}</table>",
    ]


def _size_histogram(counts: list[tuple[int, int]]) -> str:
    """An inline SVG bar chart of the rows per set size (the page stays one file)."""
    if not counts:
        return ""
    top = max(n for _, n in counts)
    width, height, bar = 40 * len(counts) + 20, 140, 28
    parts = [
        f'<svg class="set-size-histogram" role="img" width="{width}" height="{height + 36}" '
        f'viewBox="0 0 {width} {height + 36}"><title>Rows per set size</title>'
    ]
    for i, (size, n) in enumerate(counts):
        h = round(height * n / top) if top else 0
        x = 10 + 40 * i
        parts.append(
            f'<rect x="{x}" y="{height - h + 14}" width="{bar}" height="{h}" fill="#3b6ea5">'
            f"<title>{size} {'class' if size == 1 else 'classes'}: {n} rows</title></rect>"
            f'<text x="{x + bar / 2}" y="{height - h + 10}" font-size="10" '
            f'text-anchor="middle">{n}</text>'
            f'<text x="{x + bar / 2}" y="{height + 28}" font-size="11" '
            f'text-anchor="middle">{size}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _class_table(sets: ConformalSets) -> str:
    """The per-class coverage table: class, rows, covered, coverage, calibration rows."""
    body = "".join(
        f"<tr><td>{_escape(name)}</td><td>{rows}</td><td>{hit}</td>"
        f"<td>{'n/a' if rows == 0 else f'{share:.3f}'}</td>"
        f"<td>{'' if calibration is None else calibration}"
        f"{' (too few for a class-conditional quantile)' if short else ''}</td></tr>"
        for name, rows, hit, share, calibration, short in sets.class_coverage()
    )
    return (
        '<table class="summary class-coverage"><tr><td>class</td><td>rows</td>'
        f"<td>covered</td><td>coverage</td><td>calibration rows</td></tr>{body}</table>"
    )


def _rows(pairs: Sequence[tuple[str, str]]) -> str:
    return "".join(
        f"<tr><td>{_escape(str(k))}</td><td>{_escape(str(v))}</td></tr>" for k, v in pairs
    )
