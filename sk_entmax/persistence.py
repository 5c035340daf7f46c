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

A hostile file cannot make :func:`load` build more than the file holds either: before
anything is built it checks the whole header (see :func:`load` for the list) against the
tensors' names, shapes and dtypes, which safetensors reads without reading the tensors.
Every stored tensor must be named as one of the network's can be, every size in the header
must be held by the stored tensors it sizes, and the network the header describes is first
built as a skeleton on PyTorch's meta device (shapes, no memory), stopped as soon as it has
more tensors than the file, and compared with the stored tensors. Whatever is wrong, the
error is a ``ValueError`` that says why. :func:`save` writes only to a regular file or a new
path, whole or not at all.

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

import contextlib
import errno
import itertools
import json
import math
import numbers
import os
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
from sklearn.preprocessing import OrdinalEncoder
from sklearn.utils.validation import check_is_fitted
from skorch.history import History
from torch.overrides import TorchFunctionMode

from sk_entmax._classifier import BaseEntmaxClassifier
from sk_entmax._device import resolve_device
from sk_entmax._files import new_temporary_file
from sk_entmax._tabular import categorical_encoder, encoder_with_categories, same_categories
from sk_entmax._version import __version__
from sk_entmax.entmax._checks import ALPHA
from sk_entmax.entmax._checks import check as check_value

__all__ = ["FORMAT_VERSION", "load", "save"]

#: version of the file layout; :func:`load` reads versions 1 to this one
FORMAT_VERSION = 1
_METADATA_KEY = "sk_entmax"


def _estimator_classes() -> dict[str, tuple[type, str]]:
    """Each estimator class by name, with the name of the network class it trains."""
    from sk_entmax._linear import EntmaxClassifier, SparsemaxClassifier
    from sk_entmax._tabnet import TabNetEntmaxClassifier

    return {
        "EntmaxClassifier": (EntmaxClassifier, "EntmaxLinearNet"),
        "SparsemaxClassifier": (SparsemaxClassifier, "EntmaxLinearNet"),
        "TabNetEntmaxClassifier": (TabNetEntmaxClassifier, "TabNetClassifierNet"),
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
            "sk_entmax.persistence needs the safetensors package, a dependency of sk_entmax: "
            "pip install safetensors"
        ) from error
    return safetensors


class _Invalid(Exception):
    """Why a file is not a valid model file; :func:`load` raises it as a ValueError."""


# --------------------------------------------------------------------------- fitted attributes


@dataclass(frozen=True)
class _Attribute:
    """How :func:`load` checks one fitted attribute.

    ``check(value, sizes, fitted)`` returns the value to set or raises :class:`_Invalid`;
    ``sizes`` are the network's keyword arguments (already checked against the stored
    tensors), ``fitted`` the attributes checked before this one. ``required`` is True, False
    (optional), or the name of a boolean attribute listed earlier: this one must be present
    when that one is True and absent when it is False.
    """

    check: Callable[[Any, Mapping[str, Any], Mapping[str, Any]], Any]
    required: bool | str = True


#: how far a sum of fractions (feature_importances_) may be from 1: float64 rounding
_SUM_RTOL = 1e-6
#: how far ``alpha_`` and ``mask_alpha_`` may be from the alphas of the stored network: a
#: learned alpha is float32 arithmetic, perhaps done on another device when it was fitted
_ALPHA_RTOL = 1e-5


def _size(sizes: Mapping[str, Any], entry: int | str | None) -> int | None:
    return sizes[entry] if isinstance(entry, str) else entry


def _integer(low: int = 0, *, equals: str | None = None) -> _Attribute:
    def check(value, sizes, fitted):
        if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
            raise _Invalid(f"an int is expected, got {value!r}")
        if value < low:
            raise _Invalid(f"{value} is below {low}")
        if equals is not None and value != sizes[equals]:
            raise _Invalid(f"{value} does not match the network's {equals} = {sizes[equals]}")
        return int(value)

    return _Attribute(check)


def _boolean() -> _Attribute:
    def check(value, sizes, fitted):
        if not isinstance(value, (bool, np.bool_)):
            raise _Invalid(f"True or False is expected, got {value!r}")
        return bool(value)

    return _Attribute(check)


def _real(low: float, high: float = math.inf) -> _Attribute:
    def check(value, sizes, fitted):
        if (
            not isinstance(value, numbers.Real)
            or isinstance(value, (bool, np.bool_))
            or not math.isfinite(value)
            or not low <= value <= high
        ):
            raise _Invalid(f"a finite number in [{low}, {high}] is expected, got {value!r}")
        return float(value)

    return _Attribute(check)


def _array(
    kinds: str,
    shape: tuple[int | str | None, ...],
    *,
    low: float | None = None,
    high: float | None = None,
    equals: str | None = None,
    unique: bool = False,
    strings: bool = False,
    total: float | None = None,
    required: bool | str = True,
) -> _Attribute:
    """An ndarray of a dtype kind in ``kinds`` whose shape matches ``shape``, each entry an
    int, the name of a network argument, or None (any length); with ``total``, its values
    sum to that (within float64 rounding)."""

    def check(value, sizes, fitted):
        if not isinstance(value, np.ndarray):
            raise _Invalid(f"an array is expected, got {type(value).__name__}")
        if value.dtype.kind not in kinds:
            raise _Invalid(f"dtype {value.dtype} is not allowed here")
        want = tuple(_size(sizes, entry) for entry in shape)
        if value.ndim != len(want) or any(
            w is not None and n != w for n, w in zip(value.shape, want, strict=True)
        ):
            shown = tuple("any" if w is None else w for w in want)
            raise _Invalid(f"shape {value.shape} does not match the network's {shown}")
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            raise _Invalid("it holds values that are not finite")
        if low is not None and value.size and value.min() < low:
            raise _Invalid(f"it holds values below {low}")
        if high is not None and value.size and value.max() > high:
            raise _Invalid(f"it holds values above {high}")
        if strings and not all(isinstance(v, str) for v in value.ravel().tolist()):
            raise _Invalid("it holds entries that are not strings")
        if unique and len(set(value.ravel().tolist())) != value.size:
            raise _Invalid("it repeats a value")
        if equals is not None and value.tolist() != list(sizes[equals]):
            raise _Invalid(f"it does not match the network's {equals} = {sizes[equals]}")
        if total is not None and not math.isclose(
            float(value.sum()), total, rel_tol=_SUM_RTOL, abs_tol=_SUM_RTOL
        ):
            raise _Invalid(f"it sums to {float(value.sum())!r}, not {total!r}")
        return value

    return _Attribute(check, required)


def _dtype_of(kinds: str, *, required: bool | str = True) -> _Attribute:
    def check(value, sizes, fitted):
        if not isinstance(value, np.dtype) or value.kind not in kinds:
            raise _Invalid(f"a plain numeric or object dtype is expected, got {value!r}")
        return value

    return _Attribute(check, required)


def _categories() -> _Attribute:
    """TabNet's categories: one 1-d array per categorical column, one code per category
    plus the reserved "unknown" code in the network's embedding."""

    def check(value, sizes, fitted):
        dims = list(sizes.get("cat_dims", ()))
        if not isinstance(value, list) or len(value) != len(dims):
            raise _Invalid(f"a list of {len(dims)} arrays (one per categorical column) expected")
        for i, (column, dim) in enumerate(zip(value, dims, strict=True)):
            if not isinstance(column, np.ndarray) or column.ndim != 1:
                raise _Invalid(f"entry {i} is not a 1-d array")
            if column.dtype.kind not in "biufUO":
                raise _Invalid(f"entry {i} has dtype {column.dtype}")
            if len(column) + 1 != dim:
                raise _Invalid(
                    f"entry {i} holds {len(column)} categories; the network embeds {dim - 1}"
                )
        return value

    return _Attribute(check)


