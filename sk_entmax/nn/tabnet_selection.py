"""The column selection of a faithful TabNet: the driver of its backward elimination.

A faithful TabNet whose :class:`~sk_entmax.nn.tabnet_design.MaskDesign` has a ``budget``
chooses the columns it reads during its warm-up: each training step also runs the network,
without gradients, with some columns occluded, and the task's module gives the rise of its
loss to :meth:`ColumnSelection.record_selection`, which hands it to the bookkeeping of
:mod:`sk_entmax.nn.tabnet_elimination` and applies what it decides to the first mask's
logits (a dropped column's logit is ``DROPPED_LOGIT``, one left to the later steps
``LATER_LOGIT``). The same module runs the residual test that keeps a column the model
still misses (:mod:`sk_entmax.nn.tabnet_residual`), narrows the first step onto the
columns the typical row needs, and checks at the end of the warm-up, on held-out rows,
that what the selection left out was not needed (:class:`SelectionCheck`).

An estimator's fit runs the probes on *held-out rows* (:class:`HeldOutRows`): it holds
``HELD_OUT_SHARE`` of its training rows (of each class) out of training while the warm-up
runs, and gives them back when it ends. On rows the network trains on, a noise column it
has learned to overfit looks needed; on held-out rows it does not.

:class:`ColumnSelection` is a part of :class:`~sk_entmax.nn.TabNet`, which owns the
support (its ``first_mask_logits``) and runs the forward passes; the names of the
bookkeeping are importable from here too.
"""

from __future__ import annotations

import torch

from sk_entmax.nn.tabnet_elimination import (
    FIRST_STEP_AT,
    FIRST_STEP_RAMP,
    FIRST_STEP_SHARE,
    HELD_OUT_MIN,
    HELD_OUT_PROBE_ROWS,
    HELD_OUT_SHARE,
    NULL_SHARE,
    PROBE_ROWS,
    PROBES_PER_STEP,
    RESIDUAL_LEVEL,
    RESIDUAL_ROWS,
    SAMPLES,
    SELECTION_BUDGET,
    SELECTION_START,
    BackwardElimination,
    HeldOutRows,
    Probe,
    SelectionCheck,
)
from sk_entmax.nn.tabnet_residual import residual_pvalues

__all__ = [
    "DROPPED_LOGIT",
    "FIRST_STEP_AT",
    "FIRST_STEP_RAMP",
    "FIRST_STEP_SHARE",
    "HELD_OUT_MIN",
    "HELD_OUT_PROBE_ROWS",
    "HELD_OUT_SHARE",
    "LATER_LOGIT",
    "NULL_SHARE",
    "PROBES_PER_STEP",
    "PROBE_ROWS",
    "RESIDUAL_LEVEL",
    "RESIDUAL_ROWS",
    "SAMPLES",
    "SELECTION_BUDGET",
    "SELECTION_START",
    "BackwardElimination",
    "ColumnSelection",
    "HeldOutRows",
    "Probe",
    "SelectionCheck",
]

#: the logit of a column the elimination dropped: the mask mapping gives it exactly 0
DROPPED_LOGIT = -1e6
#: the logit of a column kept for the later steps that the first step does not read
LATER_LOGIT = -1e3


