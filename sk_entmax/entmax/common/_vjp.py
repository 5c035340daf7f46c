"""The backward passes' shared parts: the vector-Jacobian product of an entmax-type map, the
square root of its output, and the saving of alpha for the backward pass.
"""

from __future__ import annotations

import torch
from torch import nn

from sk_entmax.entmax.common._checks import Param
from sk_entmax.entmax.common._safe_ops import safe_div

# Entries below this are raised to it before a square root; sqrt(2 ** -120) = 2 ** -60.
_SQRT_FLOOR = 2.0**-120


def sqrt_support(Y: torch.Tensor) -> torch.Tensor:
    """``sqrt(Y)`` for ``Y >= 0``, with exact zeros where ``Y`` is 0 (or below ``2 ** -120``).

    On CPU ``sqrt`` of 0 costs several times ``sqrt`` of a positive number, and the output of
    a sparse mapping is mostly zeros; so ``Y`` is raised to ``2 ** -120`` first, and the
    entries left at ``2 ** -60`` are set back to 0: three cheap passes instead of one slow
    one. Entries below ``2 ** -120`` weigh nothing in a gradient (their ``sqrt`` is below
    ``1e-18``).
    """
    G = torch.clamp(Y, min=_SQRT_FLOOR).sqrt_()
    return nn.functional.threshold_(G, 1.001 * 2.0**-60, 0.0)


def entmax_vjp(dY: torch.Tensor, gppr: torch.Tensor) -> torch.Tensor:
    """Vector-Jacobian product of an entmax-type map along the last axis.

    With ``gppr = 1 / Omega''(p)`` on the support (0 elsewhere), the Jacobian is
    ``diag(g) - g g^T / sum(g)``. Rows with an empty support get a zero gradient.
    """
    gdY = gppr * dY
    q = safe_div(gdY.sum(-1, keepdim=True), gppr.sum(-1, keepdim=True))
    if torch.is_grad_enabled():  # building a second derivative: no in-place ops
        return gdY - q * gppr
    return gdY.addcmul_(q, gppr, value=-1)


def save_alpha(ctx, Y: torch.Tensor, alpha: Param) -> torch.Tensor:
    """Save an autograd function's output ``Y`` for its backward pass, with ``alpha``.

    A tensor alpha (which may need a gradient) is saved among the tensors, a number is
    kept on ``ctx``. Returns ``Y``.
    """
    if isinstance(alpha, torch.Tensor):
        ctx.save_for_backward(Y, alpha)
    else:
        ctx.save_for_backward(Y)
        ctx.alpha = alpha
    return Y


def saved_alpha(ctx) -> tuple[torch.Tensor, Param]:
    """The output and the alpha that :func:`save_alpha` saved."""
    saved = ctx.saved_tensors
    return saved[0], (saved[1] if len(saved) > 1 else ctx.alpha)
