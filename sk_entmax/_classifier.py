"""What a classifier adds to the shared estimator: labels, class weights, probabilities.

``fit`` encodes the labels (or a multi-label indicator matrix, trained against the label
proportions) and weighs the rows by ``sample_weight`` times ``class_weight``;
``predict_proba`` applies the output mapping the loss was trained with, whose zeros are
exact; ``predict`` and ``decision_function`` follow from it.

Multi-label targets. The network has one output per label and one more, "no label": a row
with labels is trained against its label proportions ``y / |y|``, a row without any against
the "no label" slot, so every row is in the loss and an empty prediction is learnable. The
Fenchel-Young loss against ``y / |y|`` does not fix the scale of the scores, and the support
of the trained mapping came out about twice as large as the true label sets. So after
training, a temperature ``support_temperature_`` is fitted on the training rows: the
largest at which the predicted label sets are, on average, no larger than the true ones
(the rows without labels counting 0, weighted by ``sample_weight``; see
``BaseEntmaxClassifier._fit_support_temperature``). ``predict_proba`` is
``entmax_alpha(z / T)`` over the labels and the
slot, the slot's column left out (a row sums to ``1 - P(no label)``), and ``predict`` is its
support on every row: a row predicts no label exactly where all its mass is on "no label".
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import scipy.sparse
import torch
from sklearn.base import ClassifierMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _check_sample_weight, check_is_fitted
from skorch.dataset import ValidSplit

from sk_entmax._attributes import (
    Attribute,
    Invalid,
    array,
    boolean,
    constrained,
    dtype_of,
    matching_network,
    real,
)
from sk_entmax._base import ESTIMATOR_FITTED, BaseEntmaxEstimator
from sk_entmax._engine.inference import PROBA_ROWS, map_row_blocks
from sk_entmax._parameters import ALPHA
from sk_entmax.entmax.constraints import invalid

__all__ = ["FITTED_ATTRIBUTES", "BaseEntmaxClassifier", "check_outputs"]

#: the fitted attributes every classifier has, as :mod:`sk_entmax.persistence` stores them
#: and checks them on load, in that order (see :mod:`sk_entmax.persistence._schema`); an
#: estimator's ``_fitted_schema`` adds its own. Shapes and ``equals`` name the network's
#: arguments.
FITTED_ATTRIBUTES: dict[str, Attribute] = {
    **ESTIMATOR_FITTED,
    # one per network output, or one fewer: the multi-label "no label" output (the
    # temperature below is stored exactly then; load checks the two together)
    "classes_": array("biufUO", (None,), unique=True),
    "multilabel_": boolean(),
    "_y_dtype": dtype_of("biufO", required="multilabel_"),
    # whether the multi-label target was a sparse matrix: predict then returns CSR, as
    # OneVsRestClassifier does (files from before it have none: dense)
    "_y_sparse": Attribute(boolean().check, required=False),
    # an alpha fit accepts, and the alpha of the stored network (a learned one: computed
    # from its stored tensor)
    "alpha_": matching_network(constrained(ALPHA), lambda net: net.alpha, "alpha = "),
    "support_temperature_": real(1e-300, required=False),
}


def check_outputs(fitted: Mapping[str, Any], sizes: Mapping[str, Any]) -> None:
    """``classes_`` against the network's outputs, for :mod:`sk_entmax.persistence`: one
    each, plus the "no label" output of a multi-label model that has
    ``support_temperature_`` (older multi-label files have neither). A classifier's
    ``_saved_state.check``."""
    slot = "support_temperature_" in fitted
    if slot and not fitted["multilabel_"]:
        raise Invalid(
            "fitted attribute support_temperature_ is present although multilabel_ is False"
        )
    n_outputs, n_classes = sizes["n_outputs"], len(fitted["classes_"])
    if n_classes + int(slot) != n_outputs:
        extra = " plus its 'no label' output" if slot else ""
        raise Invalid(
            f"fitted attribute classes_: {n_classes} classes{extra} do not match the "
            f"network's n_outputs = {n_outputs}"
        )


class BaseEntmaxClassifier(ClassifierMixin, BaseEntmaxEstimator):
    """The classifier part of the estimators: the target, its classes, the probabilities.

    The estimators subclass it with their network (see :class:`BaseEntmaxEstimator` for the
    hooks they supply).
    """

    #: the fitted attributes :mod:`sk_entmax.persistence` stores (the estimators extend it)
    _fitted_schema: ClassVar[dict[str, Attribute]] = FITTED_ATTRIBUTES

    # ------------------------------------------------------------------ fit

    def _fit_targets(
        self, X: Any, y: Any, sample_weight: Any, params: dict[str, Any]
    ) -> tuple[np.ndarray, np.ndarray]:
        for attr in ("_label_counts", "_y_dtype", "_target_cardinality"):
            self.__dict__.pop(attr, None)
        y_enc, multilabel = self._validate_targets(y)  # (warnings: 4 frames to the caller)
        self.multilabel_ = multilabel
        weight = self._sample_weight(X, y_enc, sample_weight, multilabel, params["class_weight"])
        if multilabel:  # what support_temperature_ is fitted to, after training
            self._target_cardinality = label_set_size(self._label_counts, weight)
        self.__dict__.pop("_label_counts", None)
        return y_enc, weight

    # ------------------------------------------------------------------ partial_fit

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One pass of mini-batch Adam over ``X``: fit data that arrive in chunks.

        The semantics are SGDClassifier's: the first call needs ``classes`` (every label the
        stream will hold), later calls continue from the current weights, and so does a
        first call on a model fitted by :meth:`fit`. Each call runs one epoch of Adam with
        batches of ``batch_size`` rows; with ``batch_size="auto"``, batches of
        ``len(X) // 32`` rows (at least one), about 32 steps per call whatever the chunk's
        size, so that a single call learns from its chunk (see the module's notes for the
        measurements behind 32).

        The step falls with the stream, as SGDClassifier's does with the samples seen (one
        sample, one step; here one batch, one Adam step): a call that starts after ``t``
        Adam steps of the stream trains at ``30 * lr / (1 + t / 32) ** 1.5`` (the linear
        estimators; TabNet and hidden layers at ``lr / (1 + t / 32)``). With
        ``batch_size="auto"`` the k-th call thus trains at about ``30 * lr / k ** 1.5``: a
        large first rate moves the weights far, fast, and a decay faster than ``1 / t``
        settles them; the rate is ``lr`` after about 8.7 calls. The linear estimators
        predict with the average of the stream's weights (``average=True``, the default;
        as ``SGDClassifier(average=True)``), the iterate after step ``t`` weighted by
        ``t``, which removes the steps' noise on short streams. Plain passes over blocks (a
        loop, dask-ml's ``Incremental``, :func:`~sk_entmax.scale_out.fit_blocks`) thus end
        near the in-memory fit with no schedule of their own: 3 passes over 15 blocks of
        20,000 rows within 0.5 points of it (benchmarks/bench_partial_fit_passes.py, see
        the linear models' user guide). The count is the optimizer's: calls after an Adam
        :meth:`fit` continue from its steps (as SGDClassifier's count continues from its
        fit). The first call after an L-BFGS fit, or on a loaded model, starts Adam anew on
        trained weights: it joins the schedule where the rate is ``lr`` (277 steps in), so
        that it refines the fit instead of throwing it away at ``30 * lr``, and the average
        counts those weights as the average of the steps before (a saved model holds the
        averaged weights, not the running ones nor Adam's state).

        The linear estimators' L2 penalty (``C``) is scaled by the
        total sample weight seen so far, so that at the end of a stream it is the full
        objective's; TabNet clips each step's gradient at ``clip_value`` as fit does, and
        the first chunk fixes its columns' encoding (categories, missing indicators), as
        fit's data do. A first call on the whole data is one epoch of ``fit`` at the same
        ``batch_size``. After each call the fitted attributes are those ``fit`` sets, from
        this chunk (``feature_importances_``, a multi-label ``support_temperature_``).

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_samples, n_features)
            A chunk of training data (a sparse matrix for the linear estimators, a
            DataFrame for TabNet, as their ``fit`` takes).
        y : array-like of shape (n_samples,) or (n_samples, n_labels)
            Its labels, or a multi-label indicator matrix.
        classes : array-like of shape (n_classes,), default=None
            All the labels of the stream; required on the first call (for multi-label
            targets, the label indices ``0 .. n_labels - 1`` or None).
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights of this chunk.

        Returns
        -------
        self
            The estimator, updated.

        Raises
        ------
        NonFiniteLossError
            When a mini-batch loss becomes NaN or infinite (training diverged); the error
            names the batch.

        Notes
        -----
        A call that fails (invalid data, a diverged training, an error or ``BaseException``
        raised while it runs) leaves the estimator as it was before the call: the weights,
        the optimizer's state, the history, the shuffling generator, ``n_iter_`` and every
        fitted attribute, so the stream can go on as if the chunk had never come. A first
        call that fails leaves the estimator unfitted.
        """
        return self._partial_fit(X, y, sample_weight, classes=classes)

    def _stream_targets(self, X, y, sample_weight, params, first, classes=None):
        y_enc = self._encode_stream(y, classes, first)
        weight = self._sample_weight(
            X, y_enc, sample_weight, self.multilabel_, params["class_weight"]
        )
        if self.multilabel_:  # support_temperature_ is refitted to each chunk
            self._target_cardinality = label_set_size(self._label_counts, weight)
        self.__dict__.pop("_label_counts", None)
        return y_enc, weight

    def _encode_stream(self, y: np.ndarray, classes: Any, first: bool) -> np.ndarray:
        """Encode a chunk's target against the stream's classes (set on the first call)."""
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        multilabel = type_of_target(y, input_name="y") == "multilabel-indicator"
        if first:
            if multilabel:
                if classes is not None and not np.array_equal(classes, np.arange(y.shape[1])):
                    raise invalid(
                        "classes",
                        f"{type(self).__name__}.partial_fit",
                        f"None or the label indices 0 .. {y.shape[1] - 1} of a multi-label stream",
                        classes,
                    )
                proportions = self._encode_multilabel(y)
                self.multilabel_ = True
                return proportions
            if classes is None:
                raise invalid(
                    "classes",
                    f"{type(self).__name__}.partial_fit",
                    "given on the first call: every label the stream will hold, e.g. "
                    "classes=np.unique(y_all)",
                    classes,
                )
            check_classification_targets(y)
            self.classes_ = np.unique(np.asarray(classes))
            if len(self.classes_) < 2:
                raise invalid(
                    "classes", f"{type(self).__name__}.partial_fit", "at least 2 labels", classes
                )
            self.multilabel_ = False
        else:
            if classes is not None and not np.array_equal(np.unique(classes), self.classes_):
                raise ValueError(
                    f"classes={classes!r} differs from the classes of the first call to "
                    f"partial_fit, {self.classes_!r}"
                )
            if multilabel != self.multilabel_:
                raise ValueError("a chunk's target kind (multi-label or not) changed mid-stream")
            if multilabel:
                if y.shape[1] != len(self.classes_):
                    raise ValueError(
                        f"the chunk has {y.shape[1]} labels; the stream has {len(self.classes_)}"
                    )
                return self._encode_multilabel(y)
        unknown = ~np.isin(y, self.classes_)
        if unknown.any():
            raise ValueError(
                f"y holds labels not in classes: {np.unique(y[unknown])!r}; pass every label "
                "of the stream as classes on the first call"
            )
        return np.searchsorted(self.classes_, y).astype(np.int64)

    def _n_outputs(self) -> int:
        return len(self.classes_) + int(self._no_label_slot())

    def _no_label_slot(self) -> bool:
        """Whether the network has the multi-label "no label" output (every multi-label fit
        since it was added; a model loaded from an older file has not)."""
        return bool(getattr(self, "multilabel_", False)) and (
            hasattr(self, "support_temperature_") or hasattr(self, "_target_cardinality")
        )

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
        _refuse_integers_beyond_int64(y)
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

    def _encode_multilabel(self, y: np.ndarray) -> np.ndarray:
        """The training target of an indicator matrix: each row's label proportions, and
        a last "no label" column, 1 on the rows without any label."""
        Y = y.toarray() if hasattr(y, "toarray") else np.asarray(y)
        self.classes_ = np.arange(Y.shape[1])
        self._y_dtype = Y.dtype
        self._y_sparse = scipy.sparse.issparse(y)
        counts = Y.sum(axis=1, dtype=np.float64)
        empty = counts == 0
        if empty.all():
            raise ValueError("every row of the multi-label target y is empty (no label)")
        target = np.zeros((Y.shape[0], Y.shape[1] + 1))
        target[:, :-1] = Y / np.where(empty, 1.0, counts)[:, None]
        target[empty, -1] = 1.0
        self._label_counts = counts
        return target.astype(np.float32)

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
        if not np.any(weight > 0):
            raise ValueError(
                "sample_weight (times class_weight) is zero for every sample: nothing to fit"
            )
        return weight.astype(np.float32)

    def _record_alpha(self, net: Any) -> None:
        """``alpha_``: the alpha of the trained network's output mapping (a learned one as a
        float)."""
        alpha = net.module_.alpha
        self.alpha_ = float(alpha.detach().cpu()) if isinstance(alpha, torch.Tensor) else alpha

    def _after_fit(self, X: np.ndarray) -> None:
        self._record_alpha(self.net_)
        if getattr(self, "multilabel_", False):
            self.support_temperature_ = self._fit_support_temperature(X)
            del self._target_cardinality

    def _fit_support_temperature(self, X: np.ndarray) -> float:
        """The temperature at which the predicted label sets are, on average, as large as
        the true ones, on the training rows (up to 20,000 of them, evenly spaced).

        A row's predicted labels are the labels in the support of ``entmax_alpha(z / T)``
        over the labels and "no label" (what :meth:`predict` returns), so a row whose
        support is "no label" alone predicts none. As the temperature falls the support
        shrinks toward the top slot, so the mean predicted label count over the rows does
        not grow: the temperature is found by bisection over ``log T``, the largest whose
        mean does not exceed the true mean (over every row, the rows without labels
        counting 0, weighted by ``sample_weight``). When even the lowest temperature
        predicts more (every row's top slot is a label), it is that lowest one. With
        alpha = 1 (softmax, never sparse) it is 1: every label is predicted.
        """
        if not float(self.alpha_) > 1.0:
            return 1.0
        rows = np.unique(np.linspace(0, X.shape[0] - 1, min(X.shape[0], 20_000)).astype(int))
        module = self._inference_module()
        scores = self._network_scores(module, X[rows])
        n_labels = len(self.classes_)
        with torch.no_grad():
            # the scores' spread sets the range: T from 1e-6 to 1e6 times it
            spread = float((scores.max(dim=1).values - scores.min(dim=1).values).max())
            spread = spread if spread > 0 else 1.0
            low, high = np.log(spread) - 14.0, np.log(spread) + 14.0
            target = float(self._target_cardinality)

            def cardinality(log_t: float) -> float:
                proba = torch.cat(
                    [module.proba(b / np.exp(log_t)) for b in scores.split(PROBA_ROWS)]
                )
                return float((proba[:, :n_labels] > 0).sum(dim=1, dtype=torch.float64).mean())

            if cardinality(high) <= target:
                return float(np.exp(high))
            for _ in range(60):
                middle = 0.5 * (low + high)
                if cardinality(middle) <= target:
                    low = middle
                else:
                    high = middle
            return float(np.exp(low))

    # ------------------------------------------------------------------ predict

    def predict_proba(self, X):
        """Sparse class probabilities: rows sum to 1 and hold exact zeros.

        The mapping is the one the loss was trained with (softmax at alpha = 1, exact
        entmax15 at 1.5, exact sparsemax at 2, root finding otherwise), applied in float64.
        For multi-label targets each row is a distribution over the labels and "no label"
        at the temperature ``support_temperature_``, the "no label" column left out: the
        probability of "no label" is the mass the row does not sum to,
        ``1 - predict_proba(X).sum(axis=1)``, and :meth:`predict` is exactly the row's
        support (``predict_proba(X) > 0``). These are not one-vs-rest marginals: a label's
        probability is its share of the row's labels, and 0 rules it out.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities, columns ordered as ``classes_``.
        """
        return self._slot_proba(X)[:, : len(self.classes_)]

    def _slot_proba(self, X) -> np.ndarray:
        """The probabilities of every output, the multi-label "no label" slot included."""
        scores, n_threads = self._scores(X, with_threads=True)
        temperature = getattr(self, "support_temperature_", 1.0)
        proba = self.net_.module_.proba

        def block(start: int, stop: int) -> torch.Tensor:
            rows = scores[start:stop]
            return proba(rows if temperature == 1.0 else rows / temperature)

        # in fixed blocks of rows, each on one thread, over the n_jobs workers the scores took:
        # the mapping's temporaries stay small however long X is, and a row's probabilities
        # do not depend on n_jobs
        blocks = map_row_blocks(block, scores.shape[0], n_threads)
        return torch.cat(blocks).cpu().numpy() if blocks else scores.cpu().numpy()

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
        return scores[:, : len(self.classes_)]  # (a multi-label "no label" score left out)

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
            support of :meth:`predict_proba` on every row, ``predict_proba(X) > 0``, as an
            indicator matrix: a row predicts no label exactly where its probabilities are
            all 0 (all its mass on "no label"). The matrix is a scipy CSR matrix when the
            multi-label ``y`` of the fit was sparse (as ``OneVsRestClassifier`` returns),
            else a dense array.
        """
        check_is_fitted(self)
        if self.multilabel_:
            support = (self.predict_proba(X) > 0).astype(self._y_dtype)
            sparse = getattr(self, "_y_sparse", False)
            return scipy.sparse.csr_matrix(support) if sparse else support
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        tags.input_tags.sparse = self._sparse_input
        return tags


def label_set_size(counts: np.ndarray, weight: np.ndarray) -> float:
    """The mean number of labels per row, the rows without labels counting 0, weighted by
    ``weight`` (the target of the support temperature); 1 when no row has a positive
    weight."""
    weight = np.asarray(weight, dtype=np.float64)
    if not (weight > 0).any():
        return 1.0
    return float(np.average(counts, weights=weight))


def _refuse_integers_beyond_int64(y: np.ndarray) -> None:
    """Refuse labels that are Python integers beyond int64 (``10**20 + k``), with the way
    out: numpy holds them only as objects, which scikit-learn calls an unknown label type,
    and as floats they collapse into one class."""
    if y.dtype != object:
        return
    big = next(
        (
            v
            for v in y.ravel()
            if isinstance(v, numbers.Integral)
            and not isinstance(v, bool)
            and not -(2**63) <= int(v) < 2**63
        ),
        None,
    )
    if big is not None:
        raise ValueError(
            f"y holds integer labels beyond int64's range (such as {int(big)}): numpy keeps "
            "them only as Python objects, and as floats labels such as 10**20 and "
            "10**20 + 1 are one class. Pass them as text (e.g. y.astype(str)), which keeps "
            "each label distinct"
        )
