"""Arithmetic whose rounding the batch cannot change: row sums by a fixed pairwise tree
(:func:`row_sum`) and correctly rounded square roots (:func:`ieee_sqrt`).

Where a threshold decides which entries are exact zeros, a row must round the same alone, in a
batch, padded with ``-inf``, in the column layout and in an exported graph; these are the
operations the solvers take for that.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from sk_entmax.entmax.tracing import compiling, exporting

# row_sum: the head of a row summed by a pairwise tree (as narrow rows are), the rest by
# torch's sums of fixed blocks of this many entries (as fast as a plain sum, nearly)
_SUM_HEAD = 256


_SUM_BLOCK = 256


def _records(T: torch.Tensor) -> bool:
    """Whether autograd records the ops on ``T`` (then no ``out=`` and no in-place op on a
    result that needs a gradient)."""
    return T.requires_grad and torch.is_grad_enabled()


def _out_of_place(T: torch.Tensor) -> bool:
    """Whether :func:`_tree_sum` takes its out-of-place additions: while autograd records
    ``T``, and while a graph is traced (``torch.export``, the ONNX exporter,
    ``torch.compile``, ``torch.jit.trace``), where the scratch tensor's in-place adds become
    slice scatters (``ScatterND``, ``Range``, ``Transpose`` ...): about 40 ONNX nodes a sum
    instead of about 10, which made a linear model's ONNX export take minutes (issue 60)."""
    return _records(T) or compiling() or exporting() or torch.jit.is_tracing()


def _tree_sum(T: torch.Tensor, dim: int) -> torch.Tensor:
    """The pairwise tree of :func:`row_sum`: entry ``i`` plus entry ``i + h``, ``h`` the
    largest power of two below the length, then the first ``h`` halved the same way.

    Without a graph the tree is built in one scratch tensor (``out=`` and in-place adds);
    while autograd records ``T`` (the plain-op path of a mapping called with an input that
    requires a gradient) or a graph is traced (:func:`_out_of_place`), by the same additions
    out of place, equal bit for bit.
    """
    n = T.shape[dim]
    if n <= 1:
        return T.sum(dim, keepdim=True)
    h = 1 << ((n - 1).bit_length() - 1)  # h < n <= 2 h
    if _out_of_place(T):
        # the row padded with zeros to 2 h (x + 0 is x), then each level as a sum over an
        # axis of two: entry i plus entry i + h (two graph nodes a level, where slices and
        # their bounds take five)
        dim = dim % T.dim()
        if n < 2 * h:
            T = nn.functional.pad(T, (0, 0) * (T.dim() - 1 - dim) + (0, 2 * h - n))
        while h >= 1:
            T = T.unflatten(dim, (2, h)).sum(dim)
            h //= 2
        return T
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
