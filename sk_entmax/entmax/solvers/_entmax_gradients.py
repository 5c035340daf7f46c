"""The gradient side of alpha-entmax: the Jacobian's weights, the alpha-derivative and the
plain-op path whose autograd gradient is exact.

One job: differentiate what the solvers of :mod:`sk_entmax.entmax.solvers._entmax_solvers` compute.
Here are the diagonal weights ``p ** (2 - alpha)`` of the Jacobian (:func:`gppr`), the
derivative in alpha (:func:`_entmax_alpha_grad`, :func:`entmax_alpha_vjp`) that the backward
passes of :mod:`sk_entmax.entmax.root_finding` and the kernels use, and the plain-op mapping
whose threshold re-enters the graph through its implicit derivative
(:func:`entmax_bisect_plain`). The mathematics is in :mod:`sk_entmax.entmax.root_finding`.
"""

from __future__ import annotations

import torch
from torch import nn

from sk_entmax.entmax.algorithms import Case, case_for
from sk_entmax.entmax.common import (
    Param,
    phi,
    phi_no_graph,
    row_stats,
    safe_div,
    safe_log,
    safe_pow,
    sqrt_support,
)
from sk_entmax.entmax.solvers._entmax_solvers import _entmax_threshold, entmax_p, normalize
from sk_entmax.entmax.solvers._newton import floor_threshold
from sk_entmax.entmax.tracing import compiling


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


def entmax_alpha_vjp(
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


def gppr(Y: torch.Tensor, alpha: Param, *, case: Case | None = None) -> torch.Tensor:
    """``Y ** (2 - alpha)`` on the support, 0 elsewhere: the Jacobian's diagonal weights.

    For a number alpha in ``(1, 2]`` this is ``exp2((2 - alpha) log2(Y))`` on ``Y`` clamped up
    to ``2 ** -120``, the clamped entries then set back to 0 (as in
    :func:`~sk_entmax.entmax.solvers._newton._power_newton`: ``pow`` is slow on CPU, and so are
    ``log2`` and ``exp2`` at 0 and at subnormal numbers); so is a tensor alpha (one per row)
    whose values all lie in ``(1, 2]``, the support's indicator setting the zeros. Any other
    alpha, and a second derivative being built, take :func:`safe_pow`, whose own gradient
    stays finite. ``case``: ``alpha``'s, when the caller decided it
    (:func:`~sk_entmax.entmax.algorithms.case_for`), else None.
    """
    if torch.is_grad_enabled():
        return safe_pow(Y, 2 - alpha)
    mapping = case_for(alpha) if case is None else case
    per_row = mapping is Case.PER_ROW
    if per_row and compiling():  # the range test below reads alpha back
        return safe_pow(Y, 2 - alpha)
    in_range = bool(((alpha > 1) & (alpha <= 2)).all()) if per_row else 1 < alpha <= 2
    if not in_range:
        return safe_pow(Y, 2 - alpha)
    if mapping is Case.SPARSEMAX:
        return torch.sign(Y)
    if mapping is Case.ENTMAX15:
        return sqrt_support(Y)
    gppr = torch.clamp(Y, min=2.0**-120).log2_().mul_(2 - alpha).exp2_()
    g_floor = 0.0 if per_row else floor_threshold(2 - alpha)
    if g_floor == 0:
        return gppr.mul_(torch.sign(Y))
    return nn.functional.threshold_(gppr, g_floor, 0.0)


def entmax_bisect_plain(
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
        t, p = _entmax_threshold(Z, beta, n_iter, traced=True)
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
    p = entmax_p(Z - t, beta)
    return normalize(p) if ensure_sum_one else p
