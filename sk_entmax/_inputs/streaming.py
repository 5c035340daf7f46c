"""``partial_fit``: a classifier trained on data that arrive in chunks.

The semantics are SGDClassifier's. Each call is one epoch of mini-batch Adam on the chunk,
continuing from the current weights; the first call fixes the classes of the stream. With
``batch_size="auto"`` the epoch takes about ``_STEPS_PER_CALL`` (32) steps whatever the
chunk's size, in batches of ``len(chunk) // 32`` rows (at least 1), so that one call makes
real progress on its chunk: a chunk of 200 rows or fewer used to be one batch, one step at
``lr``. Measured with benchmarks/bench_partial_fit.py (means of 3 to 5 seeds): 32 steps give
0.945 accuracy after one call on wine and end a stream of 10 chunks of 20,000 rows 0.2 to
0.4 points below the full-batch fit; 64 steps 0.98 and 0.3 to 0.5 points; 128 steps (batches
of at most 200 rows) 0.99 and 0.4 to 1.0 points, 512 steps 1.0 to 2.0 points: at Adam's
constant ``lr``, smaller batches leave a noisier final iterate.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from skorch.callbacks import GradientNormClipping

from sk_entmax._classifier import label_set_size
from sk_entmax._engine.callbacks import FiniteLossCheck, ProgressLine
from sk_entmax._engine.threads import TRAINING_THREADS, torch_threads
from sk_entmax._engine.training import NetCheckpoint, TrainingPlan, initialize_net, make_net
from sk_entmax.entmax.constraints import invalid

__all__ = ["StreamingMixin"]

#: Adam steps of one partial_fit call with batch_size="auto" (fewer for chunks of fewer
#: rows: one per row); fit's batches of 200 rows gave a chunk of 200 rows a single step
_STEPS_PER_CALL = 32


def stream_batch_size(batch_size: Any, n_samples: int) -> int:
    """The batch size of a partial_fit call on ``n_samples`` rows: ``batch_size`` if an int
    (at most the chunk), else rows for about :data:`_STEPS_PER_CALL` steps (at least 1)."""
    if batch_size != "auto":
        return min(batch_size, n_samples)
    return max(1, n_samples // _STEPS_PER_CALL)


class StreamingMixin:
    """``partial_fit`` for a :class:`~sk_entmax._classifier.BaseEntmaxClassifier`, which
    supplies ``_validate_stream_data(X, y, first)`` (its input mixin's: numeric or tabular)
    and ``_stream_plan(params)`` (the plan of one epoch of Adam on a chunk: its learning
    rate, L2 penalty and gradient clipping)."""

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One pass of mini-batch Adam over ``X``: fit data that arrive in chunks.

        The semantics are SGDClassifier's: the first call needs ``classes`` (every label the
        stream will hold), later calls continue from the current weights, and so does a
        first call on a model fitted by :meth:`fit`. Each call runs one epoch of Adam with
        batches of ``batch_size`` rows; with ``batch_size="auto"``, batches of
        ``len(X) // 32`` rows (at least one), about 32 steps per call whatever the chunk's
        size, so that a single call learns from its chunk (see the module's notes for the
        measurements behind 32). The linear estimators' L2 penalty (``C``) is scaled by the
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
        first = not hasattr(self, "net_")
        previous = self._fitted_state()
        checkpoint = None
        try:
            params = self._checked_params()
            plan = self._stream_plan(params)
            X, y = self._validate_stream_data(X, y, first)
            y_enc = self._encode_stream(y, classes, first)
            weight = self._sample_weight(
                X, y_enc, sample_weight, self.multilabel_, params["class_weight"]
            )
            if self.multilabel_:  # support_temperature_ is refitted to each chunk
                self._target_cardinality = label_set_size(self._label_counts, weight)
            self.__dict__.pop("_label_counts", None)
            seen = getattr(self, "_weight_seen_", 0.0) + float(weight.sum(dtype=np.float64))
            # n_jobs is resolved as every call resolves it (a value above the cores warns),
            # but one torch thread trains whatever it is: n_jobs cannot change the model
            self._n_threads(params["n_jobs"], params, *X.shape, self._n_outputs())
            with torch_threads(TRAINING_THREADS):
                net = self._stream_net(params, plan, X)
                if net is getattr(self, "net_", None):  # trained in place: undone on failure
                    checkpoint = NetCheckpoint(net)
                batch_size = stream_batch_size(params["batch_size"], X.shape[0])
                net.set_params(batch_size=batch_size, total_weight=seen)
                uniform = bool(np.all(weight == weight[0]))
                data = {"X": X} if uniform else {"X": X, "sample_weight": weight}
                net.partial_fit(data, y_enc, epochs=1)
            self.net_ = net
            self._weight_seen_ = seen
            self.n_iter_ = 1 if first else self.n_iter_ + 1
            with torch_threads(TRAINING_THREADS):
                # what fit sets after training: alpha_, a multi-label target's support
                # temperature (refitted to each chunk), TabNet's mask alphas and importances
                self._after_fit(X)
            return self
        except BaseException:
            if checkpoint is not None:
                checkpoint.restore()
            self._restore_fitted_state(previous)
            raise

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

    def _stream_net(self, params: dict[str, Any], plan: TrainingPlan, X: Any):
        """The Adam net that partial_fit trains on chunk ``X``: the current one, or a new one
        started from the fitted weights (or from scratch on the first call). Each chunk is
        then batched as fit batches its data, and the penalty scales with all the weight
        seen so far: the caller sets both, once it can undo them."""
        net = getattr(self, "net_", None)
        if net is not None and not isinstance(net.optimizer_, torch.optim.Adam):
            previous, net = net.module_.state_dict(), None
        else:
            previous = None
        if net is None:
            seed = self._seed()
            batch_size = stream_batch_size(params["batch_size"], X.shape[0])
            module, module_kwargs = self._module(params, X.shape[1], self._n_outputs(), batch_size)
            callbacks: list = [("finite_loss", FiniteLossCheck())]
            if params["verbose"]:
                callbacks.append(("progress", ProgressLine(None, "train_loss")))
            if plan.gradient_clip is not None:
                callbacks.append(("gradient_clipping", GradientNormClipping(plan.gradient_clip)))
            net = make_net(
                module,
                module_kwargs,
                plan,
                batch_size=batch_size,
                device=params["device"],
                callbacks=callbacks,
                verbose=params["verbose"],
                shuffle_generator=torch.Generator().manual_seed(seed),
            )
            initialize_net(net, seed)
            if previous is not None:
                net.module_.load_state_dict(previous)
        return net
