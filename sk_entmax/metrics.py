"""Metrics and scorers for probabilities that hold exact zeros.

scikit-learn's :func:`~sklearn.metrics.log_loss` clips every probability to at least the
machine epsilon (about ``2.2e-16`` in float64), so a row whose true class got probability
exactly 0 silently costs ``-log(2.2e-16)``, about 36 nats, where the true value is infinite.
A few such rows dominate the mean, and a search scored with ``"neg_log_loss"`` is pushed
toward dense models. The metrics here are defined, and finite, on sparse distributions:

- :func:`tsallis_loss`: the Bregman divergence of the Tsallis alpha-negentropy, a strictly
  proper scoring rule for ``alpha > 1`` that stays finite where a probability is 0. At
  ``alpha = 2`` it is half the multi-class Brier score, and as ``alpha -> 1`` it tends to the
  log loss.
- :func:`support_coverage`, :func:`mean_support_size` and :func:`support_precision` read the
  support (the classes with probability > 0) as a prediction set; the first two also take
  boolean prediction sets (``predict_set`` of
  :class:`~sk_entmax.conformal.SparseConformalClassifier`), and :func:`stratified_coverage`
  breaks coverage down by set size or by class.
- :func:`make_tsallis_scorer` and :func:`make_coverage_scorer` wrap them as scikit-learn
  scorers for :class:`~sklearn.model_selection.GridSearchCV`,
  :func:`~sklearn.model_selection.cross_validate` or
  :func:`~sklearn.inspection.permutation_importance`.

Targets follow :func:`~sklearn.metrics.log_loss`: class labels of any type, whose sorted
order gives the columns of ``y_proba`` (``labels`` lists them when ``y_true`` lacks some),
or a 1-d ``y_proba`` holding the probability of the positive class for binary targets. A
multi-label indicator matrix is compared with its label proportions ``y / |y|``, the
distribution the estimators of this package are trained on.
"""

from __future__ import annotations

import numbers
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import make_scorer
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils import check_array, check_consistent_length
from sklearn.utils.multiclass import type_of_target

__all__ = [
    "make_coverage_scorer",
    "make_support_size_scorer",
    "make_tsallis_scorer",
    "mean_support_size",
    "sparsest_within_one_se",
    "stratified_coverage",
    "support_coverage",
    "support_precision",
    "tsallis_loss",
]


# ---------------------------------------------------------------------- validation


def _invalid(name: str, owner: str, must: str, value: Any) -> Exception:
    """The package's parameter error (:class:`~sk_entmax.entmax.constraints.InvalidParameterError`,
    a ValueError and a TypeError), imported when raised: the constraint vocabulary lives
    beside torch, which scoring a probability array does not otherwise need."""
    from sk_entmax.entmax.constraints import invalid

    return invalid(name, owner, must, value)


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
    from sk_entmax._parameters import ALPHA
    from sk_entmax.entmax.constraints import check

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


# ---------------------------------------------------------------------- the loss


def _tsallis_log(x: np.ndarray, beta: float) -> np.ndarray:
    """``(x**beta - 1) / beta``, computed without cancellation for small ``beta > 0``.

    It tends to ``log(x)`` as ``beta -> 0``, and is ``-1 / beta`` at ``x = 0``.

    Parameters
    ----------
    x : ndarray
        Non-negative values.
    beta : float
        ``alpha - 1``, positive.

    Returns
    -------
    ndarray
        The elementwise value.
    """
    with np.errstate(divide="ignore"):
        return np.expm1(beta * np.log(x)) / beta


