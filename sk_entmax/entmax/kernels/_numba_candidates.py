"""A row's start in the fused CPU kernels (numba): its maximum, the bounds on the threshold
``tau`` that passes over the row give, and the candidates above them.

:func:`_row_start` finds the row's maximum (and a NaN); :func:`_gather` and
:func:`_gather_wide` keep the entries above a bound with their indices, without a branch;
:func:`_bound`, :func:`_prebound` and :func:`_raise` bound ``tau`` from below by passes that
store nothing. Every function is inlined into the loops of
:mod:`~sk_entmax.entmax.kernels._numba_maps` (whose docstring has the design).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import overload

from sk_entmax.entmax.kernels._compress import AVAILABLE as COMPRESS
from sk_entmax.entmax.kernels._compress import WIDTH, WIDTH16, compress8, compress16
from sk_entmax.entmax.kernels._fast_pow import max_no_nan
from sk_entmax.entmax.kernels._numba_settings import (
    _FAST,
    _MARGIN,
    _PRE_LEVEL,
    _SMALL_COUNT,
    ENTMAX15,
    MAX_NEWTON,
    SPARSEMAX,
)
from sk_entmax.entmax.kernels._numba_threshold import _compact


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _row_max(z):
    """The row's maximum (any value when it holds a NaN), and whether it holds a NaN."""
    m = z.dtype.type(-np.inf)
    nan = False
    for i in range(z.shape[0]):
        v = z[i]
        m = max_no_nan(m, v)
        nan |= v != v
    return np.float64(m), nan


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _bound(s, k, a1, mode):
    """A lower bound on tau from a subset of ``k`` entries summing to ``s``."""
    if mode == SPARSEMAX:
        b = (s - 1.0) / k
    elif mode == ENTMAX15:
        b = s / k - 1.0 / math.sqrt(k)
    else:  # (libm's power: a scalar, where fast_pow's long chain costs twice its latency)
        b = s / k - np.float64(k) ** -a1
    return b - _MARGIN


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _ipow(d, r):
    """``d ** r`` for an integer ``r`` in ``[1, 15]``, by four squarings (no loop that
    depends on ``r``, so that a loop of them vectorizes)."""
    p = 1.0
    b = d
    for bit in range(4):
        p = p * b if (r >> bit) & 1 else p
        b = b * b
    return p


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _raise(y, idx, k, tau, a1, mode):
    """A lower bound on the threshold of the ``k`` candidates ``y``, from ``tau`` below it,
    by passes that store nothing (so that they vectorize). Each pass sums the candidates
    above the last bound, which rises to that subset's (:func:`_bound`: for sparsemax,
    Michelot's iterate) or, for alphas up to 1.5 (``q = 1 / a1 >= 2``), to a Newton step
    from below on a bound of a norm of ``[y - tau]_+``, whichever is higher; they stop when
    the count stops falling by a quarter or is small enough for the exact solve. Returns
    the bound and the number of candidates kept (those below a bound dropped when they are
    most of them).

    The norm's bound: over the ``count`` candidates above ``tau``, the power mean of order
    ``r = floor(q)`` of ``[y - tau]_+`` is at most that of order ``q``, itself at most
    ``count^(-1/q)`` at the threshold (where their ``q``-th powers sum to at most 1); so
    ``||[y - tau]_+||_r <= count^(1/r - a1)`` there (1 for 1.5-entmax, where it is the
    equation itself). That norm is convex and decreasing in ``tau``: a Newton step from
    below stays below where it meets the bound, itself below the threshold. Only products
    per candidate (``r`` is an integer): no power."""
    if mode == ENTMAX15:
        r = 2
    elif mode == SPARSEMAX or a1 > 0.5:
        r = 1
    else:  # floor(q) (above q by at most its rounding, far below the bound's margin)
        r = min(15, int(1.0 / a1 + 1e-12))
    prev = 4 * k + 4  # (the first pass leads to a second one unless its count is small)
    for _ in range(MAX_NEWTON):
        count = 0
        s = 0.0
        sr1 = 0.0
        sr = 0.0
        for j in range(k):
            d = y[j] - tau
            keep = d > 0.0
            count += keep
            d = d if keep else 0.0
            s += d
            if r > 1:
                q1 = _ipow(d, r - 1)
                sr1 += q1
                sr += q1 * d
        if count == 0:
            break
        if 2 * count < k:  # most candidates left behind: drop them (still a superset)
            k = _compact(y, idx, k, tau)
        b = -np.inf
        if r == 1:
            # the subset's bound, from the sum of its entries (s is their sum less count *
            # tau); with r > 1 the step below lies above it (and needs one scalar power less)
            b = _bound(s + count * tau, count, a1, mode)
        elif sr > 0.0:
            norm = math.sqrt(sr) if r == 2 else sr ** (1.0 / r)
            bound = 1.0 if mode == ENTMAX15 else np.float64(count) ** (1.0 / r - a1)
            if norm > bound:
                # h = ||.||_r - bound, h' = -||.||_r^(1 - r) sum [y - tau]_+^(r - 1)
                b = max(b, tau + (norm - bound) * sr / (norm * sr1) - _MARGIN)
        if not b > tau:
            break
        tau = b
        if count <= _SMALL_COUNT or 4 * count > 3 * prev:
            break
        prev = count
    return tau, k


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _prebound(z, m, a1):
    """A lower bound on alpha-entmax's threshold (of the row shifted to a maximum of 0 and
    scaled by ``a1 = alpha - 1``), at least -1, from one vectorized pass over the row that
    stores nothing: the subset bound ``mean_S - |S|^(-a1)`` (:func:`_bound`) of the entries
    above :data:`_PRE_LEVEL`. Where the support is wide it cuts the candidates gathered (at
    1024 x 1000, alpha 1.33, some 105 a row, not 415), and the bound's passes over them."""
    # (a 0 or 1 factor, not a select of the sum's term: LLVM vectorized this loop only in
    # this form, or with two levels; the select alone ran 7 times slower)
    level = m + _PRE_LEVEL / a1
    c = 0.0
    s = 0.0
    for i in range(z.shape[0]):
        v = max_no_nan(np.float64(z[i]), level)  # (finite: a masked -inf times 0 is NaN)
        keep = 1.0 if v > level else 0.0
        c += keep
        s += keep * v
    b = -1.0
    if c > 0.0:
        b = max(b, (s / c - m) * a1 - c**-a1)
    return b - _MARGIN


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _gather(z, m, a1, low, y, idx):
    """The entries of ``z`` whose shifted, scaled value ``(z - m) a1`` lies above ``low``,
    into ``y`` and ``idx`` in order, without a branch (eight at a time by
    :func:`~sk_entmax.entmax.kernels._compress.compress8` where the host has AVX-512).
    Returns their number."""
    n = z.shape[0]
    k = 0
    start = 0
    if COMPRESS:
        while start + WIDTH <= n:
            k = compress8(z, start, m, a1, low, y, idx, k)
            start += WIDTH
    for i in range(start, n):
        v = (np.float64(z[i]) - m) * a1
        y[k] = v
        idx[k] = i
        k += v > low
    return k


