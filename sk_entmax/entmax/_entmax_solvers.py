"""The alpha-entmax solvers along the last axis, outside autograd.

The threshold by bisection (in the power form, or the log1p form near alpha = 1) or by
Newton steps where :func:`~sk_entmax.entmax.algorithms.newton_applies` says so (with the
narrow-row column layout and the per-row alpha case), the Jacobian weights ``p ** (2 -
alpha)`` and the alpha-derivative pieces the backward passes use, and the plain-op path whose
autograd gradient is exact. The mathematics is in :mod:`sk_entmax.entmax.root_finding`.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from sk_entmax.entmax._common import (
    Param,
    phi,
    phi_no_graph,
    row_stats,
    safe_div,
    safe_log,
    safe_pow,
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
    sqrt_support,
)
from sk_entmax.entmax.algorithms import NEWTON_MIN_ITER, Mapping, mapping_for, newton_applies


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
    Y: torch.Tensor, gppr: torch.Tensor, beta: Param
) -> tuple[torch.Tensor, torch.Tensor]:
    """The pieces of the alpha-derivative (see the module docstring of ``root_finding``):
    ``p_i a_i`` entrywise and ``sum_i p_i a_i / sum_i g_i`` per row.

    While autograd records (a second derivative being built) the safe differentiable ops
    run; otherwise the same values in fewer, in-place operations.
    """
    if torch.is_grad_enabled():
        log_p = safe_log(Y)
        pa = -Y * log_p * log_p * phi(-beta * log_p)
    else:
        log_p = torch.where(Y > 0, Y, 1.0).log_()  # 0 off the support, where p a = 0
        pa = phi_no_graph(log_p * -beta).mul_(log_p).mul_(log_p).mul_(Y).neg_()
    return pa, safe_div(pa.sum(-1, keepdim=True), gppr.sum(-1, keepdim=True))


def _entmax_alpha_vjp(
    dY: torch.Tensor, Y: torch.Tensor, gppr: torch.Tensor, beta: Param
) -> torch.Tensor:
    """``sum_i dY_i dp_i / dalpha`` per row: the backward passes' alpha term.

    ``dp_i / dalpha = p_i a_i - g_i sum_j p_j a_j / sum_j g_j`` (see
    :func:`_entmax_alpha_grad`); without a graph recorded, formed in place.
    """
    pa, pa_sum = _entmax_alpha_grad(Y, gppr, beta)
    if torch.is_grad_enabled():  # building a second derivative: no in-place ops
        return (dY * (pa - gppr * pa_sum)).sum(-1, keepdim=True)
    return pa.addcmul_(gppr, pa_sum, value=-1).mul_(dY).sum(-1, keepdim=True)


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
    broadcast = isinstance(alpha, torch.Tensor) and alpha.stride() == (0,) * alpha.dim()
    if broadcast and n_iter >= NEWTON_MIN_ITER:  # (read back only where Newton may use it)
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
    ``log2`` and ``exp2`` at 0 and at subnormal numbers); so is a tensor alpha (one per row)
    whose values all lie in ``(1, 2]``, the support's indicator setting the zeros. Any other
    alpha, and a second derivative being built, take :func:`safe_pow`, whose own gradient
    stays finite.
    """
    if torch.is_grad_enabled():
        return safe_pow(Y, 2 - alpha)
    mapping = mapping_for(alpha)
    per_row = mapping is Mapping.PER_ROW
    in_range = bool(((alpha > 1) & (alpha <= 2)).all()) if per_row else 1 < alpha <= 2
    if not in_range:
        return safe_pow(Y, 2 - alpha)
    if mapping is Mapping.SPARSEMAX:
        return torch.sign(Y)
    if mapping is Mapping.ENTMAX15:
        return sqrt_support(Y)
    gppr = torch.clamp(Y, min=2.0**-120).log2_().mul_(2 - alpha).exp2_()
    g_floor = 0.0 if per_row else _floor_threshold(2 - alpha)
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
