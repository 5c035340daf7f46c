"""The exact sparse mappings sparsemax and 1.5-entmax: functions, autograd functions, modules.

Both maps solve, along one axis,

.. math::

    \\operatorname{entmax}_\\alpha(x) = \\arg\\max_{p \\in \\Delta} \\langle x, p \\rangle
    + H^T_\\alpha(p),

with the Tsallis entropy :math:`H^T_\\alpha`. For :math:`\\alpha = 2` (sparsemax, Martins &
Astudillo 2016) the solution is :math:`p = [x - \\tau]_+`, for :math:`\\alpha = 1.5` (Peters
et al. 2019) it is :math:`p = [x/2 - \\tau]_+^2`. The threshold :math:`\\tau` has a closed form
once the support is known.

By default (``k=None``) each map takes one of its three forms: the fused CPU kernel
(:mod:`sk_entmax.entmax.kernels.cpu`) for the autograd path on CPU, the Triton kernel on
CUDA (opt-in, :mod:`sk_entmax.entmax.kernels`), and everywhere else the traceable form
(``sk_entmax/entmax/_traceable.py``): Newton steps that start below the threshold and never
overshoot, a handful of passes over the input instead of a sort, then the threshold in
closed form from the support found. Rows that have not settled after ``MAX_PASSES`` passes
(it takes crafted inputs) are solved again by sorting, so the cap bounds the time, never
the accuracy. ``k``, the reference's partial sort of the ``k`` largest entries, is accepted
and needs nothing done: no form sorts a row that settles.

Each map has a custom autograd function whose backward pass uses only the saved output,
and a plain-op path (``training=False``), the traceable form itself, which
``torch.jit.trace``, ``torch.export`` and ONNX can take.

This module holds the public functions, their autograd functions and their modules; the
forms live beside it: the traceable form (``sk_entmax/entmax/_traceable.py``), its sort for
the rows that do not settle (:mod:`~sk_entmax.entmax.solvers._sorting`), the kernels
(:mod:`sk_entmax.entmax.kernels`).
"""

from __future__ import annotations

import torch
from torch.autograd import Function

from sk_entmax.entmax._modules import _MappingModule
from sk_entmax.entmax.algorithms import Case, exact_alpha, triton_path
from sk_entmax.entmax.common import apply_last, entmax_vjp, sqrt_support, with_support
from sk_entmax.entmax.constraints import invalid
from sk_entmax.entmax.solvers import entmax15_traceable, entmax_vjp_rows, sparsemax_traceable
from sk_entmax.entmax.solvers import exact_traceable as exact_traceable  # predict_proba's
from sk_entmax.entmax.tracing import compiling, owner_of

__all__ = ["Entmax15", "Sparsemax", "entmax15", "sparsemax"]

#: the traceable form of each exact case: what ``predict_proba`` computes on CPU and what
#: the ONNX graph of :func:`sk_entmax.export.to_onnx` is traced from
TRACEABLE = {Case.SPARSEMAX: sparsemax_traceable, Case.ENTMAX15: entmax15_traceable}


def _check_k(k: int | None, owner: str | None = None) -> int | None:
    """``k`` (a parameter of ``owner``): None or a positive Python int."""
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise invalid("k", owner_of(owner), "None or an integer >= 1", k)
    return k


class SparsemaxFunction(Function):
    """Autograd function for sparsemax along the last axis; saves only the output."""

    @staticmethod
    def forward(ctx, Z: torch.Tensor, k: int | None) -> torch.Tensor:
        Y = sparsemax_traceable(Z)  # (k: a hint the exact map does not need)
        ctx.save_for_backward(Y)
        return Y

    @staticmethod
    def backward(ctx, dY: torch.Tensor):
        (Y,) = ctx.saved_tensors
        return entmax_vjp_rows(dY, Y, torch.sign), None  # Y >= 0: the support's indicator


