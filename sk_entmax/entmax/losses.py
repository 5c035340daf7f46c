"""Fenchel-Young losses of the entmax mappings (Blondel, Martins & Niculae, 2019).

For a mapping ``p*(x) = argmax_p <x, p> + H(p)`` over the simplex, the loss against a target
distribution ``q`` is

.. math::

    L(x; q) = H(p^*) - H(q) + \\langle p^* - q, x \\rangle \\ge 0,
    \\qquad \\nabla_x L = p^* - q .

An integer target ``y`` means the one-hot ``q = e_y`` (and ``H(e_y) = 0``), which gives the
sparse analogue of cross-entropy; a float target is any distribution, for instance the label
proportions ``y / |y|`` of a multi-label row, which gives the multi-label sparsemax loss of
Martins & Astudillo (2016). ``H`` is the Tsallis alpha-entropy for the entmax losses (Shannon
at alpha = 1, where the loss is cross-entropy) and ``-||p||_alpha`` for normmax.

The derivative in a tensor alpha is ``dH/dalpha (p*) - dH/dalpha (q)`` (the envelope theorem:
``p*`` is optimal, so its own dependence on alpha drops out). Second derivatives flow through
the mapping, so ``gradgradcheck`` holds.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from sk_entmax.entmax._fenchel_young import FenchelYoungFunction as FenchelYoungFunction
from sk_entmax.entmax._fenchel_young import _fenchel_young_loss, projection
from sk_entmax.entmax._fenchel_young import norm_entropy as norm_entropy
from sk_entmax.entmax._fenchel_young import tsallis_entropy as tsallis_entropy
from sk_entmax.entmax._fenchel_young import tsallis_terms as tsallis_terms
from sk_entmax.entmax._modules import _FunctionModule
from sk_entmax.entmax.activations import _check_k, _entmax15, _sparsemax
from sk_entmax.entmax.algorithms import Case, Kernel, as_kernel, exact_alpha
from sk_entmax.entmax.common import Param, check_alpha, check_n_iter
from sk_entmax.entmax.constraints import invalid
from sk_entmax.entmax.normmax import _check_normmax, _normmax_bisect
from sk_entmax.entmax.root_finding import _entmax_bisect

__all__ = [
    "Entmax15Loss",
    "EntmaxBisectLoss",
    "NormmaxBisectLoss",
    "SparsemaxBisectLoss",
    "SparsemaxLoss",
    "entmax15_loss",
    "entmax_bisect_loss",
    "normmax_bisect_loss",
    "sparsemax_bisect_loss",
    "sparsemax_loss",
]

REDUCTIONS = ("elementwise_mean", "mean", "sum", "none")


# --------------------------------------------------------------------------- projections


def _exact(
    case: Case, function: Callable[..., torch.Tensor], k: int | None, owner: str
) -> dict[Case, Kernel]:
    """The implementations of a loss whose name fixes its ``case``: ``function`` (the
    checked-``k`` :func:`~sk_entmax.entmax.activations._sparsemax` or ``_entmax15``) with
    the kernels' calling convention, for that case alone."""
    return {case: as_kernel(function, "dim", "training", "return_support_size", k=k, owner=owner)}


def _root(owner: str, case: Case) -> Kernel:
    """Root finding (its ``alpha`` and ``n_iter`` checked) with the kernels' convention, as
    the implementation of ``case``."""
    return as_kernel(_entmax_bisect, *_ROOT_ARGUMENTS, ensure_sum_one=True, owner=owner, case=case)


_ROOT_ARGUMENTS = ("alpha", "dim", "n_iter", "training", "return_support_size")

#: entmax_bisect_loss's implementations: root finding for every alpha, as a kernel may
#: replace it for the alpha's case
_ROOT_EVERYWHERE = {case: _root("entmax_bisect_loss", case) for case in Case}


def _sparse_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    project: Callable[..., torch.Tensor],
    case: Case,
    return_support_size: bool,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """The Fenchel-Young loss of a mapping whose name fixes its ``case`` (sparsemax,
    1.5-entmax): the case's alpha, and the case itself, handed on, decided by no one."""
    alpha = exact_alpha(case)
    return _fenchel_young_loss(
        X, target, project, alpha, "tsallis", return_support_size, case=case
    )


# --------------------------------------------------------------------------- functional


