"""Fenchel-Young losses of the entmax mappings (Blondel, Martins & Niculae, 2019).

For a mapping ``p*(x) = argmax_p <x, p> + H(p)`` over the simplex, the loss against a target
distribution ``q`` is

.. math::

    L(x; q) = H(p^*) - H(q) + \\langle p^* - q, x \\rangle \\ge 0,
    \\qquad \\nabla_x L = p^* - q .

An integer target ``y`` means the one-hot ``q = e_y`` (and ``H(e_y) = 0``), which gives the
sparse analogue of cross-entropy; a float target is any distribution, for instance the label
proportions ``y / |y|`` of a multi-label row, which gives the multi-label sparsemax loss of
Martins & Astudillo (2016). ``H`` is the Tsallis alpha-entropy for the entmax losses (Shannon
at alpha = 1, where the loss is cross-entropy) and ``-||p||_alpha`` for normmax.

The derivative in a tensor alpha is ``dH/dalpha (p*) - dH/dalpha (q)`` (the envelope theorem:
``p*`` is optimal, so its own dependence on alpha drops out). Second derivatives flow through
the mapping, so ``gradgradcheck`` holds.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.autograd import Function

from sk_entmax.entmax._axes import _check_floating, support_size
from sk_entmax.entmax._checks import Param, _check_alpha, _check_n_iter
from sk_entmax.entmax._modules import _FunctionModule
from sk_entmax.entmax._safe_ops import phi, safe_div, safe_log, safe_pow
from sk_entmax.entmax._tracing import compiling
from sk_entmax.entmax.activations import _check_k, _entmax15, _sparsemax
from sk_entmax.entmax.algorithms import Case, Kernel, apply_case, as_kernel, case_for
from sk_entmax.entmax.constraints import invalid
from sk_entmax.entmax.normmax import _check_normmax, _normmax_bisect
from sk_entmax.entmax.root_finding import _entmax_bisect

__all__ = [
    "Entmax15Loss",
    "EntmaxBisectLoss",
    "NormmaxBisectLoss",
    "SparsemaxBisectLoss",
    "SparsemaxLoss",
    "entmax15_loss",
    "entmax_bisect_loss",
    "normmax_bisect_loss",
    "sparsemax_bisect_loss",
    "sparsemax_loss",
]

REDUCTIONS = ("elementwise_mean", "mean", "sum", "none")
_TARGET_ATOL = 1e-3


# --------------------------------------------------------------------------- entropies


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
    def forward(ctx, X, P, Q, alpha, entropy):
        H, _ = _ENTROPIES[entropy]
        loss = H(P, alpha) - H(Q, alpha) + _inner(P - Q, X)
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
        return dX, None, None, d_alpha, None


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


def _fenchel_young_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    project: Callable[[torch.Tensor, Param], torch.Tensor],
    alpha: Param,
    entropy: str,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Shared driver: flatten leading axes, build the target, project, evaluate.

    With ``return_support_size`` also the number of nonzeros of each row's ``p*``, shaped
    like ``X`` with its last axis of size 1.
    """
    _check_floating(X)
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
        P = project(Xf, alpha)
        loss = FenchelYoungFunction.apply(Xf, P, Q, alpha, entropy).reshape(batch).to(dtype)
    if return_support_size:
        return loss, support_size(P, -1).reshape(*batch, 1)
    return loss


def _projection(
    defaults: dict[Case, Kernel], n_iter: int | None = None
) -> Callable[[torch.Tensor, Param], torch.Tensor]:
    """The ``project`` of :func:`_fenchel_young_loss`: ``P`` by the kernel registered for the
    case of the alpha on the scores' device, else by ``defaults`` (the loss's own
    implementations; :func:`~sk_entmax.entmax.algorithms.apply_case`)."""

    def project(Z: torch.Tensor, a: Param) -> torch.Tensor:
        return apply_case(defaults, Z, a, n_iter=n_iter)

    return project


def _exact(function: Callable[..., torch.Tensor], k: int | None, owner: str) -> Kernel:
    """``function`` (the checked-``k`` :func:`~sk_entmax.entmax.activations._sparsemax` or
    ``_entmax15``) with the kernels' calling convention."""
    return as_kernel(function, "dim", "training", "return_support_size", k=k, owner=owner)


def _root(owner: str, case: Case) -> Kernel:
    """Root finding (its ``alpha`` and ``n_iter`` checked) with the kernels' convention, as
    the implementation of ``case``."""
    return as_kernel(_entmax_bisect, *_ROOT_ARGUMENTS, ensure_sum_one=True, owner=owner, case=case)


_ROOT_ARGUMENTS = ("alpha", "dim", "n_iter", "training", "return_support_size")