class _SavedEncoder(NamedTuple):
    params: dict[str, Any]
    categories: list


# TabNet's category encoder: its settings and how it is rebuilt are _tabular's (the unknown
# and missing codes are -1, which become the reserved code 0); an encoder saved with other
# settings is refused rather than rebuilt.
def _encoder() -> _Attribute:
    def check(value, sizes, fitted):
        categories = fitted["categories_"]
        if value is None:
            if categories:
                raise _Invalid("missing although the model has categorical columns")
            return None
        if not isinstance(value, _SavedEncoder) or not categories:
            raise _Invalid("an OrdinalEncoder of the categorical columns is expected")
        params = dict(value.params)
        dtype = params.pop("dtype", None)
        expected = categorical_encoder().get_params()
        del expected["dtype"]
        if dtype not in (np.float32, np.float64) or any(
            type(params.get(k)) is not type(v) or params.get(k) != v for k, v in expected.items()
        ):
            raise _Invalid(f"settings {value.params!r} are not the ones TabNet encodes with")
        if set(params) != set(expected):
            raise _Invalid(f"unknown settings {sorted(set(params) - set(expected))}")
        if len(value.categories) != len(categories) or not all(
            isinstance(a, np.ndarray) and same_categories(a, b)
            for a, b in zip(value.categories, categories, strict=True)
        ):
            raise _Invalid("its categories are not categories_")
        try:
            return encoder_with_categories(categories, dtype=dtype)
        except (TypeError, ValueError) as error:
            raise _Invalid(f"its categories cannot be encoded: {error}") from None

    return _Attribute(check)


def _missing_features() -> _Attribute:
    """TabNet's numeric columns with a missing indicator: the network's ``missing_idxs``
    (optional: a file written before missing indicators existed has neither)."""

    def check(value, sizes, fitted):
        if not isinstance(value, np.ndarray) or value.ndim != 1:
            raise _Invalid("a 1-d array of column names or indices is expected")
        if value.dtype.kind in "iu":
            indices = value.tolist()
        elif value.dtype == object and "feature_names_in_" in fitted:
            position = {name: i for i, name in enumerate(fitted["feature_names_in_"].tolist())}
            if not all(isinstance(v, str) and v in position for v in value.tolist()):
                raise _Invalid("it names columns that are not in feature_names_in_")
            indices = [position[v] for v in value.tolist()]
        else:
            raise _Invalid(
                "a 1-d array of column indices, or of names where feature_names_in_ is "
                "stored, is expected"
            )
        if indices != list(sizes.get("missing_idxs", ())):
            raise _Invalid(
                f"it does not match the network's missing_idxs = {sizes.get('missing_idxs')}"
            )
        return value

    return _Attribute(check, required=False)


# The fitted attributes load accepts, per estimator class (by name), each with its check, in
# the order they are checked; a file holding anything else is refused, and save refuses to
# write a fitted attribute (a name ending in "_") that is not listed here. Shapes and
# "equals" name the network's keyword arguments (n_features, n_outputs, n_steps, cat_idxs,
# ...), which load has checked against the stored tensors before. To accept a new attribute,
# add one line, e.g. "coef_": _array("f", ("n_outputs", "n_features")).
_COMMON_FITTED: dict[str, _Attribute] = {
    "n_features_in_": _integer(1, equals="n_features"),
    "feature_names_in_": _array("O", ("n_features",), strings=True, unique=True, required=False),
    # one per network output, or one fewer: the multi-label "no label" output (the
    # temperature below is stored exactly then; _check_outputs checks the two together)
    "classes_": _array("biufUO", (None,), unique=True),
    "multilabel_": _boolean(),
    "_y_dtype": _dtype_of("biufO", required="multilabel_"),
    "n_iter_": _integer(0),
    "alpha_": _real(1.0),
    "support_temperature_": _Attribute(_real(1e-300).check, required=False),
}
_LINEAR_FITTED: dict[str, _Attribute] = {**_COMMON_FITTED}
_TABNET_FITTED: dict[str, _Attribute] = {
    **_COMMON_FITTED,
    "categorical_features_": _array("iu", (None,), equals="cat_idxs"),
    "categories_": _categories(),
    "_encoder": _encoder(),
    "missing_features_": _missing_features(),
    "mask_alpha_": _array("f", ("n_steps",), low=1.0, high=2.0),
    "feature_importances_": _array("f", ("n_features",), low=0.0, total=1.0),
}
_FITTED: dict[str, dict[str, _Attribute]] = {
    "EntmaxClassifier": _LINEAR_FITTED,
    "SparsemaxClassifier": _LINEAR_FITTED,
    "TabNetEntmaxClassifier": _TABNET_FITTED,
}


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


# Decoding takes nothing on trust: every tagged value has its exact keys, every dtype is a
# plain numeric, string or object dtype, every array is as long as its values and no wider
# than they need, and nesting is bounded (the saved values are at most a few levels deep).
_MAX_DEPTH = 16
#: a string array may be declared wider than its longest value (numpy keeps the width of
#: the data it came from), by up to this many characters
_STRING_SLACK = 1024
_MAX_NDIM = 8
_TAGS = {
    "__float__": ({"__float__"}, set()),
    "__scalar__": ({"__scalar__", "value"}, set()),
    "__dtype__": ({"__dtype__"}, {"type"}),
    "__ndarray__": ({"__ndarray__", "shape", "values"}, set()),
    "__tuple__": ({"__tuple__"}, set()),
    "__dict__": ({"__dict__"}, set()),
    "__ordinal_encoder__": ({"__ordinal_encoder__", "categories_"}, set()),
}
_PLAIN = (type(None), bool, int, float, str)


def _plain_dtype(text: Any, kinds: str, where: str) -> np.dtype:
    if not isinstance(text, str):
        raise _Invalid(f"{where}: {text!r} is not a dtype")
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError, OverflowError):
        raise _Invalid(f"{where}: {text!r} is not a dtype") from None
    if (
        dtype.kind not in kinds
        or dtype.fields is not None
        or dtype.subdtype is not None
        or dtype.metadata
    ):
        raise _Invalid(f"{where}: dtype {text!r} is not allowed here")
    return dtype


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _array_from(dtype: np.dtype, shape: Any, values: Any, where: str) -> np.ndarray:
    if (
        not isinstance(shape, list)
        or len(shape) > _MAX_NDIM
        or not all(_is_int(n) and n >= 0 for n in shape)
    ):
        raise _Invalid(f"{where}: {shape!r} is not an array shape")
    if not isinstance(values, list) or math.prod(shape) != len(values):
        raise _Invalid(f"{where}: the values do not fill shape {tuple(shape)}")
    kind = dtype.kind
    allowed = {
        "b": lambda v: isinstance(v, bool),
        "i": _is_int,
        "u": _is_int,
        "f": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "U": lambda v: isinstance(v, str),
        "O": lambda v: isinstance(v, _PLAIN),
    }[kind]
    bad = next((v for v in values if not allowed(v)), None)
    if bad is not None:
        raise _Invalid(f"{where}: {bad!r} cannot be an entry of an array of dtype {dtype}")
    if kind == "U":
        width = dtype.itemsize // 4
        longest = max((len(v) for v in values), default=0)
        if longest > width or width > longest + _STRING_SLACK:
            raise _Invalid(
                f"{where}: dtype {dtype.str} does not fit its values (the longest has "
                f"{longest} characters)"
            )
    out = np.empty(len(values), dtype=dtype)
    try:
        if kind == "O":
            for i, v in enumerate(values):  # element by element: no nesting guesses
                out[i] = v
        else:
            out[:] = values
    except (OverflowError, ValueError, TypeError) as error:
        raise _Invalid(f"{where}: the values do not fit dtype {dtype}: {error}") from None
    try:  # an empty array may still claim dimensions numpy cannot hold
        return out.reshape(shape)
    except ValueError as error:
        raise _Invalid(
            f"{where}: shape {tuple(shape)} is not one numpy can hold ({error})"
        ) from None


