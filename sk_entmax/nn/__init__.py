"""Torch modules built on the entmax core (no scikit-learn here)."""

from sk_entmax.entmax.lazy import lazy_names

__all__ = [
    "EntmaxHead",
    "EntmaxLinearNet",
    "EntmaxMultiheadAttention",
    "MaskDesign",
    "TabNet",
    "TabNetClassifierNet",
    "TabNetPretrainingNet",
    "TabNetRegressorNet",
]

#: where each public name lives: imported on first use (PEP 562), so that the declaration
#: vocabulary of this package (``sk_entmax.nn._tensor_spec``) imports without torch
_LAZY = {
    "EntmaxHead": "sk_entmax.nn.head",
    "EntmaxLinearNet": "sk_entmax.nn.linear",
    "EntmaxMultiheadAttention": "sk_entmax.nn.attention",
    "MaskDesign": "sk_entmax.nn.tabnet_design",
    "TabNet": "sk_entmax.nn.tabnet",
    "TabNetClassifierNet": "sk_entmax.nn.tabnet_nets",
    "TabNetPretrainingNet": "sk_entmax.nn.tabnet_pretraining",
    "TabNetRegressorNet": "sk_entmax.nn.tabnet_nets",
}


__getattr__, __dir__ = lazy_names(__name__, __all__, _LAZY)
