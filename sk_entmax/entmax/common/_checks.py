"""The checks of the arguments the mappings share: ``alpha`` and the root finders' ``n_iter``."""

from __future__ import annotations

import math

import torch

from sk_entmax.entmax.constraints import AnyOf, Integer, Options, Satisfies, check, invalid
from sk_entmax.entmax.tracing import owner_of

Param = float | torch.Tensor


# The number of bisection steps that ``n_iter=None`` stands for (the reference's default).
DEFAULT_N_ITER = 50


#: the ``n_iter`` of the root finders: a number of bisection steps, or None for the default
N_ITER = AnyOf(Options((None,)), Integer(1))


def check_n_iter(n_iter: int | None, owner: str | None = None) -> int:
    """``n_iter`` (a parameter of ``owner``) as a positive int; ``None`` means
    :data:`DEFAULT_N_ITER`."""
    n_iter = check("n_iter", n_iter, N_ITER, owner_of(owner))
    return DEFAULT_N_ITER if n_iter is None else n_iter


def _number(value: object) -> float | int:
    """``value`` itself if it is an int or a float (not a bool) other than NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(value)
    return value


#: the alpha of a mapping when it is not a tensor: any real number (below 1 and infinite
#: too, as in the reference package), a Python int or float
ALPHA_NUMBER = Satisfies("a real number or a tensor", _number)


def check_alpha(alpha: Param, owner: str | None = None) -> Param:
    """``alpha`` (a parameter of ``owner``) as given, if it is a floating point tensor or an
    :data:`ALPHA_NUMBER`."""
    if isinstance(alpha, torch.Tensor):
        if not alpha.is_floating_point():
            raise invalid(
                "alpha", owner_of(owner), "a floating point tensor or a number", alpha.dtype
            )
        return alpha
    return check("alpha", alpha, ALPHA_NUMBER, owner_of(owner))
