"""The generic checks of a header's parameters, fitted attributes (as each estimator
declares them, in the vocabulary of :mod:`sk_entmax._attributes`) and history."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from sk_entmax._attributes import Attribute
from sk_entmax.persistence._codec import _PLAIN, _decode
from sk_entmax.persistence._errors import _Invalid


def _check_history(history: Any) -> list[dict[str, Any]]:
    if not isinstance(history, list) or not all(
        isinstance(epoch, dict)
        and all(isinstance(k, str) and isinstance(v, _PLAIN) for k, v in epoch.items())
        for epoch in history
    ):
        raise _Invalid("the training history is not a list of per-epoch records of numbers")
    return history


def _check_params(cls: type, params: Any, added: Mapping[str, Any]) -> dict[str, Any]:
    """The estimator's parameters: its get_params names, each a plain value (one added
    since the file was written, in ``added`` with the value a file without it means, may be
    absent)."""
    if not isinstance(params, dict):
        raise _Invalid("the parameters are not a mapping of names to values")
    names = set(cls().get_params(deep=False))
    params = {**{k: v for k, v in added.items() if k in names}, **params}
    unknown, missing = sorted(set(params) - names), sorted(names - set(params))
    if unknown or missing:
        raise _Invalid(
            f"the parameters of {cls.__name__} are {sorted(names)}; the file has "
            f"unknown {unknown} and lacks {missing}"
        )
    scalar = (*_PLAIN, np.bool_, np.integer, np.floating)
    out = {}
    for name, value in params.items():
        value = _decode(value, f"parameter {name}")
        ok = (
            isinstance(value, scalar)
            or (isinstance(value, (list, tuple)) and all(isinstance(v, scalar) for v in value))
            or (
                isinstance(value, dict)
                and all(isinstance(k, scalar) and isinstance(v, scalar) for k, v in value.items())
            )
            or (
                isinstance(value, np.ndarray)
                and value.ndim == 1
                and value.dtype.kind in "biuU"
                and value.size
            )
        )
        if not ok:
            raise _Invalid(f"parameter {name}: {type(value).__name__} is not a parameter value")
        out[name] = value
    return out


def _check_fitted(
    estimator_name: str, table: Mapping[str, Attribute], fitted: Any, sizes: Mapping[str, Any]
) -> dict[str, Any]:
    """The fitted attributes of the header, each checked as ``table`` (the estimator's
    ``_fitted_schema``) declares it, in its order."""
    if not isinstance(fitted, dict):
        raise _Invalid("the fitted attributes are not a mapping of names to values")
    unknown = [name for name in fitted if name not in table]
    if unknown:
        raise _Invalid(
            f"unknown fitted attribute {unknown[0]!r}; {estimator_name} has {', '.join(table)}"
        )
    out: dict[str, Any] = {}
    for name, spec in table.items():
        present = name in fitted
        needed = spec.required if isinstance(spec.required, bool) else out[spec.required]
        if present != needed and (needed or not isinstance(spec.required, bool)):
            state = "missing" if needed else f"present although {spec.required} is False"
            raise _Invalid(f"fitted attribute {name} is {state}")
        if not present:
            continue
        value = _decode(fitted[name], f"fitted attribute {name}")
        try:
            out[name] = spec.check(value, sizes, out)
        except _Invalid as error:
            raise _Invalid(f"fitted attribute {name}: {error}") from None
    return out


def _check_network(
    table: Mapping[str, Attribute], fitted: Mapping[str, Any], module: torch.nn.Module
) -> None:
    """The fitted attributes against the network they were fitted with (``alpha_``,
    ``mask_alpha_``): ``module`` is the skeleton, its stored tensors assigned (a learned alpha
    is a function of one of them)."""
    for name, spec in table.items():
        if spec.network is not None and name in fitted:
            try:
                spec.network(fitted[name], module)
            except _Invalid as error:
                raise _Invalid(f"fitted attribute {name}: {error}") from None
