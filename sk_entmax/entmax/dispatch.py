"""One entry point for any alpha: the exact algorithm where one exists, root finding elsewhere.

``alpha = 1`` is softmax (and cross-entropy), ``alpha = 1.5`` the exact 1.5-entmax,
``alpha = 2`` the exact sparsemax, and any other number, or a tensor alpha (learned or per
row), goes to bisection. The estimators use these so that ``predict_proba`` applies the very
mapping the loss was trained with, and its zeros are exact. Both take their algorithm from
:func:`sk_entmax.entmax.algorithms.select`: a kernel registered for the case on the input's
device, else the core's own.
"""

from __future__ import annotations

import torch

from sk_entmax.entmax._fenchel_young import _fenchel_young_loss, projection
from sk_entmax.entmax.activations import _entmax15, _sparsemax
from sk_entmax.entmax.algorithms import Case, Kernel, apply_case, as_kernel
from sk_entmax.entmax.common import Param, check_alpha, check_n_iter
from sk_entmax.entmax.root_finding import _entmax_bisect

__all__ = ["entmax", "entmax_loss"]


def _checked_root(
    X: torch.Tensor, alpha: Param, *, n_iter: int | None, owner: str, **rest: object
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Root finding with its ``alpha`` and ``n_iter`` checked first, naming ``owner``."""
    check_alpha(alpha, owner)
    n_iter = check_n_iter(n_iter, owner)
    return _entmax_bisect(X, alpha, n_iter=n_iter, ensure_sum_one=True, owner=owner, **rest)


def implementations(owner: str = "entmax") -> dict[Case, Kernel]:
    """The core's own implementation of each case, with the kernels' calling convention.

    The exact sparsemax and 1.5-entmax, and root finding for the others (softmax included),
    which checks ``alpha`` and ``n_iter`` (the exact cases use neither); each receives the
    case it serves, decided once by :func:`~sk_entmax.entmax.algorithms.select`. These are
    what :func:`entmax` calls where no kernel is registered; a caller that replaces one case
    (``EntmaxHead``'s softmax) starts from a copy of them.

    Parameters
    ----------
    owner : str, default="entmax"
        The public name their parameter errors name.

    Returns
    -------
    implementations : dict
        A new dict from each :class:`~sk_entmax.entmax.algorithms.Case` to its
        implementation.
    """
    exact = ("dim", "training", "return_support_size")
    root = ("alpha", "dim", "n_iter", "training", "return_support_size")
    return {
        Case.SPARSEMAX: as_kernel(_sparsemax, *exact, k=None, owner=owner),
        Case.ENTMAX15: as_kernel(_entmax15, *exact, k=None, owner=owner),
        **{
            case: as_kernel(_checked_root, *root, owner=owner, case=case)
            for case in (Case.SOFTMAX, Case.ROOT, Case.PER_ROW)
        },
    }


_ENTMAX = implementations("entmax")
_ENTMAX_LOSS = implementations("entmax_loss")


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
    return apply_case(
        _ENTMAX,
        X,
        alpha,
        dim=dim,
        n_iter=n_iter,
        training=training,
        return_support_size=return_support_size,
    )


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
    if isinstance(alpha, torch.Tensor):  # before the loss converts it to X's dtype
        check_alpha(alpha, "entmax_loss")

    project = projection(_ENTMAX_LOSS, n_iter)  # the case: decided once, as it projects
    return _fenchel_young_loss(X, target, project, alpha, "tsallis", return_support_size)
