"""The plumbing every package of the core shares: argument checks, axes and dtypes, safe
elementwise operations, the backward passes' shared parts and the one device test.

This is the face of ``sk_entmax.entmax.common``: the root modules, ``solvers/`` and
``kernels/`` import these names from here, never from the private modules behind it.

- ``_checks``: the checks of ``alpha`` and ``n_iter`` (:func:`check_alpha`,
  :func:`check_n_iter`, :data:`DEFAULT_N_ITER`, :data:`ALPHA_NUMBER`) and :data:`Param`.
- ``_axes``: every mapping written once along the last axis of a float32/float64 tensor
  (:func:`check_dim`, :func:`to_last`, :func:`from_last`, :func:`param_to_last`,
  :func:`apply_last`, :func:`apply_param_last`, :func:`with_support`, ...).
- ``_safe_ops``: :func:`row_stats`, :func:`safe_div`, :func:`safe_log`, :func:`safe_pow`,
  :func:`phi`, :func:`phi_no_graph`.
- ``_vjp``: :func:`entmax_vjp`, :func:`sqrt_support`, :func:`save_alpha`,
  :func:`saved_alpha`.
- ``_devices``: :func:`cpu_branch`, :func:`device_branch`.
"""

from sk_entmax.entmax.common._axes import (
    HALF,
    apply_last,
    apply_param_last,
    check_dim,
    check_floating,
    from_last,
    param_to_last,
    support_size,
    to_last,
    with_support,
)
from sk_entmax.entmax.common._checks import (
    ALPHA_NUMBER,
    DEFAULT_N_ITER,
    Param,
    check_alpha,
    check_n_iter,
)
from sk_entmax.entmax.common._devices import cpu_branch, device_branch
from sk_entmax.entmax.common._safe_ops import (
    phi,
    phi_no_graph,
    row_stats,
    safe_div,
    safe_log,
    safe_pow,
)
from sk_entmax.entmax.common._vjp import entmax_vjp, save_alpha, saved_alpha, sqrt_support

__all__ = [
    "ALPHA_NUMBER",
    "DEFAULT_N_ITER",
    "HALF",
    "Param",
    "apply_last",
    "apply_param_last",
    "check_alpha",
    "check_dim",
    "check_floating",
    "check_n_iter",
    "cpu_branch",
    "device_branch",
    "entmax_vjp",
    "from_last",
    "param_to_last",
    "phi",
    "phi_no_graph",
    "row_stats",
    "safe_div",
    "safe_log",
    "safe_pow",
    "save_alpha",
    "saved_alpha",
    "sqrt_support",
    "support_size",
    "to_last",
    "with_support",
]
