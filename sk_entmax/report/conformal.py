"""Conformal prediction sets on the rows a report is on: coverage, set sizes, a few sets.

:class:`ConformalSets` holds what ``python -m sk_entmax report --confidence L`` shows about
the sets of a :class:`~sk_entmax.conformal.SparseConformalClassifier` on its held-out rows:
the target coverage, the empirical one (the share of rows whose true label is in the set),
how many rows have a set of each size, and the sets of a few rows, with the classes they
rule out. It prints them (:meth:`ConformalSets.lines`) and the HTML page shows them in a
"Conformal prediction sets" section.
"""

from __future__ import annotations

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
    """

    confidence: float
    classes: list[str]
    sets: np.ndarray
    covered: np.ndarray
    true_labels: list[str]
    row_labels: list[str]
    n_calibration: int
    sample: list[int] = field(default_factory=list)

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
            f"{self.n_calibration} rows kept out of the fit)",
            f"  empirical coverage on the {self.n_rows} held-out rows: {self.coverage:.3f} "
            f"({covered} of {self.n_rows} sets hold the true label)",
            f"  set sizes (rows): {sizes}",
        ]
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
    """
    sets = np.asarray(conformal.predict_set(X), dtype=bool)
    classes = np.asarray(conformal.classes_)
    y = np.asarray(y)
    covered = np.array(
        [bool(sets[i, classes == label].any()) for i, label in enumerate(y)], dtype=bool
    )
    index = getattr(X, "index", None)
    rows = [str(r) for r in index] if index is not None else [str(i) for i in range(len(y))]
    return ConformalSets(
        confidence=float(conformal.confidence_levels_[0]),
        classes=[str(c) for c in classes],
        sets=sets,
        covered=covered,
        true_labels=[str(label) for label in y],
        row_labels=rows,
        n_calibration=int(np.sum(conformal.n_conformalize_samples_)),
        sample=list(range(min(n_sample, len(y)))),
    )
