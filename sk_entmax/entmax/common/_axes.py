"""Axis and dtype handling of the mappings: every mapping is written once, along the last axis
of a float32/float64 tensor.

The wrappers here validate the input, move the requested axis to the end, upcast half
precision to float32, and undo both on the way out, all with ordinary differentiable ops, so
the custom autograd functions never see anything but the last axis; per-row parameters (alpha,
budget) are shaped the same way, and the support size is counted on the result.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from sk_entmax.entmax.common._checks import Param
from sk_entmax.entmax.constraints import invalid
from sk_entmax.entmax.tracing import owner_of

HALF = (torch.float16, torch.bfloat16)


def check_dim(X: torch.Tensor, dim: int, owner: str | None = None) -> int:
    """Return ``dim`` as a non-negative axis of ``X``, or raise a clear error."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise invalid("dim", owner_of(owner), "an int", dim)
    ndim = X.dim()
    if ndim == 0:
        raise ValueError("the input must have at least one dimension; got a 0-d tensor")
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"dim={dim} is out of range for a tensor with {ndim} dimension(s) "
            f"(expected {-ndim} <= dim < {ndim})"
        )
    return dim % ndim


def check_floating(X: torch.Tensor, name: str = "X") -> None:
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor; got {type(X).__name__}")
    if not X.is_floating_point():
        raise TypeError(
            f"{name} must be a floating point tensor (convert it first, e.g. {name}.float()); "
            f"got dtype {X.dtype}"
        )


def to_last(
    X: torch.Tensor, dim: int, owner: str | None = None
) -> tuple[torch.Tensor, int, torch.dtype]:
    """Validate ``X``, move ``dim`` to the last axis and upcast half precision.

    Returns the prepared tensor, the normalised axis and the dtype to return. ``owner`` is
    the public name that an error about ``dim`` names.
    """
    check_floating(X)
    dim = check_dim(X, dim, owner)
    dtype = X.dtype
    if dtype in HALF:
        X = X.float()
    if dim != X.dim() - 1:
        X = X.movedim(dim, -1)
    return X, dim, dtype


def from_last(Y: torch.Tensor, dim: int, dtype: torch.dtype) -> torch.Tensor:
    """Inverse of :func:`to_last`."""
    if dim != Y.dim() - 1:
        Y = Y.movedim(-1, dim)
    if Y.dtype != dtype:
        Y = Y.to(dtype)
    return Y


def param_to_last(
    value: float | torch.Tensor, X: torch.Tensor, dim: int, name: str, owner: str | None = None
) -> float | torch.Tensor:
    """Shape a per-row parameter (alpha, budget) like ``X`` with size 1 along ``dim``.

    A Python number stays a Python number. A tensor is broadcast to the shape of ``X``
    with ``dim`` set to 1, then moved to the last axis like ``X`` itself, so that its
    gradient flows back through ordinary ops.
    """
    if isinstance(value, torch.Tensor):
        if value.dim() > X.dim():
            raise ValueError(
                f"{name} has {value.dim()} dimensions but X has only {X.dim()}; "
                f"{name} must broadcast to X's shape with size 1 along dim"
            )
        target = list(X.shape)
        target[dim] = 1
        # converted before it is broadcast, so that one value stays one value (stride 0),
        # which the mappings recognise (a conversion after would copy it to every row)
        dtype = X.dtype if X.dtype not in HALF else torch.float32
        converted = value.to(device=X.device, dtype=dtype)
        try:
            value = converted.expand(*target)
        except RuntimeError as exc:
            raise ValueError(
                f"{name} of shape {tuple(value.shape)} cannot be broadcast to "
                f"{tuple(target)} (X's shape {tuple(X.shape)} with size 1 along dim={dim})"
            ) from exc
        if dim != X.dim() - 1:
            value = value.movedim(dim, -1)
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid(name, owner_of(owner), "a float or a torch.Tensor", value)
    return float(value)


def support_size(P: torch.Tensor, dim: int) -> torch.Tensor:
    """The number of nonzero entries of ``P`` along ``dim``, as an int64 axis of size 1.

    This is the ``support`` of ``return_support_size=True``: shaped like ``P`` with ``dim``
    of size 1, counted on the tensor returned (in its dtype), with no gradient.
    """
    return (P != 0).sum(dim=dim, keepdim=True)


def with_support(
    P: torch.Tensor, dim: int, return_support_size: bool
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """``P``, or ``(P, support_size(P, dim))`` when asked for."""
    if return_support_size:
        return P, support_size(P, dim)
    return P


def apply_last(
    fn: Callable[..., torch.Tensor],
    X: torch.Tensor,
    dim: int,
    *args,
    owner: str | None = None,
) -> torch.Tensor:
    """Run ``fn(X_last, *args)`` along ``dim`` with the half-precision policy (``owner`` as
    in :func:`to_last`)."""
    Z, dim, dtype = to_last(X, dim, owner)
    if Z.numel() == 0:
        return X.clone()
    return from_last(fn(Z, *args), dim, dtype)


def apply_param_last(
    fn: Callable[..., torch.Tensor],
    X: torch.Tensor,
    dim: int,
    value: Param,
    name: str,
    *args,
    owner: str | None = None,
) -> torch.Tensor:
    """Run ``fn(X_last, value_last, *args)`` along ``dim``, like :func:`apply_last`.

    ``value`` is a per-row parameter, shaped by :func:`param_to_last` (which names it
    ``name`` in its errors, of ``owner``); it is left alone when ``X`` is empty.
    """
    Z, dim, dtype = to_last(X, dim, owner)
    if Z.numel() == 0:
        return X.clone()
    value = param_to_last(value, X, dim, name, owner)
    return from_last(fn(Z, value, *args), dim, dtype)
