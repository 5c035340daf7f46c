"""Triton kernels for the mappings on CUDA, an opt-in path behind the kernel seam.

Opt-in until measured. The kernels have run only under Triton's CPU interpreter, never
compiled on a GPU, so they are off by default: CUDA tensors take the traceable torch form,
the path whose CUDA tests were measured (on an H200). ``SK_ENTMAX_TRITON=1`` in the
environment, or :func:`set_enabled` with True, turns them on. The default changes per case
once ``benchmarks/cuda_checks.sh`` has shown, on a GPU, a kernel correct against the torch
form and no slower at every shape, and its figures are in the docs.

:func:`sk_entmax.entmax.algorithms.select` asks :func:`wrap` for the Triton path of a case
when the scores are on a CUDA device; :func:`wrap` answers None when the kernels are off or
Triton does not import, and the caller's own torch implementation serves. The core imports
without Triton: this module imports it on first use only.

The kernels (:mod:`sk_entmax.entmax.kernels._triton`) serve sparsemax, 1.5-entmax and
alpha-entmax for alpha in ``[1.1, 2]`` (a number, or a tensor with one alpha per row) with
at least :data:`~sk_entmax.entmax.algorithms.NEWTON_MIN_ITER` steps asked, in float32,
float16 and bfloat16, forward and backward, at any row length. Every other call goes to the
torch path, unchanged: softmax, alpha outside that range (the torch path's log1p bisection
near 1 and its exact polish above 2), float64, and a call being traced (``torch.compile``,
``torch.export``, ``torch.jit.trace``), whose graph cannot hold a Triton launch. The
supports are the torch path's (each threshold is found to the exact support, see
:mod:`~sk_entmax.entmax.kernels._triton`); only the rounding of sums differs.

Gradients. The backward pass is a kernel too; a second derivative (``create_graph=True``)
and the gradient in a tensor alpha are formed by torch ops from the saved output, as the
torch path forms them.

Attention. :func:`attention_forward` runs the forward pass of
:func:`~sk_entmax.entmax.entmax_attention` as one fused kernel (scores, thresholds and the
weighted sum, blockwise, no score ever stored), writing the thresholds the blocked path's
backward rebuilds the weights from.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

import torch
from torch.autograd import Function

from sk_entmax.entmax.algorithms import NEWTON_MIN_ITER, Case, case_for, newton_applies
from sk_entmax.entmax.common import (
    DEFAULT_N_ITER,
    Param,
    check_dim,
    entmax_vjp,
    param_to_last,
    with_support,
)
from sk_entmax.entmax.solvers import entmax_alpha_vjp, gppr
from sk_entmax.entmax.tracing import compiling

__all__ = [
    "AttentionPlan",
    "absent_reason",
    "asked_for",
    "attention_backward",
    "attention_forward",
    "available",
    "devices",
    "entmax_triton",
    "run",
    "set_enabled",
    "wrap",
]

SPARSEMAX, ENTMAX15, GENERAL = 0, 1, 2

#: the dtypes the kernels read and write (every sum in float32)
DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# a row up to this long is loaded once and searched in registers; a longer one is read in
# blocks of _LONG_BLOCK entries at each step of the search
_MAX_ONE_BLOCK = 8192
_LONG_BLOCK = 4096

_module: ModuleType | None = None
_reason: str | None = None


def asked_for() -> bool:
    """Whether the environment turns the kernels on (``SK_ENTMAX_TRITON=1``): off unless
    asked for, as they have never been measured on a GPU (module docstring)."""
    return os.environ.get("SK_ENTMAX_TRITON", "0") == "1"


_enabled = asked_for()
#: the device types the kernels serve while on (the tests add ``"cpu"``, Triton's interpreter)
_devices: tuple[str, ...] = ("cuda",)


def _load() -> ModuleType | None:
    """The kernels' module, imported on first use; None (and :func:`absent_reason`) when
    Triton does not import."""
    global _module, _reason
    if _module is None and _reason is None:
        try:
            _module = importlib.import_module("sk_entmax.entmax.kernels._triton")
        except ImportError as exc:  # triton absent, or built for another torch
            _reason = f"triton does not import ({exc})"
    return _module


def available() -> bool:
    """Whether Triton imports, so that CUDA tensors can take the kernels."""
    return _load() is not None


def absent_reason() -> str | None:
    """Why the kernels cannot run (Triton's import error), or None when they can."""
    _load()
    return _reason


def set_enabled(enabled: bool, *, devices: tuple[str, ...] | None = None) -> bool:
    """Turn the Triton path on or off; returns the previous setting.

    Off by default (never measured on a GPU); the environment variable
    ``SK_ENTMAX_TRITON=1`` turns it on from the start. ``devices``: the device types it
    serves while on (``("cuda",)`` at the start; None leaves them as they are); adding
    ``"cpu"`` runs the kernels on CPU tensors, under Triton's interpreter
    (``TRITON_INTERPRET=1``), as the tests do.
    """
    global _enabled, _devices
    previous, _enabled = _enabled, bool(enabled)
    if devices is not None:
        _devices = tuple(torch.device(device).type for device in devices)
    return previous


def devices() -> tuple[str, ...]:
    """The device types the kernels serve now: none while they are off, else CUDA's (or
    those :func:`set_enabled` named). :mod:`sk_entmax.entmax.algorithms` asks this before
    it offers them."""
    return _devices if _enabled else ()


def _config(
    n_cols: int, max_one_block: int = _MAX_ONE_BLOCK, long_block: int = _LONG_BLOCK
) -> tuple[int, bool, int]:
    """``(block, one_block, num_warps)`` for rows of ``n_cols`` entries: one block up to
    ``max_one_block`` entries, else blocks of ``long_block``."""
    if n_cols <= max_one_block:
        block = max(16, 1 << (n_cols - 1).bit_length())
        one_block = True
    else:
        block, one_block = long_block, False
    return block, one_block, max(1, min(16, block // 256))


class _TritonMapping(Function):
    """The kernels as an autograd function of 2-d rows (last axis contiguous) and of a
    tensor alpha, one per row (or None); saves only the output (and alpha)."""

    @staticmethod
    def forward(ctx, Z, alpha_rows, alpha, mode, blocks):
        module = _load()
        block, one_block, warps = _config(Z.shape[-1], *blocks)
        Y = torch.empty_like(Z)
        rows = None if alpha_rows is None else alpha_rows.detach().reshape(-1).float()
        module.forward(Z, Y, rows, alpha, mode, block, one_block, warps)
        ctx.save_for_backward(Y, alpha_rows)
        ctx.alpha, ctx.mode, ctx.blocks = alpha, mode, blocks
        # an output that reaches a loss without a gradient gets None, as in the torch path
        ctx.set_materialize_grads(False)
        return Y

    @staticmethod
    def backward(ctx, dY):

        if dY is None:
            return None, None, None, None, None
        Y, alpha_rows = ctx.saved_tensors
        alpha = ctx.alpha if alpha_rows is None else alpha_rows
        dX = d_alpha = None
        if ctx.needs_input_grad[0]:
            if torch.is_grad_enabled():  # a second derivative: differentiable torch ops
                Yf = Y.float()
                dX = entmax_vjp(dY.float(), gppr(Yf, alpha)).to(Y.dtype)
            else:
                module = _load()
                block, one_block, warps = _config(Y.shape[-1], *ctx.blocks)
                dX = torch.empty_like(Y)
                rows = None if alpha_rows is None else alpha_rows.reshape(-1).float()
                dY = dY if dY.stride(-1) == 1 else dY.contiguous()
                module.backward(Y, dY, dX, rows, ctx.alpha, ctx.mode, block, one_block, warps)
        if alpha_rows is not None and ctx.needs_input_grad[1]:
            Yf = Y.float()
            a = alpha_rows.float()
            d_alpha = entmax_alpha_vjp(dY.float(), Yf, gppr(Yf, a, case=Case.PER_ROW), a - 1)
            d_alpha = d_alpha.to(alpha_rows.dtype)
        return dX, d_alpha, None, None, None


def entmax_triton(
    X: torch.Tensor,
    alpha: Param,
    dim: int = -1,
    owner: str | None = "entmax_triton",
    *,
    case: Case | None = None,
    max_one_block: int = _MAX_ONE_BLOCK,
    long_block: int = _LONG_BLOCK,
) -> torch.Tensor:
    """alpha-entmax of ``X`` along ``dim`` by the Triton kernels, differentiable.

    Parameters
    ----------
    X : torch.Tensor
        Scores, float32, float16 or bfloat16, on a device Triton runs on (or on CPU under
        ``TRITON_INTERPRET=1``); ``-inf`` masks an entry.
    alpha : float or torch.Tensor
        2 (sparsemax), 1.5 (1.5-entmax), a number in ``[1.1, 2]``, or a tensor of such
        values broadcastable to ``X`` with size 1 along ``dim`` (one alpha per row).
    dim : int, default=-1
        The axis of the mapping.
    owner : str or None, default="entmax_triton"
        The public name an error about ``dim`` names.
    case : Case or None, default=None
        ``alpha``'s case (:func:`~sk_entmax.entmax.algorithms.case_for`) when the caller
        decided it, else None.
    max_one_block : int, default=8192
        Rows up to this long are loaded once and searched in registers.
    long_block : int, default=4096
        A longer row is read in blocks of this many entries at each step of the search (the
        tests shrink both to 16 to run several blocks on small rows).

    Returns
    -------
    P : torch.Tensor
        ``X``'s shape and dtype; its rows sum to 1 (0 on a fully masked row, NaN on a row
        holding a NaN).
    """
    dim = check_dim(X, dim, owner)
    mode, value = _mode(alpha, case_for(alpha) if case is None else case)
    if X.numel() == 0:
        return X.clone()
    Z = X if dim == X.dim() - 1 else X.movedim(dim, -1)
    shape = Z.shape
    Z = Z.reshape(-1, shape[-1])
    if Z.stride(-1) != 1:
        Z = Z.contiguous()
    rows = None
    if isinstance(alpha, torch.Tensor):
        a = param_to_last(alpha, X, dim, "alpha", owner)
        rows = a.expand(*shape[:-1], 1).reshape(-1, 1)
    P = _TritonMapping.apply(Z, rows, value, mode, (max_one_block, long_block)).reshape(shape)
    return P if dim == X.dim() - 1 else P.movedim(-1, dim)


def _mode(alpha: Param, case: Case) -> tuple[int, float]:
    """The kernels' ``(mode, alpha)`` for ``alpha`` of ``case``: sparsemax and 1.5-entmax
    their own modes, any other alpha the general one (a tensor alpha read per row)."""
    if case is Case.SPARSEMAX:
        return SPARSEMAX, 2.0
    if case is Case.ENTMAX15:
        return ENTMAX15, 1.5
    return GENERAL, 1.5 if case is Case.PER_ROW else float(alpha)


def _n_iter(n_iter: object) -> int | None:
    """``n_iter`` as the torch path reads it (None is 50), or None when it is invalid (the
    torch path then raises its error)."""
    if n_iter is None:
        return 50
    if isinstance(n_iter, int) and not isinstance(n_iter, bool) and n_iter >= 1:
        return n_iter
    return None


def _serves(X: torch.Tensor, alpha: Any, mapping: Case, n_iter: object) -> bool:
    """Whether the kernels take this call (the module docstring); else the torch path."""
    if not isinstance(X, torch.Tensor) or X.dtype not in DTYPES:
        return False
    if compiling() or torch.jit.is_tracing():
        return False
    if mapping in (Case.SPARSEMAX, Case.ENTMAX15):
        return True
    steps = _n_iter(n_iter)
    if steps is None:
        return False
    if mapping is Case.ROOT:
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
            return False
        return bool(newton_applies(alpha, steps))
    if mapping is Case.PER_ROW:
        if not alpha.is_floating_point() or steps < NEWTON_MIN_ITER:
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
    """``P`` of ``X`` by the kernels, or None when they do not take the call (module
    docstring: the kernels off, Triton absent, softmax, alpha out of range, float64,
    tracing, an empty ``X``): the caller's torch path then serves it. An invalid ``dim``
    raises the torch path's error, naming ``owner``. ``case``: ``alpha``'s, when the caller
    decided it (:func:`~sk_entmax.entmax.algorithms.case_for`), else None."""
    if not _enabled or _load() is None or not isinstance(X, torch.Tensor) or X.numel() == 0:
        return None
    case = case_for(alpha) if case is None else case
    if not _serves(X, alpha, case, n_iter):
        return None
    return entmax_triton(X, alpha, dim, owner, case=case)


Kernel = Callable[..., Any]


def wrap(mapping: Case, default: Kernel) -> Kernel | None:
    """The Triton path of ``mapping`` with the kernels' calling convention
    (:mod:`sk_entmax.entmax.algorithms`), ``default`` serving the calls it does not take;
    None when the kernels are off, Triton is absent or the case is softmax."""
    if not _enabled or mapping is Case.SOFTMAX or _load() is None:
        return None

    def kernel(X, alpha, *, dim, n_iter, training, return_support_size):
        P = run(X, alpha, dim, n_iter, case=mapping)
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


# queries and keys per block of the fused attention kernel, and its warps (the launches take
# them as arguments, which the tests shrink):
# compiled for an H100/H200 at d = 64 it holds 128 registers a thread, spilling 36 bytes
# (64 x 64 blocks spill 1.4 KB)
_ATTENTION_BLOCK_M = 64
_ATTENTION_BLOCK_N = 32
_ATTENTION_WARPS = 8


class AttentionPlan(NamedTuple):
    """How the fused kernels run one call of attention: ``(BH, L, E)`` views of the inputs,
    the mode, the alpha (a number, or one per (batch, head) row), the ``(BH, S)`` key bias."""

    batch: tuple[int, ...]
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    bias: torch.Tensor | None
    alpha_heads: torch.Tensor | None
    value: float
    mode: int
    causal: bool


def _attention_plan(q, k, v, alpha, masks, causal, case) -> AttentionPlan | None:
    """The :class:`AttentionPlan` of a call the fused kernels serve, else None (``case``:
    ``alpha``'s)."""
    if q.device.type not in devices() or _load() is None or q.dtype != torch.float32:
        return None
    if compiling() or torch.jit.is_tracing():
        return None
    *batch, L, _ = q.shape
    S = k.shape[-2]
    if L == 0 or S == 0 or any(mask.shape[-2] != 1 for mask, _ in masks):
        return None
    alpha_heads = None
    if case is Case.PER_ROW:
        if alpha.dim() >= 2 and alpha.shape[-2] != 1:
            return None
        if not bool(newton_applies(alpha, DEFAULT_N_ITER).all()):
            return None
        alpha_heads = alpha.detach().float().expand(*batch, 1, 1).reshape(-1).contiguous()
    elif case is Case.ROOT:
        if not isinstance(alpha, (int, float)) or not newton_applies(alpha, DEFAULT_N_ITER):
            return None
    elif case is Case.SOFTMAX:
        return None
    mode, value = _mode(alpha, case)
    BH = 1
    for size in batch:
        BH *= size
    q3, k3, v3 = (x.reshape(BH, x.shape[-2], x.shape[-1]) for x in (q, k, v))
    bias = None
    for mask, is_bool in masks:
        term = (
            torch.zeros(mask.shape, device=q.device).masked_fill_(~mask, float("-inf"))
            if is_bool
            else mask.float()
        )
        bias = term if bias is None else bias + term
    if bias is not None:
        bias = bias.expand(*batch, 1, S).reshape(BH, S).contiguous()
    return AttentionPlan(tuple(batch), q3, k3, v3, bias, alpha_heads, value, mode, causal)


def attention_forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    alpha: Param,
    masks: tuple[tuple[torch.Tensor, bool], ...],
    causal: bool,
    want_support: bool,
    case: Case | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, AttentionPlan] | None:
    """The forward pass of entmax attention by the fused kernel, or None where it does not
    serve (then the blocked torch path does).

    ``q`` (scaled), ``k``, ``v`` of shapes ``(*batch, L, E)``, ``(*batch, S, E)``,
    ``(*batch, S, Ev)`` as :func:`sk_entmax.entmax.attention._prepare` leaves them (float32;
    float64 is not served), ``alpha`` a number or a tensor broadcastable to
    ``(*batch, L, 1)`` with one value per (batch, head) row of queries (all in
    ``[1.1, 2]``), ``masks`` its ``(mask, is_bool)`` pairs, which must hold one row for all
    queries (a key padding mask; a mask per query is not served), ``causal`` the top-left
    causal mask. Returns ``(out, t, support, plan)``: the output, each query row's threshold
    in the convention of :func:`~sk_entmax.entmax._attention_blocks._threshold`
    (``(*batch, L, 1)``, ``+inf`` for a fully masked row), its support size (or None), as the
    blocked path computes them, and the plan :func:`attention_backward` takes. ``case``:
    ``alpha``'s (:func:`~sk_entmax.entmax.algorithms.case_for`), decided by the caller
    (None: decided here).
    """
    plan = _attention_plan(
        q, k, v, alpha, masks, causal, case_for(alpha) if case is None else case
    )
    if plan is None:
        return None
    out, t, support = _load().attention_forward(
        plan.q, plan.k, plan.v, plan.bias, plan.alpha_heads, plan.value, plan.mode, causal,
        want_support, block_m=_ATTENTION_BLOCK_M, block_n=_ATTENTION_BLOCK_N,
        num_warps=_ATTENTION_WARPS,
    )  # fmt: skip
    L = q.shape[-2]
    out = out.reshape(*plan.batch, L, v.shape[-1])
    t = t.reshape(*plan.batch, L, 1)
    support = support.reshape(*plan.batch, L, 1) if support is not None else None
    return out, t, support, plan


def attention_backward(
    plan: AttentionPlan, t: torch.Tensor, d_out: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients ``(dq, dk, dv)`` of the fused forward of ``plan`` (shaped as its
    ``(*batch, ...)`` inputs) by two kernels: per block of queries, the row terms
    ``sum_j g dP / sum_j g`` and ``dq``; per block of keys, ``dk`` and ``dv``; each block's
    weights rebuilt from the thresholds ``t``, as the blocked path rebuilds them (no alpha
    gradient: a learned alpha takes the blocked path's backward)."""
    BH, L, D = plan.q.shape
    S, DV = plan.k.shape[1], plan.v.shape[-1]
    dq, dk, dv = _load().attention_backward(
        plan.q, plan.k, plan.v, plan.bias, plan.alpha_heads, plan.value, plan.mode,
        plan.causal, t, d_out.reshape(BH, L, DV), block_m=_ATTENTION_BLOCK_M,
        block_n=_ATTENTION_BLOCK_N, num_warps=_ATTENTION_WARPS,
    )  # fmt: skip
    return (
        dq.reshape(*plan.batch, L, D),
        dk.reshape(*plan.batch, S, D),
        dv.reshape(*plan.batch, S, DV),
    )
