"""What a classifier adds to the shared estimator: labels, class weights, probabilities.

``fit`` encodes the labels (or a multi-label indicator matrix, trained against the label
proportions) and weighs the rows by ``sample_weight`` times ``class_weight``;
``predict_proba`` applies the output mapping the loss was trained with, whose zeros are
exact; ``predict`` and ``decision_function`` follow from it.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch
from sklearn.base import ClassifierMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _check_sample_weight
from skorch.dataset import ValidSplit

from sk_entmax._base import BaseEntmaxEstimator
from sk_entmax._inference import PROBA_ROWS
from sk_entmax._threads import torch_threads

__all__ = ["BaseEntmaxClassifier"]


class BaseEntmaxClassifier(ClassifierMixin, BaseEntmaxEstimator):
    """The classifier part of the estimators: the target, its classes, the probabilities.

    The estimators subclass it with their network (see :class:`BaseEntmaxEstimator` for the
    hooks they supply).
    """

    # ------------------------------------------------------------------ fit

    def _fit_targets(
        self, X: Any, y: Any, sample_weight: Any, params: dict[str, Any]
    ) -> tuple[np.ndarray, np.ndarray]:
        for attr in ("_empty_rows", "_y_dtype"):
            self.__dict__.pop(attr, None)
        y_enc, multilabel = self._validate_targets(y)  # (warnings: 4 frames to the caller)
        self.multilabel_ = multilabel
        weight = self._sample_weight(X, y_enc, sample_weight, multilabel, params["class_weight"])
        self.__dict__.pop("_empty_rows", None)  # only the weights needed it
        return y_enc, weight

    def _n_outputs(self) -> int:
        return len(self.classes_)

    def _outputs_key(self) -> Any:
        return (np.asarray(self.classes_).tolist(), self.multilabel_)

    def _validation_split(self, n_samples: int, params: dict[str, Any], seed: int) -> ValidSplit:
        n_valid = int(np.ceil(params["validation_fraction"] * n_samples))
        multilabel = self.multilabel_
        if (
            n_valid < 2
            or n_samples - n_valid < 2
            or (not multilabel and n_valid < len(self.classes_))
        ):
            raise ValueError(
                f"validation_fraction={params['validation_fraction']} leaves {n_valid} of "
                f"{n_samples} samples for validation, too few for early stopping with "
                f"{len(self.classes_)} classes; raise it or set early_stopping=False"
            )
        return ValidSplit(
            params["validation_fraction"], stratified=not multilabel, random_state=seed
        )

    def _validate_targets(self, y: np.ndarray) -> tuple[np.ndarray, bool]:
        """Encode ``y``; returns the training target and whether it is multi-label."""
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn(
                "A column-vector y was passed when a 1d array was expected; it is raveled. "
                "(A multi-label target needs at least 2 label columns.)",
                DataConversionWarning,
                stacklevel=4,  # _validate_targets <- _fit_targets <- fit <- the caller
            )
            y = y.ravel()
        kind = type_of_target(y, input_name="y")
        if kind == "multilabel-indicator":
            return self._encode_multilabel(y), True
        if y.ndim == 2:
            raise ValueError(
                f"y of type {kind!r} is not supported: pass a 1d array of labels or a "
                "binary indicator matrix (n_samples, n_labels) for multi-label targets"
            )
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        if len(self.classes_) < 2:
            label = self.classes_[0]  # as the user wrote it: 0.0, not np.float64(0.0)
            label = label.item() if isinstance(label, np.generic) else label
            raise ValueError(
                "the classifier needs samples of at least 2 classes in the data; "
                f"got 1 class: {label!r}"
            )
        return encoder.transform(y).astype(np.int64), False

    def _encode_multilabel(self, y: np.ndarray, stacklevel: int = 5) -> np.ndarray:
        """The label proportions of an indicator matrix (``stacklevel``: the frames from
        here to the caller of fit, or of partial_fit, for the warning on empty rows)."""
        Y = y.toarray() if hasattr(y, "toarray") else np.asarray(y)
        self.classes_ = np.arange(Y.shape[1])
        self._y_dtype = Y.dtype
        counts = Y.sum(axis=1, dtype=np.float64)
        empty = counts == 0
        if empty.all():
            raise ValueError("every row of the multi-label target y is empty (no label)")
        if empty.any():
            warnings.warn(
                f"{int(empty.sum())} of {len(Y)} rows of the multi-label target have no "
                "label; they carry no information for a distribution over labels, so they "
                "get zero weight in the loss (they are still counted in n_samples)",
                UserWarning,
                stacklevel=stacklevel,
            )
        proportions = Y / np.where(empty, 1.0, counts)[:, None]
        proportions[empty] = 1.0 / Y.shape[1]  # placeholder distribution, weight 0
        self._empty_rows = empty
        return proportions.astype(np.float32)

    def _sample_weight(
        self,
        X: np.ndarray,
        y_enc: np.ndarray,
        sample_weight: Any,
        multilabel: bool,
        class_weight: dict | str | None,
    ) -> np.ndarray:
        """``sample_weight`` times the checked ``class_weight`` of each row's class."""
        weight = _check_sample_weight(sample_weight, X, dtype=np.float32, ensure_non_negative=True)
        if class_weight is not None:
            if multilabel:
                raise ValueError("class_weight is not supported with multi-label targets")
            per_class = compute_class_weight(
                class_weight, classes=self.classes_, y=self.classes_[y_enc]
            )
            weight = weight * per_class[y_enc].astype(np.float32)
        if multilabel:
            weight = np.where(self._empty_rows, np.float32(0), weight)
        if not np.any(weight > 0):
            raise ValueError(
                "sample_weight (times class_weight) is zero for every sample: nothing to fit"
            )
        return weight.astype(np.float32)

    # ------------------------------------------------------------------ predict

    def predict_proba(self, X):
        """Sparse class probabilities: rows sum to 1 and hold exact zeros.

        The mapping is the one the loss was trained with (softmax at alpha = 1, exact
        entmax15 at 1.5, exact sparsemax at 2, root finding otherwise), applied in float64.
        For multi-label targets each row is a distribution over labels (it sums to 1), not
        a set of one-vs-rest marginals.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities, columns ordered as ``classes_``.
        """
        scores, n_threads = self._scores(X, with_threads=True)
        with torch.no_grad(), torch_threads(n_threads):
            # in blocks of rows: the mapping's temporaries stay small however long X is
            blocks = [self.net_.module_.proba(block) for block in scores.split(PROBA_ROWS)]
        return torch.cat(blocks).cpu().numpy()

    def decision_function(self, X):
        """The scores that the entmax mapping turns into :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            Float64 scores, columns ordered as ``classes_``. With two classes (and a 1d
            target) it is the score of ``classes_[1]`` minus that of ``classes_[0]``, as
            scikit-learn's binary classifiers return: entmax depends only on that difference,
            so the probabilities follow from it.
        """
        scores = self._scores(X).cpu().numpy()
        if not self.multilabel_ and scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X):
        """Predicted labels, derived from :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_labels)
            The most probable class (original labels), or for multi-label targets the
            support of the predicted distribution as an indicator matrix.
        """
        proba = self.predict_proba(X)
        if self.multilabel_:
            return (proba > 0).astype(self._y_dtype)
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        tags.input_tags.sparse = self._sparse_input
        return tags
