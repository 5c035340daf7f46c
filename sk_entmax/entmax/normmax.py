"""alpha-normmax, ``max_p <x, p> - ||p||_alpha`` over the simplex, by bisection.

The solution is ``p = q / sum(q)`` with ``q = [x - tau]_+ ** (1 / (alpha - 1))`` and
``||q||_alpha = 1``; the gradients in ``X`` and in a tensor alpha are in closed form.
"""

from __future__ import annotations

import torch
from torch.autograd import Function

from sk_entmax.entmax._modules import _MappingModule
from sk_entmax.entmax.common import (
    Param,
    apply_param_last,
    check_alpha,
    check_n_iter,
    row_stats,
    safe_div,
    safe_log,
    safe_pow,
    save_alpha,
    saved_alpha,
    with_support,
)
from sk_entmax.entmax.constraints import Real, check
from sk_entmax.entmax.solvers import normalize
from sk_entmax.entmax.tracing import owner_of

__all__ = ["NormmaxBisect", "normmax_bisect"]

#: the order of the norm when it is a number (a tensor is not checked value by value)
_NORMMAX_ALPHA = Real(1.0, low_open=True, note="the order of the norm")


def _normmax_last(Z: torch.Tensor, alpha: Param, n_iter: int) -> torch.Tensor:
    """alpha-normmax: ``p = q / sum(q)``, ``q = [z - tau]_+^(1/(alpha-1))``, ``||q||_a = 1``."""
    max_val, _ = row_stats(Z)
    Z = Z - max_val
    d = Z.shape[-1]
    inv = 1 / (alpha - 1)
    tau_lo = torch.full((*Z.shape[:-1], 1), -1.0, dtype=Z.dtype, device=Z.device)
    width = -(d ** (-1 / inv)) - tau_lo  # tau_hi = -(1/d)**(alpha-1)
    for _ in range(n_iter):
        width = width / 2
        tau_mid = tau_lo + width
        q = (Z - tau_mid).clamp_min(0) ** inv
        above = (q**alpha).sum(-1, keepdim=True) >= 1
        tau_lo = torch.where(above, tau_mid, tau_lo)
    return normalize(q)


class NormmaxBisectFunction(Function):
    """alpha-normmax along the last axis; saves only the output (and a tensor alpha)."""

    @staticmethod
    def forward(ctx, Z, alpha, n_iter):
        return save_alpha(ctx, _normmax_last(Z, alpha, n_iter), alpha)

    @staticmethod
    def backward(ctx, dY):
        Y, alpha = saved_alpha(ctx)
        # q = Y / N with N = ||Y||_alpha is the pre-normalisation solution (||q|| = 1).
        norm = safe_pow(Y, alpha).sum(-1, keepdim=True) ** (1 / alpha)
        q = safe_div(Y, norm)
        b = safe_pow(q, 2 - alpha)
        w = b * (dY - (Y * dY).sum(-1, keepdim=True))
        dX = norm / (alpha - 1) * (w - Y * w.sum(-1, keepdim=True))
        d_alpha = None
        if ctx.needs_input_grad[1]:
            q_sum = q.sum(-1, keepdim=True)
            q_log_q = q * safe_log(q)
            dnu = -safe_div(
                (safe_pow(q, alpha) * safe_log(q)).sum(-1, keepdim=True), alpha * q_sum
            )
            dq = (-q_log_q - b * dnu) / (alpha - 1)
            dp = norm * (dq - Y * dq.sum(-1, keepdim=True))
            d_alpha = (dY * dp).sum(-1, keepdim=True)
        return dX, d_alpha, None


def normmax_bisect(
    X: torch.Tensor,
    alpha: Param = 2,
    dim: int = -1,
    n_iter: int | None = 50,
    *,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """alpha-normmax: ``max_p <x, p> - ||p||_alpha`` over the simplex, by bisection.

    Parameters
    ----------
    X : torch.Tensor
        Scores; ``-inf`` masking, NaN and ``+inf`` as in :func:`~sk_entmax.entmax.sparsemax`.
    alpha : float or torch.Tensor, default=2
        The norm's order, > 1: a number or a per-row tensor (size 1 along ``dim``).
        Differentiable when a tensor.
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
        Same shape and dtype as ``X``; sums to 1 along ``dim``.
    support_size : torch.Tensor, optional
        Only with ``return_support_size=True``.
    """
    alpha, n_iter = _check_normmax(alpha, n_iter, "normmax_bisect")
    return _normmax_bisect(X, alpha, dim, n_iter, return_support_size, "normmax_bisect")


def _check_normmax(alpha: Param, n_iter: int | None, owner: str) -> tuple[Param, int]:
    """The ``alpha`` and ``n_iter`` of a normmax call of ``owner``, checked."""
    if not isinstance(check_alpha(alpha, owner), torch.Tensor):
        check("alpha", alpha, _NORMMAX_ALPHA, owner_of(owner))
    return alpha, check_n_iter(n_iter, owner)


def _normmax_bisect(
    X: torch.Tensor,
    alpha: Param,
    dim: int,
    n_iter: int,
    return_support_size: bool = False,
    owner: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """:func:`normmax_bisect` with its parameters already checked (by :func:`_check_normmax`)."""
    P = apply_param_last(NormmaxBisectFunction.apply, X, dim, alpha, "alpha", n_iter, owner=owner)
    return with_support(P, dim, return_support_size)


class NormmaxBisect(_MappingModule):
    """Module twin of :func:`normmax_bisect`.

    Parameters
    ----------
    alpha : float or torch.Tensor, default=2
        The norm's order, > 1.
    dim : int, default=-1
        The axis along which to apply the mapping.
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    return_support_size : bool, default=False
        Return ``(P, support_size)``, the number of nonzeros along ``dim`` too.
    """

    _function = staticmethod(normmax_bisect)
    _argument_names = ("alpha", "dim", "n_iter")
    _passes_training = False

    def __init__(
        self,
        alpha: Param = 2,
        dim: int = -1,
        n_iter: int | None = 50,
        return_support_size: bool = False,
    ) -> None:
        super().__init__(return_support_size, alpha=alpha, dim=dim, n_iter=n_iter)
