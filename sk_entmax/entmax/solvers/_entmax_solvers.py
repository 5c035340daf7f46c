"""The alpha-entmax solvers along the last axis, outside autograd.

The threshold by bisection (the power form, or log1p near alpha = 1) or by Newton steps where
:func:`~sk_entmax.entmax.algorithms.newton_applies` says so (narrow rows in columns, per-row
alpha), above alpha = 2 the exact support and Newton steps on its least entry's probability
(:func:`_power_polish`). The gradients' pieces are in ``_entmax_gradients``, the mathematics
in :mod:`sk_entmax.entmax.root_finding`.

A row padded with ``-inf`` gives what the row gives, bit for bit on CPU, wherever these
solvers bisect or polish: the bracket is computed from the entries that are not ``-inf``
(:func:`_row_count`), every sum that decides a step or normalizes is one that exact zeros do
not change (:func:`_row_sum`, :func:`_sum_reaches_one`), and the powers are ``exp(m log q)``,
whose rounding does not depend on the column (``pow``'s vectorized and scalar loops differ).
"""

from __future__ import annotations

import math

import torch

from sk_entmax.entmax.algorithms import NEWTON_MIN_ITER, Case, case_for, newton_applies
from sk_entmax.entmax.common import Param, cpu_branch, row_stats, safe_div
from sk_entmax.entmax.solvers._narrow import (
    _NARROW_WIDTH,
    _from_columns,
    _narrow,
    _shifted_columns,
    _unsettled_rows,
)
from sk_entmax.entmax.solvers._newton import _MAX_PASSES, _power_newton
from sk_entmax.entmax.solvers._sums import row_sum
from sk_entmax.entmax.solvers._traceable import entmax15_traceable, sparsemax_traceable
from sk_entmax.entmax.solvers._traced import _TRACED_STAGES, _block_start, _staged
from sk_entmax.entmax.tracing import compiling, exporting


def entmax_p(U: torch.Tensor, beta: Param) -> torch.Tensor:
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


def _row_count(Z: torch.Tensor, traced: bool = False) -> torch.Tensor:
    """The entries of each row that are not ``-inf`` (at least 1), in ``Z``'s dtype.

    The bracket of the bisection is computed from this count, not from the width of ``Z``,
    so that padding a row with ``-inf`` (at the end or between its entries) leaves every
    iterate unchanged. Without a ``-inf`` (nor a NaN) in ``Z`` it is the width, found
    without counting unless ``traced`` (whose ops must not depend on the data).
    """
    if not traced and bool(Z.amin() > float("-inf")):
        return Z.new_full((*Z.shape[:-1], 1), Z.shape[-1])
    return (Z != float("-inf")).sum(-1, keepdim=True).clamp_min_(1).to(Z.dtype)


def _row_sum(p: torch.Tensor) -> torch.Tensor:
    """Row sums (``keepdim``) that exact zeros between or after the entries do not change.

    On CPU ``sum`` is vectorized with lane splits that depend on the row's width, so padding
    moves its rounding; ``cumsum`` adds the entries one after the other (in a float64
    accumulator for float32), where adding 0 changes nothing, wherever the zeros are. Other
    devices take :func:`~sk_entmax.entmax.solvers._sums.row_sum`'s pairwise tree, which zeros
    after the entries do not change.
    """
    if not cpu_branch(p):
        return row_sum(p)
    return p.cumsum(-1).narrow(-1, p.shape[-1] - 1, 1)


def _sum_reaches_one(p: torch.Tensor, band: torch.Tensor | None) -> torch.Tensor:
    """``sum(p) >= 1`` per row, the bisection's test, made independent of ``-inf`` padding.

    The vectorized ``sum`` decides every row whose sum lies farther from 1 than ``band``
    (a bound on the rounding error of any order of summation near 1, so that both orders
    decide alike); the rows nearer 1 are summed again by :func:`_row_sum`. ``band`` None
    keeps the vectorized ``sum``.
    """
    total = p.sum(-1, keepdim=True)
    if band is not None:
        near = (total - 1).abs_() <= band
        if bool(near.any()):
            if 4 * int(near.sum()) > near.numel():
                total = torch.where(near, _row_sum(p), total)
            else:
                rows = near.squeeze(-1)
                total[rows] = _row_sum(p[rows])
    return total >= 1


