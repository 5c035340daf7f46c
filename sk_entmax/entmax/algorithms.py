"""Which algorithm serves which alpha: the one place that decides it.

Every mapping, loss and entropy of the core asks :func:`case_for` which case an alpha is,
and the root finders ask :func:`newton_applies` whether Newton steps may replace bisection;
none compares alpha with 1, 1.5 or 2 on its own. The numeric forms each case is computed in
(``exp2``/``log2`` powers, square roots, floors, scratch buffers) stay beside the solver
they tune.

The cases, for alpha a Python number:

- ``SOFTMAX`` (alpha = 1): softmax, and cross-entropy as its loss;
- ``ENTMAX15`` (alpha = 1.5): the exact 1.5-entmax (Peters et al., 2019);
- ``SPARSEMAX`` (alpha = 2): the exact sparsemax (Martins and Astudillo, 2016);
- ``ROOT`` (any other number): root finding on the threshold, by Newton steps for alpha in
  ``[NEWTON_MIN_ALPHA, 2]`` when ``n_iter >= NEWTON_MIN_ITER``, by bisection otherwise;

and ``PER_ROW`` for a tensor alpha (learned, one per row or one per head): root finding,
Newton on the rows whose alpha lies in the Newton range, bisection on the others, with a
gradient in alpha.

It is also where another implementation of a case registers for a device, for instance a
CUDA or Triton kernel: :func:`register_kernel` ``(mapping, device_type, kernel)``. None is
registered by default; on CUDA, with none registered, the package's own Triton kernels
(:mod:`sk_entmax.entmax.kernels`, opt-in) serve sparsemax, 1.5-entmax and alpha-entmax in
``[1.1, 2]`` when Triton imports; they join the seam in one place, looked up on the first
choice made (:func:`select`, :func:`triton_path`). Every user that computes a case for an
alpha asks :func:`select` for its implementation, which returns the registered kernel when
there is one for the case on the input's device, else the user's own default; so a kernel
serves all of them at once:

- :func:`sk_entmax.entmax.entmax` (and so ``EntmaxHead.proba``, ``predict_proba``, the
  conformal scores and :func:`~sk_entmax.entmax.entmax_attention_weights`);
- the Fenchel-Young losses (:func:`~sk_entmax.entmax.entmax_loss`,
  :func:`~sk_entmax.entmax.sparsemax_loss`, :func:`~sk_entmax.entmax.sparsemax_bisect_loss`,
  :func:`~sk_entmax.entmax.entmax15_loss`, :func:`~sk_entmax.entmax.entmax_bisect_loss`, their
  modules, ``EntmaxHead.loss`` and ``EntmaxHead.loss_and_grad``): the kernel computes
  ``P``, and the loss ``H(P) - H(q) + <P - q, x>`` and its gradient ``P - q`` are built from
  that ``P`` (the Tsallis entropy ``H`` and its terms are closed forms of ``P``, chosen by
  :func:`case_for`);
- TabNet's attentive masks (every ``entmax_mode``);
- :func:`~sk_entmax.entmax.entmax_attention` and ``EntmaxMultiheadAttention``: the weights
  of each block of queries come from the kernel; the backward pass rebuilds them in closed
  form from the one threshold per query row read off those weights.

The functions named after an algorithm (:func:`~sk_entmax.entmax.sparsemax`,
:func:`~sk_entmax.entmax.entmax15`, :func:`~sk_entmax.entmax.entmax_bisect`,
:func:`~sk_entmax.entmax.sparsemax_bisect`) are the implementations themselves and never ask
the registry: a kernel may wrap them. On CUDA they ask :func:`triton_path` only, so that the
package's Triton kernels serve the drop-in functions as well.

The calling convention, one for every user::

    kernel(X, alpha, *, dim, n_iter, training, return_support_size) -> P

- ``X``: a floating point tensor of scores (any shape, any float dtype; ``-inf`` masks an
  entry), the mapping taken along ``dim`` (the users here pass ``dim=-1``);
- ``alpha``: a Python number for the cases ``SOFTMAX``, ``ENTMAX15``, ``SPARSEMAX`` and
  ``ROOT`` (the losses pass 2.0 and 1.5 for sparsemax and 1.5-entmax), a floating point
  tensor for ``PER_ROW``, broadcastable to ``X`` with size 1 along ``dim``;
- ``n_iter``: the accuracy asked, in bisection steps (an int >= 1 or None for 50; the exact
  cases may ignore it);
- ``training``: True when the result may need a gradient (the losses, the masks in training
  mode: ``P`` must then be differentiable in ``X``, and in a tensor ``alpha``, by autograd;
  the losses' second derivatives flow through it); False where no gradient is taken through
  ``P`` (attention's forward pass, which runs without a graph, and plain-op evaluation);
- ``return_support_size``: whether to return ``(P, support_size)`` as
  :func:`sk_entmax.entmax.entmax` does; the users here other than ``entmax`` pass False.

It returns what :func:`sk_entmax.entmax.entmax` returns: ``P`` of ``X``'s shape and dtype,
non-negative, summing to 1 along ``dim`` (0 on a fully masked row). ``alpha`` and ``n_iter``
arrive as the public call checked them: the losses and attention check them before they
choose; ``entmax`` checks them in its root-finding implementation (as the exact cases take
neither), so a kernel for ``ROOT`` or ``PER_ROW`` called by ``entmax`` gets them as given.
One registry and one signature serve every user, attention and TabNet's masks included.
Every user reaches it the same way: it wraps its tensor functions into the convention with
:func:`as_kernel`, one per case, and calls :func:`apply_case`, which selects and calls; a
user that has decided the case already passes it (``case=``) rather than have it derived
again, and so does each implementation for the case it serves.

``Case`` was called ``Mapping`` (a name it shared with ``collections.abc.Mapping``),
and :func:`case_for` ``mapping_for``; the old names still work, with a deprecation warning.
"""