#: entmax_bisect_loss's implementations: root finding for every alpha, as a kernel may
#: replace it for the alpha's case
_ROOT_EVERYWHERE = {case: _root("entmax_bisect_loss", case) for case in Case}


# --------------------------------------------------------------------------- functional


def sparsemax_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    k: int | None = None,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """sparsemax loss: the sparse analogue of cross-entropy (Martins & Astudillo, 2016).

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_classes)
        Scores; leading axes beyond one are flattened and restored. ``-inf`` masks a class;
        ``+inf`` or NaN gives a NaN loss in its row only (``+inf`` has no limit defined here,
        as in ``torch.softmax``).
    target : torch.Tensor
        Class indices of shape (n_samples,), ``0 <= target < n_classes``, or a distribution
        of shape (n_samples, n_classes) whose rows sum to 1 (e.g. multi-label ``y / |y|``).
    k : int or None, default=None
        Partial-sort size for the projection (see :func:`~sk_entmax.entmax.sparsemax`).
    return_support_size : bool, default=False
        Also return the support size of the mapping's output ``p*``: the number of nonzeros
        of each row, an int64 tensor of shape (n_samples, 1) (as in the ``entmax``
        package's unreleased master).

    Returns
    -------
    loss : torch.Tensor of shape (n_samples,)
        The loss of each sample, ``>= 0``.
    support_size : torch.Tensor of shape (n_samples, 1), optional
        Only with ``return_support_size=True``.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.entmax import sparsemax_loss
    >>> sparsemax_loss(torch.tensor([[10.0, 0.0, 0.0]]), torch.tensor([0]))
    tensor([0.])
    """
    k = _check_k(k, "sparsemax_loss")
    project = _projection({Case.SPARSEMAX: _exact(_sparsemax, k, "sparsemax_loss")})
    return _fenchel_young_loss(X, target, project, 2.0, "tsallis", return_support_size)


def sparsemax_bisect_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    n_iter: int | None = 50,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """sparsemax loss computed with the bisection mapping.

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_classes)
        Scores; ``-inf`` masks a class; ``+inf`` or NaN gives a NaN loss in its row only.
    target : torch.Tensor
        Class indices (n_samples,) or a distribution (n_samples, n_classes).
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    return_support_size : bool, default=False
        Also return the support size of the mapping's output ``p*``: the number of nonzeros
        of each row, an int64 tensor of shape (n_samples, 1) (as in the ``entmax``
        package's unreleased master).

    Returns
    -------
    loss : torch.Tensor of shape (n_samples,)
        The loss of each sample.
    support_size : torch.Tensor of shape (n_samples, 1), optional
        Only with ``return_support_size=True``.
    """
    n_iter = _check_n_iter(n_iter, "sparsemax_bisect_loss")
    project = _projection({Case.SPARSEMAX: _root("sparsemax_bisect_loss", Case.SPARSEMAX)}, n_iter)
    return _fenchel_young_loss(X, target, project, 2.0, "tsallis", return_support_size)


def entmax15_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    k: int | None = None,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """1.5-entmax loss (Peters et al., 2019).

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_classes)
        Scores; ``-inf`` masks a class; ``+inf`` or NaN gives a NaN loss in its row only.
    target : torch.Tensor
        Class indices (n_samples,) or a distribution (n_samples, n_classes).
    k : int or None, default=None
        Partial-sort size for the projection.
    return_support_size : bool, default=False
        Also return the support size of the mapping's output ``p*``: the number of nonzeros
        of each row, an int64 tensor of shape (n_samples, 1) (as in the ``entmax``
        package's unreleased master).

    Returns
    -------
    loss : torch.Tensor of shape (n_samples,)
        The loss of each sample.
    support_size : torch.Tensor of shape (n_samples, 1), optional
        Only with ``return_support_size=True``.
    """
    k = _check_k(k, "entmax15_loss")
    project = _projection({Case.ENTMAX15: _exact(_entmax15, k, "entmax15_loss")})
    return _fenchel_young_loss(X, target, project, 1.5, "tsallis", return_support_size)


def entmax_bisect_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    alpha: Param = 1.5,
    n_iter: int | None = 50,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """alpha-entmax loss; cross-entropy at alpha = 1. Differentiable in a tensor alpha.

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_classes)
        Scores; ``-inf`` masks a class; ``+inf`` or NaN gives a NaN loss in its row only.
    target : torch.Tensor
        Class indices (n_samples,) or a distribution (n_samples, n_classes).
    alpha : float or torch.Tensor, default=1.5
        A number, or a tensor with one value per row (shape (n_samples,) or
        (n_samples, 1)) or one shared value.
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    return_support_size : bool, default=False
        Also return the support size of the mapping's output ``p*``: the number of nonzeros
        of each row, an int64 tensor of shape (n_samples, 1) (as in the ``entmax``
        package's unreleased master).

    Returns
    -------
    loss : torch.Tensor of shape (n_samples,)
        The loss of each sample.
    support_size : torch.Tensor of shape (n_samples, 1), optional
        Only with ``return_support_size=True``.
    """
    _check_alpha(alpha, "entmax_bisect_loss")
    n_iter = _check_n_iter(n_iter, "entmax_bisect_loss")
    project = _projection(_ROOT_EVERYWHERE, n_iter)
    return _fenchel_young_loss(X, target, project, alpha, "tsallis", return_support_size)


