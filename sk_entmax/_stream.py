"""What ``partial_fit`` adds to a fit: the step schedule of a stream of calls, the batch size
of a call, and the average of the stream's weights that the linear models predict with.

A stream of ``partial_fit`` calls trains one Adam net, a call at a time; the rate of a call
falls with the Adam steps the stream has taken (:class:`StreamSchedule`), and a model that
averages (:class:`StreamAverage`) folds each step's weights into a weighted average, which
the estimator holds between calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

__all__ = [
    "LINEAR_SCHEDULE",
    "PLAIN_SCHEDULE",
    "STEPS_PER_CALL",
    "StreamAverage",
    "StreamSchedule",
    "average_weight",
    "stream_batch_size",
    "stream_steps",
]

#: Adam steps of one partial_fit call with batch_size="auto" (fewer for chunks of fewer
#: rows: one per row). With ``batch_size="auto"`` a call takes about this many steps whatever
#: the chunk's size, in batches of ``len(chunk) // 32`` rows (at least 1), so that one call
#: makes real progress on its chunk: a chunk of 200 rows or fewer used to be one batch, one
#: step at ``lr``. Measured with the closed study bench_partial_fit.py
#: (doc/benchmarks/studies.md; means of 3 to 5 seeds): 32
#: steps give 0.945 accuracy after one call on wine and end a stream of 10 chunks of 20,000
#: rows 0.2 to 0.4 points below the full-batch fit; 64 steps 0.98 and 0.3 to 0.5 points; 128
#: steps (batches of at most 200 rows) 0.99 and 0.4 to 1.0 points, 512 steps 1.0 to 2.0
#: points: at Adam's constant ``lr``, smaller batches leave a noisier final iterate.
STEPS_PER_CALL = 32


@dataclass(frozen=True)
class StreamSchedule:
    """The step schedule of ``partial_fit`` (issue 60.7): a call that starts after ``t``
    steps of the stream trains at ``scale * lr / (1 + t / 32) ** power``, 32 being the Adam
    steps of one call with ``batch_size="auto"`` (:data:`STEPS_PER_CALL`), so the k-th
    call of a stream from scratch trains at about ``scale * lr / k ** power``.

    As ``SGDClassifier.partial_fit`` decays its step with the samples seen (one sample, one
    step), the rate falls with the stream's Adam steps (a batch of rows, one step; with an
    int ``batch_size``, ``t`` is the rows seen over ``batch_size``). A stream that starts
    from trained weights (after ``fit``, or a loaded model: Adam's count starts at 0 on
    weights already fitted) joins the schedule at :meth:`join`, where its rate is ``lr``,
    so that its first call refines the fit instead of throwing it away at ``scale * lr``.

    Parameters
    ----------
    scale : float
        The first rate of a stream from scratch, in units of ``lr`` (at least 1).
    power : float
        How fast the rate falls with the steps (positive).
    """

    scale: float
    power: float

    def lr(self, lr: float, steps: int) -> float:
        """The rate of a call that starts after ``steps`` steps of the stream."""
        return self.scale * lr / (1.0 + steps / STEPS_PER_CALL) ** self.power

    def join(self) -> int:
        """The steps after which the rate is ``lr``, where a stream from trained weights
        starts (0 for ``scale=1``)."""
        return round(STEPS_PER_CALL * (self.scale ** (1.0 / self.power) - 1.0))


#: the linear models' schedule: ``30 * lr / (1 + t / 32) ** 1.5``, the k-th call at about
#: ``30 * lr / k ** 1.5``, at ``lr`` after about 8.7 calls (where a stream from trained
#: weights joins). A large first rate moves the weights far, fast: a 20-class linear rule
#: without label noise needs weights ten times those a rate of ``lr`` reaches in three
#: passes; a decay faster than ``1 / t`` then settles the last iterate, which predicts.
#: Measured with benchmarks/bench_partial_fit_passes.py (3 plain passes over 15 blocks of
#: 20,000 rows; doc/benchmarks/bench_partial_fit_passes.md): on the rule, seed 0, 0.24
#: points short of the in-memory fit, against 1.58 at ``lr / (1 + t / 32)``, 0.47 at
#: ``scale=30, power=1.25``, 0.39 at ``power=2``, 0.07 at ``scale=100`` (a first rate of 1).
LINEAR_SCHEDULE = StreamSchedule(scale=30.0, power=1.5)

#: the schedule of the other models (TabNet, the linear models with hidden layers), as
#: before issue 60.7: ``lr / (1 + t / 32)``, the k-th call at about ``lr / k``
PLAIN_SCHEDULE = StreamSchedule(scale=1.0, power=1.0)


def stream_steps(net: Any) -> int:
    """The Adam steps a stream's net has taken (its optimizer's count; 0 for a new net)."""
    optimizer = getattr(net, "optimizer_", None)
    if not isinstance(optimizer, torch.optim.Adam):
        return 0
    steps = [state["step"] for state in optimizer.state.values() if "step" in state]
    return int(max(steps)) if steps else 0


def average_weight(step: int) -> float:
    """The weight in a stream's average of its weights of the iterate after Adam step
    ``step`` (counted over the optimizer's steps, from 1; issue 60.7, see
    :class:`StreamAverage`): ``step`` itself, so that the average leans on the later
    iterates, nearer the optimum (polynomial-decay averaging, Shamir and Zhang, 2013)."""
    return float(step)


class StreamAverage:
    """The average of a stream's weights over its Adam steps, and the running weights.

    ``partial_fit`` trains the running weights (the iterate) and, after each Adam step,
    folds them into a weighted average (Polyak-Ruppert averaging, as scikit-learn's
    ``SGDClassifier(average=True)``): the iterate after step ``t`` weighs
    :func:`average_weight` ``(t)``. The network the estimator holds between calls has the
    averaged weights (what ``predict_proba``, ``coef_``, save and export see); this object
    keeps the running weights and the weights' total, for the next call. It is replaced,
    never changed, by each call (:meth:`train`), so a call that fails leaves the previous
    one in place.

    Parameters
    ----------
    iterate : dict of str to torch.Tensor
        The running weights (the module's floating-point parameters), by name.
    average : dict of str to torch.Tensor
        Their weighted average over the steps so far.
    total : float
        The sum of the steps' weights.
    """

    def __init__(
        self, iterate: dict[str, torch.Tensor], average: dict[str, torch.Tensor], total: float
    ):
        self.iterate = iterate
        self.average = average
        self.total = total

    @staticmethod
    def _parameters(module: torch.nn.Module) -> dict[str, torch.Tensor]:
        return {name: p for name, p in module.named_parameters() if p.is_floating_point()}

    @classmethod
    def train(
        cls, previous: StreamAverage | None, net: Any, steps: int, run: Any
    ) -> StreamAverage:
        """Run ``run()`` (one training call of ``net``, after ``steps`` steps of the
        stream's schedule) from the running weights of ``previous``, folding each Adam step
        into the average; leaves the averaged weights in ``net.module_`` and returns the new
        state. ``previous`` None starts a new average from the module's weights: with the
        weight of the ``steps`` steps before (none from scratch; a stream that joins the
        schedule from trained weights, :meth:`StreamSchedule.join`, counts them as the average of
        those steps, so that one call does not outweigh the fit). If ``run`` raises, the
        module is left with the running weights (the caller's checkpoint puts it back)."""
        params = cls._parameters(net.module_)
        with torch.no_grad():
            if previous is not None:
                for name, p in params.items():
                    p.copy_(previous.iterate[name])
                average = {k: v.clone() for k, v in previous.average.items()}
                total = previous.total
            else:
                average = {name: p.detach().clone() for name, p in params.items()}
                total = steps * (steps + 1) / 2.0  # average_weight(t) = t summed to steps
        state = cls({}, average, total)
        count = [steps]

        def fold(optimizer: Any, args: Any, kwargs: Any) -> None:
            count[0] += 1
            weight = average_weight(count[0])
            state.total += weight
            share = weight / state.total
            with torch.no_grad():
                for name, p in params.items():
                    state.average[name].lerp_(p.detach(), share)

        handle = net.optimizer_.register_step_post_hook(fold)
        try:
            run()
        finally:
            handle.remove()
        with torch.no_grad():
            state.iterate = {name: p.detach().clone() for name, p in params.items()}
            for name, p in params.items():
                p.copy_(state.average[name])
        return state


def stream_batch_size(batch_size: Any, n_samples: int) -> int:
    """The batch size of a partial_fit call on ``n_samples`` rows: ``batch_size`` if an int
    (at most the chunk), else rows for about :data:`STEPS_PER_CALL` steps (at least 1)."""
    if batch_size != "auto":
        return min(batch_size, n_samples)
    return max(1, n_samples // STEPS_PER_CALL)
