"""The callbacks the estimators train with, and what a fit does after an interrupt.

All are skorch callbacks (its documented extension point): a finite-loss check, the best
weights so far, and the stopping rule, which says whether it ended the training itself.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from typing import Any

import torch
from skorch import NeuralNet
from skorch.callbacks import Callback, EarlyStopping, GradientNormClipping
from skorch.utils import noop

from sk_entmax._engine.net import NonFiniteLossError
from sk_entmax._engine.training import TrainingPlan
from sk_entmax.nn.protocols import engine_modules

__all__ = [
    "BestWeightsSoFar",
    "FiniteLossCheck",
    "ProgressBar",
    "ProgressLine",
    "StoppingRule",
    "fit_callbacks",
    "recover_after_interrupt",
]


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


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


class ProgressLine(Callback):
    """``verbose=2``: one plain line per epoch (no table, no colour codes), for a terminal
    and a log file alike.

    Each line gives the epoch (of ``max_epochs``), the training loss, the validation loss
    when there is one, the best monitored loss so far and its epoch, the seconds per epoch,
    and the time the remaining epochs would take at that pace (at most that: the stopping
    rule may end the fit sooner).

    Parameters
    ----------
    max_epochs : int or None
        The epoch budget of a fit; None for a partial_fit call (no time left is given).
    monitor : str
        The history key of the loss the stopping rule watches.
    sink : callable, default=print
        Where the lines go.
    """

    def __init__(self, max_epochs: int | None, monitor: str, sink=print):
        self.max_epochs = max_epochs
        self.monitor = monitor
        self.sink = sink

    def initialize(self):
        self.started_ = None
        self.done_ = 0
        return self

    def on_train_begin(self, net, **kwargs):
        self.started_ = time.perf_counter()
        self.done_ = 0

    def on_epoch_end(self, net, **kwargs):
        self.done_ += 1
        row = net.history[-1]
        epoch = row["epoch"]
        parts = [f"epoch {epoch}" + (f"/{self.max_epochs}" if self.max_epochs else "")]
        if "train_loss" in row:
            parts.append(f"train loss {row['train_loss']:.4f}")
        if "valid_loss" in row:
            parts.append(f"valid loss {row['valid_loss']:.4f}")
        seen = [(r[self.monitor], r["epoch"]) for r in net.history if self.monitor in r]
        if seen:
            best, at = min(seen)
            parts.append(f"best {best:.4f} (epoch {at})")
        per_epoch = (time.perf_counter() - (self.started_ or time.perf_counter())) / self.done_
        parts.append(f"{per_epoch:.2f} s/epoch")
        if self.max_epochs:
            parts.append(f"at most {_duration(per_epoch * (self.max_epochs - epoch))} left")
        self.sink("  ".join(parts), file=sys.stdout, flush=True)


class ProgressBar(Callback):
    """``verbose=1``: a progress bar over the epochs, with the time left (tqdm's, on
    standard error), the training loss, the validation loss when there is one, and the best
    monitored loss so far as its postfix.

    The time left is the remaining epochs at the pace so far: at most that, since the
    stopping rule may end the fit sooner (the bar then stops short of ``max_epochs``). For
    a log file, ``verbose=2`` prints :class:`ProgressLine`'s plain lines instead.

    Parameters
    ----------
    max_epochs : int or None
        The epoch budget of a fit; None for a partial_fit call (a counter, no time left).
    monitor : str
        The history key of the loss the stopping rule watches.
    file : file-like or None, default=None
        Where the bar goes (None: ``sys.stderr`` at the time of the fit).
    name : str or None, default=None
        What the bar is labelled with (``"<name> fit"``): the estimator's class name; None
        for the network's.
    """

    def __init__(self, max_epochs: int | None, monitor: str, file=None, name: str | None = None):
        self.max_epochs = max_epochs
        self.monitor = monitor
        self.file = file
        self.name = name

    def initialize(self):
        self.bar_ = None
        self.stop_note_ = None
        return self

    def note_stop(self, message: str, **kwargs) -> None:
        """The stopping rule's sink: its "Stopping since ..." message is kept for the bar's
        last state, not printed between the bar and the caller's own lines."""
        self.stop_note_ = message

    def on_train_begin(self, net, **kwargs):
        from tqdm import tqdm

        self.stop_note_ = None
        self.label_ = f"{self.name or type(net.module_).__name__} fit"
        self.bar_ = tqdm(
            total=self.max_epochs,
            desc=self.label_,
            unit="epoch",
            file=self.file if self.file is not None else sys.stderr,
            dynamic_ncols=True,
            disable=False,  # shown in a log file too: verbose=1 asked for it
            leave=True,
        )

    def on_epoch_end(self, net, **kwargs):
        if self.bar_ is None:
            return
        row = net.history[-1]
        postfix = {}
        for key, name in (("train_loss", "train loss"), ("valid_loss", "valid loss")):
            if key in row:
                postfix[name] = f"{row[key]:.4f}"
        seen = [r[self.monitor] for r in net.history if self.monitor in r]
        if seen:
            postfix["best"] = f"{min(seen):.4f}"
        self.bar_.set_postfix(postfix, refresh=False)
        self.bar_.update(1)

    def on_train_end(self, net, **kwargs):
        if self.bar_ is not None:
            if self.stop_note_ is not None:  # "stopped early" on the bar's last line
                self.bar_.set_description(f"{self.label_}, stopped early")
            self.bar_.close()
            self.bar_ = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["bar_"] = None  # an open bar holds a file and a lock: not model state
        return state


