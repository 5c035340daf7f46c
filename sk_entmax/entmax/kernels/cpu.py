"""The fused CPU kernel behind the kernel seam: sparsemax, 1.5-entmax and alpha-entmax.

Why numba. The kernel must install from the package registry with no compiler on the user's
machine (so no C++ extension built on first use); numba compiles the row loops of
:mod:`sk_entmax.entmax.kernels._numba_maps` with LLVM on first use and keeps them in a disk
cache (``cache=True``: beside the module, or in ``NUMBA_CACHE_DIR``), so that only the first
process ever compiles. Measured side by side against the torch forms in
``doc/benchmarks/bench_core.md``.

What it serves. CPU tensors, float32 and float64 (float16 and bfloat16 through float32), for
sparsemax and 1.5-entmax (rows of any width), and alpha-entmax with alpha in ``[1.1, 2]``
(a number or one per row; rows of 96 entries or more, :data:`MIN_WIDTH`) when
at least :data:`~sk_entmax.entmax.algorithms.NEWTON_MIN_ITER` bisection steps are asked, in
the autograd path (``training=True``), forward and backward; the gradient in a tensor alpha
and a second derivative are formed by torch ops from the saved output. For alpha other than
1.5 and 2 the forward also keeps, while a gradient is asked, each row's backward weights and
support indices, packed in two arrays of the input's size of which only the support's
share is written (some 8 % at 1024 x 1000, alpha 1.33). Every
other call keeps the torch forms: softmax, alpha nearer 1 (the log1p bisection) or above 2,
fewer steps asked, ``ensure_sum_one=False``, a call being traced (``torch.compile``,
``torch.export``, ``torch.jit.trace``), and ``training=False``, the traceable plain-op form
whose graph :func:`sk_entmax.export.to_onnx` writes (so ``predict_proba`` and the ONNX
graph still agree bit for bit).

When numba does not import, or the kernel does not compile, the torch forms serve, and one
``RuntimeWarning`` says why. ``SK_ENTMAX_CPU_KERNEL=0`` in the environment, or
:func:`set_enabled` with False, turns the kernel off.

Threads: blocks of rows are spread over ``torch.get_num_threads()`` threads (numba's own pool,
at most ``NUMBA_NUM_THREADS``); no sum crosses a row, so the bits do not depend on the number
of threads. Nor on the process, nor on the state of numba's disk cache (cold, warm, or
written by another process): every process reads the loops from the cache, a loop missing
from it compiled first in a process of its own (:func:`_prepare`; why, ``_numba_maps``'
docstring).
"""

from __future__ import annotations

import importlib
import os
import threading
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch
from torch.autograd import Function

from sk_entmax.entmax.algorithms import (
    NEWTON_MIN_ITER,
    Case,
    case_for,
    newton_applies,
    offer_cpu,
)
from sk_entmax.entmax.common import Param, check_dim, entmax_vjp, param_to_last, with_support
from sk_entmax.entmax.solvers import entmax_alpha_vjp, gppr
from sk_entmax.entmax.tracing import compiling, exporting

__all__ = ["absent_reason", "available", "entmax_cpu", "run", "set_enabled", "wrap"]

SPARSEMAX, ENTMAX15, GENERAL = 0, 1, 2

#: the dtypes the kernel computes in (others go through float32)
_NATIVE = (torch.float32, torch.float64)
_WIDENED = (torch.float16, torch.bfloat16)
_DTYPES = _NATIVE + _WIDENED

#: the narrowest rows the kernel takes, per case (below, the torch forms): sparsemax and
#: 1.5-entmax at every width (the kernel took 0.36 to 0.88 of the traceable form's time at 8
#: to 64 entries); alpha-entmax from 96 (the torch form, batched over rows, is faster below:
#: the kernel took 1.74 times its time at 4096 x 32, 0.75 at 1024 x 128;
#: doc/benchmarks/bench_core.md, 2026-12-06)
MIN_WIDTH = {SPARSEMAX: 1, ENTMAX15: 1, GENERAL: 96}

