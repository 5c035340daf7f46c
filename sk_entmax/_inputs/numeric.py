"""Numeric feature matrices as the estimators take them: dense or sparse, float32 or float64.

The data hooks of an estimator whose ``X`` must be numeric (the tables with text or missing
values go through :mod:`sk_entmax._inputs.tabular` instead).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.validation import validate_data

from sk_entmax._engine.training import TrainingPlan

__all__ = ["NumericInputMixin"]


#: what the linear estimators advise for text in ``X``
_NUMERIC_ADVICE = (
    "needs numeric features: encode text and categorical columns first (e.g. OneHotEncoder "
    "in a ColumnTransformer), or use TabNetEntmaxClassifier, which embeds categorical columns"
)


class _numeric_hint:
    """Add a hint to the error for text in a column read as numbers: ``"<error>. <the
    estimator's name> <advice>"``, for numpy's and scikit-learn's "could not convert"."""

    def __init__(self, estimator: Any, advice: str = _NUMERIC_ADVICE):
        self.name = type(estimator).__name__
        self.advice = advice

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if kind is ValueError and "could not convert" in str(error):
            raise ValueError(f"{error}. {self.name} {self.advice}") from error
        return False


class NumericInputMixin:
    """``_validate_fit_data`` and ``_validate_predict_data`` for numeric ``X`` (sparse too,
    where the estimator's ``_sparse_input`` says so)."""

    def _validate_fit_data(
        self, X, y, plan: TrainingPlan, params: dict[str, Any]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Validate the training data; returns float features and the raw target.

        Float32 C-contiguous input (a read-only memmap included) is used as it is, not copied;
        so is float64 input for the full-batch solver, which reads X in float64 blocks.
        """
        dtype = [np.float64, np.float32] if plan.full_batch else np.float32
        with _numeric_hint(self):
            return validate_data(
                self, X, y, dtype=dtype, multi_output=True, accept_sparse=self._sparse()
            )

    def _validate_stream_data(self, X, y, first: bool) -> tuple[np.ndarray, np.ndarray]:
        """Validate a ``partial_fit`` chunk: float32 features (the columns fixed by the first
        chunk, or by fit) and the raw target."""
        with _numeric_hint(self):
            return validate_data(
                self,
                X,
                y,
                dtype=np.float32,
                multi_output=True,
                accept_sparse=self._sparse(),
                reset=first,
            )

    def _validate_predict_data(self, X) -> np.ndarray:
        """Validate data to predict on against what fit saw; returns float features (float32
        or float64 as given: blocks of it are read in float64)."""
        with _numeric_hint(self):
            return validate_data(
                self, X, dtype=[np.float64, np.float32], reset=False, accept_sparse=self._sparse()
            )

    def _sparse(self) -> str | bool:
        return "csr" if self._sparse_input else False
