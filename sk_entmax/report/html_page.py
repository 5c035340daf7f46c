"""The self-contained HTML page: its style, its frame and the two ``*_report`` functions that
write it (the sections and their formatting helpers are in :mod:`._page_sections`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sk_entmax.entmax.constraints import invalid

from ._common import (
    _existing,
    _is_regressor,
    _positions,
    _proba,
    _require_matplotlib,
    _tabnet,
    _write_atomically,
)
from ._page_sections import (
    _collapse_sections,
    _conformal_sections,
    _escape,
    _importance_sections,
    _indicator_rows,
    _mask_sections,
    _needed_sections,
    _never_read_summary,
    _prediction_sections,
    _regressor_summary,
    _restored_sections,
    _rows,
    _summary,
    _support_sections,
)
from .intervals import _check_confidence, _check_count, _importances_from, _intervals_from
from .masks import _collapse, _never_read
from .regression import _fit_of

if TYPE_CHECKING:  # pragma: no cover
    from .conformal import ConformalSets


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       max-width: 1100px; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
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
div.never-read { padding: 0.6em 0.9em; margin: 0.8em 0; border-left: 4px solid; }
div.never-read.warn { border-color: #c0703b; background: #fbf1ea; }
div.never-read.ok { border-color: #3b6ea5; background: #eef3f9; }
div.collapse { padding: 0.6em 0.9em; margin: 0.8em 0; border-left: 4px solid; }
div.collapse.warn { border-color: #c0703b; background: #fbf1ea; }
div.collapse.ok { border-color: #3b6ea5; background: #eef3f9; }
"""


def _check_data(data: Sequence[tuple[str, str]] | None, owner: str) -> list[tuple[str, str]]:
    if data is None:
        return []
    pairs = list(data)
    if not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs):
        raise invalid(
            "data",
            owner,
            "None or a sequence of (label, text) pairs, e.g. [('rows dropped', '3')]",
            data,
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
            f"<title>{_escape(title)}</title>",
            f"<style>{_CSS}</style></head><body>",
            f"<h1>{_escape(title)}</h1>",
            f'<table class="summary">{table}</table>',
            *prepared,
            *sections,
            f"<footer>Written by sk_entmax {_escape(__version__)}.</footer>",
            "</body></html>",
        ]
    )
    return _write_atomically(path, page)


