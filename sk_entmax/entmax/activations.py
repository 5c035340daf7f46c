"""Exact sparse mappings: sparsemax and 1.5-entmax by sorting (or partial sorting).

Both maps solve, along one axis,

.. math::

    \\operatorname{entmax}_\\alpha(x) = \\arg\\max_{p \\in \\Delta} \\langle x, p \\rangle
    + H^T_\\alpha(p),

with the Tsallis entropy :math:`H^T_\\alpha`. For :math:`\\alpha = 2` (sparsemax, Martins &
Astudillo 2016) the solution is :math:`p = [x - \\tau]_+`, for :math:`\\alpha = 1.5` (Peters
et al. 2019) it is :math:`p = [x/2 - \\tau]_+^2`. The threshold :math:`\\tau` has a closed form
once the support is known, and the support is read off the sorted input. ``k`` asks for a
partial sort of the ``k`` largest entries only; rows whose support turns out to fill all
``k`` slots are solved again with ``2 k``, and so on, so the result is always exact.

Each map has a custom autograd function whose backward pass uses only the saved output,
and a plain-op path (``training=False``) that ``torch.jit.trace``, ``torch.export`` and ONNX
can take. The plain path always sorts fully, because the doubling of ``k`` depends on the
data.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.autograd import Function

from sk_entmax.entmax._common import apply_last, row_stats, safe_div

__all__ = ["Entmax15", "Sparsemax", "entmax15", "sparsemax"]

_NEG_INF = float("-inf")


def _check_k(k: int | None) -> int | None:
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be None or a positive int, got {k!r}")
    return k


def _ranks(Zs: torch.Tensor) -> torch.Tensor:
    return torch.arange(1, Zs.shape[-1] + 1, device=Zs.device, dtype=Zs.dtype)


def _sparsemax_sorted(Zs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Threshold and support size from rows sorted in decreasing order.

    ``-inf`` entries (masked) sort last and are never in the support.
    """
    finite = Zs > _NEG_INF
    Zs = torch.where(finite, Zs, 0.0)
    csum = Zs.cumsum(-1) - 1
    support = (_ranks(Zs) * Zs > csum) & finite
    size = support.sum(-1, keepdim=True)
    tau = csum.gather(-1, (size - 1).clamp_min(0)) / size.clamp_min(1).to(Zs.dtype)
    return tau, size


