"""alpha-entmax and relatives by root finding on the threshold.

alpha-entmax (Peters et al., 2019) solves

.. math::

    \\max_{p \\in \\Delta} \\langle x, p \\rangle + H^T_\\alpha(p), \\qquad
    H^T_\\alpha(p) = \\frac{1 - \\sum_i p_i^\\alpha}{\\alpha (\\alpha - 1)},

whose solution is :math:`p_i = [1 + (\\alpha - 1)(x_i - t)]_+^{1/(\\alpha - 1)}` for the one
threshold :math:`t` at which the entries sum to 1. We write it as
:math:`p_i = \\exp(\\log(1 + \\beta u_i) / \\beta)` with :math:`\\beta = \\alpha - 1` and
:math:`u_i = x_i - t`, which tends to :math:`\\exp(u_i)` (softmax) as :math:`\\beta \\to 0`
without the loss of precision of the power form, so alpha close to 1 works in float32, and
alpha = 1 is softmax exactly. The threshold lies in ``[max x, max x + w]`` with
``w = (1 - d^{-beta}) / beta``, a bracket that bisection halves ``n_iter`` times; ``d`` counts
the entries that are not ``-inf``, and each test of the sum is made so that its rounding does
not depend on where the ``-inf`` entries are, so that padding a row with ``-inf`` changes none
of the steps (on CPU, bit for bit; elsewhere the device's reductions decide).

Bisection needs about 24 halvings for float32 precision. So for ``n_iter >= 24`` (the
default is 50) and alpha in ``[1.1, 2]``, the threshold is instead found to the working
precision by Newton steps that start below it and never overshoot (the solvers of
:mod:`sk_entmax.entmax.activations`: Michelot's exact iteration at alpha = 2, Newton on
``||[beta x - tau]_+||_{1/beta}`` otherwise), typically in 3 to 8 passes over the input. The
result is at least as accurate as ``n_iter`` bisection steps; rows that do not settle within
the pass cap (crafted inputs) are finished by bisection. With one alpha per row, the rows
with alpha in ``[1.1, 2]`` take Newton and the others bisection.

Above alpha = 2 the threshold itself cannot carry the answer: near it the bases
``1 + beta (x_i - t)`` are ``p_i^beta`` (``1e-18`` for ``p_i = 0.01`` at alpha = 10), far
below the rounding of ``t``, so that bisection in float64 misplaces such entries by up to
1e-2 (the reference package too). There, for ``n_iter >= 24``, the support is found by an
exact test (the entry of score ``v`` is in it when the entries above it give
``sum_i (beta (x_i - v))^{1/beta} < 1``, a sum of positive terms), from a first guess by a
few bisection steps, and then the probability ``r`` of its least entry by Newton's steps on
``sum_i (r^beta + beta (x_i - v))^{1/beta} = 1``, increasing and convex in ``r``: every
entry is a sum of positive terms, exact to rounding whatever its size, and the result
depends on the support alone. A smaller ``n_iter``, and the other alphas outside
``[1.1, 2]``, run exactly ``n_iter`` bisection steps, as the reference does. The plain-op
path (``training=False``) always bisects, so that its graph does not depend on the data
(above alpha = 2 it is therefore as inaccurate near the threshold as the reference).

Gradients: with :math:`g_i = p_i^{2 - \\alpha}` on the support, the Jacobian in :math:`x` is
:math:`\\operatorname{diag}(g) - g g^\\top / \\sum g`. The derivative in alpha follows
Correia et al. (2019), rewritten without the :math:`(\\alpha - 1)^{-2}` cancellation:
:math:`\\partial p_i / \\partial \\alpha = p_i a_i - g_i \\sum_j p_j a_j / \\sum_j g_j` with
:math:`a_i = -\\log^2 p_i \\, \\varphi(-\\beta \\log p_i)` and
:math:`\\varphi(z) = (e^z - 1 - z) / z^2`.

This module is the public face (the names and the layout of the reference package's
``entmax.root_finding``): the functions and modules of alpha-entmax by root finding are here,
their solvers in :mod:`sk_entmax.entmax.solvers._entmax_solvers`, and the relatives it also
exports, alpha-normmax and budget-constrained sparsemax, in :mod:`sk_entmax.entmax.normmax` and
:mod:`sk_entmax.entmax.budget`.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.autograd import Function

from sk_entmax.entmax._modules import _MappingModule
from sk_entmax.entmax.algorithms import Case, case_for, triton_path
from sk_entmax.entmax.budget import BudgetBisect, budget_bisect
from sk_entmax.entmax.common import (
    DEFAULT_N_ITER,
    Param,
    check_alpha,
    check_n_iter,
    entmax_vjp,
    from_last,
    param_to_last,
    save_alpha,
    saved_alpha,
    to_last,
    with_support,
)
from sk_entmax.entmax.constraints import Real, check
from sk_entmax.entmax.normmax import NormmaxBisect, normmax_bisect
from sk_entmax.entmax.solvers import (
    entmax_alpha_vjp,
    entmax_bisect_last,
    entmax_bisect_plain,
    entmax_vjp_rows,
    gppr,
    softmax_last,
)
from sk_entmax.entmax.tracing import compiling, owner_of

__all__ = [
    owner_of("AdaptiveEntmax"),
    "BudgetBisect",
    "EntmaxBisect",
    "NormmaxBisect",
    "SparsemaxBisect",
    "budget_bisect",
    "entmax_bisect",
    "normmax_bisect",
    "sparsemax_bisect",
]


class EntmaxBisectFunction(Function):
    """alpha-entmax along the last axis; saves only the output (and a tensor alpha)."""

    @staticmethod
    def forward(Z, alpha, n_iter, ensure_sum_one, case):
        return entmax_bisect_last(Z, alpha, n_iter, ensure_sum_one, case)

    @staticmethod
    def setup_context(ctx, inputs, output):
        # The context is set here, apart from the solve: under torch.compile (torch 2.14),
        # a context changed in forward before the solver's torch.cond lost the attributes
        # set after it (ctx.alpha), and the backward failed.
        # An output that reaches the loss without a gradient (a Fenchel-Young loss takes the
        # mapping as optimal) gets None, not zeros: at large alpha the Jacobian's weights
        # p ** (2 - alpha) overflow, and zeros times them would make NaNs.
        ctx.set_materialize_grads(False)
        save_alpha(ctx, output, inputs[1])
        ctx.case = inputs[4]  # alpha's, decided by the caller: the backward pass's too

    @staticmethod
    def backward(ctx, dY):
        if dY is None:
            return None, None, None, None, None
        Y, alpha = saved_alpha(ctx)
        case = ctx.case
        if not ctx.needs_input_grad[1] and not isinstance(alpha, torch.Tensor):
            # one alpha and no alpha gradient: chunk by chunk (_wide_rows)
            dX = entmax_vjp_rows(dY, Y, lambda Y: gppr(Y, alpha, case=case))
            return dX, None, None, None, None
        weights = gppr(Y, alpha, case=case)
        dX = entmax_vjp(dY, weights)
        d_alpha = None
        if ctx.needs_input_grad[1]:
            d_alpha = entmax_alpha_vjp(dY, Y, weights, alpha - 1)
        return dX, d_alpha, None, None, None


def entmax_bisect(
    X: torch.Tensor,
    alpha: Param = 1.5,
    dim: int = -1,
    n_iter: int | None = 50,
    ensure_sum_one: bool = True,
    training: bool = True,
    *,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """alpha-entmax: a sparse softmax with tunable sparsity, by root finding.

    Solves ``max_p <x, p> + H_alpha(p)`` subject to ``p >= 0, sum(p) == 1`` along ``dim``,
    where ``H_alpha`` is the Tsallis alpha-entropy (Peters et al., 2019). ``alpha = 1`` is
    softmax, ``alpha = 1.5`` is :func:`~sk_entmax.entmax.entmax15`, ``alpha = 2`` is
    :func:`~sk_entmax.entmax.sparsemax`; larger alpha is sparser. Differentiable in ``X`` and
    in a tensor ``alpha`` (Correia et al., 2019), accurately also for alpha close to 1.

    Parameters
    ----------
    X : torch.Tensor
        Scores; ``-inf`` masking, NaN, ``+inf`` and half precision are handled as in
        :func:`~sk_entmax.entmax.sparsemax`.
    alpha : float or torch.Tensor, default=1.5
        A number, or a tensor broadcastable to ``X``'s shape with size 1 along ``dim`` (one
        alpha per row). Values below 1 work as in the reference package (dense outputs).
    dim : int, default=-1
        The axis along which to apply the mapping.
    n_iter : int or None, default=50
        The accuracy asked of the threshold, in bisection steps: the result is at least as
        accurate as ``n_iter`` halvings of its bracket make it (about 24 reach float32
        precision). From 24 on, for alpha in ``[1.1, 2]`` (per row), Newton steps reach the
        working precision instead, typically in 3 to 8 passes, and above 2 the exact support
        and Newton steps on its least entry do (module docstring); otherwise (and on the
        plain path) exactly ``n_iter`` bisection steps run, as in the reference package.
        ``None`` means the default, 50 (``SparsemaxBisect`` in the reference package
        defaults to ``None``, and drop-in code passes it).
    ensure_sum_one : bool, default=True
        Divide the result by its sum so that it sums to 1 exactly.
    training : bool, default=True
        Custom autograd function (``True``) or plain ops (``False``) that
        ``torch.jit.trace`` (with its sanity check), ``torch.export`` and ONNX can take;
        both give the same values and gradients. A trace of the plain path serves any
        batch size and any width along ``dim``: the bisection bracket is computed from the
        width as a traced value.
    return_support_size : bool, default=False
        Also return the number of nonzeros along ``dim`` (int64, shaped like ``X`` with
        ``dim`` of size 1), as :func:`~sk_entmax.entmax.sparsemax` does.

    Returns
    -------
    P : torch.Tensor
        Same shape and dtype as ``X``.
    support_size : torch.Tensor, optional
        Only with ``return_support_size=True``.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import entmax_bisect
    >>> x = torch.tensor([[-1.0, 0.0, 0.5], [1.0, 2.0, 3.5]])
    >>> entmax_bisect(x, alpha=1.33)
    tensor([[0.0460, 0.3276, 0.6264],
            [0.0026, 0.1012, 0.8963]])
    """
    check_alpha(alpha, "entmax_bisect")
    n_iter = check_n_iter(n_iter, "entmax_bisect")
    return _entmax_bisect(
        X, alpha, dim, n_iter, ensure_sum_one, training, return_support_size, "entmax_bisect"
    )


def _entmax_bisect(
    X: torch.Tensor,
    alpha: Param,
    dim: int = -1,
    n_iter: int = DEFAULT_N_ITER,
    ensure_sum_one: bool = True,
    training: bool = True,
    return_support_size: bool = False,
    owner: str | None = None,
    case: Case | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """:func:`entmax_bisect` with ``alpha`` and ``n_iter`` (an int) already checked by the
    public function calling it, whose name ``owner`` is (for the errors about ``dim``). On
    CUDA the Triton kernels serve it when they can
    (:func:`~sk_entmax.entmax.algorithms.triton_path`). ``case``: ``alpha``'s, when the
    caller decided it (:func:`~sk_entmax.entmax.algorithms.select`), else decided here, once:
    the kernels, the solver and the backward pass take it."""
    if case is None:
        case = case_for(alpha)
    if ensure_sum_one and not compiling():  # (a traced graph holds no Triton launch)
        P = triton_path(X, alpha, dim, n_iter, owner, training, case)
        if P is not None:
            return with_support(P, dim, return_support_size)
    Z, dim, dtype = to_last(X, dim, owner)
    if Z.numel() == 0:
        P = X.clone()
    elif case is Case.SOFTMAX:
        P = from_last(softmax_last(Z), dim, dtype)
    else:
        alpha = param_to_last(alpha, X, dim, "alpha", owner)
        if training:
            Y = EntmaxBisectFunction.apply(Z, alpha, n_iter, ensure_sum_one, case)
        else:
            Y = entmax_bisect_plain(Z, alpha, n_iter, ensure_sum_one)
        P = from_last(Y, dim, dtype)
    return with_support(P, dim, return_support_size)


def sparsemax_bisect(
    X: torch.Tensor,
    dim: int = -1,
    n_iter: int | None = 50,
    ensure_sum_one: bool = True,
    training: bool = True,
    *,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """sparsemax by root finding on the threshold; ``n_iter`` sets the accuracy.

    The same mapping as :func:`~sk_entmax.entmax.sparsemax`, computed as
    :func:`entmax_bisect` at ``alpha = 2``: with ``n_iter >= 24`` by the same exact
    sort-free iteration as :func:`~sk_entmax.entmax.sparsemax`, with fewer by ``n_iter``
    bisection steps (the reference package always takes 50, whatever ``n_iter`` says).

    Parameters
    ----------
    X : torch.Tensor
        Scores; ``-inf`` masking, NaN and ``+inf`` as in :func:`~sk_entmax.entmax.sparsemax`.
    dim : int, default=-1
        The axis along which to project.
    n_iter : int or None, default=50
        Accuracy in bisection steps, as in :func:`entmax_bisect`.
    ensure_sum_one : bool, default=True
        Divide the result by its sum.
    training : bool, default=True
        Custom autograd function or plain ops.
    return_support_size : bool, default=False
        Also return the number of nonzeros along ``dim`` (int64, shaped like ``X`` with
        ``dim`` of size 1), as :func:`~sk_entmax.entmax.sparsemax` does.

    Returns
    -------
    P : torch.Tensor
        Same shape and dtype as ``X``.
    support_size : torch.Tensor, optional
        Only with ``return_support_size=True``.
    """
    n_iter = check_n_iter(n_iter, "sparsemax_bisect")
    return _entmax_bisect(
        X,
        2.0,
        dim,
        n_iter,
        ensure_sum_one,
        training,
        return_support_size,
        "sparsemax_bisect",
        Case.SPARSEMAX,
    )


# --------------------------------------------------------------------------- modules


class EntmaxBisect(_MappingModule):
    """Module twin of :func:`entmax_bisect`; plain-op path in ``eval()`` mode.

    In ``eval()`` mode the module takes ``torch.jit.trace`` (sanity check included) and
    ``torch.export``; the trace serves other batch sizes and widths.

    Parameters
    ----------
    alpha : float or torch.Tensor, default=1.5
        A number, a per-row tensor, or an ``nn.Parameter`` (registered, hence learned). For
        a learnable alpha kept in a valid range by construction, see :class:`AdaptiveEntmax`.
    dim : int, default=-1
        The axis along which to apply the mapping.
    n_iter : int or None, default=50
        Accuracy in bisection steps, as in :func:`entmax_bisect`.
    return_support_size : bool, default=False
        Return ``(P, support_size)``, the number of nonzeros along ``dim`` too.
    """

    _function = staticmethod(entmax_bisect)
    _argument_names = ("alpha", "dim", "n_iter")

    def __init__(
        self,
        alpha: Param = 1.5,
        dim: int = -1,
        n_iter: int | None = 50,
        return_support_size: bool = False,
    ) -> None:
        super().__init__(return_support_size, alpha=alpha, dim=dim, n_iter=n_iter)


class SparsemaxBisect(_MappingModule):
    """Module twin of :func:`sparsemax_bisect`; plain-op path in ``eval()`` mode.

    In ``eval()`` mode the module takes ``torch.jit.trace`` (sanity check included) and
    ``torch.export``; the trace serves other batch sizes and widths. ``n_iter=None``, the
    reference's default, means 50.

    Parameters
    ----------
    dim : int, default=-1
        The axis along which to project.
    n_iter : int or None, default=50
        Accuracy in bisection steps, as in :func:`entmax_bisect`.
    return_support_size : bool, default=False
        Return ``(P, support_size)``, the number of nonzeros along ``dim`` too.
    """

    _function = staticmethod(sparsemax_bisect)
    _argument_names = ("dim", "n_iter")

    def __init__(
        self, dim: int = -1, n_iter: int | None = 50, return_support_size: bool = False
    ) -> None:
        super().__init__(return_support_size, dim=dim, n_iter=n_iter)


#: ``alpha_max`` of :class:`AdaptiveEntmax` when it is not None
_ALPHA_MAX = Real(1.0, low_open=True, note="or None for no upper end")


class AdaptiveEntmax(_MappingModule):
    """alpha-entmax whose alpha is learned, kept in range by construction.

    The learned quantity is an unconstrained ``nn.Parameter`` ``alpha_raw``. With a finite
    ``alpha_max`` the alpha used is ``1 + (alpha_max - 1) * sigmoid(alpha_raw)``, in
    ``(1, alpha_max)``; with ``alpha_max=None`` it is ``1 + softplus(alpha_raw)``, in
    ``(1, inf)``. Every optimizer step therefore leaves a valid alpha (Correia et al., 2019,
    learn alpha per attention head). Only where the map saturates in floating point does
    alpha reach an end of the range, and the ends are valid mappings too (1 is softmax).

    This class owns the parametrisation, for the modules that hold a learned alpha of their
    own too: :meth:`alpha_of_raw` and :meth:`raw_of_alpha` are the map and its inverse, and
    :meth:`start_alpha` is the rule that turns a requested start into one inside the range.

    Parameters
    ----------
    alpha : float, default=1.5
        Initial alpha, strictly inside the range (see :meth:`start_alpha` to clip a value
        into it).
    dim : int, default=-1
        The axis along which to apply the mapping.
    n_iter : int or None, default=50
        Accuracy in bisection steps, as in :func:`entmax_bisect`.
    alpha_max : float or None, default=2.0
        Upper end of the range of alpha (not reached), or ``None`` for no upper end.
    shape : tuple of int, default=()
        Shape of the alpha tensor: ``()`` for one shared alpha, or a shape that broadcasts
        against the input with size 1 along ``dim`` (one alpha per head, say).
    return_support_size : bool, default=False
        Return ``(P, support_size)``, the number of nonzeros along ``dim`` too.

    Attributes
    ----------
    alpha_raw : torch.nn.Parameter
        The unconstrained parameter behind :attr:`alpha`.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import AdaptiveEntmax
    >>> layer = AdaptiveEntmax(alpha=1.5)
    >>> round(layer.alpha.item(), 4)
    1.5
    >>> AdaptiveEntmax.start_alpha(2.0), AdaptiveEntmax.start_alpha(1.0, alpha_max=None)
    (1.99, 1.05)
    """

    #: :meth:`start_alpha` keeps a start this fraction of a bounded range (1, alpha_max)
    #: away from either end (1.01 to 1.99 for alpha_max = 2), where the sigmoid map's
    #: gradient vanishes
    START_MARGIN = 0.01
    #: the least start :meth:`start_alpha` gives on the unbounded range (1, inf) of the
    #: softplus map
    START_MIN_UNBOUNDED = 1.05

    _function = staticmethod(entmax_bisect)
    #: ``alpha`` is the property below, a function of ``alpha_raw``
    _argument_names = ("alpha", "dim", "n_iter")

    def __init__(
        self,
        alpha: float = 1.5,
        dim: int = -1,
        n_iter: int | None = 50,
        alpha_max: float | None = 2.0,
        shape: tuple[int, ...] = (),
        return_support_size: bool = False,
    ) -> None:
        super().__init__(return_support_size, dim=dim, n_iter=n_iter)
        raw = self.raw_of_alpha(alpha, alpha_max)
        self.alpha_max = None if alpha_max is None else float(alpha_max)
        self.alpha_raw = nn.Parameter(torch.full(tuple(shape), raw, dtype=torch.float32))

    @staticmethod
    def _upper(alpha_max: float | None) -> float:
        """The upper end of the range: ``alpha_max`` checked, ``inf`` for None."""
        return (
            math.inf
            if alpha_max is None
            else check("alpha_max", alpha_max, _ALPHA_MAX, owner_of("AdaptiveEntmax"))
        )

    @classmethod
    def start_alpha(cls, alpha: float, alpha_max: float | None = 2.0) -> float:
        """The start of a learned alpha asked to start at ``alpha``, clipped into its range.

        A value near an end of the range, or beyond it, is moved inside: into
        ``[1 + m, alpha_max - m]`` with ``m = START_MARGIN * (alpha_max - 1)`` (1.01 to 1.99
        for ``alpha_max=2``), or to at least ``START_MIN_UNBOUNDED`` (1.05) for
        ``alpha_max=None``. A start right next to an end would leave a vanishing gradient.

        Parameters
        ----------
        alpha : float
            The requested start, a finite real number.
        alpha_max : float or None, default=2.0
            The upper end of the range, as in the constructor.

        Returns
        -------
        float
            A start that :meth:`raw_of_alpha` (and the constructor) accept.
        """
        upper = cls._upper(alpha_max)
        alpha = check("alpha", alpha, Real(), owner_of("AdaptiveEntmax"))
        if upper == math.inf:
            return max(alpha, cls.START_MIN_UNBOUNDED)
        margin = cls.START_MARGIN * (upper - 1)
        return min(max(alpha, 1 + margin), upper - margin)

    @classmethod
    def raw_of_alpha(cls, alpha: float, alpha_max: float | None = 2.0) -> float:
        """The ``alpha_raw`` at which :meth:`alpha_of_raw` gives ``alpha``.

        ``alpha`` must lie strictly inside the range ``(1, alpha_max)`` (``(1, inf)`` for
        ``alpha_max=None``); :meth:`start_alpha` clips a value into it.
        """
        upper = cls._upper(alpha_max)
        alpha = check(
            "alpha",
            alpha,
            Real(1.0, upper, low_open=True, high_open=True, note="the start of a learned alpha"),
            owner_of("AdaptiveEntmax"),
        )
        if alpha_max is None:
            return (alpha - 1) + math.log(-math.expm1(-(alpha - 1)))  # softplus inverse
        frac = (alpha - 1) / (upper - 1)
        return math.log(frac / (1 - frac))

    @staticmethod
    def alpha_of_raw(raw: torch.Tensor, alpha_max: float | None = 2.0) -> torch.Tensor:
        """The alpha of ``raw``: ``1 + (alpha_max - 1) * sigmoid(raw)``, in ``(1, alpha_max)``,
        or ``1 + softplus(raw)`` for ``alpha_max=None``; differentiable."""
        if alpha_max is None:
            return 1 + nn.functional.softplus(raw)
        return 1 + (alpha_max - 1) * torch.sigmoid(raw)

    @property
    def alpha(self) -> torch.Tensor:
        """The current alpha, a differentiable function of ``alpha_raw``."""
        return self.alpha_of_raw(self.alpha_raw, self.alpha_max)

    def extra_repr(self) -> str:
        return self._with_support(
            f"alpha_max={self.alpha_max}, dim={self.dim}, n_iter={self.n_iter}"
        )
