"""Conformal prediction sets on the rows a report is on: coverage, set sizes, a few sets.

:class:`ConformalSets` holds what ``python -m sk_entmax report --confidence L`` shows about
the sets of a :class:`~sk_entmax.conformal.SparseConformalClassifier` on its held-out rows:
the target coverage, the empirical one (the share of rows whose true label is in the set),
how many rows have a set of each size (a histogram on the page), the coverage of the rows
of each class (with the class's calibration rows), and the sets of a few rows, with the
classes they rule out. It prints them (:meth:`ConformalSets.lines`) and the HTML page shows
them in a "Conformal prediction sets" section. :func:`conformal_sets` warns when a class
has fewer calibration rows than a class-conditional quantile needs.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ConformalSets", "conformal_sets"]

#: rows whose sets are shown one by one
SAMPLE_ROWS = 5


@dataclass(frozen=True)
class ConformalSets:
    """Prediction sets on labelled rows, and how often they hold the true label.

    Attributes
    ----------
    confidence : float
        The target coverage (the ``confidence_level``), in (0, 1).
    classes : list of str
        The class labels, the columns of ``sets``.
    sets : ndarray of bool, shape (n_rows, n_classes)
        ``sets[i, j]``: class ``j`` is in the set of row ``i``.
    covered : ndarray of bool, shape (n_rows,)
        Whether each row's true label is in its set.
    true_labels : list of str
        Each row's true label.
    row_labels : list of str
        Each row's name (the DataFrame index: the CSV's data row number).
    n_calibration : int
        The calibration rows the quantile was taken on.
    sample : list of int
        The rows whose sets are shown one by one.
    calibration_per_class : list of int or None
        The calibration rows of each class (None when the calibration does not say: a
        multi-label one).
    calibration : str
        Where the calibration rows come from: "kept out of the fit", or the out-of-fold
        scores of ``cv=K``.
    """

    confidence: float
    classes: list[str]
    sets: np.ndarray
    covered: np.ndarray
    true_labels: list[str]
    row_labels: list[str]
    n_calibration: int
    sample: list[int] = field(default_factory=list)
    calibration_per_class: list[int] | None = None
    calibration: str = "kept out of the fit"

    @property
    def n_rows(self) -> int:
        return int(self.sets.shape[0])

    @property
    def coverage(self) -> float:
        """The share of rows whose true label is in the set."""
        return float(self.covered.mean()) if self.n_rows else float("nan")

    def size_counts(self) -> list[tuple[int, int]]:
        """(set size, number of rows) for every size that occurs, smallest first."""
        counts = Counter(int(n) for n in self.sets.sum(axis=1))
        return sorted(counts.items())

    def class_coverage(self) -> list[tuple[str, int, int, float, int | None, bool]]:
        """The coverage of the rows of each class.

        Returns
        -------
        list of tuple
            Per class, in ``classes`` order: (class, rows whose true label it is, of those
            the rows whose set holds it, their share (nan without rows), the class's
            calibration rows or None, whether those are too few for a class-conditional
            quantile at the target coverage, ``ceil((n + 1) * confidence) > n``).
        """
        true = np.asarray(self.true_labels)
        out = []
        for j, name in enumerate(self.classes):
            mine = true == name
            rows, hit = int(mine.sum()), int(self.covered[mine].sum())
            calibration = (
                None if self.calibration_per_class is None else self.calibration_per_class[j]
            )
            short = calibration is not None and _too_few(calibration, self.confidence)
            out.append((name, rows, hit, hit / rows if rows else math.nan, calibration, short))
        return out

    def row_sets(self) -> list[tuple[str, str, list[str], list[str], bool]]:
        """For the sample rows: (row, true label, classes in the set, ruled out, covered)."""
        return [
            (
                self.row_labels[i],
                self.true_labels[i],
                [c for c, kept in zip(self.classes, self.sets[i], strict=True) if kept],
                [c for c, kept in zip(self.classes, self.sets[i], strict=True) if not kept],
                bool(self.covered[i]),
            )
            for i in self.sample
        ]

    def lines(self) -> list[str]:
        """What the terminal shows (class labels as they are: the caller escapes)."""
        covered = int(self.covered.sum())
        sizes = ", ".join(
            f"{size} {'class' if size == 1 else 'classes'}: {count}"
            for size, count in self.size_counts()
        )
        lines = [
            f"conformal prediction sets: target coverage {self.confidence:g} (calibrated on "
            f"{self.n_calibration} rows {self.calibration})",
            f"  empirical coverage on the {self.n_rows} held-out rows: {self.coverage:.3f} "
            f"({covered} of {self.n_rows} sets hold the true label)",
            f"  set sizes (rows): {sizes}",
        ]
        for name, rows, hit, share, calibration, short in self.class_coverage():
            cal = "" if calibration is None else f"; {calibration} calibration rows"
            lines.append(
                f"  class {name}: coverage {share:.3f} ({hit} of {rows} rows){cal}"
                + (" (too few for a class-conditional quantile)" if short else "")
            )
        for row, true, kept, ruled_out, hit in self.row_sets():
            lines.append(
                f"  row {row} (true {true}{'' if hit else ', missed'}): set "
                f"{{{', '.join(kept)}}}; ruled out: {', '.join(ruled_out) or 'none'}"
            )
        return lines


def conformal_sets(
    conformal: Any, X: Any, y: Any, *, n_sample: int = SAMPLE_ROWS
) -> ConformalSets:
    """The prediction sets of a conformalized classifier on labelled rows.

    Parameters
    ----------
    conformal : SparseConformalClassifier
        Conformalized, with a single ``confidence_level``.
    X : array-like or DataFrame of shape (n_samples, n_features)
        The rows (held out from both the fit and the calibration).
    y : array-like of shape (n_samples,)
        Their true labels; a label the model never saw is never covered.
    n_sample : int, default=5
        How many rows (the first ones) to show one by one.

    Returns
    -------
    ConformalSets

    Warns
    -----
    UserWarning
        When a class has fewer calibration rows than a class-conditional quantile needs at
        the target coverage (``ceil((n + 1) * confidence) > n``, about ``1 / eps``): its
        class-conditional quantile would be infinite (every set would hold it).
    """
    sets = np.asarray(conformal.predict_set(X), dtype=bool)
    classes = np.asarray(conformal.classes_)
    y = np.asarray(y)
    covered = np.array(
        [bool(sets[i, classes == label].any()) for i, label in enumerate(y)], dtype=bool
    )
    index = getattr(X, "index", None)
    rows = [str(r) for r in index] if index is not None else [str(i) for i in range(len(y))]
    confidence = float(conformal.confidence_levels_[0])
    codes = np.asarray(getattr(conformal, "conformity_classes_", []))
    per_class = None
    if codes.size and (codes >= 0).all() and not hasattr(conformal, "conformity_rows_"):
        per_class = np.bincount(codes, minlength=len(classes)).tolist()
        short = [
            f"{classes[j]!s} ({n} rows)"
            for j, n in enumerate(per_class)
            if _too_few(n, confidence)
        ]
        if short:
            need = math.ceil(confidence / (1 - confidence) - 1e-9)
            warnings.warn(
                f"{len(short)} class{'es have' if len(short) > 1 else ' has'} fewer "
                f"calibration rows than a class-conditional quantile at confidence "
                f"{confidence:g} needs (n >= {need}, about 1 / eps): {', '.join(short)}; "
                "with class_conditional=True their quantile is infinite and every set holds "
                "them. Calibrate on more rows of these classes.",
                UserWarning,
                stacklevel=2,
            )
    return ConformalSets(
        confidence=confidence,
        classes=[str(c) for c in classes],
        sets=sets,
        covered=covered,
        true_labels=[str(label) for label in y],
        row_labels=rows,
        n_calibration=int(np.sum(conformal.n_conformalize_samples_)),
        sample=list(range(min(n_sample, len(y)))),
        calibration_per_class=per_class,
        calibration=(
            f"scored out of fold (cv={conformal.cv})"
            if getattr(conformal, "cv", None) is not None
            else "kept out of the fit"
        ),
    )


def _too_few(n: int, confidence: float) -> bool:
    """Whether ``n`` calibration rows give an infinite conformal quantile at
    ``confidence``: ``ceil((n + 1) * confidence) > n``."""
    return math.ceil((n + 1) * confidence - 1e-9) > n