class Entmax15Function(Function):
    """Autograd function for 1.5-entmax along the last axis; saves only the output."""

    @staticmethod
    def forward(ctx, Z: torch.Tensor, k: int | None) -> torch.Tensor:
        Y = entmax15_traceable(Z)
        ctx.save_for_backward(Y)
        return Y

    @staticmethod
    def backward(ctx, dY: torch.Tensor):
        (Y,) = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph: keep sqrt's gradient finite at 0
            positive = Y > 0
            gppr = torch.where(positive, torch.where(positive, Y, 1).sqrt(), 0)
            return entmax_vjp(dY, gppr), None
        return entmax_vjp_rows(dY, Y, sqrt_support), None


def _sparse_map(
    function: type[Function],
    case: Case,
    X: torch.Tensor,
    dim: int,
    k: int | None,
    training: bool,
    return_support_size: bool,
    owner: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """The body of :func:`sparsemax` and :func:`entmax15` (``case``, their alpha's), ``k``
    checked: the custom autograd ``function`` (its ``apply`` looked up now) when
    ``training``, else the plain-op :data:`TRACEABLE` form. ``owner`` is the public name an
    error about ``dim`` names. The package's kernels serve it when they can
    (:func:`~sk_entmax.entmax.algorithms.triton_path`)."""
    if not compiling():  # (a traced graph holds no Triton launch)
        P = triton_path(X, exact_alpha(case), dim, None, owner, training, case)
        if P is not None:
            return with_support(P, dim, return_support_size)
    if training:
        P = apply_last(function.apply, X, dim, k, owner=owner)
    else:
        P = apply_last(TRACEABLE[case], X, dim, owner=owner)
    return with_support(P, dim, return_support_size)


def _sparsemax(
    X: torch.Tensor,
    dim: int = -1,
    k: int | None = None,
    training: bool = True,
    return_support_size: bool = False,
    owner: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """:func:`sparsemax` with ``k`` already checked by the public function calling it."""
    return _sparse_map(
        SparsemaxFunction, Case.SPARSEMAX, X, dim, k, training, return_support_size, owner
    )


def _entmax15(
    X: torch.Tensor,
    dim: int = -1,
    k: int | None = None,
    training: bool = True,
    return_support_size: bool = False,
    owner: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """:func:`entmax15` with ``k`` already checked by the public function calling it."""
    return _sparse_map(
        Entmax15Function, Case.ENTMAX15, X, dim, k, training, return_support_size, owner
    )


def sparsemax(
    X: torch.Tensor,
    dim: int = -1,
    k: int | None = None,
    training: bool = True,
    *,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """sparsemax: the Euclidean projection onto the probability simplex.

    Solves ``min_p ||x - p||^2`` subject to ``p >= 0, sum(p) == 1`` along ``dim``
    (Martins & Astudillo, 2016). The result has exact zeros wherever ``x`` falls below the
    threshold.

    Parameters
    ----------
    X : torch.Tensor
        Scores. ``-inf`` entries are masked: they get probability 0, and a row that is all
        ``-inf`` maps to all zeros with a zero gradient. A NaN gives NaN in its row only.
        So does ``+inf``, which has no limit defined here (as in ``torch.softmax``): its
        row gets NaN at least at the ``+inf`` entries; clip scores that may overflow.
        float16 and bfloat16 are computed in float32 and returned in the input dtype.
    dim : int, default=-1
        The axis along which to project; any axis, negative or not.
    k : int or None, default=None
        The reference's partial sort of the ``k`` largest entries: accepted, for its
        signature, and not needed here (the threshold is found without sorting; the result
        is the same exact map for any ``k``).
    training : bool, default=True
        ``True`` uses the custom autograd function (backward from the output alone);
        ``False`` uses the traceable form in plain ops, for ``torch.jit.trace``,
        ``torch.export`` and ONNX. Both give the same values.
    return_support_size : bool, default=False
        Also return the support size: the number of nonzero entries along ``dim``, an
        int64 tensor shaped like ``X`` with ``dim`` of size 1 (as in the ``entmax``
        package's unreleased master). Keyword-only here, since the fourth positional
        argument is Ludwig's ``training``.

    Returns
    -------
    P : torch.Tensor
        Same shape and dtype as ``X``; non-negative, summing to 1 along ``dim``.
    support_size : torch.Tensor, optional
        Only with ``return_support_size=True``: the number of nonzeros of ``P`` along
        ``dim`` (int64, ``dim`` of size 1).

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import sparsemax
    >>> sparsemax(torch.tensor([-2.0, 0.0, 0.5]))
    tensor([0.0000, 0.2500, 0.7500])
    >>> sparsemax(torch.tensor([[-2.0, 0.0, 0.5]]), return_support_size=True)
    (tensor([[0.0000, 0.2500, 0.7500]]), tensor([[2]]))
    """
    k = _check_k(k, "sparsemax")
    return _sparsemax(X, dim, k, training, return_support_size, "sparsemax")


def entmax15(
    X: torch.Tensor,
    dim: int = -1,
    k: int | None = None,
    training: bool = True,
    *,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """1.5-entmax: a sparse mapping between softmax and sparsemax (Peters et al., 2019).

    Solves ``max_p <x, p> + H_1.5(p)`` subject to ``p >= 0, sum(p) == 1`` along ``dim``,
    where ``H_1.5(p) = (1 - sum p^1.5) / 0.75`` is the Tsallis 1.5-entropy. The solution is
    ``p = [x / 2 - tau]_+^2``.

    Parameters
    ----------
    X : torch.Tensor
        Scores; ``-inf`` masking, NaN, ``+inf`` and half precision are handled as in
        :func:`sparsemax`.
    dim : int, default=-1
        The axis along which to apply the mapping.
    k : int or None, default=None
        Accepted and not needed, as in :func:`sparsemax`.
    training : bool, default=True
        Custom autograd function (``True``) or traceable plain ops (``False``).
    return_support_size : bool, default=False
        Also return the support size: the number of nonzero entries along ``dim``, an
        int64 tensor shaped like ``X`` with ``dim`` of size 1 (as in the ``entmax``
        package's unreleased master). Keyword-only here, since the fourth positional
        argument is Ludwig's ``training``.

    Returns
    -------
    P : torch.Tensor
        Same shape and dtype as ``X``; non-negative, summing to 1 along ``dim``.
    support_size : torch.Tensor, optional
        Only with ``return_support_size=True``, as in :func:`sparsemax`.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import entmax15
    >>> entmax15(torch.tensor([-2.0, 0.0, 0.5]))
    tensor([0.0000, 0.3260, 0.6740])
    """
    k = _check_k(k, "entmax15")
    return _entmax15(X, dim, k, training, return_support_size, "entmax15")


class _ExactModule(_MappingModule):
    """Shared module logic of :class:`Sparsemax` and :class:`Entmax15`: both hold ``dim``,
    ``k`` and ``return_support_size``, and pass ``training`` on from the module's mode."""

    _argument_names = ("dim", "k")

    def __init__(
        self, dim: int = -1, k: int | None = None, return_support_size: bool = False
    ) -> None:
        super().__init__(return_support_size, dim=dim, k=k)

    def extra_repr(self) -> str:
        return self._with_support(f"dim={self.dim}, k={self.k}")


class Sparsemax(_ExactModule):
    """Module twin of :func:`sparsemax`; uses the plain-op path in ``eval()`` mode.

    Parameters
    ----------
    dim : int, default=-1
        The axis along which to project.
    k : int or None, default=None
        Accepted and not needed (see :func:`sparsemax`).
    return_support_size : bool, default=False
        Return ``(P, support_size)`` (see :func:`sparsemax`).

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import Sparsemax
    >>> Sparsemax(dim=-1)(torch.tensor([[1.0, 2.0, 0.0]]))
    tensor([[0., 1., 0.]])
    """

    _function = staticmethod(sparsemax)


class Entmax15(_ExactModule):
    """Module twin of :func:`entmax15`; uses the plain-op path in ``eval()`` mode.

    Parameters
    ----------
    dim : int, default=-1
        The axis along which to apply the mapping.
    k : int or None, default=None
        Accepted and not needed (see :func:`sparsemax`).
    return_support_size : bool, default=False
        Return ``(P, support_size)`` (see :func:`sparsemax`).

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import Entmax15
    >>> Entmax15()(torch.tensor([[-2.0, 0.0, 0.5]]))
    tensor([[0.0000, 0.3260, 0.6740]])
    """

    _function = staticmethod(entmax15)
