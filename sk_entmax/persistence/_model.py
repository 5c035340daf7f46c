"""One estimator in a model file, as its class declares its saved state
(:class:`~sk_entmax._saved_state.ModelState`): its header entry and tensors written, the
entry checked and its tensors read, and the fitted estimator built from them.

An estimator's parameters that hold estimators (its declaration's
``estimator_parameters``) are stored as nested entries, ``estimators.<name>`` in the
header, each with its tensors under ``estimators.<name>.``: a fitted estimator as a model
entry of its own (checked as one), an unfitted one as its class and parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.utils.validation import check_is_fitted
from skorch.history import History

from sk_entmax._saveable import SAVEABLE, saved_state
from sk_entmax._saved_state import ModelState, WrapperState
from sk_entmax._version import __version__
from sk_entmax.persistence._codec import _decode, _encode, _is_int
from sk_entmax.persistence._errors import _Invalid, _Unserializable
from sk_entmax.persistence._header import (
    MODEL_FORMAT_VERSION,
    NESTED,
    _check_keys,
    _check_model_header,
)
from sk_entmax.persistence._schema import (
    _check_fitted,
    _check_history,
    _check_network,
    _check_params,
)
from sk_entmax.persistence._skeleton import (
    _MAX_INT,
    _SKELETON_SLACK,
    _check_arguments,
    _check_names,
    _dtype_name,
    _match_tensors,
    _skeleton,
)
from sk_entmax.persistence._wrapper import WRAPPERS, Wrapped, read_wrapper, wrapper_entry

__all__ = ["Model", "build", "model_entry", "read_model"]

_NESTED_KEYS = {"frozen", "model"}
_UNFITTED_KEYS = {"estimator", "params"}


def _saveable_names() -> str:
    return ", ".join(SAVEABLE)


def _state_tensors(module: torch.nn.Module) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The module's state on the CPU, each tensor stored once: a parameter shared between
    sub-modules (shared GLU layers) appears under several names, kept as aliases."""
    tensors: dict[str, torch.Tensor] = {}
    aliases: dict[str, str] = {}
    seen: dict[tuple, str] = {}
    for name, tensor in module.state_dict().items():
        key = (tensor.device, tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()))
        if tensor.numel() and key in seen:
            aliases[name] = seen[key]
            continue
        seen[key] = name
        tensors[name] = tensor.detach().to("cpu", copy=True).contiguous()
    return tensors, aliases


def _refuse(name: str) -> TypeError:
    return TypeError(
        f"save takes a fitted {_saveable_names()} (a wrapper around a model of these), or a "
        "scikit-learn Pipeline or ColumnTransformer of scikit-learn estimators and these; "
        f"got {name}. Use pickle or joblib for other objects (a subclass), where the file's "
        "source is trusted"
    )


def _encoded(name: str, build: Any) -> Any:
    """``build()``, a TypeError naming the value it cannot store as data."""
    try:
        return build()
    except _Unserializable as error:
        hint = (
            "set an int or None instead (set_params does not change the fitted model)"
            if "random_state" in str(error)
            else "convert such values to str or numbers before fit, or use pickle/joblib "
            "where the file's source is trusted"
        )
        raise TypeError(
            f"cannot save {name} safely: {error} cannot be stored as data; {hint}"
        ) from None