class ColumnSelection:
    """The column selection of :class:`~sk_entmax.nn.TabNet` (see the module docstring).

    A mixin: it reads the network's ``design``, ``first_mask_logits``,
    ``first_mask_step``, its column layout and its forward pass ``_steps``, and keeps the
    selection's state in the attributes :meth:`_init_selection` sets.
    """

    def _init_selection(self) -> None:
        """The selection's state: nothing measured, nothing held out."""
        self.selection: BackwardElimination | None = None
        self.selection_reduce = None
        self.selection_processes = 1
        self._probe = None
        #: the rows the probes run on while the fit holds them out (``hold_out``)
        self.held_out: HeldOutRows | None = None
        #: set when the check at the end of the warm-up put columns back (see
        #: :meth:`_check_selection`)
        self.selection_check: SelectionCheck | None = None
        #: the dropped columns the end of the warm-up brought back (see :meth:`_readmit`)
        self.selection_readmitted: tuple[int, ...] = ()
        #: the rows the residual test runs on until the warm-up ends (``test_residuals_on``)
        self.residual_rows: tuple[torch.Tensor, torch.Tensor] | None = None
        #: while the first step narrows: the step it began, the features it leaves and
        #: the generator of the rows narrowed at each step
        self._narrowing: tuple[float, torch.Tensor, torch.Generator] | None = None

    def _columns_of(self) -> torch.Tensor:
        """The original column of each post-embedding feature."""
        if self.post_embedding_dim == self.n_features:
            return torch.arange(self.n_features, device=self.first_mask_logits.device)
        return self._group

    def _run_probes(self, X: torch.Tensor):
        """The outputs of this training step's occlusions (see the module docstring), run
        before the step's own forward pass; None outside the elimination's window.

        Run in training mode, as the step is (its batch statistics); the running statistics
        the probes would update are put back, so the model trains as if they never ran.
        With held-out rows (:meth:`hold_out`) they run on the next of those instead of the
        batch, and the loss with nothing occluded is measured at every step of the window,
        probe or not (the selection's check compares its first and last values).
        """
        step = float(self.first_mask_step)
        if not SELECTION_START * self.design.warmup <= step < self.design.warmup:
            return None
        if self.selection is None:
            self.selection = BackwardElimination(self.n_features, self.design.budget)
        probes = self.selection.probes()
        last = step + 1 >= self.design.warmup  # the dropped columns' last test
        probed = self.held_out is not None and self.held_out.probed
        # held-out rows too few to probe on serve the check only: measured over the first
        # steps, as probed rows are
        checked = self.held_out is not None and not probed and self.selection.first_steps()
        if not (probes or probed or checked or (last and self.residual_rows)):
            return None
        held = None  # the held-out rows' targets and weights, for record_selection
        if probed:  # on held-out rows, the base loss even with no probe
            rows, target, weight, idx = self.held_out.next_rows()
            X = rows.to(X.device)
            held = (target.to(X.device), weight.to(X.device), idx)
        else:
            X = X[:PROBE_ROWS]
        saved = [(b, b.clone()) for b in self.buffers() if b is not self.first_mask_step]
        try:
            base = self._scores(X)
            outputs = []
            for probe in probes:
                keep = torch.ones(X.shape[0], self.post_embedding_dim, device=X.device)
                keep[:, self._hit(list(probe.columns))] = 0
                outputs.append((probe, self._scores(X, keep)))
            check = None  # the checked rows' scores, targets, weights and indices
            if checked:
                rows, target, weight, idx = self.held_out.next_rows()
                device = X.device
                check = (self._scores(rows.to(device)), target.to(device), weight.to(device), idx)
        finally:
            for buffer, value in saved:
                buffer.copy_(value)
        return base, outputs, held, check

    def _scores(self, X: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        return self.final_mapping(sum(d for _, d in self._steps(X, keep)))

    def record_selection(self, target: torch.Tensor, loss) -> None:
        """Give this training step's probes their losses; drop what the elimination decides.

        A no-op when the step ran no probes. The module of a task calls it from its loss,
        where the targets are.

        Parameters
        ----------
        target : torch.Tensor
            The batch's targets (the probes ran on its first ``PROBE_ROWS`` rows).
        loss : callable
            ``loss(scores, target)``: the task's per-row loss, without the regulariser.
        """
        probe, self._probe = self._probe, None
        if probe is None:
            return
        base, outputs, held, check = probe
        weight = idx = None
        if held is not None:  # the probes ran on held-out rows
            target, weight, idx = held
        target = target[: base.shape[0]]

        def mean(rows: torch.Tensor) -> torch.Tensor:
            return rows.mean() if weight is None else (rows * weight).sum() / weight.sum()

        with torch.no_grad():
            rows = loss(base, target)
            values = [mean(rows)]
            singles = []  # the single probes' typical rises: the median row's
            for probe, scores in outputs:
                occluded = loss(scores, target)
                values.append(mean(occluded))
                if probe.kind == "single":
                    singles.append((occluded - rows).median())
            values = torch.stack(values + singles).to(torch.float64)
            if self.selection_reduce is not None:  # several processes: their means
                values = self.selection_reduce(values)
            values = values.tolist()
            probes = [p for p, _ in outputs]
            losses = list(zip(probes, values[1 : 1 + len(probes)], strict=True))
            columns = [p.columns[0] for p in probes if p.kind == "single"]
            typical = dict(zip(columns, values[1 + len(probes) :], strict=True))
            needed = None
            if self.residual_rows is not None:

                def needed(columns: list[int]) -> set[int]:
                    return self._signal_left(columns, loss)

            held_rows = None  # this process's rows, for the check
            if idx is not None:
                held_rows = (idx, rows.tolist(), weight.tolist())
            elif check is not None:
                scores, checked, checked_weight, checked_idx = check
                checked_loss = loss(scores, checked).tolist()
                held_rows = (checked_idx, checked_loss, checked_weight.tolist())
            dropped = self.selection.record(values[0], losses, typical, needed, held_rows)
            if dropped:
                self.first_mask_logits[self._hit(dropped)] = DROPPED_LOGIT
            if self.held_out is not None and self._remeasuring():
                self.selection.remeasured(self._first_rows_now(loss))
            self._choose_first_step()
            if float(self.first_mask_step) + 1 >= self.design.warmup:
                self.selection.ending()  # before anything comes back
                self._readmit(loss)

    def _remeasuring(self) -> bool:
        """Whether this step measures the selection's first held-out rows again, for its
        check: over the ``SAMPLES`` steps before the first step may begin to narrow (and
        until it does), and over the warm-up's last ``SAMPLES`` steps."""
        step, warmup = float(self.first_mask_step), self.design.warmup
        if step + 1 + SAMPLES > warmup:
            return True
        return (
            self.design.first_step_share is not None
            and not self.selection.narrowed
            and step + SAMPLES >= FIRST_STEP_AT * warmup
        )

    def _first_rows_now(self, loss) -> dict[int, float]:
        """The loss now of each held-out row the selection's first steps ran on, measured
        as the probes were (training mode, in the same sets of rows, the running
        statistics left as they were). It runs after the training step's forward, whose
        graph holds the batch norms' buffers: the pass updates copies of them, swapped in
        and out, so the originals are never written."""
        rows: dict[int, list[float]] = {}
        swapped = [
            (module._buffers, name, buffer)
            for module in self.modules()
            for name, buffer in module._buffers.items()
            if buffer is not None and buffer is not self.first_mask_step
        ]
        device = self.first_mask_logits.device
        for buffers, name, buffer in swapped:
            buffers[name] = buffer.clone()
        try:
            with torch.no_grad():
                for idx in self.selection.first_chunks():
                    X, target, _ = self.held_out.rows_at(idx)
                    values = loss(self._scores(X.to(device)), target.to(device)).tolist()
                    for row, value in zip(idx, values, strict=True):
                        rows.setdefault(row, []).append(value)
        finally:
            for buffers, name, buffer in swapped:
                buffers[name] = buffer
        return {row: sum(v) / len(v) for row, v in rows.items()}

    def _total(self, sums: list[float]) -> list[float]:
        """This process's sums for the selection's check, added over every process."""
        if self.selection_reduce is None:
            return sums
        values = torch.tensor(sums, dtype=torch.float64, device=self.first_mask_logits.device)
        return (self.selection_reduce(values) * self.selection_processes).tolist()

    def _signal_left(self, columns: list[int], loss) -> set[int]:
        """Which of the original ``columns`` the residual still depends on, beyond the
        other columns some step reads (``sk_entmax.nn.tabnet_residual``, at
        ``RESIDUAL_LEVEL`` over the columns, on the rows of :meth:`test_residuals_on`):
        signal the model misses, whether it has not learned the column yet or no longer
        reads it. Empty without rows to test on."""
        if self.residual_rows is None or not columns:
            return set()
        device = self.first_mask_logits.device
        X, target = (t.to(device) for t in self.residual_rows)
        # in evaluation mode (the running statistics, left as they are): this runs after
        # the training step's forward, whose graph holds the batch norms' buffers
        training = self.training
        self.train(False)
        try:
            scores = self._scores(X).detach()
        finally:
            self.train(training)
        with torch.enable_grad():
            scores.requires_grad_(True)
            (gradient,) = torch.autograd.grad(loss(scores, target).sum(), scores)
        categorical = set(self.cat_idxs)
        read = [c for c in self._read_columns() if c not in columns]
        p = residual_pvalues(
            X[:, columns],
            gradient,
            [c in categorical for c in columns],
            X[:, read],
            [c in categorical for c in read],
        )
        if self.selection_reduce is not None:  # several processes: one decision for all
            p = self.selection_reduce(p.to(device)).cpu()
        return {
            c
            for c, value in zip(columns, p.tolist(), strict=True)
            if value * len(columns) < RESIDUAL_LEVEL
        }

    def _read_columns(self) -> list[int]:
        """The original columns some step may read (not dropped)."""
        kept = self.first_mask_logits > DROPPED_LOGIT / 2
        return sorted(set(self._columns_of()[kept].tolist()))

    def _readmit(self, loss) -> None:
        """At the warm-up's last step: the dropped columns the residual still depends on
        (:meth:`_signal_left`) come back, for the later steps (for every step
        when the first one is not narrowed), and ``selection_readmitted`` names them. A
        column dropped while the network had not yet learned it looks worthless to the
        elimination's occlusions; the residual shows what the model misses without it."""
        back = sorted(self._signal_left(self.dropped_columns(), loss))
        if back:
            value = LATER_LOGIT if self.design.first_step_share is not None else 0.0
            with torch.no_grad():
                self.first_mask_logits[self._hit(back)] = value
        self.selection_readmitted = tuple(back)

    def _hit(self, columns: list[int]) -> torch.Tensor:
        """Which post-embedding features belong to the original ``columns``."""
        every = self._columns_of()
        return torch.isin(every, torch.tensor(columns, device=every.device))

    def _choose_first_step(self) -> None:
        """Once ``FIRST_STEP_AT`` of the warm-up has passed, start to narrow the first step
        onto the kept columns whose typical rise is at least ``first_step_share`` of the
        largest (:meth:`BackwardElimination.leading`; once a fit, and the elimination then
        never drops them): the others leave
        it a growing share of the rows at a time (:meth:`_narrow`) and stay open to the
        later steps, whose masks, computed from what the row has read so far, choose per
        row among them."""
        selection, share = self.selection, self.design.first_step_share
        if share is None or selection.protected or self._narrowing is not None:
            return
        if float(self.first_mask_step) < FIRST_STEP_AT * self.design.warmup:
            return
        chosen = selection.leading(share)
        if chosen is None:
            return
        later = (self.first_mask_logits > DROPPED_LOGIT / 2) & ~self._hit(chosen)
        # the rows narrowed at each step come from a generator of their own, seeded by the
        # step: the global one is also drawn from by the thread that prepares the batches,
        # so draws from it here would depend on timing
        rows = torch.Generator().manual_seed(int(self.first_mask_step))
        self._narrowing = (float(self.first_mask_step), later, rows)
        selection.narrowing()

    def _narrow(self, n_rows: int, device: torch.device) -> torch.Tensor | None:
        """One training step of the first step's narrowing: which features each of the
        step's ``n_rows`` rows no longer reads at its first step.

        Over ``FIRST_STEP_RAMP`` of the warm-up a growing share of the batch's rows, drawn
        at random at every step and reaching all of them at the end, reads only the first
        step's own columns there; then the other kept columns take ``LATER_LOGIT`` for good.
        The network so learns to read them at its later steps while the other rows still
        train it as it was. (Narrowed at once, the held-out loss rose by half for a
        while, which set off the check; faded out of the mask instead, the network scaled
        up its weights to read them through ever smaller mask entries, and the last step to
        0 was as sharp a shock.)"""
        start, later, generator = self._narrowing
        later = later & (self.first_mask_logits > DROPPED_LOGIT / 2)  # not dropped since
        done = (float(self.first_mask_step) - start) / max(
            FIRST_STEP_RAMP * self.design.warmup, 1.0
        )
        if done >= 1.0:
            self.first_mask_logits[later] = LATER_LOGIT
            self._narrowing = None
            return None
        rows = torch.rand(n_rows, generator=generator) < done
        return rows.to(device)[:, None] & later.to(device)

    def _check_selection(self) -> None:
        """At the end of the warm-up, on the held-out rows: if the loss rose since the
        selection began (:meth:`BackwardElimination.loss_rise`), what the selection left
        out was needed. If it had not risen before the first step began to narrow
        (:meth:`BackwardElimination.drops_cost`), the narrowing is what cost: the first
        step reads every kept column again and the dropped columns stay out. Else every
        column goes back to every step (the first step reads them all, as before the
        selection). ``selection_check`` keeps the two losses and the columns put back."""
        selection = self.selection
        rise = None if selection is None else selection.loss_rise(self._total)
        if rise is None:
            return
        logits = self.first_mask_logits
        later = (logits > DROPPED_LOGIT / 2) & (logits != 0)
        first_step_only = bool(later.any()) and not selection.drops_cost(self._total)
        with torch.no_grad():
            out = later if first_step_only else logits != 0
            back = sorted(set(self._columns_of()[out].tolist()))
            logits[out] = 0.0
        self._narrowing = None
        self.selection_check = SelectionCheck(rise[0], rise[1], tuple(back), first_step_only)

    def dropped_columns(self) -> list[int]:
        """The original columns no step reads: those the selection dropped.

        Returns
        -------
        list of int
            Sorted; empty without a ``selection_budget`` or before any drop.
        """
        if not self.design.selecting:
            return []
        dropped = self.first_mask_logits < DROPPED_LOGIT / 2
        columns = set(self._columns_of()[dropped].tolist())
        # a column is dropped when all of its features are (they go together)
        return sorted(columns - set(self._read_columns()))

    def hold_out(self, rows: HeldOutRows) -> None:
        """Run the selection's probes on rows the fit holds out of training.

        The rows stay out until the warm-up ends; then :meth:`release_held_out` gives them
        back.

        Parameters
        ----------
        rows : HeldOutRows
            The held-out rows and what gives them back to training.
        """
        self.held_out = rows

    def release_held_out(self) -> None:
        """Give the held-out rows back to training (once) and forget them.

        A no-op without any. Called when the warm-up ends, and by the estimator after its
        fit (a fit that ends during the warm-up).
        """
        rows, self.held_out = self.held_out, None
        self.residual_rows = None
        if rows is not None:
            rows.give_back()

    def test_residuals_on(self, X: torch.Tensor, y: torch.Tensor) -> None:
        """Give the rows the residual test runs on, until the warm-up ends.

        The test keeps, or brings back, a column the model still misses
        (``sk_entmax.nn.tabnet_residual``). Rows the network trains on are fair evidence
        here, unlike for the probes: a column it does not read cannot have been
        overfitted, and on a column it reads, fitting only shrinks the residual's
        dependence (the test then keeps less, not more); they give the test the power
        that a rare class's few held-out rows lack.

        Parameters
        ----------
        X, y : torch.Tensor
            Features (as the network takes them) and targets (as its loss takes them).
        """
        self.residual_rows = (X, y)

    def start_selection(self) -> None:
        """Start the column selection afresh: every column kept, the warm-up at step 0.

        For a network that starts from a pretrained encoder's weights; a no-op without a
        ``selection_budget``.
        """
        if not self.design.selecting:
            return
        with torch.no_grad():
            self.first_mask_logits.zero_()
            self.first_mask_step.zero_()
            if self.rest_logits is not None:
                self.rest_logits.zero_()
        self.selection = None
        self.selection_readmitted = ()
        self._narrowing = None
