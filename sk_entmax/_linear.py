"""SparsemaxClassifier and EntmaxClassifier: multinomial regression with a sparse link."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted

from sk_entmax._attributes import Attribute
from sk_entmax._classifier import FITTED_ATTRIBUTES, BaseEntmaxClassifier, check_outputs
from sk_entmax._engine.training import ADAM, LBFGS, TrainingPlan
from sk_entmax._inputs.numeric import NumericInputMixin
from sk_entmax._parameters import (
    CLASSIFIER_CONSTRAINTS,
    LINEAR_CONSTRAINTS,
    SHARED_CONSTRAINTS,
    SOLVERS,
)
from sk_entmax._saved_state import ModelState
from sk_entmax._stream import LINEAR_SCHEDULE, PLAIN_SCHEDULE, StreamSchedule
from sk_entmax.entmax.constraints import Constraint
from sk_entmax.nn.linear import EntmaxLinearNet

__all__ = ["SOLVERS", "EntmaxClassifier", "SparsemaxClassifier"]


_PARAMS_DOC = """
    hidden_layer_sizes : tuple of int, default=()
        Widths of ReLU hidden layers; the default ``()`` is a linear model (multinomial
        regression with an entmax link, the sparse analogue of logistic regression).
    solver : {"auto", "lbfgs", "adam"}, default="auto"
        "lbfgs" minimises the full objective with L-BFGS (strong-Wolfe line search) on all
        rows at once, read in blocks; "adam" trains by mini-batch Adam. "auto" is "lbfgs" for
        the linear model, whose objective is convex, and "adam" with hidden layers.
    C : float, default=1.0
        Inverse strength of the L2 penalty, on LogisticRegression's scale: the objective is
        ``sum_i w_i L(x_i) + ||W||^2 / (2 C)``, intercepts (and a learned alpha) unpenalised.
        At ``alpha=1`` the linear model is ``LogisticRegression(C=C)`` (multinomial).
    tol : float, default=1e-4
        "lbfgs": stop when no gradient entry of the objective, divided by the total sample
        weight, exceeds ``tol``. "adam": an epoch must lower the monitored loss by at least
        ``tol`` to count as an improvement (see ``n_iter_no_change``).
    max_iter : int, default=1000
        Maximum number of L-BFGS iterations; reaching it warns (``ConvergenceWarning``).
        1000 (``LogisticRegression`` has 100) because scaled real tables need up to a few
        hundred: 5-class diamonds 186 to 210, a table with a TF-IDF column 148 to 154 (see
        the user guide's convergence table); a fit that converges sooner stops sooner.
    lr : float, default=0.01
        Adam learning rate.
    max_epochs : int, default=500
        Maximum number of Adam passes over the training data.
    batch_size : int or "auto", default="auto"
        Adam's mini-batch size; "auto" is ``min(200, n_samples)``.
    early_stopping : bool or "auto", default=False
        Adam only: hold out ``validation_fraction`` of the training data (stratified), stop
        when its loss has not improved for ``n_iter_no_change`` epochs and restore the best
        weights. When False, Adam stops once the training loss stops improving instead.
        ``"auto"``, as HistGradientBoosting's: on when the fit has more than 10,000 rows
        (off for L-BFGS, which solves the training objective to ``tol``).
    validation_fraction : float, default=0.1
        Share of the training data held out for early stopping.
    n_iter_no_change : int, default=10
        Patience, in epochs, of Adam's stopping rule.
    class_weight : dict, "balanced" or None, default=None
        Weights per class, multiplied into ``sample_weight``; "balanced" uses
        ``n_samples / (n_classes * count)``. Not available for multi-label targets.
    average : bool, default=True
        ``partial_fit`` only: keep the average of the weights over the stream's Adam steps,
        the iterate after step ``t`` weighted by ``t`` (Polyak-Ruppert averaging, as
        ``SGDClassifier(average=True)``), and predict with it; the running weights go on
        training. False predicts with the running weights (the last iterate), at the same
        schedule and about the same cost: as near the in-memory fit on long streams (3
        passes over 15 blocks of 20,000 rows), but noisier on short ones (3 passes over 3
        blocks of 2,000 rows of 5 classes: 1.16 points short where the average is 0.02
        ahead). See ``partial_fit``.
    warm_start : bool, default=False
        Start ``fit`` from the previous fit's weights (same features and classes) instead of
        from scratch. A fit that fails keeps the previous fit, so its weights stay there to
        start from.
    n_jobs : int or None, default=None
        Threads for the L-BFGS fit and for predicting; it never changes the model. None picks
        by the size of the task and the cores alone (one thread per 1e7 multiply-adds of a
        pass over the data), never by the machine's load; -1 uses every core; a positive int
        that many, capped at the cores with a UserWarning. The L-BFGS fit (the default
        solver) evaluates its objective in fixed blocks of rows on that many one-thread
        workers; mini-batch training (``solver="adam"``, hidden layers, ``partial_fit``)
        runs on one torch thread at every ``n_jobs``, the fastest measured for its batches
        and immune to busy cores. So the same data and ``random_state`` give the same model,
        bit for bit, at every ``n_jobs``, idle or busy. Predictions spread fixed blocks of
        rows over that many workers, each block on one torch thread: the same at every
        ``n_jobs`` too.
    device : str, default="cpu"
        "cpu", "cuda", "cuda:N", "mps" (Apple GPUs; ``solver="adam"`` only, since L-BFGS
        computes in float64, which MPS lacks) or "auto" (CUDA when available). Asking for
        CUDA (or MPS) on a machine without it raises a ValueError at fit. A model trained on
        a GPU unpickles on a CPU-only machine (on the CPU).
    random_state : int, RandomState instance or None, default=None
        Seeds weight initialisation (of hidden layers; the linear L-BFGS fit starts at zero),
        shuffling and the validation split, each through a generator of its own: torch's
        global generator is never seeded, read or drawn from.
        The same value gives identical predictions on CPU at every ``n_jobs``.
    verbose : int, default=0
        0 is silent. With Adam, 1 shows a progress bar over the epochs on standard error
        (tqdm: the time left, at most, and the losses) and 2 prints one plain line per epoch
        instead, for a log file (the epoch, the training and validation losses, the best so
        far, seconds per epoch and at most how long is left); with L-BFGS, 1 or more prints
        one line per evaluation of the objective (the iteration, the objective and the
        largest gradient entry against ``tol``)."""

_ATTRIBUTES_DOC = """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels (for multi-label targets, the label indices ``0 .. n_labels - 1``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, defined only when ``X`` has string column names (a DataFrame).
    multilabel_ : bool
        Whether the target was a multi-label indicator matrix.
    net_ : skorch.NeuralNet
        The trained skorch net (``net_.module_`` is the torch module, ``net_.history`` the
        per-epoch log).
    n_iter_ : int
        L-BFGS iterations, or Adam epochs, run.
    device_ : str
        The torch device the model was trained on: what ``device`` resolved to
        (``device="auto"`` records ``"cuda"`` or ``"cpu"``); after
        :func:`~sk_entmax.persistence.load`, the device it was loaded onto.
    coef_ : ndarray of shape (n_classes, n_features) or (1, n_features)
        Weights of the linear model (``hidden_layer_sizes=()`` only); with two classes, one
        row: the second class's weights minus the first's, as in LogisticRegression. For a
        multi-label target, one row per label and a last one for "no label".
    support_temperature_ : float
        Multi-label targets only: the temperature of the scores that makes the predicted
        label sets as large as the true ones on the training rows (see ``predict``).
    intercept_ : ndarray of shape (n_classes,) or (1,)
        Intercepts of the linear model, likewise.
    alpha_ : float
        The entmax alpha in use after fit (the learned value when ``learn_alpha=True``)."""

_MULTILABEL_DOC = """
    Multi-label targets: with ``y`` a binary indicator matrix (n_samples, n_labels), the loss is
    the Fenchel-Young loss against the label proportions ``y / |y|`` (Martins & Astudillo,
    2016), with one more output, "no label", for the rows without labels (so they are learned,
    and an empty prediction is possible). After training, ``support_temperature_`` scales the
    scores so that the predicted label sets are as large as the true ones on the training
    rows. ``predict_proba`` then returns a sparse *distribution over labels* (not one-vs-rest
    marginals; a row sums to 1 minus the probability of "no label") and ``predict`` its
    support on every row, ``predict_proba(X) > 0``, as an indicator matrix."""


class EntmaxClassifier(NumericInputMixin, BaseEntmaxClassifier):
    """Classifier with an alpha-entmax link: ``predict_proba`` holds exact zeros.

    alpha = 1 is softmax (multinomial logistic regression, trained with cross-entropy),
    alpha = 1.5 the exact 1.5-entmax, alpha = 2 the exact sparsemax, and any other value uses
    root finding. The loss is the Fenchel-Young loss of the same mapping, and
    ``predict_proba`` applies that very mapping, so its zeros are exact.

    ``X`` may be a scipy sparse matrix: it stays sparse, and only each mini-batch is made
    dense (the fit is the same as on the dense array).

    Parameters
    ----------
    alpha : float, default=1.5
        The entmax alpha, a real number >= 1. Larger is sparser.
    learn_alpha : bool, default=False
        Learn alpha with the weights, starting from ``alpha`` (from 1.01 when ``alpha`` is 1,
        the edge of the learnable range, and at most 0.99 of the way to ``alpha_max``); the
        learned value is ``alpha_``.
    alpha_max : float, default=2.0
        A learned alpha stays in ``(1, alpha_max)`` by construction (``1 + (alpha_max - 1)
        * sigmoid(raw)``): from dense softmax-like to sparsemax by default. Raise it for
        sparser mappings than sparsemax; unused without ``learn_alpha``.
    """

    __doc__ += (
        _PARAMS_DOC
        + "\n"
        + _ATTRIBUTES_DOC
        + "\n\n    Notes\n    -----"
        + (_MULTILABEL_DOC)
        + """

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sk_entmax import EntmaxClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = make_pipeline(
    ...     StandardScaler(), EntmaxClassifier(alpha=1.5, lr=0.05, max_epochs=100, random_state=0)
    ... ).fit(X, y)
    >>> proba = clf.predict_proba(X[[0, 50, 100]])
    >>> (proba == 0).any(axis=1).tolist(), proba.sum(axis=1).round(6).tolist()
    ([True, True, True], [1.0, 1.0, 1.0])
    """
    )

    #: a scipy sparse ``X`` (CSR, CSC, COO, ...) stays sparse: each mini-batch is made dense
    _sparse_input = True

    def __init__(
        self,
        *,
        alpha=1.5,
        learn_alpha=False,
        alpha_max=2.0,
        hidden_layer_sizes=(),
        solver="auto",
        C=1.0,
        tol=1e-4,
        max_iter=1000,
        lr=0.01,
        max_epochs=500,
        batch_size="auto",
        early_stopping=False,
        validation_fraction=0.1,
        n_iter_no_change=10,
        class_weight=None,
        average=True,
        warm_start=False,
        n_jobs=None,
        device="cpu",
        random_state=None,
        verbose=0,
    ):
        self.alpha = alpha
        self.learn_alpha = learn_alpha
        self.alpha_max = alpha_max
        self.hidden_layer_sizes = hidden_layer_sizes
        self.solver = solver
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.class_weight = class_weight
        self.average = average
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    #: the fitted attributes :mod:`sk_entmax.persistence` stores: the shared ones only
    _fitted_schema: ClassVar[dict[str, Attribute]] = {**FITTED_ATTRIBUTES}
    #: what :mod:`sk_entmax.persistence` stores besides: the network, and the classes
    #: checked against its outputs
    _saved_state: ClassVar[ModelState] = ModelState(
        EntmaxLinearNet, check=check_outputs, added_parameters={"average": False}
    )

    _constraints: ClassVar[dict[str, Constraint]] = {
        **SHARED_CONSTRAINTS,
        **CLASSIFIER_CONSTRAINTS,
        **LINEAR_CONSTRAINTS,
    }

    def _output_alpha(self, params: dict[str, Any]) -> float:
        """The alpha of the output mapping (its start, when learned)."""
        return params["alpha"]

    def _module(
        self,
        params: dict[str, Any],
        n_features: int,
        n_outputs: int,
        batch_size: int,
        steps: int | None = None,
    ):
        return EntmaxLinearNet, {
            "n_features": n_features,
            "n_outputs": n_outputs,
            "hidden_layer_sizes": params["hidden_layer_sizes"],
            "alpha": self._output_alpha(params),
            "learn_alpha": params["learn_alpha"],
            "alpha_max": params["alpha_max"],
        }

    def _work_per_row(self, sizes: Mapping[str, Any], n_features: int, n_outputs: int) -> float:
        widths = [n_features, *sizes["hidden_layer_sizes"], n_outputs]
        return 3.0 * sum(a * b for a, b in itertools.pairwise(widths))

    # ------------------------------------------------------------------ solver

    def _stream_plan(self, params: dict[str, Any]) -> TrainingPlan:
        """One epoch of Adam on a partial_fit chunk, whatever solver fit uses, with the L2
        penalty of ``C``."""
        return TrainingPlan(solver=ADAM, lr=params["lr"], l2=1.0 / params["C"])

    def _stream_averages(self, params: dict[str, Any]) -> bool:
        return params["average"]

    def _stream_schedule(self, params: dict[str, Any]) -> StreamSchedule:
        """:data:`~sk_entmax._stream.LINEAR_SCHEDULE` (``30 * lr / (1 + t / 32) ** 1.5``) for
        the linear model; with hidden layers, whose large first rate is not measured,
        :data:`~sk_entmax._stream.PLAIN_SCHEDULE` (``lr / (1 + t / 32)``)."""
        return PLAIN_SCHEDULE if params["hidden_layer_sizes"] else LINEAR_SCHEDULE

    def _plan(self, params: dict[str, Any]) -> TrainingPlan:
        solver = params["solver"]
        if solver == "auto":
            solver = ADAM if params["hidden_layer_sizes"] else LBFGS
        if solver == LBFGS and params.get("device") == "mps":
            raise ValueError(
                "device='mps' needs the mini-batch solver (solver='adam'): the full-batch "
                "L-BFGS solver computes in float64, which MPS does not have"
            )
        if solver == LBFGS and params["early_stopping"] is True:  # "auto": off for L-BFGS
            raise ValueError(
                "early_stopping=True needs the mini-batch solver (solver='adam'); the "
                "full-batch L-BFGS solver minimises the training objective to tol"
            )
        return TrainingPlan(
            solver=solver,
            lr=params["lr"],
            max_epochs=params["max_epochs"],
            patience=params["n_iter_no_change"],
            stopping_threshold=params["tol"],
            l2=1.0 / params["C"],
            max_iter=params["max_iter"],
            tol=params["tol"],
        )

    def _full_batch_start(self, module, params: dict[str, Any]) -> None:
        # the convex (linear) problem starts at zero, as LogisticRegression does: the fit is
        # then the same for every random_state
        if not params["hidden_layer_sizes"]:
            with torch.no_grad():
                for param in module.layers.parameters():
                    param.zero_()

    # ------------------------------------------------------------------ linear model

    def _linear_layer(self) -> torch.nn.Linear:
        check_is_fitted(self)
        layers = [m for m in self.net_.module_.layers if isinstance(m, torch.nn.Linear)]
        if len(layers) != 1:
            # the fitted network's hidden layers (the parameter may have changed since fit)
            hidden = tuple(layer.out_features for layer in layers[:-1])
            raise AttributeError(
                "coef_ and intercept_ are defined for the linear model only "
                f"(hidden_layer_sizes=()); this one has {hidden!r}"
            )
        return layers[0]

    def _binary(self) -> bool:
        return not self.multilabel_ and len(self.classes_) == 2

    @property
    def coef_(self) -> np.ndarray:
        """Weights of the linear model, shape (n_classes, n_features) or (1, n_features)."""
        weight = self._linear_layer().weight.detach().double().cpu().numpy()
        return (weight[1] - weight[0])[None, :] if self._binary() else weight

    @property
    def intercept_(self) -> np.ndarray:
        """Intercepts of the linear model, shape (n_classes,) or (1,)."""
        bias = self._linear_layer().bias.detach().double().cpu().numpy()
        return np.array([bias[1] - bias[0]]) if self._binary() else bias


class SparsemaxClassifier(EntmaxClassifier):
    """Classifier with a sparsemax link (alpha = 2): the sparsest entmax.

    The same estimator as :class:`EntmaxClassifier` with the exact sparsemax mapping and the
    sparsemax loss; it has no ``alpha`` parameter (``alpha_`` is 2 after fit).

    Parameters
    ----------
    learn_alpha : bool, default=False
        Learn alpha with the weights starting from 2 (from 0.99 of the way to ``alpha_max``;
        the model is then an :class:`EntmaxClassifier` in all but name); the learned value
        is ``alpha_``.
    alpha_max : float, default=2.0
        A learned alpha stays in ``(1, alpha_max)`` by construction; unused without
        ``learn_alpha``.
    """

    __doc__ += (
        _PARAMS_DOC
        + "\n"
        + _ATTRIBUTES_DOC
        + "\n\n    Notes\n    -----"
        + (_MULTILABEL_DOC)
        + """

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sk_entmax import SparsemaxClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = SparsemaxClassifier(max_epochs=20, random_state=0).fit(X, y)
    >>> clf.alpha_
    2.0
    """
    )

    def __init__(
        self,
        *,
        learn_alpha=False,
        alpha_max=2.0,
        hidden_layer_sizes=(),
        solver="auto",
        C=1.0,
        tol=1e-4,
        max_iter=1000,
        lr=0.01,
        max_epochs=500,
        batch_size="auto",
        early_stopping=False,
        validation_fraction=0.1,
        n_iter_no_change=10,
        class_weight=None,
        average=True,
        warm_start=False,
        n_jobs=None,
        device="cpu",
        random_state=None,
        verbose=0,
    ):
        self.learn_alpha = learn_alpha
        self.alpha_max = alpha_max
        self.hidden_layer_sizes = hidden_layer_sizes
        self.solver = solver
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.class_weight = class_weight
        self.average = average
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    _constraints: ClassVar[dict[str, Constraint]] = {
        name: c for name, c in EntmaxClassifier._constraints.items() if name != "alpha"
    }

    def _output_alpha(self, params: dict[str, Any]) -> float:
        return 2.0
