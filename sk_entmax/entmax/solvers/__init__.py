"""The exact maps' forms and root finding's solvers, along the last axis, outside autograd.

This is the face of ``sk_entmax.entmax.solvers``: the root modules and ``kernels/`` import
these names from here, never from the private modules behind it, which import each other.

- ``_traceable``: the one traceable pure-torch form of sparsemax and 1.5-entmax
  (:func:`sparsemax_traceable`, :func:`entmax15_traceable`, :func:`exact_traceable`),
  with ``_sorting`` (the full sort of the rows that have not settled), ``_sums`` (rounding
  the batch cannot change) and ``_narrow`` (the column layout of narrow rows).
- ``_entmax_solvers``: alpha-entmax's threshold by bisection or Newton steps
  (:func:`entmax_bisect_last`, :func:`softmax_last`, :func:`entmax_p`, :func:`normalize`),
  with ``_newton`` (Newton's steps on the power form, :func:`floor_threshold`), ``_traced``
  (the ``torch.compile`` stages) and ``_wide_rows`` (the backward pass chunk by chunk,
  :func:`entmax_vjp_rows`).
- ``_entmax_gradients``: the Jacobian weights (:func:`gppr`), the alpha-gradient
  (:func:`entmax_alpha_vjp`) and the plain-op path whose autograd gradient is exact
  (:func:`entmax_bisect_plain`).
"""

from sk_entmax.entmax.solvers._entmax_gradients import (
    entmax_alpha_vjp,
    entmax_bisect_plain,
    gppr,
)
from sk_entmax.entmax.solvers._entmax_solvers import (
    entmax_bisect_last,
    entmax_p,
    normalize,
    softmax_last,
)
from sk_entmax.entmax.solvers._newton import floor_threshold
from sk_entmax.entmax.solvers._traceable import (
    entmax15_traceable,
    exact_traceable,
    sparsemax_traceable,
)
from sk_entmax.entmax.solvers._wide_rows import entmax_vjp_rows

__all__ = [
    "entmax15_traceable",
    "entmax_alpha_vjp",
    "entmax_bisect_last",
    "entmax_bisect_plain",
    "entmax_p",
    "entmax_vjp_rows",
    "exact_traceable",
    "floor_threshold",
    "gppr",
    "normalize",
    "softmax_last",
    "sparsemax_traceable",
]