def _decode(value: Any, where: str, depth: int = 0) -> Any:
    """The value :func:`_encode` wrote, or :class:`_Invalid` saying what is wrong with it.

    Parameters
    ----------
    value : object
        A value read from the JSON header: a scalar, a list, or a tagged object.
    where : str
        Where the value is, for the messages.
    depth : int, default=0
        How deep ``value`` is nested, bounded by ``_MAX_DEPTH``.

    Returns
    -------
    decoded : object
        The decoded value (a saved encoder as a ``_SavedEncoder``).

    Raises
    ------
    _Invalid
        When ``value`` is not something :func:`_encode` writes.
    """
    if depth > _MAX_DEPTH:
        raise _Invalid(f"{where}: nested more than {_MAX_DEPTH} levels deep")
    if isinstance(value, list):
        return [_decode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value  # a JSON scalar: None, bool, int, float or str
    tags = [key for key in value if key in _TAGS]
    if len(tags) != 1:
        raise _Invalid(f"{where}: an entry of unknown form, with keys {sorted(value)[:5]}")
    [tag] = tags
    needed, optional = _TAGS[tag]
    if not needed <= set(value) <= needed | optional:
        raise _Invalid(f"{where}: a {tag} entry with keys {sorted(value)}")
    if tag == "__float__":
        return _decode_float(value, where)
    if tag == "__scalar__":
        return _decode_scalar(value, where, depth)
    if tag == "__dtype__":
        return _decode_dtype(value, where)
    if tag == "__ndarray__":
        return _decode_ndarray(value, where, depth)
    if tag == "__tuple__":
        return _decode_tuple(value, where, depth)
    if tag == "__dict__":
        return _decode_dict(value, where, depth)
    # __ordinal_encoder__: kept as data here; the "_encoder" check rebuilds it
    return _decode_encoder(value, where, depth)


# Each _decode_<tag> decodes a ``value`` whose keys _decode checked against _TAGS; ``where``
# and ``depth`` are _decode's, and each raises _Invalid for a value _encode does not write.


def _decode_float(value: dict, where: str) -> float:
    """A ``__float__`` entry: nan, inf or -inf (JSON has no literal for them), as a float."""
    text = value["__float__"]
    if text not in ("nan", "inf", "-inf"):
        raise _Invalid(f"{where}: {text!r} is not nan, inf or -inf")
    return float(text)


def _decode_scalar(value: dict, where: str, depth: int) -> np.generic:
    """A ``__scalar__`` entry: a number of a plain numeric dtype, as that dtype's scalar type."""
    dtype = _plain_dtype(value["__scalar__"], "biuf", where)
    number = _decode(value["value"], where, depth + 1)
    if not isinstance(number, (bool, int, float)):
        raise _Invalid(f"{where}: {number!r} is not a number")
    try:
        return dtype.type(number)
    except (OverflowError, ValueError, TypeError):
        raise _Invalid(f"{where}: {number!r} does not fit dtype {dtype}") from None


def _decode_dtype(value: dict, where: str) -> np.dtype | type:
    """A ``__dtype__`` entry: a plain dtype, or its scalar type when ``type`` is true."""
    dtype = _plain_dtype(value["__dtype__"], "biufO", where)
    as_type = value.get("type", False)
    if not isinstance(as_type, bool):
        raise _Invalid(f"{where}: 'type' must be true or false")
    return dtype.type if as_type else dtype


def _decode_ndarray(value: dict, where: str, depth: int) -> np.ndarray:
    """An ``__ndarray__`` entry: an array of a plain dtype, checked by :func:`_array_from`."""
    dtype = _plain_dtype(value["__ndarray__"], _ARRAY_KINDS, where)
    values = value["values"]
    if isinstance(values, list):
        values = [_decode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(values)]
    return _array_from(dtype, value["shape"], values, where)


def _decode_tuple(value: dict, where: str, depth: int) -> tuple:
    """A ``__tuple__`` entry: a list of items, decoded into a tuple."""
    items = value["__tuple__"]
    if not isinstance(items, list):
        raise _Invalid(f"{where}: a tuple must be a list of items")
    return tuple(_decode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(items))


def _decode_dict(value: dict, where: str, depth: int) -> dict:
    """A ``__dict__`` entry: a list of ``[key, value]`` pairs, keys plain values, decoded
    into a dict in their order."""
    pairs = value["__dict__"]
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise _Invalid(f"{where}: a dict must be a list of [key, value] pairs")
    out = {}
    for key, item in pairs:
        key = _decode(key, where, depth + 1)
        if not isinstance(key, (*_PLAIN, np.generic)):
            raise _Invalid(f"{where}: {key!r} cannot be a key")
        out[key] = _decode(item, f"{where}[{key!r}]", depth + 1)
    return out


def _decode_encoder(value: dict, where: str, depth: int) -> _SavedEncoder:
    """An ``__ordinal_encoder__`` entry, kept as data (its settings and categories) in a
    ``_SavedEncoder``: the ``"_encoder"`` check rebuilds the encoder."""
    params = value["__ordinal_encoder__"]
    if not isinstance(params, dict):
        raise _Invalid(f"{where}: the encoder's settings must be an object")
    decoded = {str(k): _decode(v, f"{where}.{k}", depth + 1) for k, v in params.items()}
    categories = _decode(value["categories_"], f"{where}.categories_", depth + 1)
    if not isinstance(categories, list):
        raise _Invalid(f"{where}: the encoder's categories must be a list")
    return _SavedEncoder(decoded, categories)


# --------------------------------------------------------------------------- network checks
#
# A network's size is in its arguments (n_d, n_steps, n_features, ...), its memory in the
# tensors they make. Before it builds anything, load checks both against what the file
# holds, from the tensors' names and shapes alone (safetensors reads them without reading the
# tensors):
#
# 1. names: every stored tensor (and alias) must be named as a tensor of a network of that
#    class can be (_NETWORKS[...].names): an extra tensor is refused before it can lend its
#    shape to a size;
# 2. arguments: each must be one the class takes, a plain value, and every int that sizes a
#    tensor at most what the stored tensors hold for it: the extent of an axis of the
#    non-empty tensors it sizes (n_d: the final layer's input width), or how many tensors it
#    makes (n_steps: one attention layer per step); so a size of N needs at least N stored
#    values, never an empty tensor of shape [N, 0];
# 3. skeleton: the network the arguments describe is built on PyTorch's meta device (shapes
#    only, no memory), and stopped as soon as it makes more tensors than the file holds
#    (stored ones and aliases, and _SKELETON_SLACK): its Python modules come with their
#    tensors, so the build is as small as the file, whatever the arguments multiply
#    (n_steps times n_independent);
# 4. the skeleton's tensors must be the stored ones, name for name, shape for shape.

_MAX_INT = 2**31 - 1
_TORCH_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
_WEIGHT_DTYPES = (torch.float32, torch.float64)
_LAYER_FACTORIES = frozenset({torch.empty, torch.zeros, torch.ones, torch.full, torch.tensor})
#: the skeleton may make this many tensors beyond the file's (stored and aliased), so that a
#: file that lacks a few is told which
_SKELETON_SLACK = 64
_INDEX = re.compile("[0-9]+")


def _form(name: str) -> str:
    """A tensor name with each index as ``<i>``: ``layers.2.weight`` -> ``layers.<i>.weight``."""
    return _INDEX.sub("<i>", name)


def _forms(*templates: str) -> frozenset[str]:
    """Every name form the templates stand for, each ``(a|b)`` in a template being either."""
    out: set[str] = set()
    for template in templates:
        parts = re.split(r"\(([^()]*)\)", template)  # literal, choices, literal, ...
        choices = [[p] if i % 2 == 0 else p.split("|") for i, p in enumerate(parts)]
        out.update("".join(pick) for pick in itertools.product(*choices))
    return frozenset(out)


@dataclass(frozen=True)
class _Extent:
    """How far the stored tensors of one name form (or of one name) let a network argument
    go.

    With ``axis``: the largest extent of that axis among the non-empty stored tensors of the
    form (an empty tensor holds nothing, whatever its shape says). Without: how many tensors
    of the form are stored, less ``less``. ``absent`` is the extent when the file stores no
    tensor of the form (an argument that then sizes nothing, such as ``cat_emb_dims``
    without categorical columns); None refuses every size.
    """

    form: str
    axis: int | None = None
    less: int = 0
    absent: int | None = None

    def of(self, shapes: Mapping[str, list[tuple[int, ...]]]) -> int:
        found = shapes.get(self.form, [])
        if not found and self.absent is not None:
            return self.absent
        if self.axis is None:
            return max(len(found) - self.less, 0)
        return max((s[self.axis] for s in found if len(s) > self.axis and math.prod(s)), default=0)

    def describe(self, shapes: Mapping[str, list[tuple[int, ...]]]) -> str:
        if self.axis is None:
            less = f" less {self.less}" if self.less else ""
            return f"the {len(shapes.get(self.form, []))} stored tensors {self.form}{less}"
        extent = self.of(shapes)
        if not extent:
            return f"0: the file stores no non-empty {self.form}"
        return f"{extent}, the extent of axis {self.axis} of the stored {self.form}"


@dataclass(frozen=True)
class _Argument:
    """One network argument: ``kind`` (int, ints, int or ints, real, reals or None, bool,
    str), and for ints what bounds each (``each``; None: any int up to 2**31 - 1) and the
    number of entries of a sequence (``length``)."""

    kind: str
    each: _Extent | None = None
    length: _Extent | None = None


@dataclass(frozen=True)
class _Network:
    """What load knows of a network class: the forms of its tensors' names, its arguments."""

    names: frozenset[str]
    arguments: dict[str, _Argument]


_REAL, _BOOL, _STR = _Argument("real"), _Argument("bool"), _Argument("str")
_BN = "(weight|bias|running_mean|running_var)"
_WIDTH = _Extent("tabnet.initial_bn.weight", axis=0)  # the post-embedding width
_EMBEDDINGS = _Extent("tabnet.embeddings.<i>.weight")
_NETWORKS: dict[str, _Network] = {
    "EntmaxLinearNet": _Network(
        names=_forms("layers.<i>.(weight|bias)", "head.alpha_map.alpha_raw"),
        arguments={
            "n_features": _Argument("int", _Extent("layers.0.weight", axis=1)),
            "n_outputs": _Argument("int", _Extent("layers.<i>.weight", axis=0)),
            "hidden_layer_sizes": _Argument(
                "ints",
                _Extent("layers.<i>.weight", axis=0),
                length=_Extent("layers.<i>.weight", less=1),
            ),
            "alpha": _REAL,
            "learn_alpha": _BOOL,
            "alpha_max": _Argument("real or None"),
        },
    ),
    "TabNetClassifierNet": _Network(
        names=_forms(
            f"tabnet.initial_bn.({_BN[1:-1]}|num_batches_tracked)",
            "tabnet.shared.<i>.weight",
            "tabnet.(initial_splitter|feature_transformers.<i>).layers.<i>.fc.weight",
            f"tabnet.(initial_splitter|feature_transformers.<i>).layers.<i>.bn.{_BN}",
            "tabnet.attentive_transformers.<i>.fc.weight",
            f"tabnet.attentive_transformers.<i>.bn.{_BN}",
            "tabnet.attentive_transformers.<i>.adaptive.alpha_raw",
            "tabnet.first_mask_logits",
            "tabnet.embeddings.<i>.weight",
            "tabnet.final_mapping.(weight|bias)",
        ),
        arguments={
            "lambda_sparse": _REAL,
            "alpha": _REAL,
            "n_features": _Argument("int", _WIDTH),
            "n_outputs": _Argument("int", _Extent("tabnet.final_mapping.weight", axis=0)),
            "n_d": _Argument("int", _Extent("tabnet.final_mapping.weight", axis=1)),
            "n_a": _Argument("int", _Extent("tabnet.attentive_transformers.<i>.fc.weight", 1)),
            "n_steps": _Argument("int", _Extent("tabnet.attentive_transformers.<i>.fc.weight")),
            "gamma": _REAL,
            # the shared and independent GLU layers: a batch norm each
            "n_independent": _Argument(
                "int", _Extent("tabnet.feature_transformers.0.layers.<i>.bn.weight")
            ),
            "n_shared": _Argument("int", _Extent("tabnet.shared.<i>.weight")),
            "virtual_batch_size": _Argument("int"),  # sizes no tensor
            "momentum": _REAL,
            "entmax_mode": _STR,
            "entmax_alpha": _REAL,
            "cat_idxs": _Argument("ints", _WIDTH, length=_EMBEDDINGS),
            "cat_dims": _Argument(
                "ints", _Extent("tabnet.embeddings.<i>.weight", axis=0), length=_EMBEDDINGS
            ),
            "cat_emb_dims": _Argument(
                "int or ints",
                _Extent("tabnet.embeddings.<i>.weight", axis=1, absent=_MAX_INT),
                length=_EMBEDDINGS,
            ),
            "missing_idxs": _Argument("ints", _WIDTH, length=_WIDTH),
            "missing_fill": _Argument("reals or None", length=_WIDTH),
            "faithful_masks": _BOOL,
        },
    ),
}


class _Skeleton(TorchFunctionMode):
    """Build a network's skeleton: every shape, no memory, at most ``limit`` tensors.

    Entered inside ``torch.device("meta")``, which puts every tensor the network makes on
    the meta device: it records shapes and dtypes and allocates nothing. torch.nn layers
    make their parameters and buffers with factory calls given ``device=None`` explicitly
    (their ``factory_kwargs``; :class:`~sk_entmax.nn.tabnet.GhostBatchNorm` does the same):
    each such call is one tensor of the network's state, and the build stops with
    :class:`_Invalid` at the first beyond ``limit``.
    """

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.made = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _LAYER_FACTORIES and "device" in kwargs and kwargs["device"] is None:
            self.made += 1
            if self.made > self.limit:
                raise _Invalid(
                    "the network arguments describe far more tensors than the file holds "
                    f"(stored and aliased, {self.limit - _SKELETON_SLACK}): the network is "
                    "not the one stored"
                )
            kwargs = {**kwargs, "device": "meta"}
        return func(*args, **kwargs)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _check_names(module_name: str, stored: Mapping[str, tuple], aliases: Any) -> None:
    """Every stored tensor and alias named as a tensor of a ``module_name`` can be."""
    if not isinstance(aliases, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()
    ):
        raise _Invalid("the tensor aliases are not a mapping of names to names")
    names = _NETWORKS[module_name].names

    def known(name: str) -> bool:
        return "<" not in name and _form(name) in names

    unknown = sorted(name for name in stored if not known(name))
    if unknown:
        raise _Invalid(
            f"the file holds {len(unknown)} tensor(s) no {module_name} has (not read): "
            f"{unknown[:5]}"
        )
    unknown = sorted({n for pair in aliases.items() for n in pair if not known(n)})
    if unknown:
        raise _Invalid(f"aliases name tensors no {module_name} has: {unknown[:5]}")


def _is_real(value: Any) -> bool:
    return (_is_int(value) and abs(value) <= _MAX_INT) or (
        isinstance(value, float) and math.isfinite(value)
    )


def _of_kind(kind: str, value: Any, items: list) -> bool:
    """Whether ``value`` (``items``: its entries, or itself) is of an argument ``kind``."""
    sequence = isinstance(value, (list, tuple))
    if kind == "int":
        return _is_int(value)
    if kind == "ints":
        return sequence and all(_is_int(v) for v in items)
    if kind == "int or ints":
        return all(_is_int(v) for v in items)
    if kind == "real":
        return _is_real(value)
    if kind == "real or None":
        return value is None or _is_real(value)
    if kind == "reals or None":
        return value is None or (sequence and all(_is_real(v) for v in items))
    return isinstance(value, {"bool": bool, "str": str}[kind])


def _check_arguments(module_name: str, kwargs: Any, stored: Mapping[str, tuple]) -> dict[str, Any]:
    """The network's keyword arguments: ones a ``module_name`` takes, each a plain value of
    its kind, every size within what the stored tensors hold for it."""
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise _Invalid("the network arguments are not a mapping of names to values")
    arguments = _NETWORKS[module_name].arguments
    unknown = sorted(set(kwargs) - set(arguments))
    if unknown:
        raise _Invalid(f"network arguments {unknown[:5]} are not ones a {module_name} takes")
    # by name form, by indexed name, and by the name with only its last index as <i> (the
    # GLU layers of the first feature transformer: feature_transformers.0.layers.<i>...)
    shapes: dict[str, list[tuple[int, ...]]] = {}
    for name, (shape, _) in stored.items():
        form = _form(name)
        indices = list(_INDEX.finditer(name))
        last = name
        if indices:
            last = f"{name[: indices[-1].start()]}<i>{name[indices[-1].end() :]}"
        for key in dict.fromkeys((form, name, last)):
            shapes.setdefault(key, []).append(shape)

    def bounded(name: str, value: int, extent: _Extent | None, what: str = "") -> None:
        limit = _MAX_INT if extent is None else min(extent.of(shapes), _MAX_INT)
        if abs(value) > limit:
            bound = "2**31 - 1" if extent is None else extent.describe(shapes)
            raise _Invalid(
                f"network argument {name}{what} = {value} exceeds {bound}: the network is "
                "not the one stored"
            )

    for name, value in kwargs.items():
        spec = arguments[name]
        sequence = isinstance(value, (list, tuple))
        items = list(value) if sequence else [value]
        if not _of_kind(spec.kind, value, items):
            raise _Invalid(f"network argument {name} = {value!r} is not {spec.kind}")
        if sequence and spec.length is not None and len(items) > spec.length.of(shapes):
            raise _Invalid(
                f"network argument {name} has {len(items)} entries, more than "
                f"{spec.length.describe(shapes)}: the network is not the one stored"
            )
        if spec.kind.startswith("int"):
            for i, item in enumerate(items):
                bounded(name, item, spec.each, f"[{i}]" if sequence else "")
    if "alpha" in kwargs:
        try:
            check_value("alpha", kwargs["alpha"], ALPHA)
        except ValueError as error:
            raise _Invalid(f"network argument {error}") from None
    return kwargs


def _skeleton(module_cls: type, kwargs: dict[str, Any], limit: int) -> torch.nn.Module:
    """The network ``kwargs`` build, on the meta device, with at most ``limit`` tensors."""
    try:
        with torch.device("meta"), _Skeleton(limit):
            return module_cls(**kwargs)
    except (TypeError, ValueError, RuntimeError, IndexError, OverflowError) as error:
        raise _Invalid(
            f"the network arguments do not build a {module_cls.__name__}: {error}"
        ) from None


def _match_tensors(
    expected: dict[str, tuple],
    stored: dict[str, tuple],
    aliases: Any,
    module_name: str,
) -> dict[str, str]:
    """Map each tensor of the network to the stored tensor it loads; refuse any mismatch."""
    if not isinstance(aliases, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()
    ):
        raise _Invalid("the tensor aliases are not a mapping of names to names")
    unknown = sorted(set(aliases) - set(expected))
    if unknown:
        raise _Invalid(f"aliases name tensors the network does not have: {unknown[:5]}")
    source = {name: aliases.get(name, name) for name in expected}
    needed = set(source.values())
    extra = sorted(set(stored) - needed)
    if extra:
        raise _Invalid(
            f"the file holds {len(extra)} tensor(s) the network does not have (not read): "
            f"{extra[:5]}"
        )
    missing = sorted(needed - set(stored))
    if missing:
        raise _Invalid(f"tensors of the network are missing from the file: {missing[:5]}")
    for name, (shape, dtype) in expected.items():
        stored_shape, stored_dtype = stored[source[name]]
        # weights may be float32 or float64 (a solver may train in either): the built network
        # takes the stored dtype, and load checks it again once built
        if stored_dtype != dtype and not (
            dtype.is_floating_point and stored_dtype in _WEIGHT_DTYPES
        ):
            raise _Invalid(
                f"tensor {name} is stored as {_dtype_name(stored_dtype)}; the network holds "
                f"{_dtype_name(dtype)} (nothing is cast)"
            )
        if stored_shape != shape:
            raise _Invalid(
                f"tensor {name} has shape {stored_shape} in the file but {shape} in the "
                f"{module_name} network the header describes"
            )
    return source


def _check_history(history: Any) -> list[dict[str, Any]]:
    if not isinstance(history, list) or not all(
        isinstance(epoch, dict)
        and all(isinstance(k, str) and isinstance(v, _PLAIN) for k, v in epoch.items())
        for epoch in history
    ):
        raise _Invalid("the training history is not a list of per-epoch records of numbers")
    return history


def _check_params(cls: type, params: Any) -> dict[str, Any]:
    """The estimator's parameters: exactly its get_params names, each a plain value."""
    if not isinstance(params, dict):
        raise _Invalid("the parameters are not a mapping of names to values")
    names = set(cls().get_params(deep=False))
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


def _check_fitted(estimator_name: str, fitted: Any, sizes: Mapping[str, Any]) -> dict[str, Any]:
    table = _FITTED[estimator_name]
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


# --------------------------------------------------------------------------- conformal wrapper

#: what a file stores of a SparseConformalClassifier's ``estimator`` parameter: None (the
#: default SparsemaxClassifier), the fitted model itself (``prefit=True``), or an unfitted
#: estimator, restored as a clone of the fitted one (the parameters it was fitted with)
_CONFORMAL_ESTIMATOR = ("default", "fitted", "template")
_CONFORMAL_PARAMS = {"confidence_level", "prefit", "mapping_alpha", "class_conditional"}
_CONFORMAL_KEYS = {"params", "estimator", "fitted"}
#: fitted attributes of the wrapper: after fit, and (all or none) after conformalize
_CONFORMAL_FITTED = ("classes_", "mapping_alpha_", "n_features_in_")
_CONFORMAL_CALIBRATED = (
    "confidence_levels_",
    "conformity_scores_",
    "n_conformalize_samples_",
    "quantiles_",
    "temperatures_",
    "temperature_",
)


def _conformal_entry(wrapper: Any) -> tuple[dict[str, Any], Any]:
    """The header entry of a fitted SparseConformalClassifier, and the model it wraps."""
    check_is_fitted(wrapper, "estimator_")
    inner = wrapper.estimator_
    classes = _estimator_classes()
    if classes.get(type(inner).__name__, (None,))[0] is not type(inner):
        raise TypeError(
            "save stores a SparseConformalClassifier around a fitted "
            f"{', '.join(classes)}; this one wraps a {type(inner).__name__}. Use pickle or "
            "joblib for it, where the file's source is trusted"
        )
    params = wrapper.get_params(deep=False)
    if params["estimator"] is None:
        kind = "default"
    elif params["estimator"] is inner:
        kind = "fitted"
    else:
        kind = "template"
    fitted = {}
    for key, value in vars(wrapper).items():
        if key == "estimator_" or not key.endswith("_") or key.startswith("_"):
            continue
        if key not in _CONFORMAL_FITTED + _CONFORMAL_CALIBRATED:
            raise TypeError(
                f"cannot save SparseConformalClassifier: its attribute {key} is not one of "
                "the fitted attributes load accepts; delete it before saving"
            )
        fitted[key] = value
    try:
        entry = {
            "params": {
                k: _encode(v, f"parameter {k}") for k, v in params.items() if k != "estimator"
            },
            "estimator": kind,
            "fitted": {k: _encode(v, f"fitted attribute {k}") for k, v in fitted.items()},
        }
    except _Unserializable as error:
        raise TypeError(
            f"cannot save SparseConformalClassifier safely: {error} cannot be stored as data"
        ) from None
    return entry, inner


@dataclass(frozen=True)
class _Conformal:
    """A checked conformal entry: what :func:`load` wraps around the loaded model."""

    params: dict[str, Any]
    kind: str
    fitted: dict[str, Any]

    def around(self, inner: Any) -> Any:
        from sklearn.base import clone

        from sk_entmax.conformal import SparseConformalClassifier

        estimator = {"default": None, "fitted": inner}.get(self.kind)
        if self.kind == "template":  # an unfitted estimator with the fitted one's parameters
            estimator = clone(inner)
        wrapper = SparseConformalClassifier(estimator, **self.params)
        wrapper.estimator_ = inner
        for key, value in self.fitted.items():
            setattr(wrapper, key, value)
        return wrapper


def _check_conformal(entry: Any, inner_name: str, inner: Mapping[str, Any]) -> _Conformal | None:
    """The conformal entry of a header, every value checked against the model it wraps and
    the calibration maths (the quantiles and temperatures recomputed where they can be)."""
    if entry is None:
        return None
    from sk_entmax.conformal import (
        SparseConformalClassifier,
    )

    if not isinstance(entry, dict):
        raise _Invalid("the conformal entry is not an object")
    _check_keys(entry, _CONFORMAL_KEYS, "the conformal entry")
    raw = entry["params"]
    if not isinstance(raw, dict) or set(raw) != _CONFORMAL_PARAMS:
        raise _Invalid(f"the conformal parameters must be exactly {sorted(_CONFORMAL_PARAMS)}")
    params = {k: _decode(v, f"conformal parameter {k}") for k, v in raw.items()}
    for key, value in params.items():
        plain = (*_PLAIN, np.floating)
        if not (
            isinstance(value, plain)
            or (isinstance(value, list) and all(isinstance(v, plain) for v in value))
        ):
            raise _Invalid(f"conformal parameter {key}: {type(value).__name__} is not a value")
    try:  # each value against its constraint, as fit checks it
        SparseConformalClassifier(None, **params)._validate_params_here()
    except (TypeError, ValueError) as error:
        raise _Invalid(str(error)) from None
    kind = entry["estimator"]
    if kind not in _CONFORMAL_ESTIMATOR:
        raise _Invalid(
            f"the conformal estimator entry {kind!r} is not one of {list(_CONFORMAL_ESTIMATOR)}"
        )
    if (kind == "fitted") != bool(params["prefit"]):
        raise _Invalid(f"the conformal estimator entry {kind!r} contradicts prefit")
    if kind == "default" and inner_name != "SparsemaxClassifier":
        raise _Invalid(f"estimator=None wraps a SparsemaxClassifier, not a {inner_name}")
    raw = entry["fitted"]
    if not isinstance(raw, dict):
        raise _Invalid("the conformal fitted attributes are not an object")
    unknown = sorted(set(raw) - set(_CONFORMAL_FITTED + _CONFORMAL_CALIBRATED))
    if unknown:
        raise _Invalid(f"unknown conformal fitted attribute {unknown[0]!r}")
    fitted = {k: _decode(v, f"conformal fitted attribute {k}") for k, v in raw.items()}

    def fail(name: str, why: str) -> None:
        raise _Invalid(f"conformal fitted attribute {name}: {why}")

    classes = fitted.get("classes_")
    if not (
        isinstance(classes, np.ndarray)
        and classes.dtype == inner["classes_"].dtype
        and np.array_equal(classes, inner["classes_"])
    ):
        fail("classes_", "missing, or not the model's classes_")
    if ("n_features_in_" in fitted) != ("n_features_in_" in inner) or fitted.get(
        "n_features_in_"
    ) != inner.get("n_features_in_"):
        fail("n_features_in_", "not the model's n_features_in_")
    alpha = fitted.get("mapping_alpha_")
    want = inner["alpha_"] if params["mapping_alpha"] == "auto" else params["mapping_alpha"]
    if not (isinstance(alpha, float) and math.isfinite(alpha) and alpha > 1.0):
        fail("mapping_alpha_", f"a finite float > 1 is expected, got {alpha!r}")
    if alpha != float(want):
        fail("mapping_alpha_", f"{alpha!r} is not the alpha of mapping_alpha={want!r}")
    calibrated = [k for k in _CONFORMAL_CALIBRATED if k in fitted]
    if calibrated and len(calibrated) != len(_CONFORMAL_CALIBRATED):
        missing = sorted(set(_CONFORMAL_CALIBRATED) - set(calibrated))
        raise _Invalid(f"the conformal entry is half calibrated: it lacks {missing}")
    if calibrated:
        _check_calibration(fitted, params, len(classes), alpha, fail)
    return _Conformal(params, kind, fitted)


def _check_calibration(
    fitted: dict[str, Any], params: dict[str, Any], n_classes: int, alpha: float, fail: Callable
) -> None:
    """The calibration attributes: the levels are the parameter's, and the quantiles and
    temperatures are what conformalize computes from the stored scores."""
    from sk_entmax.conformal import _check_level, conformal_quantile, level_temperatures

    levels = fitted["confidence_levels_"]
    want_levels, _ = _check_level(params["confidence_level"])
    if not (isinstance(levels, np.ndarray) and np.array_equal(levels, want_levels)):
        fail("confidence_levels_", "not the levels of confidence_level")
    scores = fitted["conformity_scores_"]
    if not (
        isinstance(scores, np.ndarray)
        and scores.dtype == np.float64
        and scores.ndim == 1
        and np.isfinite(scores).all()
        and (scores >= 0).all()
    ):
        fail("conformity_scores_", "a 1-d float64 array of finite scores >= 0 is expected")
    counts = fitted["n_conformalize_samples_"]
    if params["class_conditional"]:
        ok = (
            isinstance(counts, np.ndarray)
            and counts.dtype.kind in "iu"
            and counts.shape == (n_classes,)
            and (counts >= 0).all()
            and int(counts.sum()) == scores.size
        )
    else:
        ok = _is_int(counts) and counts == scores.size
    if not ok:
        fail("n_conformalize_samples_", "not the number of stored scores (per class)")
    quantiles = fitted["quantiles_"]
    if not (
        isinstance(quantiles, np.ndarray)
        and quantiles.dtype == np.float64
        and quantiles.shape == (len(levels), n_classes)
    ):
        fail("quantiles_", f"a float64 array of shape ({len(levels)}, {n_classes}) is expected")
    for i, level in enumerate(levels.tolist()):
        if params["class_conditional"]:
            # the rows' classes are not stored: each class's quantile is one of the scores,
            # or inf exactly when that class had too few rows for the level
            for c, q in enumerate(quantiles[i].tolist()):
                short = conformal_quantile(np.zeros(int(counts[c])), level) == math.inf
                if (q == math.inf) != short or (q != math.inf and q not in scores):
                    fail("quantiles_", f"entry [{i}, {c}] is not a quantile of the scores")
        elif not (quantiles[i] == conformal_quantile(scores, level)).all():
            fail("quantiles_", f"row {i} is not the level's quantile of the stored scores")
    temperatures = level_temperatures(quantiles, alpha)
    stored = fitted["temperatures_"]
    if not (isinstance(stored, np.ndarray) and np.array_equal(stored, temperatures)):
        fail("temperatures_", "not (alpha - 1) * q_hat per level, as conformalize computes")
    if fitted["temperature_"] != float(temperatures[0]):
        fail("temperature_", "not temperatures_[0]")


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
    estimator : estimator of this package
        A fitted EntmaxClassifier, SparsemaxClassifier or TabNetEntmaxClassifier (not a
        subclass: :func:`load` only builds the classes it knows), or a fitted
        :class:`~sk_entmax.conformal.SparseConformalClassifier` whose ``estimator_`` is one;
        its parameters and calibration (conformalized or not) are stored with the model.
    path : str or os.PathLike
        The file to write (conventionally ``*.safetensors``): a new path, or a regular file,
        which is replaced (through a symbolic link: the file the link names, the link
        stays). Nothing else is written to, see Raises.

    Raises
    ------
    TypeError
        If ``estimator`` is not one of the package's estimators (or a conformal wrapper
        around one), or a parameter or fitted
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
    classes = _estimator_classes()
    conformal = None
    if type(estimator).__name__ == "SparseConformalClassifier":
        conformal, estimator = _conformal_entry(estimator)
    name = type(estimator).__name__
    if name not in classes or classes[name][0] is not type(estimator):
        raise TypeError(
            f"save takes a fitted {', '.join(classes)} or a SparseConformalClassifier "
            f"around one; got {name}. Use pickle or joblib for other objects (a pipeline, a "
            "subclass)"
        )
    check_is_fitted(estimator)
    target = os.fspath(path)
    _save_target(target)  # refuse a fifo, a device, ... before any work
    net = estimator.net_
    module_name = type(net.module_).__name__
    if _module_classes().get(module_name) is not type(net.module_):
        raise TypeError(f"save cannot store a network of type {module_name}")
    params = estimator.get_params(deep=False)
    table = _FITTED[name]
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
    if conformal is not None:
        header["conformal"] = conformal
    tensors, aliases = _state_tensors(net.module_)
    header["net"]["aliases"] = aliases
    text = json.dumps(header, allow_nan=False)
    try:
        _check_json_size(text)
    except _Invalid as error:
        raise ValueError(
            f"cannot save {name}: {error} (a categorical column with that many categories, "
            "or that many classes or feature names); use pickle or joblib where the file's "
            "source is trusted"
        ) from None
    _write_file(target, tensors, {_METADATA_KEY: text})