def _check_path(path: str | Path) -> None:
    """Refuse, before any drawing, a ``path`` that is a link or not a regular file (the
    write checks again: something may be put there while the page is drawn)."""
    _existing(Path(path), str(path))


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
    conformal: ConformalSets | None = None,
) -> Path:
    """Write a self-contained HTML report of a fitted TabNet's feature masks.

    The page holds the global feature importances on ``X`` with a bootstrap interval for
    each (over resamples of the rows of ``X``, see :func:`importance_intervals`) and a
    verdict on whether those rows settle the ranking of the top features, each decision
    step's mask for the chosen rows, the share of exact zeros in each step's mask, each
    step's mask alpha, and the sparsity of the output probabilities. Images are embedded as
    PNG, so the file stands alone.

    For a :class:`~sk_entmax.TabNetEntmaxRegressor` (told apart by
    :func:`sklearn.base.is_regressor`) the masks, importances and never-read lists are the
    same, and a "Predicted against true" section takes the place of the probability
    sections: ``predict(X)`` plotted against ``y`` with the line y = x, and R² and RMSE in
    the caption and the summary (one panel per target for a multi-output regressor, the
    first 12 drawn, the scores given for all; R² averaged over the targets as ``score``
    does). Nothing about classes or probabilities is shown, and ``conformal`` is refused.
    Without ``y`` the section says that the figure needs it.

    What a zero mask proves depends on the model. Fitted with ``faithful_masks=True``, the
    page lists for each chosen row the features its prediction never read ("this
    prediction never read: ..."), and gives the share of (row, feature) pairs never read
    over the rows of ``X`` (from ``never_read``, computed once on ``X``). Fitted with
    ``faithful_masks=False`` (the paper's design, where the first step reads every
    feature) it says instead that a feature whose mask is 0 at every step can still change
    the prediction, and lists none.

    A fit can collapse: the page says so in a box under the summary when on the rows of
    ``X`` the model reads at most one column of several (every other feature's share is 0
    and, with faithful masks, no row's prediction reads it), or a classifier predicts one
    class for every row although it was fitted on several. ``fit`` warns of the same on
    its training rows.

    Parameters
    ----------
    clf : TabNetEntmaxClassifier, TabNetEntmaxRegressor or Pipeline ending in one
        A fitted estimator.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Data to report on (held-out data says most). DataFrame columns name the features.
    path : str or path-like
        Where to write the HTML file (parent folders are created). The page is written to
        a temporary file in that folder, then renamed over ``path``: it is written whole or
        not at all, an existing regular file is replaced (its permissions kept), and a
        symbolic link, a folder or any other file that is not a regular file found at
        ``path`` is refused, never written through.
    y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
        True labels of ``X``; when given, the accuracy on ``X`` is reported. For a
        regressor, the true target values (a DataFrame's columns or a Series' name name
        the targets): the predicted-against-true figure, R² and RMSE.
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
    conformal : ConformalSets, default=None
        Conformal prediction sets on ``X`` (see :mod:`sk_entmax.report.conformal`), shown
        in a "Conformal prediction sets" section (``python -m sk_entmax report
        --confidence`` passes them). Classifiers only.

    Returns
    -------
    pathlib.Path
        The absolute path of the file written (its folder without links, then the file
        name).

    Raises
    ------
    ValueError
        When ``n_resamples`` or ``confidence`` is out of range, or ``data`` is not a
        sequence of pairs; for a regressor, when ``y`` is not numeric, holds NaN or
        infinite values, or does not match the predictions' shape.
    TypeError
        When ``clf`` is not a TabNet estimator, or ``conformal`` is given for a regressor.
    OSError
        When the file cannot be written, or ``path`` is a symbolic link or not a regular
        file (checked before drawing and again when writing); ``filename`` is ``path``.

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
    data = _check_data(data, "feature_mask_report")
    _check_path(path)
    n_resamples = _check_count(n_resamples, "n_resamples", 0, "feature_mask_report")
    confidence = _check_confidence(confidence, "feature_mask_report")
    est, Xt, names = _tabnet(clf, X, "feature_mask_report")
    if conformal is not None and _is_regressor(est):
        raise TypeError(
            "feature_mask_report: conformal prediction sets are for classifiers; got "
            f"conformal= with a {type(est).__name__}"
        )
    positions, labels = _positions(X, rows)
    M_explain, masks = est.explain(Xt)
    importances = _importances_from(M_explain)
    intervals = (
        _intervals_from(M_explain, names, n_resamples, confidence, random_state)
        if n_resamples
        else None
    )
    never = _never_read(est, Xt, names, positions, labels)
    title = title or f"Feature-mask report: {type(est).__name__}"
    tail = _never_read_summary(never) + _indicator_rows(est, names)
    if _is_regressor(est):
        fit = None if y is None else _fit_of(est, clf.predict(X), y, "feature_mask_report")
        sections = [
            *_restored_sections(est, names),
            *_needed_sections(est, names),
            *_collapse_sections(_collapse(never, importances), never.faithful),
            *_importance_sections(importances, names, max_features, intervals),
            *_mask_sections(clf, masks, positions, labels, names, max_features, never),
            *_prediction_sections(fit),
        ]
        summary = _regressor_summary(clf, int(X.shape[0]), fit) + tail
        return _write_html(path, title, summary, sections, data)
    proba = _proba(clf, X)
    predicted = None
    if not getattr(est, "multilabel_", False):  # predict is the argmax of predict_proba
        predicted = np.asarray(clf.classes_)[proba.argmax(axis=1)]
    collapse = _collapse(never, importances, predicted, len(clf.classes_))
    sections = [
        *_restored_sections(est, names),
        *_needed_sections(est, names),
        *_collapse_sections(collapse, never.faithful),
        *_importance_sections(importances, names, max_features, intervals),
        *_mask_sections(clf, masks, positions, labels, names, max_features, never),
        *_support_sections(clf, proba, positions, labels),
        *_conformal_sections(conformal),
    ]
    summary = _summary(clf, proba, y) + tail
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
    conformal: ConformalSets | None = None,
) -> Path:
    """Write a self-contained HTML report of a classifier's sparse probabilities.

    For :class:`~sk_entmax.SparsemaxClassifier`, :class:`~sk_entmax.EntmaxClassifier` (or
    any classifier with ``predict_proba``, a pipeline included): a few probability rows,
    which classes get probability mass, and the distribution of support sizes. A regressor
    has no probabilities: it is refused with a TypeError pointing to
    :func:`feature_mask_report`.

    Parameters
    ----------
    clf : classifier with predict_proba
        A fitted classifier.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Data to report on.
    path : str or path-like
        Where to write the HTML file (parent folders are created). The page is written to
        a temporary file in that folder, then renamed over ``path``: it is written whole or
        not at all, an existing regular file is replaced (its permissions kept), and a
        symbolic link, a folder or any other file that is not a regular file found at
        ``path`` is refused, never written through.
    y : array-like of shape (n_samples,), default=None
        True labels of ``X``; when given, the accuracy on ``X`` is reported.
    rows : sequence of int, default=None
        Positions of the rows whose probabilities are shown (the first 8).
    title : str, default=None
        Page title.
    data : sequence of (str, str), default=None
        How the data was prepared, as (label, text) pairs shown in a "Data" table near the
        top (see :func:`feature_mask_report`).
    conformal : ConformalSets, default=None
        Conformal prediction sets on ``X``, shown in a "Conformal prediction sets" section
        (see :func:`feature_mask_report`).

    Returns
    -------
    pathlib.Path
        The absolute path of the file written (its folder without links, then the file
        name).

    Raises
    ------
    ValueError
        When ``data`` is not a sequence of pairs.
    OSError
        When the file cannot be written, or ``path`` is a symbolic link or not a regular
        file (checked before drawing and again when writing); ``filename`` is ``path``.
    """
    _require_matplotlib()
    data = _check_data(data, "probability_support_report")
    _check_path(path)
    proba = _proba(clf, X)
    positions, labels = _positions(X, rows)
    est = clf[-1] if hasattr(clf, "steps") else clf
    title = title or f"Probability support report: {type(est).__name__}"
    sections = _support_sections(clf, proba, positions, labels) + _conformal_sections(conformal)
    return _write_html(path, title, _summary(clf, proba, y), sections, data)
