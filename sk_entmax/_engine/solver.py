"""The full-batch solver: L-BFGS on the exact objective, in blocks of rows, through skorch.

The linear estimators minimise a convex objective, the Fenchel-Young loss of their mapping
summed over the (weighted) rows plus an L2 penalty on the weights,

    f(W, b) = (1 / sum_i w_i) * [ sum_i w_i L(W x_i + b, y_i) + ||W||^2 / (2 C) ],

which is LogisticRegression's objective (divided by the total weight) when alpha = 1. A
quasi-Newton method with a strong-Wolfe line search reaches its optimum in tens of full
passes, where mini-batch Adam needs hundreds of epochs and stops short.

:class:`LbfgsNet` plugs that into skorch through documented extension points only:

- ``optimizer=Lbfgs`` (:mod:`sk_entmax._engine.lbfgs`, torch's method without building a
  ``torch.optim`` optimizer, which imports torch's compiler stack; its settings routed as
  ``optimizer__*``);
- ``iterator_train=FullBatch``, an iterator whose single "batch" is the whole training set,
  uncopied, so that one skorch epoch is one L-BFGS run;
- ``train_step``, which hands L-BFGS a closure evaluating f and its gradient block by block
  (``_FIT_ROWS`` rows at a time), so neither a copy of ``X`` nor an ``n x n_classes``
  temporary beyond a few blocks is ever made;
- ``initialize_module``, which makes the module float64: the line search compares objective
  values that differ in their eighth digit near the optimum.

The fit does not depend on the thread count. Each block is evaluated with one torch thread,
by ``n_workers`` threads of a pool that take the blocks as they come, and the blocks' values
and gradients are added in the blocks' order; the blocks' bounds depend on the data alone.
So the same data and seed give a bit-identical model at any ``n_jobs``, and a busy core
slows only the blocks its worker holds (torch's own threads wait for each other at every
operation, so one descheduled thread stalls them all).
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

from sk_entmax._engine.lbfgs import Lbfgs
from sk_entmax._engine.net import FenchelYoungNet, NonFiniteLossError, float64_rows

__all__ = ["FullBatch", "LbfgsNet", "lbfgs_options", "lbfgs_state"]

#: rows per block when the objective is evaluated: the block's float64 copy and its score
#: matrix are the only per-row temporaries (one block per worker at a time); the bounds of
#: the blocks, and so the order of the sums, never depend on the thread count
_FIT_ROWS = 65536
#: at most this many scores (rows times classes) per block, so that many classes make the
#: blocks shorter instead of their float64 matrices larger: 65,536 rows of up to 64
#: classes (32 MiB a matrix); 20,000 classes asked for 10.5 GB in blocks of 65,536 rows
_FIT_SCORES = _FIT_ROWS * 64


def _block_rows(
    n_outputs: int | None, *, max_rows: int = _FIT_ROWS, max_scores: int = _FIT_SCORES
) -> int:
    """Rows per block of the objective for a network of ``n_outputs`` outputs: fixed by the
    network, never by the thread count; at most ``max_rows`` rows and ``max_scores`` scores
    (rows times outputs)."""
    if not n_outputs or n_outputs <= 0:
        return max_rows
    return max(1, min(max_rows, max_scores // int(n_outputs)))


_WORKER = threading.local()


def _one_torch_thread() -> None:
    """Give the calling pool thread one torch thread (torch keeps the count per thread)."""
    if not getattr(_WORKER, "single", False):
        torch.set_num_threads(1)
        _WORKER.single = True


class FullBatch:
    """A training "iterator" that yields the whole dataset once, as it is (no copy).

    skorch builds ``iterator_train(dataset, **iterator_train__kwargs)``; the keyword
    arguments meant for a DataLoader (batch size, shuffling, ...) are accepted and unused.
    """

    def __init__(self, dataset: Any, **kwargs: Any) -> None:
        self.dataset = dataset

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        yield self.dataset.X, self.dataset.y

    def __len__(self) -> int:
        return 1


class LbfgsNet(FenchelYoungNet):
    """A :class:`FenchelYoungNet` trained by full-batch L-BFGS (one skorch epoch = one run).

    Parameters
    ----------
    *args, **kwargs
        As for :class:`FenchelYoungNet`; ``optimizer`` should be
        :class:`~sk_entmax._engine.lbfgs.Lbfgs`.
    n_workers : int, default=1
        Threads that evaluate the objective's blocks, each with one torch thread. The fit is
        the same, bit for bit, for every value.
    """

    def __init__(self, *args: Any, n_workers: int = 1, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.n_workers = n_workers
        self._pool: ThreadPoolExecutor | None = None

    def initialize_module(self):
        super().initialize_module()
        self.module_.to(torch.float64)
        return self

    def objective(
        self,
        X: dict[str, Any],
        y: np.ndarray,
        *,
        backward: bool,
        max_rows: int = _FIT_ROWS,
        max_scores: int = _FIT_SCORES,
    ) -> torch.Tensor:
        """f at the current weights, summed block by block; gradients accumulate if asked.

        Parameters
        ----------
        X : dict
            The training data as the net's dataset holds it: ``"X"`` and, for unequal
            weights, ``"sample_weight"``.
        y : ndarray
            Encoded targets (class indices or label proportions).
        backward : bool
            Accumulate the gradient of f into the parameters' ``.grad``.
        max_rows, max_scores : int, default=_FIT_ROWS, _FIT_SCORES
            The blocks' bounds, in rows and in scores (see :meth:`_block_rows`).

        Returns
        -------
        torch.Tensor
            The objective, a float64 scalar (detached).
        """
        data, weight = X["X"], X.get("sample_weight")
        n = data.shape[0]
        total_weight = float(n if weight is None else np.sum(weight, dtype=np.float64))
        device = self.device
        target_dtype = torch.long if y.dtype.kind in "iu" else torch.float64
        # at a fixed alpha the loss and its gradient in the scores come in closed form, and
        # autograd only carries that gradient back through the layers; a learned alpha
        # needs the loss's own graph for its gradient
        closed_form = not isinstance(self.module_.alpha, torch.Tensor)
        params = [p for p in self.module_.parameters() if p.requires_grad]

        rows = self._block_rows(max_rows=max_rows, max_scores=max_scores)

        def block(start: int) -> tuple[torch.Tensor, tuple]:
            if self._pool is not None:
                _one_torch_thread()
            stop = min(start + rows, n)
            # without a gradient to compute, no autograd graph is built
            with torch.set_grad_enabled(backward):
                # the layers only read the block, so a float64 X is not copied
                scores = self.module_(X=float64_rows(data, start, stop, device, share=True))
                target = torch.as_tensor(y[start:stop], device=device).to(target_dtype)
                w = None if weight is None else float64_rows(weight, start, stop, device)
                if closed_form:
                    losses, grad = self.module_.loss_and_grad(scores.detach(), target)
                else:
                    losses = self.module_.loss(scores, target)
                part = (losses.sum() if w is None else losses @ w) / total_weight
                grads: tuple = ()
                if backward and closed_form:
                    grad = (
                        grad.div_(total_weight)
                        if w is None
                        else grad.mul_((w / total_weight).unsqueeze(-1))
                    )
                    # <scores, grad> has the gradient grad in the scores, bit for bit; a
                    # scalar output spares autograd's shape check of a grad_outputs tensor,
                    # whose first run imports sympy (half a second of the first fit)
                    grads = torch.autograd.grad(
                        torch.vdot(scores.reshape(-1), grad.reshape(-1)), params, allow_unused=True
                    )
                elif backward:
                    grads = torch.autograd.grad(part, params, allow_unused=True)
            return part.detach(), grads

        starts = range(0, n, rows)
        if self._pool is not None and len(starts) > 1:
            parts = list(self._pool.map(block, starts))
        else:
            parts = [block(start) for start in starts]
        # the blocks' values and gradients added in the blocks' order, whoever computed them
        value = torch.zeros((), dtype=torch.float64, device=device)
        totals: list[torch.Tensor | None] = [None] * len(params)
        for part, grads in parts:
            value += part
            for i, g in enumerate(grads):
                if g is not None:
                    totals[i] = g if totals[i] is None else totals[i].add_(g)
        if backward:
            for p, total in zip(params, totals, strict=True):
                if total is not None:
                    p.grad = total if p.grad is None else p.grad.add_(total)
        penalty = self.penalty_term(total_weight)
        if penalty is not None:
            value += penalty.detach()
            if backward:
                # the penalty's gradient l2 * W / total_weight, by hand (no autograd call)
                scale = self.l2 / total_weight
                for p in self.module_.penalized_parameters():
                    p.grad = (
                        scale * p.detach()
                        if p.grad is None
                        else p.grad.add_(p.detach(), alpha=scale)
                    )
        return value

    def _block_rows(self, *, max_rows: int = _FIT_ROWS, max_scores: int = _FIT_SCORES) -> int:
        """Rows per block of the objective, by the network's outputs: at most ``max_rows``
        rows and ``max_scores`` scores (:data:`_FIT_ROWS`, :data:`_FIT_SCORES`)."""
        n_outputs = getattr(self, "module__n_outputs", None)
        return _block_rows(n_outputs, max_rows=max_rows, max_scores=max_scores)

    def train_step(self, batch, **fit_params):
        X, y = batch
        self.module_.train()
        optimizer = self.optimizer_
        params = [p for p in self.module_.parameters() if p.requires_grad]
        last: dict[str, Any] = {}

        def closure() -> torch.Tensor:
            optimizer.zero_grad()
            value = self.objective(X, y, backward=True)
            if not bool(torch.isfinite(value)):
                # L-BFGS's line search cannot recover from a non-finite value (torch's fails
                # with an IndexError): stop here with the error the mini-batch path gives
                n_iter, _ = lbfgs_state(optimizer)
                raise NonFiniteLossError(
                    f"the training objective became {float(value)} in L-BFGS iteration "
                    f"{n_iter + 1}: training diverged and was stopped. Scale the features "
                    "(e.g. StandardScaler), lower C, or look for extreme values in X"
                )
            last.update(
                point=[p.detach().clone() for p in params], value=value, grad_max=_grad_max(params)
            )
            if self.verbose:  # verbose=1: a plain line per evaluation of the objective
                n_iter, n_evals = lbfgs_state(optimizer)
                print(
                    f"L-BFGS iteration {n_iter}, evaluation {n_evals + 1}: objective "
                    f"{float(value):.8g}, largest gradient entry {last['grad_max']:.3g} "
                    f"(tol {self.optimizer__tolerance_grad:g})",
                    flush=True,
                )
            return value

        n_blocks = -(-len(y) // self._block_rows())
        workers = min(int(self.n_workers), n_blocks)
        # the pool's threads end with the step: a fit leaves no thread behind
        with ThreadPoolExecutor(workers) if workers > 1 else contextlib.nullcontext() as pool:
            self._pool = pool
            try:
                optimizer.step(closure)
            finally:
                self._pool = None
        # whether L-BFGS converged is read from the largest gradient entry where it stopped
        # (recorded in the history as "grad_max"); the line search usually ends on the
        # point it evaluated last, and otherwise the objective is evaluated there once more
        if not (last and all(map(torch.equal, params, last["point"]))):
            optimizer.zero_grad()
            last.update(value=self.objective(X, y, backward=True), grad_max=_grad_max(params))
        optimizer.zero_grad()
        self.history.record_batch("grad_max", last["grad_max"])
        return {"loss": last["value"], "y_pred": None}


def _grad_max(params: list[torch.Tensor]) -> float:
    """The largest absolute gradient entry over ``params`` (0 without gradients)."""
    grads = [p.grad.abs().max() for p in params if p.grad is not None and p.grad.numel()]
    return float(torch.stack(grads).max()) if grads else 0.0


def lbfgs_state(optimizer: Lbfgs) -> tuple[int, int]:
    """``(iterations, function evaluations)`` that an L-BFGS optimizer has run so far."""
    return int(optimizer.state["n_iter"]), int(optimizer.state["func_evals"])


def lbfgs_options(max_iter: int, tol: float) -> dict[str, Any]:
    """skorch's ``optimizer__*`` settings of L-BFGS for ``max_iter`` and ``tol``.

    ``tol`` bounds the largest gradient entry of f (scipy's and scikit-learn's ``gtol``);
    a run also stops when f changes by less than 64 float64 epsilons (their ``ftol``).
    """
    return {
        "optimizer": Lbfgs,
        "lr": 1.0,
        "optimizer__max_iter": max_iter,
        "optimizer__max_eval": max(2 * max_iter, max_iter + 25),
        "optimizer__tolerance_grad": tol,
        "optimizer__tolerance_change": 64 * float(np.finfo(np.float64).eps),
        "optimizer__history_size": 10,
        "optimizer__line_search_fn": "strong_wolfe",
    }


def check_lbfgs_outcome(net: LbfgsNet) -> int:
    """The L-BFGS iterations a fit ran (its ``n_iter_``); warns when the fit was interrupted,
    or when the solver stopped on its iteration or evaluation budget short of ``tol``."""
    n_iter, n_evals = lbfgs_state(net.optimizer_)
    history = net.history
    if not history or "train_loss" not in history[-1]:
        warnings.warn(
            f"fit was interrupted (KeyboardInterrupt) after {n_iter} L-BFGS iterations; "
            "the model keeps the weights reached so far",
            UserWarning,
            stacklevel=4,  # check_lbfgs_outcome <- _train <- fit <- the caller
        )
        return n_iter
    max_iter, tol = net.optimizer__max_iter, net.optimizer__tolerance_grad
    grad_max = history[-1, "batches", -1, "grad_max"]
    if n_iter >= max_iter or grad_max > tol:
        reached = (
            f"max_iter={max_iter}"
            if n_iter >= max_iter
            else f"iteration {n_iter} ({n_evals} evaluations; the line search made no "
            "more progress)"
        )
        warnings.warn(
            f"L-BFGS stopped at {reached} with the largest gradient entry at "
            f"{grad_max:.3g}, above tol={tol:g}: the fit has not converged. Increase "
            "max_iter, scale the features (e.g. StandardScaler), or lower C",
            ConvergenceWarning,
            stacklevel=4,
        )
    return n_iter
