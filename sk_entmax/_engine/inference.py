"""The trained network at predict time: a float64 copy, rows in blocks, the scores, and the
workers they take (``n_jobs``, checked as fit checks it, and the fitted network's sizes).

The blocks of rows are fixed by the data alone (:data:`SCORE_ROWS` rows each) and each is
computed on one torch thread, by a pool of ``n_jobs`` worker threads that take the blocks as
they come (the caller's thread alone when there is one worker or one block). So a prediction
is the same at every ``n_jobs``, and a core kept busy by another process slows only the
blocks its worker holds: torch's own threads wait for each other at every operation, so one
descheduled thread stalls them all (``predict_proba`` of 50,000 TabNet rows on a loaded
2-core machine took 2.4 s at two torch threads against 1.5 s at one).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch
from sklearn.utils.validation import check_is_fitted

from sk_entmax._engine.net import float64_rows
from sk_entmax._engine.threads import TRAINING_THREADS, torch_threads

__all__ = ["PROBA_ROWS", "SCORE_ROWS", "TrainedNetMixin", "map_row_blocks"]

#: rows per block when mapping scores to probabilities
PROBA_ROWS = 65536
#: rows per block when running the network on rows to predict: the unit of work of the
#: pool's workers (so large data is spread over them), large enough that a block's
#: operations outweigh their Python overhead
SCORE_ROWS = 8192


def map_row_blocks(
    compute: Callable[[int, int], Any], n_rows: int, n_workers: int, rows: int = SCORE_ROWS
) -> list[Any]:
    """``[compute(start, stop) for each block of rows]``, in the blocks' order, each block
    computed on one torch thread by one of ``n_workers`` threads.

    The blocks (``rows`` rows each, the last one shorter) depend on ``n_rows`` alone, so the
    results do not depend on ``n_workers``. The pool's threads end with the call; the
    caller's torch thread count is restored (a worker's setting of one thread reaches
    libraries whose count is process-wide).

    Parameters
    ----------
    compute : callable
        ``compute(start, stop)`` computes the block of rows ``start:stop``; it runs under
        ``torch.no_grad()``.
    n_rows : int
        The number of rows.
    n_workers : int
        Threads that compute the blocks (at least 1).
    rows : int, default=SCORE_ROWS
        Rows per block.

    Returns
    -------
    list
        What ``compute`` returned for each block, in the rows' order.
    """
    starts = range(0, n_rows, rows)

    def one(start: int) -> Any:
        torch.set_num_threads(TRAINING_THREADS)  # torch keeps the count per thread
        with torch.no_grad():
            return compute(start, min(start + rows, n_rows))

    workers = min(int(n_workers), len(starts))
    with torch_threads(TRAINING_THREADS):
        if workers <= 1:
            return [one(start) for start in starts]
        # the pool's threads end with the call: a prediction leaves no thread behind
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(one, starts))


class TrainedNetMixin:
    """The fitted network's float64 scores, block by block, for every estimator; needs
    ``net_`` and the estimator's ``_checked``, ``_validate_predict_data``, ``_n_threads`` and
    ``_n_outputs``."""

    @property
    def device_(self) -> str:
        """The torch device the fitted network is on.

        The one ``device`` resolved to (``"auto"`` records ``"cuda"`` or ``"cpu"``), or the
        one :func:`~sk_entmax.persistence.load` put it on; ``AttributeError`` before fit.
        """
        net = self.__dict__.get("net_")
        if net is None:
            raise AttributeError(f"{type(self).__name__} has no device_ before it is fitted")
        return str(next(net.module_.parameters()).device)

    def _checked_n_jobs(self) -> int | None:
        """``n_jobs``, checked against the constraint table: the one parameter a method after
        fit reads (an invalid value raises the message fit gives)."""
        return self._checked("n_jobs")["n_jobs"]

    def _inference_threads(self, n_jobs: int | None, X) -> int:
        """torch threads for running the fitted network on ``X`` (validated) at the checked
        ``n_jobs``: the work is the fitted network's, whatever sizes were set since fit.

        Capped at the available cores by :func:`~sk_entmax._engine.threads.resolve_n_jobs`, which
        warns when ``n_jobs`` asks for more: each public method resolves its count once (and
        ``predict_proba`` reuses the count of :meth:`_scores`), so it warns once per call."""
        sizes = self.net_.get_params_for("module")
        return self._n_threads(n_jobs, sizes, X.shape[0], X.shape[1], self._n_outputs())

    def _inference_module(self) -> torch.nn.Module:
        """A float64, eval-mode copy of the trained module, for predictions and explanations.

        Float64 makes a row's output independent of the other rows in its batch at any thread
        count: float32 matrix products take kernels (and summation orders) that depend on the
        number of rows, which moves a probability by ~1e-7. The copy leaves the fitted module
        (its dtype and its train/eval mode) untouched, so concurrent predictions are safe.
        """
        return copy.deepcopy(self.net_.module_).to(torch.float64).eval()

    def _network_scores(self, module: torch.nn.Module, X, n_workers: int = 1) -> torch.Tensor:
        """The scores ``module`` gives the (validated) rows of ``X``, block by block, on
        ``n_workers`` threads (:func:`map_row_blocks`)."""
        device = self.net_.device

        def block(start: int, stop: int) -> torch.Tensor:
            output = module(X=float64_rows(X, start, stop, device))
            return output[0] if isinstance(output, tuple) else output

        blocks = map_row_blocks(block, X.shape[0], n_workers)
        return torch.cat(blocks) if blocks else torch.zeros(0, self._n_outputs())

    def _scores(self, X, with_threads: bool = False):
        """Float64 scores of ``X`` (validated here), block by block; with ``with_threads``
        also the number of workers they were computed by, for the mapping to reuse.

        The network runs directly on blocks of rows, without a DataLoader, so predicting
        draws nothing from torch's global random generator.
        """
        check_is_fitted(self)
        n_jobs = self._checked_n_jobs()
        X = self._validate_predict_data(X)
        n_threads = self._inference_threads(n_jobs, X)
        scores = self._network_scores(self._inference_module(), X, n_threads)
        finite = torch.isfinite(scores).all(dim=1)
        if not bool(finite.all()):
            rows = torch.nonzero(~finite)[:, 0].tolist()
            raise ValueError(
                f"the network's scores overflow for {len(rows)} row(s) of X (the "
                f"first: row {rows[0]}); X holds values too large for this model (largest "
                f"|X| = {float(abs(X[rows[0]]).max()):g}): scale the features as at fit"
            )
        return (scores, n_threads) if with_threads else scores
