"""What an estimator stores in a model file, as its class declares it.

Each class :mod:`sk_entmax.persistence` saves states its saved state next to its code, in a
class attribute ``_saved_state``; persistence reads the declaration and knows no estimator
by name:

- :class:`ModelState`, an estimator that trains a network: the network class it trains
  (whose own ``state_spec`` says what its tensors and arguments may be), the checks of its
  fitted attributes against that network beyond each attribute's own (its fitted
  attributes themselves are its ``_fitted_schema``, in the vocabulary of
  :mod:`sk_entmax._attributes`), the parameters that hold estimators of their own (stored
  as nested entries of the file), the parameters a file may predate, and the private
  attributes that are arguments of the network;
- :class:`WrapperState`, a meta-estimator stored around the model it holds fitted (the
  conformal wrapper): the header entry it is stored under, the attribute and the parameter
  that hold its model, its fitted attributes, and the check of its stored values against
  the model.

Plain data and functions, no torch: the estimators import this module, persistence
interprets it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ModelState", "WrapperState"]


@dataclass(frozen=True)
class ModelState:
    """The saved state of an estimator that trains a network.

    Parameters
    ----------
    network : type
        The torch module class of ``net_.module_`` (it declares its ``state_spec``).
    check : callable or None, default=None
        ``check(fitted, sizes)``: the fitted attributes (each already checked as
        ``_fitted_schema`` declares it) against the network's arguments ``sizes``; raises
        :class:`sk_entmax._attributes.Invalid` saying what does not match.
    estimator_parameters : tuple of str, default=()
        The parameters that hold an estimator (None, an unfitted or fitted estimator of a
        class persistence saves, or a ``sklearn.frozen.FrozenEstimator`` around a fitted
        one), each stored as a nested entry of the file.
    added_parameters : mapping, default={}
        Parameters added after files were first written, each with the value a file
        without it means.
    from_network : mapping, default={}
        Private attributes that ``fit`` sets to an argument of the network (by name): load
        sets each from the stored argument.
    """

    network: type
    check: Callable[[Mapping[str, Any], Mapping[str, Any]], None] | None = None
    estimator_parameters: tuple[str, ...] = ()
    added_parameters: Mapping[str, Any] = field(default_factory=dict)
    from_network: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class WrapperState:
    """The saved state of a meta-estimator stored around the fitted model it holds.

    The file holds the model as it would hold it alone, and beside it, under ``key``, the
    wrapper's parameters (but ``parameter``), how ``parameter`` relates to the model (None:
    "default"; the fitted model itself: "fitted"; another, unfitted estimator: "template",
    restored as an unfitted clone of the model) and its fitted attributes.

    Parameters
    ----------
    key : str
        The header entry the wrapper is stored under.
    model : str
        The fitted attribute that holds the model (``estimator_``).
    parameter : str
        The parameter that gives the model (``estimator``).
    fitted : tuple of str
        The fitted attributes stored besides ``model``.
    check : callable
        ``check(params, kind, fitted, model_class, model_fitted)``: the decoded
        parameters, the kind of ``parameter`` and the decoded fitted attributes, against
        the model's class and fitted attributes; returns the fitted attributes to set
        (those it keeps) or raises :class:`sk_entmax._attributes.Invalid`.
    added_parameters : mapping, default={}
        Parameters added after files were first written, each with the value a file
        without it means.
    facts : callable or None, default=None
        ``facts(model)``: for a model stored as a scikit-learn Pipeline (not one of this
        package's estimators), the fitted attributes ``check`` reads of it, computed from
        the loaded Pipeline. None: the wrapper is only stored around this package's
        estimators.
    """

    key: str
    model: str
    parameter: str
    fitted: tuple[str, ...]
    check: Callable[..., dict[str, Any]]
    added_parameters: Mapping[str, Any] = field(default_factory=dict)
    facts: Callable[[Any], Mapping[str, Any]] | None = None