def sparsemax_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    k: int | None = None,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """sparsemax loss: the sparse analogue of cross-entropy (Martins & Astudillo, 2016).

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_classes)
        Scores; leading axes beyond one are flattened and restored. ``-inf`` masks a class;
        ``+inf`` or NaN gives a NaN loss in its row only (``+inf`` has no limit defined here,
        as in ``torch.softmax``).
    target : torch.Tensor
        Class indices of shape (n_samples,), ``0 <= target < n_classes``, or a distribution
        of shape (n_samples, n_classes) whose rows sum to 1 (e.g. multi-label ``y / |y|``).
    k : int or None, default=None
        Accepted and not needed (see :func:`~sk_entmax.entmax.sparsemax`).
    return_support_size : bool, default=False
        Also return the support size of the mapping's output ``p*``: the number of nonzeros
        of each row, an int64 tensor of shape (n_samples, 1) (as in the ``entmax``
        package's unreleased master).

    Returns
    -------
    loss : torch.Tensor of shape (n_samples,)
        The loss of each sample, ``>= 0``.
    support_size : torch.Tensor of shape (n_samples, 1), optional
        Only with ``return_support_size=True``.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import sparsemax_loss
    >>> sparsemax_loss(torch.tensor([[10.0, 0.0, 0.0]]), torch.tensor([0]))
    tensor([0.])
    """
    k = _check_k(k, "sparsemax_loss")
    project = projection(_exact(Case.SPARSEMAX, _sparsemax, k, "sparsemax_loss"))
    return _sparse_loss(X, target, project, Case.SPARSEMAX, return_support_size)


def sparsemax_bisect_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    n_iter: int | None = 50,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """sparsemax loss computed with the bisection mapping.

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_classes)
        Scores; ``-inf`` masks a class; ``+inf`` or NaN gives a NaN loss in its row only.
    target : torch.Tensor
        Class indices (n_samples,) or a distribution (n_samples, n_classes).
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    return_support_size : bool, default=False
        Also return the support size of the mapping's output ``p*``: the number of nonzeros
        of each row, an int64 tensor of shape (n_samples, 1) (as in the ``entmax``
        package's unreleased master).

    Returns
    -------
    loss : torch.Tensor of shape (n_samples,)
        The loss of each sample.
    support_size : torch.Tensor of shape (n_samples, 1), optional
        Only with ``return_support_size=True``.
    """
    n_iter = check_n_iter(n_iter, "sparsemax_bisect_loss")
    root = {Case.SPARSEMAX: _root("sparsemax_bisect_loss", Case.SPARSEMAX)}
    return _sparse_loss(X, target, projection(root, n_iter), Case.SPARSEMAX, return_support_size)


def entmax15_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    k: int | None = None,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """1.5-entmax loss (Peters et al., 2019).

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_classes)
        Scores; ``-inf`` masks a class; ``+inf`` or NaN gives a NaN loss in its row only.
    target : torch.Tensor
        Class indices (n_samples,) or a distribution (n_samples, n_classes).
    k : int or None, default=None
        Accepted and not needed (see :func:`~sk_entmax.entmax.sparsemax`).
    return_support_size : bool, default=False
        Also return the support size of the mapping's output ``p*``: the number of nonzeros
        of each row, an int64 tensor of shape (n_samples, 1) (as in the ``entmax``
        package's unreleased master).

    Returns
    -------
    loss : torch.Tensor of shape (n_samples,)
        The loss of each sample.
    support_size : torch.Tensor of shape (n_samples, 1), optional
        Only with ``return_support_size=True``.
    """
    k = _check_k(k, "entmax15_loss")
    project = projection(_exact(Case.ENTMAX15, _entmax15, k, "entmax15_loss"))
    return _sparse_loss(X, target, project, Case.ENTMAX15, return_support_size)


def entmax_bisect_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    alpha: Param = 1.5,
    n_iter: int | None = 50,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """alpha-entmax loss; cross-entropy at alpha = 1. Differentiable in a tensor alpha.

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_classes)
        Scores; ``-inf`` masks a class; ``+inf`` or NaN gives a NaN loss in its row only.
    target : torch.Tensor
        Class indices (n_samples,) or a distribution (n_samples, n_classes).
    alpha : float or torch.Tensor, default=1.5
        A number, or a tensor with one value per row (shape (n_samples,) or
        (n_samples, 1)) or one shared value.
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    return_support_size : bool, default=False
        Also return the support size of the mapping's output ``p*``: the number of nonzeros
        of each row, an int64 tensor of shape (n_samples, 1) (as in the ``entmax``
        package's unreleased master).

    Returns
    -------
    loss : torch.Tensor of shape (n_samples,)
        The loss of each sample.
    support_size : torch.Tensor of shape (n_samples, 1), optional
        Only with ``return_support_size=True``.
    """
    check_alpha(alpha, "entmax_bisect_loss")
    n_iter = check_n_iter(n_iter, "entmax_bisect_loss")
    project = projection(_ROOT_EVERYWHERE, n_iter)
    return _fenchel_young_loss(X, target, project, alpha, "tsallis", return_support_size)


