"""How big TabNet's batches, ghost batches and per-row work are, from the data's size."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["TabNetSizingMixin"]

_MAX_AUTO_BATCH = 1024
_MIN_AUTO_BATCH = 16
_AUTO_VIRTUAL_BATCH = 128


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
            size = 2 ** math.floor(math.log2(max(n_samples / 8, 1)))
            return int(min(max(size, _MIN_AUTO_BATCH), _MAX_AUTO_BATCH, n_samples))
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
            return max(2, min(_AUTO_VIRTUAL_BATCH, batch_size))
        if vbs > batch_size:
            warnings.warn(
                f"virtual_batch_size={vbs} exceeds the batch size {batch_size}; ghost batch "
                "norm then uses whole batches",
                UserWarning,
                stacklevel=5,  # _virtual_batch_size <- _module <- _train <- fit <- the caller
            )
        return max(2, min(vbs, batch_size))
