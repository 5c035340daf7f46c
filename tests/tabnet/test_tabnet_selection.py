"""The column elimination of faithful TabNets (``MaskDesign.budget``).

:class:`BackwardElimination` is fed loss streams whose right answer is known by
construction (a column worth nothing, a redundant pair, a budget that runs out, a model
that fits its batches perfectly); :class:`TabNet` is checked for what it promises around
it: the probes leave no trace on the model, a dropped column is exactly 0 in every step's
mask, the argument is checked and old networks are what they were.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from sk_entmax.nn import tabnet_selection as sel
from sk_entmax.nn.tabnet import TabNet
from sk_entmax.nn.tabnet_design import MaskDesign
from sk_entmax.nn.tabnet_selection import FIRST_STEP_AT, FIRST_STEP_RAMP, BackwardElimination


def _run(
    elimination: BackwardElimination, worth, base=1.0, null=2.0, steps=400, typical=None
) -> list:
    """Feed ``steps`` steps; ``worth(columns)`` is the loss rise of hiding those columns
    from the full model (the columns already dropped are hidden too, so a column's worth
    can grow when its stand-in goes); ``typical(column)``, if given, the median row's rise
    of each single probe. Returns the drops in order."""
    drops = []
    everything = set(range(elimination.n_columns))
    for _ in range(steps):
        probes = elimination.probes()
        if not probes:
            break
        gone = everything - set(elimination.alive)
        now = base + worth(gone)
        losses = []
        for probe in probes:
            hidden = set(probe.columns) | gone
            losses.append((probe, null if probe.kind == "null" else base + worth(hidden)))
        rises = None
        if typical is not None:
            rises = {p.columns[0]: typical(p.columns[0]) for p in probes if p.kind == "single"}
        dropped = elimination.record(now, losses, rises)
        if dropped:
            drops.append(sorted(dropped))
    return drops


def test_a_column_worth_nothing_goes_and_the_others_stay():
    e = BackwardElimination(3, 0.4)
    drops = _run(e, lambda cols: 0.5 * len(cols & {0, 2}))
    assert drops == [[1]] and e.alive == [0, 2]
    # the budget was 0.4 of the loss (1.0), and the drop cost nothing
    assert e.budget == pytest.approx(0.4)


def test_columns_that_matter_only_together_are_not_dropped_together():
    """0 and 1 carry the same signal (each alone worth nothing, the pair 1.0), 2 and 3 are
    noise, 4 matters: the noise goes as a group, then one of the pair, and the other then
    matters on its own and stays."""

    def worth(cols):
        pair = 1.0 if {0, 1} <= cols else 0.0
        return pair + (1.0 if 4 in cols else 0.0) - 0.01 * len(cols & {2, 3})

    e = BackwardElimination(5, 0.4)
    drops = _run(e, worth)
    assert drops[0] == [2, 3]
    assert len(drops) == 2 and drops[1] in ([0], [1])
    assert sorted(e.alive) in ([0, 4], [1, 4])


def test_the_budget_is_spent_by_what_is_dropped():
    """Four columns worth 0.15 each against a budget of 0.4: two go (0.3), the third would
    overspend it."""
    e = BackwardElimination(4, 0.4)
    drops = _run(e, lambda cols: 0.15 * len(cols))
    assert len(drops) == 2 and all(len(d) == 1 for d in drops)
    assert len(e.alive) == 2 and e.budget == pytest.approx(0.1)


def test_a_model_that_fits_its_batches_gets_a_budget_from_the_loss_of_reading_nothing():
    """Loss 0.001 with every column, 1.0 with none: the budget is 0.4 x NULL_SHARE x 1.0,
    so a column worth 0.02 goes, where 0.4 x the loss (0.0004) would keep it."""
    e = BackwardElimination(3, 0.4)
    drops = _run(
        e, lambda cols: 0.02 * len(cols & {1}) + 0.5 * len(cols & {0, 2}), base=0.001, null=1.0
    )
    assert drops == [[1]]
    assert e.budget == pytest.approx(0.4 * sel.NULL_SHARE * 1.0 - 0.02)


def test_one_column_always_stays():
    e = BackwardElimination(3, 1.0)
    _run(e, lambda cols: 0.0)
    assert len(e.alive) == 1 and e.probes() == []


def test_noisy_samples_keep_a_column_whose_upper_bound_is_over_the_budget():
    """Column 1's samples average 0.2 (< 0.4) but scatter widely: mean + 2 SE is over the
    budget, so it stays; column 2, worth the same without scatter, goes."""
    e = BackwardElimination(3, 0.4)
    count = {1: 0}

    def worth(cols):
        rise = 1.0 if 0 in cols else 0.0
        if 1 in cols:
            count[1] += 1
            rise += 0.2 + (1.5 if count[1] % 2 else -1.5)
        if 2 in cols:
            rise += 0.2
        return rise

    drops = _run(e, worth, steps=60)
    assert drops == [[2]] and e.alive == [0, 1]


# ------------------------------------------------------------------------------ TabNet


def _net(budget=0.4, warmup=10, d=5, **layout):
    """A small selecting TabNet; ``layout``: its categorical and missing-value columns."""
    torch.manual_seed(0)
    return TabNet(
        d,
        2,
        n_d=4,
        n_a=4,
        mask_design=MaskDesign(faithful=True, warmup=warmup, budget=budget),
        **layout,
    )


@pytest.mark.parametrize("bad", [0, 0.0, 1.5, -0.1, "0.4", True, float("nan")])
def test_selection_budget_is_checked(bad):
    with pytest.raises(ValueError, match="budget"):
        _net(budget=bad)


def test_a_network_without_a_budget_is_the_learned_first_mask_design():
    """Files saved before the elimination store no selection_budget: they build the
    design whose first mask is learned by gradient."""
    net = _net(budget=None)
    assert net.selection_budget is None and not net.design.selecting
    X = torch.randn(16, 5)
    net.train()
    scores, M_loss = net(X)
    (scores.sum() + M_loss.sum()).backward()
    assert net.first_mask_logits.grad is not None  # learned
    assert net._probe is None and net.selection is None


def test_the_probes_leave_no_trace_on_the_model():
    """A training step inside the elimination's window runs the probes first; the step's
    outputs, gradients and batch-norm statistics are those of the same step without
    them, bit for bit."""
    X = torch.randn(40, 5)

    def step(probing: bool):
        net = _net(warmup=10)
        net.first_mask_step.fill_(5)  # inside [0.3, 1) x 10
        if not probing:
            net._run_probes = lambda X: None
        net.train()
        scores, M_loss = net(X)
        (scores.sum() + M_loss.sum()).backward()
        grads = [p.grad.clone() for p in net.parameters() if p.grad is not None]
        return net, scores.detach(), grads

    probed, scores, grads = step(True)
    plain, scores0, grads0 = step(False)
    assert probed._probe is not None and plain._probe is None
    torch.testing.assert_close(scores, scores0, rtol=0, atol=0)
    assert len(grads) == len(grads0)
    for g, g0 in zip(grads, grads0, strict=True):
        torch.testing.assert_close(g, g0, rtol=0, atol=0)
    for b, b0 in zip(probed.buffers(), plain.buffers(), strict=True):
        torch.testing.assert_close(b, b0, rtol=0, atol=0)


def test_a_dropped_column_is_exactly_zero_in_every_mask_and_certified():
    net = _net(d=5)
    with torch.no_grad():
        net.first_mask_logits[3] = -1e6  # as record_selection drops a column
    net.first_mask_step.fill_(10)
    net.eval()
    X = torch.randn(30, 5)
    with torch.no_grad():
        _, masks = net.explain(X)
        for m in masks.values():
            assert (m[:, 3] == 0).all()
        # the first mask is uniform over the columns kept
        torch.testing.assert_close(masks[0], torch.full((30, 5), 0.25) * (torch.arange(5) != 3))
        assert net.never_read(X)[:, 3].all()
        moved = X.clone()
        moved[:, 3] = 1e6
        torch.testing.assert_close(net(moved)[0], net(X)[0], rtol=0, atol=0)


def test_record_selection_drops_every_column_of_a_feature():
    """An embedded column (two post-embedding features) is dropped whole."""
    net = _net(d=3, cat_idxs=[1], cat_dims=[4], cat_emb_dims=2)
    net.selection = BackwardElimination(3, 0.4)
    net.selection.record = lambda base, losses, typical=None, needed=None, rows=None: [1]
    net._probe = (torch.zeros(4, 2), [], None, None)
    net.record_selection(torch.zeros(4, dtype=torch.long), lambda s, t: s.sum(-1))
    assert (net.first_mask_logits < 0).tolist() == [False, True, True, False]
    assert net._probe is None


def _net_with_gaps(budget=0.4):
    """Columns 0-3; column 1 has a missing indicator (post-embedding features 1 and 2)."""
    return _net(budget, d=4, missing_idxs=[1])


def _rows_with_gaps(n=40):
    X = torch.randn(n, 4)
    X[::7, 1] = float("nan")
    return X


def test_no_mask_attends_to_a_missing_indicator_on_its_own():
    """The indicator is read with its value's weight: 0 in every step's mask, yet a gap
    moves the scores while the column is kept; the masks still sum to 1 per row."""
    net = _net_with_gaps()
    net.first_mask_step.fill_(10)
    net.train()
    X = _rows_with_gaps()
    net(X)  # batch statistics
    net.eval()
    with torch.no_grad():
        steps = list(net._steps(X))
        assert all((M[:, 2] == 0).all() for M, _ in steps)
        assert (steps[0][0][:, 1] > 0).all()  # the value is read
        for M, _ in steps:
            torch.testing.assert_close(M.sum(-1), torch.ones(len(X)))
        # the gap itself is read: a NaN filled with the same value moves the row
        filled = X.clone()
        gaps = torch.isnan(filled[:, 1])
        filled[gaps, 1] = net._fill[1]
        assert not torch.equal(net(filled)[0][gaps], net(X)[0][gaps])
        torch.testing.assert_close(net(filled)[0][~gaps], net(X)[0][~gaps], rtol=0, atol=0)


def test_a_dropped_column_with_gaps_is_certified_with_its_indicator():
    net = _net_with_gaps()
    with torch.no_grad():
        net.first_mask_logits[1:3] = -1e6  # as record_selection drops column 1
    net.first_mask_step.fill_(10)
    net.eval()
    X = _rows_with_gaps()
    with torch.no_grad():
        assert net.never_read(X)[:, 1].all() and not net.never_read(X)[:, [0, 2, 3]].any()
        moved = X.clone()
        moved[:, 1] = float("nan")  # every row a gap: the indicator flips where it was 0
        torch.testing.assert_close(net(moved)[0], net(X)[0], rtol=0, atol=0)


def test_the_tied_features_are_each_columns_value_and_indicator():
    """Against the layout's own map of features to columns, with embeddings and several
    columns with gaps (each value directly before its indicator)."""
    net = _net(d=6, cat_idxs=[0, 4], cat_dims=[3, 5], cat_emb_dims=[2, 3], missing_idxs=[1, 2, 5])
    value, indicator = net._tied_indicators()
    group = net._group.tolist()
    assert [group[v] for v in value.tolist()] == [1, 2, 5]
    assert [group[i] for i in indicator.tolist()] == [1, 2, 5]
    # the indicator is the second feature of its column: 1 where the value was NaN
    X = torch.zeros(4, 6)
    X[0, 2] = float("nan")
    embedded = net.embed(X)
    hit = [i for i in indicator.tolist() if embedded[0, i] == 1]
    assert hit == [indicator.tolist()[1]] and (embedded[1:, indicator] == 0).all()


def test_only_the_selecting_design_ties_indicators():
    """Networks without a selection_budget (files saved before it) attend to indicators as
    they did."""
    assert _net_with_gaps()._tied_indicators() is not None
    assert _net_with_gaps(budget=None)._tied_indicators() is None
    assert _net()._tied_indicators() is None  # no column with gaps


def test_start_selection_starts_afresh():
    net = _net()
    with torch.no_grad():
        net.first_mask_logits.copy_(torch.tensor([0.3, -1e6, 2.0, 0.0, -1.0]))
    net.first_mask_step.fill_(50)
    net.selection = BackwardElimination(5, 0.4)
    net.start_selection()
    assert (net.first_mask_logits == 0).all() and float(net.first_mask_step) == 0
    assert net.selection is None


def test_a_faithful_model_from_a_pretrainer_chooses_its_columns_afresh():
    """The pretrainer (no targets) learns its first mask by gradient; the classifier that
    starts from it keeps every column again and counts its warm-up from its own first
    step, so that its own loss chooses the columns."""
    import numpy as np
    import pandas as pd

    from sk_entmax import TabNetEntmaxClassifier, TabNetPretrainer

    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(160, 4)), columns=list("abcd"))
    y = (frame["a"] > 0).to_numpy().astype(int)
    tiny = {"n_d": 4, "n_a": 4, "n_steps": 2, "faithful_masks": True, "random_state": 0}
    pre = TabNetPretrainer(max_epochs=3, **tiny).fit(frame)
    encoder = pre.net_.module_.tabnet
    assert encoder.selection_budget is None and (encoder.first_mask_logits != 0).any()
    clf = TabNetEntmaxClassifier(pretrainer=pre, max_epochs=2, **tiny).fit(frame, y)
    tabnet = clf.net_.module_.tabnet
    steps = sum(1 for b in clf.net_.history[:, "batches"] for r in b if "train_loss" in r)
    assert tabnet.selection_budget == sel.SELECTION_BUDGET
    assert float(tabnet.first_mask_step) == steps
    # none of the pretrainer's learned logits is left: each column is read at the first
    # step (0), kept for the later ones (-1e3) or dropped (-1e6), by this fit's own loss
    logits = tabnet.first_mask_logits.tolist()
    assert set(logits) <= {0.0, -1e3, -1e6} and 0.0 in logits


def test_a_saved_selection_loads_as_it_was(tmp_path):
    import numpy as np
    import pandas as pd

    from sk_entmax import TabNetEntmaxClassifier
    from sk_entmax.persistence import load, save

    frame = pd.DataFrame(np.random.default_rng(1).normal(size=(160, 5)), columns=list("abcde"))
    y = (frame["b"] > 0).to_numpy().astype(int)
    clf = TabNetEntmaxClassifier(
        faithful_masks=True,
        mask_warmup=60,
        n_d=4,
        n_a=4,
        n_steps=2,
        max_epochs=10,
        random_state=0,
    ).fit(frame, y)
    unread = clf.never_read(frame)
    assert unread.any()
    save(clf, tmp_path / "m.safetensors")
    back = load(tmp_path / "m.safetensors")
    tabnet = back.net_.module_.tabnet
    assert tabnet.selection_budget == sel.SELECTION_BUDGET and tabnet.design.selecting
    assert back.mask_warmup == 60 and tabnet.design == clf.net_.module_.tabnet.design
    torch.testing.assert_close(
        tabnet.first_mask_logits, clf.net_.module_.tabnet.first_mask_logits, rtol=0, atol=0
    )
    np.testing.assert_array_equal(back.predict_proba(frame), clf.predict_proba(frame))
    np.testing.assert_array_equal(back.never_read(frame), unread)


def test_record_selection_decides_on_the_reduced_losses():
    """A data-parallel fit sets ``selection_reduce`` (the mean over the processes): the
    elimination sees its output, not this process's losses."""
    net = _net(d=3)
    net.selection = BackwardElimination(3, 0.4)
    seen = []
    net.selection.record = lambda base, losses, typical, needed=None, rows=None: (
        seen.append((base, [v for _, v in losses], typical)) or []
    )
    net.selection_reduce = lambda values: values * 0 + torch.arange(len(values))
    probes = [sel.Probe("single", (0,)), sel.Probe("single", (1,))]
    net._probe = (torch.zeros(4, 2), [(p, torch.zeros(4, 2)) for p in probes], None, None)
    net.record_selection(torch.zeros(4, dtype=torch.long), lambda s, t: s.sum(-1) + 5.0)
    # the base loss, the probes' losses, then the single probes' typical rises
    assert seen == [(0.0, [1.0, 2.0], {0: 3.0, 1: 4.0})]