def normmax_bisect_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    alpha: Param = 2,
    n_iter: int | None = 50,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """alpha-normmax loss. Differentiable in a tensor alpha.

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_classes)
        Scores; ``-inf`` masks a class; ``+inf`` or NaN gives a NaN loss in its row only.
    target : torch.Tensor
        Class indices (n_samples,) or a distribution (n_samples, n_classes).
    alpha : float or torch.Tensor, default=2
        The norm's order (> 1), a number or one value per row.
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    return_support_size : bool, default=False
        Also return the support size of the mapping's output ``p*``: the number of nonzeros
        of each row, an int64 tensor of shape (n_samples, 1) (as in the ``entmax``
        package's unreleased master).

    Returns
    -------
    loss : torch.Tensor of shape (n_samples,)
        The loss of each sample.
    support_size : torch.Tensor of shape (n_samples, 1), optional
        Only with ``return_support_size=True``.
    """
    alpha, n_iter = _check_normmax(alpha, n_iter, "normmax_bisect_loss")
    return _fenchel_young_loss(
        X,
        target,
        lambda Z, a, _: _normmax_bisect(Z, a, -1, n_iter, owner="normmax_bisect_loss"),
        alpha,
        "norm",
        return_support_size,
    )


# --------------------------------------------------------------------------- modules


