"""The PyTorch entmax core: a drop-in for the ``entmax`` package, correct where it is not.

``from entmax import X`` becomes ``from sk_entmax.entmax import X``. Every mapping takes
Ludwig's ``training=`` keyword too. Extras: :class:`AdaptiveEntmax` (a learnable alpha kept
in range), :func:`entmax` / :func:`entmax_loss` (the exact algorithm for any alpha),
distribution targets and alpha-gradients in every loss, ``return_support_size=True``, and
:func:`entmax_attention` (sparse attention in bounded memory, one alpha per head if wanted).
"""

from sk_entmax.entmax.activations import Entmax15, Sparsemax, entmax15, sparsemax
from sk_entmax.entmax.attention import entmax_attention, entmax_attention_weights
from sk_entmax.entmax.dispatch import entmax, entmax_loss
from sk_entmax.entmax.losses import (
    Entmax15Loss,
    EntmaxBisectLoss,
    NormmaxBisectLoss,
    SparsemaxBisectLoss,
    SparsemaxLoss,
    entmax15_loss,
    entmax_bisect_loss,
    normmax_bisect_loss,
    sparsemax_bisect_loss,
    sparsemax_loss,
)
from sk_entmax.entmax.root_finding import (
    AdaptiveEntmax,
    BudgetBisect,
    EntmaxBisect,
    NormmaxBisect,
    SparsemaxBisect,
    budget_bisect,
    entmax_bisect,
    normmax_bisect,
    sparsemax_bisect,
)

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
