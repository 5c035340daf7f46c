"""The conformal wrapper's calibration steps: the out-of-fold decision scores of ``cv=K``,
and, from the decision scores of the calibration rows and their labels, the scores and
quantiles a calibration stores (one label per row, or a set of labels per row).

:class:`~sk_entmax.conformal.SparseConformalClassifier` calls these and sets what they
return; the maths they use (scores, quantiles, recall thresholds) is in
:mod:`sk_entmax._conformal_maths`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import clone
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.utils import _safe_indexing, indexable
from sklearn.utils.validation import _check_method_params, column_or_1d

from sk_entmax._conformal_inputs import two_columns
from sk_entmax._conformal_maths import (
    _label_scores,
    calibrate,
    nonconformity_scores,
    recall_thresholds,
)

__all__ = ["label_set_calibration", "out_of_fold_decision", "single_label_calibration"]


def out_of_fold_decision(
    base: Any, X: ArrayLike, y: ArrayLike, k: int, random_state: Any, fit_params: dict[str, Any]
) -> tuple[Any, np.ndarray, Any]:
    """``fit`` with ``cv=k``: a clone of ``base`` fitted on all rows, each row's decision
    scores by the clone of the ``k`` (each fitted on the other folds) that did not see it,
    and ``y`` as the folds cut it."""
    # rows that can be cut into folds: sparse as CSR, array-likes without indexing as arrays
    X, y = indexable(X, y)
    labels = np.asarray(y.toarray() if hasattr(y, "toarray") else y)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = column_or_1d(labels, warn=True)
    n = len(labels)
    if n < k:
        raise ValueError(f"cv={k} needs at least {k} samples; got n_samples={n}.")
    if labels.ndim == 1:
        _, counts = np.unique(labels, return_counts=True)
        if counts.min() < 2:
            raise ValueError(
                f"cv={k}: a class has a single row, which some fold's training rows "
                "would lack; every class needs at least 2 rows (or calibrate with "
                "cv=None and conformalize)."
            )
        splitter: Any = StratifiedKFold(k, shuffle=True, random_state=random_state)
        if counts.min() < k:  # too few rows to stratify every fold
            splitter = KFold(k, shuffle=True, random_state=random_state)
    else:
        splitter = KFold(k, shuffle=True, random_state=random_state)
    estimator = clone(base).fit(X, y, **fit_params)
    classes = np.asarray(estimator.classes_)
    decision = None
    for train, test in splitter.split(np.zeros((n, 1)), labels if labels.ndim == 1 else None):
        fold_params = _check_method_params(X, fit_params, train)  # sample_weight, ...
        fold = clone(base).fit(_safe_indexing(X, train), _safe_indexing(y, train), **fold_params)
        if not np.array_equal(np.asarray(fold.classes_), classes):
            raise ValueError(
                f"cv={k}: the training rows of a fold lack a class the whole data has "
                f"({len(fold.classes_)} of {len(classes)} classes); use a smaller cv, "
                "or cv=None and conformalize."
            )
        scores = two_columns(fold.decision_function(_safe_indexing(X, test)))
        if decision is None:
            decision = np.empty((n, scores.shape[1]))
        decision[test] = scores
    return estimator, decision, y


def single_label_calibration(
    decision: np.ndarray,
    y: ArrayLike,
    classes: np.ndarray,
    delta: float,
    levels: np.ndarray,
    *,
    class_conditional: bool,
    risk: str | None,
) -> tuple[np.ndarray, np.ndarray, Any, np.ndarray]:
    """The calibration of an estimator of one label per row: the scores of the rows' true
    labels, their labels' indices in ``classes``, the rows counted (per class with
    ``class_conditional``) and the quantiles, (n_levels, n_classes)."""
    if risk is not None:
        raise ValueError(
            "risk='recall' bounds the share of a row's true labels that its set misses, "
            "for a multi-label estimator; this estimator predicts one label per row, whose "
            "recall is coverage: use risk=None."
        )
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:  # a column vector, as fit takes it (with a warning)
        y = column_or_1d(y, warn=True)
    if y.ndim != 1:
        raise ValueError(
            "y_conformalize must be a 1-d array of class labels for this single-label "
            f"estimator; got shape {y.shape}."
        )
    unknown = np.setdiff1d(np.unique(y), classes)
    if unknown.size:
        raise ValueError(
            f"y_conformalize contains labels {unknown.tolist()} unknown to the fitted "
            f"estimator, whose classes_ are {classes.tolist()}."
        )
    _check_same_rows(decision, y)
    codes = np.searchsorted(classes, y)
    if not np.array_equal(classes[codes], y):  # classes_ not sorted
        codes = np.array([np.flatnonzero(classes == label)[0] for label in y])
    true_scores = _label_scores(decision.astype(np.float64), codes, delta)
    quantiles, counts = calibrate(
        true_scores,
        codes,
        len(classes),
        levels,
        class_conditional=class_conditional,
        classes=classes,
    )
    counts = counts if class_conditional else len(codes)
    return true_scores, codes, counts, quantiles


def label_set_calibration(
    decision: np.ndarray,
    y: ArrayLike,
    n_classes: int,
    alpha: float,
    levels: np.ndarray,
    *,
    class_conditional: bool,
    risk: str | None,
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray | None]:
    """Multi-label calibration. Coverage of the label set: a row's score is the largest
    score of its true labels (0 for a row without labels), so ``s(x, Y) <= q_hat``
    exactly when every true label is in the set. Recall risk: the score of every
    (row, true label) pair, and the conformal-risk-control threshold.

    Returns the scores, their labels (-1 for a row's score), the number of rows, the
    quantiles (n_levels, n_classes) and, for the recall risk only, each pair's row."""
    if class_conditional:
        raise ValueError(
            "class_conditional=True calibrates per class, which a multi-label target does "
            "not have; use class_conditional=False (a guarantee on the whole label set)."
        )
    Y = np.asarray(y.toarray() if hasattr(y, "toarray") else y)
    k = n_classes
    if Y.ndim != 2 or Y.shape[1] != k or not np.isin(Y, (0, 1)).all():
        raise ValueError(
            f"y_conformalize must be a 0/1 indicator matrix of shape (n_samples, {k}) for "
            f"this multi-label estimator; got shape {Y.shape}."
        )
    _check_same_rows(decision, Y)
    scores = nonconformity_scores(decision, alpha)
    n = len(Y)
    if risk == "recall":
        rows, labels = np.nonzero(Y.astype(bool))
        pair_scores = scores[rows, labels]
        thresholds = recall_thresholds(pair_scores, rows, n, levels)
        _warn_short_risk(thresholds, levels, n)
        quantiles = np.repeat(thresholds[:, np.newaxis], k, axis=1)
        return pair_scores, labels, n, quantiles, rows
    true_scores = np.where(Y.astype(bool), scores, 0.0).max(axis=1, initial=0.0)
    codes = np.zeros(n, dtype=np.int64)
    quantiles, _ = calibrate(true_scores, codes, k, levels)
    return true_scores, codes - 1, n, quantiles, None


def _check_same_rows(decision: np.ndarray, y: np.ndarray) -> None:
    """Raise unless the conformalization set's scores and labels have as many rows."""
    if decision.shape[0] != y.shape[0]:
        raise ValueError(
            f"X_conformalize has {decision.shape[0]} rows but y_conformalize has {y.shape[0]}."
        )


def _warn_short_risk(thresholds: np.ndarray, levels: np.ndarray, n: int) -> None:
    """One warning for the levels whose recall threshold is inf (too few rows)."""
    short = [float(level) for level, t in zip(levels, thresholds, strict=True) if t == math.inf]
    if short:
        need = max(math.ceil(1.0 / (1.0 - level)) - 1 for level in short)
        warnings.warn(
            f"{n} calibration rows are too few to control the recall risk at "
            f"confidence_level={short} (it needs n + 1 >= 1 / (1 - level), i.e. n >= {need}): "
            "the threshold is inf and every label is in the set.",
            UserWarning,
            stacklevel=4,
        )
