"""Torch modules built on the entmax core (no scikit-learn here)."""

from sk_entmax.nn.linear import EntmaxLinearNet
from sk_entmax.nn.tabnet import TabNet

__all__ = ["EntmaxLinearNet", "TabNet"]