def _tsallis_divergence(target: np.ndarray, proba: np.ndarray, alpha: float) -> np.ndarray:
    """Row-wise Bregman divergence ``D(target, proba)`` of the Tsallis alpha-negentropy.

    For rows on the simplex, ``D(q, p) = (sum_k q_k (f(q_k) - f(p_k))
    + (alpha - 1) sum_k (p_k - q_k) f(p_k)) / alpha`` with ``f(x) = (x**(alpha-1) - 1) /
    (alpha - 1)``, which equals ``Omega(q) - Omega(p) - <grad Omega(p), q - p>`` and is
    accurate for ``alpha`` close to 1. At ``alpha = 1`` it is the Kullback-Leibler
    divergence, infinite where ``q_k > 0 = p_k``.

    Parameters
    ----------
    target : ndarray of shape (n_samples, n_classes)
        Rows on the simplex (one-hot, or label proportions).
    proba : ndarray of shape (n_samples, n_classes)
        Rows on the simplex.
    alpha : float
        At least 1.

    Returns
    -------
    ndarray of shape (n_samples,)
        Non-negative divergences.
    """
    if alpha == 1.0:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(target > 0, target * (np.log(target) - np.log(proba)), 0.0)
        return terms.sum(axis=1)
    beta = alpha - 1.0
    f_target = _tsallis_log(target, beta)
    f_proba = _tsallis_log(proba, beta)
    divergence = (target * (f_target - f_proba)).sum(axis=1)
    divergence += beta * ((proba - target) * f_proba).sum(axis=1)
    return np.maximum(divergence / alpha, 0.0)


def tsallis_loss(
    y_true: ArrayLike,
    y_proba: ArrayLike,
    *,
    alpha: float = 1.5,
    labels: ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
) -> float:
    r"""Tsallis loss: a proper scoring rule that stays finite on exact zeros.

    The mean Bregman divergence ``D(y, p)`` between the true distribution ``y`` (one-hot,
    or the label proportions of a multi-label row) and the predicted distribution ``p``,
    generated by the Tsallis alpha-negentropy

    .. math::

        \Omega(p) = \frac{\sum_k p_k^\alpha - 1}{\alpha (\alpha - 1)},\qquad
        D(y, p) = \Omega(y) - \Omega(p) - \langle \nabla\Omega(p), y - p \rangle,

    with :math:`\nabla\Omega(p)_k = p_k^{\alpha - 1} / (\alpha - 1)`. For ``alpha > 1`` the
    gradient is finite at :math:`p_k = 0`, so a true class with probability exactly 0 costs
    a finite amount, :math:`(1 / (\alpha - 1) + \sum_k p_k^\alpha) / \alpha`, and the loss is
    a strictly proper scoring rule: its expectation under a distribution ``q`` is smallest
    at ``p = q``. It is 0 exactly when ``p`` is the true distribution.

    - ``alpha = 2`` is half the multi-class Brier score, the mean of
      :math:`\sum_k (y_k - p_k)^2 / 2`.
    - ``alpha = 1`` is the Shannon limit, the Kullback-Leibler divergence: for class labels
      the same value as :func:`sklearn.metrics.log_loss` wherever the true class has
      probability > 0, but **not clipped**: a true class with probability exactly 0 makes
      the loss ``inf``, which is its true value.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or label indicator matrix
        Class labels, or a multi-label indicator matrix (one column per label), which is
        compared with its label proportions ``y / |y|``. Rows with no label have no
        distribution; they are left out, with a warning.
    y_proba : array-like of shape (n_samples, n_classes) or (n_samples,)
        Predicted probabilities, as returned by ``predict_proba``; rows must sum to 1
        (within the square root of the dtype's epsilon). The columns follow the sorted
        labels; a 1-d array is the probability of the positive class of a binary target.
    alpha : float, default=1.5
        The Tsallis index, at least 1: 1 is the Kullback-Leibler divergence (log loss), 1.5
        matches ``EntmaxClassifier()``'s mapping, 2 is half the Brier score.
    labels : array-like, default=None
        All class labels, when ``y_true`` may lack some (a cross-validation fold, say); by
        default the labels found in ``y_true``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.

    Returns
    -------
    loss : float
        The weighted mean divergence, non-negative; ``inf`` only for ``alpha = 1`` with a
        true class (or label) of probability 0.

    See Also
    --------
    make_tsallis_scorer : The negated loss as a scorer for model selection.
    sklearn.metrics.log_loss : The ``alpha = 1`` case, clipped.

    Examples
    --------
    >>> from sk_entmax.metrics import tsallis_loss
    >>> y_true = [0, 1, 2]
    >>> y_proba = [[1.0, 0.0, 0.0], [0.3, 0.7, 0.0], [0.0, 1.0, 0.0]]
    >>> round(tsallis_loss(y_true, y_proba), 4)  # the third row costs (2 + 1) / 1.5
    0.72
    >>> round(tsallis_loss(y_true, y_proba, alpha=2), 4)  # half the Brier score
    0.3633
    >>> tsallis_loss(y_true, y_proba, alpha=1)  # the third row's true class has p = 0
    inf
    >>> from sklearn.metrics import log_loss
    >>> round(log_loss(y_true, y_proba), 2)  # clips that 0 to 2.2e-16: 36 nats
    12.13
    """
    alpha = _check_alpha(alpha, "tsallis_loss")
    indicator, proba, multilabel, weights = _prepare(y_true, y_proba, labels, sample_weight)
    if multilabel:
        counts = indicator.sum(axis=1)
        empty = counts == 0
        if empty.any():
            if empty.all():
                raise ValueError(
                    "Every row of the multi-label y_true has no label, so there is no "
                    "label distribution to compare y_proba with."
                )
            warnings.warn(
                f"{int(empty.sum())} of {empty.size} rows of the multi-label y_true have no "
                "label; they have no label distribution and are left out of tsallis_loss.",
                UserWarning,
                stacklevel=2,
            )
            weights = np.where(empty, 0.0, weights)
            if not weights.sum() > 0:
                raise ValueError(
                    "Every row of the multi-label y_true with a positive sample_weight has "
                    "no label, so there is no label distribution to compare y_proba with."
                )
        target = indicator / np.maximum(counts, 1.0)[:, np.newaxis]
    else:
        target = indicator
    keep = weights > 0
    divergence = _tsallis_divergence(target[keep], proba[keep], alpha)
    return float(np.average(divergence, weights=weights[keep]))


