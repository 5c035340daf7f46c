"""The output mapping shared by the classifier networks: loss and probabilities at alpha.

Training and prediction both go through this one object, so ``predict_proba`` applies the
very mapping the loss was trained with (softmax at alpha = 1, exact entmax15 at 1.5, exact
sparsemax at 2, root finding otherwise) and its zeros are exact.
"""

from __future__ import annotations

import torch
from torch import nn

from sk_entmax.entmax import AdaptiveEntmax, entmax_loss
from sk_entmax.entmax.activations import TRACEABLE
from sk_entmax.entmax.algorithms import Case, apply_case, as_kernel, case_for, kernel_for
from sk_entmax.entmax.dispatch import implementations
from sk_entmax.entmax.losses import tsallis_entropy, tsallis_terms

__all__ = ["EntmaxHead"]


#: the implementations of :meth:`EntmaxHead.loss_and_grad`: those of ``entmax``, with plain
#: ``torch.softmax`` at alpha = 1 (finite scores there); a registered kernel replaces them
_LOSS_AND_GRAD = {**implementations("entmax"), Case.SOFTMAX: as_kernel(torch.softmax, "dim")}

#: the implementations of :meth:`EntmaxHead.proba`: those of ``entmax``
_PROBA = implementations("entmax")


class EntmaxHead(nn.Module):
    """alpha-entmax output: Fenchel-Young loss and sparse probabilities from scores.

    Parameters
    ----------
    alpha : float, default=1.5
        The entmax alpha (1 softmax, 1.5 entmax15, 2 sparsemax). With ``learn_alpha`` it is
        the starting value, clipped by :meth:`~sk_entmax.entmax.AdaptiveEntmax.start_alpha`
        to at least ``1.05``, since 1 is the edge of the learnable range.
    learn_alpha : bool, default=False
        Learn alpha with the network, as ``1 + (alpha_max - 1) * sigmoid(raw)``: always a
        valid alpha, in ``(1, alpha_max)`` by construction.
    alpha_max : float or None, default=2.0
        The upper end of a learned alpha's range (> 1); None leaves it unbounded
        (``1 + softplus(raw)``). Unused without ``learn_alpha``.

    Attributes
    ----------
    alpha_map : AdaptiveEntmax or None
        Holds the learnable alpha (parameter ``alpha_raw``) when ``learn_alpha`` is set.
    """

    def __init__(
        self, alpha: float = 1.5, learn_alpha: bool = False, alpha_max: float | None = 2.0
    ) -> None:
        super().__init__()
        self.fixed_alpha = float(alpha)
        self.alpha_map = None
        if learn_alpha:
            start = AdaptiveEntmax.start_alpha(self.fixed_alpha, alpha_max=alpha_max)
            self.alpha_map = AdaptiveEntmax(alpha=start, alpha_max=alpha_max)

    @property
    def alpha(self) -> float | torch.Tensor:
        """The alpha in use: the fixed number, or the learnable tensor."""
        return self.fixed_alpha if self.alpha_map is None else self.alpha_map.alpha

    def loss(self, scores: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Per-sample Fenchel-Young loss (class indices or distribution targets)."""
        return entmax_loss(scores, target, self.alpha)

    def proba(self, scores: torch.Tensor) -> torch.Tensor:
        """The sparse probabilities of ``scores`` (no gradient to alpha).

        On CPU, sparsemax and 1.5-entmax of scores without a gradient take the core's
        traceable form (``TRACEABLE`` of the core's ``activations``), the very function the
        ONNX graph of :func:`sk_entmax.export.to_onnx` is traced from, so the graph's
        probabilities are these, bit for bit. A kernel registered for the case
        (``register_kernel`` of the core's ``algorithms``) serves it instead. The case is
        decided once, here, and handed on (:func:`~sk_entmax.entmax.entmax` otherwise)."""
        alpha = self.alpha
        case = case_for(alpha)
        if case is Case.PER_ROW:
            alpha = alpha.detach()
        elif (
            case in TRACEABLE
            and scores.dim() == 2
            and scores.device.type == "cpu"
            and not torch.is_grad_enabled()
            and kernel_for(case, scores.device) is None
        ):
            return TRACEABLE[case](scores)
        return apply_case(_PROBA, scores, alpha, n_iter=50, case=case)

    @torch.no_grad()
    def loss_and_grad(
        self, scores: torch.Tensor, target: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-sample loss and its gradient in ``scores``, in closed form, at a fixed alpha.

        The Fenchel-Young loss is ``H(p) + <p, s> - <q, s> - H(q)`` with ``p`` the mapping of
        the scores ``s`` and ``q`` the target distribution, and its gradient in ``s`` is
        ``p - q``: one forward pass of the mapping gives both, with no autograd graph (the
        full-batch solver evaluates them on every row many times). At alpha = 1 the first
        two terms are ``logsumexp(s)``.

        Parameters
        ----------
        scores : torch.Tensor of shape (n_samples, n_classes)
            Finite scores.
        target : torch.Tensor
            Class indices (n_samples,) or a distribution (n_samples, n_classes).

        Returns
        -------
        loss : torch.Tensor of shape (n_samples,)
        grad : torch.Tensor of shape (n_samples, n_classes)

        Raises
        ------
        ValueError
            If alpha is learned: its gradient needs the autograd path (:meth:`loss`).
        """
        alpha = self.alpha
        case = case_for(alpha)
        if case is Case.PER_ROW:
            raise ValueError("loss_and_grad needs a fixed alpha; a learned alpha uses loss()")
        P = apply_case(_LOSS_AND_GRAD, scores, alpha, n_iter=50, case=case)
        if case is Case.SOFTMAX:
            conjugate = torch.logsumexp(scores, -1)
        else:
            # H(p) + <p, s> as one sum over the classes: H(p) = sum_j p_j h(p_j)
            conjugate = (P * tsallis_terms(P, alpha, case=case).add_(scores)).sum(-1)
        if target.is_floating_point():
            Q = target.to(scores.dtype)
            loss = conjugate - (Q * scores).sum(-1) - tsallis_entropy(Q, alpha, case=case)
            return loss, P.sub_(Q)
        index = target.long().unsqueeze(-1)
        loss = conjugate - scores.gather(-1, index).squeeze(-1)
        return loss, P.scatter_add_(-1, index, P.new_full(index.shape, -1.0))

    def extra_repr(self) -> str:
        if self.alpha_map is None:
            return f"alpha={self.fixed_alpha}, learn_alpha=False"
        alpha_max = self.alpha_map.alpha_max
        return f"alpha={self.fixed_alpha}, learn_alpha=True, alpha_max={alpha_max}"
