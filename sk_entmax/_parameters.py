"""The estimators' parameters: what each may be, stated once, in one table per estimator.

Every estimator reads its parameters through its table (``BaseEntmaxEstimator._checked``),
and the metrics and :mod:`sk_entmax.persistence` check the same quantities with the same
constraints (``ALPHA``), so one rule has one statement and one error message. The
vocabulary is the core's :mod:`sk_entmax.entmax.constraints`; TabNet's architecture
arguments are its network's own table (:data:`sk_entmax.nn._tabnet_arguments.ARGUMENTS`),
read here, not restated. Plain Python and numpy, no torch: the metrics check their
``alpha`` with this table without importing torch.
"""

from __future__ import annotations

import numbers
import sys
from typing import Any

import numpy as np

from sk_entmax.entmax.constraints import (
    AnyOf,
    Boolean,
    Constraint,
    Integer,
    Options,
    Real,
    Satisfies,
)
from sk_entmax.nn._tabnet_arguments import ARGUMENTS

__all__ = [
    "ALPHA",
    "CLASSIFIER_CONSTRAINTS",
    "CONFORMAL_CONSTRAINTS",
    "LINEAR_CONSTRAINTS",
    "SHARED_CONSTRAINTS",
    "SOLVERS",
    "TABNET_CONSTRAINTS",
]

#: the ``alpha`` of an estimator's output mapping (and of the metrics that score it)
ALPHA = Real(1.0, note="1 softmax, 1.5 entmax15, 2 sparsemax")

#: the solvers of the linear estimators
SOLVERS = ("auto", "lbfgs", "adam")


def _dict_of_weights(value: Any) -> dict:
    if not isinstance(value, dict):
        raise TypeError(value)
    return value


def _random_state(value: Any) -> Any:
    """``random_state`` as scikit-learn's ``check_random_state`` takes it: None, an int in
    ``[0, 2**32 - 1]`` (a plain int) or a ``numpy.random.RandomState``."""
    if value is None or isinstance(value, np.random.RandomState):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        if 0 <= value <= 2**32 - 1:
            return int(value)
    raise ValueError(value)


def _device(value: Any) -> Any:
    """``device`` as written: one of :data:`~sk_entmax._engine.device.DEVICES` (``"cuda:N"``
    for any N) or a ``torch.device``; whether the machine has it is
    :func:`~sk_entmax._engine.device.resolve_device`'s to say, at fit."""
    torch = sys.modules.get("torch")  # a torch.device exists only once torch is imported
    text = str(value) if torch is not None and isinstance(value, torch.device) else value
    if not isinstance(text, str):
        raise TypeError(value)
    if text in ("cpu", "cuda", "mps", "auto") or (text.startswith("cuda:") and text[5:].isdigit()):
        return value
    raise ValueError(value)


#: the parameters every estimator has, classifier or regressor, and what each may be
#: (``device`` and ``n_jobs`` are then resolved by :func:`resolve_device` and
#: :func:`resolve_n_jobs`, for the machine at hand)
SHARED_CONSTRAINTS: dict[str, Constraint] = {
    "lr": Real(0.0, low_open=True),
    "max_epochs": Integer(1),
    "batch_size": AnyOf(Options(("auto",)), Integer(1)),
    # "auto": on when the fit has more than AUTO_EARLY_STOPPING_ROWS rows, as
    # HistGradientBoosting's early_stopping="auto" (resolved by the fit skeleton, _base)
    "early_stopping": AnyOf(Options(("auto",)), Boolean()),
    "validation_fraction": Real(0.0, 1.0, low_open=True, high_open=True),
    # like scikit-learn's MLP, verbose=True / False mean 1 / 0
    "verbose": Integer(0, bools=True),
    "n_jobs": AnyOf(Options((None, -1)), Integer(1)),
    "random_state": Satisfies(
        "None, an int in the range [0, 4294967295] or a numpy.random.RandomState instance",
        _random_state,
    ),
    "device": Satisfies(
        "one of 'cpu', 'cuda', 'cuda:N', 'mps', 'auto' or a torch.device", _device
    ),
}

