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
``w = (1 - d^{-beta}) / beta``, a bracket that bisection halves ``n_iter`` times.

Bisection needs about 24 halvings for float32 precision. So for ``n_iter >= 24`` (the
default is 50) and alpha in ``[1.1, 2]``, the threshold is instead found to the working
precision by Newton steps that start below it and never overshoot (the solvers of
:mod:`sk_entmax.entmax.activations`: Michelot's exact iteration at alpha = 2, Newton on
``||[beta x - tau]_+||_{1/beta}`` otherwise), typically in 3 to 8 passes over the input. The
result is at least as accurate as ``n_iter`` bisection steps; rows that do not settle within
the pass cap (crafted inputs) are finished by bisection. With one alpha per row, the rows
with alpha in ``[1.1, 2]`` take Newton and the others bisection. A smaller ``n_iter``, and
alpha outside ``[1.1, 2]``, run exactly ``n_iter`` bisection steps, as the reference does.
The plain-op path (``training=False``) always bisects, so that its graph does not depend on
the data.

Gradients: with :math:`g_i = p_i^{2 - \\alpha}` on the support, the Jacobian in :math:`x` is
:math:`\\operatorname{diag}(g) - g g^\\top / \\sum g`. The derivative in alpha follows
Correia et al. (2019), rewritten without the :math:`(\\alpha - 1)^{-2}` cancellation:
:math:`\\partial p_i / \\partial \\alpha = p_i a_i - g_i \\sum_j p_j a_j / \\sum_j g_j` with
:math:`a_i = -\\log^2 p_i \\, \\varphi(-\\beta \\log p_i)` and
:math:`\\varphi(z) = (e^z - 1 - z) / z^2`.

Also here: alpha-normmax (``max <x, p> - ||p||_alpha``), budget-constrained sparsemax
(``0 <= p <= 1, sum p = budget``), each with gradients in ``X`` and in its parameter.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.autograd import Function

from sk_entmax.entmax._common import (
    from_last,
    param_to_last,
    row_stats,
    safe_div,
    to_last,
    with_support,
)
from sk_entmax.entmax.activations import (
    _floor_threshold,
    _from_columns,
    _narrow,
    _power_newton,
    _shifted_columns,
    _sparsemax_fast,
    _sparsemax_newton,
    _sparsemax_sorted_rows,
    _unsettled_rows,
    entmax_vjp,
    sqrt_support,
)
from sk_entmax.entmax.algorithms import Mapping, mapping_for, newton_applies

__all__ = [
    "AdaptiveEntmax",
    "BudgetBisect",
    "EntmaxBisect",
    "NormmaxBisect",
    "SparsemaxBisect",
    "budget_bisect",
    "entmax_bisect",
    "normmax_bisect",
    "sparsemax_bisect",
]

Param = float | torch.Tensor


# The number of bisection steps that ``n_iter=None`` stands for (the reference's default).
DEFAULT_N_ITER = 50


def _check_n_iter(n_iter: int | None) -> int:
    """``n_iter`` as a positive int; ``None`` means :data:`DEFAULT_N_ITER`."""
    if n_iter is None:
        return DEFAULT_N_ITER
    if isinstance(n_iter, bool) or not isinstance(n_iter, int) or n_iter < 1:
        raise ValueError(f"n_iter must be None or a positive int, got {n_iter!r}")
    return n_iter


def phi(z: torch.Tensor) -> torch.Tensor:
    """``(exp(z) - 1 - z) / z**2``, accurate near 0 and twice differentiable everywhere."""
    small = z.abs() < 0.5
    zd = torch.where(small, 1.0, z)
    direct = (torch.expm1(zd) - zd) / (zd * zd)
    zs = torch.where(small, z, 0.0)
    # sum_k z**k / (k + 2)! by Horner's rule; through k = 13 the remainder is below 1e-16
    # at |z| = 0.5 (stopping at k = 6 left 2e-8)
    series = torch.full_like(zs, _PHI_SERIES[-1])
    for coefficient in reversed(_PHI_SERIES[:-1]):
        series = series.mul(zs).add_(coefficient)
    return torch.where(small, series, direct)


