"""Feature importances of a fitted TabNet and their bootstrap intervals over the rows."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from sk_entmax.entmax.constraints import Integer, Real, check

from ._common import _tabnet


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

    def _read(self) -> np.ndarray:
        """Positions of the features read on these rows (a share above 0), most important
        first; a feature at exactly 0 is weighed by no row's attribution."""
        order = self.order()
        return order[self.importances[order] > 0]

    def overlapping(self, top: int = _TOP) -> list[tuple[str, str]]:
        """Neighbours in the ranking whose intervals overlap, among the ``top`` features read.

        Only the features read on these rows (a share above 0) are ranked: features at
        exactly 0 are not tied with each other or with the last one read, they are not
        weighed at all.

        Parameters
        ----------
        top : int, default=3
            Compare the features ranked 1 to ``top`` with the one ranked next each
            (``top=3`` compares 1 with 2, 2 with 3 and 3 with 4), as far as they are read.

        Returns
        -------
        list of (str, str)
            ``(better, next)`` name pairs whose order these rows do not settle: the lower
            end of ``better``'s interval is not above the upper end of ``next``'s. Empty
            when every one of those features stands apart from the next, or when at most
            one feature is read.
        """
        top = _check_count(top, "top", 1, "ImportanceIntervals.overlapping")
        pairs = []
        for a, b in pairwise(self._read()[: top + 1]):
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
            that each stands apart, among the features read (a share above 0); how many
            features are exactly 0, which is no tie (no row's attribution weighs them);
            then what the intervals leave out: the fit's own variation with its seed.
        """
        pairs = self.overlapping(top)
        read = self._read()
        top = min(top, len(read))
        level = f"{100 * self.confidence:.0f}%"
        n_zero = len(self.feature_names) - len(read)
        zero = (
            f" The {n_zero} feature{'s' if n_zero > 1 else ''} at exactly 0% "
            f"{'are' if n_zero > 1 else 'is'} left out of the ranking: no row's attribution "
            "weighs them, which is not a tie."
            if n_zero
            else ""
        )
        if len(read) <= 1:
            only = f"only {self.feature_names[read[0]]!r} has" if len(read) else "no feature has"
            other = (
                f"; the other {n_zero} {'are' if n_zero > 1 else 'is'} exactly 0%, not tied: "
                f"no row's attribution weighs {'them' if n_zero > 1 else 'it'}"
                if len(read) == 1 and n_zero
                else ""
            )
            text = f"Nothing to rank: on these {self.n_rows} rows {only} a share above 0{other}."
        elif pairs:
            listed = "; ".join(f"{a!r} and {b!r}" for a, b in pairs)
            which = "their order" if len(pairs) == 1 else "the order within each pair"
            text = (
                f"Not settled: on these {self.n_rows} rows the {level} intervals of {listed} "
                f"overlap, so {which} could come out either way on other rows like these. "
                f"Read them as tied.{zero}"
            )
        else:
            text = (
                f"The top {top} stand apart on these {self.n_rows} rows: each one's {level} "
                f"interval lies above the next one's.{zero}"
            )
        return (
            f"{text} The intervals cover the choice of rows only, not the fit: a refit with "
            "another random_state, or with the columns in another order, can move the "
            "importances further than that. One fit cannot tell; before relying on a "
            "ranking, refit with a few seeds and compare."
        )


def _check_count(value: Any, name: str, minimum: int, owner: str) -> int:
    return check(name, value, Integer(minimum), owner)


_CONFIDENCE = Real(0.0, 1.0, low_open=True, high_open=True, note="e.g. 0.9")


def _check_confidence(confidence: Any, owner: str) -> float:
    return check("confidence", confidence, _CONFIDENCE, owner)


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
    n_resamples = _check_count(n_resamples, "n_resamples", 1, "importance_intervals")
    confidence = _check_confidence(confidence, "importance_intervals")
    est, Xt, names = _tabnet(clf, X, "importance_intervals")
    M_explain, _ = est.explain(Xt)
    return _intervals_from(M_explain, names, n_resamples, confidence, random_state)