def test_record_selection_gives_the_median_rows_rise():
    """Each single probe's typical rise is the median over the rows of a row's loss rise:
    hiding column 0 raises 3 rows of 5 by 1 (median 1), column 1 only 2 rows (median 0),
    although its mean rise is the larger."""
    net = _net(d=3)
    net.selection = BackwardElimination(3, 0.4)
    seen = []
    net.selection.record = lambda base, losses, typical, needed=None, rows=None: (
        seen.append(typical) or []
    )
    base = torch.zeros(5, 2)
    zero = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0])[:, None].expand(5, 2) / 2
    one = torch.tensor([0.0, 0.0, 0.0, 3.0, 3.0])[:, None].expand(5, 2) / 2
    probes = [sel.Probe("single", (0,)), sel.Probe("single", (1,)), sel.Probe("null", (0, 1))]
    net._probe = (base, list(zip(probes, [zero, one, one], strict=True)), None, None)
    net.record_selection(torch.zeros(5, dtype=torch.long), lambda s, t: s.sum(-1))
    assert seen == [{0: 1.0, 1: 0.0}]


# ------------------------------------------------------------------ the first step's columns


def test_the_first_step_takes_the_columns_most_rows_need():
    """Contributions 1.0, 0.3, 0.6 and 0 (a switch, a feature half the rows need, a
    stronger one, noise): a share of 0.5 takes 0 and 2, largest first; they are protected
    from then on, so no later decision drops them even when they become worth nothing."""
    e = BackwardElimination(4, 0.03)
    assert e.leading(0.5) is None  # nothing measured yet
    _run(e, lambda cols: 1.0 * (0 in cols) + 0.3 * (1 in cols) + 0.6 * (2 in cols), steps=30)
    assert e.leading(0.5) == [0, 2] and e.protected == (0, 2)
    # every column worthless now: 1 and 3 may go, 0 and 2 never
    _run(e, lambda cols: 0.0, steps=400)
    assert set(e.alive) >= {0, 2}
    assert BackwardElimination(2, 0.03).leading(1.0) is None


