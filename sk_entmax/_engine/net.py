"""The skorch net of the estimators: batches, and the Fenchel-Young loss with its penalty."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse
import torch
from skorch import NeuralNet
from skorch.dataset import Dataset
from skorch.utils import to_tensor

__all__ = [
    "BatchDataset",
    "FenchelYoungNet",
    "NonFiniteLossError",
    "collate_batch",
    "float64_rows",
]


class NonFiniteLossError(FloatingPointError):
    """Training diverged: a mini-batch loss became NaN or infinite.

    Raised by :class:`FiniteLossCheck` during ``fit`` or ``partial_fit``; the message names
    the epoch and the batch. The estimator is left as it was before the call (unfitted
    before its first fit).
    """


class BatchDataset(Dataset):
    """A skorch ``Dataset`` that fetches a whole mini-batch with one fancy index.

    PyTorch's ``DataLoader`` calls ``__getitems__`` with the batch's indices when a dataset
    defines it; paired with :func:`collate_batch` this replaces a Python call per sample by
    one array indexing per batch.

    A scipy sparse ``X`` is indexed as it is and only the batch is made dense, so sparse data
    is never densified whole.
    """

    def __getitems__(self, indices):
        idx = np.asarray(indices, dtype=np.int64)
        if isinstance(self.X, dict):
            X = {key: _dense_rows(value, idx) for key, value in self.X.items()}
        else:
            X = _dense_rows(self.X, idx)
        y = np.zeros(len(idx), dtype=np.float32) if self.y is None else self.y[idx]
        return X, y


def _dense_rows(values: Any, idx: np.ndarray) -> np.ndarray:
    rows = values[idx]
    return rows.toarray() if scipy.sparse.issparse(rows) else rows


def float64_rows(
    values: Any, start: int, stop: int, device: Any, *, share: bool = False
) -> torch.Tensor:
    """Rows ``start:stop`` of ``values`` (an array or scipy sparse matrix) as a float64 tensor.

    Only the block is copied (and made dense): ``values`` itself may be read-only (a memmap,
    a DataFrame's array) and is never converted whole. With ``share``, a block that is
    already a writeable, C-contiguous float64 array is not copied at all: the tensor shares
    its memory, so the caller must only read it. The tensor is always row-major: torch's CPU
    kernels (batch norm's among them) can round a row differently by the memory layout of
    its batch, and a row's output must not depend on how the caller's array was laid out
    (a DataFrame's values are often column-major).
    """
    rows = values[start:stop]
    rows = rows.toarray() if scipy.sparse.issparse(rows) else rows
    if not (
        share
        and isinstance(rows, np.ndarray)
        and rows.dtype == np.float64
        and rows.flags.writeable
        and rows.flags.c_contiguous
    ):
        rows = np.array(rows, dtype=np.float64, order="C")
    return torch.from_numpy(rows).to(device)


def collate_batch(batch):
    """The batch :meth:`BatchDataset.__getitems__` built is already collated."""
    return batch


class FenchelYoungNet(NeuralNet):
    """A skorch ``NeuralNet`` whose loss is the module's Fenchel-Young loss, sample-weighted.

    The module provides ``loss(scores, target)`` (per-sample) and ``proba(scores)``; the batch
    ``X`` is a dict whose optional ``"sample_weight"`` entry weights the per-sample losses.
    The ``criterion`` of the net is unused: the loss depends on the module's (possibly
    learned) alpha, so it is computed here, in skorch's documented ``get_loss`` hook. The
    weights are the loss's alone: :meth:`infer` leaves them out of the module's inputs.

    Parameters
    ----------
    *args, **kwargs
        As for :class:`skorch.NeuralNet`.
    l2 : float, default=0.0
        Strength ``1 / C`` of the penalty ``l2 * ||W||^2 / 2`` on the parameters that the
        module's ``penalized_parameters()`` names (weights, not intercepts or alpha).
    total_weight : float, default=1.0
        The training set's total sample weight: the objective is the weighted mean loss plus
        the penalty divided by it, so a mini-batch's loss estimates the full objective.
    """

    def __init__(self, *args: Any, l2: float = 0.0, total_weight: float = 1.0, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.l2 = l2
        self.total_weight = total_weight

    def penalty_term(self, total_weight: float) -> torch.Tensor | None:
        """``l2 * ||W||^2 / (2 * total_weight)``, or None without a penalty."""
        if not self.l2:
            return None
        squares = sum(p.pow(2).sum() for p in self.module_.penalized_parameters())
        return squares * (0.5 * self.l2 / total_weight)

    def infer(self, x, **fit_params):
        """The module's output on the batch ``x``, without its ``"sample_weight"`` entry.

        skorch calls the module with every entry of a dict batch as a keyword argument;
        the weights are for :meth:`get_loss` (which reads them from the batch), so the
        module is called on the other entries only.
        """
        if isinstance(x, Mapping) and "sample_weight" in x:
            x = {key: value for key, value in x.items() if key != "sample_weight"}
        return super().infer(x, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        y_true = to_tensor(y_true, device=self.device)
        losses = self.module_.loss(y_pred, y_true)
        weight = X.get("sample_weight") if isinstance(X, dict) else None
        if weight is None:
            loss = losses.mean()
        else:
            weight = to_tensor(weight, device=self.device).to(losses.dtype)
            total = weight.sum().clamp_min(torch.finfo(losses.dtype).tiny)
            loss = (losses * weight).sum() / total
        penalty = self.penalty_term(self.total_weight) if training else None
        return loss if penalty is None else loss + penalty