_module: ModuleType | None = None
_reason: str | None = None
_enabled = os.environ.get("SK_ENTMAX_CPU_KERNEL", "1") != "0"


def _load() -> ModuleType | None:
    """The kernel's module, imported (and its loops compiled or read from the cache) on
    first use; None, with one warning naming the reason, when it cannot load."""
    global _module, _reason
    if _module is None and _reason is None:
        try:
            module = importlib.import_module("sk_entmax.entmax.kernels._numba_maps")
            _probe(module)
            _module = module
        except Exception as exc:  # numba absent, built for another numpy, LLVM failing ...
            _reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
            warnings.warn(
                f"sk_entmax: the fused CPU kernel (numba) cannot load ({_reason}); the "
                "traceable torch forms serve sparsemax and entmax on CPU instead, slower",
                RuntimeWarning,
                stacklevel=3,
            )
    return _module


def _probe(module: ModuleType) -> None:
    """Compile (or read from the disk cache) the float32 loops, so that a failure shows
    now, once, rather than in the middle of a training step. (The float64 loops load on
    their first call: reading each from the cache costs about 0.1 s, a share of the first
    call's 2 s.)"""
    import numpy as np

    Z = np.zeros((1, 2), dtype=np.float32)
    P, D = np.empty_like(Z), np.empty_like(Z)
    support = _support_arrays(P, GENERAL, True)
    _prepare(module, module.forward_serial, Z.dtype)
    module.forward_serial(Z, P, np.full(1, 1.5), GENERAL, *support)
    _prepare(module, module.backward_serial, Z.dtype)
    module.backward_serial(P, Z, D, GENERAL, *support)


#: the loops (and dtypes) :func:`_prepare` has seen to
_prepared: set[tuple[Any, Any]] = set()
_preparing = threading.Lock()

#: each loop's partner, compiled with it (a training call runs both)
_PARTNER = {
    "forward_serial": "backward_serial",
    "backward_serial": "forward_serial",
    "forward_parallel": "backward_parallel",
    "backward_parallel": "forward_parallel",
}

#: compiles loops of the kernel into numba's disk cache, in a process of its own (argv: the
#: kernels' folder, the dtype, the loops' names); the packages above the kernel's module are
#: left empty, so that neither torch nor the rest of sk_entmax is imported
_COMPILE_APART = """
import sys
import types

folder, dtype, *names = sys.argv[1:]
for name in ("sk_entmax", "sk_entmax.entmax", "sk_entmax.entmax.kernels"):
    package = types.ModuleType(name)
    package.__path__ = [folder] if name.endswith("kernels") else []
    sys.modules[name] = package
from sk_entmax.entmax.kernels import _numba_maps as maps

for name in names:
    loop = getattr(maps, name)
    loop.compile(maps.signature(loop, dtype))
"""


def _cached(module: ModuleType, loop: Any, dtype: Any) -> bool | None:
    """Whether numba's disk cache holds ``loop`` for rows of ``dtype``; None where it cannot
    be asked (no disk cache, or a numba that keeps its index otherwise): the loop then
    compiles in the process that calls it."""
    try:
        key = loop._cache._index_key(module.signature(loop, dtype), loop.targetctx.codegen())
        return key in loop._cache._cache_file._load_index()
    except Exception:  # (cache=False, a numba whose cache keeps its index otherwise)
        return None


