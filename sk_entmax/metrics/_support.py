"""The support read as a prediction set: its coverage, its size and its precision, and
coverage broken down by set size or by class."""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils import check_consistent_length
from sklearn.utils.multiclass import type_of_target

from sk_entmax.entmax.constraints import invalid
from sk_entmax.metrics._inputs import (
    _as_sets,
    _check_proba,
    _check_weights,
    _fit_binarizer,
    _prepare,
    _prepare_sets,
)


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
        raise invalid("by", "stratified_coverage", "'set_size' or 'class'", by)
    if isinstance(y_pred, np.ndarray) and y_pred.dtype == np.bool_ and y_pred.ndim == 3:
        raise ValueError(
            "stratified_coverage takes the sets of one confidence level, shape (n_samples, "
            f"n_classes); got shape {y_pred.shape}. Pass y_pred[:, :, i]."
        )
    if n_bins is not None and by != "set_size":
        raise invalid("n_bins", "stratified_coverage", "None when by='class'", n_bins)
    if n_bins is not None and (
        isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral)
    ):
        raise invalid("n_bins", "stratified_coverage", "None or an int", n_bins)
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
        raise invalid(
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
