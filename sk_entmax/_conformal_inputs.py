"""What the conformal wrapper is given, checked: its parameters (each against the
constraint table, and the pairs that exclude each other), its confidence levels, the target
``fit`` takes, and the model it wraps (the default, whether it is fitted, the alpha of its
output mapping, the columns of its ``decision_function``, the last step of a Pipeline).

Both :class:`~sk_entmax.conformal.SparseConformalClassifier` and the checks of a stored
wrapper (:mod:`sk_entmax._conformal_state`) read these, so neither imports the other for
them. The package's estimators are imported where they are used, not with this module.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.exceptions import NotFittedError
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted

from sk_entmax._parameters import CONFORMAL_CONSTRAINTS
from sk_entmax.entmax.constraints import check

__all__ = [
    "check_columns",
    "check_level",
    "check_prefitted",
    "check_target",
    "checked_parameters",
    "default_estimator",
    "final_step",
    "resolve_alpha",
    "two_columns",
]


def checked_parameters(owner: Any, where: str) -> dict[str, Any]:
    """Every parameter of ``owner`` (the wrapper, or a namespace of stored parameters),
    checked against the constraint table by name (errors name ``where``), and the pairs
    that exclude each other: what fit and conformalize read from then on."""
    params = {
        name: check(name, getattr(owner, name), constraint, where)
        for name, constraint in CONFORMAL_CONSTRAINTS.items()
    }
    if params["cv"] is not None and params["prefit"]:
        raise ValueError(
            f"SparseConformalClassifier: cv={params['cv']!r} fits clones of the estimator "
            "on folds, which prefit=True forbids; use prefit=False (fit refits on all "
            "rows) or cv=None (conformalize on held-out rows)."
        )
    if params["risk"] is not None and params["randomized"]:
        raise ValueError(
            "SparseConformalClassifier: risk='recall' controls an expected loss and has no "
            "randomized form; use randomized=False with it."
        )
    if params["risk"] is not None and params["class_conditional"]:
        raise ValueError(
            "SparseConformalClassifier: risk='recall' is a guarantee on the whole label "
            "set, with no per-class form; use class_conditional=False with it."
        )
    return params


def check_level(confidence_level: Any) -> tuple[np.ndarray, bool]:
    """The levels as a float array, and whether a list was passed, checked by the
    ``confidence_level`` entry of the constraint table."""
    levels = check(
        "confidence_level",
        confidence_level,
        CONFORMAL_CONSTRAINTS["confidence_level"],
        "SparseConformalClassifier",
    )
    many = isinstance(confidence_level, list | tuple | np.ndarray)
    return np.asarray(levels, dtype=np.float64), many


def two_columns(decision: np.ndarray) -> np.ndarray:
    """A binary ``decision_function`` (score of ``classes_[1]`` minus ``classes_[0]``) as the
    two columns ``[0, d]``; entmax depends only on differences, so nothing else changes."""
    decision = np.asarray(decision, dtype=np.float64)
    if decision.ndim == 1:
        decision = decision[:, np.newaxis]
    if decision.shape[1] == 1:
        decision = np.hstack([np.zeros_like(decision), decision])
    return decision


def final_step(estimator: Any) -> Any:
    """The last step of a Pipeline (the estimator itself otherwise)."""
    steps = getattr(estimator, "steps", None)
    if isinstance(steps, list) and steps:
        return final_step(steps[-1][1])
    return estimator


def check_target(y: ArrayLike) -> None:
    """Refuse a target that is not binary, multi-class or a multi-label indicator."""
    target = type_of_target(y, input_name="y")
    if target not in ("binary", "multiclass", "multilabel-indicator"):
        # "Unknown label type" is the wording scikit-learn's checks expect
        unknown = "Unknown label type. " if target == "unknown" else ""
        raise ValueError(
            f"{unknown}SparseConformalClassifier supports binary, multi-class and "
            f"multi-label (indicator) targets; got a {target!r} target."
        )


def default_estimator(estimator: Any = None) -> Any:
    """``estimator``, or for None the default model, ``SparsemaxClassifier()``."""
    if estimator is not None:
        return estimator
    from sk_entmax._linear import SparsemaxClassifier

    return SparsemaxClassifier()


def check_prefitted(estimator: Any) -> None:
    """Refuse, saying what to do, an estimator given with ``prefit=True`` unfitted."""
    try:
        check_is_fitted(estimator)
    except NotFittedError as error:
        raise NotFittedError(
            f"prefit=True but the estimator {type(estimator).__name__} is not fitted: "
            "fit it first, or use prefit=False and call fit."
        ) from error


def resolve_alpha(estimator: Any, alpha: float | str) -> float:
    """The alpha of the calibrated mapping: ``alpha`` itself, or for "auto" the fitted
    ``estimator``'s own output alpha (2, sparsemax, for another classifier or a softmax
    one)."""
    if alpha != "auto":
        return float(alpha)
    from sk_entmax._classifier import BaseEntmaxClassifier

    final = final_step(estimator)
    if not isinstance(final, BaseEntmaxClassifier):
        return 2.0
    # a softmax model (alpha 1, the LogisticRegression equivalent) has no sparse output
    # of its own: sparsemax on its scores, as for any other classifier
    own = float(final.alpha_)
    return own if own > 1.0 else 2.0


def check_columns(decision: np.ndarray, n_classes: int) -> np.ndarray:
    """``decision``, refused unless it has one column per class."""
    if decision.shape[1] != n_classes:
        raise ValueError(
            f"The estimator's decision_function has {decision.shape[1]} columns for "
            f"{n_classes} classes; one score per class is needed."
        )
    return decision
