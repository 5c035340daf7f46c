"""Interpretability reports: figures and a self-contained HTML page from fitted estimators.

For a fitted :class:`~sk_entmax.TabNetEntmaxClassifier`: which features the model uses
(:func:`plot_feature_importances`), the mask of every decision step for chosen rows
(:func:`plot_step_masks`), how many mask entries are exactly zero at each step
(:func:`plot_mask_sparsity`) and the alpha of each step's mask mapping
(:func:`plot_mask_alpha`), and how uncertain each importance is over the rows reported on
(:func:`importance_intervals`). The feature-mask report also says what the masks prove: fitted
with ``faithful_masks=True``, the features each shown row's prediction provably never read and
the share of (row, feature) pairs never read; fitted without, that a zero mask is no proof.
It says too, in a box under the summary, when on the rows reported on the model reads at
most one column, or a classifier predicts one class for every row.
The same holds for a fitted :class:`~sk_entmax.TabNetEntmaxRegressor`, whose feature-mask
report shows its predictions against the true values (R² and RMSE) instead of probabilities.
For any of the entmax classifiers (or a pipeline ending in one):
the probability support, that is which classes get probability mass
(:func:`plot_class_support`), how many per row (:func:`plot_support_sizes`) and the sparse
probability rows themselves (:func:`plot_probabilities`).

:func:`feature_mask_report` and :func:`probability_support_report` write all of it as one
HTML file with the images embedded, so it can be mailed or archived as is; given
:class:`ConformalSets` (from :func:`conformal_sets`: the prediction sets of a
:class:`~sk_entmax.conformal.SparseConformalClassifier` on labelled rows), either adds a
"Conformal prediction sets" section with the target and empirical coverage, the set sizes
and a few rows' sets. The file is written whole or not at all (a temporary file renamed
over the path), and never through a symbolic link: a link, a folder or any other file that
is not a regular file at the path is refused with an OSError.

Every ``plot_*`` function draws on ``ax`` (or ``fig``) when given, otherwise on a new
:mod:`matplotlib.pyplot` figure, and returns the matplotlib object it drew on. matplotlib is
an optional dependency: ``pip install matplotlib`` (or ``pip install -e ".[plot]"`` in a clone).

Where each part lives: ``masks`` draws the mask and importance figures,
``intervals`` computes the importances' bootstrap intervals, ``conformal`` sums
up conformal prediction sets, ``probabilities`` draws the probability figures,
``regression`` a regressor's predicted-against-true figure, ``html_page`` writes
the HTML page, and ``_common`` holds what they share. Import from ``sk_entmax.report``
itself.
"""

# private, but the command line (sk_entmax.cli) prints it when matplotlib is missing
from ._common import _MISSING_MATPLOTLIB  # noqa: F401
from .conformal import ConformalSets, conformal_sets
from .html_page import feature_mask_report, probability_support_report
from .intervals import ImportanceIntervals, importance_intervals
from .masks import plot_feature_importances, plot_mask_alpha, plot_mask_sparsity, plot_step_masks
from .probabilities import plot_class_support, plot_probabilities, plot_support_sizes

__all__ = [
    "ConformalSets",
    "ImportanceIntervals",
    "conformal_sets",
    "feature_mask_report",
    "importance_intervals",
    "plot_class_support",
    "plot_feature_importances",
    "plot_mask_alpha",
    "plot_mask_sparsity",
    "plot_probabilities",
    "plot_step_masks",
    "plot_support_sizes",
    "probability_support_report",
]