def _bracket_width(d: torch.Tensor, beta: Param) -> torch.Tensor:
    """``(1 - d ** -beta) / beta`` per row: from the row max, the threshold lies within this.

    ``d`` is the count of entries that are not ``-inf`` (:func:`_row_count`), one per row.
    """
    log_d = d.log()
    if isinstance(beta, torch.Tensor):
        beta = beta.to(d.dtype)
        zero = beta == 0
        safe_beta = torch.where(zero, 1.0, beta)
        return torch.where(zero, log_d, -torch.expm1(-safe_beta * log_d) / safe_beta)
    if beta == 0:
        return log_d
    return -torch.expm1(-beta * log_d) / beta


# Below this |alpha - 1| the power form loses float32 digits; the log1p form takes over.
_POWER_FORM_MIN_BETA = 0.1


def _entmax_threshold(
    Z: torch.Tensor, beta: Param, n_iter: int, traced: bool = False, exact_tests: bool = True
):
    """Bisection for the threshold of rows ``Z`` whose max is 0; returns ``(t, p)``.

    For a float alpha away from 1 the loop runs in the cheaper power form
    ``p = [beta z - tau]_+ ** (1 / beta)`` with ``tau = beta t - 1`` (a linear change of
    variable, so the bisection steps are the same); otherwise in the log1p form.

    A row padded with ``-inf`` takes the same steps as the row itself: the bracket comes
    from the count of entries that are not ``-inf``, and (on CPU, with ``exact_tests``)
    each test of the sum is made as :func:`_sum_reaches_one` makes it. Once no row's
    midpoint moves any more (``t_lo + width == t_lo`` in floating point, which float32
    reaches after about 24 steps) the remaining steps would all test ``t_lo`` again, so
    the loop stops there with the same result. ``traced`` (the plain-op path) runs every
    step with the plain ``sum`` test, ops that do not depend on the data
    (``torch.jit.trace``).
    """
    d = _row_count(Z, traced)
    width = _bracket_width(d, beta)
    eager = not traced and cpu_branch(Z)
    band = None
    if eager and exact_tests:
        # twice the rounding of the sum (d u) and of its terms (u each) near 1, and a margin
        band = (d + 2) * (1.25 * torch.finfo(Z.dtype).eps)
        band = band / (1 - band).clamp_min_(0.5)
    if isinstance(beta, torch.Tensor) or abs(beta) < _POWER_FORM_MIN_BETA:

        def evaluate(t: torch.Tensor) -> torch.Tensor:
            return entmax_p(Z - t, beta)

        lo, to_threshold = torch.zeros_like(width), None
    else:
        Zb = Z if beta == 1 else Z * beta
        m = 1 / beta
        # q ** m as exp(m log q) on q clamped up to a floor whose power is still a normal
        # number, times the sign of q: pow's vectorized and scalar loops round differently
        # (an entry's p would depend on its column), and log and exp are slow at 0
        floor = 2.0 ** (-100 / m) if m >= 1 else torch.finfo(Z.dtype).tiny

        def evaluate(tau: torch.Tensor) -> torch.Tensor:
            q = (Zb - tau).clamp_(min=0)
            if beta == 1:
                return q
            return torch.clamp(q, min=floor).log_().mul_(m).exp_().mul_(q.sign_())

        lo, width = torch.full_like(width, -1.0), width * beta
        to_threshold = beta
    # no midpoint rounds to lo before the bracket is a few units of rounding wide
    first_check = round(-math.log2(torch.finfo(Z.dtype).eps)) - 4 if eager else n_iter
    for step in range(n_iter):
        width = width / 2
        mid = lo + width
        if step >= first_check and bool((mid == lo).all()):  # the steps left all test lo
            mid = lo
            p = evaluate(mid)
            break
        p = evaluate(mid)
        lo = torch.where(_sum_reaches_one(p, band), mid, lo)
    if to_threshold is None:
        return mid, p
    return (mid + 1) / to_threshold, p


