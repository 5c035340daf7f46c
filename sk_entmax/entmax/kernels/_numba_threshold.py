"""The threshold of a row's candidates, exactly, for the fused CPU kernels (numba): the
candidates (the row's entries above a bound on ``tau``, shifted to a maximum of 0 and
scaled by ``alpha - 1``, with their indices) in, ``tau`` out.

Sparsemax by Michelot's iteration (:func:`_tau_sparsemax`), 1.5-entmax by Newton steps
from below on the 2-norm of ``[y - tau]_+`` (:func:`_tau_entmax15`), other alphas by
Halley's steps (:func:`_tau_general`), their output moved from the last pass's powers to
the threshold (:func:`_output_from_pass`) and their backward weights saved
(:func:`_save_support`). Every function is inlined into the loops of
:mod:`~sk_entmax.entmax.kernels._numba_maps` (whose docstring has the design).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from sk_entmax.entmax.kernels._compress import AVAILABLE as COMPRESS
from sk_entmax.entmax.kernels._compress import WIDTH, compact8
from sk_entmax.entmax.kernels._fast_pow import fast_pow, max_no_nan
from sk_entmax.entmax.kernels._numba_settings import (
    _CHUNK,
    _CUBIC,
    _FAST,
    _LAST_HALLEY,
    _LAST_STEP,
    MAX_NEWTON,
)


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
