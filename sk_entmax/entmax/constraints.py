"""Parameter constraints: the package's one vocabulary for what a parameter may be.

A constraint says what a value may be and turns an accepted value into its plain Python
form (``numpy.int64(3)`` into ``3``). :func:`check` refuses a value with an
:class:`InvalidParameterError`, in scikit-learn's wording: "The 'alpha' parameter of
EntmaxClassifier must be a real number >= 1 (...). Got 0.5 instead." The error is both a
``ValueError`` and a ``TypeError``, as scikit-learn's own ``InvalidParameterError`` is, so code
that catches either keeps working whether the value had the wrong type or the wrong value.

Each layer states its own constraints once, at its boundary, in this vocabulary: the core's
functions check what the core needs once per public call, a torch module checks its
constructor arguments, and the estimators check their parameters in one table (``_base``,
``_linear``, ``_tabnet``), which metrics and persistence read too. Code after a check reads
only the checked values. Pure Python (numbers, math), so the core stays importable with torch
alone.

Examples
--------
>>> from sk_entmax.entmax.constraints import Integer, check
>>> check("n_iter", 3, Integer(1), "entmax_bisect")
3
>>> check("n_iter", 0, Integer(1), "entmax_bisect")
Traceback (most recent call last):
...
sk_entmax.entmax.constraints.InvalidParameterError: The 'n_iter' parameter of entmax_bisect \
must be an integer >= 1. Got 0 instead.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "REJECT",
    "AnyOf",
    "Boolean",
    "Constraint",
    "Integer",
    "InvalidParameterError",
    "Options",
    "Real",
    "Satisfies",
    "check",
    "check_all",
]

#: what :meth:`Constraint.accept` returns for a value the constraint refuses
REJECT = object()


class InvalidParameterError(ValueError, TypeError):
    """A parameter's value is not one it may take: both a ``ValueError`` and a ``TypeError``,
    as :class:`sklearn.utils._param_validation.InvalidParameterError` is."""


class Constraint:
    """What a parameter may be: :meth:`accept` returns the value in its plain form, or
    :data:`REJECT`; ``description`` completes "<name> must be ..."."""

    description: str

    def accept(self, value: Any) -> Any:
        raise NotImplementedError


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or type(value).__name__ == "bool_"  # numpy.bool_ too


@dataclass(frozen=True)
class Integer(Constraint):
    """An integer (not a bool, unless ``bools``: then True and False stand for 1 and 0) in
    ``[low, high]``; either bound may be None."""

    low: int | None = None
    high: int | None = None
    bools: bool = False

    @property
    def description(self) -> str:
        text = self._range()
        return f"True, False or {text}" if self.bools else text

    def _range(self) -> str:
        if self.high is None:
            return "an integer" if self.low is None else f"an integer >= {self.low}"
        if self.low is None:
            return f"an integer <= {self.high}"
        return f"an integer in [{self.low}, {self.high}]"

    def accept(self, value: Any) -> Any:
        if _is_bool(value):
            if not self.bools:
                return REJECT
            value = int(value)
        if not isinstance(value, numbers.Integral):
            return REJECT
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            return REJECT
        return int(value)


@dataclass(frozen=True)
class Real(Constraint):
    """A finite real number (not a bool) between ``low`` and ``high``, each bound closed
    unless said open; ``note`` is appended to the description in parentheses."""

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    high_open: bool = False
    note: str = ""

    @property
    def description(self) -> str:
        bounds = []
        if self.low > -math.inf:
            bounds.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high < math.inf:
            bounds.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        text = "a real number" + (" " + " and ".join(bounds) if bounds else "")
        return f"{text} ({self.note})" if self.note else text

    def accept(self, value: Any) -> Any:
        if _is_bool(value) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            return REJECT
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return float(value) if above and below else REJECT


@dataclass(frozen=True)
class Boolean(Constraint):
    """True or False (a numpy bool too)."""

    description: str = "True or False"

    def accept(self, value: Any) -> Any:
        return bool(value) if _is_bool(value) else REJECT


@dataclass(frozen=True)
class Options(Constraint):
    """One of a few values, compared with ``==`` (strings, None)."""

    values: tuple[Any, ...]

    @property
    def description(self) -> str:
        return "one of " + ", ".join(map(repr, self.values))

    def accept(self, value: Any) -> Any:
        for option in self.values:
            if option is value:
                return option
            if option is None or _is_bool(option) or _is_bool(value):
                continue  # None and the bools match only themselves
            same_kind = (isinstance(option, str) and isinstance(value, str)) or (
                isinstance(option, numbers.Number) and isinstance(value, numbers.Number)
            )
            if same_kind and value == option:
                return option
        return REJECT


@dataclass(frozen=True)
class Satisfies(Constraint):
    """A rule a table cannot state: ``convert(value)`` returns the plain value or raises
    ``TypeError``/``ValueError`` (or returns ``REJECT``) when the value breaks it."""

    description: str
    convert: Callable[[Any], Any]

    def accept(self, value: Any) -> Any:
        try:
            return self.convert(value)
        except (TypeError, ValueError):
            return REJECT


class AnyOf(Constraint):
    """Accepted by the first of ``constraints`` that accepts it."""

    def __init__(self, *constraints: Constraint) -> None:
        self.constraints = constraints

    @property
    def description(self) -> str:
        return " or ".join(c.description for c in self.constraints)

    def accept(self, value: Any) -> Any:
        for constraint in self.constraints:
            accepted = constraint.accept(value)
            if accepted is not REJECT:
                return accepted
        return REJECT

    def __repr__(self) -> str:
        return f"AnyOf({', '.join(map(repr, self.constraints))})"


def invalid(name: str, owner: str | None, must: str, value: Any) -> InvalidParameterError:
    """The error for parameter ``name`` of ``owner`` (a class or function name; None when
    there is none to name), which ``must`` be something and is ``value`` instead."""
    of = f" of {owner}" if owner else ""
    return InvalidParameterError(
        f"The {name!r} parameter{of} must be {must}. Got {value!r} instead."
    )


def check(name: str, value: Any, constraint: Constraint, owner: str | None = None) -> Any:
    """``value`` in its plain form if ``constraint`` accepts it; else an
    :class:`InvalidParameterError` naming ``name``, its ``owner``, what it must be and what it
    got."""
    accepted = constraint.accept(value)
    if accepted is REJECT:
        raise invalid(name, owner, constraint.description, value)
    return accepted


def check_all(owner: Any, constraints: Mapping[str, Constraint]) -> dict[str, Any]:
    """Every attribute of ``owner`` that ``constraints`` names, checked, by name."""
    where = type(owner).__name__
    return {name: check(name, getattr(owner, name), c, where) for name, c in constraints.items()}