def _compact(Z: torch.Tensor, keep: torch.Tensor):
    """The kept entries of each row of ``Z`` (2-d), in their order, at the front of a
    ``(rows, k)`` tensor filled with ``-inf`` (``k`` the most any row keeps), and where
    they came from: ``(Zc, (row, column), slot)``, ``Zc[row, slot] == Z[row, column]``.

    Sums along a compacted row (by :func:`_row_sum`) equal those along the full row with
    zeros off ``keep``, so compacting changes no result, only the work.
    """
    row, column = keep.nonzero(as_tuple=True)  # in row-major order
    counts = torch.bincount(row, minlength=Z.shape[0])
    starts = counts.cumsum(0) - counts
    slot = torch.arange(row.numel(), device=Z.device) - starts[row]
    k = max(int(counts.max()), 1) if counts.numel() else 1
    Zc = Z.new_full((Z.shape[0], k), float("-inf"))
    Zc[row, slot] = Z[row, column]
    return Zc, (row, column), slot


def _tail_mass(Z: torch.Tensor, v: torch.Tensor, beta: Param) -> torch.Tensor:
    """``sum_{z_i > v} (beta (z_i - v)) ** (1 / beta)`` per row, by :func:`_row_sum`.

    The mass of the entries above ``v`` when the threshold puts ``v``'s own entry at 0: an
    entry of score ``v`` is in the support exactly when this is below 1. Every term is a
    power of a difference of two scores, so there is no cancellation; a row whose ``v`` is
    ``-inf`` gets ``inf``.
    """
    finite = v > float("-inf")
    D = Z - torch.where(finite, v, 0.0)
    above = D > 0
    log_beta = beta.log() if isinstance(beta, torch.Tensor) else math.log(beta)
    log_terms = (torch.where(above, D, 1.0).log_() + log_beta) / beta
    mass = _row_sum(torch.where(above, log_terms.exp_(), 0.0))
    return torch.where(finite, mass, float("inf"))


# Bisection steps that give the support's first guess (the polish's result does not depend
# on them, only its work does: with fewer, more entries are misplaced and moved one by one),
# and the moves after which a row's guess is remade with twice the steps
_GUESS_STEPS = 12
_MAX_MOVES = 4


def _support_floor(Z: torch.Tensor, beta: Param, steps: int = _GUESS_STEPS) -> torch.Tensor:
    """The least score in the support of each row of ``Z`` (2-d, max 0), by the exact
    test of :func:`_tail_mass`.

    ``steps`` bisection steps give the first guess, the scores at which ``p > 0``; the
    guess then moves one distinct score at a time, down while the largest score left out
    passes the test, up while the least score kept fails it. Only entries within the last
    bracket of the bisection are misplaced; a row still moving after ``_MAX_MOVES`` moves
    starts again from a guess of twice the steps. Both tests need only the entries kept,
    so they run on those alone (:func:`_compact`).
    """
    inf = float("inf")
    _, p = _entmax_threshold(Z, beta, steps, exact_tests=False)
    lo = torch.where(p > 0, Z, inf).amin(-1, keepdim=True)
    out = torch.where(Z < lo, Z, -inf).amax(-1, keepdim=True)
    rows = None  # all rows
    # from 4 * _GUESS_STEPS steps on, as many moves as it takes (fewer than the row's width)
    moves = 0 if steps < 4 * _GUESS_STEPS else -Z.shape[-1]
    while moves < _MAX_MOVES:
        moves += 1
        Zr = Z if rows is None else Z[rows]
        br = beta if rows is None or not isinstance(beta, torch.Tensor) else beta[rows]
        lo_r = lo if rows is None else lo[rows]
        out_r = out if rows is None else out[rows]
        Zc = _compact(Zr, Zr >= lo_r)[0]
        shrink = _tail_mass(Zc, lo_r, br) >= 1  # lo's entry is not in the support
        grow = _tail_mass(Zc, out_r, br) < 1  # out's entry is in the support
        moved = (shrink | grow).squeeze(-1)
        if not bool(moved.any()):
            return lo
        Zr, lo_r, out_r = Zr[moved], lo_r[moved], out_r[moved]
        shrink, grow = shrink[moved], grow[moved]
        up = torch.where(Zr > lo_r, Zr, inf).amin(-1, keepdim=True)
        down = torch.where(Zr < out_r, Zr, -inf).amax(-1, keepdim=True)
        rows = torch.nonzero(moved).squeeze(-1) if rows is None else rows[moved]
        lo[rows] = torch.where(shrink, up, torch.where(grow, out_r, lo_r))
        out[rows] = torch.where(shrink, lo_r, torch.where(grow, down, out_r))
    br = beta if not isinstance(beta, torch.Tensor) else beta[rows]
    lo[rows] = _support_floor(Z[rows], br, 2 * steps)
    return lo


