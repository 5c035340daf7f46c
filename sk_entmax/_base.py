"""Shared estimator machinery: validation, target encoding, device, seeding, the skorch net.

Each estimator is a plain ``ClassifierMixin, BaseEstimator`` whose ``__init__`` only stores its
parameters; ``fit`` validates them and the data with scikit-learn's helpers, encodes the
target, and trains a skorch :class:`~skorch.NeuralNet` (kept as ``net_``) through skorch's
documented extension points: ``get_loss`` for the weighted Fenchel-Young loss, callbacks for
progress, early stopping, a finite-loss check and the best weights so far.

Faults: a NaN or infinite batch loss stops ``fit`` with :class:`NonFiniteLossError`; an
interrupted fit (``KeyboardInterrupt``, which skorch's ``partial_fit`` catches) keeps the best
weights so far and finishes setting the fitted attributes. Fits are reproducible under
threads too: weight initialisation takes a lock on torch's global generator and shuffling has
a generator of its own.
"""

from __future__ import annotations

import copy
import math
import numbers
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data
from skorch import NeuralNet
from skorch.callbacks import Callback, EarlyStopping, GradientNormClipping
from skorch.dataset import ValidSplit
from skorch.utils import noop

from sk_entmax._net import (
    BatchDataset,
    FenchelYoungNet,
    NonFiniteLossError,
    collate_batch,
    float64_rows,
)
from sk_entmax._solver import FullBatch, LbfgsNet, lbfgs_options, lbfgs_state
from sk_entmax._threads import check_n_jobs, resolve_n_jobs, torch_threads

__all__ = [
    "BaseEntmaxClassifier",
    "BestWeightsSoFar",
    "FenchelYoungNet",
    "FiniteLossCheck",
    "NonFiniteLossError",
    "resolve_device",
]

DEVICES = ("cpu", "cuda", "cuda:N", "auto")