def _gather_wide(z, m, a1, low, y, idx, v, iv):
    """:func:`_gather` for alpha other than 1.5 and 2 (typed by numba per dtype, below)."""


@overload(_gather_wide, inline="always")
def _gather_wide_impl(z, m, a1, low, y, idx, v, iv):
    """A float32 row where the host has AVX-512: the entries above the bound found sixteen
    at a time in float32 (:func:`~sk_entmax.entmax.kernels._compress.compress16`, four
    bytes stored an entry for the value and four for the index, where :func:`_gather`
    stores eight and eight), then only those shifted and scaled into ``y`` (the same
    arithmetic as :func:`_gather`'s, so the same bits): 0.15 ms against 0.29 for 1024 rows
    of 1000 entries, 160 kept a row. The level is rounded down in float32, so that the
    candidates are a superset of :func:`_gather`'s (any below ``low`` add nothing).
    Otherwise :func:`_gather`."""
    if not (COMPRESS and isinstance(z, types.Array) and z.dtype == types.float32):
        return lambda z, m, a1, low, y, idx, v, iv: _gather(z, m, a1, low, y, idx)

    def impl(z, m, a1, low, y, idx, v, iv):
        n = z.shape[0]
        exact = m + low / a1
        level = np.float32(exact - 1e-6 * (abs(m) + abs(low / a1)))
        k = 0
        start = 0
        while start + WIDTH16 <= n:
            k = compress16(z, start, level, v, iv, k)
            start += WIDTH16
        for i in range(start, n):
            x = z[i]
            v[k] = x
            iv[k] = i
            k += x > level
        for j in range(k):
            y[j] = (np.float64(v[j]) - m) * a1
            idx[j] = iv[j]
        return k

    return impl


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _row_start(z, p):
    """The row's maximum; ``p`` NaN on a row holding a NaN (or +inf, whose shifted value is
    NaN), else zeroed. Returns ``(m, done)``: ``done`` where nothing is left to do (NaN, or
    a fully masked row: zeros)."""
    n = z.shape[0]
    m, nan = _row_max(z)
    if nan or m == np.inf:
        for i in range(n):
            p[i] = np.nan
        return m, True
    for i in range(n):
        p[i] = 0.0
    return m, m == -np.inf