_FILE_KINDS = (
    (stat.S_ISFIFO, "fifo"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


def _save_target(path: str) -> tuple[str, int | None]:
    """The file :func:`save` writes for ``path`` (the file a symbolic link names), with the
    permission bits it is to keep (None for a new file); refuses anything but a regular file
    or a new path with an OSError naming ``path``."""
    try:
        info = os.stat(path)  # follows symbolic links: what the path names is what counts
    except FileNotFoundError:
        return os.path.realpath(path), None
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(
            errno.EISDIR, "is a directory; save writes a file (give a file name)", path
        )
    if not stat.S_ISREG(info.st_mode):
        kind = next((k for test, k in _FILE_KINDS if test(info.st_mode)), "special file")
        raise OSError(
            errno.EINVAL,
            f"is a {kind}, not a regular file; save replaces a regular file or writes a new "
            "one, nothing else",
            path,
        )
    return os.path.realpath(path), stat.S_IMODE(info.st_mode)


def _write_file(path: str, tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> None:
    """Write the safetensors file for ``path`` whole or not at all (see :func:`save`)."""
    st = _safetensors()
    real, mode = _save_target(path)
    folder, base = os.path.split(real)
    try:
        fd, temporary_path = new_temporary_file(folder, base)
    except OSError as error:
        raise type(error)(
            error.errno, f"cannot create a file beside it ({error.strerror})", path
        ) from None
    temporary = os.fspath(temporary_path)
    try:
        try:
            created = stat.S_IMODE(os.fstat(fd).st_mode)
        finally:
            os.close(fd)
        try:
            st.torch.save_file(tensors, temporary, metadata=metadata)
        except st.SafetensorError as error:
            raise OSError(errno.EIO, f"the file could not be written ({error})", path) from None
        try:
            _check_header_bytes(temporary)  # load reads every file save writes
        except _Invalid as error:
            raise ValueError(f"cannot save to {path!r}: {error}") from None
        # the mode of the file replaced, or of a new file; safetensors may have made the
        # temporary file anew, with its own
        os.chmod(temporary, created if mode is None else mode)
        fd = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        _save_target(path)  # what the path names now, just before it is replaced
        os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


_HEADER_KEYS = {"format_version", "sk_entmax_version", "estimator", "params", "fitted", "net"}
#: entries a header may have: "conformal" holds a SparseConformalClassifier around the model
_OPTIONAL_HEADER_KEYS = {"conformal"}

#: the most a file's header may hold, so that reading it costs tens of MB at most: its bytes
#: (the tensors' table and the JSON document), then the JSON's values (each costs up to about
#: 60 bytes as a Python object) and containers (about 70 bytes each). save refuses a model
#: beyond them, so every file it writes loads; a model's header is kilobytes, and a
#: categorical column of 100,000 categories takes 100,000 values
_MAX_HEADER_BYTES = 4 * 2**20
_MAX_JSON_VALUES = 300_000
_MAX_JSON_CONTAINERS = 100_000


def _check_json_size(text: str) -> None:
    """Refuse a header document with more values or containers than a model file holds,
    counted from its text before it is parsed (commas and brackets inside strings count
    too, so the counts are upper bounds)."""
    values = text.count(",") + 1
    containers = text.count("[") + text.count("{")
    if values > _MAX_JSON_VALUES or containers > _MAX_JSON_CONTAINERS:
        raise _Invalid(
            f"the header holds about {values:,} values in {containers:,} lists and objects; "
            f"a model file holds at most {_MAX_JSON_VALUES:,} and {_MAX_JSON_CONTAINERS:,}"
        )


def _check_header_bytes(name: str) -> None:
    """Refuse a file whose header (its first 8 bytes give the length) exceeds
    :data:`_MAX_HEADER_BYTES`, before safetensors reads it."""
    with open(name, "rb") as file:
        head = file.read(8)
    if len(head) == 8:  # shorter: safetensors says what is wrong
        size = int.from_bytes(head, "little")
        if size > _MAX_HEADER_BYTES:
            raise _Invalid(
                f"not a safetensors file save wrote: its first 8 bytes give a header of "
                f"{size:,} bytes; a model file's header is at most {_MAX_HEADER_BYTES:,}"
            )


_NET_KEYS = {"module", "module_kwargs", "batch_size", "history", "aliases"}


def _refuse_constant(name: str) -> float:
    raise _Invalid(f"the header holds {name}, which JSON does not have")


def _parse_header(text: str) -> dict[str, Any]:
    _check_json_size(text)
    try:
        header = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise _Invalid("the header is nested too deeply to be one this package wrote") from None
    except ValueError as error:  # JSONDecodeError, or an int of too many digits
        raise _Invalid(f"the header is not valid JSON: {error}") from None
    if not isinstance(header, dict):
        raise _Invalid("the header is not a JSON object")
    version = header.get("format_version")
    if not _is_int(version) or not 1 <= version <= FORMAT_VERSION:
        newer = _is_int(version) and version > FORMAT_VERSION
        readable = "version 1" if FORMAT_VERSION == 1 else f"versions 1 to {FORMAT_VERSION}"
        raise _Invalid(
            f"the file has format version {version!r}; this sk_entmax ({__version__}) reads "
            f"format {readable}" + (" (the file is newer)" if newer else "")
        )
    _check_keys(header, _HEADER_KEYS, "the header", optional=_OPTIONAL_HEADER_KEYS)
    if not isinstance(header["net"], dict):
        raise _Invalid("the header's network entry is not an object")
    _check_keys(header["net"], _NET_KEYS, "the header's network entry")
    return header


def _check_keys(
    entry: dict[str, Any], keys: set[str], what: str, optional: set[str] = frozenset()
) -> None:
    unknown, missing = sorted(set(entry) - keys - optional), sorted(keys - set(entry))
    if unknown:
        raise _Invalid(f"{what} has entries a model file does not have: {unknown[:5]}")
    if missing:
        raise _Invalid(f"{what} lacks the entries {missing}")


def _stored_tensors(handle: Any) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """Name -> (shape, dtype) of the file's tensors, read from the header alone."""
    out = {}
    for key in handle.keys():
        view = handle.get_slice(key)
        dtype = _TORCH_DTYPES.get(view.get_dtype())
        if dtype is None:
            raise _Invalid(f"tensor {key} has dtype {view.get_dtype()}, which no network holds")
        out[key] = (tuple(view.get_shape()), dtype)
    return out


def load(path: str | os.PathLike, device: str = "cpu") -> BaseEntmaxClassifier:
    """Read an estimator written by :func:`save`; reads data only and runs no code from it.

    Before it builds anything, ``load`` checks the whole file, and refuses it with a
    ``ValueError`` reading ``cannot load <path>: <why>`` when, in this order:

    - its header claims more than 4 MiB (read from its first 8 bytes, before anything
      else), or its JSON document more than 300,000 values or 100,000 lists and objects
      (counted in its text, before it is parsed);
    - it is not a safetensors file, or one :func:`save` did not write;
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
      scores not finite and non-negative, the counts not the number of scores, a marginal
      quantile not the level's quantile of the stored scores (a per-class one not one of
      the scores, or infinite other than exactly when its class had too few rows), the
      temperatures not ``(alpha - 1) * nextafter(q_hat, inf)``;
    - then, the stored tensors read: a stored weight is NaN or infinite, or ``alpha_`` or
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
        The fitted estimator, predicting exactly as the saved one (a
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
            checked = _check_header(header, stored)
            estimator, module_cls, kwargs, source, fitted, history, skeleton = checked
            conformal = _check_conformal(header.get("conformal"), header["estimator"], fitted)
            tensors = {key: handle.get_tensor(key) for key in sorted(set(source.values()))}
            for key, tensor in tensors.items():
                if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                    raise _Invalid(
                        f"tensor {key} holds values that are not finite (NaN or infinity); "
                        "the saved network had diverged or the file was altered"
                    )
            with torch.no_grad():
                state = {key: tensors[src] for key, src in source.items()}
                skeleton.load_state_dict(state, assign=True)
            _check_alphas(fitted, skeleton)
    except _Invalid as error:
        raise ValueError(f"cannot load {name!r}: {error}") from None
    except (KeyError, TypeError, AttributeError, IndexError) as error:  # a case not foreseen
        raise ValueError(
            f"cannot load {name!r}: the header is malformed ({type(error).__name__}: {error})"
        ) from None
    except st.SafetensorError as error:
        raise ValueError(f"cannot load {name!r}: not a safetensors file ({error})") from None
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
    _check_names(trains, stored, aliases)
    kwargs = _decode(spec["module_kwargs"], "network arguments")
    kwargs = _check_arguments(trains, kwargs, stored)
    # on the meta device: no memory, and no draw from any generator (nothing to lock or fork)
    skeleton = _skeleton(module_cls, kwargs, len(stored) + len(aliases) + _SKELETON_SLACK)
    expected = {name: (tuple(t.shape), t.dtype) for name, t in skeleton.state_dict().items()}
    source = _match_tensors(expected, stored, aliases, trains)
    estimator = cls(**_check_params(cls, header["params"]))
    try:  # each value against its constraint, as fit checks it
        estimator._checked(*estimator._constraints)
    except ValueError as error:
        raise _Invalid(str(error)) from None
    fitted = _check_fitted(name, header["fitted"], kwargs)
    _check_outputs(fitted, kwargs)
    history = _check_history(_decode(spec["history"], "history"))
    return estimator, module_cls, kwargs, source, fitted, history, skeleton


def _check_outputs(fitted: dict[str, Any], sizes: Mapping[str, Any]) -> None:
    """``classes_`` against the network's outputs: one each, plus the "no label" output of
    a multi-label model that has ``support_temperature_`` (older multi-label files have
    neither)."""
    slot = "support_temperature_" in fitted
    if slot and not fitted["multilabel_"]:
        raise _Invalid(
            "fitted attribute support_temperature_ is present although multilabel_ is False"
        )
    n_outputs, n_classes = sizes["n_outputs"], len(fitted["classes_"])
    if n_classes + int(slot) != n_outputs:
        extra = " plus its 'no label' output" if slot else ""
        raise _Invalid(
            f"fitted attribute classes_: {n_classes} classes{extra} do not match the "
            f"network's n_outputs = {n_outputs}"
        )


def _check_alphas(fitted: dict[str, Any], skeleton: torch.nn.Module) -> None:
    """``alpha_`` and ``mask_alpha_`` against the alphas of the network: the skeleton, its
    stored tensors assigned (a learned alpha is a function of one of them)."""
    alpha = skeleton.alpha
    if isinstance(alpha, torch.Tensor):
        alpha = float(alpha.detach())
    if not math.isclose(fitted["alpha_"], alpha, rel_tol=_ALPHA_RTOL):
        raise _Invalid(
            f"fitted attribute alpha_: {fitted['alpha_']!r} does not match the network's "
            f"alpha = {alpha!r}"
        )
    if "mask_alpha_" in fitted:
        masks = skeleton.tabnet.mask_alphas()
        if not all(
            math.isclose(a, b, rel_tol=_ALPHA_RTOL)
            for a, b in zip(fitted["mask_alpha_"].tolist(), masks, strict=True)
        ):
            raise _Invalid(
                f"fitted attribute mask_alpha_: {fitted['mask_alpha_'].tolist()} does not "
                f"match the network's mask alphas {masks}"
            )
