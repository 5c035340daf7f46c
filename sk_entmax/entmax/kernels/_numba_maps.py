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

The row functions the loops inline live beside them, one job a module: the settings
(``_numba_settings``), a row's start and the bounds on its threshold
(``_numba_candidates``), the exact threshold of the candidates (``_numba_threshold``), the
compress and power primitives (``_compress``, ``_fast_pow``). numba's disk cache knows a
loop by this file alone: after a change to one of those modules, clear the cache
(``__pycache__/_numba_maps.*``) or touch this file, or the loops cached before run.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import types

from sk_entmax.entmax.kernels._numba_candidates import (
    _gather,
    _gather_wide,
    _prebound,
    _raise,
    _row_start,
)
from sk_entmax.entmax.kernels._numba_settings import (
    _FAST,
    _MARGIN,
    _PRE_FROM,
    _RAISE_FROM,
    GENERAL,
    SPARSEMAX,
)
from sk_entmax.entmax.kernels._numba_threshold import (
    _compact,
    _output_from_pass,
    _save_support,
    _tau_entmax15,
    _tau_general,
    _tau_sparsemax,
)

#: rows per block of the parallel loop
ROW_BLOCK = 16


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
