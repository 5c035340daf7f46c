"""The trained network at predict time: a float64 copy, rows in blocks, the scores, and the
torch threads they take (``n_jobs``, checked as fit checks it, and the fitted network's
sizes)."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import torch
from sklearn.utils.validation import check_is_fitted

from sk_entmax._engine.net import float64_rows
from sk_entmax._engine.threads import torch_threads

__all__ = ["PROBA_ROWS", "TrainedNetMixin"]

#: rows per block when scoring (and mapping scores to probabilities)
PROBA_ROWS = 65536


class TrainedNetMixin:
    """The fitted network's float64 scores, block by block, for every estimator; needs
    ``net_`` and the estimator's ``_checked``, ``_validate_predict_data``, ``_n_threads`` and
    ``_n_outputs``."""

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

    def _row_blocks(self, X, rows: int = PROBA_ROWS) -> Iterator[torch.Tensor]:
        """``X`` in float64 blocks of ``rows`` rows on the net's device (sparse made dense)."""
        for start in range(0, X.shape[0], rows):
            yield float64_rows(X, start, start + rows, self.net_.device)

    def _network_scores(self, module: torch.nn.Module, X) -> torch.Tensor:
        """The scores ``module`` gives the (validated) rows of ``X``, block by block."""
        blocks = []
        with torch.no_grad():
            for block in self._row_blocks(X):
                output = module(X=block)
                blocks.append(output[0] if isinstance(output, tuple) else output)
        return torch.cat(blocks) if blocks else torch.zeros(0, self._n_outputs())

    def _scores(self, X, with_threads: bool = False):
        """Float64 scores of ``X`` (validated here), block by block; with ``with_threads``
        also the torch thread count they were computed at, for the mapping to reuse.

        The network runs directly on blocks of rows, without a DataLoader, so predicting
        draws nothing from torch's global random generator.
        """
        check_is_fitted(self)
        n_jobs = self._checked_n_jobs()
        X = self._validate_predict_data(X)
        n_threads = self._inference_threads(n_jobs, X)
        with torch_threads(n_threads):
            scores = self._network_scores(self._inference_module(), X)
        finite = torch.isfinite(scores).all(dim=1)
        if not bool(finite.all()):
            rows = torch.nonzero(~finite)[:, 0].tolist()
            raise ValueError(
                f"the network's scores overflow for {len(rows)} row(s) of X (the "
                f"first: row {rows[0]}); X holds values too large for this model (largest "
                f"|X| = {float(abs(X[rows[0]]).max()):g}): scale the features as at fit"
            )
        return (scores, n_threads) if with_threads else scores