# ---------------------------------------------------------------------- the support


def support_coverage(
    y_true: ArrayLike,
    y_proba: ArrayLike,
    *,
    labels: ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
) -> float | np.ndarray:
    """Share of the true classes that lie inside the support of ``y_proba``.

    The support of a row, the classes with probability > 0, is read as a prediction set.
    For class labels this is the (weighted) share of rows whose true class has
    probability > 0; for a multi-label indicator matrix, the share of all true labels that
    have probability > 0 in their row (the micro-averaged recall of the support). A dense
    model (softmax) covers everything, so read it beside :func:`mean_support_size`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or label indicator matrix
        Class labels, or a multi-label indicator matrix.
    y_proba : array-like of shape (n_samples, n_classes) or (n_samples,), or bool ndarray
        Predicted probabilities (rows sum to 1), columns in sorted label order; 1-d for the
        positive class of a binary target. A boolean ndarray of shape (n_samples,
        n_classes) or (n_samples, n_classes, n_levels) is read as prediction sets, such as
        the output of :meth:`~sk_entmax.conformal.SparseConformalClassifier.predict_set`.
    labels : array-like, default=None
        All class labels, when ``y_true`` may lack some.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.

    Returns
    -------
    coverage : float or ndarray of shape (n_levels,)
        In [0, 1]; 1 when every true class has probability > 0 (is in its set). An array,
        one value per level, for 3-d boolean sets.

    Raises
    ------
    ValueError
        Besides invalid input: for a multi-label target with no true label in the rows of
        positive weight.

    See Also
    --------
    make_coverage_scorer : This metric as a scorer.
    mean_support_size : How large the sets are.
    support_precision : The share of the support that is true.

    Examples
    --------
    >>> from sk_entmax.metrics import support_coverage
    >>> support_coverage([0, 1, 2], [[0.9, 0.1, 0.0], [0.0, 0.0, 1.0], [0.2, 0.0, 0.8]])
    0.6666666666666666
    >>> support_coverage([[1, 1, 0], [0, 0, 1]], [[0.6, 0.0, 0.4], [0.0, 0.5, 0.5]])
    0.6666666666666666
    """
    indicator, sets, weights, many = _prepare_sets(y_true, y_proba, labels, sample_weight)
    true_counts = indicator.sum(axis=1)
    total = float(weights @ true_counts)
    if not total > 0:
        raise ValueError(
            "y_true has no true label in the rows with positive sample_weight, so there is "
            "nothing for the support to cover."
        )
    hits = (indicator[:, :, np.newaxis] * sets).sum(axis=1)
    coverage = (weights @ hits) / total
    return coverage if many else float(coverage[0])


