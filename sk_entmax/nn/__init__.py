"""Torch modules built on the entmax core (no scikit-learn here)."""

import importlib
from typing import Any

__all__ = [
    "EntmaxHead",
    "EntmaxLinearNet",
    "EntmaxMultiheadAttention",
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
    "TabNet": "sk_entmax.nn.tabnet",
    "TabNetClassifierNet": "sk_entmax.nn.tabnet_nets",
    "TabNetPretrainingNet": "sk_entmax.nn.tabnet_pretraining",
    "TabNetRegressorNet": "sk_entmax.nn.tabnet_nets",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    try:  # a submodule, as ``import sk_entmax.nn`` used to import them all
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