def test_the_first_step_takes_the_columns_the_typical_row_needs():
    """A switch that every row needs and two branch features that half of the rows each
    need: by their mean contributions (1.0, 0.6, 0.55) a share of 0.5 takes all three,
    and every row of one branch would read the other's feature at its first step; by the
    median row's rise (0.8, 0.0, 0.02) only the switch, and the branches are left to the
    later steps, per row."""
    worth = {0: 1.0, 1: 0.6, 2: 0.55, 3: 0.0}
    median = {0: 0.8, 1: 0.0, 2: 0.02, 3: 0.0}
    e = BackwardElimination(4, 0.03)
    _run(e, lambda cols: sum(worth[c] for c in cols), steps=12, typical=median.get)
    assert e.leading(0.5) == [0]
    # by the means, as when no typical rise is given
    means = BackwardElimination(4, 0.03)
    _run(means, lambda cols: sum(worth[c] for c in cols), steps=12)
    assert means.leading(0.5) == [0, 1, 2]
    # no typical rise above 0: the means decide
    flat = BackwardElimination(4, 0.03)
    _run(flat, lambda cols: sum(worth[c] for c in cols), steps=12, typical=lambda c: 0.0)
    assert flat.leading(0.5) == [0, 1, 2]


def test_the_first_step_reads_its_columns_and_later_steps_choose_per_row():
    """A selecting network told to narrow its first step: once FIRST_STEP_AT of the warm-up
    has passed, a growing share of each training batch's rows (all of them at the end of
    FIRST_STEP_RAMP) reads only the leading column at the first step, while the first
    mask's logits stay as they were; then the first mask is uniform over the leading
    column, the other kept columns are open to the later steps only (their masks are
    computed per row), and a dropped column is read by no step."""
    torch.manual_seed(0)
    net = TabNet(
        4,
        2,
        n_d=4,
        n_a=4,
        mask_design=MaskDesign(faithful=True, warmup=100, budget=0.03, first_step_share=0.5),
    )
    net.selection = BackwardElimination(4, 0.03)
    net.selection.contributions = {0: 0.1, 1: 1.0, 2: 0.2, 3: 0.0}
    net.first_mask_logits.data[3] = -1e6  # dropped
    start = int(FIRST_STEP_AT * 100)
    net.first_mask_step.fill_(start - 1)
    net._choose_first_step()  # not yet
    assert (net.first_mask_logits[:3] == 0).all() and net._narrowing is None
    net.first_mask_step.fill_(start)
    net._choose_first_step()
    shares = []
    with torch.no_grad():
        while net._narrowing is not None:
            net.first_mask_step += 1
            narrowed = net._narrow(4000, torch.device("cpu"))
            if narrowed is not None:
                # only the kept columns outside the first step, whole rows at a time
                assert not narrowed[:, [1, 3]].any()
                assert torch.equal(narrowed[:, 0], narrowed[:, 2])
                assert (net.first_mask_logits[:3] == 0).all()
                shares.append(narrowed[:, 0].float().mean().item())
    assert len(shares) == int(FIRST_STEP_RAMP * 100) - 1
    assert shares[0] < 0.1 and shares[-1] > 0.9
    assert sum(a < b for a, b in itertools.pairwise(shares)) > 0.8 * len(shares)
    assert net.first_mask_logits.tolist() == [-1e3, 0.0, -1e3, -1e6]
    # a column dropped while the first step narrows stays dropped, in every row
    net.first_mask_logits.data[[0, 2]] = 0.0
    net.first_mask_step.fill_(start)
    net._narrowing, net.selection.protected = None, ()
    net._choose_first_step()
    with torch.no_grad():
        for _ in range(3):
            net.first_mask_step += 1
            net._narrow(50, torch.device("cpu"))
        net.first_mask_logits[2] = -1e6  # dropped by the elimination
        net.first_mask_step += 1
        assert not net._narrow(4000, torch.device("cpu"))[:, 2].any()
        while net._narrowing is not None:
            net.first_mask_step += 1
            net._narrow(50, torch.device("cpu"))
    assert net.first_mask_logits.tolist() == [-1e3, 0.0, -1e6, -1e6]
    # in a training step, the rows narrowed read only the leading column at the first step
    net.first_mask_step.fill_(start)
    net._narrowing = (float(start), torch.tensor([True, False, True, False]), None)
    narrowed = torch.tensor([[True, False, True, False], [False] * 4])
    net.first_mask_logits.data[:3] = 0.0
    first, _ = next(net._steps(torch.randn(2, 4), narrowed=narrowed))
    assert first[0].tolist() == [0.0, 1.0, 0.0, 0.0] and (first[1, :3] > 0).all()
    net.first_mask_logits.data[[0, 2]] = -1e3
    net.eval()
    X = torch.randn(64, 4)
    masks = [M for M, _ in net._steps(X)]
    assert (masks[0][:, 1] == 1).all()
    later = torch.stack(masks[1:]).sum(0)
    assert (later[:, 3] == 0).all() and (later[:, [0, 2]] > 0).any()
    read = ~net.never_read(X)
    assert read[:, 1].all() and not read[:, 3].any()
    assert not torch.equal(masks[1][0], masks[1][1])  # computed per row


def test_a_first_step_share_is_checked():
    with pytest.raises(ValueError, match="first_step_share"):
        TabNet(4, 2, mask_design=MaskDesign(faithful=True, first_step_share=0.0))