class _FenchelYoungLoss(_FunctionModule):
    """Shared module logic: ``ignore_index``, ``reduction`` and the call of ``_function``.

    A subclass names its functional twin (``_function``) and the arguments of it that it
    holds (``_argument_names``), and passes their values on to ``__init__`` by keyword.
    """

    def __init__(
        self,
        ignore_index: int = -100,
        reduction: str = "elementwise_mean",
        return_support_size: bool = False,
        **arguments: object,
    ) -> None:
        if reduction not in REDUCTIONS:
            must = f"one of {', '.join(map(repr, REDUCTIONS))}"
            raise invalid("reduction", type(self).__name__, must, reduction)
        super().__init__(
            return_support_size, ignore_index=ignore_index, reduction=reduction, **arguments
        )

    def loss(
        self, X: torch.Tensor, target: torch.Tensor, return_support_size: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """The per-row losses (and support sizes) of the functional twin."""
        return self._call(X, target, **self._arguments(), return_support_size=return_support_size)

    def forward(
        self, X: torch.Tensor, target: torch.Tensor
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Loss of scores ``X`` against ``target``, reduced as configured.

        Integer targets equal to ``ignore_index`` contribute 0 and are left out of the
        mean; when every row is ignored the loss is exactly 0 with a zero gradient. With
        ``return_support_size`` the result is ``(loss, support_size)``, the second the
        number of nonzeros of each row's ``p*`` (shape (n_samples, 1), ignored rows
        included), whatever the reduction.
        """
        if isinstance(target, torch.Tensor) and not target.is_floating_point():
            ignored = target == self.ignore_index
            out = self.loss(X, torch.where(ignored, 0, target), self.return_support_size)
            loss, support = out if self.return_support_size else (out, None)
            loss = torch.where(ignored, 0.0, loss)
            count = (~ignored).sum()
        else:
            out = self.loss(X, target, self.return_support_size)
            loss, support = out if self.return_support_size else (out, None)
            count = torch.tensor(loss.numel(), device=loss.device)
        if self.reduction == "sum":
            loss = loss.sum()
        elif self.reduction != "none":
            loss = loss.sum() / count.clamp_min(1).to(loss.dtype)
        return (loss, support) if self.return_support_size else loss

    def extra_repr(self) -> str:
        return self._with_support(
            f"ignore_index={self.ignore_index}, reduction={self.reduction!r}"
        )


class SparsemaxLoss(_FenchelYoungLoss):
    """Module twin of :func:`sparsemax_loss`.

    Parameters
    ----------
    k : int or None, default=None
        Accepted and not needed (see :func:`~sk_entmax.entmax.sparsemax`).
    ignore_index : int, default=-100
        Integer targets with this value are ignored (any value, negative included).
    reduction : {"elementwise_mean", "mean", "sum", "none"}, default="elementwise_mean"
        Mean over the rows not ignored, sum, or the per-row losses.
    return_support_size : bool, default=False
        Return ``(loss, support_size)``, the second of shape (n_samples, 1): the number of
        nonzeros of each row's ``p*``.
    """

    _function = staticmethod(sparsemax_loss)
    _argument_names = ("k",)

    def __init__(
        self,
        k: int | None = None,
        ignore_index: int = -100,
        reduction: str = "elementwise_mean",
        return_support_size: bool = False,
    ) -> None:
        super().__init__(ignore_index, reduction, return_support_size, k=k)


class SparsemaxBisectLoss(_FenchelYoungLoss):
    """Module twin of :func:`sparsemax_bisect_loss`.

    Parameters
    ----------
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    ignore_index : int, default=-100
        Integer targets with this value are ignored.
    reduction : {"elementwise_mean", "mean", "sum", "none"}, default="elementwise_mean"
        How to reduce the per-row losses.
    return_support_size : bool, default=False
        Return ``(loss, support_size)``, the second of shape (n_samples, 1): the number of
        nonzeros of each row's ``p*``.
    """

    _function = staticmethod(sparsemax_bisect_loss)
    _argument_names = ("n_iter",)

    def __init__(
        self,
        n_iter: int | None = 50,
        ignore_index: int = -100,
        reduction: str = "elementwise_mean",
        return_support_size: bool = False,
    ) -> None:
        super().__init__(ignore_index, reduction, return_support_size, n_iter=n_iter)


class Entmax15Loss(_FenchelYoungLoss):
    """Module twin of :func:`entmax15_loss`.

    Parameters
    ----------
    k : int or None, default=100
        Accepted and not needed (see :func:`~sk_entmax.entmax.sparsemax`).
    ignore_index : int, default=-100
        Integer targets with this value are ignored.
    reduction : {"elementwise_mean", "mean", "sum", "none"}, default="elementwise_mean"
        How to reduce the per-row losses.
    return_support_size : bool, default=False
        Return ``(loss, support_size)``, the second of shape (n_samples, 1): the number of
        nonzeros of each row's ``p*``.
    """

    _function = staticmethod(entmax15_loss)
    _argument_names = ("k",)

    def __init__(
        self,
        k: int | None = 100,
        ignore_index: int = -100,
        reduction: str = "elementwise_mean",
        return_support_size: bool = False,
    ) -> None:
        super().__init__(ignore_index, reduction, return_support_size, k=k)


class EntmaxBisectLoss(_FenchelYoungLoss):
    """Module twin of :func:`entmax_bisect_loss`.

    Parameters
    ----------
    alpha : float or torch.Tensor, default=1.5
        A number or tensor; an ``nn.Parameter`` is registered and learned.
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    ignore_index : int, default=-100
        Integer targets with this value are ignored.
    reduction : {"elementwise_mean", "mean", "sum", "none"}, default="elementwise_mean"
        How to reduce the per-row losses.
    return_support_size : bool, default=False
        Return ``(loss, support_size)``, the second of shape (n_samples, 1): the number of
        nonzeros of each row's ``p*``.
    """

    _function = staticmethod(entmax_bisect_loss)
    _argument_names = ("alpha", "n_iter")

    def __init__(
        self,
        alpha: Param = 1.5,
        n_iter: int | None = 50,
        ignore_index: int = -100,
        reduction: str = "elementwise_mean",
        return_support_size: bool = False,
    ) -> None:
        super().__init__(ignore_index, reduction, return_support_size, alpha=alpha, n_iter=n_iter)


class NormmaxBisectLoss(_FenchelYoungLoss):
    """Module twin of :func:`normmax_bisect_loss`.

    Parameters
    ----------
    alpha : float or torch.Tensor, default=2
        The norm's order (> 1).
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    ignore_index : int, default=-100
        Integer targets with this value are ignored.
    reduction : {"elementwise_mean", "mean", "sum", "none"}, default="elementwise_mean"
        How to reduce the per-row losses.
    return_support_size : bool, default=False
        Return ``(loss, support_size)``, the second of shape (n_samples, 1): the number of
        nonzeros of each row's ``p*``.
    """

    _function = staticmethod(normmax_bisect_loss)
    _argument_names = ("alpha", "n_iter")

    def __init__(
        self,
        alpha: Param = 2,
        n_iter: int | None = 50,
        ignore_index: int = -100,
        reduction: str = "elementwise_mean",
        return_support_size: bool = False,
    ) -> None:
        super().__init__(ignore_index, reduction, return_support_size, alpha=alpha, n_iter=n_iter)