def _entmax15_sorted(Zs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Threshold and support size of 1.5-entmax (inputs already halved), sorted rows.

    For a support made of the ``r`` largest entries, ``sum_i (z_i - tau)^2 = 1`` gives
    ``tau = mean - sqrt((1 - r * var) / r)``; the support is the largest ``r`` for which
    ``tau <= z_r``.
    """
    finite = Zs > _NEG_INF
    Zs = torch.where(finite, Zs, 0.0)
    rho = _ranks(Zs)
    mean = Zs.cumsum(-1) / rho
    mean_sq = (Zs * Zs).cumsum(-1) / rho
    delta = (1 - rho * (mean_sq - mean * mean)) / rho
    tau = mean - delta.clamp_min(0).sqrt()
    size = ((tau <= Zs) & finite).sum(-1, keepdim=True)
    tau = tau.gather(-1, (size - 1).clamp_min(0))
    return tau, size


_Solver = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def _threshold(Z: torch.Tensor, k: int | None, solve: _Solver) -> torch.Tensor:
    """Exact threshold along the last axis, partial-sorting ``k`` entries with doubling."""
    d = Z.shape[-1]
    if k is None or k >= d:
        return solve(Z.sort(dim=-1, descending=True).values)[0]
    tau, size = solve(Z.topk(k, dim=-1).values)
    unsolved = (size == k).squeeze(-1)
    while unsolved.any():
        k = 2 * k
        rows = Z[unsolved]
        if k >= d:
            sub_tau, _ = solve(rows.sort(dim=-1, descending=True).values)
            tau[unsolved] = sub_tau
            break
        sub_tau, sub_size = solve(rows.topk(k, dim=-1).values)
        tau[unsolved] = sub_tau
        still = torch.zeros_like(unsolved)
        still[unsolved] = (sub_size == k).squeeze(-1)
        unsolved = still
    return tau


def _sparsemax_last(Z: torch.Tensor, k: int | None) -> torch.Tensor:
    max_val, _ = row_stats(Z)
    Z = Z - max_val
    tau = _threshold(Z, k, _sparsemax_sorted)
    return (Z - tau).clamp_min(0)


def _entmax15_last(Z: torch.Tensor, k: int | None) -> torch.Tensor:
    max_val, _ = row_stats(Z)
    Z = (Z - max_val) / 2
    tau = _threshold(Z, k, _entmax15_sorted)
    return (Z - tau).clamp_min(0).square()


def entmax_vjp(dY: torch.Tensor, gppr: torch.Tensor) -> torch.Tensor:
    """Vector-Jacobian product of an entmax-type map along the last axis.

    With ``gppr = 1 / Omega''(p)`` on the support (0 elsewhere), the Jacobian is
    ``diag(g) - g g^T / sum(g)``. Rows with an empty support get a zero gradient.
    """
    gdY = gppr * dY
    q = safe_div(gdY.sum(-1, keepdim=True), gppr.sum(-1, keepdim=True))
    return gdY - q * gppr


class SparsemaxFunction(Function):
    """Autograd function for sparsemax along the last axis; saves only the output."""

    @staticmethod
    def forward(ctx, Z: torch.Tensor, k: int | None) -> torch.Tensor:
        Y = _sparsemax_last(Z, k)
        ctx.save_for_backward(Y)
        return Y

    @staticmethod
    def backward(ctx, dY: torch.Tensor):
        (Y,) = ctx.saved_tensors
        return entmax_vjp(dY, (Y > 0).to(dY.dtype)), None


class Entmax15Function(Function):
    """Autograd function for 1.5-entmax along the last axis; saves only the output."""

    @staticmethod
    def forward(ctx, Z: torch.Tensor, k: int | None) -> torch.Tensor:
        Y = _entmax15_last(Z, k)
        ctx.save_for_backward(Y)
        return Y

    @staticmethod
    def backward(ctx, dY: torch.Tensor):
        (Y,) = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph: keep sqrt's gradient finite at 0
            positive = Y > 0
            gppr = torch.where(positive, torch.where(positive, Y, 1).sqrt(), 0)
        else:
            gppr = Y.sqrt()
        return entmax_vjp(dY, gppr), None


def sparsemax(
    X: torch.Tensor, dim: int = -1, k: int | None = None, training: bool = True
) -> torch.Tensor:
    """sparsemax: the Euclidean projection onto the probability simplex.

    Solves ``min_p ||x - p||^2`` subject to ``p >= 0, sum(p) == 1`` along ``dim``
    (Martins & Astudillo, 2016). The result has exact zeros wherever ``x`` falls below the
    threshold.

    Parameters
    ----------
    X : torch.Tensor
        Scores. ``-inf`` entries are masked: they get probability 0, and a row that is all
        ``-inf`` maps to all zeros with a zero gradient. A NaN gives NaN in its row only.
        float16 and bfloat16 are computed in float32 and returned in the input dtype.
    dim : int, default=-1
        The axis along which to project; any axis, negative or not.
    k : int or None, default=None
        Partial-sort only the ``k`` largest entries; best slightly above the expected
        support size. Rows whose support reaches ``k`` are solved again with ``2 k``, so the
        result is exact for any ``k``. ``None`` sorts fully.
    training : bool, default=True
        ``True`` uses the custom autograd function (backward from the output alone);
        ``False`` uses plain ops with a full sort, for ``torch.jit.trace``,
        ``torch.export`` and ONNX. Both give the same values.

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``X``; non-negative, summing to 1 along ``dim``.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import sparsemax
    >>> sparsemax(torch.tensor([-2.0, 0.0, 0.5]))
    tensor([0.0000, 0.2500, 0.7500])
    """
    k = _check_k(k)
    if training:
        return apply_last(SparsemaxFunction.apply, X, dim, k)
    return apply_last(_sparsemax_last, X, dim, None)


def entmax15(
    X: torch.Tensor, dim: int = -1, k: int | None = None, training: bool = True
) -> torch.Tensor:
    """1.5-entmax: a sparse mapping between softmax and sparsemax (Peters et al., 2019).

    Solves ``max_p <x, p> + H_1.5(p)`` subject to ``p >= 0, sum(p) == 1`` along ``dim``,
    where ``H_1.5(p) = (1 - sum p^1.5) / 0.75`` is the Tsallis 1.5-entropy. The solution is
    ``p = [x / 2 - tau]_+^2``.

    Parameters
    ----------
    X : torch.Tensor
        Scores; ``-inf`` masking, NaN and half precision are handled as in
        :func:`sparsemax`.
    dim : int, default=-1
        The axis along which to apply the mapping.
    k : int or None, default=None
        Partial-sort size with doubling, as in :func:`sparsemax`.
    training : bool, default=True
        Custom autograd function (``True``) or traceable plain ops (``False``).

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``X``; non-negative, summing to 1 along ``dim``.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import entmax15
    >>> entmax15(torch.tensor([-2.0, 0.0, 0.5]))
    tensor([0.0000, 0.3260, 0.6740])
    """
    k = _check_k(k)
    if training:
        return apply_last(Entmax15Function.apply, X, dim, k)
    return apply_last(_entmax15_last, X, dim, None)


class Sparsemax(nn.Module):
    """Module twin of :func:`sparsemax`; uses the plain-op path in ``eval()`` mode.

    Parameters
    ----------
    dim : int, default=-1
        The axis along which to project.
    k : int or None, default=None
        Partial-sort size with doubling (see :func:`sparsemax`).

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import Sparsemax
    >>> Sparsemax(dim=-1)(torch.tensor([[1.0, 2.0, 0.0]]))
    tensor([[0., 1., 0.]])
    """

    def __init__(self, dim: int = -1, k: int | None = None) -> None:
        super().__init__()
        self.dim = dim
        self.k = k

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return sparsemax(X, dim=self.dim, k=self.k, training=self.training)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, k={self.k}"


class Entmax15(nn.Module):
    """Module twin of :func:`entmax15`; uses the plain-op path in ``eval()`` mode.

    Parameters
    ----------
    dim : int, default=-1
        The axis along which to apply the mapping.
    k : int or None, default=None
        Partial-sort size with doubling (see :func:`sparsemax`).

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import Entmax15
    >>> Entmax15()(torch.tensor([[-2.0, 0.0, 0.5]]))
    tensor([[0.0000, 0.3260, 0.6740]])
    """

    def __init__(self, dim: int = -1, k: int | None = None) -> None:
        super().__init__()
        self.dim = dim
        self.k = k

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return entmax15(X, dim=self.dim, k=self.k, training=self.training)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, k={self.k}"
