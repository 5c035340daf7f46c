"""The Fenchel-Young loss itself: the entropies, the autograd function and the shared driver.

One job: evaluate ``H(p*) - H(q) + <p* - q, x>`` given a projection. Here are the Tsallis and
norm entropies with their alpha-derivatives (:func:`tsallis_entropy`, :func:`tsallis_terms`,
:func:`norm_entropy`), the autograd :class:`FenchelYoungFunction`, the validation of a target
into a distribution (:func:`_target_distribution`) and the driver that flattens, projects
and evaluates (:func:`_fenchel_young_loss`). The public losses and their modules, which choose
the projection, are in :mod:`sk_entmax.entmax.losses`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.autograd import Function

from sk_entmax.entmax.algorithms import Case, Kernel, apply_case, case_for
from sk_entmax.entmax.common import (
    Param,
    check_floating,
    phi,
    safe_div,
    safe_log,
    safe_pow,
    support_size,
)
from sk_entmax.entmax.tracing import compiling

_TARGET_ATOL = 1e-3


def tsallis_entropy(P: torch.Tensor, alpha: Param, *, case: Case | None = None) -> torch.Tensor:
    """Tsallis alpha-entropy of each row of ``P`` (Shannon at alpha = 1).

    Written as ``-(1/alpha) sum_i p_i log p_i (1 + b log p_i phi(b log p_i))`` with
    ``b = alpha - 1``, which equals ``(1 - sum p^alpha) / (alpha (alpha - 1))`` on the simplex
    and stays accurate as alpha approaches 1. ``case``: ``alpha``'s
    (:func:`~sk_entmax.entmax.algorithms.case_for`) when the caller decided it, else None.
    """
    mapping = case_for(alpha) if case is None else case
    if mapping is not Case.PER_ROW:
        if mapping is Case.SOFTMAX:
            return -(P * safe_log(P)).sum(-1)
        if mapping is Case.SPARSEMAX:
            return (P.sum(-1) - (P * P).sum(-1)) / 2
        if mapping is Case.ENTMAX15:
            # p^1.5 as p * sqrt(p), several times faster than pow on CPU; the 2**-120 keeps
            # sqrt off exact zeros (slow on CPU) and leaves p = 0 at 0
            return (P.sum(-1) - (P * (P + 2.0**-120).sqrt()).sum(-1)) / 0.75
        if abs(alpha - 1) >= 0.25:
            return (P.sum(-1) - safe_pow(P, alpha).sum(-1)) / (alpha * (alpha - 1))
        alpha = torch.tensor(alpha, dtype=P.dtype, device=P.device)
    alpha = alpha.squeeze(-1)
    log_p = safe_log(P)
    beta = (alpha - 1).unsqueeze(-1)
    s = (P * log_p * (1 + beta * log_p * phi(beta * log_p))).sum(-1)
    return -s / alpha


def tsallis_terms(P: torch.Tensor, alpha: float, *, case: Case | None = None) -> torch.Tensor:
    """``h(p) = (1 - p ** (alpha - 1)) / (alpha (alpha - 1))`` entrywise, for a number alpha
    other than 1, so that :func:`tsallis_entropy` is ``sum_j p_j h(p_j)``.

    Written without pow where a cheaper form is exact, and as ``-expm1((alpha - 1) log p)``
    otherwise, which stays accurate as alpha nears 1. Zero entries get a finite value (their
    product with ``p`` is 0). ``case`` as in :func:`tsallis_entropy`.
    """
    mapping = case_for(alpha) if case is None else case
    if mapping is Case.SPARSEMAX:
        return (1 - P) / 2
    floor = P.clamp_min(2.0**-120)  # keeps sqrt and log off exact zeros (slow on CPU)
    if mapping is Case.ENTMAX15:
        return (1 - floor.sqrt()) / 0.75
    if alpha == 1.25:
        return (1 - floor.sqrt().sqrt_()) / 0.3125
    beta = alpha - 1
    return torch.expm1(floor.log().mul_(beta)).div_(-alpha * beta)


def _tsallis_dalpha(P: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """d/dalpha of :func:`tsallis_entropy` at fixed ``P``; ``alpha`` has shape (n, 1).

    The second sum's terms ``p ** alpha log(p) ** 2 phi(z)``, ``z = -beta log p``, are
    ``(p - p ** alpha (1 + z)) / beta ** 2`` (as ``p ** alpha e ** z = p``), the form taken
    where ``z > 1``: at large alpha ``phi(z)`` overflows there while ``p ** alpha``
    underflows, and their product would be NaN.
    """
    log_p = safe_log(P)
    beta = alpha - 1
    s = (P * log_p * (1 + beta * log_p * phi(beta * log_p))).sum(-1, keepdim=True)
    z = -beta * log_p
    large = z > 1
    pa = safe_pow(P, alpha)
    near = pa * log_p * log_p * phi(torch.where(large, 0.0, z))
    far = (P - pa * (1 + z)) / torch.where(large, beta, 1.0) ** 2
    t = torch.where(large, far, near).sum(-1, keepdim=True)
    return s / alpha**2 - t / alpha


def norm_entropy(P: torch.Tensor, alpha: Param) -> torch.Tensor:
    """``-||p||_alpha`` of each row: the regulariser behind alpha-normmax."""
    if isinstance(alpha, torch.Tensor):
        alpha = alpha.squeeze(-1)
        return -(safe_pow(P, alpha.unsqueeze(-1)).sum(-1) ** (1 / alpha))
    return -(safe_pow(P, alpha).sum(-1) ** (1 / alpha))


def _norm_dalpha(P: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """d/dalpha of :func:`norm_entropy` at fixed ``P``; ``alpha`` has shape (n, 1)."""
    pa = safe_pow(P, alpha)
    total = pa.sum(-1, keepdim=True)
    norm = total ** (1 / alpha)
    weighted = safe_div((pa * safe_log(P)).sum(-1, keepdim=True), alpha * total)
    log_total = safe_log(total)
    return -norm * (weighted - log_total / alpha**2)


_ENTROPIES = {
    "tsallis": (tsallis_entropy, _tsallis_dalpha),
    "norm": (norm_entropy, _norm_dalpha),
}


def _inner(D: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """``<D, X>`` per row where ``0 * -inf`` counts as 0 (masked logits)."""
    return torch.where(D != 0, D * X, 0.0).sum(-1)


class FenchelYoungFunction(Function):
    """``H(P) - H(Q) + <P - Q, X>`` with gradient ``P - Q`` in ``X``.

    ``P`` is the mapping's output, computed outside with its own autograd graph; it gets no
    first-order gradient here (it is optimal), but the ``X`` gradient is built from it, so
    second derivatives flow through the mapping.
    """

    @staticmethod
    def forward(ctx, X, P, Q, alpha, entropy, case=None):
        H, _ = _ENTROPIES[entropy]
        cased = {} if case is None else {"case": case}  # (the Tsallis entropy's)
        loss = H(P, alpha, **cased) - H(Q, alpha, **cased) + _inner(P - Q, X)
        ctx.entropy = entropy
        if isinstance(alpha, torch.Tensor):
            ctx.save_for_backward(P, Q, alpha)
        else:
            ctx.save_for_backward(P, Q)
        return loss

    @staticmethod
    def backward(ctx, grad):
        P, Q, *alpha = ctx.saved_tensors
        grad = grad.unsqueeze(-1)
        dX = grad * (P - Q)
        d_alpha = None
        if ctx.needs_input_grad[3]:
            _, dH = _ENTROPIES[ctx.entropy]
            d_alpha = grad * (dH(P, alpha[0]) - dH(Q, alpha[0]))
        return dX, None, None, d_alpha, None, None


def _target_distribution(target: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """Validate ``target`` against scores ``X`` of shape (n, C); return (n, C) floats."""
    n, n_classes = X.shape
    if not isinstance(target, torch.Tensor):
        raise TypeError(f"target must be a torch.Tensor; got {type(target).__name__}")
    if target.is_floating_point():
        if target.shape != X.shape:
            raise ValueError(
                f"a distribution target must have the shape of X {tuple(X.shape)}, "
                f"got {tuple(target.shape)}"
            )
        Q = target.to(device=X.device, dtype=X.dtype)
        if n and not compiling():  # a traced graph cannot read the values back
            with torch.no_grad():
                bad = (Q < 0).any(-1) | ((Q.sum(-1) - 1).abs() > _TARGET_ATOL)
                if bad.any():
                    row = int(bad.nonzero()[0, 0])
                    raise ValueError(
                        "a distribution target needs non-negative rows that sum to 1; "
                        f"row {row} sums to {float(Q[row].sum()):.6g} "
                        f"with minimum {float(Q[row].min()):.6g}"
                    )
        return Q
    if target.dtype == torch.bool or target.is_complex():
        raise TypeError(f"target must hold class indices or a distribution; got {target.dtype}")
    if target.shape != X.shape[:-1]:
        raise ValueError(
            f"an index target must have shape {tuple(X.shape[:-1])} (X without its last "
            f"axis), got {tuple(target.shape)}"
        )
    if n and not compiling():  # a traced graph cannot read the values back
        lo, hi = int(target.min()), int(target.max())
        if lo < 0 or hi >= n_classes:
            bad = lo if lo < 0 else hi
            raise ValueError(
                f"target holds class index {bad}, outside [0, {n_classes}); "
                "use the loss module's ignore_index to skip rows"
            )
    Q = torch.zeros_like(X)
    return Q.scatter_(-1, target.to(device=X.device, dtype=torch.long).unsqueeze(-1), 1.0)


Projection = Callable[[torch.Tensor, Param, Case | None], torch.Tensor]


def projection(implementations: dict[Case, Kernel], n_iter: int | None = None) -> Projection:
    """The ``project`` of :func:`_fenchel_young_loss` for a Tsallis loss: ``P`` of the
    scores ``Z`` at ``alpha`` of ``case`` by the kernel registered for the case on the
    scores' device, else by ``implementations`` (the loss's own;
    :func:`~sk_entmax.entmax.algorithms.apply_case`)."""

    def project(Z: torch.Tensor, alpha: Param, case: Case | None) -> torch.Tensor:
        return apply_case(implementations, Z, alpha, n_iter=n_iter, case=case)

    return project


def _fenchel_young_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    project: Projection,
    alpha: Param,
    entropy: str,
    return_support_size: bool = False,
    *,
    case: Case | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Shared driver: flatten leading axes, build the target, project, evaluate.

    With ``return_support_size`` also the number of nonzeros of each row's ``p*``, shaped
    like ``X`` with its last axis of size 1. ``project(Z, alpha, case)`` gives ``p*``.
    ``case``: the case of a Tsallis loss's ``alpha`` when the loss fixes it (sparsemax,
    1.5-entmax), else None: then decided here, once, as the scores are projected, and
    handed to the projection and to the entropies (:func:`tsallis_entropy`). The norm
    entropy has no case (None throughout).
    """
    check_floating(X)
    if X.dim() < 1:
        raise ValueError("X must have a class axis (last), got a 0-d tensor")
    dtype = X.dtype
    Xf = X.float() if dtype in (torch.float16, torch.bfloat16) else X
    batch = Xf.shape[:-1]
    Xf = Xf.reshape(-1, Xf.shape[-1])
    if target.is_floating_point():
        target = target.reshape(-1, target.shape[-1]) if target.dim() else target
    else:
        target = target.reshape(-1)
    Q = _target_distribution(target, Xf)
    if isinstance(alpha, torch.Tensor):
        alpha = alpha.to(device=Xf.device, dtype=Xf.dtype)
        if alpha.dim() == len(batch) and alpha.shape == batch and alpha.dim():
            alpha = alpha.unsqueeze(-1)  # one alpha per row, given without the class axis
        try:
            alpha = alpha.expand(*batch, 1).reshape(-1, 1)
        except RuntimeError as exc:
            raise ValueError(
                f"alpha of shape {tuple(alpha.shape)} does not broadcast to one value per "
                f"row of X {tuple(X.shape)}"
            ) from exc
    if Xf.shape[0] == 0:
        loss = Xf.sum(-1).reshape(batch).to(dtype)
        P = Xf
    else:
        if case is None and entropy == "tsallis":
            case = case_for(alpha)
        P = project(Xf, alpha, case)
        loss = FenchelYoungFunction.apply(Xf, P, Q, alpha, entropy, case)
        loss = loss.reshape(batch).to(dtype)
    if return_support_size:
        return loss, support_size(P, -1).reshape(*batch, 1)
    return loss
