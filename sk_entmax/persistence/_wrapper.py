"""A meta-estimator stored around its model: the entry a class declaring a
:class:`~sk_entmax._saved_state.WrapperState` writes beside its model's, and reads back.

The file holds the model as it would hold it alone; under the wrapper's ``key``, the
wrapper's parameters (but the one that gives the model), how that parameter relates to the
model (:data:`KINDS`) and the wrapper's fitted attributes. This module checks the entry's
form and decodes it; what the values must be is the class's own check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from sk_entmax._saveable import SAVEABLE, saved_state
from sk_entmax._saved_state import ModelState, WrapperState
from sk_entmax.persistence._codec import _PLAIN, _decode, _encode
from sk_entmax.persistence._errors import _Invalid, _Unserializable
from sk_entmax.persistence._header import _check_keys

__all__ = [
    "WRAPPERS",
    "Wrapped",
    "read_pipeline_wrapper",
    "read_wrapper",
    "wrapped_pipeline",
    "wrapper_entry",
]

#: what a file stores of the parameter that gives the model: None ("default", the class's
#: own default), the fitted model itself ("fitted"), or an unfitted estimator ("template",
#: restored as an unfitted clone of the fitted model: the parameters it was fitted with)
KINDS = ("default", "fitted", "template")

#: each class stored around a model, by the header entry it is stored under
WRAPPERS: dict[str, type] = {
    cls._saved_state.key: cls
    for cls in SAVEABLE.values()
    if isinstance(cls._saved_state, WrapperState)
}


def _models() -> str:
    return ", ".join(n for n, c in SAVEABLE.items() if isinstance(c._saved_state, ModelState))


def wrapper_entry(wrapper: Any, state: WrapperState) -> tuple[str, dict[str, Any], Any]:
    """The header key and entry of a fitted wrapper, and the model it wraps; a TypeError
    for anything :func:`read_wrapper` would refuse."""
    name = type(wrapper).__name__
    check_is_fitted(wrapper, state.model)
    inner = getattr(wrapper, state.model)
    if not (
        isinstance(saved_state(inner), ModelState)
        or (state.facts is not None and isinstance(inner, Pipeline))
    ):
        around = " or a Pipeline" if state.facts is not None else ""
        raise TypeError(
            f"save stores a {name} around a fitted {_models()}{around}; this one wraps a "
            f"{type(inner).__name__}. Use pickle or joblib for it, where the file's source "
            "is trusted"
        )
    params = wrapper.get_params(deep=False)
    given = params.pop(state.parameter)
    kind = "default" if given is None else "fitted" if given is inner else "template"
    fitted = {}
    for key, value in vars(wrapper).items():
        if key == state.model or not key.endswith("_") or key.startswith("_"):
            continue
        if key not in state.fitted:
            raise TypeError(
                f"cannot save {name}: its attribute {key} is not one of the fitted "
                "attributes load accepts; delete it before saving"
            )
        fitted[key] = value
    try:
        entry = {
            "params": {k: _encode(v, f"parameter {k}") for k, v in params.items()},
            state.parameter: kind,
            "fitted": {k: _encode(v, f"fitted attribute {k}") for k, v in fitted.items()},
        }
    except _Unserializable as error:
        raise TypeError(f"cannot save {name} safely: {error} cannot be stored as data") from None
    return state.key, entry, inner


@dataclass(frozen=True)
class Wrapped:
    """A checked wrapper entry: what :func:`~sk_entmax.persistence.load` puts around the
    loaded model."""

    cls: type
    params: dict[str, Any]
    kind: str
    fitted: dict[str, Any]

    def around(self, inner: Any) -> Any:
        state = self.cls._saved_state
        given = {"default": None, "fitted": inner}.get(self.kind)
        if self.kind == "template":  # an unfitted estimator with the fitted one's parameters
            given = clone(inner)
        wrapper = self.cls(**{state.parameter: given}, **self.params)
        setattr(wrapper, state.model, inner)
        for key, value in self.fitted.items():
            setattr(wrapper, key, value)
        return wrapper


def wrapped_pipeline(obj: Any) -> tuple[WrapperState, Any] | None:
    """The state and the model of a fitted wrapper whose model is a Pipeline (stored as a
    version 2 file, with the wrapper's entry beside the pipeline's), or None."""
    state = saved_state(obj)
    if not isinstance(state, WrapperState) or state.facts is None:
        return None
    inner = getattr(obj, state.model, None)
    return (state, inner) if isinstance(inner, Pipeline) else None


def read_pipeline_wrapper(header: Mapping[str, Any], pipeline: Any) -> Wrapped | None:
    """The wrapper entry of a version 2 header, if any, checked against the loaded
    Pipeline (the facts its class reads of it)."""
    present = [key for key in WRAPPERS if key in header]
    if not present:
        return None
    state = WRAPPERS[present[0]]._saved_state
    if state.facts is None or not isinstance(pipeline, Pipeline):
        raise _Invalid(
            f"the {present[0]} entry wraps a {type(pipeline).__name__}, which it is not "
            "stored around"
        )
    try:
        facts = state.facts(pipeline)
    except (AttributeError, TypeError, ValueError) as error:
        raise _Invalid(
            f"the {present[0]} entry wraps a Pipeline it cannot read ({type(error).__name__}: "
            f"{error})"
        ) from None
    return read_wrapper(header, type(pipeline), facts)


def read_wrapper(
    header: Mapping[str, Any], model_cls: type, model_fitted: Mapping[str, Any]
) -> Wrapped | None:
    """The wrapper entry of a model's header, if any: its form checked and its values
    decoded here, then checked by its class against the model."""
    present = [key for key in WRAPPERS if key in header]
    if not present:
        return None
    if len(present) > 1:
        raise _Invalid(f"the header holds several wrappers around one model: {present}")
    key = present[0]
    cls = WRAPPERS[key]
    state: WrapperState = cls._saved_state
    entry = header[key]
    if not isinstance(entry, dict):
        raise _Invalid(f"the {key} entry is not an object")
    _check_keys(entry, {"params", state.parameter, "fitted"}, f"the {key} entry")
    names = set(cls().get_params(deep=False)) - {state.parameter}
    raw = entry["params"]
    # a file may predate a parameter added since: it means the value declared for it
    if (
        not isinstance(raw, dict)
        or not set(names) - set(state.added_parameters) <= set(raw) <= names
    ):
        raise _Invalid(f"the {key} parameters must be exactly {sorted(names)}")
    params = {k: _decode(v, f"{key} parameter {k}") for k, v in raw.items()}
    plain = (*_PLAIN, np.floating)
    for name, value in params.items():
        if not (
            isinstance(value, plain)
            or (isinstance(value, list) and all(isinstance(v, plain) for v in value))
        ):
            raise _Invalid(f"{key} parameter {name}: {type(value).__name__} is not a value")
    kind = entry[state.parameter]
    if kind not in KINDS:
        raise _Invalid(f"the {key} {state.parameter} entry {kind!r} is not one of {list(KINDS)}")
    raw = entry["fitted"]
    if not isinstance(raw, dict):
        raise _Invalid(f"the {key} fitted attributes are not an object")
    unknown = sorted(set(raw) - set(state.fitted))
    if unknown:
        raise _Invalid(f"unknown {key} fitted attribute {unknown[0]!r}")
    fitted = {k: _decode(v, f"{key} fitted attribute {k}") for k, v in raw.items()}
    for name in sorted(names - set(params)):
        params[name] = state.added_parameters[name]
    try:
        fitted = state.check(params, kind, fitted, model_cls, model_fitted)
    except (ValueError, OverflowError, MemoryError) as error:  # numpy's, on a case not foreseen
        raise _Invalid(f"the {key} entry is malformed ({type(error).__name__}: {error})") from None
    return Wrapped(cls, params, kind, fitted)
