"""The JSON codec of the header: :func:`_encode` writes a value as JSON, tagged where JSON
would lose its type, and :func:`_decode` reads it back, taking nothing on trust."""

from __future__ import annotations

import math
from dataclasses import fields, is_dataclass
from typing import Any

import numpy as np
from sklearn.preprocessing import OrdinalEncoder

from sk_entmax._attributes import SavedEncoder as _SavedEncoder
from sk_entmax.persistence._errors import _Invalid, _Unserializable

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
    if is_dataclass(value) and not isinstance(value, type) and value.__dataclass_params__.frozen:
        # a frozen value (a network's mask design): the dict of the fields it is built from
        return _encode({f.name: getattr(value, f.name) for f in fields(value) if f.init}, where)
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
