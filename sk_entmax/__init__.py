"""sk_entmax: exactly sparse probabilities for PyTorch and scikit-learn.

The PyTorch core lives in :mod:`sk_entmax.entmax` (sparsemax, 1.5-entmax, alpha-entmax and
their Fenchel-Young losses), a drop-in for the ``entmax`` package's API. The estimators
(:class:`SparsemaxClassifier`, :class:`EntmaxClassifier`, :class:`TabNetEntmaxClassifier`,
:class:`TabNetEntmaxRegressor`), TabNet's self-supervised :class:`TabNetPretrainer` and
the conformal wrapper :class:`SparseConformalClassifier` are imported on first use, so that
``import sk_entmax`` stays light. Every invalid parameter, of an estimator, a metric or a
core function, raises :class:`InvalidParameterError` (a ``ValueError`` and a ``TypeError``).
"""

from sk_entmax._version import __version__
from sk_entmax.entmax.lazy import lazy_names

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


__getattr__, __dir__ = lazy_names(__name__, __all__, _LAZY)
