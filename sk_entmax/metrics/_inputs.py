"""The input checks of the metrics: probabilities, targets, labels, weights and prediction
sets, validated and encoded as arrays the scores compute on."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils import check_array, check_consistent_length
from sklearn.utils.multiclass import type_of_target

from sk_entmax._parameters import ALPHA
from sk_entmax.entmax.constraints import check


def _check_alpha(alpha: Any, caller: str) -> float:
    """Return ``alpha`` as a float, checked by the estimators' own constraint for it.

    Parameters
    ----------
    alpha : object
        The value to check.
    caller : str
        The name of the function whose parameter it is, for the message.

    Returns
    -------
    alpha : float
        The validated value.

    Raises
    ------
    InvalidParameterError
        A ``ValueError`` and ``TypeError``, when ``alpha`` is not a finite real >= 1
        (booleans refused), in the words the estimators use for their ``alpha``.
    """
    return check("alpha", alpha, ALPHA, caller)


def _check_proba(y_proba: ArrayLike) -> np.ndarray:
    """Validate predicted probabilities and return them as a float64 (n, n_classes) array.

    A 1-d array, or a single column, is the probability of the positive class of a binary
    target, as in :func:`~sklearn.metrics.log_loss`; it becomes two columns ``[1 - p, p]``.

    Parameters
    ----------
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities.

    Returns
    -------
    proba : ndarray of shape (n_samples, n_classes)
        The probabilities in float64, each row divided by its sum (which is 1 within the
        tolerance), so exact zeros stay exact zeros.

    Raises
    ------
    ValueError
        When ``y_proba`` is empty, has more than 2 dimensions, holds NaN, infinity or
        values outside [0, 1], or has a row that does not sum to 1.
    """
    proba = check_array(
        y_proba, ensure_2d=False, dtype=(np.float64, np.float32), input_name="y_proba"
    )
    tolerance = float(np.sqrt(np.finfo(proba.dtype).eps))
    proba = proba.astype(np.float64, copy=False)
    if proba.ndim == 1:
        proba = proba[:, np.newaxis]
    if proba.shape[1] == 1:
        proba = np.hstack([1.0 - proba, proba])
    low, high = proba.min(), proba.max()
    if low < 0:
        raise ValueError(f"y_proba contains values lower than 0: {float(low)!r}.")
    if high > 1:
        raise ValueError(f"y_proba contains values greater than 1: {float(high)!r}.")
    sums = proba.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > tolerance)
    if bad.size:
        raise ValueError(
            f"y_proba rows must sum to 1 (within {tolerance:.1e}); {bad.size} of "
            f"{proba.shape[0]} rows do not, the first is row {bad[0]} with sum "
            f"{float(sums[bad[0]])!r}. Pass probabilities, e.g. the output of predict_proba."
        )
    return proba / sums[:, np.newaxis]


def _encode_multilabel(y_true: ArrayLike, labels: ArrayLike | None, n_columns: int) -> np.ndarray:
    """Return a multi-label indicator ``y_true`` as a float64 array checked against its labels.

    Parameters
    ----------
    y_true : label indicator matrix
        A multi-label indicator matrix, dense or sparse.
    labels : array-like or None
        All labels, one per column of ``y_true``.
    n_columns : int
        The number of columns of ``y_proba``.

    Returns
    -------
    indicator : ndarray of shape (n_samples, n_columns)
        The 0/1 indicator, as float64.

    Raises
    ------
    ValueError
        When ``labels`` or ``y_proba`` has a number of labels that differs from the number
        of columns of ``y_true``.
    """
    indicator = check_array(y_true, accept_sparse="csr", dtype=None, input_name="y_true")
    if hasattr(indicator, "toarray"):
        indicator = indicator.toarray()
    indicator = np.asarray(indicator, dtype=np.float64)
    if labels is not None and len(labels) != indicator.shape[1]:
        raise ValueError(
            f"y_true is a multi-label indicator matrix with {indicator.shape[1]} columns, "
            f"but labels has {len(labels)} entries; its columns are the labels."
        )
    if indicator.shape[1] != n_columns:
        raise ValueError(
            f"y_true and y_proba contain different numbers of labels: "
            f"{indicator.shape[1]} vs {n_columns}."
        )
    return indicator


def _fit_binarizer(
    y_true: ArrayLike, labels: ArrayLike | None
) -> tuple[LabelBinarizer, np.ndarray | None]:
    """Fit a :class:`~sklearn.preprocessing.LabelBinarizer` on ``labels``, or on ``y_true``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Class labels.
    labels : array-like or None
        All class labels, when ``y_true`` may lack some.

    Returns
    -------
    binarizer : LabelBinarizer
        The fitted binarizer, whose sorted ``classes_`` give the columns of ``y_proba``.
    labels : ndarray or None
        ``labels`` as an array (``None`` when not passed).

    Raises
    ------
    ValueError
        When ``y_true`` holds labels missing from ``labels``.

    Warns
    -----
    UserWarning
        When ``labels`` is not in sorted order.
    """
    binarizer = LabelBinarizer()
    if labels is not None:
        labels = np.asarray(labels)
        binarizer.fit(labels)
        if labels.shape != binarizer.classes_.shape or not np.all(binarizer.classes_ == labels):
            # _fit_binarizer < _encode_classes < _encode_target < _prepare < the metric:
            # stacklevel 6 points the warning at the metric's caller.
            warnings.warn(
                f"labels were passed as {labels.tolist()}, but the columns of y_proba are "
                f"taken in sorted order: {binarizer.classes_.tolist()}. Pass the sorted labels "
                "and make sure the columns of y_proba follow that order.",
                UserWarning,
                stacklevel=6,
            )
        unknown = np.setdiff1d(np.unique(np.asarray(y_true)), binarizer.classes_)
        if unknown.size:
            raise ValueError(
                f"y_true contains values {unknown.tolist()} not belonging to the passed "
                f"labels {labels.tolist()}."
            )
    else:
        binarizer.fit(y_true)
    return binarizer, labels


def _encode_classes(y_true: ArrayLike, labels: ArrayLike | None, n_columns: int) -> np.ndarray:
    """Encode class labels ``y_true`` as one-hot rows whose columns match ``y_proba``'s.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Class labels (a binary or multi-class target).
    labels : array-like or None
        All class labels, when ``y_true`` may lack some.
    n_columns : int
        The number of columns of ``y_proba``.

    Returns
    -------
    indicator : ndarray of shape (n_samples, n_columns)
        One-hot rows, as float64 (two columns for a binary target).

    Raises
    ------
    ValueError
        For labels in ``y_true`` missing from ``labels``, fewer than two classes, or a
        number of classes that differs from the number of columns of ``y_proba``.
    """
    binarizer, labels = _fit_binarizer(y_true, labels)
    classes = binarizer.classes_
    found = classes.tolist()
    if classes.shape[0] < 2:
        if labels is None:
            raise ValueError(
                f"y_true contains only one label ({found[0]!r}). Please provide the list "
                "of all expected class labels explicitly through the labels argument."
            )
        raise ValueError(f"The labels array needs to contain at least two labels, got {found}.")
    indicator = binarizer.transform(y_true).astype(np.float64)
    if indicator.shape[1] == 1:
        indicator = np.hstack([1.0 - indicator, indicator])
    if indicator.shape[1] != n_columns:
        if labels is None:
            raise ValueError(
                f"y_true and y_proba contain different numbers of classes: "
                f"{indicator.shape[1]} vs {n_columns}. Please provide the true labels "
                f"explicitly through the labels argument. Classes found in y_true: {found}."
            )
        raise ValueError(
            f"The number of classes in labels ({indicator.shape[1]}) is different from the "
            f"number of columns of y_proba ({n_columns}). Classes found in labels: {found}."
        )
    return indicator


def _encode_target(
    y_true: ArrayLike, labels: ArrayLike | None, n_columns: int
) -> tuple[np.ndarray, bool]:
    """Encode ``y_true`` as an indicator matrix whose columns match ``y_proba``'s.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or label indicator matrix
        Class labels, or a multi-label indicator matrix.
    labels : array-like or None
        All class labels, when ``y_true`` may lack some.
    n_columns : int
        The number of columns of ``y_proba``.

    Returns
    -------
    indicator : ndarray of shape (n_samples, n_columns)
        One-hot rows (multi-class) or the 0/1 indicator (multi-label), as float64.
    multilabel : bool
        Whether ``y_true`` is a multi-label indicator matrix.

    Raises
    ------
    ValueError
        For a target that is neither class labels nor a multi-label indicator matrix,
        labels in ``y_true`` missing from ``labels``, fewer than two classes, or a number of
        classes that differs from the number of columns of ``y_proba``.
    """
    target_type = type_of_target(y_true, input_name="y_true")
    if target_type == "multilabel-indicator":
        return _encode_multilabel(y_true, labels, n_columns), True
    if target_type not in ("binary", "multiclass"):
        raise ValueError(
            f"y_true must hold class labels or be a multi-label indicator matrix; got a "
            f"{target_type!r} target."
        )
    return _encode_classes(y_true, labels, n_columns), False


def _check_weights(sample_weight: ArrayLike | None, n_samples: int) -> np.ndarray:
    """Return validated non-negative sample weights (ones when ``None``).

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,) or None
        The weights.
    n_samples : int
        The number of rows they must match.

    Returns
    -------
    weights : ndarray of shape (n_samples,)
        float64 weights.

    Raises
    ------
    ValueError
        When the weights are not 1-d, do not have ``n_samples`` entries, hold NaN,
        infinity or a negative value, or sum to 0.
    """
    if sample_weight is None:
        return np.ones(n_samples)
    weights = check_array(
        sample_weight, ensure_2d=False, dtype=np.float64, input_name="sample_weight"
    )
    if weights.ndim != 1:
        raise ValueError(f"sample_weight must be 1-d; got an array of shape {weights.shape}.")
    if weights.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight has {weights.shape[0]} entries, but y_true has {n_samples} samples."
        )
    if np.any(weights < 0):
        raise ValueError("sample_weight must be non-negative.")
    if not weights.sum() > 0:
        raise ValueError("sample_weight sums to 0; at least one weight must be positive.")
    return weights


def _prepare(
    y_true: ArrayLike,
    y_proba: ArrayLike,
    labels: ArrayLike | None,
    sample_weight: ArrayLike | None,
) -> tuple[np.ndarray, np.ndarray, bool, np.ndarray]:
    """Validate and encode the inputs shared by every metric of this module.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or label indicator matrix
        Class labels, or a multi-label indicator matrix.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities.
    labels : array-like or None
        All class labels, when ``y_true`` may lack some.
    sample_weight : array-like of shape (n_samples,) or None
        Sample weights.

    Returns
    -------
    indicator : ndarray of shape (n_samples, n_classes)
        The encoded target.
    proba : ndarray of shape (n_samples, n_classes)
        The validated probabilities.
    multilabel : bool
        Whether the target is a multi-label indicator matrix.
    weights : ndarray of shape (n_samples,)
        The validated sample weights.
    """
    proba = _check_proba(y_proba)
    check_consistent_length(proba, y_true, sample_weight)
    indicator, multilabel = _encode_target(y_true, labels, proba.shape[1])
    weights = _check_weights(sample_weight, proba.shape[0])
    return indicator, proba, multilabel, weights


def _as_sets(y_pred: ArrayLike) -> np.ndarray | None:
    """A boolean prediction-set array (2-d, or 3-d with one set per level), else ``None``.

    Parameters
    ----------
    y_pred : array-like
        Probabilities, or the boolean output of ``predict_set``.

    Returns
    -------
    sets : ndarray of bool of shape (n_samples, n_classes, n_levels), or None
        A 2-d set matrix gains a last axis of size 1; ``None`` when ``y_pred`` is not
        boolean (it is then read as probabilities).

    Raises
    ------
    ValueError
        For a boolean array that is not 2-d or 3-d, or is empty.
    """
    if not (isinstance(y_pred, np.ndarray) and y_pred.dtype == np.bool_):
        return None
    if y_pred.ndim not in (2, 3) or y_pred.shape[0] == 0 or y_pred.shape[1] == 0:
        raise ValueError(
            "A boolean y_pred is read as prediction sets and must have shape (n_samples, "
            f"n_classes) or (n_samples, n_classes, n_levels); got shape {y_pred.shape}."
        )
    return y_pred if y_pred.ndim == 3 else y_pred[:, :, np.newaxis]


def _prepare_sets(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    labels: ArrayLike | None,
    sample_weight: ArrayLike | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Encode the target and read ``y_pred`` as sets: its support, or the boolean sets.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or label indicator matrix
        Class labels, or a multi-label indicator matrix.
    y_pred : array-like
        Probabilities, or boolean sets of shape (n_samples, n_classes[, n_levels]).
    labels : array-like or None
        All class labels, when ``y_true`` may lack some.
    sample_weight : array-like of shape (n_samples,) or None
        Sample weights.

    Returns
    -------
    indicator : ndarray of shape (n_samples, n_classes)
        The encoded target.
    sets : ndarray of bool of shape (n_samples, n_classes, n_levels)
        The sets (``n_levels`` is 1 for probabilities and 2-d sets).
    weights : ndarray of shape (n_samples,)
        The validated sample weights.
    many : bool
        Whether ``y_pred`` was a 3-d array of sets (one result per level is then due).
    """
    sets = _as_sets(y_pred)
    if sets is None:
        indicator, proba, _, weights = _prepare(y_true, y_pred, labels, sample_weight)
        return indicator, (proba > 0)[:, :, np.newaxis], weights, False
    check_consistent_length(sets, y_true, sample_weight)
    indicator, _ = _encode_target(y_true, labels, sets.shape[1])
    weights = _check_weights(sample_weight, sets.shape[0])
    return indicator, sets, weights, np.asarray(y_pred).ndim == 3
