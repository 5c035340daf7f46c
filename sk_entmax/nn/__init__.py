"""Torch modules built on the entmax core (no scikit-learn here)."""

from sk_entmax.nn.attention import EntmaxMultiheadAttention
from sk_entmax.nn.head import EntmaxHead
from sk_entmax.nn.linear import EntmaxLinearNet
from sk_entmax.nn.tabnet import TabNet, TabNetClassifierNet, TabNetRegressorNet
from sk_entmax.nn.tabnet_pretraining import TabNetPretrainingNet

__all__ = [
    "EntmaxHead",
    "EntmaxLinearNet",
    "EntmaxMultiheadAttention",
    "TabNet",
    "TabNetClassifierNet",
    "TabNetPretrainingNet",
    "TabNetRegressorNet",
]