# Newton steps of the polish at most (each row stops when its step reaches rounding noise)
_POLISH_MAX_STEPS = 60


def _power_polish(Z: torch.Tensor, beta: Param) -> torch.Tensor:
    """alpha-entmax (alpha > 2) of rows ``Z`` (2-d, max 0), exact to rounding.

    With ``beta = alpha - 1 > 1`` the entries near the threshold have bases
    ``1 + beta (z_i - t)`` far below the rounding of ``t`` (``p_i ** beta``: ``1e-18`` for
    ``p_i = 0.01`` at alpha = 10), so any ``t`` in floating point misplaces them. Here the
    support is found by the exact test of :func:`_support_floor`, and with ``r`` the
    probability of its least entry (score ``v``) every other one is
    ``p_i = (r ** beta + g_i ** beta) ** (1 / beta)`` with
    ``g_i = (beta (z_i - v)) ** (1 / beta)``: a sum of positive terms, whatever their size,
    computed as ``max * (1 + (min / max) ** beta) ** (1 / beta)`` in logarithms, so that
    nothing underflows. ``H(r) = sum_i p_i - 1`` is increasing and convex with
    ``H' = sum_i (r / p_i) ** (beta - 1) >= 1``, so Newton's steps from the first one taken
    from ``r = 0`` (which lands above the root) decrease to the root without overshooting.
    The result depends on the support only, not on how it was found; every row sum is a
    :func:`_row_sum` over the support's entries in their order, so a row padded with
    ``-inf`` gives the same result bit for bit (on CPU), and so does a row whatever the
    other rows of the batch.
    """
    v = _support_floor(Z, beta)
    Zc, (row, column), slot = _compact(Z, Z >= v)
    log_beta = math.log(beta) if not isinstance(beta, torch.Tensor) else beta.log()
    D = Zc - v
    support = D >= 0
    above = D > 0
    log_g = torch.where(above, (torch.where(above, D, 1.0).log() + log_beta) / beta, -math.inf)
    count = support.sum(-1, keepdim=True).to(Z.dtype)
    ties = count - above.sum(-1, keepdim=True).to(Z.dtype)
    r = (1 - _row_sum(torch.where(above, log_g.exp(), 0.0))) / ties  # the step from r = 0
    eps = torch.finfo(Z.dtype).eps
    tiny = torch.finfo(Z.dtype).tiny
    for _ in range(_POLISH_MAX_STEPS):
        log_r = r.log()
        high = torch.maximum(log_g, log_r)
        low = torch.minimum(log_g, log_r)
        log_p = ((low - high) * beta).exp_().log1p_().div_(beta).add_(high)
        Pc = torch.where(support, log_p.exp(), 0.0)
        slope = torch.where(support, ((log_r - log_p) * (beta - 1)).exp_(), 0.0)
        derivative = _row_sum(slope)
        step = (_row_sum(Pc) - 1) / derivative
        # converged: a step within the rounding of r, or of H (about count * eps)
        done = step <= eps * (4 * r + count / derivative)
        if bool(done.all()):
            break
        r = torch.where(done, r, (r - step).clamp_min_(tiny))
    P = torch.zeros_like(Z)
    P[row, column] = Pc[row, slot]
    return P


def _bisect_rows(Z: torch.Tensor, beta: Param, n_iter: int, ensure_sum_one: bool) -> torch.Tensor:
    """alpha-entmax of rows ``Z`` (max 0) by ``n_iter`` bisection steps, or exact to
    rounding (:func:`_power_polish`) on the rows with alpha > 2 from ``NEWTON_MIN_ITER``
    steps on (at least as accurate as those steps, as Newton's steps are for alpha in
    ``[1.1, 2]``)."""
    if not isinstance(beta, torch.Tensor):
        if n_iter >= NEWTON_MIN_ITER and beta > 1:
            shape = Z.shape
            P = _polished(Z.reshape(-1, shape[-1]), beta).reshape(shape)
        else:
            _, P = _entmax_threshold(Z, beta, n_iter)
        return normalize(P) if ensure_sum_one else P
    shape = Z.shape
    Z = Z.reshape(-1, shape[-1])
    beta = beta.expand(*shape[:-1], 1).reshape(-1, 1)
    polish = (beta > 1).squeeze(-1) if n_iter >= NEWTON_MIN_ITER else None
    if polish is None or not bool(polish.any()):
        _, P = _entmax_threshold(Z, beta, n_iter)
    elif bool(polish.all()):
        P = _polished(Z, beta)
    else:
        P = torch.empty_like(Z)
        P[polish] = _polished(Z[polish], beta[polish])
        rest = ~polish
        P[rest] = _entmax_threshold(Z[rest], beta[rest], n_iter)[1]
    P = normalize(P) if ensure_sum_one else P
    return P.reshape(shape)