def resolve_device(device: Any) -> str:
    """Turn the ``device`` parameter into a torch device string, or raise a clear error.

    Parameters
    ----------
    device : str or torch.device
        ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"`` (CUDA when available).

    Returns
    -------
    str
        The device to train on.
    """
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str):
        raise ValueError(f"device must be one of {DEVICES}; got {device!r}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return device
    if device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit()):
        if not torch.cuda.is_available():
            raise ValueError(
                f"device={device!r} was requested but CUDA is not available on this machine; "
                "use device='cpu' or device='auto'"
            )
        index = int(device[5:]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            raise ValueError(
                f"device={device!r} was requested but only {torch.cuda.device_count()} "
                "CUDA device(s) are visible"
            )
        return device
    raise ValueError(f"device must be one of {DEVICES}; got {device!r}")


class FiniteLossCheck(Callback):
    """Stop training with :class:`NonFiniteLossError` as soon as a batch loss is not finite.

    A NaN or infinite loss means the weights are (or are about to be) garbage; without this
    check the optimizer carries on and ``fit`` returns a model that predicts NaN. The check
    runs in skorch's ``on_batch_end`` hook, on training and validation batches.
    """

    def on_batch_end(self, net, batch=None, training=False, loss=None, **kwargs):
        if loss is None:
            return
        value = loss.item() if isinstance(loss, torch.Tensor) else float(loss)
        if math.isfinite(value):
            return
        phase = "train" if training else "valid"
        epoch = len(net.history)
        batch_index = sum(1 for b in net.history[-1]["batches"] if f"{phase}_loss" in b)
        raise NonFiniteLossError(
            f"the {'training' if training else 'validation'} loss became {value} at epoch "
            f"{epoch}, {phase} batch {batch_index}: training diverged and was stopped. "
            f"Try a lower learning rate (lr={net.lr:g}), scale the features (e.g. "
            "StandardScaler), or look for extreme values in X"
        )


class BestWeightsSoFar(Callback):
    """Keep a copy of the weights of the epoch with the lowest ``monitor`` value so far.

    Used when early stopping is off (skorch's ``EarlyStopping(load_best=True)`` already keeps
    them when it is on), so that an interrupted fit can fall back to them: see
    :meth:`restore`.
    """

    def __init__(self, monitor: str = "train_loss"):
        self.monitor = monitor

    def on_train_begin(self, net, **kwargs):
        self.best_score_ = math.inf
        self.best_epoch_ = 0
        self.best_weights_ = None

    def on_epoch_end(self, net, **kwargs):
        score = net.history[-1].get(self.monitor)
        if score is not None and score < self.best_score_:
            self.best_score_ = float(score)
            self.best_epoch_ = int(net.history[-1, "epoch"])
            self.best_weights_ = {
                key: value.detach().clone() for key, value in net.module_.state_dict().items()
            }

    def restore(self, net) -> int:
        """Load the best weights so far into ``net.module_``; returns their epoch (0: none)."""
        if self.best_weights_ is not None:
            net.module_.load_state_dict(self.best_weights_)
        return self.best_epoch_

    def __getstate__(self):
        state = self.__dict__.copy()
        state["best_weights_"] = None  # a second copy of the weights is not worth pickling
        return state


_PROBA_ROWS = 65536

# Weight initialisation draws from torch's global generator; fits running in threads of one
# process (joblib's threading backend, a Dask worker with several threads) take turns there.
_INIT_LOCK = threading.Lock()


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {value!r}")
    return int(value)


def _check_real(name: str, value: Any, low: float, high: float = np.inf, *, open_low=False):
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    ok = ok and (value > low if open_low else value >= low) and value < high
    if not ok:
        bound = f"> {low}" if open_low else f">= {low}"
        upper = "" if high == np.inf else f" and < {high}"
        raise ValueError(f"{name} must be a real number {bound}{upper}; got {value!r}")
    return float(value)


def _bool_to_int(value: Any) -> Any:
    return int(value) if isinstance(value, (bool, np.bool_)) else value


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def check_alpha(alpha: Any) -> float:
    """Validate the entmax ``alpha`` parameter: a real number >= 1."""
    if (
        isinstance(alpha, bool)
        or not isinstance(alpha, numbers.Real)
        or not np.isfinite(alpha)
        or alpha < 1
    ):
        raise ValueError(
            "alpha must be a real number >= 1 (1 softmax, 1.5 entmax15, 2 sparsemax); "
            f"got {alpha!r}"
        )
    return float(alpha)


class _numeric_hint:
    """Add a hint to scikit-learn's error for text in a numeric-only ``X``."""

    def __init__(self, estimator: Any):
        self.name = type(estimator).__name__

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if kind is ValueError and "could not convert" in str(error):
            raise ValueError(
                f"{error}. {self.name} needs numeric features: encode text and categorical "
                "columns first (e.g. OneHotEncoder in a ColumnTransformer), or use "
                "TabNetEntmaxClassifier, which embeds categorical columns"
            ) from error
        return False


class BaseEntmaxClassifier(ClassifierMixin, BaseEstimator):
    """Common ``fit`` / ``predict_proba`` / ``predict`` of the entmax classifiers.

    Subclasses define ``_alpha_param()`` (the output alpha) and ``_module(n_features,
    n_outputs, batch_size)`` (the torch module class and its arguments); the module provides
    ``loss`` and ``proba`` (see :class:`~sk_entmax.nn.head.EntmaxHead`). The other hooks
    below (data validation, batch size, patience, weight decay, post-fit attributes) have
    defaults that suit a plain numeric network.
    """

    # ------------------------------------------------------------------ hooks

    def _alpha_param(self) -> float:
        raise NotImplementedError

    def _module(
        self, n_features: int, n_outputs: int, batch_size: int
    ) -> tuple[type, dict[str, Any]]:
        raise NotImplementedError

    def _after_fit(self, X: np.ndarray) -> None:
        """Set fitted attributes that need the trained net and the (encoded) training data."""

    def _extra_validation(self) -> None:
        """Validate estimator-specific parameters (beyond the shared ones)."""

    def _patience(self) -> int:
        """Epochs without improvement before the stopping rule ends training."""
        return _check_int("n_iter_no_change", self.n_iter_no_change, 1)

    def _weight_decay(self) -> float:
        """Adam's decoupled weight decay (TabNet's regulariser); 0 for the linear models."""
        return 0.0

    def _l2(self) -> float:
        """Strength ``1 / C`` of the L2 penalty in the objective (0: none)."""
        return 0.0

    def _stopping_threshold(self) -> float:
        """How much the monitored loss must improve to count as an improvement."""
        return 0.0

    def _full_batch(self) -> bool:
        """Whether fit uses the full-batch L-BFGS solver instead of mini-batch Adam."""
        return False

    def _lbfgs_budget(self) -> tuple[int, float]:
        """``(max_iter, tol)`` of the full-batch solver."""
        raise NotImplementedError

    def _full_batch_start(self, module: torch.nn.Module) -> None:
        """Set the starting point of a full-batch fit (after initialisation)."""

    def _gradient_clip(self) -> float | None:
        """Maximum gradient norm per step, or None for no clipping."""
        return None

    def _batch_size(self, n_samples: int) -> int:
        """The mini-batch size for ``n_samples`` training rows (always a step per epoch)."""
        size = min(200, n_samples) if self.batch_size == "auto" else int(self.batch_size)
        return min(size, n_samples)

    #: whether ``X`` may be a scipy sparse matrix (kept sparse; batches are made dense). Off
    #: in every estimator for now: with it on, scikit-learn's checks add
    #: check_sample_weight_equivalence_on_sparse_data, an expected failure for the same
    #: mini-batch reason as its dense twin, which the estimator-check tests must list first.
    _sparse_input = False

    def _validate_fit_data(self, X, y) -> tuple[np.ndarray, np.ndarray]:
        """Validate the training data; returns float features and the raw target.

        Float32 C-contiguous input (a read-only memmap included) is used as it is, not copied;
        so is float64 input for the full-batch solver, which reads X in float64 blocks.
        """
        dtype = [np.float64, np.float32] if self._full_batch() else np.float32
        with _numeric_hint(self):
            return validate_data(
                self, X, y, dtype=dtype, multi_output=True, accept_sparse=self._sparse()
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

    # ------------------------------------------------------------------ validation

    def _validate_params_common(self) -> dict[str, Any]:
        params = {
            "lr": _check_real("lr", self.lr, 0.0, open_low=True),
            "max_epochs": _check_int("max_epochs", self.max_epochs, 1),
            "early_stopping": _check_bool("early_stopping", self.early_stopping),
            "validation_fraction": _check_real(
                "validation_fraction", self.validation_fraction, 0.0, 1.0, open_low=True
            ),
            # like scikit-learn's MLP, verbose=True / False mean 1 / 0
            "verbose": _check_int("verbose", _bool_to_int(self.verbose), 0),
        }
        if self.batch_size != "auto":
            _check_int("batch_size", self.batch_size, 1)
        if self.class_weight is not None and self.class_weight != "balanced":
            if not isinstance(self.class_weight, dict):
                raise ValueError(
                    "class_weight must be None, 'balanced' or a dict mapping labels to "
                    f"weights; got {self.class_weight!r}"
                )
        params["device"] = resolve_device(self.device)
        check_n_jobs(getattr(self, "n_jobs", None))
        self._extra_validation()
        return params

    def _validate_targets(self, y: np.ndarray) -> tuple[np.ndarray, bool]:
        """Encode ``y``; returns the training target and whether it is multi-label."""
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn(
                "A column-vector y was passed when a 1d array was expected; it is raveled. "
                "(A multi-label target needs at least 2 label columns.)",
                DataConversionWarning,
                stacklevel=3,
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
            raise ValueError(
                "the classifier needs samples of at least 2 classes in the data; "
                f"got 1 class: {self.classes_[0]!r}"
            )
        return encoder.transform(y).astype(np.int64), False

    def _encode_multilabel(self, y: np.ndarray) -> np.ndarray:
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
                stacklevel=4,
            )
        proportions = Y / np.where(empty, 1.0, counts)[:, None]
        proportions[empty] = 1.0 / Y.shape[1]  # placeholder distribution, weight 0
        self._empty_rows = empty
        return proportions.astype(np.float32)

    def _sample_weight(
        self, X: np.ndarray, y_enc: np.ndarray, sample_weight: Any, multilabel: bool
    ) -> np.ndarray:
        weight = _check_sample_weight(sample_weight, X, dtype=np.float32, ensure_non_negative=True)
        if self.class_weight is not None:
            if multilabel:
                raise ValueError("class_weight is not supported with multi-label targets")
            per_class = compute_class_weight(
                self.class_weight, classes=self.classes_, y=self.classes_[y_enc]
            )
            weight = weight * per_class[y_enc].astype(np.float32)
        if multilabel:
            weight = np.where(self._empty_rows, np.float32(0), weight)
        if not np.any(weight > 0):
            raise ValueError(
                "sample_weight (times class_weight) is zero for every sample: nothing to fit"
            )
        return weight.astype(np.float32)

    # ------------------------------------------------------------------ fit / predict

    def fit(self, X, y, sample_weight=None):
        """Fit the network on ``X`` and labels ``y`` (or a multi-label indicator matrix).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (a DataFrame records ``feature_names_in_``).
        y : array-like of shape (n_samples,) or (n_samples, n_labels)
            Class labels (strings allowed), or a binary indicator matrix for multi-label
            targets, trained against the label proportions ``y / |y|``.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights of the loss (multiplied by ``class_weight``).

        Returns
        -------
        self
            The fitted estimator.

        Raises
        ------
        NonFiniteLossError
            When a mini-batch loss becomes NaN or infinite (training diverged); the error
            names the epoch and batch. The estimator is then left unfitted, as after any
            failed fit.

        Notes
        -----
        An interrupted fit (Ctrl-C, i.e. ``KeyboardInterrupt``, while the network trains)
        returns a usable, fitted model with a warning: it keeps the weights of the best epoch
        so far (validation loss with early stopping, training loss without).
        """
        try:
            params = self._validate_params_common()
            start_from = self._warm_start_weights()
            X, y = self._validate_fit_data(X, y)
            for attr in ("_empty_rows", "_y_dtype"):
                self.__dict__.pop(attr, None)
            y_enc, multilabel = self._validate_targets(y)
            self.multilabel_ = multilabel
            weight = self._sample_weight(X, y_enc, sample_weight, multilabel)
            self.__dict__.pop("_empty_rows", None)  # only the weights needed it
            with torch_threads(self._n_threads(X.shape[0], X.shape[1], len(self.classes_))):
                net = self._train(X, y_enc, weight, params, start_from)
                self.net_ = net
                alpha = net.module_.alpha
                self.alpha_ = (
                    float(alpha.detach().cpu()) if isinstance(alpha, torch.Tensor) else alpha
                )
                self._after_fit(X)
            return self
        except BaseException:
            self._forget_fit()  # a failed fit leaves no half-fitted model behind
            raise

    # ------------------------------------------------------------------ fit, step by step

    def _n_threads(self, n_samples: int, n_features: int, n_outputs: int) -> int:
        """torch threads for a task on ``n_samples`` rows (see :func:`resolve_n_jobs`)."""
        work = self._work_per_row(n_features, n_outputs) * n_samples
        return resolve_n_jobs(getattr(self, "n_jobs", None), work)

    def _work_per_row(self, n_features: int, n_outputs: int) -> float:
        """Multiply-adds per row of one forward and backward pass (a rough count; this one
        is a linear layer's)."""
        return 3.0 * n_features * n_outputs

    def _warm_start_weights(self) -> dict[str, Any] | None:
        """The fitted module's weights when ``warm_start`` is set and a fit exists."""
        if not getattr(self, "warm_start", False) or not hasattr(self, "net_"):
            return None
        state = self.net_.module_.state_dict()
        return {
            "state": {key: value.detach().clone() for key, value in state.items()},
            "classes": self.classes_,
            "n_features": self.n_features_in_,
            "multilabel": self.multilabel_,
        }

    def _seed(self) -> int:
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def _train(
        self,
        X: Any,
        y_enc: np.ndarray,
        weight: np.ndarray,
        params: dict[str, Any],
        start_from: dict[str, Any] | None,
    ) -> FenchelYoungNet:
        """Build, initialise and train the net; returns it trained."""
        n_samples, multilabel = X.shape[0], self.multilabel_
        batch_size = self._batch_size(n_samples)
        seed = self._seed()
        full_batch = self._full_batch()
        stopper, best, monitor = None, None, "train_loss"
        callbacks: list[tuple[str, Callback]] = [("finite_loss", FiniteLossCheck())]
        train_split = None
        if full_batch:
            if params["early_stopping"]:
                raise ValueError(
                    "early_stopping=True needs the mini-batch solver (solver='adam'); the "
                    "full-batch L-BFGS solver minimises the training objective to tol"
                )
        else:
            if params["early_stopping"]:
                train_split = self._validation_split(n_samples, params, seed)
                monitor = "valid_loss"
            stopper = EarlyStopping(
                monitor=monitor,
                patience=self._patience(),
                threshold=self._stopping_threshold(),
                threshold_mode="abs",
                load_best=params["early_stopping"],
                sink=print if params["verbose"] else noop,
            )
            # without early stopping, only an interrupted fit falls back to the best weights
            best = None if params["early_stopping"] else BestWeightsSoFar(monitor)
            if best is not None:
                callbacks.append(("best_weights", best))
            callbacks.append(("early_stopping", stopper))
            clip = self._gradient_clip()
            if clip is not None:
                callbacks.append(("gradient_clipping", GradientNormClipping(clip)))
        module, module_kwargs = self._module(X.shape[1], len(self.classes_), batch_size)
        net = self._make_net(
            module,
            module_kwargs,
            batch_size=batch_size,
            device=params["device"],
            lr=params["lr"],
            max_epochs=params["max_epochs"],
            weight_decay=self._weight_decay(),
            train_split=train_split,
            callbacks=callbacks,
            verbose=params["verbose"],
            # shuffling draws from its own generator, not torch's global one
            shuffle_generator=torch.Generator().manual_seed(seed),
            total_weight=float(weight.sum(dtype=np.float64)),
        )
        self._initialize(net, seed, params["device"])
        if start_from is not None:
            self._load_warm_start(net, start_from, X.shape[1], multilabel)
        elif full_batch:
            self._full_batch_start(net.module_)
        # equal weights are a plain mean: the batches then carry no weight column
        uniform = bool(np.all(weight == weight[0]))
        # skorch's fit is initialize() + partial_fit(); partial_fit catches a KeyboardInterrupt
        # (the stopping rule raises one too) and then runs the callbacks' on_train_end
        net.partial_fit({"X": X} if uniform else {"X": X, "sample_weight": weight}, y_enc)
        if full_batch:
            self._after_lbfgs(net)
        else:
            self._after_interrupt(net, stopper, best, monitor, params["max_epochs"])
            self.n_iter_ = len(net.history)
        return net

    def _validation_split(self, n_samples: int, params: dict[str, Any], seed: int) -> ValidSplit:
        n_valid = int(np.ceil(params["validation_fraction"] * n_samples))
        multilabel = self.multilabel_
        if (
            n_valid < 2
            or n_samples - n_valid < 2
            or (not multilabel and n_valid < len(self.classes_))
        ):
            raise ValueError(
                f"validation_fraction={self.validation_fraction} leaves {n_valid} of "
                f"{n_samples} samples for validation, too few for early stopping with "
                f"{len(self.classes_)} classes; raise it or set early_stopping=False"
            )
        return ValidSplit(
            params["validation_fraction"], stratified=not multilabel, random_state=seed
        )

    @staticmethod
    def _initialize(net: NeuralNet, seed: int, device: str) -> None:
        """``net.initialize()`` with torch's global generator seeded, then restored."""
        devices = [torch.device(device)] if device != "cpu" else []
        with _INIT_LOCK, torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            net.initialize()

    def _load_warm_start(
        self, net: NeuralNet, start_from: dict[str, Any], n_features: int, multilabel: bool
    ) -> None:
        same = (
            start_from["n_features"] == n_features
            and start_from["multilabel"] == multilabel
            and np.array_equal(start_from["classes"], self.classes_)
        )
        state = net.module_.state_dict()
        shapes = {key: tuple(value.shape) for key, value in start_from["state"].items()}
        if not same or shapes != {key: tuple(value.shape) for key, value in state.items()}:
            raise ValueError(
                "warm_start=True needs the same features, classes and network shape as the "
                "previous fit; set warm_start=False to fit from scratch"
            )
        net.module_.load_state_dict(start_from["state"])

    def _after_lbfgs(self, net: NeuralNet) -> None:
        """Set ``n_iter_``; warn when L-BFGS stopped on its iteration or evaluation budget."""
        n_iter, n_evals = lbfgs_state(net.optimizer_)
        self.n_iter_ = n_iter
        history = net.history
        if not history or "train_loss" not in history[-1]:
            warnings.warn(
                f"fit was interrupted (KeyboardInterrupt) after {n_iter} L-BFGS iterations; "
                "the model keeps the weights reached so far",
                UserWarning,
                stacklevel=4,
            )
            return
        max_iter, tol = net.optimizer__max_iter, net.optimizer__tolerance_grad
        grad_max = history[-1, "batches", -1, "grad_max"]
        if n_iter >= max_iter or grad_max > tol:
            reached = (
                f"max_iter={max_iter}"
                if n_iter >= max_iter
                else f"iteration {n_iter} ({n_evals} evaluations; the line search made no "
                "more progress)"
            )
            warnings.warn(
                f"L-BFGS stopped at {reached} with the largest gradient entry at "
                f"{grad_max:.3g}, above tol={tol:g}: the fit has not converged. Increase "
                "max_iter, scale the features (e.g. StandardScaler), or lower C",
                ConvergenceWarning,
                stacklevel=4,
            )

    def _forget_fit(self) -> None:
        for attr in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, attr)

    @staticmethod
    def _after_interrupt(
        net: NeuralNet,
        stopper: EarlyStopping,
        best: BestWeightsSoFar | None,
        monitor: str,
        max_epochs: int,
    ) -> None:
        """Fall back to the best weights so far when the fit was interrupted (Ctrl-C)."""
        history = net.history
        finished = len(history) == max_epochs and monitor in history[-1]
        if finished or stopper.misses_ >= stopper.patience:
            return
        # skorch swallowed a KeyboardInterrupt; with early stopping its EarlyStopping has
        # already restored the best weights in on_train_end
        epoch = stopper.best_epoch_ if best is None else best.restore(net)
        kept = (
            f"the weights of epoch {epoch}, the best {monitor} so far"
            if epoch
            else "the weights reached so far (no epoch had finished)"
        )
        warnings.warn(
            f"fit was interrupted (KeyboardInterrupt) in epoch {len(history)}; the model "
            f"keeps {kept}",
            UserWarning,
            stacklevel=3,  # _after_interrupt <- fit <- the caller
        )

    def _make_net(
        self,
        module: type,
        module_kwargs: dict[str, Any],
        *,
        batch_size: int,
        device: str,
        lr: float = 0.01,
        max_epochs: int = 1,
        weight_decay: float = 0.0,
        train_split: Any = None,
        callbacks: list | None = None,
        verbose: int = 0,
        shuffle_generator: torch.Generator | None = None,
        total_weight: float = 1.0,
        solver: str | None = None,
    ) -> FenchelYoungNet:
        """The skorch net around ``module`` (not initialized); fit and the loaders share it.

        The solver is ``solver`` ("lbfgs" or "adam") or, when None, follows
        :meth:`_full_batch`: full-batch L-BFGS (:class:`LbfgsNet`, one epoch) or mini-batch
        Adam.
        """
        extra: dict[str, Any] = {} if verbose else {"callbacks__print_log": None}
        common = {
            "module": module,
            **{f"module__{k}": v for k, v in module_kwargs.items()},
            "criterion": torch.nn.Identity,  # unused: see FenchelYoungNet.get_loss
            "dataset": BatchDataset,
            "iterator_valid__collate_fn": collate_batch,
            "train_split": train_split,
            "callbacks": callbacks or [],
            "device": device,
            "verbose": verbose,
            "l2": self._l2(),
            "total_weight": total_weight,
        }
        if self._full_batch() if solver is None else solver == "lbfgs":
            max_iter, tol = self._lbfgs_budget()
            return LbfgsNet(
                **common,
                **lbfgs_options(max_iter, tol),
                max_epochs=1,
                batch_size=batch_size,
                iterator_train=FullBatch,
                **extra,
            )
        optimizer_params: dict[str, Any] = {"optimizer__weight_decay": weight_decay}
        if weight_decay:
            optimizer_params["optimizer__param_groups"] = [
                ("*bias", {"weight_decay": 0.0}),
                ("*alpha_raw", {"weight_decay": 0.0}),
            ]
        if shuffle_generator is not None:
            extra["iterator_train__generator"] = shuffle_generator
        return FenchelYoungNet(
            **common,
            optimizer=torch.optim.Adam,
            lr=lr,
            optimizer__fused=True,  # one kernel updates every tensor: no per-tensor Python loop
            **optimizer_params,
            max_epochs=max_epochs,
            batch_size=batch_size,
            iterator_train__shuffle=True,
            iterator_train__collate_fn=collate_batch,
            **extra,
        )

    def _inference_module(self) -> torch.nn.Module:
        """A float64, eval-mode copy of the trained module, for predictions and explanations.

        Float64 makes a row's output independent of the other rows in its batch at any thread
        count: float32 matrix products take kernels (and summation orders) that depend on the
        number of rows, which moves a probability by ~1e-7. The copy leaves the fitted module
        (its dtype and its train/eval mode) untouched, so concurrent predictions are safe.
        """
        return copy.deepcopy(self.net_.module_).to(torch.float64).eval()

    def _row_blocks(self, X, rows: int = _PROBA_ROWS) -> Iterator[torch.Tensor]:
        """``X`` in float64 blocks of ``rows`` rows on the net's device (sparse made dense)."""
        for start in range(0, X.shape[0], rows):
            yield float64_rows(X, start, start + rows, self.net_.device)

    def _scores(self, X, with_threads: bool = False):
        """Float64 scores of ``X`` (validated here), block by block; with ``with_threads``
        also the torch thread count they were computed at, for the mapping to reuse.

        The network runs directly on blocks of rows, without a DataLoader, so predicting
        draws nothing from torch's global random generator.
        """
        check_is_fitted(self)
        X = self._validate_predict_data(X)
        module = self._inference_module()
        blocks = []
        n_threads = self._n_threads(X.shape[0], X.shape[1], len(self.classes_))
        with torch.no_grad(), torch_threads(n_threads):
            for block in self._row_blocks(X):
                output = module(X=block)
                blocks.append(output[0] if isinstance(output, tuple) else output)
        scores = torch.cat(blocks) if blocks else torch.zeros(0, len(self.classes_))
        finite = torch.isfinite(scores).all(dim=1)
        if not bool(finite.all()):
            rows = torch.nonzero(~finite)[:, 0].tolist()
            raise ValueError(
                f"the network's scores overflow for {len(rows)} row(s) of X (the "
                f"first: row {rows[0]}); X holds values too large for this model (largest "
                f"|X| = {float(abs(X[rows[0]]).max()):g}): scale the features as at fit"
            )
        return (scores, n_threads) if with_threads else scores

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
            blocks = [self.net_.module_.proba(block) for block in scores.split(_PROBA_ROWS)]
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
