"""Triton kernels of the mappings and of fused attention, as :mod:`sk_entmax.entmax.kernels`
launches them.

Imported only where Triton imports (:mod:`sk_entmax.entmax.kernels`). This module gathers the
entry points: :func:`forward` and :func:`backward` of the mappings, one row a program
(:mod:`~sk_entmax.entmax.kernels._triton_maps`, where the two-level threshold search is
described), and :func:`attention_forward` and :func:`attention_backward` of fused attention
(:mod:`~sk_entmax.entmax.kernels._triton_attention`). Under ``TRITON_INTERPRET=1`` (Triton's
CPU interpreter) the tests run them on CPU tensors.
"""

from __future__ import annotations

from sk_entmax.entmax.kernels._triton_attention import attention_backward as attention_backward
from sk_entmax.entmax.kernels._triton_attention import attention_forward as attention_forward
from sk_entmax.entmax.kernels._triton_maps import backward as backward
from sk_entmax.entmax.kernels._triton_maps import forward as forward
