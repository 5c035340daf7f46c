"""Per-row attributions and feature importances from a fitted TabNet's masks."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.distributed
from sklearn.utils.validation import check_is_fitted

from sk_entmax._engine.distributed import data_parallel_group
from sk_entmax._engine.inference import map_row_blocks
from sk_entmax._engine.net import float64_rows

__all__ = ["MaskExplanationMixin"]

_EXPLAIN_BLOCK = 4096  # rows per forward pass when explaining or computing importances


class MaskExplanationMixin:
    """``explain`` and the ``feature_importances_`` computation of an estimator whose
    fitted module has a ``tabnet`` (:class:`~sk_entmax.nn.TabNet`); uses the estimator's
    ``_inference_module``, ``_validate_predict_data``, ``_checked_n_jobs`` and
    ``_inference_threads``. The network runs on fixed blocks of rows, each on one torch
    thread, spread over ``n_jobs`` workers
    (:func:`~sk_entmax._engine.inference.map_row_blocks`)."""

    def _tabnet_blocks(self, X: np.ndarray, compute: Callable, n_workers: int) -> list:
        """``compute(module, rows)`` of the trained network (float64: a row's masks do not
        depend on the batch, evaluation mode) on each block of rows of ``X``, in order."""
        module, device = self._inference_module(), self.net_.device

        def block(start: int, stop: int):
            return compute(module, float64_rows(X, start, stop, device))

        return map_row_blocks(block, X.shape[0], n_workers, _EXPLAIN_BLOCK)

    def _explain_encoded(self, X: np.ndarray, n_workers: int = 1):
        def block(module, rows):
            M_explain, step_masks = module.tabnet.explain(rows)
            return M_explain.double().cpu().numpy(), {
                step: M.double().cpu().numpy() for step, M in step_masks.items()
            }

        chunks, masks = [], {}
        for M_explain, step_masks in self._tabnet_blocks(X, block, n_workers):
            chunks.append(M_explain)
            for step, M in step_masks.items():
                masks.setdefault(step, []).append(M)
        return np.concatenate(chunks), {k: np.concatenate(v) for k, v in masks.items()}

    def _importances(self, X: np.ndarray) -> np.ndarray:
        # column sums only, block by block: no per-row attributions or masks are kept (a
        # fit computes them, on one thread)
        sums = self._tabnet_blocks(
            X, lambda module, rows: module.tabnet.explain(rows)[0].double().sum(0).cpu(), 1
        )
        total = np.zeros(X.shape[1])
        for block in sums:
            total += block.numpy()
        parallel = data_parallel_group()
        if parallel is not None:  # a data-parallel fit: the sums over every process's rows
            summed = torch.from_numpy(total)
            torch.distributed.all_reduce(summed, group=parallel[0])
            total = summed.numpy()
        if total.sum() <= 0:
            return np.full(X.shape[1], 1.0 / X.shape[1])
        return total / total.sum()

    def explain(self, X, normalize: bool = False):
        """Per-row feature attributions and the mask of every step, per original column.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Data to explain.
        normalize : bool, default=False
            Scale each row of ``M_explain`` to sum to 1.

        Returns
        -------
        M_explain : ndarray of shape (n_samples, n_features)
            Sum over steps of each mask weighted by that step's contribution to the decision.
        masks : dict of int to ndarray of shape (n_samples, n_features)
            The mask of each step; the sparse modes hold exact zeros. Rows sum to 1, but
            at a later step of the faithful design (the default) to at most 1: what is
            missing is the share that step read of nothing (its rest).
        """
        check_is_fitted(self)
        n_jobs = self._checked_n_jobs()
        X = self._validate_predict_data(X)
        M_explain, masks = self._explain_encoded(X, self._inference_threads(n_jobs, X))
        if normalize:
            sums = M_explain.sum(axis=1, keepdims=True)
            M_explain = np.divide(M_explain, sums, out=np.zeros_like(M_explain), where=sums > 0)
        return M_explain, masks

    def never_read(self, X) -> np.ndarray:
        """Per row, the features the prediction provably never read.

        With ``faithful_masks=True`` a feature whose mask is 0 at every step (every column
        of it: an embedding, a missing indicator) cannot change that row's
        ``predict_proba``, whatever its value; this method lists those features. Without
        it, the first step reads every feature, so nothing is certified and the result is
        all False.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Data to certify.

        Returns
        -------
        never_read : ndarray of bool, shape (n_samples, n_features)
            True where the row's prediction does not depend on the feature.
        """
        return self._blockwise(
            X, lambda module, rows: module.tabnet.never_read(rows), self.n_features_in_, bool
        )

    def _blockwise(
        self, X, compute: Callable, n_columns: int, dtype: type = np.float64
    ) -> np.ndarray:
        """``compute(module, rows)`` of the trained network (float64, evaluation mode) on the
        rows of ``X`` (validated here), block by block, as one array."""
        check_is_fitted(self)
        n_jobs = self._checked_n_jobs()
        X = self._validate_predict_data(X)
        blocks = self._tabnet_blocks(
            X,
            lambda module, rows: compute(module, rows).cpu().numpy(),
            self._inference_threads(n_jobs, X),
        )
        if not blocks:
            return np.zeros((0, n_columns), dtype=dtype)
        return np.concatenate(blocks)