from __future__ import annotations

import enum
import importlib
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from sk_entmax.entmax.common import Param
from sk_entmax.entmax.constraints import invalid
from sk_entmax.entmax.tracing import compiling

__all__ = [
    "NEWTON_MIN_ALPHA",
    "NEWTON_MIN_ITER",
    "Case",
    "apply_case",
    "as_kernel",
    "case_for",
    "exact_alpha",
    "kernel_for",
    "newton_applies",
    "offer_cpu",
    "register_kernel",
    "select",
    "triton_path",
    "unregister_kernel",
]


class Case(enum.Enum):
    """The cases of alpha (module docstring). Formerly ``Mapping`` (deprecated alias)."""

    SOFTMAX = "softmax"
    ENTMAX15 = "entmax15"
    SPARSEMAX = "sparsemax"
    ROOT = "root finding"
    PER_ROW = "root finding, alpha per row"


_EXACT = ((1, Case.SOFTMAX), (1.5, Case.ENTMAX15), (2, Case.SPARSEMAX))


def case_for(alpha: Param) -> Case:
    """The case that serves ``alpha``: a number equal to 1, 1.5 or 2 has an exact algorithm,
    any other number takes root finding, and a tensor takes root finding per row."""
    if isinstance(alpha, torch.Tensor):
        return Case.PER_ROW
    for value, case in _EXACT:
        if alpha == value:
            return case
    return Case.ROOT


def exact_alpha(case: Case) -> float:
    """The alpha of an exact case (``SOFTMAX``, ``ENTMAX15``, ``SPARSEMAX``): 1.0, 1.5 or 2.0,
    the number a function named after its algorithm hands on (as :func:`case_for`'s inverse).
    """
    for value, exact in _EXACT:
        if exact is case:
            return float(value)
    raise ValueError(f"{case} has no one alpha: its alphas are any other number or a tensor")


# From this many bisection steps on (float32 precision), Newton replaces bisection ...
NEWTON_MIN_ITER = 24
# ... for alpha in [NEWTON_MIN_ALPHA, 2], where the Newton iteration on the power form
# ``[beta x - tau]_+ ** (1 / beta)`` is accurate; nearer 1 the log1p form of bisection is.
NEWTON_MIN_ALPHA = 1.1


def newton_applies(alpha: Param, n_iter: int) -> bool | torch.Tensor:
    """Whether Newton steps replace ``n_iter`` bisection steps at ``alpha``: a bool for a
    number, booleans shaped like ``alpha`` for a tensor (all False below NEWTON_MIN_ITER)."""
    inside = (NEWTON_MIN_ALPHA <= alpha) & (alpha <= 2)
    if n_iter < NEWTON_MIN_ITER:
        return torch.zeros_like(inside) if isinstance(inside, torch.Tensor) else False
    return inside


Kernel = Callable[..., Any]
_KERNELS: dict[tuple[Case, str], Kernel] = {}

#: the fused CPU kernel's ``(run, wrap)``, which :mod:`sk_entmax.entmax.kernels.cpu` offers
#: here when it is imported (:func:`offer_cpu`)
_CPU: tuple[Callable[..., Any], Callable[..., Any]] | None = None

