"""Budget sparsemax: ``max_p <x, p> - ||p||^2 / 2`` s.t. ``0 <= p <= 1, sum(p) == budget``.

The solution is ``p = clip(x - tau, 0, 1)``, its threshold found by bisection; the gradients
in ``X`` and in a tensor budget are in closed form.
"""

from __future__ import annotations

import math

import torch
from torch.autograd import Function

from sk_entmax.entmax._modules import _MappingModule
from sk_entmax.entmax.common import Param, apply_param_last, check_n_iter, safe_div, with_support
from sk_entmax.entmax.constraints import AnyOf, Real, Satisfies, check
from sk_entmax.entmax.tracing import owner_of

__all__ = ["BudgetBisect", "budget_bisect"]


def _tensor(value: object) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(value)
    return value


def _budget_constraint(size: float) -> AnyOf:
    """A budget: a number in ``(0, size]`` or a tensor."""
    return AnyOf(
        Real(0.0, size, low_open=True, note="the size of dim"),
        Satisfies("a tensor", _tensor),
    )


def _budget_last(Z: torch.Tensor, budget: Param, n_iter: int) -> torch.Tensor:
    """``p = clip(z - tau, 0, 1)`` with ``sum(p) == budget``."""
    d = Z.shape[-1]
    max_val = Z.amax(-1, keepdim=True)
    min_val = torch.where(Z > float("-inf"), Z, max_val).amin(-1, keepdim=True)
    tau_lo = min_val - budget / d
    width = max_val - min_val
    for _ in range(n_iter):
        width = width / 2
        tau_mid = tau_lo + width
        p = (Z - tau_mid).clamp(0, 1)
        above = p.sum(-1, keepdim=True) >= budget
        tau_lo = torch.where(above, tau_mid, tau_lo)
    return p


class BudgetBisectFunction(Function):
    """Budget sparsemax along the last axis; saves only the output."""

    @staticmethod
    def forward(ctx, Z, budget, n_iter):
        Y = _budget_last(Z, budget, n_iter)
        ctx.save_for_backward(Y)
        return Y

    @staticmethod
    def backward(ctx, dY):
        (Y,) = ctx.saved_tensors
        free = ((Y > 0) & (Y < 1)).to(dY.dtype)
        mean = safe_div((free * dY).sum(-1, keepdim=True), free.sum(-1, keepdim=True))
        dX = free * (dY - mean)
        d_budget = mean if ctx.needs_input_grad[1] else None
        return dX, d_budget, None


def budget_bisect(
    X: torch.Tensor,
    budget: Param = 2,
    dim: int = -1,
    n_iter: int | None = 50,
    *,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Budget sparsemax: ``max_p <x, p> - ||p||^2 / 2`` s.t. ``0 <= p <= 1, sum(p) == budget``.

    Parameters
    ----------
    X : torch.Tensor
        Scores; ``-inf`` masking, NaN and ``+inf`` as in :func:`~sk_entmax.entmax.sparsemax`.
    budget : float or torch.Tensor, default=2
        The total mass, ``0 < budget <= X.shape[dim]``: a number or a per-row tensor (size 1
        along ``dim``). Differentiable when a tensor.
    dim : int, default=-1
        The axis along which to apply the mapping.
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    return_support_size : bool, default=False
        Also return the number of nonzeros along ``dim`` (int64, shaped like ``X`` with
        ``dim`` of size 1), as :func:`~sk_entmax.entmax.sparsemax` does.

    Returns
    -------
    P : torch.Tensor
        Same shape and dtype as ``X``; entries in ``[0, 1]`` summing to ``budget``.
    support_size : torch.Tensor, optional
        Only with ``return_support_size=True``.
    """
    n_iter = check_n_iter(n_iter, "budget_bisect")
    if not isinstance(budget, torch.Tensor):  # a tensor is checked when it is broadcast
        size = X.shape[dim] if X.dim() else math.inf
        budget = check("budget", budget, _budget_constraint(size), owner_of("budget_bisect"))
    P = apply_param_last(
        BudgetBisectFunction.apply, X, dim, budget, "budget", n_iter, owner="budget_bisect"
    )
    return with_support(P, dim, return_support_size)


class BudgetBisect(_MappingModule):
    """Module twin of :func:`budget_bisect`.

    Parameters
    ----------
    budget : float or torch.Tensor, default=2
        The total mass of the output.
    dim : int, default=-1
        The axis along which to apply the mapping.
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    return_support_size : bool, default=False
        Return ``(P, support_size)``, the number of nonzeros along ``dim`` too.
    """

    _function = staticmethod(budget_bisect)
    _argument_names = ("budget", "dim", "n_iter")
    _passes_training = False

    def __init__(
        self,
        budget: Param = 2,
        dim: int = -1,
        n_iter: int | None = 50,
        return_support_size: bool = False,
    ) -> None:
        super().__init__(return_support_size, budget=budget, dim=dim, n_iter=n_iter)
