"""The fused CPU kernels (numba): sparsemax, 1.5-entmax and alpha-entmax, row by row.

Imported only through :mod:`sk_entmax.entmax.kernels.cpu`, which falls back to the torch
forms, with one warning, when this module cannot load. Every function here works on 2-d
C-contiguous float32 or float64 arrays, one row at a time while it sits in cache:

forward
    the row's maximum (a vectorized reduction, :func:`~sk_entmax.entmax.kernels._fast_pow.
    max_no_nan`, which also finds a NaN); the candidates, the entries of the row shifted to
    a maximum of 0 and scaled by ``alpha - 1`` that lie above -1 (the threshold ``tau``
    does), kept with their indices in a scratch row without a branch (eight at a time by
    :func:`~sk_entmax.entmax.kernels._compress.compress8` where the host has AVX-512); a
    lower bound on ``tau`` raised by passes over the candidates that store nothing, so that
    they vectorize (any subset ``S`` bounds it: ``tau >= mean_S - |S|^(1 - alpha)``, by
    convexity, for sparsemax Michelot's iterate; 1.5-entmax also takes a Newton step from
    below); then ``tau`` from the candidates above that bound, in float64: sparsemax by
    Michelot's iteration (the closed form of the candidates, then those above it, until
    they repeat: exact); 1.5-entmax by Newton steps on the 2-norm of ``[y - tau]_+`` minus
    1, both convex and decreasing, so that they rise to the root without overshooting it,
    dropping the candidates they pass, until the closed form of the candidates left lies
    below all of them (then it is exact). Other alphas take Halley's steps (Newton's where
    Halley's do not apply) on ``sum [y - tau]_+^(1 / (alpha - 1)) - 1``, one pass of powers
    each (:func:`_tau_general`; two passes a row at 1024 x 1000, alpha 1.33), and their
    output is formed from the last pass's powers moved to the threshold by a Taylor
    correction (:func:`_output_from_pass`; libm's power for a float64 output), so that no
    pass of powers serves the output alone. Then the candidates above ``tau`` are written
    into the zeroed row, normalized where alpha is not 2. Every entry off the support is an
    exact 0. The powers of the other alphas are
    :func:`~sk_entmax.entmax.kernels._fast_pow.fast_pow`, whose loops vectorize. For those
    alphas the forward also saves each row's backward weights and the support's indices,
    packed (:func:`_save_support`);
backward
    ``g = p^(2 - alpha)`` and ``dx = g (dy - sum(g dy) / sum(g))``, sums in float64:
    sparsemax and 1.5-entmax over the row, ``g`` written into ``dx``, then the sums in a
    loop that stores nothing (so that their order, and their bits, do not depend on where
    the arrays lie), then ``dx``; other alphas from the weights the forward saved (``g`` up
    to a factor of the row, which the formula does not see: ``[y - tau]_+^q / (y - tau)``,
    a division where the power was), over the support alone, in its order: no power and
    no pass over the row but zeroing ``dx``.

Rows are spread over threads in fixed blocks of :data:`ROW_BLOCK` rows (``prange`` over the
blocks); no sum crosses a row, so the bits do not depend on the number of threads.

Every helper a row calls is inlined by numba (``inline="always"``) into the loops over a
block's rows (:func:`_forward_rows`, :func:`_backward_rows`), so that a row makes no calls
(each passed a dozen words per array; at 4096 x 32 they were a fifth of the forward's time
and a third of the backward's). The scalar powers of the bounds are libm's (``x ** e``):
:func:`~sk_entmax.entmax.kernels._fast_pow.fast_pow`'s long chain of dependent operations
vectorizes well but costs some 47 ns of latency alone, libm's 26 (measured). Loops of
powers run over the candidates padded to a multiple of :data:`_CHUNK` (:func:`_pad`), so
that none falls to the scalar remainder loop.

The same bits in every process: numba compiles each function into a library of its own and
links a callee's optimized code into each caller's library as a weak (``linkonce_odr``)
copy, which LLVM optimizes again with the caller. With ``reassoc`` the copies of
:func:`_forward_rows` and :func:`_backward_rows` inside a loop sum some rows in another
order than those functions compiled alone (their machine code differs: read off the objects
in numba's disk cache), and run faster (float32 forwards at 1024 x 1000 and 64 x 20000 a
tenth). Each symbol runs its first definition in the process: a process that compiles a
loop compiles its callees first, so that their own code serves it; one that reads the loop
from the disk cache never loads them, and the copies inside the loop serve (each callee's
copy lies in one loop alone: its signature names the loop's index type, ``intp`` or
numba's parallel ``uintp``, and the dtype). ``cpu`` therefore compiles a loop missing from
the cache in a process of its own, then reads it from the cache, so that every process runs
the copies.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import overload

from sk_entmax.entmax.kernels._compress import AVAILABLE as COMPRESS
from sk_entmax.entmax.kernels._compress import WIDTH, WIDTH16, compact8, compress8, compress16
from sk_entmax.entmax.kernels._fast_pow import fast_pow, max_no_nan

#: rows per block of the parallel loop
ROW_BLOCK = 16

#: Newton steps at most for alpha other than 1.5 and 2 (they rise monotonically to the root)
MAX_NEWTON = 100

#: the level (of the row shifted to a maximum of 0 and scaled by alpha - 1) whose entries
#: above give :func:`_prebound`'s subset bound (of -0.2 to -0.4 the best on randn rows of
#: 128 to 20000 entries, alpha 1.1 to 1.9, and on uniform ones within 15 %)
_PRE_LEVEL = -0.35

#: rows this wide or wider start from :func:`_prebound` (alpha other than 1.5 and 2)
_PRE_FROM = 256

#: a count above the bound this small stops the passes over the row (the exact solve on so
#: few candidates costs less than a pass)
_SMALL_COUNT = 16

#: this many candidates or more first raise their bound (:func:`_raise`); fewer go
#: straight to the exact solve (measured faster at 4096 x 32)
_RAISE_FROM = 32

#: the entries per iteration of LLVM's vectorized power loops (two vectors of eight
#: float64 with AVX-512, read off the assembly): :func:`_pad` pads to a multiple of it
_CHUNK = 16

#: a Newton step this small (relative to 1 + |tau|) is the last one (alpha other than 1.5, 2)
_LAST_STEP = 1e-9

#: a Halley step this small (relative to 1 + |tau|) may be the last one, where the bound on
#: the error it leaves (about K h^3, :func:`_tau_general`) is at most :data:`_CUBIC`
_LAST_HALLEY = 1e-5
_CUBIC = 1e-17

#: how far below a subset's bound the candidates' bound is set (rows are shifted to a
#: maximum of 0 and tau lies in [-1, 0]): a margin for rounding, so that no entry of the
#: support is ever left out; the exact solve on the candidates decides the support
_MARGIN = 1e-9

# reassociation lets LLVM vectorize the row's sums (deterministic for a build; each row is
# summed the same way on any thread); no "nnan"/"ninf": -inf masks entries, NaN must spread
_FAST = {"nsz", "arcp", "contract", "reassoc"}

SPARSEMAX, ENTMAX15, GENERAL = 0, 1, 2


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
def _sum(y, k):
    """The sum of ``y[:k]``, in an order that depends on ``k`` alone."""
    s = 0.0
    for j in range(k):
        s += y[j]
    return s


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _pad(y, k, value):
    """``y[k:]`` up to the next multiple of :data:`_CHUNK` (within ``y``) set to ``value``;
    returns that length. A loop of powers over the padded length runs in vectors to its
    end: over ``k`` entries LLVM leaves up to 15 to a scalar loop, where each power costs
    several times its share of a vector."""
    kp = min((k + _CHUNK - 1) // _CHUNK * _CHUNK, y.shape[0])
    for j in range(k, kp):
        y[j] = value
    return kp


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _tau_sparsemax(y, idx, k):
    """Sparsemax's threshold of the ``k`` candidates (a superset of the support): Michelot's
    iteration, ``tau = (sum_S y - 1) / |S|`` then ``S = {y > tau}``, until ``S`` repeats;
    returns ``(tau, |S|)`` with ``S`` first in ``y``. Each sum is :func:`_sum`'s, so that the
    result depends on the support alone, not on the candidates it started from (a row
    padded with -inf gives the row's bits)."""
    tau = -1.0
    for _ in range(k + 1):
        tau = (_sum(y, k) - 1.0) / k
        kept = _compact(y, idx, k, tau)
        if kept == k or kept == 0:
            break
        k = kept
    return tau, k


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _tau_entmax15(y, idx, k, tau, first_keeps_all):
    """1.5-entmax's threshold of the ``k`` candidates of a halved row (a superset of the
    support), from ``tau`` below it: Newton steps on ``||[y - tau]_+||_2 - 1`` (convex and
    decreasing: they rise to the root without overshooting it), each dropping the
    candidates it passes, until the closed form of the candidates left,
    ``mean - sqrt((1 - ss) / r)``, lies below all of them: then it is the threshold, exactly
    (any entry dropped lies below the root). ``first_keeps_all``: every candidate lies
    above ``tau`` (the first pass then stores nothing, so that it vectorizes). Returns
    ``(tau, |S|)``."""
    for it in range(MAX_NEWTON):
        c1 = 0.0
        c2 = 0.0
        s1 = 0.0
        s2 = 0.0
        low = np.inf
        kept = 0
        if it == 0 and first_keeps_all:
            # every candidate lies above the first tau: a pass that stores nothing
            top = -np.inf
            for j in range(k):
                v = y[j]
                d = v - tau
                c1 += v
                c2 += v * v
                s1 += d
                s2 += d * d
                top = max_no_nan(top, -v)
            kept = k
            low = -top
        else:
            for j in range(k):
                v = y[j]
                d = v - tau
                y[kept] = v
                idx[kept] = idx[j]
                keep = d > 0.0
                kept += keep
                w = 1.0 if keep else 0.0
                c1 += w * v
                c2 += w * v * v
                d = w * d
                s1 += d
                s2 += d * d
                low = min(low, v if keep else np.inf)
        k = kept
        if k == 0:
            break
        mean = c1 / k
        delta = (1.0 - (c2 - c1 * mean)) / k
        if delta >= 0.0:
            closed = mean - math.sqrt(delta)
            if closed < low:
                return closed, k
        norm = math.sqrt(s2)
        step = (norm - 1.0) * norm / s1
        if not step > 0.0:
            break
        tau += step
    return tau, k


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _compact(y, idx, k, tau):
    """Keep the candidates above ``tau`` (in place, in order, without a branch: eight at a
    time by :func:`~sk_entmax.entmax.kernels._compress.compact8` where the host has
    AVX-512, else every candidate written, the count moved only for those kept); returns
    their number."""
    kept = 0
    start = 0
    if COMPRESS:
        while start + WIDTH <= k:
            kept = compact8(y, idx, start, tau, kept)
            start += WIDTH
    for j in range(start, k):
        v = y[j]
        y[kept] = v
        idx[kept] = idx[j]
        kept += v > tau
    return kept


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _tau_general(y, idx, w, k, tau, a1):
    """alpha-entmax's threshold of the ``k`` candidates of a row scaled by ``alpha - 1``
    (a superset of the support), from ``tau`` below it, by steps on
    ``F(tau) = sum [y - tau]_+^q - 1``, ``q = 1 / (alpha - 1)`` (convex and decreasing).

    Each pass over the candidates is one vectorized loop of powers
    (:func:`~sk_entmax.entmax.kernels._fast_pow.fast_pow`): ``w = [y - tau]_+^(q - 2)``,
    kept in ``w``, gives ``F``, ``F'`` and ``F''`` by products. The step is Halley's,
    ``-F / F' / (1 - F F'' / (2 F'^2))`` (cubic convergence: from the raised bound, within
    some 3e-3 of the root, one step lands within about 1e-7 and the next pass is the
    last), or Newton's where ``F F'' / (2 F'^2)`` is not in ``[0, 1/2]``. Halley's step may
    pass the root; the candidates a pass leaves behind are dropped only where ``F >= 0``
    (the pass lies at or below the root), and a pass above the root (``F < 0``) takes
    Newton's step back, which by convexity lands at or below it (a kink Halley's step
    crossed, an entry leaving the support, can leave the pass above the root by 1e-9).
    Stops at a Newton step of at most :data:`_LAST_STEP` relative to ``1 + |tau|``, up or
    down (the error left is about its square), or at a Halley step of at most
    :data:`_LAST_HALLEY` whose error, about ``K h^3`` with ``K`` bounded through the
    smallest ``y - tau`` above 0, is at most :data:`_CUBIC`.

    Returns ``(tau, h, k)``: the last pass's ``tau``, the last step ``h`` (not added to
    ``tau``) and the number of candidates kept, with ``w[:k]``
    the last pass's powers (0 at or below ``tau``), from which the output is formed
    (:func:`_output_from_pass`); the threshold is ``tau + h``."""
    q = 1.0 / a1
    e = q - 2.0
    base = tau
    for _ in range(MAX_NEWTON):
        base = tau
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        count = 0.0  # (a float: an integer count beside the float sums ran at half speed)
        for j in range(_pad(y, k, -np.inf)):  # (the padding adds zeros)
            d = y[j] - tau
            dd = d if d > 1e-300 else 1e-300
            v = fast_pow(dd, e)
            v = v if d > 0.0 else 0.0
            w[j] = v
            t = v * dd
            s2 += v
            s1 += t
            s0 += t * dd
            count += 1.0 if d > 0.0 else 0.0
        if not s1 > 0.0:
            break
        f = s0 - 1.0
        newton = f / (q * s1)
        ratio = f * (q - 1.0) * s2 / (2.0 * q * s1 * s1)
        scale = 1.0 + abs(tau)
        step = newton
        tol = _LAST_STEP * scale
        if 0.0 <= ratio <= 0.5:
            step = newton / (1.0 - ratio)
            # Halley's error after a step h is about K h^3, K = (F'' / 2F')^2 + F''' / 6F',
            # F''' bounded through the smallest d above 0: (q - 1) |q - 2| s2 / d_min
            if step <= _LAST_HALLEY * scale:
                top = -np.inf  # (minus the smallest d above 0: a loop apart, no powers)
                for j in range(k):
                    d = y[j] - tau
                    top = max_no_nan(top, -d if d > 0.0 else -np.inf)
                b = (q - 1.0) * s2 / (2.0 * s1)
                cubic = b * b + (q - 1.0) * abs(q - 2.0) * s2 / (6.0 * s1 * -top)
                if cubic * step * step * step <= _CUBIC * scale:
                    tol = step
        if step != step:  # (NaN)
            break
        if step < -tol:  # above the root (Halley's step passed it): Newton's step back
            tau += step
            continue
        if abs(step) <= tol:
            # the error after this step is about its square (Newton) or cube (Halley):
            # rounding; the output is formed from this pass's powers, moved by the step
            # (down, where this pass lay above the root by less than the tolerance)
            tau += step
            break
        if count < k:  # candidates left behind (at or below the root): drop them
            k = _compact(y, idx, k, tau)
        tau += step
    return base, tau - base, k


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _output_from_pass(y, idx, w, k, tau, h, a1, p, g, ix):
    """The float32 output of alpha-entmax from :func:`_tau_general`'s last pass: at the
    threshold ``tau + h``, ``[y - tau - h]_+^q`` for ``d = y - tau`` is
    ``w (d^2 - q h d + q (q - 1) h^2 / 2)`` to third order in ``h / d`` (``w = d^(q - 2)``,
    the pass's powers): no power taken again. Entries with ``|h| / d`` above 1e-4 (a
    truncation above 1e-10 relative, for ``q`` up to 10) take libm's power of
    ``y - tau - h`` instead, in a loop that runs only for them (rare: ``h`` is below 1e-7).
    Normalized; entries at or below ``tau + h`` are exact zeros. Writes the backward's
    weights into ``g`` and ``ix`` (:func:`_save_support`)."""
    q = 1.0 / a1
    c2 = 0.5 * q * (q - 1.0)
    th = tau + h
    near = abs(h) * 1e4
    total = 0.0
    few = 0.0
    for j in range(k):
        v = y[j]
        d = v - tau
        keep = v - th > 0.0
        o = w[j] * (d * d - q * h * d + c2 * h * h)
        o = o if keep else 0.0
        w[j] = o
        total += o
        few += 1.0 if keep and d <= near else 0.0
    if few > 0.0:
        for j in range(k):
            d = y[j] - th
            if d > 0.0 and y[j] - tau <= near:
                o = d**q
                total += o - w[j]
                w[j] = o
    inv = 1.0 / total if total > 0.0 else 1.0
    for j in range(k):
        p[idx[j]] = w[j] * inv
    _save_support(y, idx, w, k, th, g, ix)


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _save_support(y, idx, w, k, tau, g, ix):
    """The backward's weights of alpha-entmax, saved by the forward: for the ``k``
    candidates, their indices into ``ix`` and ``g = w / (y - tau)`` into ``g`` (0 at or
    below the threshold ``tau``), ``w = [y - tau]_+^q`` unnormalized, so that ``g`` is
    ``p^(2 - alpha)`` up to a factor of the row (the backward's formula does not depend on
    it): a division, not a power, and no pass over the row in the backward. Nothing where
    ``g`` is empty (no gradient asked)."""
    if g.shape[0] == 0:
        return
    for j in range(k):
        d = y[j] - tau
        dd = d if d > 0.0 else 1.0
        g[j] = w[j] / dd if d > 0.0 else 0.0
        ix[j] = idx[j]


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


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _forward_row(z, p, alpha, mode, y, idx):
    """One row's output into ``p``, sparsemax or 1.5-entmax (a loop of their own: compiled
    beside alpha-entmax's longer row, their loop ran a fifth slower at 4096 x 32)."""
    m, done = _row_start(z, p)
    if done:
        return
    a1 = alpha - 1.0
    low = -1.0 - _MARGIN
    k = _gather(z, m, a1, low, y, idx)
    keeps_all = True  # (every candidate lies above low)
    if k >= _RAISE_FROM:
        low, k = _raise(y, idx, k, low, a1, mode)
        keeps_all = False
    if mode == SPARSEMAX:
        tau, k = _tau_sparsemax(y, idx, k)
        for j in range(k):
            d = y[j] - tau
            p[idx[j]] = d if d > 0.0 else 0.0
        return
    tau, k = _tau_entmax15(y, idx, k, low, keeps_all)
    total = 0.0
    for j in range(k):
        d = y[j] - tau
        q = d * d if d > 0.0 else 0.0
        y[j] = q
        total += q
    inv = 1.0 / total if total > 0.0 else 1.0
    for j in range(k):
        p[idx[j]] = y[j] * inv


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _forward_row_general(z, p, alpha, y, idx, w, g, ix, v, iv):
    """One row's output into ``p`` for alpha other than 1.5 and 2; returns the number of
    entries whose backward's weights it saved in ``g`` and ``ix`` (:func:`_save_support`)."""
    n = z.shape[0]
    m, done = _row_start(z, p)
    if done:
        return 0
    a1 = alpha - 1.0
    low = -1.0 - _MARGIN
    if n >= _PRE_FROM:
        low = _prebound(z, m, a1)
    if v.shape[0] > 0:
        k = _gather_wide(z, m, a1, low, y, idx, v, iv)
    else:
        k = _gather(z, m, a1, low, y, idx)
    if k >= _RAISE_FROM:
        low, k = _raise(y, idx, k, low, a1, GENERAL)
        k = _compact(y, idx, k, low)  # (the powers of the first pass only on those above low)
    tau, h, k = _tau_general(y, idx, w, k, low, a1)
    if p.itemsize != 8:  # float32 output: from the last pass's powers
        _output_from_pass(y, idx, w, k, tau, h, a1, p, g, ix)
        return k
    # float64 output: libm's power, correctly rounded or nearly
    tau += h
    power = 1.0 / a1
    total = 0.0
    for j in range(k):
        d = y[j] - tau
        q = d**power if d > 0.0 else 0.0
        w[j] = q
        total += q
    inv = 1.0 / total if total > 0.0 else 1.0
    for j in range(k):
        p[idx[j]] = w[j] * inv
    _save_support(y, idx, w, k, tau, g, ix)
    return k


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy")
def _forward_rows(Z, P, alphas, mode, b, y, idx, w, G, IX, K, v, iv):
    first = b * ROW_BLOCK
    last = min(Z.shape[0], first + ROW_BLOCK)
    if mode != GENERAL:
        for r in range(first, last):
            _forward_row(Z[r], P[r], alphas[r], mode, y, idx)
        return
    save = K.shape[0] > 0
    at = first * Z.shape[1]  # (the block's rows' weights packed from its first row's place)
    for r in range(first, last):
        k = _forward_row_general(Z[r], P[r], alphas[r], y, idx, w, G[at:], IX[at:], v, iv)
        if save:
            K[r, 0] = at
            K[r, 1] = k
            at += k


@numba.njit(cache=True, nogil=True)
def _forward_block(Z, P, alphas, mode, b, G, IX, K):
    """Block ``b`` of rows, with scratch rows of its own (allocated here, in a function the
    parallel loop calls, so that no thread ever shares them)."""
    y = np.empty(Z.shape[1], dtype=np.float64)
    idx = np.empty(Z.shape[1], dtype=np.int64)
    w = np.empty(Z.shape[1] if mode == GENERAL else 0, dtype=np.float64)
    v = np.empty(Z.shape[1] if mode == GENERAL else 0, dtype=np.float32)
    iv = np.empty(Z.shape[1] if mode == GENERAL else 0, dtype=np.int32)
    _forward_rows(Z, P, alphas, mode, b, y, idx, w, G, IX, K, v, iv)


@numba.njit(cache=True, nogil=True)
def forward_serial(Z, P, alphas, mode, G, IX, K):
    """``P`` (out) of the rows of ``Z``, ``alphas`` one per row (float64), one thread (one
    set of scratch rows for the call). For alpha other than 1.5 and 2 (``mode`` GENERAL),
    the backward's weights of each row (out, :func:`_save_support`), packed: row ``r``'s
    are the ``K[r, 1]`` entries from ``K[r, 0]`` on of ``G`` (``P``'s dtype) and ``IX``
    (int32), both flat, of ``Z``'s size (each block of rows packs its weights from its
    first row's place, so that a block's writes stay in a few pages whatever thread runs
    it). Where nothing is to be saved (another mode, or no gradient asked), ``G`` and
    ``IX`` are empty and ``K`` has no rows."""
    y = np.empty(Z.shape[1], dtype=np.float64)
    idx = np.empty(Z.shape[1], dtype=np.int64)
    w = np.empty(Z.shape[1] if mode == GENERAL else 0, dtype=np.float64)
    v = np.empty(Z.shape[1] if mode == GENERAL else 0, dtype=np.float32)
    iv = np.empty(Z.shape[1] if mode == GENERAL else 0, dtype=np.int32)
    for b in range((Z.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
        _forward_rows(Z, P, alphas, mode, b, y, idx, w, G, IX, K, v, iv)


@numba.njit(cache=True, parallel=True, nogil=True)
def forward_parallel(Z, P, alphas, mode, G, IX, K):
    """:func:`forward_serial`, its blocks of rows spread over numba's threads."""
    for b in numba.prange((Z.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
        _forward_block(Z, P, alphas, mode, b, G, IX, K)


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _backward_general(dy, dx, g, ix, k):
    """The backward of a row for alpha other than 1.5 and 2, from the weights its forward
    saved (:func:`_save_support`: ``k`` entries of ``g``, at the indices ``ix``): no pass
    over the row but zeroing ``dx``; the sums in the saved order (so that their bits depend
    on the support alone)."""
    sg = 0.0
    sgd = 0.0
    for j in range(k):
        v = np.float64(g[j])
        sg += v
        sgd += v * dy[ix[j]]
    mean = sgd / sg if sg > 0.0 else 0.0
    for i in range(dx.shape[0]):
        dx[i] = 0.0
    for j in range(k):
        i = ix[j]
        dx[i] = g[j] * (dy[i] - mean)


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy", inline="always")
def _backward_row(p, dy, dx, mode):
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
    else:
        # g into dx first, then the sums in a loop that stores nothing: a loop that stores
        # and sums at once is vectorized behind a check that dx lies apart from p and dy,
        # and small tensors allocated side by side fail it, so that the sums' order (their
        # bits) would depend on where the allocator put them
        for i in range(n):
            dx[i] = math.sqrt(np.float64(p[i]))
        for i in range(n):
            g = np.float64(dx[i])
            sg += g
            sgd += g * dy[i]
        mean = sgd / sg if sg > 0.0 else 0.0
        for i in range(n):
            dx[i] = dx[i] * (dy[i] - mean)


@numba.njit(cache=True, fastmath=_FAST, nogil=True, error_model="numpy")
def _backward_rows(P, DY, DX, mode, b, G, IX, K):
    for r in range(b * ROW_BLOCK, min(P.shape[0], (b + 1) * ROW_BLOCK)):
        if mode == GENERAL:
            at = K[r, 0]
            _backward_general(DY[r], DX[r], G[at:], IX[at:], K[r, 1])
        else:
            _backward_row(P[r], DY[r], DX[r], mode)


@numba.njit(cache=True, nogil=True)
def backward_serial(P, DY, DX, mode, G, IX, K):
    """``DX`` (out), the vector-Jacobian product of the rows of ``P`` with ``DY``; for alpha
    other than 1.5 and 2 from the weights :func:`forward_serial` saved in ``G``, ``IX``
    and ``K`` (``P`` then unused)."""
    for b in range((P.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
        _backward_rows(P, DY, DX, mode, b, G, IX, K)


@numba.njit(cache=True, parallel=True, nogil=True)
def backward_parallel(P, DY, DX, mode, G, IX, K):
    """:func:`backward_serial`, its blocks of rows spread over numba's threads (no scratch
    rows)."""
    for b in numba.prange((P.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
        _backward_rows(P, DY, DX, mode, b, G, IX, K)


def signature(loop, dtype: np.dtype) -> tuple[types.Type, ...]:
    """The argument types of ``loop`` (:func:`forward_serial`, :func:`forward_parallel`,
    :func:`backward_serial` or :func:`backward_parallel`) on rows of ``dtype`` (float32 or
    float64), as ``cpu`` calls it: those of its entry in numba's disk cache."""
    rows = types.Array(numba.from_dtype(np.dtype(dtype)), 2, "C")
    first = types.Array(types.float64, 1, "C")  # alphas
    if loop is backward_serial or loop is backward_parallel:
        first = rows  # DX
    # (Z, P, alphas, mode, G, IX, K) or (P, DY, DX, mode, G, IX, K)
    return (
        rows,
        rows,
        first,
        types.int64,
        types.Array(rows.dtype, 1, "C"),
        types.Array(types.int32, 1, "C"),
        types.Array(types.int64, 2, "C"),
    )
