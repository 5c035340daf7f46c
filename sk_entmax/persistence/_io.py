"""Save and load: the header written from an estimator, and read back into one, each of its
parts checked by the module whose job it is (see the package docstring)."""

from __future__ import annotations

import errno
import json
import os
import warnings
from typing import TYPE_CHECKING, Any

import torch
from sklearn.utils.validation import check_is_fitted
from skorch.history import History

from sk_entmax._engine.device import resolve_device
from sk_entmax._version import __version__
from sk_entmax.persistence._classes import _estimator_classes, _module_classes
from sk_entmax.persistence._codec import _decode, _encode, _is_int
from sk_entmax.persistence._conformal import _check_conformal, _conformal_entry
from sk_entmax.persistence._errors import _Invalid, _Unserializable
from sk_entmax.persistence._files import _safetensors, _save_target, _write_file
from sk_entmax.persistence._header import (
    _METADATA_KEY,
    MODEL_FORMAT_VERSION,
    _check_header_bytes,
    _check_json_size,
    _parse_header,
)
from sk_entmax.persistence._schema import (
    UNSAVED_PARAMETERS,
    _check_fitted,
    _check_history,
    _check_network,
    _check_outputs,
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
    _stored_tensors,
)

if TYPE_CHECKING:
    from sk_entmax._classifier import BaseEntmaxClassifier


