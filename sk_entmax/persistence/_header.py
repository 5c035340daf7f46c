"""The header of a model file: its format version, its entries, and how much of it
:func:`~sk_entmax.persistence.load` reads (bytes, JSON values), checked before it is parsed."""

from __future__ import annotations

import json
from typing import Any

from sk_entmax._saveable import SAVEABLE
from sk_entmax._saved_state import WrapperState
from sk_entmax._version import __version__
from sk_entmax.persistence._codec import _is_int
from sk_entmax.persistence._errors import _Invalid

#: version of the file layout; :func:`load` reads versions 1 to this one. Version 1 holds
#: one estimator of this package (a conformal wrapper around one included): every such
#: file is still written as version 1, readable by every release since. Version 2 holds a
#: scikit-learn Pipeline or ColumnTransformer: its scikit-learn part (skops) and a list of
#: version 1 model entries, one per estimator of this package in it
FORMAT_VERSION = 2
#: the version of a file (or of a model entry of a version 2 file) of one estimator
MODEL_FORMAT_VERSION = 1
_METADATA_KEY = "sk_entmax"
#: the entries of a version 2 header
_PIPELINE_KEYS = {"format_version", "sk_entmax_version", "pipeline", "models"}

_HEADER_KEYS = {"format_version", "sk_entmax_version", "estimator", "params", "fitted", "net"}
#: the entry of a model's header that holds its nested estimators (the parameters its class
#: declares as holding estimators), and the prefix of their tensors
NESTED = "estimators"
#: the keys a meta-estimator stored around a model is stored under, as its class declares
_WRAPPER_KEYS = {
    cls._saved_state.key for cls in SAVEABLE.values() if isinstance(cls._saved_state, WrapperState)
}
#: entries a model's header may have: its nested estimators, and a meta-estimator stored
#: around it, under the key its class declares
_OPTIONAL_HEADER_KEYS = {NESTED, *_WRAPPER_KEYS}

#: the most a file's header may hold, so that reading it costs tens of MB at most: its bytes
#: (the tensors' table and the JSON document), then the JSON's values (each costs up to about
#: 60 bytes as a Python object) and containers (about 70 bytes each). save refuses a model
#: beyond them, so every file it writes loads; a model's header is kilobytes, and a
#: categorical column of 100,000 categories takes 100,000 values
_MAX_HEADER_BYTES = 4 * 2**20
_MAX_JSON_VALUES = 300_000
_MAX_JSON_CONTAINERS = 100_000


def _check_json_size(text: str, *, max_values: int = _MAX_JSON_VALUES) -> None:
    """Refuse a header document with more values (``max_values``) or containers than a
    model file holds, counted from its text before it is parsed (commas and brackets inside
    strings count too, so the counts are upper bounds)."""
    values = text.count(",") + 1
    containers = text.count("[") + text.count("{")
    if values > max_values or containers > _MAX_JSON_CONTAINERS:
        raise _Invalid(
            f"the header holds about {values:,} values in {containers:,} lists and objects; "
            f"a model file holds at most {max_values:,} and {_MAX_JSON_CONTAINERS:,}"
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
    _check_version(header, FORMAT_VERSION)
    if header["format_version"] == 2:
        # a wrapper stored around the Pipeline (the conformal wrapper) beside it
        _check_keys(header, _PIPELINE_KEYS, "the header", optional=_WRAPPER_KEYS)
        models = header["models"]
        if not isinstance(models, list) or not all(isinstance(m, dict) for m in models):
            raise _Invalid("the header's models entry is not a list of objects")
        for entry in models:
            _check_model_header(entry)
        return header
    return _check_model_header(header)


def _check_model_header(header: dict[str, Any]) -> dict[str, Any]:
    """The header of one estimator (a version 1 file, or a model entry of a version 2 one),
    its entries checked."""
    _check_version(header, MODEL_FORMAT_VERSION)
    _check_keys(header, _HEADER_KEYS, "the header", optional=_OPTIONAL_HEADER_KEYS)
    if not isinstance(header["net"], dict):
        raise _Invalid("the header's network entry is not an object")
    _check_keys(header["net"], _NET_KEYS, "the header's network entry")
    return header


def _check_version(header: dict[str, Any], highest: int) -> None:
    """Refuse a ``format_version`` that is not an int from 1 to ``highest``."""
    version = header.get("format_version")
    if not _is_int(version) or not 1 <= version <= highest:
        newer = _is_int(version) and version > highest
        readable = "version 1" if highest == 1 else f"versions 1 to {highest}"
        raise _Invalid(
            f"the file has format version {version!r}; this sk_entmax ({__version__}) reads "
            f"format {readable}" + (" (the file is newer)" if newer else "")
        )


def _check_keys(
    entry: dict[str, Any], keys: set[str], what: str, optional: set[str] = frozenset()
) -> None:
    unknown, missing = sorted(set(entry) - keys - optional), sorted(keys - set(entry))
    if unknown:
        raise _Invalid(f"{what} has entries a model file does not have: {unknown[:5]}")
    if missing:
        raise _Invalid(f"{what} lacks the entries {missing}")