def _nested_entries(
    estimator: Any, state: ModelState, params: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The nested entries of the parameters that hold estimators (set to None in
    ``params``, which the file stores), and their tensors."""
    entries: dict[str, Any] = {}
    tensors: dict[str, torch.Tensor] = {}
    for name in state.estimator_parameters:
        value = params.get(name)
        if value is None:
            continue
        frozen = isinstance(value, FrozenEstimator)
        inner = value.estimator if frozen else value
        if not isinstance(saved_state(inner), ModelState):
            raise TypeError(
                f"cannot save {type(estimator).__name__}: its {name} is a "
                f"{type(inner).__name__}, which save does not store; use pickle or joblib, "
                "where the file's source is trusted"
            )
        try:
            check_is_fitted(inner)
        except NotFittedError:
            inner_params, inner_nested, _ = _parameters(inner, saved_state(inner))
            if inner_nested:
                raise TypeError(
                    f"cannot save {type(estimator).__name__}: its unfitted {name} holds "
                    "estimators of its own"
                ) from None
            model = {"estimator": type(inner).__name__, "params": inner_params}
        else:
            model, inner_tensors = model_entry(inner)
            tensors.update({f"{NESTED}.{name}.{k}": t for k, t in inner_tensors.items()})
        entries[name] = {"frozen": frozen, "model": model}
        params[name] = None
    return entries, tensors


def _parameters(
    estimator: Any, state: ModelState
) -> tuple[dict[str, Any], dict[str, Any], dict[str, torch.Tensor]]:
    """The encoded parameters of ``estimator``, its nested entries and their tensors."""
    params = estimator.get_params(deep=False)
    nested, tensors = _nested_entries(estimator, state, params)
    name = type(estimator).__name__
    encoded = _encoded(name, lambda: {k: _encode(v, f"parameter {k}") for k, v in params.items()})
    return encoded, nested, tensors


def model_entry(
    estimator: Any, target: str | None = None, check_target: Any = None
) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The header and the tensors of one fitted estimator of this package (a wrapper
    around one included); refuses anything else with a TypeError. ``check_target(target)``
    is called once the estimator is known to be fitted, before any work."""
    state = saved_state(estimator)
    wrapped = None
    if isinstance(state, WrapperState):
        wrapped = wrapper_entry(estimator, state)
        estimator = wrapped[2]
        state = saved_state(estimator)
    name = type(estimator).__name__
    if not isinstance(state, ModelState):
        raise _refuse(name)
    check_is_fitted(estimator)
    if check_target is not None:
        check_target(target)  # refuse a fifo, a device, ... before any work
    net = estimator.net_
    module_cls = type(net.module_)
    if module_cls is not state.network:
        raise TypeError(f"save cannot store a network of type {module_cls.__name__}")
    params, nested, tensors = _parameters(estimator, state)
    table = type(estimator)._fitted_schema
    fitted = {}
    for key, value in vars(estimator).items():
        if key in params or key == "net_":
            continue
        if key in table:
            fitted[key] = value
        elif key.endswith("_") and not key.startswith("__"):
            raise TypeError(
                f"cannot save {name}: its attribute {key} is not one of the fitted "
                f"attributes load accepts ({', '.join(table)}); delete it before saving"
            )
        # other private attributes (a metadata-routing request, ...) are not model state
    module_kwargs = {
        k[len("module__") :]: v for k, v in net.get_params().items() if k.startswith("module__")
    }
    history = [{k: v for k, v in epoch.items() if k != "batches"} for epoch in net.history]
    header = _encoded(
        name,
        lambda: {
            "format_version": MODEL_FORMAT_VERSION,
            "sk_entmax_version": __version__,
            "estimator": name,
            "params": params,
            "fitted": {k: _encode(v, f"fitted attribute {k}") for k, v in fitted.items()},
            "net": {
                "module": module_cls.__name__,
                "module_kwargs": _encode(module_kwargs, "network argument"),
                "batch_size": int(net.batch_size),
                "history": _encode(history, "net_.history"),
            },
        },
    )
    if nested:
        header[NESTED] = nested
    if wrapped is not None:
        header[wrapped[0]] = wrapped[1]
    own, aliases = _state_tensors(net.module_)
    header["net"]["aliases"] = aliases
    return header, {**own, **tensors}


# ---------------------------------------------------------------------------- load


@dataclass
class Model:
    """A checked model entry, its tensors read: what :func:`build` builds the fitted
    estimator from."""

    estimator: Any
    state: ModelState
    module_cls: type
    kwargs: dict[str, Any]
    batch_size: int
    source: dict[str, str]
    fitted: dict[str, Any]
    history: list[dict[str, Any]]
    tensors: dict[str, torch.Tensor]
    wrapped: Wrapped | None = None
    nested: list[Model] = field(default_factory=list)


def _model_class(name: Any) -> tuple[type, ModelState]:
    cls = SAVEABLE.get(name) if isinstance(name, str) else None
    if cls is None or not isinstance(cls._saved_state, ModelState):
        raise _Invalid(f"the file names an unknown estimator {name!r}")
    return cls, cls._saved_state


def _checked_estimator(cls: type, state: ModelState, params: Any) -> Any:
    """An unfitted ``cls`` of the stored parameters, each checked as fit checks it."""
    estimator = cls(**_check_params(cls, params, state.added_parameters))
    try:  # each value against its constraint, as fit checks it
        estimator._checked(*estimator._constraints)
    except ValueError as error:
        raise _Invalid(str(error)) from None
    return estimator


def _split_nested(stored: dict[str, tuple]) -> tuple[dict[str, tuple], dict[str, dict]]:
    """The stored tensors of the model itself, and those of each nested estimator (by
    parameter, names without their prefix)."""
    own: dict[str, tuple] = {}
    nested: dict[str, dict[str, tuple]] = {}
    for key, value in stored.items():
        prefix, _, rest = key.partition(".")
        if prefix == NESTED:
            name, _, rest = rest.partition(".")
            nested.setdefault(name, {})[rest] = value
        else:
            own[key] = value
    return own, nested


def _read_nested(
    handle: Any,
    header: dict[str, Any],
    estimator: Any,
    state: ModelState,
    stored: dict[str, dict],
    prefix: str,
) -> list[Model]:
    """The nested estimators of a model entry, set as its parameters (the fitted ones
    still to be built), every entry checked; the models to build."""
    entries = header.get(NESTED, {})
    if not isinstance(entries, dict):
        raise _Invalid(f"the header's {NESTED} entry is not an object")
    unknown = sorted(set(entries) - set(state.estimator_parameters))
    if unknown:
        raise _Invalid(
            f"the {NESTED} entry names {unknown[:5]}; {type(estimator).__name__}'s parameters "
            f"that hold estimators are {list(state.estimator_parameters)}"
        )
    stray = sorted(set(stored) - set(entries))
    if stray:
        raise _Invalid(f"tensors {NESTED}.{stray[0]}.* belong to no nested estimator")
    models = []
    for name, entry in entries.items():
        if not isinstance(entry, dict):
            raise _Invalid(f"the nested estimator {name} is not an object")
        _check_keys(entry, _NESTED_KEYS, f"the nested estimator {name}")
        frozen, model = entry["frozen"], entry["model"]
        if not isinstance(frozen, bool) or not isinstance(model, dict):
            raise _Invalid(f"the nested estimator {name} is not a flag and an object")
        if getattr(estimator, name) is not None:
            raise _Invalid(f"parameter {name} is stored both as a value and as an estimator")
        if "net" in model:  # fitted: a model entry of its own
            _check_model_header(model)
            inner_prefix = f"{prefix}{NESTED}.{name}."
            inner = read_model(handle, model, stored.get(name, {}), inner_prefix, nested=True)
            models.append(inner)
            value = inner.estimator
        else:
            _check_keys(model, _UNFITTED_KEYS, f"the nested estimator {name}")
            if stored.get(name):
                raise _Invalid(f"the unfitted nested estimator {name} has stored tensors")
            cls, inner_state = _model_class(model["estimator"])
            value = _checked_estimator(cls, inner_state, model["params"])
            if any(getattr(value, p) is not None for p in inner_state.estimator_parameters):
                raise _Invalid(f"the unfitted nested estimator {name} holds estimators")
        setattr(estimator, name, FrozenEstimator(value) if frozen else value)
    if entries:
        try:  # each nested estimator against its parameter's constraint
            estimator._checked(*estimator._constraints)
        except ValueError as error:
            raise _Invalid(str(error)) from None
    return models


def _check_header(header: dict[str, Any], stored: dict[str, tuple]) -> tuple:
    """Everything :func:`read_model` checks of the model itself before it reads a tensor
    or builds anything."""
    cls, state = _model_class(header["estimator"])
    spec = header["net"]
    module_cls = state.network
    if spec["module"] != module_cls.__name__:
        raise _Invalid(
            f"the file names the network {spec['module']!r}; {cls.__name__} trains a "
            f"{module_cls.__name__}"
        )
    batch_size = spec["batch_size"]
    if not _is_int(batch_size) or not 1 <= batch_size <= _MAX_INT:
        raise _Invalid(f"batch size {batch_size!r} is not a positive int")
    aliases = spec["aliases"]
    _check_names(module_cls, stored, aliases)
    kwargs = _decode(spec["module_kwargs"], "network arguments")
    kwargs = _check_arguments(module_cls, kwargs, stored)
    # on the meta device: no memory, and no draw from any generator (nothing to lock or fork)
    skeleton = _skeleton(module_cls, kwargs, len(stored) + len(aliases) + _SKELETON_SLACK)
    expected = {name: (tuple(t.shape), t.dtype) for name, t in skeleton.state_dict().items()}
    source = _match_tensors(expected, stored, aliases, module_cls.__name__)
    estimator = _checked_estimator(cls, state, header["params"])
    fitted = _check_fitted(cls.__name__, cls._fitted_schema, header["fitted"], kwargs)
    if state.check is not None:  # the fitted attributes against the network's sizes
        state.check(fitted, kwargs)
    history = _check_history(_decode(spec["history"], "history"))
    return estimator, state, module_cls, kwargs, source, fitted, history, skeleton


def read_model(
    handle: Any, header: dict[str, Any], stored: dict[str, tuple], prefix: str, nested=False
) -> Model:
    """One model entry of the file checked, and its tensors (stored under ``prefix``) read
    and checked: what :func:`build` builds the estimator from. A ``nested`` entry (an
    estimator's parameter) may not hold a wrapper."""
    if nested and any(key in header for key in WRAPPERS):
        raise _Invalid("a nested estimator entry holds a wrapper")
    own, nested_stored = _split_nested(stored)
    checked = _check_header(header, own)
    estimator, state, module_cls, kwargs, source, fitted, history, skeleton = checked
    inner = _read_nested(handle, header, estimator, state, nested_stored, prefix)
    wrapped = read_wrapper(header, type(estimator), fitted)
    tensors = {key: handle.get_tensor(prefix + key) for key in sorted(set(source.values()))}
    for key, tensor in tensors.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise _Invalid(
                f"tensor {prefix}{key} holds values that are not finite (NaN or infinity); "
                "the saved network had diverged or the file was altered"
            )
    for key, src in source.items():
        if key.endswith("running_var") and bool((tensors[src] < 0).any()):
            raise _Invalid(
                f"tensor {prefix}{src}, a batch norm's running variance, holds negative values "
                f"(the smallest is {float(tensors[src].min())!r}); a variance is >= 0, so the "
                "file was altered"
            )
    with torch.no_grad():
        state_dict = {key: tensors[src] for key, src in source.items()}
        skeleton.load_state_dict(state_dict, assign=True)
    _check_network(type(estimator)._fitted_schema, fitted, skeleton)
    batch_size = header["net"]["batch_size"]
    return Model(
        estimator,
        state,
        module_cls,
        kwargs,
        batch_size,
        source,
        fitted,
        history,
        tensors,
        wrapped,
        inner,
    )


def build(model: Model, name: str, device: str) -> Any:
    """The fitted estimator of a checked model entry (see :func:`read_model`), its nested
    estimators built in place, and the wrapper around it if one was stored."""
    for inner in model.nested:
        build(inner, name, device)
    estimator = model.estimator
    # first: the fitted attributes say which net to build (a partial_fit stream's, Adam's)
    for key, value in model.fitted.items():
        setattr(estimator, key, value)
    # initialised under fit's lock: the draws (overwritten below) never interleave with a
    # fit's seeded ones in another thread, and the global generator is left as found
    net = estimator._net_for(
        model.module_cls, model.kwargs, batch_size=model.batch_size, device=device
    )
    state = net.module_.state_dict()
    tensors, source = model.tensors, model.source
    for key, src in source.items():
        if state[key].dtype != tensors[src].dtype:  # load_state_dict would cast it
            raise ValueError(
                f"cannot load {name!r}: tensor {key} is stored as "
                f"{_dtype_name(tensors[src].dtype)}; the network {type(estimator).__name__} "
                f"builds holds {_dtype_name(state[key].dtype)} (nothing is cast)"
            )
    net.module_.load_state_dict({key: tensors[src] for key, src in source.items()})
    net.module_.eval()
    net.history = History(model.history)
    for key, argument in model.state.from_network.items():
        value = model.kwargs.get(argument)
        if value is not None:  # (a file may predate the argument)
            setattr(estimator, key, list(value) if isinstance(value, tuple) else value)
    estimator.net_ = net
    return estimator if model.wrapped is None else model.wrapped.around(estimator)
