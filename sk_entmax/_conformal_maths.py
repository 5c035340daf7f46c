"""The calibration maths of :mod:`sk_entmax.conformal`: non-conformity scores, conformal
quantiles, the temperatures they give, the sets, and the calibrated sparse probabilities.

Functions of arrays, without an estimator; :class:`~sk_entmax.conformal.SparseConformalClassifier`
and :func:`sk_entmax.persistence.load` (which recomputes a stored calibration) call them.
The public ones are imported from :mod:`sk_entmax.conformal`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike

__all__ = [
    "calibrate",
    "calibrated_proba",
    "conformal_quantile",
    "drawn_sets",
    "level_sets",
    "level_temperatures",
    "nonconformity_scores",
    "randomized_sets",
    "recall_thresholds",
    "row_temperatures",
]


def nonconformity_scores(decision: ArrayLike, alpha: float) -> np.ndarray:
    """The entmax non-conformity score of every label of every row.

    ``s(x, y) = (sum_j (z_j - z_y)_+ ** delta) ** (1 / delta)`` with ``delta = 1 / (alpha -
    1)``: label ``y`` is in the support of ``entmax_alpha(z / T)`` iff ``s < T / (alpha - 1)``.

    Parameters
    ----------
    decision : array-like of shape (n_samples, n_classes)
        Decision scores ``z``, finite.
    alpha : float
        The entmax alpha, > 1 (2 is sparsemax).

    Returns
    -------
    scores : ndarray of shape (n_samples, n_classes)
        Non-negative float64 scores; 0 for the top-scored label(s).
    """
    z = np.asarray(decision, dtype=np.float64)
    n, k = z.shape
    delta = 1.0 / (alpha - 1.0)
    out = np.empty((n, k))
    for label in range(k):  # each label as _label_scores scores it: the same rounding
        out[:, label] = _label_scores(z, np.full(n, label), delta)
    return out


#: rows per block of the score computations: the block's temporaries (a few arrays of
#: rows x n_classes floats) stay in the processor's cache. Blocks change nothing in the
#: arithmetic: every row is reduced on its own, in column order.
_BLOCK_ELEMENTS = 1 << 16


def _label_scores(z: np.ndarray, labels: np.ndarray, delta: float) -> np.ndarray:
    """``s(x_i, labels_i)``, one label per row: ``O(k)`` per row.

    Every score of this module is computed here, summed over the row in column order, so a
    row's score of a label is the same float wherever it is computed (calibration, sets,
    one label or all): a test row equal to the calibration row that sets ``q_hat`` has its
    label's score equal to ``q_hat`` exactly. It is also non-decreasing as ``z_y`` falls
    (each gap grows, and rounded sums and powers are monotone), which :func:`_top_sets`
    relies on.
    """
    n, k = z.shape
    step = max(1, _BLOCK_ELEMENTS // max(k, 1))
    out = np.empty(n)
    for start in range(0, n, step):
        rows = slice(start, start + step)
        out[rows] = _block_scores(z[rows], labels[rows], delta)
    return out


def _block_scores(z: np.ndarray, labels: np.ndarray, delta: float) -> np.ndarray:
    gaps = z - np.take_along_axis(z, labels[:, np.newaxis], axis=1)
    np.maximum(gaps, 0.0, out=gaps)
    if delta == 1.0:
        return gaps.sum(axis=1)
    # scaled by the largest gap, so that a large delta neither overflows nor underflows
    top = gaps.max(axis=1)
    positive = top > 0
    gaps /= np.where(positive, top, 1.0)[:, np.newaxis]
    norm = _power(gaps, delta).sum(axis=1) ** (1.0 / delta)
    return np.where(positive, top * norm, 0.0)


def _power(x: np.ndarray, delta: float) -> np.ndarray:
    """``x ** delta`` for ``x >= 0`` (``x`` is overwritten); an integer ``delta`` up to 16
    by repeated squaring, faster than ``pow`` and, like it, non-decreasing in ``x``, which
    :func:`_top_sets` relies on."""
    if not (float(delta).is_integer() and 2 <= delta <= 16):
        return np.power(x, delta, out=x)
    exponent, result = int(delta), None
    while True:
        if exponent & 1:
            result = x.copy() if result is None else np.multiply(result, x, out=result)
        exponent >>= 1
        if not exponent:
            return result
        np.multiply(x, x, out=x)


def _top_sets(z: np.ndarray, delta: float, q_hat: float) -> np.ndarray:
    """``{y : s(x, y) <= q_hat}`` per row, by a search over the labels' ranks.

    ``s`` is non-decreasing down a row's ranking (ties score alike), so the set is the top
    ``m`` labels, ``m`` found by bisection over the ranks: ``O(k log k)`` per row instead
    of every label's ``O(k)`` score. Rows are taken in blocks that stay in cache.
    """
    n, k = z.shape
    if q_hat == math.inf:
        return np.ones((n, k), dtype=bool)
    sets = np.empty((n, k), dtype=bool)
    step = max(1, _BLOCK_ELEMENTS // max(k, 1))
    for start in range(0, n, step):
        rows = slice(start, start + step)
        sets[rows] = _top_block(z[rows], delta, q_hat)
    return sets


def _top_block(z: np.ndarray, delta: float, q_hat: float) -> np.ndarray:
    n, k = z.shape
    # labels of equal z have equal scores (the same gaps), so the order among ties is moot
    order = np.argsort(-z, axis=1)
    low = np.zeros(n, dtype=np.int64)  # rank 0 scores 0: in every set
    high = np.full(n, k - 1, dtype=np.int64)
    while True:
        active = np.flatnonzero(low < high)
        if not active.size:
            break
        middle = (low[active] + high[active] + 1) // 2
        labels = order[active, middle]
        inside = _block_scores(z[active], labels, delta) <= q_hat
        low[active] = np.where(inside, middle, low[active])
        high[active] = np.where(inside, high[active], middle - 1)
    ranked = np.arange(k)[np.newaxis] <= low[:, np.newaxis]
    sets = np.empty((n, k), dtype=bool)
    np.put_along_axis(sets, order, ranked, axis=1)
    return sets


def conformal_quantile(scores: ArrayLike, confidence_level: float) -> float:
    """The split-conformal quantile: the ``ceil((n + 1) * level)``-th smallest score.

    Parameters
    ----------
    scores : array-like of shape (n,)
        The calibration scores (of the true labels).
    confidence_level : float
        In (0, 1): ``1 - eps``.

    Returns
    -------
    q_hat : float
        ``inf`` when ``ceil((n + 1) * level) > n`` (too few rows: every label is in the set).
    """
    scores = np.asarray(scores, dtype=np.float64).ravel()
    rank = _rank(scores.size, confidence_level)
    if rank > scores.size:
        return math.inf
    if rank < 1:
        return -math.inf
    return float(np.partition(scores, rank - 1)[rank - 1])


def _rank(n: int, confidence_level: float) -> int:
    """``ceil((n + 1) * level)``, guarded against ``(n + 1) * level`` landing a hair above an
    integer."""
    return math.ceil((n + 1) * confidence_level - 1e-9)


def _sorted_quantiles(ascending: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """:func:`conformal_quantile` of sorted scores at every level: ``O(n_levels)`` once the
    scores are sorted (the same values: the ``rank``-th smallest score, or +-inf)."""
    n = ascending.size
    out = np.empty(len(levels))
    for i, level in enumerate(levels.tolist()):
        rank = _rank(n, level)
        out[i] = math.inf if rank > n else -math.inf if rank < 1 else ascending[rank - 1]
    return out


def _temperature(q_hat: float, alpha: float) -> float:
    """``(alpha - 1) * nextafter(q_hat, inf)``: the support of ``z / T`` is ``s <= q_hat``."""
    if not math.isfinite(q_hat):
        return math.inf if q_hat > 0 else 0.0
    return (alpha - 1.0) * float(np.nextafter(max(q_hat, 0.0), np.inf))


def level_temperatures(quantiles: np.ndarray, alpha: float) -> np.ndarray:
    """The temperature of each level (row of ``quantiles``): that of its largest ``q_hat``."""
    return np.array([_temperature(float(row.max()), alpha) for row in quantiles])


def calibrate(
    true_scores: np.ndarray,
    codes: np.ndarray,
    n_classes: int,
    levels: np.ndarray,
    *,
    class_conditional: bool = False,
    classes: np.ndarray | None = None,
    warn: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """The conformal quantiles of calibration scores, marginal or per class.

    Where the rows are too few for a level (the quantile is inf), one ``UserWarning`` says
    so for every level and class at once, naming the classes.

    Parameters
    ----------
    true_scores : ndarray of shape (n,)
        The scores of the calibration rows' true labels.
    codes : ndarray of shape (n,)
        Their class indices, in ``range(n_classes)``.
    n_classes : int
        The number of classes.
    levels : ndarray of shape (n_levels,)
        The confidence levels.
    class_conditional : bool, default=False
        One quantile per class, from the rows of that class.
    classes : ndarray of shape (n_classes,), default=None
        The class labels, to name in the warning (class indices when None).
    warn : bool, default=True
        Whether to warn of too few rows (:func:`sk_entmax.persistence.load`, which
        recomputes a stored calibration, does not).

    Returns
    -------
    quantiles : ndarray of shape (n_levels, n_classes)
        ``q_hat`` per level and label.
    counts : ndarray of shape (n_classes,)
        Calibration rows per class.
    """
    counts = np.bincount(codes, minlength=n_classes)
    levels = np.asarray(levels, dtype=np.float64)
    quantiles = np.empty((len(levels), n_classes))
    if class_conditional:  # each class's scores sorted once: O(n log n + n_levels) in all
        order = np.lexsort((true_scores, codes))
        groups = np.split(np.asarray(true_scores, dtype=np.float64)[order], np.cumsum(counts)[:-1])
        for c, group in enumerate(groups):
            quantiles[:, c] = _sorted_quantiles(group, levels)
    else:
        ascending = np.sort(np.asarray(true_scores, dtype=np.float64))
        quantiles[:] = _sorted_quantiles(ascending, levels)[:, np.newaxis]
    short = []
    for i, c in zip(*np.nonzero(quantiles == math.inf), strict=True):
        if class_conditional:
            short.append((float(levels[i]), int(c), int(counts[c])))
        elif c == 0:
            short.append((float(levels[i]), None, len(true_scores)))
    if short and warn:
        warnings.warn(_too_few_message(short, classes), UserWarning, stacklevel=3)
    return quantiles, counts


def _label_name(label: Any) -> str:
    """A class label as the warning names it: ``'setosa'``, ``3``."""
    value = label.item() if isinstance(label, np.generic) else label
    return repr(value)


def _too_few_message(short: list[tuple[float, int | None, int]], classes: Any) -> str:
    """One message for every (level, class index or None, rows) whose quantile is inf."""
    parts = []
    for level in dict.fromkeys(level for level, _, _ in short):
        need = f"it needs ceil((n + 1) * {level}) <= n, i.e. n >= {math.ceil(level / (1 - level))}"
        rows = [(c, n) for lev, c, n in short if lev == level]
        if rows[0][0] is None:
            parts.append(
                f"{rows[0][1]} calibration rows are too few for confidence_level={level} "
                f"({need}): the quantile is inf and every label is in the set"
            )
            continue
        named = ", ".join(
            f"{_label_name(classes[c]) if classes is not None else c} ({n} rows)" for c, n in rows
        )
        parts.append(
            f"the calibration rows of {len(rows)} class{'es' if len(rows) > 1 else ''} are "
            f"too few for confidence_level={level} ({need} rows per class): {named}; their "
            "quantiles are inf and those classes are in every set"
        )
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def calibrated_proba(
    decision: np.ndarray, sets: np.ndarray, temperature: float | np.ndarray, alpha: float
) -> np.ndarray:
    """``entmax_alpha(z / T)`` restricted to ``sets``, with support exactly ``sets``.

    Parameters
    ----------
    decision : ndarray of shape (n_samples, n_classes)
        Decision scores ``z``.
    sets : ndarray of bool, shape (n_samples, n_classes)
        The prediction sets. A row with an empty set (a randomized set may be empty) gets
        probabilities all 0.
    temperature : float or ndarray of shape (n_samples,)
        ``T``, one for every row or one per row (``inf`` gives the uniform distribution on
        the set).
    alpha : float
        The entmax alpha.

    Returns
    -------
    proba : ndarray of shape (n_samples, n_classes)
        Rows on the simplex, nonzero exactly on ``sets`` (all 0 where the set is empty).
    """
    from sk_entmax.entmax import entmax

    z = np.asarray(decision, dtype=np.float64)
    sets = np.asarray(sets, dtype=bool)
    proba = np.zeros(z.shape)
    kept = sets.any(axis=1)
    if not kept.any():
        return proba
    z, inside = z[kept], sets[kept]
    t = np.asarray(temperature, dtype=np.float64)
    t = t[kept][:, np.newaxis] if t.ndim else np.full((len(z), 1), float(t))
    # entmax is shift-invariant: the shift keeps z / T <= 0, so a tiny T cannot overflow
    shifted = z - np.max(np.where(inside, z, -np.inf), axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        scaled = np.where(
            t > 0, shifted / np.where(t > 0, t, 1.0), np.where(shifted < 0, -np.inf, 0.0)
        )
    scaled = np.where(inside, scaled, -np.inf)
    with torch.no_grad():
        mapped = entmax(torch.from_numpy(np.ascontiguousarray(scaled)), alpha, training=False)
    mapped = mapped.numpy().astype(np.float64, copy=True)
    mapped[~inside] = 0.0
    mapped[inside & (mapped <= 0)] = np.finfo(np.float64).tiny
    proba[kept] = mapped
    return proba


# ---------------------------------------------------------------------- randomized sets


def randomized_sets(
    scores: np.ndarray,
    groups: list[np.ndarray],
    label_group: np.ndarray,
    levels: np.ndarray,
    u: np.ndarray,
) -> np.ndarray:
    """Randomized conformal sets, whose coverage is the level exactly (in expectation).

    Label ``y`` of a row with uniform draw ``u`` is in the set iff its smoothed p-value
    exceeds ``eps = 1 - level``:

    .. math::

        \\#\\{i : s_i > s(x, y)\\} + u \\, (1 + \\#\\{i : s_i = s(x, y)\\}) > \\varepsilon (n + 1),

    counted over the ``n`` calibration scores ``s_i`` of the label's group (all rows, or the
    rows of class ``y`` for the class-conditional method). Under exchangeability the
    smoothed p-value of the true label is uniform on (0, 1), so the true label is missed
    with probability exactly ``eps`` (Vovk, Gammerman and Shafer, "Algorithmic Learning in
    a Random World", 2005, ch. 2). The left side never increases with ``s(x, y)``, so a
    row's set is ``{y : s(x, y) <= t}`` for a threshold ``t`` of that row: the support of
    entmax at a per-row temperature (:func:`row_temperatures`). With ``u = 1`` the rule is
    the conservative one, ``s(x, y) <= q_hat``, so a randomized set is a subset of it; it
    may be empty.

    Parameters
    ----------
    scores : ndarray of shape (n_samples, n_classes)
        Every label's non-conformity score (:func:`nonconformity_scores`).
    groups : list of ndarray
        The calibration scores of each group, sorted ascending.
    label_group : ndarray of int, shape (n_classes,)
        The group whose scores each label is compared with.
    levels : ndarray of shape (n_levels,)
        The confidence levels.
    u : ndarray of shape (n_samples,)
        One uniform draw in [0, 1) per row.

    Returns
    -------
    sets : ndarray of bool, shape (n_samples, n_classes, n_levels)
    """
    n, k = scores.shape
    out = np.empty((n, k, len(levels)), dtype=bool)
    for g, ascending in enumerate(groups):
        cols = np.flatnonzero(label_group == g)
        if not cols.size:
            continue
        s = scores[:, cols]
        right = np.searchsorted(ascending, s, side="right")
        equal = right - np.searchsorted(ascending, s, side="left")
        mass = (ascending.size - right) + u[:, np.newaxis] * (equal + 1)
        for i, level in enumerate(np.asarray(levels, dtype=np.float64).tolist()):
            out[:, cols, i] = mass > (1.0 - level) * (ascending.size + 1)
    return out


def row_temperatures(scores: np.ndarray, sets: np.ndarray, alpha: float) -> np.ndarray:
    """The temperature of each row whose support is its set: ``(alpha - 1) *
    nextafter(t, inf)`` with ``t`` the largest score in the set (0 for an empty set)."""
    top = np.max(np.where(sets, scores, 0.0), axis=1, initial=0.0)
    return (alpha - 1.0) * np.nextafter(top, np.inf)


def level_sets(
    z: np.ndarray, alpha: float, delta: float, quantiles: np.ndarray, class_conditional: bool
) -> np.ndarray:
    """The sets ``{y : s(x, y) <= q_hat}`` of each level's quantiles (n_levels, n_classes),
    (n_samples, n_classes, n_levels): by a search over the ranks for one quantile per level,
    from every label's score for one quantile per class (``class_conditional``)."""
    if not class_conditional:
        return np.stack([_top_sets(z, delta, q[0]) for q in quantiles], -1)
    scores = nonconformity_scores(z, alpha)
    return scores[:, :, np.newaxis] <= quantiles.T[np.newaxis]


def drawn_sets(
    scores: np.ndarray,
    calibration_scores: np.ndarray,
    calibration_classes: np.ndarray,
    levels: np.ndarray,
    seed: int,
    class_conditional: bool,
) -> np.ndarray:
    """The randomized sets of a stored calibration: each label against the calibration
    scores of its group (every row, or its class's rows with ``class_conditional``), with
    the uniform draw of its row (the ``i``-th draw of ``seed`` for the ``i``-th row)."""
    k = scores.shape[1]
    codes = calibration_classes
    if class_conditional and (codes >= 0).all():
        groups = [np.sort(calibration_scores[codes == c]) for c in range(k)]
        label_group = np.arange(k)
    else:
        groups, label_group = [np.sort(calibration_scores)], np.zeros(k, dtype=np.int64)
    u = np.random.default_rng(seed).random(len(scores))
    return randomized_sets(scores, groups, label_group, levels, u)


# ---------------------------------------------------------------------- recall risk


def recall_thresholds(
    pair_scores: np.ndarray, pair_rows: np.ndarray, n_rows: int, levels: np.ndarray
) -> np.ndarray:
    """The conformal-risk-control thresholds of the recall loss, one per level.

    A calibration row ``i`` with true labels ``Y_i`` loses, at threshold ``lam``, the
    share of its true labels outside ``{y : s(x_i, y) <= lam}``:
    ``L_i(lam) = #{y in Y_i : s(x_i, y) > lam} / |Y_i|`` (0 for a row without labels),
    a loss in [0, 1] that never increases with ``lam``. Conformal risk control (Angelopoulos,
    Bates, Fisch, Lei and Schuster, "Conformal Risk Control", ICLR 2024, Theorem 1) takes
    the smallest ``lam`` with

    .. math::

        \\frac{n}{n + 1} \\hat R(\\lambda) + \\frac{1}{n + 1} \\le \\varepsilon,

    ``hat R`` the mean loss of the ``n`` calibration rows; then, under exchangeability, the
    expected share of a new row's true labels that its set misses is at most ``eps``. The
    candidates are 0 (the top label(s) alone) and the calibration rows' true-label scores
    (where ``hat R`` steps); ``inf`` (every label) when no candidate satisfies it, as when
    ``n + 1 < 1 / eps``. The sum of losses is compared with ``eps (n + 1) - 1`` less
    ``1e-9``, so that rounding in the sum of the ``1 / |Y_i|`` can only make it smaller.

    Parameters
    ----------
    pair_scores : ndarray of shape (n_pairs,)
        The score of each (row, true label) pair.
    pair_rows : ndarray of int, shape (n_pairs,)
        The row of each pair, in ``range(n_rows)``.
    n_rows : int
        The number of calibration rows (rows without labels included).
    levels : ndarray of shape (n_levels,)
        ``1 - eps`` per level.

    Returns
    -------
    thresholds : ndarray of shape (n_levels,)
    """
    scores = np.asarray(pair_scores, dtype=np.float64)
    rows = np.asarray(pair_rows, dtype=np.int64)
    # 1 / |Y_i| for each pair, from the pairs alone (nothing allocated by n_rows)
    _, inverse, sizes = np.unique(rows, return_inverse=True, return_counts=True)
    weights = 1.0 / sizes[inverse]
    order = np.argsort(scores, kind="stable")
    ascending, cumulative = scores[order], np.cumsum(weights[order])
    total = float(cumulative[-1]) if cumulative.size else 0.0
    candidates = np.unique(np.concatenate([[0.0], ascending]))
    # the loss left at each candidate: the weight of the scores above it
    below = np.searchsorted(ascending, candidates, side="right")
    lost = total - np.concatenate([[0.0], cumulative])[below]
    out = np.empty(len(levels))
    for i, level in enumerate(np.asarray(levels, dtype=np.float64).tolist()):
        budget = (1.0 - level) * (n_rows + 1) - 1.0 - 1e-9
        ok = np.flatnonzero(lost <= budget)
        out[i] = candidates[ok[0]] if budget >= 0 and ok.size else math.inf
    return out
