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

Where each part lives: ``_inputs`` checks and encodes the inputs (probabilities, targets,
labels, weights, prediction sets), ``_tsallis`` computes the Tsallis loss, ``_support`` the
support metrics and ``_scorers`` wraps them as scorers. Import from ``sk_entmax.metrics``
itself.
"""

from sk_entmax.metrics._scorers import (
    _support_size,  # the scorer make_support_size_scorer wraps, pickled at this path
    make_coverage_scorer,
    make_support_size_scorer,
    make_tsallis_scorer,
    sparsest_within_one_se,
)
from sk_entmax.metrics._support import (
    mean_support_size,
    stratified_coverage,
    support_coverage,
    support_precision,
)
from sk_entmax.metrics._tsallis import tsallis_loss

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

# the public functions are documented, pickled and shown at their public path
for _function in (
    _support_size,
    make_coverage_scorer,
    make_support_size_scorer,
    make_tsallis_scorer,
    mean_support_size,
    sparsest_within_one_se,
    stratified_coverage,
    support_coverage,
    support_precision,
    tsallis_loss,
):
    _function.__module__ = __name__
del _function