def normmax_bisect_loss(
    X: torch.Tensor,
    target: torch.Tensor,
    alpha: Param = 2,
    n_iter: int | None = 50,
    return_support_size: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """alpha-normmax loss. Differentiable in a tensor alpha.

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_classes)
        Scores; ``-inf`` masks a class; ``+inf`` or NaN gives a NaN loss in its row only.
    target : torch.Tensor
        Class indices (n_samples,) or a distribution (n_samples, n_classes).
    alpha : float or torch.Tensor, default=2
        The norm's order (> 1), a number or one value per row.
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    return_support_size : bool, default=False
        Also return the support size of the mapping's output ``p*``: the number of nonzeros
        of each row, an int64 tensor of shape (n_samples, 1) (as in the ``entmax``
        package's unreleased master).

    Returns
    -------
    loss : torch.Tensor of shape (n_samples,)
        The loss of each sample.
    support_size : torch.Tensor of shape (n_samples, 1), optional
        Only with ``return_support_size=True``.
    """
    alpha, n_iter = _check_normmax(alpha, n_iter, "normmax_bisect_loss")
    return _fenchel_young_loss(
        X,
        target,
        lambda Z, a: _normmax_bisect(Z, a, -1, n_iter, owner="normmax_bisect_loss"),
        alpha,
        "norm",
        return_support_size,
    )


# --------------------------------------------------------------------------- modules


class _FenchelYoungLoss(_FunctionModule):
    """Shared module logic: ``ignore_index``, ``reduction`` and the call of ``_function``.

    A subclass names its functional twin (``_function``) and the arguments of it that it
    holds (``_argument_names``), and passes their values on to ``__init__`` by keyword.
    """

    def __init__(
        self,
        ignore_index: int = -100,
        reduction: str = "elementwise_mean",
        return_support_size: bool = False,
        **arguments: object,
    ) -> None:
        if reduction not in REDUCTIONS:
            must = f"one of {', '.join(map(repr, REDUCTIONS))}"
            raise invalid("reduction", type(self).__name__, must, reduction)
        super().__init__(
            return_support_size, ignore_index=ignore_index, reduction=reduction, **arguments
        )

    def loss(
        self, X: torch.Tensor, target: torch.Tensor, return_support_size: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """The per-row losses (and support sizes) of the functional twin."""
        return self._call(X, target, **self._arguments(), return_support_size=return_support_size)

    def forward(
        self, X: torch.Tensor, target: torch.Tensor
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Loss of scores ``X`` against ``target``, reduced as configured.

        Integer targets equal to ``ignore_index`` contribute 0 and are left out of the
        mean; when every row is ignored the loss is exactly 0 with a zero gradient. With
        ``return_support_size`` the result is ``(loss, support_size)``, the second the
        number of nonzeros of each row's ``p*`` (shape (n_samples, 1), ignored rows
        included), whatever the reduction.
        """
        if isinstance(target, torch.Tensor) and not target.is_floating_point():
            ignored = target == self.ignore_index
            out = self.loss(X, torch.where(ignored, 0, target), self.return_support_size)
            loss, support = out if self.return_support_size else (out, None)
            loss = torch.where(ignored, 0.0, loss)
            count = (~ignored).sum()
        else:
            out = self.loss(X, target, self.return_support_size)
            loss, support = out if self.return_support_size else (out, None)
            count = torch.tensor(loss.numel(), device=loss.device)
        if self.reduction == "sum":
            loss = loss.sum()
        elif self.reduction != "none":
            loss = loss.sum() / count.clamp_min(1).to(loss.dtype)
        return (loss, support) if self.return_support_size else loss

    def extra_repr(self) -> str:
        return self._with_support(
            f"ignore_index={self.ignore_index}, reduction={self.reduction!r}"
        )


class SparsemaxLoss(_FenchelYoungLoss):
    """Module twin of :func:`sparsemax_loss`.

    Parameters
    ----------
    k : int or None, default=None
        Partial-sort size for the projection.
    ignore_index : int, default=-100
        Integer targets with this value are ignored (any value, negative included).
    reduction : {"elementwise_mean", "mean", "sum", "none"}, default="elementwise_mean"
        Mean over the rows not ignored, sum, or the per-row losses.
    return_support_size : bool, default=False
        Return ``(loss, support_size)``, the second of shape (n_samples, 1): the number of
        nonzeros of each row's ``p*``.
    """

    _function = staticmethod(sparsemax_loss)
    _argument_names = ("k",)

    def __init__(
        self,
        k: int | None = None,
        ignore_index: int = -100,
        reduction: str = "elementwise_mean",
        return_support_size: bool = False,
    ) -> None:
        super().__init__(ignore_index, reduction, return_support_size, k=k)


class SparsemaxBisectLoss(_FenchelYoungLoss):
    """Module twin of :func:`sparsemax_bisect_loss`.

    Parameters
    ----------
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    ignore_index : int, default=-100
        Integer targets with this value are ignored.
    reduction : {"elementwise_mean", "mean", "sum", "none"}, default="elementwise_mean"
        How to reduce the per-row losses.
    return_support_size : bool, default=False
        Return ``(loss, support_size)``, the second of shape (n_samples, 1): the number of
        nonzeros of each row's ``p*``.
    """

    _function = staticmethod(sparsemax_bisect_loss)
    _argument_names = ("n_iter",)

    def __init__(
        self,
        n_iter: int | None = 50,
        ignore_index: int = -100,
        reduction: str = "elementwise_mean",
        return_support_size: bool = False,
    ) -> None:
        super().__init__(ignore_index, reduction, return_support_size, n_iter=n_iter)


class Entmax15Loss(_FenchelYoungLoss):
    """Module twin of :func:`entmax15_loss`.

    Parameters
    ----------
    k : int or None, default=100
        Partial-sort size for the projection.
    ignore_index : int, default=-100
        Integer targets with this value are ignored.
    reduction : {"elementwise_mean", "mean", "sum", "none"}, default="elementwise_mean"
        How to reduce the per-row losses.
    return_support_size : bool, default=False
        Return ``(loss, support_size)``, the second of shape (n_samples, 1): the number of
        nonzeros of each row's ``p*``.
    """

    _function = staticmethod(entmax15_loss)
    _argument_names = ("k",)

    def __init__(
        self,
        k: int | None = 100,
        ignore_index: int = -100,
        reduction: str = "elementwise_mean",
        return_support_size: bool = False,
    ) -> None:
        super().__init__(ignore_index, reduction, return_support_size, k=k)


class EntmaxBisectLoss(_FenchelYoungLoss):
    """Module twin of :func:`entmax_bisect_loss`.

    Parameters
    ----------
    alpha : float or torch.Tensor, default=1.5
        A number or tensor; an ``nn.Parameter`` is registered and learned.
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    ignore_index : int, default=-100
        Integer targets with this value are ignored.
    reduction : {"elementwise_mean", "mean", "sum", "none"}, default="elementwise_mean"
        How to reduce the per-row losses.
    return_support_size : bool, default=False
        Return ``(loss, support_size)``, the second of shape (n_samples, 1): the number of
        nonzeros of each row's ``p*``.
    """

    _function = staticmethod(entmax_bisect_loss)
    _argument_names = ("alpha", "n_iter")

    def __init__(
        self,
        alpha: Param = 1.5,
        n_iter: int | None = 50,
        ignore_index: int = -100,
        reduction: str = "elementwise_mean",
        return_support_size: bool = False,
    ) -> None:
        super().__init__(ignore_index, reduction, return_support_size, alpha=alpha, n_iter=n_iter)


class NormmaxBisectLoss(_FenchelYoungLoss):
    """Module twin of :func:`normmax_bisect_loss`.

    Parameters
    ----------
    alpha : float or torch.Tensor, default=2
        The norm's order (> 1).
    n_iter : int or None, default=50
        Number of bisection steps; ``None`` means 50.
    ignore_index : int, default=-100
        Integer targets with this value are ignored.
    reduction : {"elementwise_mean", "mean", "sum", "none"}, default="elementwise_mean"
        How to reduce the per-row losses.
    return_support_size : bool, default=False
        Return ``(loss, support_size)``, the second of shape (n_samples, 1): the number of
        nonzeros of each row's ``p*``.
    """

    _function = staticmethod(normmax_bisect_loss)
    _argument_names = ("alpha", "n_iter")

    def __init__(
        self,
        alpha: Param = 2,
        n_iter: int | None = 50,
        ignore_index: int = -100,
        reduction: str = "elementwise_mean",
        return_support_size: bool = False,
    ) -> None:
        super().__init__(ignore_index, reduction, return_support_size, alpha=alpha, n_iter=n_iter)