def _polished(Z: torch.Tensor, beta: Param) -> torch.Tensor:
    """alpha-entmax of rows ``Z`` (2-d, max 0) with alpha > 2 by :func:`_power_polish`; the
    rows without a finite maximum (fully masked, or holding a NaN) by bisection, as
    before (zeros, NaNs)."""
    ok = (Z.amax(-1) == 0) & ~torch.isnan(Z).any(-1)
    if bool(ok.all()):
        return _power_polish(Z, beta)
    P = _entmax_threshold(Z, beta, 1)[1]
    if bool(ok.any()):
        P[ok] = _power_polish(Z[ok], beta[ok] if isinstance(beta, torch.Tensor) else beta)
    return P


def softmax_last(Z: torch.Tensor) -> torch.Tensor:
    """softmax (alpha = 1) with the same masking rules: an all ``-inf`` row maps to 0."""
    _, empty = row_stats(Z)
    return torch.where(empty, 0.0, torch.softmax(torch.where(empty, 0.0, Z), dim=-1))


def normalize(p: torch.Tensor) -> torch.Tensor:
    """``p`` divided by its row sum (a :func:`_row_sum`, so ``-inf`` padding changes
    nothing); a row summing to 0 stays 0."""
    return safe_div(p, _row_sum(p))


def _entmax_newton_rows(
    Z: torch.Tensor, alpha: torch.Tensor, n_iter: int, ensure_sum_one: bool, max_passes: int
) -> torch.Tensor:
    """alpha-entmax of rows whose max is 0, one alpha per row: Newton where it applies.

    The rows with alpha in ``[1.1, 2]`` go to the Newton solver with one exponent per row,
    the others (alpha close to 1, below it or above 2) to bisection in the log1p form.
    """
    beta = alpha - 1
    newton = newton_applies(alpha, n_iter)
    if bool(newton.all()):
        P, settled = _power_newton(
            Z * beta, 1 / beta, normalize=ensure_sum_one, max_passes=max_passes
        )
        rows = _unsettled_rows(settled)
        if rows is not None:
            P[rows] = _bisect_rows(Z[rows], beta[rows], n_iter, ensure_sum_one)
        return P
    rows = newton.squeeze(-1)
    P = torch.empty_like(Z)
    if bool(rows.any()):
        P[rows] = _entmax_newton_rows(Z[rows], alpha[rows], n_iter, ensure_sum_one, max_passes)
    others = ~rows
    P[others] = _bisect_rows(Z[others], beta[others], n_iter, ensure_sum_one)
    return P


def _entmax_newton(
    Z: torch.Tensor, alpha: float, n_iter: int, ensure_sum_one: bool, case: Case, max_passes: int
) -> torch.Tensor:
    """alpha-entmax of rows whose max is 0 by Newton steps, for ``1.1 <= alpha <= 2``
    (``case``: alpha's); alpha 2 and 1.5 by the exact maps' traceable form (normalized,
    whatever ``ensure_sum_one``)."""
    if case is Case.SPARSEMAX:
        P = sparsemax_traceable(Z)  # exact: sums to 1 up to rounding
        if ensure_sum_one:
            total = row_sum(P)  # a sum that -inf padding does not change
            P.div_(torch.where(total > 0, total, 1))
        return P
    if case is Case.ENTMAX15:
        return entmax15_traceable(Z)
    beta = alpha - 1
    Zb = Z.mul_(beta)  # Z is ours: scaled in place
    P, settled = _power_newton(Zb, 1 / beta, normalize=ensure_sum_one, max_passes=max_passes)
    rows = _unsettled_rows(settled)
    if rows is not None:
        P[rows] = _bisect_rows(Zb[rows] / beta, beta, n_iter, ensure_sum_one)
    return P