def support_precision(
    y_true: ArrayLike,
    y_proba: ArrayLike,
    *,
    labels: ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
) -> float:
    """Share of the support of ``y_proba`` that holds true classes.

    Of all (row, class) pairs with probability > 0, the (weighted) share whose class is a
    true class of the row: the micro-averaged precision of the support read as a prediction
    set. Meant for multi-label targets, where it is the precision of ``predict`` of the
    entmax classifiers; for class labels it is ``support_coverage / mean_support_size``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or label indicator matrix
        Class labels, or a multi-label indicator matrix.
    y_proba : array-like of shape (n_samples, n_classes) or (n_samples,)
        Predicted probabilities (rows sum to 1), columns in sorted label order; 1-d for the
        positive class of a binary target.
    labels : array-like, default=None
        All class labels, when ``y_true`` may lack some.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.

    Returns
    -------
    precision : float
        In [0, 1]; 1 when no class outside the truth has probability > 0.

    See Also
    --------
    support_coverage : The share of the truth inside the support.

    Examples
    --------
    >>> from sk_entmax.metrics import support_precision
    >>> support_precision([[1, 1, 0], [0, 0, 1]], [[0.6, 0.0, 0.4], [0.0, 0.5, 0.5]])
    0.5
    """
    indicator, proba, _, weights = _prepare(y_true, y_proba, labels, sample_weight)
    support = proba > 0
    hits = (indicator * support).sum(axis=1)
    return float(weights @ hits) / float(weights @ support.sum(axis=1))


