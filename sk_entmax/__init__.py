"""sk_entmax: exactly sparse probabilities for PyTorch and scikit-learn.

The PyTorch core lives in :mod:`sk_entmax.entmax` (sparsemax, 1.5-entmax, alpha-entmax and
their Fenchel-Young losses), a drop-in for the ``entmax`` package's API.
"""

from sk_entmax._version import __version__

__all__ = ["__version__"]
