"""The network behind SparsemaxClassifier and EntmaxClassifier.

With no hidden layer it is multinomial regression with an entmax link: the sparse analogue of
logistic regression. Hidden layers add ``Linear -> ReLU`` blocks before the output layer. The
module returns scores; :meth:`EntmaxLinearNet.loss` and :meth:`EntmaxLinearNet.proba` go
through one :class:`~sk_entmax.nn.head.EntmaxHead`, so training and prediction can never
disagree on the mapping.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import ClassVar

import torch
from torch import nn

from sk_entmax.nn._tensor_spec import BOOL, REAL, Argument, Extent, StateSpec, name_forms
from sk_entmax.nn.head import EntmaxHead

__all__ = ["EntmaxLinearNet"]


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
        The entmax alpha; the starting value when ``learn_alpha`` is set.
    learn_alpha : bool, default=False
        Learn alpha with the weights (see :class:`~sk_entmax.nn.head.EntmaxHead`).
    alpha_max : float or None, default=2.0
        The upper end of a learned alpha's range ``(1, alpha_max)``; None: unbounded.

    Attributes
    ----------
    layers : torch.nn.Sequential
        The score network.
    head : EntmaxHead
        The output mapping (and the learnable alpha, if any).
    """

    #: for :mod:`sk_entmax.persistence`: the names its tensors can have, and which stored
    #: tensors bound each argument (a new argument must be added here)
    state_spec: ClassVar[StateSpec] = StateSpec(
        names=name_forms("layers.<i>.(weight|bias)", "head.alpha_map.alpha_raw"),
        arguments={
            "n_features": Argument("int", Extent("layers.0.weight", axis=1)),
            "n_outputs": Argument("int", Extent("layers.<i>.weight", axis=0)),
            "hidden_layer_sizes": Argument(
                "ints",
                Extent("layers.<i>.weight", axis=0),
                length=Extent("layers.<i>.weight", less=1),
            ),
            "alpha": REAL,
            "learn_alpha": BOOL,
            "alpha_max": Argument("real or None"),
        },
    )

    def __init__(
        self,
        n_features: int,
        n_outputs: int,
        hidden_layer_sizes: Sequence[int] = (),
        alpha: float = 1.5,
        learn_alpha: bool = False,
        alpha_max: float | None = 2.0,
    ) -> None:
        super().__init__()
        sizes = [n_features, *hidden_layer_sizes]
        blocks: list[nn.Module] = []
        for n_in, n_out in itertools.pairwise(sizes):
            blocks += [nn.Linear(n_in, n_out), nn.ReLU()]
        blocks.append(nn.Linear(sizes[-1], n_outputs))
        self.layers = nn.Sequential(*blocks)
        self.head = EntmaxHead(alpha, learn_alpha, alpha_max)

    @property
    def alpha(self) -> float | torch.Tensor:
        """The alpha in use: the fixed number, or the learnable tensor."""
        return self.head.alpha

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Scores of shape (n_samples, n_outputs)."""
        return self.layers(X)

    def penalized_parameters(self) -> list[nn.Parameter]:
        """The parameters an L2 penalty applies to: the weight matrices, not the intercepts
        or a learned alpha."""
        return [layer.weight for layer in self.layers if isinstance(layer, nn.Linear)]

    def loss(self, scores: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Per-sample Fenchel-Young loss at the current alpha."""
        return self.head.loss(scores, target)

    def loss_and_grad(
        self, scores: torch.Tensor, target: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-sample loss and its gradient in the scores, without autograd, at a fixed
        alpha (see :meth:`~sk_entmax.nn.head.EntmaxHead.loss_and_grad`)."""
        return self.head.loss_and_grad(scores, target)

    def proba(self, scores: torch.Tensor) -> torch.Tensor:
        """The sparse probabilities: the same mapping the loss trains, exact zeros included."""
        return self.head.proba(scores)
