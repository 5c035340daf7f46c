"""How big TabNet's batches, ghost batches and per-row work are, from the data's size and the
device it trains on."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["TabNetSizingMixin", "auto_batch_size", "auto_virtual_batch_size"]

_MIN_AUTO_BATCH = 16
#: the largest automatic batch, by device type. A CPU keeps the sizes TabNet's benchmarks
#: were tuned at (a row costs 13 us of a training step at 1,024 rows a batch and 9 us at
#: 4,096, on one thread: larger batches save little and take fewer steps an epoch). On a
#: GPU a step costs about the same from a few rows to thousands (each operation is a kernel
#: launch), so only large batches use it: on an H200, 200,000 x 20 rows took 4.8 s an
#: epoch at 1,024 rows a batch and 0.47 s at 16,384 with ghost batches of 1,024
_MAX_AUTO_BATCH = {"cpu": 1024, "accelerator": 16384}
_AUTO_VIRTUAL_BATCH = 128
#: on an accelerator, the automatic ghost batch is this fraction of the batch (16,384 rows
#: give 1,024, pytorch-tabnet's own advice for large batches), never below 128 rows
_ACCELERATOR_GHOST_BATCHES = 16


def _device_kind(device: str) -> str:
    return "cpu" if str(device).split(":", 1)[0] == "cpu" else "accelerator"


def auto_batch_size(n_samples: int, device: str = "cpu") -> int:
    """The batch size that ``batch_size="auto"`` gives ``n_samples`` training rows on
    ``device``.

    ``n_samples / 8`` rounded down to a power of two, so that every epoch takes several
    optimizer steps, within [16, 1024] on a CPU and [16, 16384] on a GPU (``"cuda"``,
    ``"cuda:N"``, ``"mps"``), and at most ``n_samples``.

    Parameters
    ----------
    n_samples : int
        Training rows (at least 1).
    device : str, default="cpu"
        The resolved device the network trains on.

    Returns
    -------
    int
        The batch size.
    """
    size = 2 ** math.floor(math.log2(max(n_samples / 8, 1)))
    largest = _MAX_AUTO_BATCH[_device_kind(device)]
    return int(min(max(size, _MIN_AUTO_BATCH), largest, n_samples))


def auto_virtual_batch_size(batch_size: int, device: str = "cpu") -> int:
    """The ghost batch size that ``virtual_batch_size="auto"`` gives a batch of
    ``batch_size`` rows on ``device``: ``min(128, batch_size)`` on a CPU; on a GPU a
    sixteenth of the batch, at least 128 rows (1,024 for a batch of 16,384), and at most
    the batch; never below 2.

    Parameters
    ----------
    batch_size : int
        The batch size the fit uses.
    device : str, default="cpu"
        The resolved device the network trains on.

    Returns
    -------
    int
        The virtual batch size.
    """
    size = _AUTO_VIRTUAL_BATCH
    if _device_kind(device) == "accelerator":
        size = max(size, batch_size // _ACCELERATOR_GHOST_BATCHES)
    return max(2, min(size, batch_size))


class TabNetSizingMixin:
    """The sizing hooks of :class:`~sk_entmax.TabNetEntmaxClassifier`: ``_batch_size`` and
    ``_work_per_row`` (which the fit skeleton calls) and ``_virtual_batch_size`` (which its
    ``_module`` calls), each from the checked parameters (or the fitted network's sizes) it
    is given."""

    def _work_per_row(self, sizes: Mapping[str, Any], n_features: int, n_outputs: int) -> float:
        # each step: a feature transformer of n_independent + n_shared GLU layers and an
        # attentive transformer, forward and backward (a rough count)
        width = 2 * (sizes["n_d"] + sizes["n_a"])
        layers = sizes["n_independent"] + sizes["n_shared"]
        per_step = n_features * width + layers * width * width + width * n_features
        return 3.0 * sizes["n_steps"] * per_step

    def _batch_size(self, params: dict[str, Any], n_samples: int) -> int:
        size = params["batch_size"]
        if size == "auto":
            return auto_batch_size(n_samples, params["device"])
        if size > n_samples:
            warnings.warn(
                f"batch_size={size} exceeds the {n_samples} training rows; each epoch is "
                f"one step on all {n_samples} rows",
                UserWarning,
                stacklevel=4,  # _batch_size <- _train <- fit <- the caller
            )
        return min(size, n_samples)

    def _virtual_batch_size(self, params: dict[str, Any], batch_size: int) -> int:
        vbs = params["virtual_batch_size"]
        if vbs == "auto":
            return auto_virtual_batch_size(batch_size, params["device"])
        if vbs > batch_size:
            warnings.warn(
                f"virtual_batch_size={vbs} exceeds the batch size {batch_size}; ghost batch "
                "norm then uses whole batches",
                UserWarning,
                stacklevel=5,  # _virtual_batch_size <- _module <- _train <- fit <- the caller
            )
        return max(2, min(vbs, batch_size))
