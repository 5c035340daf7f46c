"""The traceable form of the exact maps: sparsemax and 1.5-entmax in plain torch ops.

Each exact map has three forms: the fused CPU kernel (:mod:`sk_entmax.entmax.kernels.cpu`),
the Triton kernel on CUDA (:mod:`sk_entmax.entmax.kernels`, opt-in), and this one, which
serves everything the kernels do not take: ``training=False`` (so ``predict_proba``), the
graphs of ``torch.compile``, ``torch.export``, ``torch.jit.trace`` and the ONNX graph that
:func:`sk_entmax.export.to_onnx` traces from these very functions, the devices without a
kernel (MPS, CUDA without Triton), and the calls the CPU kernel leaves (it turned off).

The threshold is found without sorting, by Newton steps that start below it and never
overshoot. Sparsemax: ``f(tau) = sum_i [z_i - tau]_+ - 1`` is convex, decreasing and
piecewise linear; the step ``tau += f(tau) / |S|``, ``S = {i : z_i > tau}``, is the
closed-form threshold of the current support (Michelot, 1986), and from a start below the
root the supports shrink until one repeats, which is then the true one. 1.5-entmax of the
halved rows: Newton on ``h(tau) = ||[z - tau]_+||_2 - 1``, convex and decreasing too, from
``tau = -1``; a row stops at its first step below ``4 eps``, or when a step below
``16 eps`` fails to halve the one before (only rounding noise does that). A row that has
stopped is frozen where it is, so the passes the rest of the batch still takes leave it
alone: a row stops where it would stop alone. The result is then computed once more from
the support found, in closed form, so that it depends on the support alone: a row padded
with ``-inf`` gives what the row gives, bit for bit. Rows still moving after
:data:`MAX_PASSES` passes (it takes crafted inputs) are solved again by the full sort
(:mod:`~sk_entmax.entmax.solvers._sorting`), so the cap bounds the time, never the accuracy.

Every sum is the pairwise tree of :func:`~sk_entmax.entmax.solvers._sums._tree_sum` and
every square root correctly rounded (:func:`~sk_entmax.entmax.solvers._sums.ieee_sqrt`; ONNX
Runtime's is too), so each operation is one IEEE operation in a fixed order. The same
function runs eagerly and traced, with three drivers of the passes that give the same bits:
eagerly a Python loop that stops once every row has stopped; traced by ``torch.compile``,
``torch.export`` or the ONNX exporter one ``torch.while_loop`` (an ONNX ``Loop``, traced
once: a small graph, a fast export) with the same stop. (``torch.jit.trace``, which would
write every pass out with the widths of its example as constants, takes the sort of every
row.) So ``predict_proba`` and the ONNX graph give the same bits, exact zeros included, on
rows whose entries lie on the support's boundary (``tests/test_onnx.py``).

Eagerly, rows at most :data:`~sk_entmax.entmax.solvers._narrow._NARROW_WIDTH` wide (the estimators'
classes) run in the column layout of :mod:`~sk_entmax.entmax.solvers._narrow`, where a row sum is a
sum of contiguous vectors: the same operations, so the same bits, faster on CPU.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from sk_entmax.entmax.common import row_stats
from sk_entmax.entmax.solvers._narrow import (
    _NARROW_WIDTH,
    _from_columns,
    _narrow,
    _shifted_columns,
)
from sk_entmax.entmax.solvers._sorting import _entmax15_sorted, _sparsemax_sorted, _threshold
from sk_entmax.entmax.solvers._sums import _tree_sum, ieee_sqrt
from sk_entmax.entmax.tracing import compiling, exporting

__all__ = ["MAX_PASSES", "entmax15_traceable", "exact_traceable", "sparsemax_traceable"]

#: Newton passes before the rows still moving are solved by the sort; typical rows stop
#: within 4 to 10
MAX_PASSES = 40

_State = tuple[torch.Tensor, ...]


def _traced() -> bool:
    """Whether a graph is being traced (dynamo: compile, export, ONNX; or ``jit.trace``)."""
    return compiling() or exporting() or torch.jit.is_tracing()


def _sums(dim: int, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The tree sums along ``dim`` of each tensor: traced, as one tree over the tensors
    stacked (half the graph's nodes), eagerly one after the other (the same additions)."""
    if _traced() and dim == -1:
        return tuple(_tree_sum(torch.stack(tensors), -1).unbind(0))
    return tuple(_tree_sum(T, dim) for T in tensors)


def _sqrt(T: torch.Tensor) -> torch.Tensor:
    """The correctly rounded square root: numpy's eagerly on CPU, torch's in a graph."""
    return T.sqrt() if _traced() else ieee_sqrt(T)


