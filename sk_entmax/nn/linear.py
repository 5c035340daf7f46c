"""The network behind SparsemaxClassifier and EntmaxClassifier.

With no hidden layer it is multinomial regression with an entmax link: the sparse analogue of
logistic regression. Hidden layers add ``Linear -> ReLU`` blocks before the output layer. The
module returns scores; :meth:`EntmaxLinearNet.loss` and :meth:`EntmaxLinearNet.proba` apply the
Fenchel-Young loss and the mapping at the module's alpha, so training and prediction can never
disagree on the mapping.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
from torch import nn

from sk_entmax.entmax import AdaptiveEntmax, entmax, entmax_loss

__all__ = ["EntmaxLinearNet"]

# A learned alpha lives in (1, inf); it cannot start exactly on the boundary alpha = 1.
LEARN_ALPHA_MIN_START = 1.05


class EntmaxLinearNet(nn.Module):
    """Linear (or ReLU multi-layer) scores with an alpha-entmax link.

    Parameters
    ----------
    n_features : int
        Number of input features.
    n_outputs : int
        Number of classes (or labels, for multi-label targets).
    hidden_layer_sizes : sequence of int, default=()
        Widths of the ReLU hidden layers; empty for a linear model.
    alpha : float, default=1.5
        The entmax alpha (1 softmax, 1.5 entmax15, 2 sparsemax). With ``learn_alpha`` it is
        the starting value (at least ``1.05``, since 1 is the edge of the learnable range).
    learn_alpha : bool, default=False
        Learn alpha with the weights, as ``1 + softplus(raw)`` (always valid).

    Attributes
    ----------
    layers : torch.nn.Sequential
        The score network.
    alpha_map : AdaptiveEntmax or None
        Holds the learnable alpha when ``learn_alpha`` is set.
    """

    def __init__(
        self,
        n_features: int,
        n_outputs: int,
        hidden_layer_sizes: Sequence[int] = (),
        alpha: float = 1.5,
        learn_alpha: bool = False,
    ) -> None:
        super().__init__()
        sizes = [n_features, *hidden_layer_sizes]
        blocks: list[nn.Module] = []
        for n_in, n_out in itertools.pairwise(sizes):
            blocks += [nn.Linear(n_in, n_out), nn.ReLU()]
        blocks.append(nn.Linear(sizes[-1], n_outputs))
        self.layers = nn.Sequential(*blocks)
        self.fixed_alpha = float(alpha)
        self.alpha_map = (
            AdaptiveEntmax(alpha=max(float(alpha), LEARN_ALPHA_MIN_START), alpha_max=None)
            if learn_alpha
            else None
        )

    @property
    def alpha(self) -> float | torch.Tensor:
        """The alpha in use: the fixed number, or the learnable tensor."""
        return self.fixed_alpha if self.alpha_map is None else self.alpha_map.alpha

    def forward(self, X: torch.Tensor, sample_weight: torch.Tensor | None = None) -> torch.Tensor:
        """Scores of shape (n_samples, n_outputs); ``sample_weight`` is for the loss only."""
        return self.layers(X)

    def loss(self, scores: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Per-sample Fenchel-Young loss at the current alpha (class indices or distributions)."""
        return entmax_loss(scores, target, self.alpha)

    def proba(self, scores: torch.Tensor) -> torch.Tensor:
        """The sparse probabilities: the same mapping the loss trains, exact zeros included."""
        alpha = self.alpha
        if isinstance(alpha, torch.Tensor):
            alpha = alpha.detach()
        return entmax(scores, alpha, training=False)