_PHI_SERIES = tuple(1 / math.factorial(k + 2) for k in range(14))


def safe_log(P: torch.Tensor) -> torch.Tensor:
    """``log(P)`` on positive entries and 0 elsewhere, with finite gradients."""
    positive = P > 0
    return torch.where(positive, torch.where(positive, P, 1.0).log(), 0.0)


def safe_pow(P: torch.Tensor, exponent: Param) -> torch.Tensor:
    """``P ** exponent`` on positive entries and 0 elsewhere, with finite gradients."""
    positive = P > 0
    return torch.where(positive, torch.where(positive, P, 1.0) ** exponent, 0.0)


# --------------------------------------------------------------------------- alpha-entmax


def _entmax_p(U: torch.Tensor, beta: Param) -> torch.Tensor:
    """``[1 + beta * U]_+ ** (1 / beta)``, computed stably (``exp(U)`` at ``beta = 0``)."""
    if isinstance(beta, torch.Tensor):
        # log(p) = U * log1p(V) / V with V = beta * U; a series near V = 0 keeps beta = 0
        # (softmax) and its alpha-derivative exact, and entries outside the support are
        # cut off before any log so that no NaN enters the graph.
        masked = U == float("-inf")
        Us = torch.where(masked, 0.0, U)
        V = beta * Us
        inside = (V > -1) & ~masked
        Us = torch.where(inside, Us, 0.0)
        Vs = torch.where(inside, V, 0.0)
        tiny = Vs.abs() < 1e-4
        Vd = torch.where(tiny, 1.0, Vs)
        ratio = torch.where(tiny, 1 - Vs / 2 + Vs * Vs / 3, torch.log1p(Vd) / Vd)
        return torch.where(inside, torch.exp(Us * ratio), torch.where(masked, 0.0, U * 0))
    if beta == 1:
        return (U + 1).clamp_min(0)
    if beta == 0:
        return torch.exp(U)
    return torch.exp(torch.log1p((beta * U).clamp_min(-1)) / beta)


def _bracket_width(d: int | torch.Tensor, beta: Param, like: torch.Tensor) -> Param:
    """``(1 - d ** -beta) / beta``: from the row max, the threshold lies within this.

    ``d`` is the row width, a Python int or (on the traceable path, so that a trace is not
    specialised to one width) a 0-d tensor, which makes the result a tensor.
    """
    if isinstance(d, torch.Tensor):
        log_d = d.to(like.dtype).log()
        if isinstance(beta, torch.Tensor):
            beta = beta.to(like.dtype)
        elif beta == 0:
            return log_d
        else:
            return -torch.expm1(-beta * log_d) / beta
    else:
        log_d = math.log(d) if d > 0 else 0.0
    if isinstance(beta, torch.Tensor):
        zero = beta == 0
        safe_beta = torch.where(zero, 1.0, beta)
        width = -torch.expm1(-safe_beta * log_d) / safe_beta
        return torch.where(zero, log_d, width).to(like.dtype)
    if beta == 0:
        return log_d
    return -math.expm1(-beta * log_d) / beta


# Below this |alpha - 1| the power form loses float32 digits; the log1p form takes over.
_POWER_FORM_MIN_BETA = 0.1