def _state_tensors(module: torch.nn.Module) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The module's state on the CPU, each tensor stored once: a parameter shared between
    sub-modules (TabNet's shared GLU layers) appears under several names, kept as aliases."""
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


def save(estimator: BaseEntmaxClassifier, path: str | os.PathLike) -> None:
    """Write a fitted estimator to ``path`` as one safetensors file; no pickle involved.

    Parameters
    ----------
    estimator : estimator of this package, Pipeline or ColumnTransformer
        A fitted EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier or
        TabNetEntmaxRegressor (not a subclass: :func:`load` only builds the classes it
        knows), or a fitted :class:`~sk_entmax.conformal.SparseConformalClassifier` whose
        ``estimator_`` is one (its parameters and calibration, conformalized or not, are
        stored with the model); or a fitted scikit-learn ``Pipeline`` or
        ``ColumnTransformer`` whose parts are scikit-learn's estimators and, as steps of a
        Pipeline, these (format version 2: the scikit-learn part through skops, see
        :mod:`sk_entmax.persistence`).
    path : str or os.PathLike
        The file to write (conventionally ``*.safetensors``): a new path, or a regular file,
        which is replaced (through a symbolic link: the file the link names, the link
        stays). Nothing else is written to, see Raises.

    Raises
    ------
    TypeError
        If ``estimator`` is not one of the package's estimators (or a conformal wrapper
        around one, or a Pipeline or ColumnTransformer of those and scikit-learn's
        estimators: a class of another package, a function, one of this package's
        estimators inside a ColumnTransformer is refused, named), or a parameter or fitted
        attribute cannot be stored as data (e.g. ``random_state`` holding a
        ``RandomState``, or an attribute set by hand that :func:`load` would refuse); the
        message names it.
    sklearn.exceptions.NotFittedError
        If ``estimator`` is not fitted.
    ValueError
        If the model's header would exceed what :func:`load` reads (4 MiB, 300,000 JSON
        values, 100,000 lists and objects: a categorical column of hundreds of thousands of
        categories), so that every file ``save`` writes loads.
    IsADirectoryError
        If ``path`` is a directory, or a symbolic link to one.
    OSError
        If ``path`` is neither a regular file nor a new path: a fifo, a character or block
        device (``/dev/null``), a socket, or a symbolic link to one of those. This is
        checked before anything is written, and again just before the file is replaced;
        nothing is written to such a path, and it is left as it was. Also if the file
        cannot be written (a missing or read-only folder, a full disk, ...), safetensors'
        own errors included. Every such error names ``path``, and leaves the file at
        ``path``, if any, as it was.

    Notes
    -----
    The file is written whole or not at all: into a new file in the same folder
    (``.<name>.<random>.tmp``), flushed to disk, then moved over ``path`` in one step
    (:func:`os.replace`), so a reader never sees half a file and a failed save leaves the
    old one; saving needs permission to create files in that folder. A file replaced keeps
    its permission bits; a new one gets those ``open`` would give it (under the umask).
    """
    from sk_entmax.persistence._composite import is_composite, pipeline_entry

    target = os.fspath(path)
    if is_composite(estimator):
        check_is_fitted(estimator)
        _save_target(target)  # refuse a fifo, a device, ... before any work
        header, tensors = pipeline_entry(estimator, _model_entry)
    else:
        header, tensors = _model_entry(estimator, target)
    text = json.dumps(header, allow_nan=False)
    try:
        _check_json_size(text)
    except _Invalid as error:
        raise ValueError(
            f"cannot save {type(estimator).__name__}: {error} (a categorical column with that "
            "many categories, or that many classes or feature names); use pickle or joblib "
            "where the file's source is trusted"
        ) from None
    _write_file(target, tensors, {_METADATA_KEY: text})


def _model_entry(
    estimator: Any, target: str | None = None
) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The header and the tensors of one fitted estimator of this package (a conformal
    wrapper around one included); refuses anything else with a TypeError. ``target``, the
    file to write, is checked before any work when given."""
    classes = _estimator_classes()
    conformal = None
    if type(estimator).__name__ == "SparseConformalClassifier":
        conformal, estimator = _conformal_entry(estimator)
    name = type(estimator).__name__
    if name not in classes or classes[name][0] is not type(estimator):
        raise TypeError(
            f"save takes a fitted {', '.join(classes)}, a SparseConformalClassifier "
            "around one, or a scikit-learn Pipeline or ColumnTransformer of scikit-learn "
            f"estimators and these; got {name}. Use pickle or joblib for other objects (a "
            "subclass), where the file's source is trusted"
        )
    check_is_fitted(estimator)
    if target is not None:
        _save_target(target)  # refuse a fifo, a device, ... before any work
    net = estimator.net_
    module_name = type(net.module_).__name__
    if _module_classes().get(module_name) is not type(net.module_):
        raise TypeError(f"save cannot store a network of type {module_name}")
    params = estimator.get_params(deep=False)
    for key in UNSAVED_PARAMETERS:
        if params.get(key) is not None:
            warnings.warn(
                f"save stores {name}'s {key} parameter as None: the file holds the fitted "
                f"network, pretrained start included, not the {key} (an estimator); after "
                f"load, a new fit trains from scratch unless you set {key} again",
                UserWarning,
                stacklevel=3,
            )
            params[key] = None
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
    try:
        header = {
            "format_version": MODEL_FORMAT_VERSION,
            "sk_entmax_version": __version__,
            "estimator": name,
            "params": {k: _encode(v, f"parameter {k}") for k, v in params.items()},
            "fitted": {k: _encode(v, f"fitted attribute {k}") for k, v in fitted.items()},
            "net": {
                "module": module_name,
                "module_kwargs": _encode(module_kwargs, "network argument"),
                "batch_size": int(net.batch_size),
                "history": _encode(history, "net_.history"),
            },
        }
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
    if conformal is not None:
        header["conformal"] = conformal
    tensors, aliases = _state_tensors(net.module_)
    header["net"]["aliases"] = aliases
    return header, tensors


def load(path: str | os.PathLike, device: str = "cpu") -> BaseEntmaxClassifier:
    """Read an estimator written by :func:`save`; reads data only and runs no code from it.

    Before it builds anything, ``load`` checks the whole file, and refuses it with a
    ``ValueError`` reading ``cannot load <path>: <why>`` when, in this order:

    - its header claims more than 4 MiB (read from its first 8 bytes, before anything
      else), or its JSON document more than 300,000 values or 100,000 lists and objects
      (counted in its text, before it is parsed);
    - it is not a safetensors file, or one :func:`save` did not write;
    - (a Pipeline or ColumnTransformer, format version 2) its pipeline entry is not base64
      of a zip archive, unpacks to more than 256 MiB or 100,000 files, names a type skops
      does not trust by default (scikit-learn's estimators, numpy's and scipy's data;
      ``numpy.dtype`` too), checked before skops builds anything; a stored tensor is not
      ``models.<i>.<name>`` of one of its model entries (each checked as below); or its
      model entries and the placeholders in its Pipelines' steps do not match one to one;
    - its header is not JSON, has entries a model file does not have, lacks some, or nests
      deeper than saved values do;
    - its ``format_version`` is not an int from 1 to :data:`FORMAT_VERSION`;
    - it names an estimator or a network this package does not have, or a network the
      estimator does not train;
    - a stored tensor, or a tensor alias, is named as no tensor of that network class can
      be (``x``; ``layers.0.weight`` in a TabNet): checked from the names alone, first;
    - a network argument is not one that network takes, or not a plain value of its kind
      (an int, a list of ints, a finite number, ...), an int in it exceeds 2**31 - 1, or an
      int that sizes tensors exceeds what the stored tensors hold for it: the extent of an
      axis of the non-empty stored tensors it sizes (``n_d`` is at most the input width of
      the stored ``tabnet.final_mapping.weight``, ``n_features`` the stored input width; an
      empty tensor of shape ``[N, 0]`` holds no size) or the number of stored tensors it
      makes (``n_steps`` is at most the number of stored attention layers
      ``tabnet.attentive_transformers.<i>.fc.weight``; the length of ``cat_idxs`` the
      number of stored embeddings);
    - the network the arguments describe is not the one stored: it is built on PyTorch's
      meta device (shapes only, no memory), and stopped once it has more tensors than the
      file stores and aliases (and a few, to name the missing ones); each of its tensors
      must be stored under its name, with its shape and dtype (nothing is cast: float
      weights are float32 or float64, as the network that estimator builds holds them), and
      no other tensor may be stored (none is read);
    - a parameter is not one of the estimator's ``get_params()`` names (or one is missing),
      or its value is not a plain number, string, list or dict, or not one ``fit`` accepts
      (the message is ``fit``'s, after ``cannot load <path>:``);
    - an array in the parameters or fitted attributes claims a shape numpy cannot hold (an
      empty array of shape ``[0, 2**63]``), or does not fit its dtype;
    - a fitted attribute is not one the estimator documents, a required one is missing, or
      one has the wrong type, dtype or shape (``classes_`` must have one entry per network
      output, ``n_features_in_`` must be the network's input width, ...), an array's dtype
      is not plain or is wider than its values, ``feature_names_in_`` repeats a name, or
      ``feature_importances_`` are not finite, non-negative numbers summing to 1 (within
      float64 rounding);
    - for a :class:`~sk_entmax.conformal.SparseConformalClassifier` stored around the model:
      its parameters are not exactly its four besides ``estimator``, or not values ``fit``
      accepts; ``classes_`` or ``n_features_in_`` are not the model's; ``mapping_alpha_`` is
      not the alpha ``mapping_alpha`` gives; the calibration is partial; or it is not what
      ``conformalize`` computes: ``confidence_levels_`` not the parameter's levels, the
      scores not finite and non-negative, a count not an int from 0 to the number of
      scores or the counts not summing to it (checked in Python ints before any
      arithmetic), a row's class (``conformity_classes_``) not an index of ``classes_`` or
      the per-class counts not those of the classes, a quantile not the one
      ``conformalize`` computes from the stored scores and classes (every one recomputed;
      in a class-conditional file saved before the classes were stored, a quantile not
      one of the stored scores, or infinite other than exactly when its class had too few
      rows: such a file otherwise loads fitted but not conformalized, with a
      ``UserWarning``, as its quantiles cannot be recomputed), the temperatures not
      ``(alpha - 1) * nextafter(q_hat, inf)``; an error numpy raises on a case not
      foreseen is reported as such;
    - then, the stored tensors read: a stored weight is NaN or infinite, a batch norm's
      running variance is negative, or ``alpha_`` or
      ``mask_alpha_`` is not the alpha the stored network computes (its fixed alpha, or a
      learned one computed from its stored tensor), within float32 rounding (a relative
      1e-5: a learned alpha may have been computed on another device).

    So what a file makes ``load`` allocate before it is refused, or before the network is
    built, is the header parsed (the JSON's values as Python objects, the tensors' names and
    shapes), a skeleton with no more modules and (meta) tensors than the file has tensors,
    and, once every check but the last has passed, the stored tensors; the network then
    built holds exactly the stored tensors.

    Parameters
    ----------
    path : str or os.PathLike
        A file written by :func:`save`.
    device : str, default="cpu"
        Where the network goes: "cpu", "cuda", "cuda:N" or "auto" (CUDA when available),
        whatever device the model was trained on. The estimator's ``device`` parameter is
        restored as it was saved; it only matters for a later ``fit``.

    Returns
    -------
    estimator
        The fitted estimator (or Pipeline, or ColumnTransformer), predicting exactly as the
        saved one (a
        ``SparseConformalClassifier`` around it when one was saved: its ``estimator`` is
        None, the model itself with ``prefit=True``, or an unfitted clone of the model).

    Raises
    ------
    ValueError
        If the file is not a valid model file, as listed above; the message says why.
    OSError
        If the file cannot be read (``IsADirectoryError`` for a directory).

    Notes
    -----
    The skeleton is built on the meta device and draws no random numbers; the network is
    then initialised as ``fit`` initialises one (its initial weights, overwritten by the
    stored ones, leave torch's global generator as ``load`` found it): a load running next to
    fits in other threads changes neither their results nor the caller's seeded random
    numbers.
    """
    from sk_entmax.persistence._composite import assemble, read_pipeline

    device = resolve_device(device)
    st = _safetensors()
    name = os.fspath(path)
    if os.path.isdir(name):  # (safetensors would say "No such device")
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a model file", name)
    try:
        _check_header_bytes(name)
        with st.safe_open(name, framework="pt", device="cpu") as handle:
            metadata = handle.metadata() or {}
            if _METADATA_KEY not in metadata:
                raise ValueError(f"{name!r} was not written by sk_entmax.persistence.save")
            stored = _stored_tensors(handle)
            header = _parse_header(metadata[_METADATA_KEY])
            if "pipeline" in header:  # a Pipeline or ColumnTransformer (format version 2)
                pipeline, entries = read_pipeline(header, stored)
                models = [
                    _read_model(handle, entry, part, prefix) for entry, part, prefix in entries
                ]
            else:
                pipeline, models = None, [_read_model(handle, header, stored, "")]
    except _Invalid as error:
        raise ValueError(f"cannot load {name!r}: {error}") from None
    except (KeyError, TypeError, AttributeError, IndexError) as error:  # a case not foreseen
        raise ValueError(
            f"cannot load {name!r}: the header is malformed ({type(error).__name__}: {error})"
        ) from None
    except st.SafetensorError as error:
        raise ValueError(f"cannot load {name!r}: not a safetensors file ({error})") from None
    built = [_build(model, name, device) for model in models]
    if pipeline is None:
        return built[0]
    try:
        return assemble(pipeline, built)
    except _Invalid as error:
        raise ValueError(f"cannot load {name!r}: {error}") from None


def _read_model(handle: Any, header: dict[str, Any], stored: dict[str, tuple], prefix: str):
    """One model entry of the file checked, and its tensors (stored under ``prefix``) read
    and checked: what :func:`_build` builds the estimator from."""
    checked = _check_header(header, stored)
    estimator, module_cls, kwargs, source, fitted, history, skeleton = checked
    try:
        conformal = _check_conformal(header.get("conformal"), header["estimator"], fitted)
    except (ValueError, OverflowError, MemoryError) as error:  # numpy's, on a case not foreseen
        raise _Invalid(
            f"the conformal entry is malformed ({type(error).__name__}: {error})"
        ) from None
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
        state = {key: tensors[src] for key, src in source.items()}
        skeleton.load_state_dict(state, assign=True)
    _check_network(type(estimator)._fitted_schema, fitted, skeleton)
    return header, estimator, module_cls, kwargs, source, fitted, history, tensors, conformal


def _build(model: tuple, name: str, device: str) -> Any:
    """The fitted estimator of a checked model entry (see :func:`_read_model`)."""
    header, estimator, module_cls, kwargs, source, fitted, history, tensors, conformal = model
    spec = header["net"]
    # initialised under fit's lock: the draws (overwritten below) never interleave with a
    # fit's seeded ones in another thread, and the global generator is left as found
    net = estimator._net_for(module_cls, kwargs, batch_size=spec["batch_size"], device=device)
    state = net.module_.state_dict()
    for key, src in source.items():
        if state[key].dtype != tensors[src].dtype:  # load_state_dict would cast it
            raise ValueError(
                f"cannot load {name!r}: tensor {key} is stored as "
                f"{_dtype_name(tensors[src].dtype)}; the network {type(estimator).__name__} "
                f"builds holds {_dtype_name(state[key].dtype)} (nothing is cast)"
            )
    net.module_.load_state_dict({key: tensors[src] for key, src in source.items()})
    net.module_.eval()
    net.history = History(history)
    for key, value in fitted.items():
        setattr(estimator, key, value)
    estimator.net_ = net
    return estimator if conformal is None else conformal.around(estimator)


def _check_header(header: dict[str, Any], stored: dict[str, tuple]) -> tuple:
    """Everything :func:`load` checks before it reads a tensor or builds anything."""
    estimators, modules = _estimator_classes(), _module_classes()
    spec = header["net"]
    name, module_name = header["estimator"], spec["module"]
    if not isinstance(name, str) or name not in estimators:
        raise _Invalid(f"the file names an unknown estimator {name!r}")
    cls, trains = estimators[name]
    if module_name != trains:
        raise _Invalid(f"the file names the network {module_name!r}; {name} trains a {trains}")
    module_cls = modules[trains]
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
    source = _match_tensors(expected, stored, aliases, trains)
    estimator = cls(**_check_params(cls, header["params"]))
    try:  # each value against its constraint, as fit checks it
        estimator._checked(*estimator._constraints)
    except ValueError as error:
        raise _Invalid(str(error)) from None
    fitted = _check_fitted(name, cls._fitted_schema, header["fitted"], kwargs)
    if "classes_" in cls._fitted_schema:  # a classifier: its classes against the outputs
        _check_outputs(fitted, kwargs)
    history = _check_history(_decode(spec["history"], "history"))
    return estimator, module_cls, kwargs, source, fitted, history, skeleton