#: the package's own kernels, as :func:`_package_kernels` looked them up (None before)
_TRITON: ModuleType | None = None


def _package_kernels() -> ModuleType | None:
    """The package's Triton kernels (:mod:`sk_entmax.entmax.kernels`), looked up on the
    first choice made: the one place where they join the seam. This module does not import
    them at its own import, so that the kernels, which use the cases decided here, stand
    above it; nor does the lookup import Triton (the kernels import it on first use). The
    fused CPU kernel (:mod:`sk_entmax.entmax.kernels.cpu`) is imported here too, and offers
    itself (:func:`offer_cpu`), whichever public module the user imported first (the core's
    names load lazily: ``from sk_entmax.entmax import sparsemax`` alone imports no kernel
    module). The kernels say on which device types they serve
    (:func:`sk_entmax.entmax.kernels.devices`: none until turned on, then CUDA).

    None while ``torch.compile`` or ``torch.export`` traces a first choice: an import cannot
    be traced, and the kernels serve no traced call anyway (their graphs hold the torch
    forms), so the lookup waits for the first eager call."""
    global _TRITON
    if _TRITON is None:
        if compiling():
            return None
        module = importlib.import_module("sk_entmax.entmax.kernels")
        importlib.import_module("sk_entmax.entmax.kernels.cpu")
        _TRITON = module
    return _TRITON


def offer_cpu(run: Callable[..., Any], wrap: Callable[..., Any]) -> None:
    """Make the fused CPU kernel the default on CPU for the calls it takes: ``run`` for
    :func:`triton_path` (with ``training``), ``wrap`` for :func:`select` (called once, by
    :mod:`sk_entmax.entmax.kernels.cpu` as it is imported)."""
    global _CPU
    _CPU = (run, wrap)


def register_kernel(mapping: Case, device_type: str, kernel: Kernel) -> None:
    """Serve ``mapping`` on ``device_type`` (``"cuda"``, ``"cpu"``, ...) by ``kernel``.

    Parameters
    ----------
    mapping : Case
        The case the kernel implements.
    device_type : str
        ``torch.device(...).type`` of the inputs it takes.
    kernel : callable
        Called as ``kernel(X, alpha, *, dim, n_iter, training, return_support_size)``,
        returning what :func:`sk_entmax.entmax.entmax` returns (the module docstring).
    """
    if not isinstance(mapping, Case):
        raise invalid("mapping", "register_kernel", "a Case", mapping)
    if not callable(kernel):
        raise invalid("kernel", "register_kernel", "a callable", kernel)
    _KERNELS[(mapping, torch.device(device_type).type)] = kernel


def unregister_kernel(mapping: Case, device_type: str) -> None:
    """Drop the kernel registered for ``mapping`` on ``device_type``, if any."""
    _KERNELS.pop((mapping, torch.device(device_type).type), None)


def kernel_for(mapping: Case, device: torch.device) -> Kernel | None:
    """The kernel registered for ``mapping`` on ``device``'s type, or None."""
    return _KERNELS.get((mapping, device.type))


def triton_path(
    X: torch.Tensor,
    alpha: Param,
    dim: int,
    n_iter: object = None,
    owner: str | None = None,
    training: bool = True,
    case: Case | None = None,
) -> torch.Tensor | None:
    """``P`` of ``X`` by the package's kernels when ``X`` is on a device they serve and they
    take the call, else None: on the Triton kernels' devices
    (:func:`sk_entmax.entmax.kernels.devices`: CUDA once they are turned on) the Triton
    kernels (:func:`sk_entmax.entmax.kernels.run`, opt-in), on CPU the fused kernel
    (:func:`sk_entmax.entmax.kernels.cpu.run`) for a call with ``training`` (the autograd
    path; ``training=False`` keeps the traceable plain-op form).

    The functions named after an algorithm (:func:`~sk_entmax.entmax.sparsemax`,
    :func:`~sk_entmax.entmax.entmax15`, :func:`~sk_entmax.entmax.entmax_bisect`) ask this,
    not the registry (a registered kernel may wrap them), so that the package's own
    kernels serve them too. ``case``: ``case_for(alpha)``, decided by the caller (None: the
    kernels decide it).
    """
    if not isinstance(X, torch.Tensor):
        return None
    triton = _package_kernels()
    if triton is not None and X.device.type in triton.devices():
        return triton.run(X, alpha, dim, n_iter, owner, case)  # imports Triton on first use
    if _CPU is None or not training or X.device.type != "cpu":
        return None
    return _CPU[0](X, alpha, dim, n_iter, owner, case)  # loads numba on first use, if it can