def _entmax_threshold(Z: torch.Tensor, beta: Param, n_iter: int, traced_width: bool = False):
    """Bisection for the threshold of rows ``Z`` whose max is 0; returns ``(t, p)``.

    For a float alpha away from 1 the loop runs in the cheaper power form
    ``p = [beta z - tau]_+ ** (1 / beta)`` with ``tau = beta t - 1`` (a linear change of
    variable, so the bisection steps are the same); otherwise in the log1p form.
    ``traced_width`` computes the bracket from the width as a tensor (see
    :func:`_bracket_width`), which ``torch.jit.trace`` records instead of a constant.
    """
    d = Z.new_ones(Z.shape[-1:]).sum() if traced_width else Z.shape[-1]
    width = _bracket_width(d, beta, Z)
    shape = (*Z.shape[:-1], 1)
    if isinstance(beta, torch.Tensor) or abs(beta) < _POWER_FORM_MIN_BETA:
        t_lo = torch.zeros(shape, dtype=Z.dtype, device=Z.device)
        for _ in range(n_iter):
            width = width / 2
            t_mid = t_lo + width
            p = _entmax_p(Z - t_mid, beta)
            t_lo = torch.where(p.sum(-1, keepdim=True) >= 1, t_mid, t_lo)
        return t_mid, p
    Zb = Z if beta == 1 else Z * beta
    tau_lo = torch.full(shape, -1.0, dtype=Z.dtype, device=Z.device)
    width = width * beta
    for _ in range(n_iter):
        width = width / 2
        tau_mid = tau_lo + width
        p = (Zb - tau_mid).clamp_(min=0)
        if beta != 1:
            p.pow_(1 / beta)
        tau_lo = torch.where(p.sum(-1, keepdim=True) >= 1, tau_mid, tau_lo)
    return (tau_mid + 1) / beta, p


def _softmax_last(Z: torch.Tensor) -> torch.Tensor:
    """softmax (alpha = 1) with the same masking rules: an all ``-inf`` row maps to 0."""
    _, empty = row_stats(Z)
    return torch.where(empty, 0.0, torch.softmax(torch.where(empty, 0.0, Z), dim=-1))


def _normalize(p: torch.Tensor) -> torch.Tensor:
    return safe_div(p, p.sum(-1, keepdim=True))


