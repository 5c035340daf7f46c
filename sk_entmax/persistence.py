"""Save and load fitted estimators without running any code on load.

``pickle`` and ``joblib`` work on every estimator here, but unpickling runs whatever code the
file names, so a pickle from an untrusted source is unsafe to open. :func:`save` writes a
single `safetensors <https://huggingface.co/docs/safetensors>`_ file instead: the network's
weights as plain tensors, and in the file's text metadata a JSON document with the
estimator's class name, its parameters and its fitted attributes (``classes_``,
``n_features_in_``, TabNet's categories, ...). :func:`load` reads JSON and raw tensor bytes
only; the only classes it instantiates are the estimators and networks of this package,
looked up by name in a fixed table, so nothing in the file can make it run code.

Why safetensors and not skops: skops also avoids pickle's code execution, but it still
reconstructs arbitrary Python objects, so the user has to review and trust a list of types
for each file (``skops.io.get_untrusted_types``). Our estimators' state is a few arrays, a few
scalars and the torch weights: JSON holds the former exactly and safetensors, the format
PyTorch models are shared in, holds the latter, so a fixed format with nothing to review is
simpler and leaves nothing to trust. An attribute that JSON cannot hold (a ``RandomState``
as ``random_state``, a category of an unsupported type) is refused at save time with an
error that names it, never written in a form that needs code to read.

The file keeps no device: tensors are stored on the CPU and :func:`load` puts them on the
``device`` it is given, so a model trained on a GPU loads on a CPU-only machine. The
optimizer state is not stored: a loaded estimator predicts, explains and scores exactly as
the saved one; calling ``fit`` on it trains a new network from scratch, as ``fit`` always
does.

Examples
--------
>>> import tempfile, os
>>> from sklearn.datasets import load_iris
>>> from sk_entmax import SparsemaxClassifier
>>> from sk_entmax.persistence import load, save
>>> X, y = load_iris(return_X_y=True)
>>> clf = SparsemaxClassifier(max_epochs=5, random_state=0).fit(X, y)
>>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
>>> save(clf, path)
>>> restored = load(path)
>>> bool((restored.predict_proba(X) == clf.predict_proba(X)).all())
True
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np
import torch
from sklearn.preprocessing import OrdinalEncoder
from sklearn.utils.validation import check_is_fitted
from skorch.history import History

from sk_entmax._base import BaseEntmaxClassifier, resolve_device
from sk_entmax._version import __version__

__all__ = ["FORMAT_VERSION", "load", "save"]

#: version of the file layout; :func:`load` refuses files written in a newer one
FORMAT_VERSION = 1
_METADATA_KEY = "sk_entmax"


def _estimator_classes() -> dict[str, type]:
    from sk_entmax._linear import EntmaxClassifier, SparsemaxClassifier
    from sk_entmax._tabnet import TabNetEntmaxClassifier

    return {
        cls.__name__: cls
        for cls in (EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier)
    }


def _module_classes() -> dict[str, type]:
    from sk_entmax.nn.linear import EntmaxLinearNet
    from sk_entmax.nn.tabnet import TabNetClassifierNet

    return {cls.__name__: cls for cls in (EntmaxLinearNet, TabNetClassifierNet)}


def _safetensors():
    try:
        import safetensors
        import safetensors.torch
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            'sk_entmax.persistence needs the safetensors package: pip install "sk-entmax[safe]"'
        ) from error
    return safetensors


# --------------------------------------------------------------------------- JSON encoding


class _Unserializable(TypeError):
    pass


_ARRAY_KINDS = "biufUO"


def _encode(value: Any, where: str) -> Any:
    """A JSON-able form of ``value``; tagged dicts keep types JSON would lose."""
    if isinstance(value, np.generic):
        if value.dtype.kind not in "biuf":
            raise _Unserializable(f"{where}: a numpy scalar of dtype {value.dtype}")
        return {"__scalar__": value.dtype.str, "value": _encode(value.item(), where)}
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, np.dtype):
        return {"__dtype__": value.str}
    if isinstance(value, type) and issubclass(value, np.generic):
        return {"__dtype__": np.dtype(value).str, "type": True}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _ARRAY_KINDS:
            raise _Unserializable(f"{where}: an array of dtype {value.dtype}")
        values = [_encode(v, f"{where}[{i}]") for i, v in enumerate(value.ravel().tolist())]
        if value.dtype.kind == "O":
            for i, v in enumerate(values):
                if not (v is None or isinstance(v, (bool, int, float, str, dict))):
                    raise _Unserializable(f"{where}[{i}]: {type(value.ravel()[i]).__name__}")
        return {"__ndarray__": value.dtype.str, "shape": list(value.shape), "values": values}
    if isinstance(value, (list, tuple)):
        items = [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return {"__tuple__": items} if isinstance(value, tuple) else items
    if isinstance(value, dict):
        return {
            "__dict__": [
                [_encode(k, where), _encode(v, f"{where}[{k!r}]")] for k, v in value.items()
            ]
        }
    if isinstance(value, OrdinalEncoder):
        params = {k: _encode(v, f"{where}.{k}") for k, v in value.get_params().items()}
        return {
            "__ordinal_encoder__": params,
            "categories_": _encode(list(value.categories_), f"{where}.categories_"),
        }
    raise _Unserializable(f"{where}: an object of type {type(value).__name__}")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__float__" in value:
        return float(value["__float__"])
    if "__scalar__" in value:
        return np.dtype(value["__scalar__"]).type(_decode(value["value"]))
    if "__dtype__" in value:
        dtype = np.dtype(value["__dtype__"])
        return dtype.type if value.get("type") else dtype
    if "__ndarray__" in value:
        dtype = np.dtype(value["__ndarray__"])
        values = [_decode(v) for v in value["values"]]
        out = np.empty(len(values), dtype=dtype)
        if dtype.kind == "O":
            for i, v in enumerate(values):  # element by element: no nesting guesses
                out[i] = v
        else:
            out[:] = values
        return out.reshape(value["shape"])
    if "__tuple__" in value:
        return tuple(_decode(v) for v in value["__tuple__"])
    if "__dict__" in value:
        return {_decode(k): _decode(v) for k, v in value["__dict__"]}
    if "__ordinal_encoder__" in value:
        return _rebuild_ordinal_encoder(
            {k: _decode(v) for k, v in value["__ordinal_encoder__"].items()},
            _decode(value["categories_"]),
        )
    raise ValueError(f"unknown entry in the saved model: {sorted(value)}")


def _same_categories(a: np.ndarray, b: np.ndarray) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        nan_x = isinstance(x, float) and math.isnan(x)
        nan_y = isinstance(y, float) and math.isnan(y)
        if nan_x != nan_y or (not nan_x and x != y):
            return False
    return True


def _rebuild_ordinal_encoder(params: dict[str, Any], categories: list) -> OrdinalEncoder:
    """Fit an encoder that has exactly the saved categories (fitting sorts and dedups them,
    and the saved lists are already sorted and unique)."""
    if not categories:
        raise ValueError("the saved OrdinalEncoder has no categories")
    longest = max(len(c) for c in categories)
    columns = [np.resize(np.asarray(c, dtype=object), longest) for c in categories]
    data = np.empty((longest, len(columns)), dtype=object)
    for j, column in enumerate(columns):
        data[:, j] = column
    encoder = OrdinalEncoder(**params).fit(data)
    for saved, got in zip(categories, encoder.categories_, strict=True):
        if not _same_categories(np.asarray(saved, dtype=object), np.asarray(got, dtype=object)):
            raise ValueError("the saved categories do not rebuild the same OrdinalEncoder")
    encoder.categories_ = [np.asarray(c) for c in categories]
    return encoder


# --------------------------------------------------------------------------- save / load


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
    estimator : EntmaxClassifier, SparsemaxClassifier or TabNetEntmaxClassifier
        A fitted estimator of this package (not a subclass: :func:`load` only builds the
        classes it knows).
    path : str or os.PathLike
        The file to write (conventionally ``*.safetensors``); overwritten if it exists.

    Raises
    ------
    TypeError
        If ``estimator`` is not one of the package's estimators, or a parameter or fitted
        attribute cannot be stored as data (e.g. ``random_state`` holding a
        ``RandomState``); the message names it.
    sklearn.exceptions.NotFittedError
        If ``estimator`` is not fitted.
    """
    classes = _estimator_classes()
    name = type(estimator).__name__
    if classes.get(name) is not type(estimator):
        raise TypeError(
            f"save takes a fitted {', '.join(classes)}; got {name}. Use pickle or joblib "
            "for other objects (a pipeline, a subclass)"
        )
    check_is_fitted(estimator)
    net = estimator.net_
    module_name = type(net.module_).__name__
    if _module_classes().get(module_name) is not type(net.module_):
        raise TypeError(f"save cannot store a network of type {module_name}")
    params = estimator.get_params(deep=False)
    fitted = {k: v for k, v in vars(estimator).items() if k not in params and k != "net_"}
    module_kwargs = {
        k[len("module__") :]: v for k, v in net.get_params().items() if k.startswith("module__")
    }
    history = [{k: v for k, v in epoch.items() if k != "batches"} for epoch in net.history]
    try:
        header = {
            "format_version": FORMAT_VERSION,
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
    tensors, aliases = _state_tensors(net.module_)
    header["net"]["aliases"] = aliases
    metadata = {_METADATA_KEY: json.dumps(header, allow_nan=False)}
    _safetensors().torch.save_file(tensors, os.fspath(path), metadata=metadata)


def load(path: str | os.PathLike, device: str = "cpu") -> BaseEntmaxClassifier:
    """Read an estimator written by :func:`save`; reads data only and runs no code from it.

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
        The fitted estimator, predicting exactly as the saved one.

    Raises
    ------
    ValueError
        If the file was not written by :func:`save`, by a newer format, or names a class
        this package does not have.
    """
    device = resolve_device(device)
    st = _safetensors()
    with st.safe_open(os.fspath(path), framework="pt", device="cpu") as handle:
        metadata = handle.metadata() or {}
        if _METADATA_KEY not in metadata:
            raise ValueError(f"{os.fspath(path)!r} was not written by sk_entmax.persistence.save")
        tensors = {key: handle.get_tensor(key) for key in handle.keys()}
    header = json.loads(metadata[_METADATA_KEY])
    version = header.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ValueError(
            f"the file has format version {version!r}; this sk_entmax ({__version__}) reads "
            f"versions up to {FORMAT_VERSION}"
        )
    cls = _estimator_classes().get(header.get("estimator"))
    module_cls = _module_classes().get(header["net"].get("module"))
    if cls is None or module_cls is None:
        raise ValueError(
            f"the file names an unknown estimator or network: {header.get('estimator')!r}, "
            f"{header['net'].get('module')!r}"
        )
    estimator = cls(**{k: _decode(v) for k, v in header["params"].items()})
    for key, value in header["fitted"].items():
        setattr(estimator, key, _decode(value))
    spec = header["net"]
    net = estimator._make_net(
        module_cls, _decode(spec["module_kwargs"]), batch_size=spec["batch_size"], device=device
    )
    with torch.random.fork_rng(devices=[]):  # the initial weights are overwritten below
        net.initialize()
    state = {name: tensors[spec["aliases"].get(name, name)] for name in net.module_.state_dict()}
    net.module_.load_state_dict(state)
    net.module_.eval()
    net.history = History(_decode(spec["history"]))
    estimator.net_ = net
    return estimator