def _prepare(module: ModuleType, loop: Any, dtype: Any) -> None:
    """Before ``loop``'s first call on rows of ``dtype`` (numpy's): where numba's disk cache
    lacks it, compile it (with its partner, :data:`_PARTNER`) in a process of its own
    (:data:`_COMPILE_APART`), so that this process too reads it from the cache. A process
    that compiles a loop runs its row functions' own code, one that reads it runs their
    copies inside the loop, which sum some float64 rows in another order (a last bit) and
    run faster (``_numba_maps``' docstring). Where that process fails, the loop compiles
    here on its first call, as before."""
    key = (loop, dtype)
    if key in _prepared:
        return
    with _preparing:
        if key in _prepared:
            return
        loops = [loop, getattr(module, _PARTNER[loop.__name__])]
        missing = [
            each.__name__
            for each in loops
            if module.signature(each, dtype) not in each.overloads
            and _cached(module, each, dtype) is False
        ]
        if missing:
            import subprocess
            import sys

            try:
                folder = os.path.dirname(module.__file__)
                command = [sys.executable, "-c", _COMPILE_APART, folder, str(dtype), *missing]
                subprocess.run(command, capture_output=True, check=False)
            except (OSError, TypeError):  # (no interpreter or file: the loop compiles here)
                pass
        _prepared.update((each, dtype) for each in loops)


def available() -> bool:
    """Whether the kernel loads (numba imports and its loops compile)."""
    return _load() is not None


def absent_reason() -> str | None:
    """Why the kernel cannot run, or None when it can."""
    _load()
    return _reason


def set_enabled(enabled: bool) -> bool:
    """Turn the kernel on or off (for comparisons); returns the previous setting."""
    global _enabled
    previous, _enabled = _enabled, bool(enabled)
    return previous


#: below this many entries a call runs on one thread whatever torch's thread count (the
#: parallel loop's start and join cost more than the rows' work)
MIN_PARALLEL = 32768