def _entmax_alpha_grad(
    Y: torch.Tensor, gppr: torch.Tensor, beta: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(sum_i p_i a_i, a)`` pieces of the alpha-derivative (see the module docstring)."""
    log_p = safe_log(Y)
    pa = -Y * log_p * log_p * phi(-beta * log_p)
    return pa, safe_div(pa.sum(-1, keepdim=True), gppr.sum(-1, keepdim=True))


def _entmax_newton_rows(
    Z: torch.Tensor, alpha: torch.Tensor, n_iter: int, ensure_sum_one: bool
) -> torch.Tensor:
    """alpha-entmax of rows whose max is 0, one alpha per row: Newton where it applies.

    The rows with alpha in ``[1.1, 2]`` go to the Newton solver with one exponent per row,
    the others (alpha close to 1, below it or above 2) to bisection in the log1p form.
    """
    beta = alpha - 1
    newton = newton_applies(alpha, n_iter)
    if bool(newton.all()):
        P, settled = _power_newton(Z * beta, 1 / beta, normalize=ensure_sum_one)
        rows = _unsettled_rows(settled)
        if rows is not None:
            _, p = _entmax_threshold(Z[rows], beta[rows], n_iter)
            P[rows] = _normalize(p) if ensure_sum_one else p
        return P
    rows = newton.squeeze(-1)
    P = torch.empty_like(Z)
    if bool(rows.any()):
        P[rows] = _entmax_newton_rows(Z[rows], alpha[rows], n_iter, ensure_sum_one)
    others = ~rows
    _, p = _entmax_threshold(Z[others], beta[others], n_iter)
    P[others] = _normalize(p) if ensure_sum_one else p
    return P


def _entmax_newton(Z: torch.Tensor, alpha: float, n_iter: int, ensure_sum_one: bool):
    """alpha-entmax of rows whose max is 0 by Newton steps, for ``1.1 <= alpha <= 2``."""
    if mapping_for(alpha) is Mapping.SPARSEMAX:
        P = _sparsemax_fast(Z)  # exact: sums to 1 up to rounding
        if ensure_sum_one:
            total = P.sum(-1, keepdim=True)
            P.div_(torch.where(total > 0, total, 1))
        return P
    beta = alpha - 1
    Zb = Z.mul_(beta)  # Z is ours: scaled in place
    P, settled = _power_newton(Zb, 1 / beta, normalize=ensure_sum_one)
    rows = _unsettled_rows(settled)
    if rows is not None:
        _, p = _entmax_threshold(Zb[rows] / beta, beta, n_iter)
        P[rows] = _normalize(p) if ensure_sum_one else p
    return P


def _entmax_newton_narrow(Z: torch.Tensor, alpha: float, n_iter: int, ensure_sum_one: bool):
    """:func:`_entmax_newton` for narrow rows (any shift), in the column layout.

    See :func:`~sk_entmax.entmax.activations._shifted_columns`; the unsettled rows are
    finished as there, by the sort (alpha = 2) or by bisection.
    """
    ZT = _shifted_columns(Z)
    if mapping_for(alpha) is Mapping.SPARSEMAX:
        PT, settled = _sparsemax_newton(ZT, dim=0)
        if ensure_sum_one:
            total = PT.sum(0, keepdim=True)
            PT.div_(torch.where(total > 0, total, 1))
            finish = lambda rows: _normalize(_sparsemax_sorted_rows(rows))  # noqa: E731
        else:
            finish = _sparsemax_sorted_rows
        return _from_columns(PT, settled, ZT, Z.shape, finish)
    beta = alpha - 1
    ZbT = ZT.mul_(beta)
    PT, settled = _power_newton(ZbT, 1 / beta, normalize=ensure_sum_one, dim=0)

    def finish(rows: torch.Tensor) -> torch.Tensor:
        _, p = _entmax_threshold(rows / beta, beta, n_iter)
        return _normalize(p) if ensure_sum_one else p

    return _from_columns(PT, settled, ZbT, Z.shape, finish)


def _entmax_bisect_last(
    Z: torch.Tensor, alpha: Param, n_iter: int, ensure_sum_one: bool
) -> torch.Tensor:
    value = alpha
    if isinstance(alpha, torch.Tensor) and alpha.stride() == (0,) * alpha.dim():
        value = alpha.reshape(-1)[0].item()  # one alpha, broadcast to every row
    if not isinstance(value, torch.Tensor) and newton_applies(value, n_iter):
        if _narrow(Z):
            return _entmax_newton_narrow(Z, value, n_iter, ensure_sum_one)
        max_val, _ = row_stats(Z)
        return _entmax_newton(Z - max_val, value, n_iter, ensure_sum_one)
    max_val, _ = row_stats(Z)
    Z = Z - max_val
    if isinstance(value, torch.Tensor) and bool(newton_applies(alpha, n_iter).any()):
        return _entmax_newton_rows(Z, alpha, n_iter, ensure_sum_one)
    beta = alpha - 1
    _, p = _entmax_threshold(Z, beta, n_iter)
    return _normalize(p) if ensure_sum_one else p


def _gppr(Y: torch.Tensor, alpha: Param) -> torch.Tensor:
    """``Y ** (2 - alpha)`` on the support, 0 elsewhere: the Jacobian's diagonal weights.

    For a number alpha in ``(1, 2]`` this is ``exp2((2 - alpha) log2(Y))`` on ``Y`` clamped up
    to ``2 ** -120``, the clamped entries then set back to 0 (as in
    :func:`~sk_entmax.entmax.activations._power_newton`: ``pow`` is slow on CPU, and so are
    ``log2`` and ``exp2`` at 0 and at subnormal numbers). A tensor alpha, any other alpha,
    and a second derivative being built take :func:`safe_pow`, whose own gradient stays
    finite.
    """
    mapping = mapping_for(alpha)
    if torch.is_grad_enabled() or mapping is Mapping.PER_ROW or not 1 < alpha <= 2:
        return safe_pow(Y, 2 - alpha)
    if mapping is Mapping.SPARSEMAX:
        return torch.sign(Y)
    if mapping is Mapping.ENTMAX15:
        return sqrt_support(Y)
    gppr = torch.clamp(Y, min=2.0**-120).log2_().mul_(2 - alpha).exp2_()
    g_floor = _floor_threshold(2 - alpha)
    if g_floor == 0:
        return gppr.mul_(torch.sign(Y))
    return nn.functional.threshold_(gppr, g_floor, 0.0)


def _entmax_bisect_plain(
    Z: torch.Tensor, alpha: Param, n_iter: int, ensure_sum_one: bool
) -> torch.Tensor:
    """Plain-op alpha-entmax whose autograd gradient is exact.

    The bisection runs without recording a graph; the threshold then re-enters the graph
    through its implicit derivative (``dt = sum(g dx) / sum(g)`` plus the alpha term), a
    correction whose value is 0, so values match the custom function and so do gradients.

    The ops do not depend on the grad mode, nor on whether a tensor alpha requires a
    gradient, so that ``torch.jit.trace`` (whose check reruns the module without grad)
    records the same graph every time; and the bracket is computed from the width as a
    tensor, so that a trace also serves other widths.
    """
    max_val, _ = row_stats(Z)
    Z = Z - max_val
    beta = alpha - 1
    with torch.no_grad():
        t, p = _entmax_threshold(Z, beta, n_iter, traced_width=True)
        gppr = safe_pow(p, 1 - beta)
        sum_g = gppr.sum(-1, keepdim=True)
    finite = torch.isfinite(Z)
    Zf = torch.where(finite, Z, 0.0)
    shift = (gppr * (Zf - Zf.detach())).sum(-1, keepdim=True)
    if isinstance(beta, torch.Tensor):
        with torch.no_grad():
            _, pa_sum = _entmax_alpha_grad(p, gppr, beta)
        shift = shift + pa_sum * sum_g * (beta - beta.detach())
    t = t + safe_div(shift, sum_g)
    p = _entmax_p(Z - t, beta)
    return _normalize(p) if ensure_sum_one else p


class EntmaxBisectFunction(Function):
    """alpha-entmax along the last axis; saves only the output (and a tensor alpha)."""

    @staticmethod
    def forward(ctx, Z, alpha, n_iter, ensure_sum_one):
        Y = _entmax_bisect_last(Z, alpha, n_iter, ensure_sum_one)
        if isinstance(alpha, torch.Tensor):
            ctx.save_for_backward(Y, alpha)
        else:
            ctx.save_for_backward(Y)
            ctx.alpha = alpha
        return Y

    @staticmethod
    def backward(ctx, dY):
        saved = ctx.saved_tensors
        Y = saved[0]
        alpha = saved[1] if len(saved) > 1 else ctx.alpha
        gppr = _gppr(Y, alpha)
        dX = entmax_vjp(dY, gppr)
        d_alpha = None
        if ctx.needs_input_grad[1]:
            pa, pa_sum = _entmax_alpha_grad(Y, gppr, alpha - 1)
            d_alpha = (dY * (pa - gppr * pa_sum)).sum(-1, keepdim=True)
        return dX, d_alpha, None, None


def _check_alpha(alpha: Param) -> None:
    if isinstance(alpha, torch.Tensor):
        if not alpha.is_floating_point():
            raise TypeError(f"alpha must be a floating point tensor, got dtype {alpha.dtype}")
        return
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or math.isnan(alpha):
        raise ValueError(f"alpha must be a real number or a tensor, got {alpha!r}")


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
        Scores; ``-inf`` masking, NaN and half precision are handled as in
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
        working precision instead, typically in 3 to 8 passes; otherwise (and on the plain
        path) exactly ``n_iter`` bisection steps run, as in the reference package.
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
    _check_alpha(alpha)
    n_iter = _check_n_iter(n_iter)
    Z, dim, dtype = to_last(X, dim)
    if Z.numel() == 0:
        P = X.clone()
    elif mapping_for(alpha) is Mapping.SOFTMAX:
        P = from_last(_softmax_last(Z), dim, dtype)
    else:
        alpha = param_to_last(alpha, X, dim, "alpha")
        if training:
            Y = EntmaxBisectFunction.apply(Z, alpha, n_iter, ensure_sum_one)
        else:
            Y = _entmax_bisect_plain(Z, alpha, n_iter, ensure_sum_one)
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
        Scores.
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
    return entmax_bisect(
        X, 2.0, dim, n_iter, ensure_sum_one, training, return_support_size=return_support_size
    )


# --------------------------------------------------------------------------- normmax


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
    return _normalize(q)


class NormmaxBisectFunction(Function):
    """alpha-normmax along the last axis; saves only the output (and a tensor alpha)."""

    @staticmethod
    def forward(ctx, Z, alpha, n_iter):
        Y = _normmax_last(Z, alpha, n_iter)
        if isinstance(alpha, torch.Tensor):
            ctx.save_for_backward(Y, alpha)
        else:
            ctx.save_for_backward(Y)
            ctx.alpha = alpha
        return Y

    @staticmethod
    def backward(ctx, dY):
        saved = ctx.saved_tensors
        Y = saved[0]
        alpha = saved[1] if len(saved) > 1 else ctx.alpha
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
        Scores.
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
    _check_alpha(alpha)
    if not isinstance(alpha, torch.Tensor) and alpha <= 1:
        raise ValueError(f"normmax_bisect needs alpha > 1, got {alpha!r}")
    n_iter = _check_n_iter(n_iter)
    Z, dim, dtype = to_last(X, dim)
    if Z.numel() == 0:
        P = X.clone()
    else:
        alpha = param_to_last(alpha, X, dim, "alpha")
        P = from_last(NormmaxBisectFunction.apply(Z, alpha, n_iter), dim, dtype)
    return with_support(P, dim, return_support_size)


# --------------------------------------------------------------------------- budget


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
        Scores.
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
    n_iter = _check_n_iter(n_iter)
    if not isinstance(budget, torch.Tensor):
        if isinstance(budget, bool) or not isinstance(budget, (int, float)):
            raise ValueError(f"budget must be a number or a tensor, got {budget!r}")
        if X.dim() and not 0 < budget <= X.shape[dim]:
            raise ValueError(
                f"budget must lie in (0, {X.shape[dim]}] (the size of dim), got {budget!r}"
            )
    Z, dim, dtype = to_last(X, dim)
    if Z.numel() == 0:
        P = X.clone()
    else:
        budget = param_to_last(budget, X, dim, "budget")
        P = from_last(BudgetBisectFunction.apply(Z, budget, n_iter), dim, dtype)
    return with_support(P, dim, return_support_size)


# --------------------------------------------------------------------------- modules


class _ParamModule(nn.Module):
    """Stores a float-or-tensor parameter; an ``nn.Parameter`` is registered as such."""

    return_support_size: bool = False

    def extra_repr(self) -> str:
        keys = self._repr_keys + (("return_support_size",) if self.return_support_size else ())
        return ", ".join(f"{k}={getattr(self, k)!r}" for k in keys)


class EntmaxBisect(_ParamModule):
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

    _repr_keys = ("alpha", "dim", "n_iter")

    def __init__(
        self,
        alpha: Param = 1.5,
        dim: int = -1,
        n_iter: int | None = 50,
        return_support_size: bool = False,
    ) -> None:
        super().__init__()
        self.alpha = alpha
        self.dim = dim
        self.n_iter = n_iter
        self.return_support_size = return_support_size

    def forward(self, X: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        return entmax_bisect(
            X,
            self.alpha,
            dim=self.dim,
            n_iter=self.n_iter,
            training=self.training,
            return_support_size=self.return_support_size,
        )


class SparsemaxBisect(_ParamModule):
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

    _repr_keys = ("dim", "n_iter")

    def __init__(
        self, dim: int = -1, n_iter: int | None = 50, return_support_size: bool = False
    ) -> None:
        super().__init__()
        self.dim = dim
        self.n_iter = n_iter
        self.return_support_size = return_support_size

    def forward(self, X: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        return sparsemax_bisect(
            X,
            dim=self.dim,
            n_iter=self.n_iter,
            training=self.training,
            return_support_size=self.return_support_size,
        )


class NormmaxBisect(_ParamModule):
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

    _repr_keys = ("alpha", "dim", "n_iter")

    def __init__(
        self,
        alpha: Param = 2,
        dim: int = -1,
        n_iter: int | None = 50,
        return_support_size: bool = False,
    ) -> None:
        super().__init__()
        self.alpha = alpha
        self.dim = dim
        self.n_iter = n_iter
        self.return_support_size = return_support_size

    def forward(self, X: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        return normmax_bisect(
            X,
            self.alpha,
            dim=self.dim,
            n_iter=self.n_iter,
            return_support_size=self.return_support_size,
        )


class BudgetBisect(_ParamModule):
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

    _repr_keys = ("budget", "dim", "n_iter")

    def __init__(
        self,
        budget: Param = 2,
        dim: int = -1,
        n_iter: int | None = 50,
        return_support_size: bool = False,
    ) -> None:
        super().__init__()
        self.budget = budget
        self.dim = dim
        self.n_iter = n_iter
        self.return_support_size = return_support_size

    def forward(self, X: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        return budget_bisect(
            X,
            self.budget,
            dim=self.dim,
            n_iter=self.n_iter,
            return_support_size=self.return_support_size,
        )


class AdaptiveEntmax(nn.Module):
    """alpha-entmax whose alpha is learned, kept in range by construction.

    The learned quantity is an unconstrained ``nn.Parameter`` ``alpha_raw``. With a finite
    ``alpha_max`` the alpha used is ``1 + (alpha_max - 1) * sigmoid(alpha_raw)``, in
    ``(1, alpha_max)``; with ``alpha_max=None`` it is ``1 + softplus(alpha_raw)``, in
    ``(1, inf)``. Every optimizer step therefore leaves a valid alpha (Correia et al., 2019,
    learn alpha per attention head). Only where the map saturates in floating point does
    alpha reach an end of the range, and the ends are valid mappings too (1 is softmax).

    Parameters
    ----------
    alpha : float, default=1.5
        Initial alpha, strictly inside the range.
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
    """

    def __init__(
        self,
        alpha: float = 1.5,
        dim: int = -1,
        n_iter: int | None = 50,
        alpha_max: float | None = 2.0,
        shape: tuple[int, ...] = (),
        return_support_size: bool = False,
    ) -> None:
        super().__init__()
        if alpha_max is not None and not alpha_max > 1:
            raise ValueError(f"alpha_max must be > 1 or None, got {alpha_max!r}")
        upper = math.inf if alpha_max is None else alpha_max
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 1 < alpha < upper:
            raise ValueError(
                f"alpha must be a number strictly between 1 and alpha_max={alpha_max}, "
                f"got {alpha!r}"
            )
        self.dim = dim
        self.n_iter = n_iter
        self.return_support_size = return_support_size
        self.alpha_max = None if alpha_max is None else float(alpha_max)
        if alpha_max is None:
            raw = (alpha - 1) + math.log(-math.expm1(-(alpha - 1)))  # softplus inverse
        else:
            frac = (alpha - 1) / (alpha_max - 1)
            raw = math.log(frac / (1 - frac))
        self.alpha_raw = nn.Parameter(torch.full(tuple(shape), raw, dtype=torch.float32))

    @property
    def alpha(self) -> torch.Tensor:
        """The current alpha, a differentiable function of ``alpha_raw``."""
        if self.alpha_max is None:
            return 1 + nn.functional.softplus(self.alpha_raw)
        return 1 + (self.alpha_max - 1) * torch.sigmoid(self.alpha_raw)

    def forward(self, X: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        return entmax_bisect(
            X,
            self.alpha,
            dim=self.dim,
            n_iter=self.n_iter,
            training=self.training,
            return_support_size=self.return_support_size,
        )

    def extra_repr(self) -> str:
        extra = ", return_support_size=True" if self.return_support_size else ""
        return f"alpha_max={self.alpha_max}, dim={self.dim}, n_iter={self.n_iter}{extra}"
