"""Shared plumbing for the mappings: axis handling, half precision, masking, alpha shapes,
the checks of the root finders' arguments, and the safe ``log``/``pow``/``phi`` they share.

Every mapping in this package is written once, along the last axis of a float32/float64
tensor. The wrappers here move the requested axis to the end, upcast half precision to
float32, and undo both on the way out, all with ordinary differentiable ops, so the custom
autograd functions never see anything but the last axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
import torch
from torch import nn

from sk_entmax.entmax.constraints import AnyOf, Integer, Options, Satisfies, check, invalid

_HALF = (torch.float16, torch.bfloat16)

Param = float | torch.Tensor

# --------------------------------------------------------------------------- owners

# The public name a parameter error names: a public function passes its own name as the
# ``owner`` of its checks; a module twin (``EntmaxBisectLoss``) calls its function inside
# :func:`called_as`, so that the function's checks name the module the user built instead.
_CALLER: ContextVar[str | None] = ContextVar("sk_entmax_caller", default=None)


def compiling() -> bool:
    """Whether ``torch.compile`` or ``torch.export`` is tracing the caller.

    The eager solvers read tensors back to the host (``.item()``, ``bool(...)``) to stop
    early or to pick a branch; a traced graph cannot, so each such solver takes its
    data-independent twin (a fixed number of steps, a full sort) while this is True.
    """
    return torch.compiler.is_compiling()


def exporting() -> bool:
    """Whether ``torch.export`` (or the ONNX exporter) is tracing the caller: then the
    solvers take their plain forms (a full sort, a fixed number of bisection steps), whose
    graphs hold no ``torch.cond`` (its data-dependent output shapes hold an exported program
    to batches of two rows or more)."""
    return torch.compiler.is_exporting()


def owner_of(owner: str | None) -> str | None:
    """The name a parameter error names: the module being called, else ``owner``.

    While compiling it is ``owner``: ``torch.compile`` cannot read a ``ContextVar``.
    """
    if compiling():
        return owner
    return _CALLER.get() or owner


@contextmanager
def called_as(owner: str) -> Iterator[None]:
    """Name ``owner`` in the parameter errors of the core's functions called within."""
    if compiling():
        yield
        return
    token = _CALLER.set(owner)
    try:
        yield
    finally:
        _CALLER.reset(token)


def _check_dim(X: torch.Tensor, dim: int, owner: str | None = None) -> int:
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


def _check_floating(X: torch.Tensor, name: str = "X") -> None:
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
    _check_floating(X)
    dim = _check_dim(X, dim, owner)
    dtype = X.dtype
    if dtype in _HALF:
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
        dtype = X.dtype if X.dtype not in _HALF else torch.float32
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


def row_stats(Z: torch.Tensor, dim: int = -1) -> tuple[torch.Tensor, torch.Tensor]:
    """Row maximum made safe for fully masked rows, and the mask of such rows.

    A row whose entries are all ``-inf`` is a fully masked row: its maximum is replaced by
    0 so that ``Z - max`` stays ``-inf`` (never NaN); the caller maps it to all zeros.
    A row holding a NaN keeps a NaN maximum, so the NaN spreads within that row only.
    ``dim`` is the axis along which the rows run (0 for a column layout).
    """
    max_val = Z.amax(dim=dim, keepdim=True)
    empty = max_val == float("-inf")
    max_val = torch.where(empty, torch.zeros_like(max_val), max_val)
    return max_val, empty


# --------------------------------------------------------------------------- device branches

# The device type whose branch the helpers below take instead of the tensor's own: None in
# normal use; a test sets it (:func:`device_branch`) to run the CUDA branches on CPU tensors.
_FORCED_BRANCH: str | None = None


def cpu_branch(T: torch.Tensor) -> bool:
    """Whether the helpers take their CPU branch for ``T``: the one test of the device that
    the core's solvers make (on CPU they sum and test with the exact, padding-proof forms;
    elsewhere with :func:`row_sum`'s tree and no early stop).

    :func:`device_branch` overrides it, so that every other device's branch runs (and is
    tested, gradients too) on CPU tensors, without a GPU.
    """
    if _FORCED_BRANCH is None:
        return T.device.type == "cpu"
    return _FORCED_BRANCH == "cpu"


