"""What every estimator of the package shares: checked parameters, the fit skeleton, training
a skorch net, and scoring rows with the trained network.

Each estimator is a plain ``BaseEstimator`` whose ``__init__`` only stores its parameters.
``fit`` runs named steps: check the parameters against the class's constraint table (once),
turn them into a :class:`~sk_entmax._engine.training.TrainingPlan`, validate the data, encode the
target (the task's part: :mod:`sk_entmax._classifier`), train a skorch
:class:`~skorch.NeuralNet` (kept as ``net_``) through skorch's documented extension points,
then set the fitted attributes. ``partial_fit`` (a classifier's) runs the same steps on a
chunk, one epoch of Adam continuing the current net (``_partial_fit``), with the same
validation hooks, rollback and generators. Both get their net from one function,
:func:`~sk_entmax._fit_net.build_net` (module, callbacks, the averaging inside
:func:`~sk_entmax.scale_out.data_parallel`, initial weights); what a stream adds (its step
schedule, the average of its weights) is :mod:`sk_entmax._stream`'s.

Parameters are read once, through the constraint table: ``fit`` and ``partial_fit`` check them
all and pass the checked values on; a method after fit (``predict_proba``, ``explain``, ...)
reads only ``n_jobs``, checked the same way (so an invalid value set after fit gets the
message ``fit`` gives), and takes the network's sizes from the fitted network, not from
parameters set since (those count at the next fit).

Faults: a NaN or infinite batch loss stops ``fit`` with :class:`NonFiniteLossError`; an
interrupted fit (``KeyboardInterrupt``, which skorch's ``partial_fit`` catches) keeps the best
weights so far and finishes setting the fitted attributes. Any other failure of ``fit`` (or of
``partial_fit``) leaves the estimator as it was before the call: unfitted before a first fit,
else with the previous fit's attributes and network. Fits are reproducible under threads too:
weight initialisation and shuffling draw from generators of their own, seeded by
``random_state``; torch's global generator is never seeded, forked, read or drawn from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from skorch.dataset import ValidSplit

from sk_entmax._attributes import Attribute, array, integer, real
from sk_entmax._engine.callbacks import (
    BestWeightsSoFar,
    FiniteLossCheck,
    recover_after_interrupt,
)
from sk_entmax._engine.device import resolve_device
from sk_entmax._engine.inference import TrainedNetMixin
from sk_entmax._engine.net import FenchelYoungNet, NonFiniteLossError
from sk_entmax._engine.solver import check_lbfgs_outcome
from sk_entmax._engine.threads import TRAINING_THREADS, resolve_n_jobs, torch_threads
from sk_entmax._engine.training import (
    NetCheckpoint,
    TrainingPlan,
    initialize_net,
    load_warm_start,
    make_net,
    warm_start_snapshot,
)
from sk_entmax._fit_net import build_net, continue_net
from sk_entmax._parameters import SHARED_CONSTRAINTS
from sk_entmax._stream import (
    PLAIN_SCHEDULE,
    StreamAverage,
    StreamSchedule,
    stream_batch_size,
    stream_steps,
)
from sk_entmax.entmax.constraints import (
    Constraint,
    check,
)

__all__ = [
    "ESTIMATOR_FITTED",
    "BaseEntmaxEstimator",
    "BestWeightsSoFar",
    "FenchelYoungNet",
    "FiniteLossCheck",
    "NonFiniteLossError",
    "resolve_device",
]


#: the fitted attributes every estimator has, classifier or regressor, as
#: :mod:`sk_entmax.persistence` stores and checks them (see :mod:`sk_entmax._attributes`); a
#: task adds its own (:data:`sk_entmax._classifier.FITTED_ATTRIBUTES`,
#: :data:`sk_entmax._regressor.FITTED_ATTRIBUTES`)
ESTIMATOR_FITTED: dict[str, Attribute] = {
    "n_features_in_": integer(1, equals="n_features"),
    "feature_names_in_": array("O", ("n_features",), strings=True, unique=True, required=False),
    "n_iter_": integer(0),
    # a partial_fit stream's total sample weight so far (the L2 penalty's scale), so that a
    # saved stream goes on where it stopped; a model never streamed has none
    "_weight_seen_": real(0.0, required=False),
}


#: ``early_stopping="auto"`` holds out ``validation_fraction`` of the rows and stops on them
#: when the fit has more rows than this, as HistGradientBoosting's ``early_stopping="auto"``
AUTO_EARLY_STOPPING_ROWS = 10_000


def early_stopping_for(early_stopping: bool | str, n_samples: int) -> bool:
    """Whether a fit on ``n_samples`` rows stops early: ``early_stopping`` itself, or for
    ``"auto"``, whether ``n_samples`` is above :data:`AUTO_EARLY_STOPPING_ROWS`."""
    if early_stopping == "auto":
        return n_samples > AUTO_EARLY_STOPPING_ROWS
    return bool(early_stopping)


class BaseEntmaxEstimator(TrainedNetMixin, BaseEstimator):
    """The fit skeleton shared by every estimator (the trained network's scores come from
    :class:`~sk_entmax._engine.inference.TrainedNetMixin`).

    A subclass states its parameters' constraints once, in ``_constraints``
    (:data:`SHARED_CONSTRAINTS` and its own), and supplies what varies:

    - ``_plan(params)``: the :class:`~sk_entmax._engine.training.TrainingPlan` its checked
      parameters give;
    - ``_module(params, n_features, n_outputs, batch_size, steps)``: the torch module class
      and its arguments (the module provides ``loss`` and ``proba``, see
      :class:`~sk_entmax.nn.head.EntmaxHead`); ``steps`` is the number of optimizer steps
      the fit plans (``max_epochs`` times the batches of an epoch), None where it is open
      (a ``partial_fit`` chunk's net, full-batch L-BFGS);
    - the task's part: ``_fit_targets``, ``_n_outputs``, ``_outputs_key`` and
      ``_validation_split`` (a classifier's are in :mod:`sk_entmax._classifier`);
    - the data hooks ``_validate_fit_data`` and ``_validate_predict_data`` (numeric ``X``:
      :mod:`sk_entmax._inputs.numeric`; tables with text and gaps:
      :mod:`sk_entmax._inputs.tabular`).

    It may override the other hooks: rules between parameters (``_cross_check``), the batch
    size, the start of a full-batch fit, the work per row (for the thread count, from the
    network's sizes) and the fitted attributes set after training (``_after_fit``). The hooks
    read parameters from the checked ``params`` they are given, never from ``self`` (a seed
    too: ``_seed(params)``).
    ``_net_for`` is the seam through which :func:`sk_entmax.persistence.load` rebuilds a saved
    model's net.
    """

    #: each parameter's constraint, checked once at the start of fit
    _constraints: ClassVar[dict[str, Constraint]] = SHARED_CONSTRAINTS

    #: whether ``X`` may be a scipy sparse matrix, kept sparse (each mini-batch is made
    #: dense); the linear estimators say yes. scikit-learn's checks then add the sparse twin
    #: of each sample-weight check, which the estimator-check tests list as expected failures
    _sparse_input = False

    # ------------------------------------------------------------------ what varies

    def _plan(self, params: dict[str, Any]) -> TrainingPlan:
        raise NotImplementedError

    def _module(
        self,
        params: dict[str, Any],
        n_features: int,
        n_outputs: int,
        batch_size: int,
        steps: int | None = None,
    ) -> tuple[type, dict[str, Any]]:
        raise NotImplementedError

    def _fit_targets(
        self, X: Any, y: Any, sample_weight: Any, params: dict[str, Any]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The encoded training target and the per-row weights of the loss."""
        raise NotImplementedError

    def _n_outputs(self) -> int:
        """The number of scores per row (after ``_fit_targets``)."""
        raise NotImplementedError

    def _outputs_key(self) -> Any:
        """What the outputs are (``==``-comparable): a warm start needs the same."""
        raise NotImplementedError

    def _validation_split(self, n_samples: int, params: dict[str, Any], seed: int) -> ValidSplit:
        """The held-out rows of early stopping: ``validation_fraction`` of the rows at random
        (a classifier stratifies them by class)."""
        n_valid = int(np.ceil(params["validation_fraction"] * n_samples))
        if n_valid < 2 or n_samples - n_valid < 2:
            raise ValueError(
                f"validation_fraction={params['validation_fraction']} leaves {n_valid} of "
                f"{n_samples} samples for validation, too few for early stopping; raise it "
                "or set early_stopping=False"
            )
        return ValidSplit(params["validation_fraction"], stratified=False, random_state=seed)

    def _cross_check(self, params: dict[str, Any]) -> None:
        """Rules between parameters, after each was checked alone (none by default)."""

    def _after_fit(self, X: np.ndarray) -> None:
        """Set fitted attributes that need the trained net and the (encoded) training data."""

    def _full_batch_start(self, module: torch.nn.Module, params: dict[str, Any]) -> None:
        """Set the starting point of a full-batch fit (after initialisation)."""

    def _initial_weights(self, module: torch.nn.Module, params: dict[str, Any]) -> None:
        """Set the starting weights of a mini-batch fit that does not warm-start (after
        initialisation; TabNet's pretrained encoder)."""

    def _batch_size(self, params: dict[str, Any], n_samples: int) -> int:
        """The mini-batch size for ``n_samples`` training rows (always a step per epoch)."""
        size = params["batch_size"]
        return min(min(200, n_samples) if size == "auto" else size, n_samples)

    def _validate_fit_data(
        self, X, y, plan: TrainingPlan, params: dict[str, Any]
    ) -> tuple[Any, Any]:
        """The validated training data (features as the network reads them) and target."""
        raise NotImplementedError

    def _validate_predict_data(self, X) -> Any:
        """Data to predict on, validated against what fit saw."""
        raise NotImplementedError

    def _work_per_row(self, sizes: Mapping[str, Any], n_features: int, n_outputs: int) -> float:
        """Multiply-adds per row of one forward and backward pass (a rough count; this one
        is a linear layer's). ``sizes`` holds the network's sizes by parameter name: the
        checked parameters in a fit, the fitted network's arguments after it."""
        return 3.0 * n_features * n_outputs

    # ------------------------------------------------------------------ fit

    def _checked(self, *names: str) -> dict[str, Any]:
        """The parameters ``names``, each checked against its constraint in the table, by
        name: the one way the estimator reads its parameters (a method after fit asks for the
        few it uses; an invalid one raises the ``ValueError`` that ``fit`` raises for it)."""
        where = type(self).__name__
        return {
            name: check(name, getattr(self, name), self._constraints[name], where)
            for name in names
        }

    def _checked_params(self) -> dict[str, Any]:
        """Every parameter of the constraint table, checked, by name (``device`` resolved)."""
        params = self._checked(*self._constraints)
        params["device"] = resolve_device(params["device"], type(self).__name__)
        self._cross_check(params)
        return params

    def fit(self, X, y, sample_weight=None):
        """Fit the network on ``X`` and the target ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (a DataFrame records ``feature_names_in_``).
        y : array-like of shape (n_samples,) or (n_samples, n_labels)
            The target: for the classifiers, class labels (strings allowed), or a binary
            indicator matrix for multi-label targets, trained against the label proportions
            ``y / |y|``.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights of the loss (for the classifiers, multiplied by
            ``class_weight``).

        Returns
        -------
        self
            The fitted estimator.

        Raises
        ------
        NonFiniteLossError
            When a mini-batch loss becomes NaN or infinite (training diverged); the error
            names the epoch and batch. The estimator is then left as it was before the call,
            as after any failed fit.

        Notes
        -----
        A fit that fails (an invalid parameter or data, a diverged training, an error or
        ``BaseException`` raised while it runs) leaves the estimator as it was before the
        call: unfitted if it was, else with every fitted attribute and the network of the
        previous fit, untouched (as ``LogisticRegression`` keeps its ``coef_``). With
        ``warm_start=True`` the next fit therefore still starts from those weights. A fit
        that succeeds replaces all the fitted state (a ``partial_fit`` stream's included).

        An interrupted fit (Ctrl-C, i.e. ``KeyboardInterrupt``, while the network trains)
        returns a usable, fitted model with a warning: it keeps the weights of the best epoch
        so far (validation loss with early stopping, training loss without).
        """
        previous = self._fitted_state()
        try:
            params = self._checked_params()
            plan = self._plan(params)
            start_from = None
            if params.get("warm_start", False) and hasattr(self, "net_"):
                start_from = warm_start_snapshot(
                    self.net_, self._outputs_key(), self.n_features_in_
                )
            self._forget_fit()  # the new fit starts from a clean slate
            X, y = self._validate_fit_data(X, y, plan, params)
            y_enc, weight = self._fit_targets(X, y, sample_weight, params)
            n_threads = self._n_threads(params["n_jobs"], params, *X.shape, self._n_outputs())
            # training runs on one torch thread whatever n_jobs is, so n_jobs cannot change
            # the model (see sk_entmax._engine.threads); L-BFGS's objective is evaluated in
            # fixed blocks by a pool of n_threads one-thread workers, the same at every count
            with torch_threads(TRAINING_THREADS):
                self.net_ = self._train(X, y_enc, weight, params, plan, start_from, n_threads)
                self._after_fit(X)
            return self
        except BaseException:
            self._restore_fitted_state(previous)  # no half-fitted model, the last fit kept
            raise

    def _fitted_state(self) -> dict[str, Any]:
        """Every attribute but the parameters, by name (the fitted ones, the private ones a
        fit sets, scikit-learn's configuration): what :meth:`_restore_fitted_state` puts
        back after a failed call. The values are not copied: a call replaces them, never
        changes them in place (``partial_fit``'s net excepted, see
        :class:`~sk_entmax._engine.training.NetCheckpoint`)."""
        params = set(self._get_param_names())
        return {key: value for key, value in vars(self).items() if key not in params}

    def _restore_fitted_state(self, state: dict[str, Any]) -> None:
        """Replace every attribute but the parameters by those of ``state`` (from
        :meth:`_fitted_state`)."""
        for key in self._fitted_state():
            delattr(self, key)
        self.__dict__.update(state)

    def _forget_fit(self) -> None:
        """Delete the fitted attributes (by scikit-learn's convention, those ending in ``_``)."""
        for attr in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, attr)
        self.__dict__.pop("_stream_average", None)  # a partial_fit stream's running weights
        self.__dict__.pop("_stream_offset", None)  # and where it joined the step schedule

    def _n_threads(
        self,
        n_jobs: int | None,
        sizes: Mapping[str, Any],
        n_samples: int,
        n_features: int,
        n_outputs: int,
    ) -> int:
        """torch threads for a task on ``n_samples`` rows at the checked ``n_jobs``, for the
        network of ``sizes`` (see :meth:`_work_per_row` and :func:`resolve_n_jobs`)."""
        work = self._work_per_row(sizes, n_features, n_outputs) * n_samples
        return resolve_n_jobs(n_jobs, work)

    #: the fitted attributes a shard of data_parallel must share with every other one
    _SHARD_AGREES = (
        "classes_",
        "n_features_in_",
        "feature_names_in_",
        "categories_",
        "missing_features_",
    )

    def _shard_agreement(self) -> dict[str, str]:
        """What this process learned from its shard, as text, for data_parallel to compare
        across processes: the fitted attributes of :attr:`_SHARD_AGREES` it has (what sizes
        the network and names its outputs)."""
        return {
            name: repr(_plain(getattr(self, name)))
            for name in self._SHARD_AGREES
            if hasattr(self, name)
        }

    def _seed(self, params: dict[str, Any]) -> int:
        """A seed drawn from the checked ``random_state`` (an int gives the same seed at
        every call; a ``RandomState`` draws a new one)."""
        return int(check_random_state(params["random_state"]).randint(np.iinfo(np.int32).max))

    def _train(
        self,
        X: Any,
        y_enc: np.ndarray,
        weight: np.ndarray,
        params: dict[str, Any],
        plan: TrainingPlan,
        start_from: dict[str, Any] | None,
        n_threads: int = 1,
    ) -> FenchelYoungNet:
        """Build (:func:`~sk_entmax._fit_net.build_net`), initialise and train the net;
        returns it trained (L-BFGS's objective on ``n_threads`` workers)."""
        n_samples = X.shape[0]
        early_stopping = early_stopping_for(params["early_stopping"], n_samples)
        params = {**params, "early_stopping": early_stopping}
        batch_size = self._batch_size(params, n_samples)
        seed = self._seed(params)
        train_split = None
        n_train = n_samples
        if early_stopping and not plan.full_batch:
            train_split = self._validation_split(n_samples, params, seed)
            n_train -= math.ceil(params["validation_fraction"] * n_samples)
        steps = None if plan.full_batch else plan.max_epochs * math.ceil(n_train / batch_size)
        net, watch = build_net(
            self,
            params,
            plan,
            X.shape[1],
            batch_size=batch_size,
            seed=seed,
            steps=steps,
            early_stopping=early_stopping,
            train_split=train_split,
            total_weight=float(weight.sum(dtype=np.float64)),
            n_workers=n_threads,
        )
        if start_from is not None:
            load_warm_start(net, start_from, self._outputs_key(), X.shape[1])
        elif plan.full_batch:
            self._full_batch_start(net.module_, params)
        else:
            self._initial_weights(net.module_, params)
        # equal weights are a plain mean: the batches then carry no weight column
        uniform = bool(np.all(weight == weight[0]))
        # skorch's fit is initialize() + partial_fit(); partial_fit catches a KeyboardInterrupt
        # (the stopping rule raises one too) and then runs the callbacks' on_train_end
        net.partial_fit({"X": X} if uniform else {"X": X, "sample_weight": weight}, y_enc)
        if plan.full_batch:
            self.n_iter_ = check_lbfgs_outcome(net)
        else:
            recover_after_interrupt(net, watch.stopper, watch.best, watch.monitor, plan.max_epochs)
            self.n_iter_ = len(net.history)
        return net

    # ------------------------------------------------------------------ partial_fit

    def _stream_plan(self, params: dict[str, Any]) -> TrainingPlan:
        """The plan of one ``partial_fit`` call: an epoch of Adam on the chunk, with the
        estimator's learning rate, penalty and gradient clipping."""
        raise NotImplementedError

    def _stream_averages(self, params: dict[str, Any]) -> bool:
        """Whether ``partial_fit`` keeps the average of the weights over its steps and
        predicts with it (:class:`StreamAverage`); no by default."""
        return False

    def _stream_schedule(self, params: dict[str, Any]) -> StreamSchedule:
        """The step schedule of ``partial_fit`` (:class:`StreamSchedule`); by default
        :data:`PLAIN_SCHEDULE`, ``lr / (1 + t / 32)``."""
        return PLAIN_SCHEDULE

    def _validate_stream_data(self, X, y, first: bool) -> tuple[Any, Any]:
        """A validated ``partial_fit`` chunk (its input mixin's: the first chunk fixes the
        columns, as fit's data do) and its raw target."""
        raise NotImplementedError

    def _stream_targets(
        self, X: Any, y: Any, sample_weight: Any, params: dict[str, Any], first: bool, **kwargs
    ) -> tuple[np.ndarray, np.ndarray]:
        """A chunk's encoded target and per-row loss weights (the task's part; ``kwargs``
        are its ``partial_fit`` arguments, a classifier's ``classes``)."""
        raise NotImplementedError

    def _partial_fit(self, X, y, sample_weight=None, **target_args):
        """The skeleton of ``partial_fit``, in the steps of :meth:`fit`: check the parameters
        (once) and plan an epoch of Adam, validate the chunk, encode its target (the
        task's part), then train one epoch on one torch thread, continuing the current net
        (or a new one) and setting what fit sets after training. A failed call leaves the
        estimator, its net included, as it was before the call."""
        first = not hasattr(self, "net_")
        previous = self._fitted_state()
        checkpoint = None
        try:
            params = self._checked_params()
            plan = self._stream_plan(params)
            X, y = self._validate_stream_data(X, y, first)
            y_enc, weight = self._stream_targets(X, y, sample_weight, params, first, **target_args)
            seen = getattr(self, "_weight_seen_", 0.0) + float(weight.sum(dtype=np.float64))
            # n_jobs is resolved as every call resolves it (a value above the cores warns),
            # but one torch thread trains whatever it is: n_jobs cannot change the model
            self._n_threads(params["n_jobs"], params, *X.shape, self._n_outputs())
            averaged = self._stream_averages(params)
            batch_size = stream_batch_size(params["batch_size"], X.shape[0])
            with torch_threads(TRAINING_THREADS):
                net = self._stream_net(params, plan, X, batch_size)
                if net is getattr(self, "net_", None):  # trained in place: undone on failure
                    checkpoint = NetCheckpoint(net)
                    # the callbacks of a new partial_fit net, inside data_parallel or not
                    continue_net(net, self, params, plan)
                # the schedule's count: Adam's, after where the stream joined the schedule
                # (a new Adam on trained weights, after fit or load, joins where the rate is
                # lr; a stream from scratch at 0)
                schedule = self._stream_schedule(params)
                if stream_steps(net) == 0:
                    offset = 0 if first else schedule.join()
                else:
                    offset = self.__dict__.get("_stream_offset", 0)
                steps = offset + stream_steps(net)
                lr = schedule.lr(params["lr"], steps)
                net.set_params(batch_size=batch_size, total_weight=seen, lr=lr)
                uniform = bool(np.all(weight == weight[0]))
                data = {"X": X} if uniform else {"X": X, "sample_weight": weight}
                if averaged:
                    # the running weights continue only on the net they were trained on
                    own = net is getattr(self, "net_", None)
                    previous_average = self.__dict__.get("_stream_average") if own else None
                    self._stream_average = StreamAverage.train(
                        previous_average,
                        net,
                        steps,
                        lambda: net.partial_fit(data, y_enc, epochs=1),
                    )
                else:
                    self.__dict__.pop("_stream_average", None)
                    net.partial_fit(data, y_enc, epochs=1)
                self.net_ = net
                self._stream_offset = offset
                self._weight_seen_ = seen
                self.n_iter_ = 1 if first else self.n_iter_ + 1
                # what fit sets after training: alpha_, a multi-label target's support
                # temperature (refitted to each chunk), TabNet's mask alphas and importances
                self._after_fit(X)
            return self
        except BaseException:
            if checkpoint is not None:
                checkpoint.restore()
            self._restore_fitted_state(previous)
            raise

    def _stream_net(
        self, params: dict[str, Any], plan: TrainingPlan, X: Any, batch_size: int
    ) -> FenchelYoungNet:
        """The Adam net that partial_fit trains on chunk ``X`` in batches of ``batch_size``
        rows: the current one, or a new one started from the fitted weights (or from scratch
        on the first call), built as ``fit`` builds its net
        (:func:`~sk_entmax._fit_net.build_net`). The caller sets the batch size of a current
        net and the weight seen so far (the penalty's scale), once it can undo them, and
        readies a current net for this call (:func:`~sk_entmax._fit_net.continue_net`)."""
        net = getattr(self, "net_", None)
        if net is not None and not isinstance(net.optimizer_, torch.optim.Adam):
            previous, net = net.module_.state_dict(), None
        else:
            previous = None
        if net is None:
            net, _ = build_net(
                self,
                params,
                plan,
                X.shape[1],
                batch_size=batch_size,
                seed=self._seed(params),
                stream=True,
            )
            if previous is not None:
                net.module_.load_state_dict(previous)
        return net

    def _net_for(
        self, module: type, module_kwargs: dict[str, Any], *, batch_size: int, device: str
    ) -> FenchelYoungNet:
        """The initialised skorch net a fitted model of this estimator holds, with weights
        still to be loaded: :func:`sk_entmax.persistence.load` rebuilds a saved model's net
        with it. The initial weights are drawn from a private generator and thrown away
        (torch's global generator is left alone); a later ``partial_fit`` shuffles with a
        generator seeded by ``random_state``, as a fitted net does. A model whose fitted
        attributes (set before) say it was last trained by ``partial_fit`` gets the net of
        its stream plan (Adam, float32), else the net of ``fit``'s plan. It has no callbacks
        (it predicts): a later ``partial_fit`` gives it those of a new ``partial_fit`` net
        (:func:`~sk_entmax._fit_net.continue_net`)."""
        params = self._checked(*self._constraints)
        # a partial_fit stream's net (its fitted attributes set first) is an Adam net
        streamed = "_weight_seen_" in vars(self)
        plan = self._stream_plan(params) if streamed else self._plan(params)
        net = make_net(
            module,
            module_kwargs,
            plan,
            batch_size=batch_size,
            device=device,
            shuffle_generator=torch.Generator().manual_seed(self._seed(params)),
        )
        initialize_net(net, None)
        return net


def _plain(value: Any) -> Any:
    """``value`` with its numpy arrays as lists (nested lists and tuples too), so that its
    ``repr`` shows every entry."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value
