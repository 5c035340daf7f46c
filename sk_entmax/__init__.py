"""sk_entmax: exactly sparse probabilities for PyTorch and scikit-learn.

The PyTorch core lives in :mod:`sk_entmax.entmax` (sparsemax, 1.5-entmax, alpha-entmax and
their Fenchel-Young losses), a drop-in for the ``entmax`` package's API. The estimators
(:class:`SparsemaxClassifier`, :class:`EntmaxClassifier`, :class:`TabNetEntmaxClassifier`,
:class:`TabNetEntmaxRegressor`), TabNet's self-supervised :class:`TabNetPretrainer` and
the conformal wrapper :class:`SparseConformalClassifier` are imported on first use, so that
``import sk_entmax`` stays light. Every invalid parameter, of an estimator, a metric or a
core function, raises :class:`InvalidParameterError` (a ``ValueError`` and a ``TypeError``).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from sk_entmax._version import __version__

__all__ = [
    "EntmaxClassifier",
    "InvalidParameterError",
    "NonFiniteLossError",
    "SparseConformalClassifier",
    "SparsemaxClassifier",
    "TabNetEntmaxClassifier",
    "TabNetEntmaxRegressor",
    "TabNetPretrainer",
    "__version__",
]

_LAZY = {
    "EntmaxClassifier": "sk_entmax._linear",
    "InvalidParameterError": "sk_entmax.entmax.constraints",
    "NonFiniteLossError": "sk_entmax._base",
    "SparseConformalClassifier": "sk_entmax.conformal",
    "SparsemaxClassifier": "sk_entmax._linear",
    "TabNetEntmaxClassifier": "sk_entmax._tabnet",
    "TabNetEntmaxRegressor": "sk_entmax._tabnet",
    "TabNetPretrainer": "sk_entmax._tabnet",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sk_entmax' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names (``__all__``) and the sub-packages imported so far (``entmax``,
    ``metrics``, ...), not this module's own imports (``Any``, ``importlib``)."""
    modules = {
        name
        for name, value in globals().items()
        if not name.startswith("_")
        and isinstance(value, ModuleType)
        and value.__name__.startswith(f"{__name__}.")
    }
    return sorted(set(__all__) | modules)