@contextmanager
def device_branch(device_type: str) -> Iterator[None]:
    """Within the block, :func:`cpu_branch` answers as for a tensor on ``device_type``
    (``"cuda"``: the GPU branches run on CPU tensors). Not thread-safe: for tests."""
    global _FORCED_BRANCH
    previous, _FORCED_BRANCH = _FORCED_BRANCH, torch.device(device_type).type
    try:
        yield
    finally:
        _FORCED_BRANCH = previous


# row_sum: the head of a row summed by a pairwise tree (as narrow rows are), the rest by
# torch's sums of fixed blocks of this many entries (as fast as a plain sum, nearly)
_SUM_HEAD = 256
_SUM_BLOCK = 256


def _records(T: torch.Tensor) -> bool:
    """Whether autograd records the ops on ``T`` (then no ``out=`` and no in-place op on a
    result that needs a gradient)."""
    return T.requires_grad and torch.is_grad_enabled()


def _tree_sum(T: torch.Tensor, dim: int) -> torch.Tensor:
    """The pairwise tree of :func:`row_sum`: entry ``i`` plus entry ``i + h``, ``h`` the
    largest power of two below the length, then the first ``h`` halved the same way.

    Without a graph the tree is built in one scratch tensor (``out=`` and in-place adds);
    while autograd records ``T`` (the plain-op path of a mapping called with an input that
    requires a gradient), by the same additions out of place, equal bit for bit.
    """
    n = T.shape[dim]
    if n <= 1:
        return T.sum(dim, keepdim=True)
    h = 1 << ((n - 1).bit_length() - 1)  # h < n <= 2 h
    if _records(T):
        acc = T.narrow(dim, 0, n - h) + T.narrow(dim, h, n - h)
        if n < 2 * h:
            acc = torch.cat((acc, T.narrow(dim, n - h, 2 * h - n)), dim)
        while h > 1:
            h //= 2
            acc = acc.narrow(dim, 0, h) + acc.narrow(dim, h, h)
        return acc
    shape = list(T.shape)
    shape[dim] = h
    acc = T.new_empty(shape)
    torch.add(T.narrow(dim, 0, n - h), T.narrow(dim, h, n - h), out=acc.narrow(dim, 0, n - h))
    if n < 2 * h:
        acc.narrow(dim, n - h, 2 * h - n).copy_(T.narrow(dim, n - h, 2 * h - n))
    while h > 1:
        h //= 2
        acc.narrow(dim, 0, h).add_(acc.narrow(dim, h, h))
    return acc.narrow(dim, 0, 1)


