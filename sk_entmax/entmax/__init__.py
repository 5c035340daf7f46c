"""The PyTorch entmax core: a drop-in for the ``entmax`` package, correct where it is not.

``from entmax import X`` becomes ``from sk_entmax.entmax import X``. Every mapping takes
Ludwig's ``training=`` keyword too. Extras: :class:`AdaptiveEntmax` (a learnable alpha kept
in range), :func:`entmax` / :func:`entmax_loss` (the exact algorithm for any alpha),
distribution targets and alpha-gradients in every loss, ``return_support_size=True``, and
:func:`entmax_attention` (sparse attention in bounded memory, one alpha per head if wanted).
"""

from sk_entmax.entmax.lazy import lazy_names

__version__ = "1.3"  # the version of the entmax API this package mirrors

__all__ = [
    "AdaptiveEntmax",
    "BudgetBisect",
    "Entmax15",
    "Entmax15Loss",
    "EntmaxBisect",
    "EntmaxBisectLoss",
    "NormmaxBisect",
    "NormmaxBisectLoss",
    "Sparsemax",
    "SparsemaxBisect",
    "SparsemaxBisectLoss",
    "SparsemaxLoss",
    "budget_bisect",
    "entmax",
    "entmax15",
    "entmax15_loss",
    "entmax_attention",
    "entmax_attention_weights",
    "entmax_bisect",
    "entmax_bisect_loss",
    "entmax_loss",
    "normmax_bisect",
    "normmax_bisect_loss",
    "sparsemax",
    "sparsemax_bisect",
    "sparsemax_bisect_loss",
    "sparsemax_loss",
]

#: where each public name lives: imported on first use (PEP 562), so that the vocabulary
#: modules of this package (``sk_entmax.entmax.constraints``) import without torch
_LAZY = {
    "AdaptiveEntmax": "sk_entmax.entmax.root_finding",
    "BudgetBisect": "sk_entmax.entmax.root_finding",
    "Entmax15": "sk_entmax.entmax.activations",
    "Entmax15Loss": "sk_entmax.entmax.losses",
    "EntmaxBisect": "sk_entmax.entmax.root_finding",
    "EntmaxBisectLoss": "sk_entmax.entmax.losses",
    "NormmaxBisect": "sk_entmax.entmax.root_finding",
    "NormmaxBisectLoss": "sk_entmax.entmax.losses",
    "Sparsemax": "sk_entmax.entmax.activations",
    "SparsemaxBisect": "sk_entmax.entmax.root_finding",
    "SparsemaxBisectLoss": "sk_entmax.entmax.losses",
    "SparsemaxLoss": "sk_entmax.entmax.losses",
    "budget_bisect": "sk_entmax.entmax.root_finding",
    "entmax": "sk_entmax.entmax.dispatch",
    "entmax15": "sk_entmax.entmax.activations",
    "entmax15_loss": "sk_entmax.entmax.losses",
    "entmax_attention": "sk_entmax.entmax.attention",
    "entmax_attention_weights": "sk_entmax.entmax.attention",
    "entmax_bisect": "sk_entmax.entmax.root_finding",
    "entmax_bisect_loss": "sk_entmax.entmax.losses",
    "entmax_loss": "sk_entmax.entmax.dispatch",
    "normmax_bisect": "sk_entmax.entmax.root_finding",
    "normmax_bisect_loss": "sk_entmax.entmax.losses",
    "sparsemax": "sk_entmax.entmax.activations",
    "sparsemax_bisect": "sk_entmax.entmax.root_finding",
    "sparsemax_bisect_loss": "sk_entmax.entmax.losses",
    "sparsemax_loss": "sk_entmax.entmax.losses",
}


__getattr__, __dir__ = lazy_names(__name__, __all__, _LAZY)
