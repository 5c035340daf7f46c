"""The vocabulary in which each estimator declares its fitted attributes.

An estimator declares its fitted attributes next to its own code, as a class attribute
``_fitted_schema``: a dict from each attribute's name to an :class:`Attribute` built here
(``integer``, ``boolean``, ``real``, ``constrained``, ``array``, ``dtype_of``, ...), in the
order :func:`~sk_entmax.persistence.load` checks them. Those of every estimator are declared
once, in :data:`sk_entmax._base.ESTIMATOR_FITTED`; each task adds its own
(:data:`sk_entmax._classifier.FITTED_ATTRIBUTES`, :data:`sk_entmax._regressor.FITTED_ATTRIBUTES`),
and the TabNets add theirs (:data:`sk_entmax._tabnet.shared.TABNET_FITTED`); the linear
classifiers add none. ``SparseConformalClassifier`` only names its own (``_fitted_attributes``
and ``_calibrated_attributes``). A file holding anything else is refused, and
``save`` refuses to write a fitted attribute (a name ending in ``_``) that is not declared.
Shapes and ``equals`` name the network's keyword arguments (``n_features``, ``n_outputs``,
``n_steps``, ``cat_idxs``, ...), which load has checked against the stored tensors before. To
accept a new attribute, add one line to its estimator's table, e.g.
``"coef_": array("f", ("n_outputs", "n_features"))``.

The estimators import this module; :mod:`sk_entmax.persistence`, which reads the
declarations, imports it and the estimators, so persistence stands above the estimators and
nothing below it imports persistence.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
import torch

from sk_entmax._inputs.tabular import categorical_encoder, encoder_with_categories, same_categories
from sk_entmax.entmax.constraints import REJECT, Constraint

__all__ = [
    "Attribute",
    "Invalid",
    "SavedEncoder",
    "array",
    "boolean",
    "categories",
    "constrained",
    "dtype_of",
    "encoder",
    "integer",
    "matching_network",
    "missing_features",
    "real",
]


class Invalid(Exception):
    """Why a stored value is not one the estimator can take; :func:`~sk_entmax.persistence.load`
    raises it as a ValueError that names the file."""


class SavedEncoder(NamedTuple):
    """An ``OrdinalEncoder`` as read from a file: its settings and categories, as data (the
    ``encoder`` attribute check rebuilds it)."""

    params: dict[str, Any]
    categories: list


@dataclass(frozen=True)
class Attribute:
    """How :func:`~sk_entmax.persistence.load` checks one fitted attribute.

    ``check(value, sizes, fitted)`` returns the value to set or raises :class:`Invalid`;
    ``sizes`` are the network's keyword arguments (already checked against the stored
    tensors), ``fitted`` the attributes checked before this one. ``required`` is True, False
    (optional), or the name of a boolean attribute listed earlier: this one must be present
    when that one is True and absent when it is False. ``network(value, module)``, if any,
    checks the value once more against the network built with the stored tensors (see
    :func:`matching_network`).
    """

    check: Callable[[Any, Mapping[str, Any], Mapping[str, Any]], Any]
    required: bool | str = True
    network: Callable[[Any, torch.nn.Module], None] | None = None


#: how far a sum of fractions (feature_importances_) may be from 1: float64 rounding
_SUM_RTOL = 1e-6
#: how far ``alpha_`` and ``mask_alpha_`` may be from the alphas of the stored network: a
#: learned alpha is float32 arithmetic, perhaps done on another device when it was fitted
_ALPHA_RTOL = 1e-5


def _size(sizes: Mapping[str, Any], entry: int | str | None) -> int | None:
    return sizes[entry] if isinstance(entry, str) else entry


def integer(low: int = 0, *, equals: str | None = None) -> Attribute:
    """An int (not a bool) >= ``low``; with ``equals``, the network argument of that name."""

    def check(value, sizes, fitted):
        if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
            raise Invalid(f"an int is expected, got {value!r}")
        if value < low:
            raise Invalid(f"{value} is below {low}")
        if equals is not None and value != sizes[equals]:
            raise Invalid(f"{value} does not match the network's {equals} = {sizes[equals]}")
        return int(value)

    return Attribute(check)


def boolean() -> Attribute:
    """True or False."""

    def check(value, sizes, fitted):
        if not isinstance(value, (bool, np.bool_)):
            raise Invalid(f"True or False is expected, got {value!r}")
        return bool(value)

    return Attribute(check)


def real(low: float, high: float = math.inf, *, required: bool | str = True) -> Attribute:
    """A finite number (not a bool) in ``[low, high]``, loaded as a float."""

    def check(value, sizes, fitted):
        if (
            not isinstance(value, numbers.Real)
            or isinstance(value, (bool, np.bool_))
            or not math.isfinite(value)
            or not low <= value <= high
        ):
            raise Invalid(f"a finite number in [{low}, {high}] is expected, got {value!r}")
        return float(value)

    return Attribute(check, required)


def constrained(constraint: Constraint, *, required: bool | str = True) -> Attribute:
    """A value ``constraint`` (of :mod:`sk_entmax.entmax.constraints`, the estimators'
    vocabulary, e.g. :data:`sk_entmax._parameters.ALPHA`) accepts, loaded in the plain form
    it gives; refused with its description."""

    def check(value, sizes, fitted):
        accepted = constraint.accept(value)
        if accepted is REJECT:
            raise Invalid(f"{constraint.description} is expected, got {value!r}")
        return accepted

    return Attribute(check, required)


def matching_network(
    attribute: Attribute, read: Callable[[torch.nn.Module], Any], what: str
) -> Attribute:
    """``attribute``, checked once more when the stored tensors are in the network: its value
    (a float, or an array of them) must be what ``read(network)`` gives (a float, a tensor or
    a list of floats), within float32 rounding (a relative ``_ALPHA_RTOL``); ``what`` names
    that in the message ("alpha = ")."""

    def network(value, module):
        want = read(module)
        if isinstance(want, torch.Tensor):
            want = float(want.detach())
        got = value.tolist() if isinstance(value, np.ndarray) else value
        if isinstance(want, list):
            same = all(
                math.isclose(a, b, rel_tol=_ALPHA_RTOL) for a, b in zip(got, want, strict=True)
            )
        else:
            same = math.isclose(got, want, rel_tol=_ALPHA_RTOL)
        if not same:
            raise Invalid(f"{got!r} does not match the network's {what}{want!r}")

    return replace(attribute, network=network)


def array(
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
) -> Attribute:
    """An ndarray of a dtype kind in ``kinds`` whose shape matches ``shape``, each entry an
    int, the name of a network argument, or None (any length); with ``total``, its values
    sum to that (within float64 rounding)."""

    def check(value, sizes, fitted):
        if not isinstance(value, np.ndarray):
            raise Invalid(f"an array is expected, got {type(value).__name__}")
        if value.dtype.kind not in kinds:
            raise Invalid(f"dtype {value.dtype} is not allowed here")
        want = tuple(_size(sizes, entry) for entry in shape)
        if value.ndim != len(want) or any(
            w is not None and n != w for n, w in zip(value.shape, want, strict=True)
        ):
            shown = tuple("any" if w is None else w for w in want)
            raise Invalid(f"shape {value.shape} does not match the network's {shown}")
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            raise Invalid("it holds values that are not finite")
        if low is not None and value.size and value.min() < low:
            raise Invalid(f"it holds values below {low}")
        if high is not None and value.size and value.max() > high:
            raise Invalid(f"it holds values above {high}")
        if strings and not all(isinstance(v, str) for v in value.ravel().tolist()):
            raise Invalid("it holds entries that are not strings")
        if unique and len(set(value.ravel().tolist())) != value.size:
            raise Invalid("it repeats a value")
        if equals is not None and value.tolist() != list(sizes[equals]):
            raise Invalid(f"it does not match the network's {equals} = {sizes[equals]}")
        if total is not None and not math.isclose(
            float(value.sum()), total, rel_tol=_SUM_RTOL, abs_tol=_SUM_RTOL
        ):
            raise Invalid(f"it sums to {float(value.sum())!r}, not {total!r}")
        return value

    return Attribute(check, required)


def dtype_of(kinds: str, *, required: bool | str = True) -> Attribute:
    def check(value, sizes, fitted):
        if not isinstance(value, np.dtype) or value.kind not in kinds:
            raise Invalid(f"a plain numeric or object dtype is expected, got {value!r}")
        return value

    return Attribute(check, required)


def categories() -> Attribute:
    """TabNet's categories: one 1-d array per categorical column, one code per category
    plus the reserved "unknown" code in the network's embedding."""

    def check(value, sizes, fitted):
        dims = list(sizes.get("cat_dims", ()))
        if not isinstance(value, list) or len(value) != len(dims):
            raise Invalid(f"a list of {len(dims)} arrays (one per categorical column) expected")
        for i, (column, dim) in enumerate(zip(value, dims, strict=True)):
            if not isinstance(column, np.ndarray) or column.ndim != 1:
                raise Invalid(f"entry {i} is not a 1-d array")
            if column.dtype.kind not in "biufUO":
                raise Invalid(f"entry {i} has dtype {column.dtype}")
            if len(column) + 1 != dim:
                raise Invalid(
                    f"entry {i} holds {len(column)} categories; the network embeds {dim - 1}"
                )
        return value

    return Attribute(check)


