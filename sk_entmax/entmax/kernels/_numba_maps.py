"""The fused CPU kernels (numba): sparsemax, 1.5-entmax and alpha-entmax, row by row.

Imported only through :mod:`sk_entmax.entmax.kernels.cpu`, which falls back to the torch
forms, with one warning, when this module cannot load. Every function here works on 2-d
C-contiguous float32 or float64 arrays, one row at a time while it sits in cache:

forward
    the row's maximum; the candidates, the entries above a lower bound on the threshold
    ``tau`` that rises as they come (any subset ``S`` of the row bounds it:
    ``tau >= mean_S - |S|^(1 - alpha)``, by convexity, for the row shifted to a maximum of 0
    and scaled by ``alpha - 1``), kept with their indices in a scratch row; ``tau`` from the
    candidates alone, in float64 (sparsemax and 1.5-entmax: a sort of the candidates and
    their closed form; other alphas: Newton steps from the bound, which rise to the root
    without overshooting it, as ``f(tau) = sum [y - tau]_+^(1 / (alpha - 1)) - 1`` is
    convex and decreasing); then the row is zeroed and the candidates above ``tau`` written,
    normalized where alpha is not 2. Every entry off the support is an exact 0;
backward
    ``g = p^(2 - alpha)`` and ``dx = g (dy - sum(g dy) / sum(g))``, sums in float64.

Rows are spread over threads in fixed blocks of :data:`ROW_BLOCK` rows (``prange`` over the
blocks); no sum crosses a row, so the bits do not depend on the number of threads.
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: rows per block of the parallel loop
ROW_BLOCK = 16

#: Newton steps at most for alpha other than 1.5 and 2 (they rise monotonically to the root)
MAX_NEWTON = 100

#: how far below a subset's bound the candidates' bound is set (rows are shifted to a
#: maximum of 0 and tau lies in [-1, 0]): a margin for rounding, so that no entry of the
#: support is ever left out; the exact solve on the candidates decides the support
_MARGIN = 1e-9

# reassociation lets LLVM vectorize the row's sums (deterministic for a build; each row is
# summed the same way on any thread); no "nnan"/"ninf": -inf masks entries, NaN must spread
_FAST = {"nsz", "arcp", "contract", "reassoc"}
# the maximum alone may assume no NaN (a NaN row is found by the candidates' pass)
_FAST_MAX = {"nsz", "arcp", "contract", "reassoc", "nnan"}

SPARSEMAX, ENTMAX15, GENERAL = 0, 1, 2


@numba.njit(cache=True, fastmath=_FAST_MAX, nogil=True)
def _row_max(z):
    m = -np.inf
    for i in range(z.shape[0]):
        m = max(m, z[i])
    return m


@numba.njit(cache=True, fastmath=_FAST, nogil=True)
def _bound(s, k, a1, mode):
    """A lower bound on tau from a subset of ``k`` entries summing to ``s``."""
    if mode == SPARSEMAX:
        b = (s - 1.0) / k
    elif mode == ENTMAX15:
        b = s / k - 1.0 / math.sqrt(k)
    else:
        b = s / k - math.exp(-a1 * math.log(k))
    return b - _MARGIN


@numba.njit(cache=True, nogil=True)
def _tau_sorted(y, k, mode):
    """The threshold of the ``k`` candidates ``y`` (maximum 0) by their sort: sparsemax's
    ``(cumsum_r - 1) / r`` or 1.5-entmax's closed form at the largest valid ``r``."""
    s = np.sort(y[:k])
    c1 = 0.0
    c2 = 0.0
    tau = -1.0
    for r in range(1, k + 1):
        v = s[k - r]
        c1 += v
        if mode == SPARSEMAX:
            t = (c1 - 1.0) / r
        else:
            c2 += v * v
            mean = c1 / r
            delta = (1.0 - (c2 - c1 * mean)) / r
            t = mean - math.sqrt(delta if delta > 0.0 else 0.0)
        if r > 1 and t >= v:
            break
        tau = t
    return tau


@numba.njit(cache=True, fastmath=_FAST, nogil=True)
def _tau_newton(y, k, power, low):
    """The threshold of the ``k`` candidates ``y`` (maximum 0) for ``p = [y - tau]^power``,
    ``power = 1 / (alpha - 1) >= 1``: Newton steps from ``low``, a lower bound."""
    tau = low
    for _ in range(MAX_NEWTON):
        f = -1.0
        df = 0.0
        for i in range(k):
            d = y[i] - tau
            if d > 0.0:
                q = math.exp((power - 1.0) * math.log(d))
                f += q * d
                df += q
        if f <= 0.0 or df <= 0.0:
            break
        step = f / (power * df)
        tau += step
        if step <= 1e-14:
            break
    return tau


