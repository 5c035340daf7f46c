"""Which columns a faithful TabNet reads: the bookkeeping of its backward elimination.

A faithful TabNet whose mask design has a ``budget`` reads only the
columns of its *support*. During the warm-up every column is in it; from
``SELECTION_START`` of the warm-up on, each training step also runs the network, without
gradients, on held-out rows (below; else on the batch's first ``PROBE_ROWS`` rows) with
some of the supported columns *occluded* (set to their batch-norm mean, 0, as pretraining
hides a column), and the rise of the task's loss over the same rows unoccluded is one
sample of that column's contribution.
:class:`BackwardElimination` keeps those samples and decides:

- when every supported column has ``SAMPLES`` samples, a column whose contribution is
  below the remaining budget *with confidence* (its mean plus two standard errors) is a
  candidate; the lowest one is dropped;
- several candidates are first tested together (occluded at once, ``SAMPLES`` steps): if
  their joint contribution is also below the budget they go together, else the lower half
  is tested, down to fewer than four, after which only the lowest goes. A column that is
  redundant with another (both low alone, the pair not) is so kept;
- the budget starts, at the first decision, as the design's ``budget`` times the larger of
  the mean loss so far and ``NULL_SHARE`` times the mean loss of reading nothing (the
  floor matters when the model already fits its batches almost perfectly), and each drop
  spends the mean contribution of what it dropped: the columns dropped in all cost about
  that share of the training loss at most.

After a drop the samples start afresh (the network has changed). Nothing here is random
and nothing depends on timing: the same batches give the same support.

Occlusion measures what a column is worth to the model *as it is*; a column the network
has not yet learned to read is worth nothing by it, however much the label depends on it.
So a drop first asks the network which of its columns the residual still depends on
(``needed``, the test of ``sk_entmax.nn.tabnet_residual`` at ``RESIDUAL_LEVEL``): those are
kept, for good, and the others go. At the warm-up's last step the network tests the
dropped columns once more and brings back those the residual depends on (on a
wide table with a 5% class, four of six informative columns had been dropped at a third of
the warm-up, before the network had learned them, and the fit predicted one class).

The estimators' budget is small (``SELECTION_BUDGET``, 3% of the loss): a budget of 30%
dropped the whole of a weak signal (a product of two features worth about a tenth of the
loss) or of one that the network had not yet learned when it was measured.

The elimination also names the columns of the *first decision step* (:meth:`leading`): the
columns the *typical* row needs. Each single probe also gives the median over its rows of
the rise of a row's loss (its *typical* rise); the first step reads the columns whose
typical rise is at least ``FIRST_STEP_SHARE`` (half) of the largest. A column that only
some of the rows need (one branch of a switch, a feature only a rare class uses) has a
median rise near 0, however much it is worth to those rows, so it is left to the later
steps, which read it for those rows only; a column's mean contribution, which the
elimination weighs, is the share of rows that need it times what it is worth to them,
and ranked by it such a column took the first step for every row (on the
switch2 family, a first step of the switch and one branch's feature gave every row of the
other branch a false read). When no column's typical rise is above 0 the mean
contributions choose as before. From ``FIRST_STEP_AT`` (40%) of the warm-up
on, the first step leaves the other kept columns to the later steps, over
``FIRST_STEP_RAMP`` (20%) of it and a growing share of the training rows at a time, so that
the network learns to read them later (narrowed at once, the shock raised the held-out loss
by half and set off the check below); the later steps choose per row among them, which
makes the certificate per row.

The probes run on the rows a fit holds out of training (:class:`HeldOutRows`). Fewer than
``HELD_OUT_MIN`` held-out rows are too few to rank columns on: the probes then run on the
batch, and the rows serve the check below only (without a check, the narrowing of a 258-row
penguins fit left it 0.90 test accuracy, against 0.98 on the other seeds). At the end of
the warm-up a check (:meth:`BackwardElimination.loss_rise`) pairs each held-out row of the
first ``SAMPLES`` steps (before any drop) with itself: its loss then, and its loss measured
again over the last ``SAMPLES`` steps. After a mean rise of more than two standard errors
(the rows'), if the loss had not risen when the first step began to narrow
(:meth:`BackwardElimination.drops_cost`, the same rows measured over the steps before),
only the narrowing is undone, else every column goes back (:class:`SelectionCheck`).

The bookkeeping only: :mod:`sk_entmax.nn.tabnet_selection` runs the probes for
:class:`~sk_entmax.nn.tabnet.TabNet`, which owns the support (its ``first_mask_logits``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FIRST_STEP_AT",
    "FIRST_STEP_RAMP",
    "FIRST_STEP_SHARE",
    "HELD_OUT_MIN",
    "HELD_OUT_PROBE_ROWS",
    "HELD_OUT_SHARE",
    "NULL_SHARE",
    "PROBES_PER_STEP",
    "PROBE_ROWS",
    "RESIDUAL_LEVEL",
    "RESIDUAL_ROWS",
    "SAMPLES",
    "SELECTION_BUDGET",
    "SELECTION_START",
    "BackwardElimination",
    "HeldOutRows",
    "Probe",
    "SelectionCheck",
]

#: the estimators' design's ``budget``: the share of the training loss the dropped columns
#: may cost in all
SELECTION_BUDGET = 0.03
#: the share of the warm-up that trains on every column before the first probe
SELECTION_START = 0.3
#: the share of the warm-up after which the first decision step starts to narrow onto its
#: own columns
FIRST_STEP_AT = 0.4
#: the share of the warm-up over which the first step narrows, a growing share of each
#: batch's rows at a time; the rest of the warm-up lets the network settle before the check
FIRST_STEP_RAMP = 0.2
#: the estimators' ``first_step_share``: the first decision step reads the columns whose
#: measured contribution is at least this share of the largest
FIRST_STEP_SHARE = 0.5
#: single columns occluded per training step
PROBES_PER_STEP = 3
#: rows of the batch a probe runs on (the first ones)
PROBE_ROWS = 128
#: samples per column (or per tested group) before a decision
SAMPLES = 8
#: the budget's floor, as a share of the design's ``budget`` times the loss of reading nothing
NULL_SHARE = 0.15
#: the smallest group tested together; below it the lowest candidate goes alone
_SMALLEST_GROUP = 4
#: the share of its training rows an estimator's fit holds out of training while the
#: selection runs (they are given back when the warm-up ends): the probes run on them
HELD_OUT_SHARE = 0.2
#: below this many held-out rows the probes run on the batch's first rows instead
HELD_OUT_MIN = 64
#: held-out rows a probe runs on (the next ones in turn)
HELD_OUT_PROBE_ROWS = 256
#: the family-wise level of the residual test (``sk_entmax.nn.tabnet_residual``) that keeps
#: a column the elimination would drop, or brings a dropped one back, when the
#: residual still depends on it (Bonferroni over the columns tested at once)
RESIDUAL_LEVEL = 0.01
#: rows the residual test runs on, at most (of all the fit's rows: see
#: :meth:`~sk_entmax.nn.TabNet.test_residuals_on`)
RESIDUAL_ROWS = 4096


@dataclass(frozen=True)
class SelectionCheck:
    """The check at the end of a faithful fit's warm-up, when it put columns back.

    Attributes
    ----------
    first_loss, latest_loss : float
        The held-out rows' mean loss when the selection began (every column read) and at
        its end; the second is higher by more than two standard errors.
    restored : tuple of int
        The original columns put back: those the selection had dropped, or left out of the
        first step.
    first_step_only : bool
        True when the held-out loss had not risen before the first step was narrowed: the
        narrowing cost the model, the drops did not, so only the first step was undone
        (``restored`` is what it had left to the later steps) and the dropped columns stay
        out.
    """

    first_loss: float
    latest_loss: float
    restored: tuple[int, ...]
    first_step_only: bool = False


@dataclass
class HeldOutRows:
    """Rows the fit holds out of training while the selection runs, for the probes.

    Measured on rows the network trains on, a column the model has learned to overfit looks
    needed; on held-out rows it does not, and a column that matters (alone or only
    together with another) still does. The estimator zeroes these rows' weights in the
    loss and hands them here; ``give_back`` (which restores their weights) runs once, when
    the warm-up ends, so the rest of the fit trains on every row.

    Parameters
    ----------
    X, y : torch.Tensor
        The held-out rows' features (as the network takes them) and targets (as its loss
        takes them).
    give_back : callable
        Called once, with no argument, when the warm-up ends.
    weight : torch.Tensor
        Each row's weight in the probes' mean loss: for a classifier, each class's rows
        weigh alike in all (a column that only a rare class needs still shows), else 1.
    probed : bool, default=True
        Whether the probes run on these rows. False when they are fewer than
        ``HELD_OUT_MIN``, too few to rank columns on: the probes then run on the batch's
        first rows, and only the selection's check (:meth:`BackwardElimination.loss_rise`)
        measures these rows.
    """

    X: Any
    y: Any
    give_back: Callable[[], None]
    weight: Any
    probed: bool = True
    _turn: int = 0

    def next_rows(self) -> tuple[Any, Any, Any, tuple[int, ...]]:
        """The next ``HELD_OUT_PROBE_ROWS`` rows (all of them if fewer), in turn: features,
        targets, weights and their indices."""
        n = self.X.shape[0]
        size = min(HELD_OUT_PROBE_ROWS, n)
        start = (self._turn * size) % n
        self._turn += 1
        idx = tuple((start + i) % n for i in range(size))
        return (*self.rows_at(idx), idx)

    def rows_at(self, idx: tuple[int, ...]) -> tuple[Any, Any, Any]:
        """The rows of indices ``idx``: features, targets and weights."""
        rows = list(idx)
        return self.X[rows], self.y[rows], self.weight[rows]


@dataclass(frozen=True)
class Probe:
    """One occlusion to run: the original columns hidden together.

    ``kind`` is ``"single"`` (one column's sample), ``"group"`` (a tested group) or
    ``"null"`` (every supported column: the loss of reading nothing).
    """

    kind: str
    columns: tuple[int, ...]


@dataclass
class _Moments:
    """Count, sum and sum of squares of a stream of samples."""

    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    def add(self, value: float) -> None:
        self.n += 1
        self.total += value
        self.squares += value * value

    @property
    def mean(self) -> float:
        return self.total / self.n

    @property
    def variance(self) -> float:
        """The sample variance (needs two samples)."""
        mean = self.mean
        return max(self.squares / self.n - mean * mean, 0.0) * self.n / (self.n - 1)

    @property
    def upper(self) -> float:
        """The mean plus two standard errors (needs two samples)."""
        return self.mean + 2.0 * math.sqrt(self.variance / self.n)


def _paired_sums(
    first: dict[int, float], later: dict[int, float], weight: dict[int, float]
) -> list[float]:
    """The sums the paired test needs over the rows of ``first`` (a row's loss then) that
    ``later`` also holds, with ``d`` a row's rise and ``w`` its weight: ``[sum w, sum w d,
    sum w^2 d^2, sum w^2 d, sum w^2, sum w first, sum w later]``. Sums, so that several
    processes' add up."""
    sums = [0.0] * 7
    for row, before in first.items():
        if row not in later:
            continue
        w, d = weight[row], later[row] - before
        for k, value in enumerate((w, w * d, w * w * d * d, w * w * d, w * w, w * before)):
            sums[k] += value
        sums[6] += w * later[row]
    return sums


def _paired_rise(sums: list[float]) -> tuple[float, float] | None:
    """``(first mean, later mean)``, weighted, when the later losses are higher by more
    than two standard errors of the rows' mean rise (each row paired with itself: the
    rows are a sample, and a rise that only some of them show is not one the table
    would); else None. ``sums`` as :func:`_paired_sums` gives them."""
    total, rise, squares, cross, weights, first, later = sums
    if total <= 0.0:
        return None
    mean = rise / total
    spread = max(squares - 2.0 * mean * cross + mean * mean * weights, 0.0)
    if mean > 2.0 * math.sqrt(spread) / total:
        return first / total, later / total
    return None


@dataclass
class BackwardElimination:
    """The statistics and decisions of one fit's column elimination (see the module).

    Parameters
    ----------
    n_columns : int
        The original columns of the table.
    budget_share : float
        The design's ``budget``: the share of the training loss the dropped columns may cost.

    Attributes
    ----------
    alive : list of int
        The columns still supported, in order.
    budget : float or None
        What drops may still cost (loss units); None before the first decision.
    """

    n_columns: int
    budget_share: float
    alive: list[int] = field(init=False)
    budget: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.alive = list(range(self.n_columns))
        self._next = 0
        self._group: list[int] | None = None
        self._means: dict[int, float] = {}
        self.contributions: dict[int, float] = {}
        self.protected: tuple[int, ...] = ()
        #: columns a drop left in because the residual still depends on them
        #: (see :meth:`record`'s ``needed``); no later decision drops them
        self.kept: set[int] = set()
        self._needed: Callable[[list[int]], set[int]] | None = None
        #: whether :meth:`record` has been given typical rises (then :meth:`leading` waits
        #: for every supported column's)
        self._typical_given = False
        self._restart()
        self._null = _Moments()
        #: the steps of the first ``SAMPLES`` records (before any drop: every column read)
        self.first_losses = _Moments()
        #: each held-out row's mean loss over those steps, its weight, and the distinct sets
        #: of rows the steps ran on (:meth:`first_chunks`)
        self.first_rows: dict[int, float] = {}
        self.row_weights: dict[int, float] = {}
        self._first_counts: dict[int, int] = {}
        self._chunks: list[tuple[int, ...]] = []
        #: the same rows' losses measured again at each of the latest steps that did
        #: (:meth:`remeasured`), and their means when the first step began to narrow and at
        #: the end of the warm-up (:meth:`narrowing`, :meth:`ending`)
        self._recent: deque[dict[int, float]] = deque(maxlen=SAMPLES)
        self.narrowed = False
        self.before_narrowing: dict[int, float] | None = None
        self.latest_rows: dict[int, float] | None = None

    def _restart(self) -> None:
        self._singles = {c: _Moments() for c in self.alive}
        self._typical = {c: _Moments() for c in self.alive}
        self._base = _Moments()
        self._joint = _Moments()

    def probes(self) -> list[Probe]:
        """The occlusions to run on this step's batch (none once one column is left)."""
        if len(self.alive) < 2:
            return []
        if self._group is not None:
            return [Probe("group", tuple(self._group))]
        k = min(PROBES_PER_STEP, len(self.alive))
        picks = [self.alive[(self._next + i) % len(self.alive)] for i in range(k)]
        self._next += k
        probes = [Probe("single", (c,)) for c in picks]
        if self.budget is None:
            probes.append(Probe("null", tuple(self.alive)))
        return probes

    def record(
        self,
        base: float,
        losses: list[tuple[Probe, float]],
        typical: dict[int, float] | None = None,
        needed: Callable[[list[int]], set[int]] | None = None,
        rows: tuple[tuple[int, ...], list[float], list[float]] | None = None,
    ) -> list[int]:
        """Take one step's losses; return the columns to drop now (often none).

        Parameters
        ----------
        base : float
            The mean loss of the probe rows with nothing occluded.
        losses : list of (Probe, float)
            Each probe of :meth:`probes` and the mean loss with its columns occluded.
        typical : dict of int to float, optional
            For the single probes' columns, the median over the rows of the rise of a
            row's loss with the column occluded (what :meth:`leading` ranks on).
        needed : callable, optional
            ``needed(columns)``: which of the columns a drop would take still hold signal
            the model misses (the residual test); those are kept instead, for
            good, and the others go.
        rows : (indices, losses, weights), optional
            On held-out rows: each row's index, loss with nothing occluded, and weight
            (this process's rows); the first ``SAMPLES`` steps' are kept for the check
            (:meth:`loss_rise`).
        """
        self._base.add(base)
        self._typical_given = self._typical_given or typical is not None
        for column, rise in (typical or {}).items():
            if column in self._typical:
                self._typical[column].add(rise)
        if self.first_steps():
            self.first_losses.add(base)
            if rows is not None:
                self._keep_first(*rows)
        for probe, loss in losses:
            if probe.kind == "null":
                self._null.add(loss)
            elif probe.kind == "group":
                self._joint.add(loss - base)
            else:
                self._singles[probe.columns[0]].add(loss - base)
        self._needed = needed  # for this step's decision only (a closure does not pickle)
        try:
            return self._decide_group() if self._group is not None else self._decide_singles()
        finally:
            self._needed = None

    def first_steps(self) -> bool:
        """Whether the next :meth:`record` is one of the first ``SAMPLES``, before any drop
        (every column read) and before the first step narrows: the steps whose rows the
        check measures again. A warm-up too short to hold them all (under ``SAMPLES /
        (FIRST_STEP_AT - SELECTION_START)`` steps, as in a fit of a few epochs on a small
        table) gets no check: it has no loss from before the selection to compare with."""
        return (
            self.first_losses.n < SAMPLES
            and len(self.alive) == self.n_columns
            and not self.narrowed
        )

    def _keep_first(self, idx: tuple[int, ...], losses: list[float], weights: list[float]) -> None:
        if idx not in self._chunks:
            self._chunks.append(idx)
        for row, loss, weight in zip(idx, losses, weights, strict=True):
            n = self._first_counts.get(row, 0)
            self.first_rows[row] = (self.first_rows.get(row, 0.0) * n + loss) / (n + 1)
            self._first_counts[row] = n + 1
            self.row_weights[row] = weight

    def first_chunks(self) -> list[tuple[int, ...]]:
        """The distinct sets of held-out rows the first ``SAMPLES`` steps ran on, in order:
        the check measures the same rows again, in the same sets (a training-mode pass's
        batch statistics depend on the set)."""
        return list(self._chunks)

    def remeasured(self, rows: dict[int, float]) -> None:
        """Take the losses of :meth:`first_chunks`' rows measured again at this step (the
        network measures them over the ``SAMPLES`` steps before the first step narrows and
        before the warm-up ends)."""
        self._recent.append(rows)

    def _recent_means(self) -> dict[int, float] | None:
        if not self._recent:
            return None
        rows = self._recent[0].keys()
        return {r: sum(m[r] for m in self._recent) / len(self._recent) for r in rows}

    def narrowing(self) -> None:
        """Note that the first step begins to narrow now: the mean of the latest
        :meth:`remeasured` losses becomes the reference :meth:`drops_cost` compares with."""
        self.narrowed = True
        self.before_narrowing = self._recent_means()
        self._recent.clear()

    def ending(self) -> None:
        """Note that the warm-up ends: the mean of the latest :meth:`remeasured` losses is
        what :meth:`loss_rise` compares with the first ones."""
        self.latest_rows = self._recent_means()

    def _rise(
        self,
        later: dict[int, float] | None,
        total: Callable[[list[float]], list[float]] | None,
    ) -> tuple[float, float] | None:
        if later is None or self.first_losses.n < SAMPLES:
            return None
        sums = _paired_sums(self.first_rows, later, self.row_weights)
        return _paired_rise(total(sums) if total is not None else sums)

    def drops_cost(self, total: Callable[[list[float]], list[float]] | None = None) -> bool:
        """Whether the held-out rows' loss had already risen, by more than two standard
        errors of their mean rise, when the first step began to narrow (so the drops cost
        the model); True when that is unknown (no narrowing, or fewer than ``SAMPLES``
        first steps).

        Parameters
        ----------
        total : callable, optional
            Turns this process's sums into those of every process (a data-parallel fit).
        """
        if self.before_narrowing is None or self.first_losses.n < SAMPLES:
            return True
        return self._rise(self.before_narrowing, total) is not None

    def loss_rise(
        self, total: Callable[[list[float]], list[float]] | None = None
    ) -> tuple[float, float] | None:
        """``(first, latest)``: the held-out rows' weighted mean loss over the first
        ``SAMPLES`` steps (every column read) and at the end of the warm-up, when the
        latest is higher by more than two standard errors of the rows' mean rise (each row
        paired with itself); None when it is not, or before both are known. A rise says
        that the selection (the drops and the first step's narrowing) cost the model more
        than the training it had since: what it left out was needed. Its standard error is
        the rows': a rise that only some rows show, as when a small fit overfits, is not
        one the table would (with the steps' error instead, 15-epoch fits on 426
        rows put every column back on seeds where a fit without any selection saw the same
        rise).

        Parameters
        ----------
        total : callable, optional
            Turns this process's sums into those of every process (a data-parallel fit).
        """
        return self._rise(self.latest_rows, total)

    def leading(self, share: float) -> list[int] | None:
        """The columns of the first decision step: the supported columns whose typical rise
        (the median over the probe rows of a row's loss rise, since the last drop) is at
        least ``share`` of the largest one's, largest first (at least the largest); by
        their measured contribution instead (the latest complete samples, else the samples
        so far) when :meth:`record` was given no typical rise or none is above 0. None
        while a supported column has no sample (or, when typical rises are given, no
        typical rise yet). They are then protected: no later decision drops them.

        Parameters
        ----------
        share : float
            In (0, 1].
        """
        typical = {c: m.mean for c, m in self._typical.items() if m.n and c in self.alive}
        measured = self.contributions or {
            c: m.mean for c, m in self._singles.items() if m.n and c in self.alive
        }
        if any(c not in measured for c in self.alive):
            return None
        if self._typical_given and len(typical) < len(self.alive):
            return None
        if not typical or max(typical.values()) <= 0.0:  # none given, or none positive
            typical = measured
        # largest first; ties in column order (sorted is stable)
        ranked = sorted(self.alive, key=lambda c: -typical[c])
        top = typical[ranked[0]]
        chosen = [c for c in ranked if c == ranked[0] or typical[c] >= share * top]
        self.protected = tuple(chosen)
        if self._group is not None:  # a group under test never holds a protected column
            self._group = [c for c in self._group if c not in self.protected] or None
            self._joint = _Moments()
        return chosen

    def _start_budget(self) -> None:
        reference = max(self._base.mean, NULL_SHARE * self._null.mean)
        self.budget = self.budget_share * reference

    def _decide_singles(self) -> list[int]:
        if any(self._singles[c].n < SAMPLES for c in self.alive):
            return []
        if self.budget is None:
            self._start_budget()
        self.contributions = {c: self._singles[c].mean for c in self.alive}
        upper = {c: self._singles[c].upper for c in self.alive}
        candidates = sorted(
            (
                c
                for c in self.alive
                if upper[c] < self.budget and c not in self.protected and c not in self.kept
            ),
            key=upper.get,
        )
        candidates = candidates[: len(self.alive) - 1]  # one column stays
        if not candidates:
            return []
        self._means = {c: self._singles[c].mean for c in candidates}
        if len(candidates) >= 2:
            self._group = candidates
            self._joint = _Moments()
            return []
        return self._drop(candidates, self._means[candidates[0]])

    def _decide_group(self) -> list[int]:
        if self._joint.n < SAMPLES:
            return []
        group = self._group
        if self._joint.upper < self.budget:
            return self._drop(group, self._joint.mean)
        if len(group) >= _SMALLEST_GROUP:
            self._group = group[: len(group) // 2]
            self._joint = _Moments()
            return []
        return self._drop(group[:1], self._means[group[0]])

    def _drop(self, columns: list[int], cost: float) -> list[int]:
        keep = self._needed(list(columns)) if self._needed is not None else set()
        self.kept |= keep
        columns = [c for c in columns if c not in keep]
        if columns:  # the measured cost includes the kept columns': an upper bound
            self.budget -= max(cost, 0.0)
        self.alive = [c for c in self.alive if c not in columns]
        self._group = None
        self._restart()
        return columns