def _entmax_newton_narrow(
    Z: torch.Tensor, alpha: float, n_iter: int, ensure_sum_one: bool, case: Case, max_passes: int
) -> torch.Tensor:
    """:func:`_entmax_newton` for narrow rows (any shift), in the column layout, at an
    alpha other than 2 and 1.5 (whose traceable form takes the layout itself).

    See :func:`~sk_entmax.entmax.solvers._narrow._shifted_columns`; the unsettled rows are
    finished by bisection.
    """
    ZT = _shifted_columns(Z)
    beta = alpha - 1
    ZbT = ZT.mul_(beta)
    PT, settled = _power_newton(
        ZbT, 1 / beta, normalize=ensure_sum_one, dim=0, max_passes=max_passes
    )

    def finish(rows: torch.Tensor) -> torch.Tensor:
        return _bisect_rows(rows / beta, beta, n_iter, ensure_sum_one)

    return _from_columns(PT, settled, ZbT, Z.shape, finish)


def _entmax_bisect_traced(
    Z: torch.Tensor,
    alpha: Param,
    n_iter: int,
    ensure_sum_one: bool,
    stages: tuple[int, ...] = _TRACED_STAGES,
) -> torch.Tensor:
    """:func:`entmax_bisect_last` in ops that do not depend on the data, for
    ``torch.compile``: where :func:`~sk_entmax.entmax.algorithms.newton_applies` (for a
    tensor alpha: on every row, else every row bisects), Newton steps (:func:`_newton_passes`)
    in the stages of :func:`~sk_entmax.entmax.solvers._traced._staged` from the start of
    :func:`~sk_entmax.entmax.solvers._traced._block_start`, then bisection if a row has not
    settled (branches of ``torch.cond``; ``stages``: the passes of each stage); elsewhere,
    and always under ``torch.export`` (whose programs hold no ``torch.cond`` here), exactly
    ``n_iter`` bisection steps tested by the plain row sum (no early stop, no polish above
    alpha = 2).
    """
    max_val, _ = row_stats(Z)
    Z = Z - max_val

    def bisect(Z: torch.Tensor, *alpha: torch.Tensor) -> torch.Tensor:
        beta = (alpha[0] if alpha else value) - 1
        _, p = _entmax_threshold(Z, beta, n_iter, traced=True)
        return _normalize_traced(p) if ensure_sum_one else p

    value = alpha
    if exporting():
        return bisect(Z, alpha) if isinstance(alpha, torch.Tensor) else bisect(Z)
    if isinstance(alpha, torch.Tensor):
        if n_iter < NEWTON_MIN_ITER:
            return bisect(Z, alpha)
        newton = _newton_stages(bisect, ensure_sum_one, stages=stages)
        return newton(Z, alpha.expand(*Z.shape[:-1], 1))
    if newton_applies(alpha, n_iter):
        return _newton_stages(bisect, ensure_sum_one, alpha, stages)(Z)
    return bisect(Z)