def select(
    alpha: Param,
    device: torch.device,
    defaults: dict[Case, Kernel],
    case: Case | None = None,
) -> Kernel:
    """The implementation of ``alpha``'s case on ``device``: the kernel registered for it,
    else on the Triton kernels' devices (CUDA, once turned on) the Triton kernels
    (:func:`sk_entmax.entmax.kernels.wrap`, when Triton imports; they hand the calls they do
    not take to the default), else on CPU the fused kernel, else ``defaults[case]``, the
    caller's own implementation of the case, called with the kernels' convention (module
    docstring).

    The one place where an alpha picks its algorithm; on CPU with no kernel registered it
    costs one :func:`case_for` and a dict lookup. ``case``: ``case_for(alpha)`` when the
    caller has decided it already (and passes it on to what it calls next), else None.
    """
    if case is None:
        case = case_for(alpha)
    triton = _package_kernels()
    if _KERNELS:
        kernel = _KERNELS.get((case, device.type))
        if kernel is not None:
            return kernel
    if triton is not None and device.type in triton.devices():
        kernel = triton.wrap(case, defaults[case])  # imports Triton on first use, if it can
        if kernel is not None:
            return kernel
    if _CPU is not None and device.type == "cpu":
        kernel = _CPU[1](case, defaults[case])  # the fused CPU kernel, training calls only
        if kernel is not None:
            return kernel
    return defaults[case]


def as_kernel(function: Callable[..., Any], *passed: str, **fixed: Any) -> Kernel:
    """``function`` with the kernels' calling convention (module docstring): the one adapter
    from the core's tensor functions to the implementations :func:`select` chooses among.

    The result, called as ``kernel(X, alpha, *, dim, n_iter, training,
    return_support_size)``, returns ``function(X, **arguments, **fixed)``, where
    ``arguments`` holds the convention's arguments named in ``passed`` (the others are not
    handed on) and ``fixed`` the caller's own keywords (an error's owner, ``k``, the case
    decided, ...).

    Parameters
    ----------
    function : callable
        A tensor function taking the scores first, then keywords.
    *passed : str
        The names, among ``alpha``, ``dim``, ``n_iter``, ``training`` and
        ``return_support_size``, that ``function`` takes from the call.
    **fixed
        Keywords passed to ``function`` on every call.

    Returns
    -------
    kernel : callable
        ``function`` with the kernels' convention.
    """
    unknown = set(passed) - set(_CONVENTION)
    if unknown:
        raise ValueError(f"not arguments of the kernels' convention: {sorted(unknown)}")

    def kernel(
        X: torch.Tensor,
        alpha: Param,
        *,
        dim: int,
        n_iter: int | None,
        training: bool,
        return_support_size: bool,
    ) -> Any:
        call = {
            "alpha": alpha,
            "dim": dim,
            "n_iter": n_iter,
            "training": training,
            "return_support_size": return_support_size,
        }
        return function(X, **{name: call[name] for name in passed}, **fixed)

    return kernel


_CONVENTION = ("alpha", "dim", "n_iter", "training", "return_support_size")


def apply_case(
    implementations: dict[Case, Kernel],
    X: torch.Tensor,
    alpha: Param,
    *,
    dim: int = -1,
    n_iter: int | None = None,
    training: bool = True,
    return_support_size: bool = False,
    case: Case | None = None,
) -> Any:
    """``P`` of ``X`` at ``alpha`` by :func:`select`'s choice for ``alpha``'s case on ``X``'s
    device (a registered kernel, the Triton kernels, else ``implementations[case]``), called
    with the kernels' convention: the one call that every user of the registry makes.

    ``case``: ``case_for(alpha)`` when the caller has decided it already, else None.
    """
    return select(alpha, X.device, implementations, case)(
        X,
        alpha,
        dim=dim,
        n_iter=n_iter,
        training=training,
        return_support_size=return_support_size,
    )


_DEPRECATED = {"Mapping": ("Case", Case), "mapping_for": ("case_for", case_for)}


def __getattr__(name: str) -> Any:
    """The old names of :class:`Case` and :func:`case_for` (``Mapping``, which shadowed
    ``collections.abc.Mapping``, and ``mapping_for``), deprecated."""
    if name in _DEPRECATED:
        new, value = _DEPRECATED[name]
        warnings.warn(
            f"sk_entmax.entmax.algorithms.{name} is deprecated; use {new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