class BestWeightsSoFar(Callback):
    """Keep a copy of the weights of the epoch with the lowest ``monitor`` value so far.

    Used when early stopping is off (:class:`StoppingRule` with ``load_best=True`` already
    keeps them when it is on), so that an interrupted fit can fall back to them: see
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


class StoppingRule(EarlyStopping):
    """skorch's ``EarlyStopping``, which also records whether it stopped the training.

    skorch ends a fit on a ``KeyboardInterrupt``, raised by this rule or by the user (Ctrl-C);
    ``stopped_`` tells the two apart. While a module of the network says it is ``settling``
    (an :class:`~sk_entmax.nn.protocols.EngineModule`: a faithful TabNet's mask warm-up,
    during which the loss rises as the masks sharpen by design), no
    epoch counts towards the patience and none is a best epoch; the first epoch after it
    starts the count afresh.
    """

    def on_train_begin(self, net, **kwargs):
        super().on_train_begin(net, **kwargs)
        self.stopped_ = False
        self.settling_ = False

    def on_epoch_end(self, net, **kwargs):
        if any(module.settling for module in engine_modules(net.module_)):
            self.settling_ = True
            return
        if self.settling_:  # the objective has settled: count from here
            super().on_train_begin(net, **kwargs)
            self.settling_ = False
        try:
            super().on_epoch_end(net, **kwargs)
        except KeyboardInterrupt:
            self.stopped_ = True
            raise


def recover_after_interrupt(
    net: NeuralNet,
    stopper: StoppingRule,
    best: BestWeightsSoFar | None,
    monitor: str,
    max_epochs: int,
) -> None:
    """Fall back to the best weights so far when the user interrupted the fit (Ctrl-C).

    A fit that ran its epochs or that ``stopper`` ended is left as it is. Otherwise the
    weights are those of the best epoch so far (``best``'s, or the stopper's when it keeps
    them), with a warning saying which.
    """
    history = net.history
    finished = len(history) == max_epochs and monitor in history[-1]
    if finished or stopper.stopped_:
        return
    # skorch swallowed a KeyboardInterrupt; with early stopping the stopping rule has
    # already restored the best weights in on_train_end
    epoch = stopper.best_epoch_ if best is None else best.restore(net)
    if epoch:
        kept = f"the weights of epoch {epoch}, the best {monitor} so far"
    elif len(history) > 1 and stopper.settling_:
        kept = (
            "the weights reached so far (every epoch that finished was in the faithful "
            "masks' warm-up, where no epoch is a best one)"
        )
    else:
        kept = "the weights reached so far (no epoch had finished)"
    warnings.warn(
        f"fit was interrupted (KeyboardInterrupt) in epoch {len(history)}; the model keeps {kept}",
        UserWarning,
        stacklevel=4,  # recover_after_interrupt <- _train <- fit <- the caller
    )


def fit_callbacks(
    plan: TrainingPlan,
    early_stopping: bool,
    verbose: int,
    name: str | None = None,
    *,
    stream: bool = False,
) -> tuple[list[tuple[str, Callback]], StoppingRule | None, BestWeightsSoFar | None, str]:
    """A training call's callbacks by name, its stopping rule (None for L-BFGS and for a
    ``partial_fit`` call), the keeper of the best weights (without early stopping: the
    fallback of an interrupted fit) and the monitored loss (the validation loss with early
    stopping, else the training loss). ``name`` (the estimator's class name) labels the
    progress bar.

    A ``partial_fit`` call (``stream=True``, one epoch of Adam) has the finite-loss check,
    a plain line per call when ``verbose`` (the epoch budget is open), and the gradient
    clipping of ``plan``; no stopping rule and no best weights."""
    callbacks: list[tuple[str, Callback]] = [("finite_loss", FiniteLossCheck())]
    monitor = "valid_loss" if early_stopping and not plan.full_batch else "train_loss"
    if stream:
        if verbose:
            callbacks.append(("progress", ProgressLine(None, monitor)))
        if plan.gradient_clip is not None:
            callbacks.append(("gradient_clipping", GradientNormClipping(plan.gradient_clip)))
        return callbacks, None, None, monitor
    if plan.full_batch:  # L-BFGS reports its iterations itself (LbfgsNet)
        return callbacks, None, None, monitor
    sink: Any = noop
    if verbose == 1:  # a bar with the time left; verbose=2: a plain line per epoch
        bar = ProgressBar(plan.max_epochs, monitor, name=name)
        callbacks.append(("progress", bar))
        sink = bar.note_stop  # the stop shows on the bar, not as a line printed inside it
    elif verbose:
        callbacks.append(("progress", ProgressLine(plan.max_epochs, monitor)))
        sink = print
    stopper = StoppingRule(
        monitor=monitor,
        patience=plan.patience,
        threshold=plan.stopping_threshold,
        threshold_mode="abs",
        load_best=early_stopping,
        sink=sink,
    )
    best = None
    if not early_stopping:
        best = BestWeightsSoFar(monitor)
        callbacks.append(("best_weights", best))
    callbacks.append(("early_stopping", stopper))
    if plan.gradient_clip is not None:
        callbacks.append(("gradient_clipping", GradientNormClipping(plan.gradient_clip)))
    return callbacks, stopper, best, monitor