def _passes(step: Callable[..., _State], state: _State) -> _State:
    """``state`` after at most :data:`MAX_PASSES` calls of ``step(*state)``, stopping once
    ``state[1]`` (the rows still moving, 1 or 0) is all 0: a frozen row's state no longer
    changes, so when the passes stop changes no bit."""
    if compiling() or exporting():

        def more(i: torch.Tensor, *state: torch.Tensor) -> torch.Tensor:
            return (i < MAX_PASSES) & (state[1].reshape(-1).amax(0) > 0)

        def once(i: torch.Tensor, *state: torch.Tensor) -> _State:
            return (i + 1, *step(*state))

        start = torch.zeros((), dtype=torch.int64, device=state[0].device)
        return tuple(torch.while_loop(more, once, (start, *state))[1:])
    for _ in range(MAX_PASSES):
        state = step(*state)
        if state[1].amax().item() == 0:
            break
    return state


def _scratch(Z: torch.Tensor) -> torch.Tensor | None:
    """Eagerly, one tensor that every pass writes its ``[z - tau]_+`` into (on CPU a fresh
    tensor costs more than two passes over a reused one: its pages are zeroed on first
    touch); traced, None, for a fresh tensor each pass (``out=None``)."""
    return None if _traced() else torch.empty_like(Z)


def _in_place(scratch: torch.Tensor | None) -> Callable[[torch.Tensor], torch.Tensor | None]:
    """Where a pass writes its new state (``out=``): eagerly over the old one, traced (no
    scratch) into fresh tensors, as a loop's body must. Every other operation of a pass
    works in place on tensors the pass made itself, which a traced loop allows too."""
    return (lambda T: None) if scratch is None else (lambda T: T)


def _solve(
    Z: torch.Tensor,
    halve: bool,
    support_of: Callable[[torch.Tensor, int], tuple[torch.Tensor, torch.Tensor]],
    closed: Callable[[torch.Tensor, torch.Tensor, int, bool], torch.Tensor],
    by_sort: Callable[[torch.Tensor], torch.Tensor],
    narrow_width: int,
) -> torch.Tensor:
    """The driver both maps share: the rows of ``Z`` (last axis) shifted to maximum 0
    (halved for 1.5-entmax), the support by ``support_of`` (outside autograd: only the
    closed form is differentiated), the result by ``closed``, the rows still moving by
    ``by_sort``; eagerly, rows at most ``narrow_width`` wide in the column layout."""
    records = Z.requires_grad and torch.is_grad_enabled()
    if not _traced():
        if Z.numel() == 0:
            return Z.clone()
        if _narrow(Z, narrow_width) and not records:
            ZT = _shifted_columns(Z)
            if halve:
                ZT = ZT.div_(2)
            support, active = support_of(ZT, 0)
            P = closed(ZT, support, 0, True)
            return _from_columns(P, active == 0, ZT, Z.shape, by_sort)
    max_val, _ = row_stats(Z)
    Z = Z - max_val
    if halve:
        Z = Z / 2
    if torch.jit.is_tracing():
        # jit.trace writes shapes out as constants: the sort, whose graph serves any width
        return by_sort(Z)
    if _traced():
        support, active = support_of(Z.detach(), -1)
        return torch.where(active > 0, by_sort(Z), closed(Z, support, -1, False))
    with torch.no_grad():
        support, active = support_of(Z.detach(), -1)
    P = closed(Z, support, -1, not records)
    rows = active.squeeze(-1) > 0
    if bool(rows.any()):
        P = P.index_put((rows,), by_sort(Z[rows]))
    return P


def _by_sort(
    solve: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]], square: bool
) -> Callable[[torch.Tensor], torch.Tensor]:
    """The map of rows (maximum 0, halved for 1.5-entmax) by the full sort, with ``solve``
    the threshold of sorted rows (:mod:`~sk_entmax.entmax.solvers._sorting`): the rows still
    moving."""

    def by_sort(Z: torch.Tensor) -> torch.Tensor:
        P = (Z - _threshold(Z, None, solve)).clamp_min(0)
        return P.square() if square else P

    return by_sort


