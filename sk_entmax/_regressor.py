"""What a regressor adds to the shared estimator: the target, its scale, the predictions.

The network is trained on the target standardized column by column (its mean removed,
divided by its standard deviation over the training rows, weighted by ``sample_weight``), so
that the learning rate, the initial weights and the loss's scale do not depend on the
target's units; :meth:`BaseEntmaxRegressor.predict` undoes it. The loss is the mean squared
error over the targets (on the standardized scale), weighted by ``sample_weight``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import _check_sample_weight

from sk_entmax._attributes import Attribute, array, integer
from sk_entmax._base import ESTIMATOR_FITTED, BaseEntmaxEstimator

__all__ = ["FITTED_ATTRIBUTES", "BaseEntmaxRegressor"]

#: the fitted attributes every regressor has, as :mod:`sk_entmax.persistence` stores them
FITTED_ATTRIBUTES: dict[str, Attribute] = {
    **ESTIMATOR_FITTED,
    "n_outputs_": integer(1, equals="n_outputs"),
    "_target_mean": array("f", ("n_outputs",)),
    "_target_scale": array("f", ("n_outputs",), low=1e-300),
}


class BaseEntmaxRegressor(RegressorMixin, BaseEntmaxEstimator):
    """The regressor part of the estimators: a numeric target of one or more columns.

    The estimators subclass it with their network (see :class:`BaseEntmaxEstimator` for the
    hooks they supply); the network's ``forward`` returns the standardized predictions (or
    a tuple whose first entry they are) and its ``loss`` the per-row squared error.
    """

    _fitted_schema: ClassVar[dict[str, Attribute]] = FITTED_ATTRIBUTES

    # ------------------------------------------------------------------ fit

    def _fit_targets(
        self, X: Any, y: Any, sample_weight: Any, params: dict[str, Any]
    ) -> tuple[np.ndarray, np.ndarray]:
        y = np.asarray(y)
        if y.dtype.kind == "O":  # numbers held as objects are numbers
            try:
                y = y.astype(np.float64)
            except (TypeError, ValueError):
                pass
        if y.dtype.kind not in "biuf":
            raise ValueError(
                f"{type(self).__name__} takes a numeric target; y has dtype {y.dtype}. "
                "For class labels use the classifier."
            )
        Y = y.astype(np.float64).reshape(len(y), -1)
        if not np.isfinite(Y).all():
            raise ValueError("y holds NaN or infinite values; fit drops no rows: remove them")
        weight = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if not np.any(weight > 0):
            raise ValueError("sample_weight is zero for every sample: nothing to fit")
        # standardized in units of each column's largest magnitude, so that no sum or
        # square overflows however large the finite target (1e200 times N(0, 1) once gave
        # an infinite scale and infinite predictions): the mean and scale are then at most
        # that magnitude, finite
        magnitude = np.abs(Y).max(axis=0)
        magnitude = np.where(magnitude > 0, magnitude, 1.0)
        unit = Y / magnitude
        unit_mean = np.average(unit, axis=0, weights=weight)
        unit_scale = np.sqrt(np.average((unit - unit_mean) ** 2, axis=0, weights=weight))
        scale = unit_scale * magnitude
        constant = ~(scale > np.finfo(np.float64).tiny)  # a constant column: scale 1, y 0
        standardized = np.where(
            constant, 0.0, (unit - unit_mean) / np.where(constant, 1.0, unit_scale)
        )
        self.n_outputs_ = Y.shape[1]
        self._target_mean = unit_mean * magnitude
        self._target_scale = np.where(constant, 1.0, scale)
        return standardized.astype(np.float32), weight.astype(np.float32)

    def _n_outputs(self) -> int:
        return self.n_outputs_

    def _outputs_key(self) -> Any:
        return self.n_outputs_

    # ------------------------------------------------------------------ predict

    def predict(self, X):
        """Predicted target values.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            One column per target; 1-d for a single target (as scikit-learn's
            ``MLPRegressor``).
        """
        y = self._scores(X).cpu().numpy() * self._target_scale + self._target_mean
        return y[:, 0] if self.n_outputs_ == 1 else y

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags
