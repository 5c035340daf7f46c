"""One entry point for any alpha: the exact algorithm where one exists, root finding elsewhere.

``alpha = 1`` is softmax (and cross-entropy), ``alpha = 1.5`` the exact sort-based 1.5-entmax,
``alpha = 2`` the exact sparsemax, and any other number, or a tensor alpha (learned or per
row), goes to bisection. The estimators use these so that ``predict_proba`` applies the very
mapping the loss was trained with, and its zeros are exact.
"""

from __future__ import annotations

import torch

from sk_entmax.entmax._common import Param
from sk_entmax.entmax.activations import entmax15, sparsemax
from sk_entmax.entmax.algorithms import Mapping, kernel_for, mapping_for
from sk_entmax.entmax.losses import entmax15_loss, entmax_bisect_loss, sparsemax_loss
from sk_entmax.entmax.root_finding import entmax_bisect

__all__ = ["entmax", "entmax_loss"]


def entmax(
    X: torch.Tensor,
    alpha: Param = 1.5,
    dim: int = -1,
    n_iter: int | None = 50,
    training: bool = True,
    *,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """alpha-entmax by the best algorithm for ``alpha``.

    Parameters
    ----------
    X : torch.Tensor
        Scores; ``-inf`` masking, NaN and ``+inf`` as in :func:`~sk_entmax.entmax.sparsemax`.
    alpha : float or torch.Tensor, default=1.5
        1 gives softmax, 1.5 exact 1.5-entmax, 2 exact sparsemax; other numbers and tensors
        use :func:`~sk_entmax.entmax.entmax_bisect`.
    dim : int, default=-1
        The axis along which to apply the mapping.
    n_iter : int or None, default=50
        Bisection steps, where bisection is used.
    training : bool, default=True
        Custom autograd path or plain ops (see :func:`~sk_entmax.entmax.sparsemax`).
    return_support_size : bool, default=False
        Also return the number of nonzeros along ``dim`` (int64, ``dim`` of size 1).

    Returns
    -------
    P : torch.Tensor
        Same shape and dtype as ``X``.
    support_size : torch.Tensor, optional
        Only with ``return_support_size=True``.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import entmax
    >>> entmax(torch.tensor([[-2.0, 0.0, 0.5]]), alpha=2)
    tensor([[0.0000, 0.2500, 0.7500]])
    """
    kw = {"dim": dim, "training": training, "return_support_size": return_support_size}
    mapping = mapping_for(alpha)
    kernel = kernel_for(mapping, X.device)
    if kernel is not None:
        return kernel(X, alpha, n_iter=n_iter, **kw)
    if mapping is Mapping.SPARSEMAX:
        return sparsemax(X, **kw)
    if mapping is Mapping.ENTMAX15:
        return entmax15(X, **kw)
    return entmax_bisect(X, alpha, n_iter=n_iter, **kw)


def entmax_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    alpha: Param = 1.5,
    n_iter: int | None = 50,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """The Fenchel-Young loss matching :func:`entmax` at the same ``alpha``.

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_classes)
        Scores; ``-inf`` masks a class; ``+inf`` or NaN gives a NaN loss in its row only.
    target : torch.Tensor
        Class indices (n_samples,) or a distribution (n_samples, n_classes).
    alpha : float or torch.Tensor, default=1.5
        As in :func:`entmax`; 1 gives cross-entropy. A tensor alpha receives a gradient.
    n_iter : int or None, default=50
        Bisection steps, where bisection is used.
    return_support_size : bool, default=False
        Also return the number of nonzeros of each row's ``p*``, shape (n_samples, 1).

    Returns
    -------
    loss : torch.Tensor of shape (n_samples,)
        The loss of each sample.
    support_size : torch.Tensor of shape (n_samples, 1), optional
        Only with ``return_support_size=True``.
    """
    mapping = mapping_for(alpha)
    if mapping is Mapping.SPARSEMAX:
        return sparsemax_loss(X, target, return_support_size=return_support_size)
    if mapping is Mapping.ENTMAX15:
        return entmax15_loss(X, target, return_support_size=return_support_size)
    return entmax_bisect_loss(X, target, alpha, n_iter, return_support_size=return_support_size)