def _newton_stages(
    bisect,
    ensure_sum_one: bool,
    value: float | None = None,
    stages: tuple[int, ...] = _TRACED_STAGES,
):
    """The Newton stages of :func:`_entmax_bisect_traced`: a function of ``(Z, *alpha)``
    (``alpha`` a tensor operand, or ``value``), bisection (``bisect``) the last stage."""

    def staged(Z: torch.Tensor, *alpha: torch.Tensor) -> torch.Tensor:
        if alpha:  # Newton on the rows where it applies; any other row sends all to bisection
            applies = newton_applies(alpha[0], NEWTON_MIN_ITER)
            m = 1 / (torch.where(applies, alpha[0], 1.5) - 1)
        else:
            applies, m = True, 1 / (value - 1)
        Zb = Z / m

        def passes(Zb: torch.Tensor, tau: torch.Tensor, last: torch.Tensor, n: int):
            settled, tau, last = _newton_passes(Zb, tau, last, m, n)
            return settled & applies, tau, last

        def finish(Zb: torch.Tensor, tau: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
            P = _power_traced(Zb, tau, m, m)
            return _normalize_traced(P) if ensure_sum_one else P

        def fallback(Zb: torch.Tensor) -> torch.Tensor:
            return bisect(Z, *alpha)

        tau = torch.full_like(Z[..., :1], -1.0)
        state = _block_start(passes, Zb, (tau, torch.full_like(tau, math.inf)), sum(stages))
        return _staged(passes, finish, fallback, Zb, state, stages)

    return staged


def _power_traced(Zb: torch.Tensor, tau: torch.Tensor, m: Param, exponent: Param) -> torch.Tensor:
    """``[zb - tau]_+ ** exponent`` (``m`` the solver's exponent, ``exponent`` ``m`` or
    ``m - 1``), as ``exp2(log2(.))`` on a floor with exact zeros off the support."""
    D = (Zb - tau).relu()
    if not isinstance(exponent, torch.Tensor) and exponent == 1:
        return D
    if isinstance(m, torch.Tensor):
        floor = torch.exp2(-120 / (m - 1).clamp(min=1))
    else:
        floor = 2.0 ** (-120 / max(m - 1, 1))
    return torch.where(D > 0, torch.clamp(D, min=floor).log2() * exponent, -math.inf).exp2()


def _newton_passes(Zb: torch.Tensor, tau: torch.Tensor, last: torch.Tensor, m: Param, n: int):
    """``n`` steps of :func:`~sk_entmax.entmax.solvers._newton._power_newton` in
    data-independent ops (no row frozen); returns ``(settled, tau, last step)``. A row is
    settled when its last step fell within the tolerance, or within four times it without
    halving the one before (rounding noise), as there; a NaN row is settled."""
    tol = torch.finfo(Zb.dtype).eps * (2 + 4 / m)
    tiny = torch.finfo(Zb.dtype).tiny
    for _ in range(n):
        D = (Zb - tau).relu()
        G = _power_traced(Zb, tau, m, m - 1)
        g_sum = G.sum(-1, keepdim=True)
        total = (G * D).sum(-1, keepdim=True)
        norm = torch.exp2(total.log2() / m)
        step = (norm - 1) * total / (norm * g_sum).clamp(min=tiny)
        size = step.abs()
        settled = ~(size > tol) | ((size <= 4 * tol) & (2 * size >= last))
        tau, last = tau + step, size
    return settled, tau, last


def _normalize_traced(p: torch.Tensor) -> torch.Tensor:
    """:func:`normalize` by the plain row sum (a row summing to 0 stays 0)."""
    return safe_div(p, p.sum(-1, keepdim=True))


def entmax_bisect_last(
    Z: torch.Tensor,
    alpha: Param,
    n_iter: int,
    ensure_sum_one: bool,
    case: Case | None = None,
    max_passes: int = _MAX_PASSES,
    narrow_width: int = _NARROW_WIDTH,
) -> torch.Tensor:
    """alpha-entmax along the last axis of ``Z`` outside autograd, given ``alpha``'s case
    (None: decided here): traced under ``torch.compile``, else Newton where ``newton_applies``
    (at most ``max_passes`` passes, then bisection; rows up to ``narrow_width`` wide in the
    column layout), else bisection. A tensor alpha is solved per row, whether it holds one
    value for every row or not: its value is never read back, so the call decides its case
    once (``PER_ROW``) and never waits on the device."""
    if compiling():
        return _entmax_bisect_traced(Z, alpha, n_iter, ensure_sum_one)
    if not isinstance(alpha, torch.Tensor) and newton_applies(alpha, n_iter):
        if case is None:
            case = case_for(alpha)
        if _narrow(Z, narrow_width) and case is Case.ROOT:
            return _entmax_newton_narrow(Z, alpha, n_iter, ensure_sum_one, case, max_passes)
        max_val, _ = row_stats(Z)
        return _entmax_newton(Z - max_val, alpha, n_iter, ensure_sum_one, case, max_passes)
    max_val, _ = row_stats(Z)
    Z = Z - max_val
    if isinstance(alpha, torch.Tensor) and bool(newton_applies(alpha, n_iter).any()):
        return _entmax_newton_rows(Z, alpha, n_iter, ensure_sum_one, max_passes)
    return _bisect_rows(Z, alpha - 1, n_iter, ensure_sum_one)