# TabNet's category encoder: its settings and how it is rebuilt are those of
# sk_entmax._inputs.tabular (the unknown and missing codes are -1, which become the reserved
# code 0); an encoder saved with other settings is refused rather than rebuilt.
def encoder() -> Attribute:
    def check(value, sizes, fitted):
        categories = fitted["categories_"]
        if value is None:
            if categories:
                raise Invalid("missing although the model has categorical columns")
            return None
        if not isinstance(value, SavedEncoder) or not categories:
            raise Invalid("an OrdinalEncoder of the categorical columns is expected")
        params = dict(value.params)
        dtype = params.pop("dtype", None)
        expected = categorical_encoder().get_params()
        del expected["dtype"]
        if dtype not in (np.float32, np.float64) or any(
            type(params.get(k)) is not type(v) or params.get(k) != v for k, v in expected.items()
        ):
            raise Invalid(f"settings {value.params!r} are not the ones TabNet encodes with")
        if set(params) != set(expected):
            raise Invalid(f"unknown settings {sorted(set(params) - set(expected))}")
        if len(value.categories) != len(categories) or not all(
            isinstance(a, np.ndarray) and same_categories(a, b)
            for a, b in zip(value.categories, categories, strict=True)
        ):
            raise Invalid("its categories are not categories_")
        try:
            return encoder_with_categories(categories, dtype=dtype)
        except (TypeError, ValueError) as error:
            raise Invalid(f"its categories cannot be encoded: {error}") from None

    return Attribute(check)


def missing_features() -> Attribute:
    """TabNet's numeric columns with a missing indicator: the network's ``missing_idxs``
    (optional: a file written before missing indicators existed has neither)."""

    def check(value, sizes, fitted):
        if not isinstance(value, np.ndarray) or value.ndim != 1:
            raise Invalid("a 1-d array of column names or indices is expected")
        if value.dtype.kind in "iu":
            indices = value.tolist()
        elif value.dtype == object and "feature_names_in_" in fitted:
            position = {name: i for i, name in enumerate(fitted["feature_names_in_"].tolist())}
            if not all(isinstance(v, str) and v in position for v in value.tolist()):
                raise Invalid("it names columns that are not in feature_names_in_")
            indices = [position[v] for v in value.tolist()]
        else:
            raise Invalid(
                "a 1-d array of column indices, or of names where feature_names_in_ is "
                "stored, is expected"
            )
        if indices != list(sizes.get("missing_idxs", ())):
            raise Invalid(
                f"it does not match the network's missing_idxs = {sizes.get('missing_idxs')}"
            )
        return value

    return Attribute(check, required=False)