def sparsemax_traceable(Z: torch.Tensor, narrow_width: int = _NARROW_WIDTH) -> torch.Tensor:
    """Sparsemax along the last axis of ``Z`` (the module docstring): plain torch ops that
    run eagerly and trace, differentiable by autograd; eagerly, rows at most
    ``narrow_width`` wide take the column layout."""

    def support_of(Z: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The Newton passes of sparsemax over rows of ``Z`` (maximum 0) along ``dim``: the
        support's indicator (1 or 0) at the threshold found, and the rows still moving."""
        scratch = _scratch(Z)
        kept = _in_place(scratch)
        tau = ((_tree_sum(Z, dim) - 1) / Z.shape[dim]).clamp(min=-1)

        def step(tau: torch.Tensor, active: torch.Tensor, size: torch.Tensor) -> _State:
            D = torch.sub(Z, tau, out=scratch).relu_()
            mass = _tree_sum(D, dim)
            # a count, exact in any order; the top entry (0 > tau) is always in the support:
            # 0 only in a fully masked row
            new_size = D.sign_().sum(dim, keepdim=True).clamp_(min=1)
            # a row whose support kept its size has its support: it stops where it is
            moved = torch.ne(new_size, size).to(Z.dtype)
            active = torch.mul(active, moved, out=kept(active))
            tau = torch.add(tau, mass.sub_(1).div_(new_size).mul_(active), out=kept(tau))
            return tau, active, new_size

        # size 0 at the start: no support has it, so every row takes the first step
        tau, active, _ = _passes(step, (tau, torch.ones_like(tau), torch.zeros_like(tau)))
        return torch.sub(Z, tau, out=scratch).relu_().sign_(), active

    def closed(Z: torch.Tensor, support: torch.Tensor, dim: int, reuse: bool) -> torch.Tensor:
        """Sparsemax of rows ``Z`` (maximum 0) from their support:
        ``tau = (sum_S z - 1) / |S|``, differentiable in ``Z``; ``reuse``: in place, in the
        memory of the support's entries (eagerly, with no gradient recorded), else out of
        place. The same operations."""
        size = support.sum(dim, keepdim=True).clamp(min=1)
        masked = torch.where(support > 0, Z, 0.0)
        tau = (_tree_sum(masked, dim) - 1) / size
        if reuse:
            return torch.sub(Z, tau, out=masked).relu_()
        return (Z - tau).relu()

    return _solve(Z, False, support_of, closed, _by_sort(_sparsemax_sorted, False), narrow_width)


def entmax15_traceable(Z: torch.Tensor, narrow_width: int = _NARROW_WIDTH) -> torch.Tensor:
    """1.5-entmax along the last axis of ``Z`` (the module docstring): plain torch ops that
    run eagerly and trace, differentiable by autograd; eagerly, rows at most
    ``narrow_width`` wide take the column layout."""

    def support_of(Zb: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The Newton passes of 1.5-entmax over halved rows ``Zb`` (maximum 0) along ``dim``:
        the support's indicator at the threshold found, and the rows still moving."""
        tol = torch.finfo(Zb.dtype).eps * 4.0  # eps (2 + 4 / m), m = 2
        tiny = torch.finfo(Zb.dtype).tiny
        scratch = _scratch(Zb)
        kept = _in_place(scratch)

        def step(tau: torch.Tensor, active: torch.Tensor, last: torch.Tensor) -> _State:
            D = torch.sub(Zb, tau, out=scratch).relu_()
            if scratch is None:  # traced: one tree over both (half the graph's nodes)
                g_sum, total = _sums(dim, D, D * D)
            else:  # the same additions
                g_sum = _tree_sum(D, dim)
                total = _tree_sum(D.square_(), dim)
            norm = _sqrt(total)
            # (N - 1) S / (N sum g); a fully masked row has a zero total and 0 rather than
            # 0 / 0 as its step
            step = (norm - 1).mul_(total).div_(norm.mul_(g_sum).clamp_(min=tiny))
            size = step.abs()
            # still moving: above tol, and above 4 tol or less than half the step before
            # (NaN, a NaN row, compares False: that row is done)
            moved = torch.maximum(last - 2 * size, size - 4 * tol)
            moved = ((size > tol) & (moved > 0)).to(Zb.dtype)
            active = torch.mul(active, moved, out=kept(active))
            return torch.add(tau, step.mul_(active), out=kept(tau)), active, size

        tau = torch.full_like(Zb.narrow(dim, 0, 1), -1.0)
        start = (tau, torch.ones_like(tau), torch.full_like(tau, float("inf")))
        tau, active, _ = _passes(step, start)
        return torch.sub(Zb, tau, out=scratch).relu_().square_().sign_(), active

    def closed(Zb: torch.Tensor, support: torch.Tensor, dim: int, reuse: bool) -> torch.Tensor:
        """1.5-entmax of halved rows ``Zb`` (maximum 0) from their support: with ``r``
        entries, ``sum_i (zb_i - tau)^2 = 1`` gives ``tau = mean - sqrt((1 - ss) / r)``, ``ss`` the
        support's sum of squared deviations; normalized, since ``tau``'s rounding moves every
        entry one way. ``reuse`` as in :func:`sparsemax_traceable`."""
        count = support.sum(dim, keepdim=True).clamp(min=1)
        masked = torch.where(support > 0, Zb, 0.0)
        if reuse:
            s1 = _tree_sum(masked, dim)
            s2 = _tree_sum(masked.square_(), dim)
        else:
            s1, s2 = _sums(dim, masked, masked * masked)
        mean = s1 / count
        tau = mean - _sqrt(((1 - (s2 - s1 * mean)) / count).clamp(min=0))
        if reuse:
            P = torch.sub(Zb, tau, out=masked).relu_().square_()
            total = _tree_sum(P, dim)
            return P.div_(torch.where(total > 0, total, 1.0))
        P = (Zb - tau).relu().square()
        (total,) = _sums(dim, P)
        return P / torch.where(total > 0, total, 1.0)

    return _solve(Z, True, support_of, closed, _by_sort(_entmax15_sorted, True), narrow_width)


def exact_traceable(Z: torch.Tensor, alpha: float) -> torch.Tensor:
    """Sparsemax (``alpha=2``) or 1.5-entmax (``alpha=1.5``) of the rows of ``Z``: the
    mapping of the estimators' ``predict_proba`` and of the ONNX graph written from it."""
    return sparsemax_traceable(Z) if alpha == 2 else entmax15_traceable(Z)