@numba.njit(cache=True, fastmath=_FAST, nogil=True)
def _forward_row(z, p, alpha, mode, y, idx):
    n = z.shape[0]
    m = _row_max(z)
    for i in range(n):
        p[i] = 0.0
    if m == -np.inf:  # a fully masked row: zeros
        return
    a1 = alpha - 1.0
    low = -1.0 - _MARGIN
    k = 0
    s = 0.0
    nan = False
    for i in range(n):
        v = (np.float64(z[i]) - m) * a1
        if v > low:
            y[k] = v
            idx[k] = i
            k += 1
            s += v
            b = _bound(s, k, a1, mode)
            if b > low:
                low = b
        elif v != v:
            nan = True
    if nan or m != m:
        for i in range(n):
            p[i] = np.nan
        return
    while True:  # keep the candidates above the last bound, until none leaves
        kept = 0
        s = 0.0
        for j in range(k):
            if y[j] > low:
                y[kept] = y[j]
                idx[kept] = idx[j]
                kept += 1
                s += y[j]
        if kept == k:
            break
        k = kept
        b = _bound(s, k, a1, mode)
        if b > low:
            low = b
    power = 1.0
    if mode == GENERAL:
        power = 1.0 / a1
        tau = _tau_newton(y, k, power, low)
    else:
        tau = _tau_sorted(y, k, mode)
    total = 0.0
    for j in range(k):
        d = y[j] - tau
        if d > 0.0:
            if mode == SPARSEMAX:
                q = d
            elif mode == ENTMAX15:
                q = d * d
            else:
                q = math.exp(power * math.log(d))
        else:
            q = 0.0
        y[j] = q
        total += q
    inv = 1.0 / total if mode != SPARSEMAX and total > 0.0 else 1.0
    for j in range(k):
        p[idx[j]] = y[j] * inv


@numba.njit(cache=True, nogil=True)
def _forward_block(Z, P, alphas, mode, b):
    n_rows, n = Z.shape
    y = np.empty(n, dtype=np.float64)
    idx = np.empty(n, dtype=np.int64)
    for r in range(b * ROW_BLOCK, min(n_rows, (b + 1) * ROW_BLOCK)):
        _forward_row(Z[r], P[r], alphas[r], mode, y, idx)


@numba.njit(cache=True, nogil=True)
def forward_serial(Z, P, alphas, mode):
    """``P`` (out) of the rows of ``Z``, ``alphas`` one per row (float64), one thread."""
    for b in range((Z.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
        _forward_block(Z, P, alphas, mode, b)


@numba.njit(cache=True, parallel=True, nogil=True)
def forward_parallel(Z, P, alphas, mode):
    """:func:`forward_serial`, its blocks of rows spread over numba's threads."""
    for b in numba.prange((Z.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
        _forward_block(Z, P, alphas, mode, b)


@numba.njit(cache=True, fastmath=_FAST, nogil=True)
def _backward_row(p, dy, dx, alpha, mode):
    n = p.shape[0]
    sg = 0.0
    sgd = 0.0
    if mode == SPARSEMAX:  # branch-free loops, which vectorize
        for i in range(n):
            g = 1.0 if p[i] > 0 else 0.0
            sg += g
            sgd += g * dy[i]
        mean = sgd / sg if sg > 0.0 else 0.0
        for i in range(n):
            g = 1.0 if p[i] > 0 else 0.0
            dx[i] = g * (dy[i] - mean)
    elif mode == ENTMAX15:
        for i in range(n):
            g = math.sqrt(np.float64(p[i]))
            sg += g
            sgd += g * dy[i]
        mean = sgd / sg if sg > 0.0 else 0.0
        for i in range(n):
            g = math.sqrt(np.float64(p[i]))
            dx[i] = g * (dy[i] - mean)
    else:
        e = 2.0 - alpha
        for i in range(n):
            v = np.float64(p[i])
            if v > 0.0:
                g = math.exp(e * math.log(v))
                sg += g
                sgd += g * dy[i]
        mean = sgd / sg if sg > 0.0 else 0.0
        for i in range(n):
            v = np.float64(p[i])
            if v > 0.0:
                dx[i] = math.exp(e * math.log(v)) * (dy[i] - mean)
            else:
                dx[i] = 0.0


@numba.njit(cache=True, nogil=True)
def _backward_block(P, DY, DX, alphas, mode, b):
    for r in range(b * ROW_BLOCK, min(P.shape[0], (b + 1) * ROW_BLOCK)):
        _backward_row(P[r], DY[r], DX[r], alphas[r], mode)


@numba.njit(cache=True, nogil=True)
def backward_serial(P, DY, DX, alphas, mode):
    """``DX`` (out), the vector-Jacobian product of the rows of ``P`` with ``DY``."""
    for b in range((P.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
        _backward_block(P, DY, DX, alphas, mode, b)


@numba.njit(cache=True, parallel=True, nogil=True)
def backward_parallel(P, DY, DX, alphas, mode):
    """:func:`backward_serial`, its blocks of rows spread over numba's threads."""
    for b in numba.prange((P.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
        _backward_block(P, DY, DX, alphas, mode, b)
