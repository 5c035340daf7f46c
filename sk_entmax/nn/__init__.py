"""Torch modules built on the entmax core (no scikit-learn here)."""

from sk_entmax.nn.linear import EntmaxLinearNet

__all__ = ["EntmaxLinearNet"]