def row_sum(T: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Sums along ``dim`` (kept, of size 1) that ``-inf`` padding cannot change, bit for bit.

    A sparse mapping gives masked (``-inf``) entries exact zeros; with these sums a row
    padded with ``-inf`` (at its end) is solved exactly as the row alone is, and a narrow
    row gives the same sum along the last axis as in the column layout (``dim=0``).
    ``T.sum(dim)`` promises neither: on CPU it splits a row among vector lanes by its
    length, and a column sum's order depends on the number of columns.

    The first :data:`_SUM_HEAD` entries are summed by a pairwise tree of elementwise
    additions (entry ``i`` plus entry ``i + h``, ``h`` the largest power of two below the
    length, then the first ``h`` halved the same way), as are the columns of narrow rows:
    each addition one IEEE operation, so neither the batch nor the vector width matters,
    and zeros appended only add zeros to the same tree. The rest of a row is cut into
    blocks of :data:`_SUM_BLOCK` entries, the last one completed with zeros, each summed by
    torch (a block's sum depends only on its entries: every block has the same length), and
    the block sums by the tree again; appended zeros only add zero blocks.

    Every device takes this sum, and it works under autograd (:func:`_tree_sum`).
    """
    n = T.shape[dim]
    if dim == 0 or n <= _SUM_HEAD:
        return _tree_sum(T, dim)
    head = _tree_sum(T.narrow(-1, 0, _SUM_HEAD), -1)
    full, tail = divmod(n - _SUM_HEAD, _SUM_BLOCK)
    parts = []
    if full:
        blocks = T.narrow(-1, _SUM_HEAD, full * _SUM_BLOCK).unflatten(-1, (full, _SUM_BLOCK))
        parts.append(blocks.sum(-1))
    if tail:
        last = nn.functional.pad(T.narrow(-1, n - tail, tail), (0, _SUM_BLOCK - tail))
        parts.append(last.sum(-1, keepdim=True))
    sums = parts[0] if len(parts) == 1 else torch.cat(parts, -1)
    if _records(head) or _records(sums):
        return head + _tree_sum(sums, -1)
    return head.add_(_tree_sum(sums, -1))


def ieee_sqrt(T: torch.Tensor) -> torch.Tensor:
    """``sqrt(T)`` correctly rounded, as IEEE 754 (and ONNX Runtime, and CUDA) compute it.

    On CPU torch's vectorized ``sqrt`` is off by a unit of rounding on about 0.6% of float32
    and float64 values, and only in the vector body, not the scalar tail: the same value
    rounds differently by its position in the tensor. Where a threshold decides which
    entries are exact zeros, that makes a row's zeros depend on its batch, and differ from
    an exported graph's. So on CPU, outside a traced graph and a recorded one, the square
    root is numpy's (the hardware's correctly rounded one); elsewhere it is torch's.
    """
    if (
        T.device.type == "cpu"
        and T.dtype in (torch.float32, torch.float64)
        and not _records(T)
        and not compiling()
    ):
        out = torch.empty_like(T)
        np.sqrt(T.numpy(), out=out.numpy())
        return out
    return T.sqrt()


def safe_div(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """``num / den`` where ``den`` is nonzero, 0 where it is 0 (NaN still propagates)."""
    zero = den == 0
    return torch.where(zero, torch.zeros_like(num), num / torch.where(zero, 1, den))


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


# --------------------------------------------------------------------------- root finding

# The number of bisection steps that ``n_iter=None`` stands for (the reference's default).
DEFAULT_N_ITER = 50

#: the ``n_iter`` of the root finders: a number of bisection steps, or None for the default
N_ITER = AnyOf(Options((None,)), Integer(1))


def _check_n_iter(n_iter: int | None, owner: str | None = None) -> int:
    """``n_iter`` (a parameter of ``owner``) as a positive int; ``None`` means
    :data:`DEFAULT_N_ITER`."""
    n_iter = check("n_iter", n_iter, N_ITER, owner_of(owner))
    return DEFAULT_N_ITER if n_iter is None else n_iter


def phi(z: torch.Tensor) -> torch.Tensor:
    """``(exp(z) - 1 - z) / z**2``, accurate near 0 and twice differentiable everywhere."""
    small = z.abs() < 0.5
    zd = torch.where(small, 1.0, z)
    direct = (torch.expm1(zd) - zd) / (zd * zd)
    zs = torch.where(small, z, 0.0)
    # sum_k z**k / (k + 2)! by Horner's rule; through k = 13 the remainder is below 1e-16
    # at |z| = 0.5 (stopping at k = 6 left 2e-8)
    series = torch.full_like(zs, _PHI_SERIES[-1])
    for coefficient in reversed(_PHI_SERIES[:-1]):
        series = series.mul(zs).add_(coefficient)
    return torch.where(small, series, direct)


_PHI_SERIES = tuple(1 / math.factorial(k + 2) for k in range(14))
# the terms of that series that reach float32's precision at |z| = 0.5 (the remainder 2e-8)
_PHI_TERMS_FLOAT32 = 7


def phi_no_graph(z: torch.Tensor) -> torch.Tensor:
    """:func:`phi` for a backward pass that records no graph; overwrites ``z``.

    The same branches in fewer operations, most of them in place (in float32 about 20
    instead of 36): no safe inputs for the branch not taken (its NaN at ``z = 0`` is
    discarded by the final selection, and no gradient flows through it), the series built in
    place and cut at float32's precision for float32.
    """
    small = z.abs() < 0.5
    direct = torch.expm1(z).sub_(z).div_(z * z)
    zs = z.clamp_(-0.5, 0.5)
    terms = _PHI_SERIES[:_PHI_TERMS_FLOAT32] if z.dtype == torch.float32 else _PHI_SERIES
    series = torch.full_like(zs, terms[-1])
    for coefficient in reversed(terms[:-1]):
        series.mul_(zs).add_(coefficient)
    return torch.where(small, series, direct)


def safe_log(P: torch.Tensor) -> torch.Tensor:
    """``log(P)`` on positive entries and 0 elsewhere, with finite gradients."""
    positive = P > 0
    return torch.where(positive, torch.where(positive, P, 1.0).log(), 0.0)


def safe_pow(P: torch.Tensor, exponent: Param) -> torch.Tensor:
    """``P ** exponent`` on positive entries and 0 elsewhere, with finite gradients."""
    positive = P > 0
    return torch.where(positive, torch.where(positive, P, 1.0) ** exponent, 0.0)


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


def _number(value: object) -> float | int:
    """``value`` itself if it is an int or a float (not a bool) other than NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(value)
    return value


#: the alpha of a mapping when it is not a tensor: any real number (below 1 and infinite
#: too, as in the reference package), a Python int or float
ALPHA_NUMBER = Satisfies("a real number or a tensor", _number)


def _check_alpha(alpha: Param, owner: str | None = None) -> Param:
    """``alpha`` (a parameter of ``owner``) as given, if it is a floating point tensor or an
    :data:`ALPHA_NUMBER`."""
    if isinstance(alpha, torch.Tensor):
        if not alpha.is_floating_point():
            raise invalid(
                "alpha", owner_of(owner), "a floating point tensor or a number", alpha.dtype
            )
        return alpha
    return check("alpha", alpha, ALPHA_NUMBER, owner_of(owner))


Output = torch.Tensor | tuple[torch.Tensor, torch.Tensor]


class _FunctionModule(nn.Module):
    """Base of the module twins of the functions here: it holds the function's arguments.

    A subclass names its functional twin in ``_function`` (a ``staticmethod``) and the
    arguments it hands on to it in ``_argument_names``, in the function's order. Its own
    ``__init__`` spells out the public signature and passes the values on by keyword; they
    are stored as attributes of those names, so that an ``nn.Parameter`` is registered (and
    learned) like any other.
    """

    _function: Callable[..., Output]
    _argument_names: tuple[str, ...] = ()
    return_support_size: bool = False

    def __init__(self, return_support_size: bool = False, **arguments: object) -> None:
        super().__init__()
        for name, value in arguments.items():
            setattr(self, name, value)
        self.return_support_size = return_support_size

    def _arguments(self) -> dict[str, object]:
        """The held arguments of ``_function``, by name."""
        return {name: getattr(self, name) for name in self._argument_names}

    def _call(self, *args: object, **kwargs: object) -> Output:
        """``_function(*args, **kwargs)``, its parameter errors naming this module's class."""
        if compiling():  # a ContextVar is out of torch.compile's reach: errors name owner
            return self._function(*args, **kwargs)
        token = _CALLER.set(type(self).__name__)  # called_as, without a generator's cost
        try:
            return self._function(*args, **kwargs)
        finally:
            _CALLER.reset(token)

    def _with_support(self, text: str) -> str:
        """``text`` followed by ``, return_support_size=True`` when that is set."""
        return text + (", return_support_size=True" if self.return_support_size else "")


class _MappingModule(_FunctionModule):
    """Module twin of a mapping: ``forward(X)`` applies ``_function`` with the held arguments.

    ``training`` follows the module's mode (the plain-op path in ``eval()`` mode) unless
    ``_passes_training`` is False, for the functions without that argument.
    """

    _passes_training: bool = True

    def forward(self, X: torch.Tensor) -> Output:
        """The mapping of ``X`` (and its support size, when asked for)."""
        arguments = self._arguments()
        if self._passes_training:
            arguments["training"] = self.training
        return self._call(X, **arguments, return_support_size=self.return_support_size)

    def extra_repr(self) -> str:
        held = (f"{name}={value!r}" for name, value in self._arguments().items())
        return self._with_support(", ".join(held))