def _calls(
    module: ModuleType, threads: int, size: int
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The forward and backward loops for ``threads`` threads and ``size`` entries (numba's
    thread count is set per calling thread, so it is set on every call)."""
    if threads <= 1 or size < MIN_PARALLEL:
        return module.forward_serial, module.backward_serial
    import numba

    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    return module.forward_parallel, module.backward_parallel


def _loops(size: int) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """:func:`_calls` for a call of ``size`` entries; below :data:`MIN_PARALLEL` without
    asking torch's thread count (the serial loops whatever it is)."""
    if size < MIN_PARALLEL:
        return _module.forward_serial, _module.backward_serial
    return _calls(_module, torch.get_num_threads(), size)


#: the last array of one alpha per row that :func:`_alphas` made for a number: (alpha, rows,
#: array); the kernel only reads it, so that calls of the same shape share it
_last_alphas: tuple[float, int, Any] | None = None


def _alphas(alpha_rows: torch.Tensor | None, value: float, n_rows: int) -> Any:
    """One float64 alpha per row, as a numpy array."""
    global _last_alphas
    if alpha_rows is None:
        last = _last_alphas
        if last is not None and last[0] == value and last[1] == n_rows:
            return last[2]
        import numpy as np  # (numpy's full costs a fifth of torch's, a share of a small call)

        alphas = np.full(n_rows, value, dtype=np.float64)
        _last_alphas = (value, n_rows, alphas)
        return alphas
    return alpha_rows.detach().reshape(-1).to(torch.float64).contiguous().numpy()


def _support_arrays(Y: Any, mode: int, save: bool) -> tuple[Any, Any, Any]:
    """The arrays in which the forward saves, for alpha other than 1.5 and 2, each row's
    backward weights (``g`` on the support and its indices, packed, and where each row's
    lie: ``_numba_maps.forward_serial``), so that the backward takes no power and makes no
    pass over the row; empty where nothing is saved (another mode, or no gradient asked).
    Only the pages the packed weights reach are ever touched."""
    import numpy as np

    if mode != GENERAL or not save:
        return _empty(Y.dtype)
    return (
        np.empty(Y.size, dtype=Y.dtype),
        np.empty(Y.size, dtype=np.int32),
        np.empty((Y.shape[0], 2), dtype=np.int64),
    )


#: per dtype, the empty arrays of :func:`_support_arrays` (the kernel neither reads nor
#: writes them)
_EMPTY: dict[Any, tuple[Any, Any, Any]] = {}


def _empty(dtype: Any) -> tuple[Any, Any, Any]:
    arrays = _EMPTY.get(dtype)
    if arrays is None:
        import numpy as np

        arrays = _EMPTY[dtype] = (
            np.empty(0, dtype=dtype),
            np.empty(0, dtype=np.int32),
            np.empty((0, 2), dtype=np.int64),
        )
    return arrays


class _CpuMapping(Function):
    """The kernel as an autograd function of 2-d rows (contiguous, float32 or float64) and
    of a tensor alpha, one per row (or None); saves the output (and alpha) and, for alpha
    other than 1.5 and 2, the backward's weights of each row (:func:`_support_arrays`)."""

    @staticmethod
    def forward(ctx, Z, alpha_rows, alpha, mode):
        forward, _ = _loops(Z.numel())
        Y = torch.empty_like(Z)
        alphas = _alphas(alpha_rows, alpha, Z.shape[0])
        out = Y.numpy()
        _prepare(_module, forward, out.dtype)
        support = _support_arrays(out, mode, ctx.needs_input_grad[0])
        forward(Z.detach().numpy(), out, alphas, mode, *support)
        ctx.save_for_backward(Y, alpha_rows)
        ctx.alpha, ctx.mode, ctx.alphas, ctx.support = alpha, mode, alphas, support
        ctx.set_materialize_grads(False)
        return Y

    @staticmethod
    def backward(ctx, dY):
        if dY is None:
            return None, None, None, None
        Y, alpha_rows = ctx.saved_tensors
        alpha = ctx.alpha if alpha_rows is None else alpha_rows
        dX = d_alpha = None
        if ctx.needs_input_grad[0]:
            if torch.is_grad_enabled():  # a second derivative: differentiable torch ops
                dX = entmax_vjp(dY, gppr(Y, alpha))
            else:
                _, backward = _loops(Y.numel())
                if dY.dtype != Y.dtype:
                    dY = dY.to(Y.dtype)
                if not dY.is_contiguous():
                    dY = dY.contiguous()
                dX = torch.empty_like(Y)
                out = dX.numpy()
                _prepare(_module, backward, out.dtype)
                backward(Y.detach().numpy(), dY.detach().numpy(), out, ctx.mode, *ctx.support)
        if alpha_rows is not None and ctx.needs_input_grad[1]:
            a = alpha_rows.to(Y.dtype)
            rows_gppr = gppr(Y, a, case=Case.PER_ROW)
            d_alpha = entmax_alpha_vjp(dY, Y, rows_gppr, a - 1).to(alpha_rows.dtype)
        return dX, d_alpha, None, None


def entmax_cpu(
    X: torch.Tensor,
    alpha: Param,
    dim: int = -1,
    owner: str | None = "entmax_cpu",
    *,
    case: Case | None = None,
) -> torch.Tensor:
    """alpha-entmax of ``X`` along ``dim`` by the fused CPU kernel, differentiable.

    Parameters
    ----------
    X : torch.Tensor
        Scores on CPU, float32 or float64 (float16 and bfloat16 computed in float32);
        ``-inf`` masks an entry.
    alpha : float or torch.Tensor
        2 (sparsemax), 1.5 (1.5-entmax), a number in ``[1.1, 2]``, or a tensor of such
        values broadcastable to ``X`` with size 1 along ``dim`` (one alpha per row).
    dim : int, default=-1
        The axis of the mapping.
    owner : str or None, default="entmax_cpu"
        The public name an error about ``dim`` names.
    case : Case or None, default=None
        ``alpha``'s case (:func:`~sk_entmax.entmax.algorithms.case_for`) when the caller
        decided it, else None.

    Returns
    -------
    P : torch.Tensor
        ``X``'s shape and dtype; its rows sum to 1 (0 on a fully masked row, NaN on a row
        holding a NaN), with exact zeros off the support.
    """
    dim = check_dim(X, dim, owner)
    case = case_for(alpha) if case is None else case
    if case is Case.PER_ROW:
        mode, value = GENERAL, 1.5
    elif case is Case.SPARSEMAX:
        mode, value = SPARSEMAX, 2.0
    elif case is Case.ENTMAX15:
        mode, value = ENTMAX15, 1.5
    else:
        mode, value = GENERAL, float(alpha)
    if X.numel() == 0:
        return X.clone()
    dtype = X.dtype
    last = dim == X.dim() - 1
    Z = X if last else X.movedim(dim, -1)
    shape = Z.shape
    if Z.dim() != 2:
        Z = Z.reshape(-1, shape[-1])
    if dtype in _WIDENED:
        Z = Z.float()
    if not Z.is_contiguous():
        Z = Z.contiguous()
    rows = None
    if isinstance(alpha, torch.Tensor):
        a = param_to_last(alpha, X, dim, "alpha", owner)
        rows = a.expand(*shape[:-1], 1).reshape(-1, 1)
    P = _CpuMapping.apply(Z, rows, value, mode)
    if P.dtype != dtype:
        P = P.to(dtype)
    if P.dim() != len(shape):
        P = P.reshape(shape)
    return P if last else P.movedim(-1, dim)


def _serves(X: torch.Tensor, alpha: Any, n_iter: object, width: int, mapping: Case) -> bool:
    """Whether the kernel takes this call (the module docstring, :data:`MIN_WIDTH`; ``mapping``:
    ``alpha``'s case); else the torch forms."""
    if X.dtype not in _DTYPES or X.device.type != "cpu":
        return False
    if compiling() or exporting() or torch.jit.is_tracing():
        return False
    if n_iter is None:
        steps = 50
    elif isinstance(n_iter, int) and not isinstance(n_iter, bool) and n_iter >= 1:
        steps = n_iter
    else:
        return False  # the torch path raises its error
    if steps < NEWTON_MIN_ITER:  # the bisection asked for (entmax_bisect at alpha 2 too)
        return False
    if mapping is Case.SPARSEMAX:
        return width >= MIN_WIDTH[SPARSEMAX]
    if mapping is Case.ENTMAX15:
        return width >= MIN_WIDTH[ENTMAX15]
    if width < MIN_WIDTH[GENERAL]:
        return False
    if mapping is Case.ROOT:
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
            return False
        return bool(newton_applies(alpha, steps))
    if mapping is Case.PER_ROW:
        if not alpha.is_floating_point():
            return False
        if alpha.requires_grad and X.dtype != alpha.dtype:
            return False
        return bool(newton_applies(alpha, steps).all())
    return False


def run(
    X: torch.Tensor,
    alpha: Param,
    dim: int,
    n_iter: object = None,
    owner: str | None = None,
    case: Case | None = None,
) -> torch.Tensor | None:
    """``P`` of ``X`` by the kernel, or None when it does not take the call (module
    docstring): the caller's torch form then serves it. ``case``: ``alpha``'s, when the
    caller decided it (:func:`~sk_entmax.entmax.algorithms.case_for`), else None."""
    if not _enabled or not isinstance(X, torch.Tensor) or X.numel() == 0:
        return None
    if not isinstance(dim, int) or not -X.dim() <= dim < X.dim():
        return None  # the torch form raises its error
    case = case_for(alpha) if case is None else case
    if not _serves(X, alpha, n_iter, X.shape[dim], case) or _load() is None:
        return None
    return entmax_cpu(X, alpha, dim, owner, case=case)


Kernel = Callable[..., Any]


def wrap(mapping: Case, default: Kernel) -> Kernel | None:
    """The kernel's path for ``mapping`` with the kernels' calling convention
    (:mod:`sk_entmax.entmax.algorithms`), ``default`` serving the calls it does not take
    (``training=False`` among them); None for softmax or when the kernel is off."""
    if not _enabled or mapping is Case.SOFTMAX:
        return None

    def kernel(X, alpha, *, dim, n_iter, training, return_support_size):
        P = run(X, alpha, dim, n_iter, case=mapping) if training else None
        if P is None:
            return default(
                X,
                alpha,
                dim=dim,
                n_iter=n_iter,
                training=training,
                return_support_size=return_support_size,
            )
        return with_support(P, dim, return_support_size)

    return kernel


offer_cpu(run, wrap)