#: the parameters every classifier adds, and what each may be
CLASSIFIER_CONSTRAINTS: dict[str, Constraint] = {
    "class_weight": AnyOf(
        Options((None, "balanced")),
        Satisfies("a dict mapping labels to weights", _dict_of_weights),
    ),
}


def _hidden_sizes(hidden_layer_sizes: Any) -> tuple[int, ...]:
    """``hidden_layer_sizes`` as a tuple of ints; a ValueError when it is not one of
    positive ints."""
    sizes = tuple(hidden_layer_sizes)
    if not all(
        isinstance(s, numbers.Integral) and not isinstance(s, (bool, np.bool_)) and s >= 1
        for s in sizes
    ):
        raise ValueError(hidden_layer_sizes)
    return tuple(int(s) for s in sizes)


#: the parameters of EntmaxClassifier beyond the shared ones, and what each may be
LINEAR_CONSTRAINTS: dict[str, Constraint] = {
    "alpha": ALPHA,
    "learn_alpha": Boolean(),
    "alpha_max": Real(1.0, low_open=True),
    "hidden_layer_sizes": Satisfies(
        "a tuple of positive ints (e.g. () or (64, 32))", _hidden_sizes
    ),
    "solver": Options(SOLVERS),
    "C": Real(0.0, low_open=True),
    "tol": Real(0.0),
    "max_iter": Integer(1),
    "n_iter_no_change": Integer(1),
    "warm_start": Boolean(),
    "average": Boolean(),
}


#: the parameters of the TabNet estimators beyond the shared ones, and what each may be
#: (categorical_features is checked against X, in _categorical_indices); the classifier adds
#: ``alpha`` and ``class_weight``
TABNET_CONSTRAINTS: dict[str, Constraint] = {
    **{name: c for name, c in ARGUMENTS.items() if name != "virtual_batch_size"},
    "virtual_batch_size": AnyOf(Options(("auto",)), ARGUMENTS["virtual_batch_size"]),
    "cat_emb_dim": Integer(1),
    # the longest warm-up of the faithful design (see sk_entmax._tabnet.design)
    "mask_warmup": Integer(1),
    "lambda_sparse": AnyOf(Options(("auto",)), Real(0.0)),
    "clip_value": AnyOf(Options((None,)), Real(0.0, low_open=True)),
    "patience": Integer(1),
}


def _levels(value: Any) -> tuple[float, ...]:
    """``confidence_level`` as a tuple of floats in (0, 1): one number, or a non-empty
    list, tuple or 1-d array of them."""
    many = isinstance(value, list | tuple | np.ndarray)
    values = list(value) if many else [value]
    if not values or not all(
        not isinstance(v, bool | np.bool_) and isinstance(v, numbers.Real) and 0.0 < v < 1.0
        for v in values
    ):
        raise ValueError(value)
    return tuple(float(v) for v in values)


def _classifier_or_none(value: Any) -> Any:
    if value is not None and not (hasattr(value, "fit") and hasattr(value, "decision_function")):
        raise TypeError(value)
    return value


#: the parameters of SparseConformalClassifier, and what each may be
CONFORMAL_CONSTRAINTS: dict[str, Constraint] = {
    "confidence_level": Satisfies(
        "a float in the open interval (0, 1) or a non-empty list of such floats", _levels
    ),
    "prefit": Boolean(),
    "class_conditional": Boolean(),
    "mapping_alpha": AnyOf(
        Options(("auto",)),
        Real(1.0, low_open=True, note="alpha = 1 is softmax, which is never sparse"),
    ),
    "estimator": Satisfies(
        "a classifier with fit and decision_function, or None", _classifier_or_none
    ),
    "cv": AnyOf(Options((None,)), Integer(2)),
    "randomized": Boolean(),
    "risk": Options((None, "recall")),
    "random_state": SHARED_CONSTRAINTS["random_state"],
}
