"""A supervised TabNet estimator that starts from a pretrained encoder.

The classifier's and the regressor's ``pretrainer`` parameter: None (no pretraining), a
:class:`~sk_entmax.TabNetPretrainer`, or a ``sklearn.frozen.FrozenEstimator`` around a
fitted one. scikit-learn's ``clone`` (which ``GridSearchCV``, ``cross_validate`` and every
meta-estimator call) returns an *unfitted* copy of an estimator-valued parameter, and a
``FrozenEstimator``, which ``clone`` returns as it is: so

- ``pretrainer=FrozenEstimator(TabNetPretrainer().fit(X_all))`` keeps the pretrained
  weights through any ``clone``: each fit starts from them (the way to pretrain once, on
  unlabelled rows, and fine-tune in a search);
- ``pretrainer=TabNetPretrainer(...)`` unfitted (or a fitted one after a ``clone``) is
  fitted, as a copy, on the ``X`` of each ``fit`` before the supervised training: the
  pretraining is then part of the estimator, and its parameters can be searched
  (``pretrainer__pretraining_ratio``). A copy whose ``random_state`` is None takes the
  estimator's, so that a seeded fit is reproducible;
- a fitted pretrainer passed as it is (no ``clone`` in between) is used as it is.

The estimator then takes the pretrainer's encoding of the columns (categories, missing
indicators: the pretrained weights are for those) and its encoder's weights; its output
layer starts afresh. The parameters that shape the encoder must equal the pretrainer's
(:data:`SAME_AS_PRETRAINER`); the others (``gamma``, ``entmax_alpha``, ``momentum``,
``lambda_sparse``, the training ones) are the estimator's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.utils.validation import check_is_fitted

from sk_entmax._engine.training import TrainingPlan
from sk_entmax.entmax.constraints import Constraint, Satisfies, invalid

__all__ = [
    "PRETRAINED_CONSTRAINTS",
    "SAME_AS_PRETRAINER",
    "PretrainedStartMixin",
    "check_pretrainer",
]

#: the parameters of a TabNet estimator that must equal its pretrainer's: they shape the
#: encoder's weights, or what they mean
SAME_AS_PRETRAINER = (
    "n_d",
    "n_a",
    "n_steps",
    "n_independent",
    "n_shared",
    "entmax_mode",
    "faithful_masks",
    "cat_emb_dim",
    "categorical_features",
)


def check_pretrainer(value: Any) -> Any:
    """``value`` if it is None, a TabNetPretrainer or a FrozenEstimator around one, else a
    TypeError (the constraint of the ``pretrainer`` parameter)."""
    inner = value.estimator if isinstance(value, FrozenEstimator) else value
    if value is not None and not hasattr(type(inner), "_encoder_state"):
        raise TypeError(value)
    return value


#: the ``pretrainer`` parameter of the supervised TabNet estimators, and what it may be
PRETRAINED_CONSTRAINTS: dict[str, Constraint] = {
    "pretrainer": Satisfies(
        "None, a TabNetPretrainer, or a sklearn.frozen.FrozenEstimator around a fitted one",
        check_pretrainer,
    ),
}


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    return a.shape == b.shape and bool(np.all(a == b))


class PretrainedStartMixin:
    """The ``pretrainer`` parameter of a supervised TabNet estimator (see the module
    docstring): placed before :class:`~sk_entmax._tabnet.shared.TabNetEstimatorMixin`, it
    supplies ``_validate_fit_data`` and ``_initial_weights``."""

    def _fitted_pretrainer(self, spec: Any, X: Any) -> Any:
        """The fitted pretrainer ``spec`` gives: its own fit, or a copy fitted on ``X``."""
        where = type(self).__name__
        if isinstance(spec, FrozenEstimator):
            try:
                check_is_fitted(spec.estimator)
            except NotFittedError:
                raise invalid(
                    "pretrainer",
                    where,
                    "a FrozenEstimator around a *fitted* TabNetPretrainer (a frozen estimator "
                    "is never fitted; fit the pretrainer first, then freeze it)",
                    spec,
                ) from None
            return spec.estimator
        try:
            check_is_fitted(spec)
            return spec
        except NotFittedError:
            pretrainer = clone(spec)
            if pretrainer.random_state is None:
                pretrainer.set_params(random_state=self.random_state)
            return pretrainer.fit(X)

    def _check_same_encoder(self, params: dict[str, Any], pretrainer: Any) -> None:
        theirs = pretrainer.get_params(deep=False)
        for name in SAME_AS_PRETRAINER:
            # categorical_features has no entry in the table: X checks it
            ours = params[name] if name in params else getattr(self, name)
            if not _same(ours, theirs[name]):
                raise ValueError(
                    f"{type(self).__name__}'s {name}={ours!r} differs from its "
                    f"pretrainer's {name}={theirs[name]!r}: the pretrained encoder has the "
                    f"pretrainer's shape; set {name} equal in both (the parameters that "
                    f"must match: {', '.join(SAME_AS_PRETRAINER)})"
                )

    def _validate_fit_data(self, X, y, plan: TrainingPlan, params: dict[str, Any]):
        spec = params["pretrainer"]
        if spec is None:
            return self._validate_table(X, y)
        pretrainer = self._fitted_pretrainer(spec, X)
        self._check_same_encoder(params, pretrainer)
        self._pretrained_encoder = pretrainer._encoder_state()
        return self._validate_table(X, y, encoding=pretrainer)

    def _initial_weights(self, module: torch.nn.Module, params: dict[str, Any]) -> None:
        self._hand_held_out(module, params)
        state = self.__dict__.pop("_pretrained_encoder", None)
        if state is None:
            return
        missing, unexpected = module.tabnet.load_state_dict(state, strict=False)
        # the output layer and the later steps' rests (see MaskDesign.step_rest) are the task's
        own = ("final_mapping.", "rest_logits")
        if unexpected or any(not key.startswith(own) for key in missing):
            raise RuntimeError(
                f"the pretrained encoder does not fit the network: missing {missing}, "
                f"unexpected {unexpected}"
            )
        # the columns a faithful model reads are chosen on its own task's loss
        module.tabnet.start_selection()