def mean_support_size(
    y_proba: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> float | np.ndarray:
    """Mean number of classes with probability > 0 per row.

    Parameters
    ----------
    y_proba : array-like of shape (n_samples, n_classes) or (n_samples,), or bool ndarray
        Predicted probabilities (rows sum to 1); 1-d for the positive class of a binary
        target. A boolean ndarray of shape (n_samples, n_classes) or (n_samples, n_classes,
        n_levels) is read as prediction sets (the output of ``predict_set``).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.

    Returns
    -------
    size : float or ndarray of shape (n_levels,)
        Between 1 and ``n_classes`` for probabilities; ``n_classes`` for a dense model such
        as softmax. An array, one value per level, for 3-d boolean sets.

    See Also
    --------
    support_coverage : How often the true class is in the support.

    Examples
    --------
    >>> from sk_entmax.metrics import mean_support_size
    >>> mean_support_size([[0.9, 0.1, 0.0], [0.0, 0.0, 1.0]])
    1.5
    """
    sets = _as_sets(y_proba)
    if sets is None:
        sets = (_check_proba(y_proba) > 0)[:, :, np.newaxis]
    check_consistent_length(sets, sample_weight)
    weights = _check_weights(sample_weight, sets.shape[0])
    sizes = np.average(sets.sum(axis=1), axis=0, weights=weights)
    return sizes if np.asarray(y_proba).ndim == 3 else float(sizes[0])


def stratified_coverage(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    by: str = "set_size",
    labels: ArrayLike | None = None,
    n_bins: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Coverage of prediction sets per stratum: per set size, or per true class.

    Marginal coverage can hide sets that fail where it matters: size-stratified coverage
    (as MAPIE's ``classification_ssc``) shows whether the small, confident sets cover as
    often as the large ones, and class-stratified coverage whether every class is covered
    (what ``class_conditional=True`` of
    :class:`~sk_entmax.conformal.SparseConformalClassifier` guarantees).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Class labels (binary or multi-class).
    y_pred : array-like of shape (n_samples, n_classes), or bool ndarray
        Boolean prediction sets (``predict_set``'s output, 2-d), or probabilities whose
        support is the set; columns in sorted label order.
    by : {"set_size", "class"}, default="set_size"
        The strata: the sizes of the sets that occur, or the classes.
    labels : array-like, default=None
        All class labels, when ``y_true`` may lack some; with ``by="class"`` a class absent
        from ``y_true`` gets count 0 and coverage NaN.
    n_bins : int, default=None
        With ``by="set_size"``: group the possible sizes ``0 .. n_classes`` into this many
        bins of consecutive sizes, as equal in width as can be (the first ones one size
        wider), as MAPIE's ``classification_ssc(num_bins=...)`` does; each bin is a stratum,
        empty or not. None: one stratum per size that occurs.

    Returns
    -------
    strata : ndarray
        The set sizes that occur (sorted), or the class labels; with ``n_bins``, an array
        of shape (n_bins, 2) holding each bin's smallest and largest size.
    coverage : ndarray of shape (n_strata,)
        The share of the rows of each stratum whose true class is in its set (NaN for an
        empty stratum).
    counts : ndarray of shape (n_strata,)
        The number of rows in each stratum.

    Raises
    ------
    ValueError
        For an unknown ``by``, a multi-label ``y_true``, 3-d sets (pass one level,
        ``sets[:, :, i]``), or ``n_bins`` that is not an int from 1 to ``n_classes + 1``
        or is given with ``by="class"``.

    Examples
    --------
    >>> import numpy as np
    >>> from sk_entmax.metrics import stratified_coverage
    >>> sets = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 1], [0, 0, 1]], dtype=bool)
    >>> sizes, coverage, counts = stratified_coverage([0, 2, 2, 1], sets)
    >>> sizes.tolist(), coverage.tolist(), counts.tolist()
    ([1, 2], [0.5, 0.5], [2, 2])
    >>> bins, coverage, counts = stratified_coverage([0, 2, 2, 1], sets, n_bins=2)
    >>> bins.tolist(), coverage.tolist(), counts.tolist()
    ([[0, 1], [2, 3]], [0.5, 0.5], [2, 2])
    >>> classes, coverage, counts = stratified_coverage([0, 2, 2, 1], sets, by="class")
    >>> classes.tolist(), coverage.tolist(), counts.tolist()
    ([0, 1, 2], [1.0, 0.0, 0.5], [1, 1, 2])
    """
    if by not in ("set_size", "class"):
        raise _invalid("by", "stratified_coverage", "'set_size' or 'class'", by)
    if isinstance(y_pred, np.ndarray) and y_pred.dtype == np.bool_ and y_pred.ndim == 3:
        raise ValueError(
            "stratified_coverage takes the sets of one confidence level, shape (n_samples, "
            f"n_classes); got shape {y_pred.shape}. Pass y_pred[:, :, i]."
        )
    if n_bins is not None and by != "set_size":
        raise _invalid("n_bins", "stratified_coverage", "None when by='class'", n_bins)
    if n_bins is not None and (
        isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral)
    ):
        raise _invalid("n_bins", "stratified_coverage", "None or an int", n_bins)
    indicator, sets, _, _ = _prepare_sets(y_true, y_pred, labels, None)
    if type_of_target(y_true, input_name="y_true") == "multilabel-indicator":
        raise ValueError("stratified_coverage takes class labels, not a multi-label target.")
    sets = sets[:, :, 0]
    covered = (indicator * sets).sum(axis=1) > 0
    if by == "set_size" and n_bins is not None:
        return _binned_size_coverage(sets, covered, int(n_bins))
    if by == "set_size":
        sizes = sets.sum(axis=1)
        strata = np.unique(sizes)
        counts = np.array([np.sum(sizes == size) for size in strata])
        coverage = np.array([covered[sizes == size].mean() for size in strata])
        return strata, coverage, counts
    strata = _fit_binarizer(y_true, labels)[0].classes_
    true_class = indicator.argmax(axis=1)
    counts = np.bincount(true_class, minlength=len(strata))
    hits = np.bincount(true_class, weights=covered.astype(np.float64), minlength=len(strata))
    with np.errstate(invalid="ignore", divide="ignore"):
        coverage = np.where(counts > 0, hits / np.maximum(counts, 1), np.nan)
    return strata, coverage, counts


def _binned_size_coverage(
    sets: np.ndarray, covered: np.ndarray, n_bins: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Coverage per bin of consecutive set sizes, the sizes ``0 .. n_classes`` in
    ``n_bins`` bins as equal in width as can be."""
    n_sizes = sets.shape[1] + 1
    if not 1 <= n_bins <= n_sizes:
        raise _invalid(
            "n_bins",
            "stratified_coverage",
            f"from 1 to n_classes + 1 = {n_sizes} (the possible set sizes)",
            n_bins,
        )
    width, wider = divmod(n_sizes, n_bins)
    edges = np.cumsum([0] + [width + (i < wider) for i in range(n_bins)])
    strata = np.column_stack([edges[:-1], edges[1:] - 1])
    which = np.searchsorted(edges, sets.sum(axis=1), side="right") - 1
    counts = np.bincount(which, minlength=n_bins)
    hits = np.bincount(which, weights=covered.astype(np.float64), minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        coverage = np.where(counts > 0, hits / np.maximum(counts, 1), np.nan)
    return strata, coverage, counts


# ---------------------------------------------------------------------- scorers


def make_tsallis_scorer(alpha: float = 1.5, *, labels: ArrayLike | None = None) -> Callable:
    """A scorer of the negated :func:`tsallis_loss`, for model selection.

    Built with :func:`sklearn.metrics.make_scorer` (``greater_is_better=False``,
    ``response_method="predict_proba"``): it calls the estimator's ``predict_proba`` and
    returns ``-tsallis_loss``, so greater is better, as ``"neg_log_loss"`` is, but the score
    stays finite when a true class gets probability exactly 0. Use it as ``scoring`` of
    :class:`~sklearn.model_selection.GridSearchCV`,
    :func:`~sklearn.model_selection.cross_validate` or
    :func:`~sklearn.inspection.permutation_importance`.

    Parameters
    ----------
    alpha : float, default=1.5
        The Tsallis index of the loss, at least 1 (1 is the unclipped log loss, 2 half the
        Brier score). It need not match the alpha of the models compared: one fixed alpha
        scores every candidate by the same proper rule.
    labels : array-like, default=None
        All class labels, for folds whose test part may lack a class.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, sample_weight=None)``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sk_entmax.metrics import make_tsallis_scorer, tsallis_loss
    >>> scorer = make_tsallis_scorer(alpha=1.5)
    >>> scorer
    make_scorer(tsallis_loss, greater_is_better=False, response_method='predict_proba', alpha=1.5)
    >>> X, y = load_iris(return_X_y=True)
    >>> model = LogisticRegression(max_iter=1000).fit(X, y)
    >>> bool(scorer(model, X, y) == -tsallis_loss(y, model.predict_proba(X)))
    True

    In a search: ``GridSearchCV(estimator, grid, scoring={"tsallis": scorer, "accuracy":
    "accuracy"}, refit="tsallis")``.
    """
    kwargs: dict[str, Any] = {"alpha": _check_alpha(alpha, "make_tsallis_scorer")}
    if labels is not None:
        kwargs["labels"] = labels
    return make_scorer(
        tsallis_loss, greater_is_better=False, response_method="predict_proba", **kwargs
    )


def make_coverage_scorer(*, labels: ArrayLike | None = None) -> Callable:
    """A scorer of :func:`support_coverage`, for model selection and reports.

    Built with :func:`sklearn.metrics.make_scorer` (``response_method="predict_proba"``,
    greater is better). Coverage alone rewards dense models (softmax covers every class),
    so score it beside a proper loss and the support size, not as the only criterion.

    Parameters
    ----------
    labels : array-like, default=None
        All class labels, for folds whose test part may lack a class.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, sample_weight=None)``.

    Examples
    --------
    >>> from sk_entmax.metrics import make_coverage_scorer
    >>> make_coverage_scorer()
    make_scorer(support_coverage, response_method='predict_proba')
    """
    kwargs: dict[str, Any] = {} if labels is None else {"labels": labels}
    return make_scorer(support_coverage, response_method="predict_proba", **kwargs)


def _support_size(y_true: ArrayLike, y_proba: ArrayLike, **kwargs: Any) -> float:
    """:func:`mean_support_size` with the scorer's signature (``y_true`` unused)."""
    return mean_support_size(y_proba, **kwargs)


def make_support_size_scorer() -> Callable:
    """A scorer of the negated :func:`mean_support_size`, to record in a search.

    Built with :func:`sklearn.metrics.make_scorer` (``greater_is_better=False``,
    ``response_method="predict_proba"``): greater is better, so the sparsest candidate
    scores highest. Support size alone rewards a model that keeps one class whatever the
    data, so do not select by it alone: record it beside accuracy (or a proper loss) and
    select with :func:`sparsest_within_one_se`.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, sample_weight=None)``: minus the mean number of classes
        with probability > 0 per row.

    Examples
    --------
    >>> from sk_entmax.metrics import make_support_size_scorer
    >>> make_support_size_scorer()
    make_scorer(_support_size, greater_is_better=False, response_method='predict_proba')
    """
    return make_scorer(_support_size, greater_is_better=False, response_method="predict_proba")


def sparsest_within_one_se(
    score: str = "accuracy", support: str = "support_size"
) -> Callable[[dict[str, Any]], int]:
    """A ``refit`` rule: the sparsest candidate within one standard error of the best.

    The one-standard-error rule (Hastie, Tibshirani & Friedman, *The Elements of
    Statistical Learning*, section 7.10): candidates whose mean cross-validated ``score``
    is at least the best mean minus the standard error of the best (its standard deviation
    over the folds over the square root of the number of folds) are taken as equally good,
    and among them the one with the smallest mean support size is chosen (ties: the first
    in the grid). Accuracy barely moves with alpha while the support size falls steeply,
    so this rule picks a sparse alpha where accuracy or a proper loss alone picks the
    densest (see the user guide's *Scoring* page for measurements).

    Parameters
    ----------
    score : str, default="accuracy"
        The name, in the search's ``scoring`` dict, of the score to stay near the best of
        (greater is better).
    support : str, default="support_size"
        The name, in the search's ``scoring`` dict, of :func:`make_support_size_scorer`.

    Returns
    -------
    refit : callable
        ``refit(cv_results) -> int``, the index of the chosen candidate: pass it as the
        ``refit`` of :class:`~sklearn.model_selection.GridSearchCV`.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sk_entmax import EntmaxClassifier
    >>> from sk_entmax.metrics import make_support_size_scorer, sparsest_within_one_se
    >>> X, y = load_wine(return_X_y=True)
    >>> search = GridSearchCV(
    ...     make_pipeline(StandardScaler(), EntmaxClassifier(random_state=0)),
    ...     {"entmaxclassifier__alpha": [1.0, 1.25, 1.5, 2.0]},
    ...     scoring={"accuracy": "accuracy", "support_size": make_support_size_scorer()},
    ...     refit=sparsest_within_one_se("accuracy", "support_size"),
    ... ).fit(X, y)
    >>> search.best_params_  # accuracy alone picks 1.0 (softmax, no zeros)
    {'entmaxclassifier__alpha': 2.0}
    """
    for name, value in (("score", score), ("support", support)):
        if not isinstance(value, str):
            raise _invalid(name, "sparsest_within_one_se", "a str", value)

    def refit(cv_results: dict[str, Any]) -> int:
        for name in (score, support):
            if f"mean_test_{name}" not in cv_results:
                raise KeyError(
                    f"sparsest_within_one_se: the search has no score {name!r}; give it in "
                    f"scoring, e.g. scoring={{{score!r}: ..., {support!r}: "
                    "make_support_size_scorer()}"
                )
        means = np.asarray(cv_results[f"mean_test_{score}"], dtype=np.float64)
        stds = np.asarray(cv_results[f"std_test_{score}"], dtype=np.float64)
        n_splits = sum(1 for key in cv_results if re.fullmatch(rf"split\d+_test_{score}", key))
        best = int(np.nanargmax(means))
        bar = means[best] - stds[best] / np.sqrt(max(n_splits, 1))
        sizes = -np.asarray(cv_results[f"mean_test_{support}"], dtype=np.float64)
        near = np.flatnonzero(means >= bar)
        return int(near[np.argmin(sizes[near])])

    return refit
