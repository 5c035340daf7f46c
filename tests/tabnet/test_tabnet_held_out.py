"""A faithful fit's held-out rows: the selection's probes run on rows the network does
not train on while it selects, and a check at the end of the warm-up puts the columns back
when the loss on those rows rose.

The draws and the check's statistics are fed inputs whose right answer is known by
construction; the estimator is checked for what it promises around them: the rows go back
to training when the warm-up ends, nothing of them is left on the saved model, and a check
that put columns back is said in ``fit``'s warnings, the report and saved files, with a
certificate that then claims nothing.
"""

from __future__ import annotations

import copy
import functools
import pickle

import numpy as np
import pandas as pd
import pytest
import torch

from sk_entmax import TabNetEntmaxClassifier, report
from sk_entmax._tabnet.shared import held_out_rows
from sk_entmax.nn.tabnet import TabNet
from sk_entmax.nn.tabnet_design import MaskDesign
from sk_entmax.nn.tabnet_selection import (
    FIRST_STEP_AT,
    HELD_OUT_MIN,
    HELD_OUT_SHARE,
    SAMPLES,
    BackwardElimination,
    HeldOutRows,
    SelectionCheck,
)
from sk_entmax.persistence import load, save

ROWS = 400
FRAME = pd.DataFrame(np.random.default_rng(1).normal(size=(ROWS, 5)), columns=list("abcde"))
Y = (FRAME["a"] - FRAME["b"] > 0).to_numpy().astype(int)


def test_the_held_out_rows_are_a_share_of_each_class():
    y = np.array([0] * 90 + [1] * 10 + [2] * 3)
    held = held_out_rows(y, 0.2, seed=0)
    assert np.all(np.diff(held) > 0)  # sorted, no repeat
    assert np.bincount(y[held], minlength=3).tolist() == [18, 2, 0]  # a class of 3 keeps all
    np.testing.assert_array_equal(held, held_out_rows(y, 0.2, seed=0))
    assert not np.array_equal(held, held_out_rows(y, 0.2, seed=1))
    # a continuous (or multi-label) target: a share of all the rows
    assert held_out_rows(np.linspace(0, 1, 50), 0.2, seed=0).size == 10
    assert held_out_rows(np.zeros((50, 3)), 0.2, seed=0).size == 10


def test_the_probes_take_the_held_out_rows_in_turn():
    X = torch.arange(300.0).reshape(300, 1)
    rows = HeldOutRows(X, X[:, 0], lambda: None, 2 * X[:, 0])
    first, _, _, first_idx = rows.next_rows()
    second, y, weight, idx = rows.next_rows()
    assert first[:, 0].tolist() == list(first_idx) == list(range(256))
    assert second[:, 0].tolist() == list(idx) == [(256 + i) % 300 for i in range(256)]
    assert torch.equal(y, second[:, 0]) and torch.equal(weight, 2 * second[:, 0])
    again = rows.rows_at(idx)
    assert all(torch.equal(a, b) for a, b in zip(again, (second, y, weight), strict=True))


def test_each_class_weighs_alike_in_the_probes_loss():
    """Held-out rows of a 5% class weigh as much in all as the other 95%: a column only the
    rare class needs shows in the probes' loss."""
    y = np.array([0] * 380 + [1] * 20)
    frame = pd.DataFrame({"a": np.arange(400.0), "b": np.zeros(400)})
    clf = TabNetEntmaxClassifier(max_epochs=2, n_d=4, n_a=4, random_state=0)
    stash = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(TabNet, "hold_out", lambda self, rows: stash.append(rows))
        clf.fit(frame, y)
    [rows] = stash
    weight = rows.weight.numpy()
    assert rows.y.tolist().count(1) == 4 and len(rows.y) == 80
    np.testing.assert_allclose([weight[rows.y == c].sum() for c in (0, 1)], [40, 40])


#: the held-out rows of the check's tests: 100, in two sets the first steps alternate
ROWS_FIRST = [tuple(range(50)), tuple(range(50, 100))]


def _fed(first: np.ndarray, weights: np.ndarray | None = None) -> BackwardElimination:
    """An elimination of 4 columns fed, over its first ``SAMPLES`` steps, the held-out
    rows' losses ``first`` (one per row: each step gets its set's rows, with a wobble that
    averages out) and no probe losses (nothing is decided); then a drop."""
    weights = np.ones(100) if weights is None else weights
    e = BackwardElimination(4, 0.03)
    for step in range(SAMPLES):
        idx = ROWS_FIRST[step % 2]
        wobble = 0.01 * (-1) ** (step // 2)
        losses = [float(first[i]) + wobble for i in idx]
        e.record(float(np.mean(losses)), [], rows=(idx, losses, [float(weights[i]) for i in idx]))
    e.alive = [0, 1]
    return e


def _rows(values: np.ndarray) -> dict[int, float]:
    return {i: float(v) for i, v in enumerate(values)}


def _measured(e: BackwardElimination, values: np.ndarray) -> BackwardElimination:
    """``e`` given the rows' losses ``values`` measured again over ``SAMPLES`` steps, with
    a wobble that averages out."""
    for step in range(SAMPLES):
        e.remeasured(_rows(values + 0.02 * (-1) ** step))
    return e


BASE = 0.5 + 0.1 * np.sin(np.arange(100.0))  # the rows' losses differ
JITTER = 0.01 * np.sin(1.3 * np.arange(100.0))  # a row's loss moves, the mean barely


def test_the_check_pairs_each_row_with_itself_and_weighs_the_rows_spread():
    """A rise every row shows is one; a fall, the same level, or a rise only a few rows
    show (as when a small fit overfits them) is not; nor is anything before the first
    ``SAMPLES`` steps."""
    assert _fed(BASE).first_chunks() == ROWS_FIRST
    risen = _fed(BASE)
    later = BASE + 0.1 + 0.01 * np.cos(np.arange(100.0))
    _measured(risen, later).ending()
    first, latest = risen.loss_rise()
    assert first == pytest.approx(BASE.mean()) and latest == pytest.approx(later.mean())
    for later in (BASE, BASE - 0.1):
        e = _fed(BASE)
        _measured(e, later).ending()
        assert e.loss_rise() is None
    few = BASE.copy()
    few[:3] += 1.0  # a mean rise of 0.03, 1.8 standard errors
    e = _fed(BASE)
    _measured(e, few).ending()
    assert e.loss_rise() is None
    # the same rows on a second process (every sum doubled): 2.5 standard errors
    assert e.loss_rise(lambda sums: [2 * v for v in sums]) is not None
    short = BackwardElimination(4, 0.03)
    short.record(0.5, [], rows=((0, 1), [0.5, 0.5], [1.0, 1.0]))
    short.remeasured({0: 0.9, 1: 0.9})
    short.ending()
    assert short.loss_rise() is None
    # weights: the rows that rise weigh nothing, so nothing rose
    weights = np.ones(100)
    weights[:50] = 0.0
    e = _fed(BASE, weights)
    _measured(e, np.where(np.arange(100) < 50, BASE + 1.0, BASE)).ending()
    assert e.loss_rise() is None


def test_the_check_tells_a_costly_narrowing_from_costly_drops():
    """The rows' losses when the first step began to narrow say which part of the
    selection cost: flat until then (the drops cost nothing), or already risen."""
    e = _fed(BASE)
    assert e.drops_cost()  # no narrowing yet: unknown, so assumed
    _measured(e, BASE).narrowing()
    assert not e.drops_cost()
    risen = _fed(BASE)
    _measured(risen, BASE + 0.1).narrowing()
    assert risen.drops_cost()
    unmeasured = _fed(BASE)
    unmeasured.narrowing()  # no held-out rows: nothing measured again
    assert unmeasured.drops_cost()
    short = BackwardElimination(4, 0.03)
    short.record(0.5, [], rows=((0, 1), [0.5, 0.5], [1.0, 1.0]))
    short.remeasured({0: 0.5, 1: 0.5})
    short.narrowing()
    assert short.drops_cost()  # too few first steps: assumed


def test_a_warm_up_that_narrows_before_its_first_steps_are_measured_gets_no_verdict():
    """The check compares with losses from before the selection: when the first step
    narrows before ``SAMPLES`` steps were measured (a warm-up of a few dozen steps), there
    are none, and a rise, however large, gives no verdict."""
    e = BackwardElimination(3, 0.03)
    idx = tuple(range(50))
    for _ in range(SAMPLES - 3):
        e.record(0.5, [], rows=(idx, [0.5] * 50, [1.0] * 50))
    e.narrowing()
    assert not e.first_steps()
    for _ in range(3):
        e.record(0.5, [], rows=(idx, [0.5] * 50, [1.0] * 50))
    assert e.first_losses.n == SAMPLES - 3
    for _ in range(SAMPLES):
        e.remeasured({r: 5.0 + 0.01 * r for r in idx})
    e.ending()
    assert e.loss_rise() is None


def test_the_rows_are_measured_again_as_the_probes_measured_them():
    """``_first_rows_now`` runs the first steps' sets of rows in training mode, as the
    probes did (a set's batch statistics), averages a row over the sets that hold it, and
    leaves the running statistics as they were, after the step's forward too."""
    torch.manual_seed(0)
    net = TabNet(5, 2, mask_design=MaskDesign(faithful=True, warmup=10, budget=0.03))
    X = torch.randn(30, 5)
    y = torch.randint(0, 2, (30,))
    net.hold_out(HeldOutRows(X, y, lambda: None, torch.ones(30)))
    net.selection = BackwardElimination(5, 0.03)
    chunks = [tuple(range(20)), tuple(range(10, 30))]
    for idx in chunks:
        net.selection.record(0.5, [], rows=(idx, [0.5] * 20, [1.0] * 20))

    def loss(scores, target):
        return torch.nn.functional.cross_entropy(scores, target, reduction="none")

    net.train()
    out, _ = net(torch.randn(40, 5))  # a step's forward: its graph holds the buffers
    before = [b.clone() for b in net.buffers()]
    rows = net._first_rows_now(loss)
    out.sum().backward()  # the graph is intact
    assert all(torch.equal(a, b) for a, b in zip(before, net.buffers(), strict=True))
    saved = copy.deepcopy(net)
    with torch.no_grad():
        expected = [loss(saved._scores(X[list(idx)]), y[list(idx)]) for idx in chunks]
    assert sorted(rows) == list(range(30))
    assert rows[0] == pytest.approx(float(expected[0][0]))
    assert rows[15] == pytest.approx((float(expected[0][15]) + float(expected[1][5])) / 2)
    assert rows[25] == pytest.approx(float(expected[1][15]))


def test_the_rows_are_measured_again_before_the_narrowing_and_before_the_end():
    """Over the ``SAMPLES`` steps before the first step may narrow (and on until it does),
    and over the warm-up's last ``SAMPLES`` steps; not between, and not before the
    narrowing without one."""
    options = {"faithful": True, "warmup": 100, "budget": 0.03}
    net = TabNet(5, 2, mask_design=MaskDesign(first_step_share=0.5, **options))
    net.selection = BackwardElimination(5, 0.03)
    at = int(FIRST_STEP_AT * 100)

    def measured(step: int) -> bool:
        net.first_mask_step.fill_(step)
        return net._remeasuring()

    assert [measured(s) for s in (at - SAMPLES - 1, at - SAMPLES, at - 1, at + 5)] == [
        False,
        True,
        True,
        True,
    ]
    net.selection.narrowing()
    assert not measured(at + 5) and not measured(100 - SAMPLES - 1)
    assert all(measured(s) for s in range(100 - SAMPLES, 100))
    plain = TabNet(5, 2, mask_design=MaskDesign(**options))
    assert plain.design.first_step_share is None  # no narrowing
    plain.selection = BackwardElimination(5, 0.03)
    plain.first_mask_step.fill_(at)
    assert not plain._remeasuring()


def _checked(drops_cost: bool) -> tuple[TabNet, torch.Tensor]:
    """A network whose selection dropped column 1 and left column 3 to the later steps,
    and whose held-out loss rose by the end of the warm-up (before the narrowing too, if
    ``drops_cost``); its never_read before the check."""
    torch.manual_seed(0)
    net = TabNet(5, 2, mask_design=MaskDesign(faithful=True, warmup=10, budget=0.03))
    net.selection = _fed(np.full(100, 0.5))
    _measured(net.selection, np.full(100, 0.7 if drops_cost else 0.5) + JITTER).narrowing()
    _measured(net.selection, np.full(100, 0.7) + JITTER).ending()
    with torch.no_grad():
        net.first_mask_logits[1] = -1e6  # dropped
        net.first_mask_logits[3] = -1e3  # later steps only
    net.eval()
    X = torch.randn(16, 5)
    return net, X


def test_a_costly_narrowing_gives_the_first_step_its_columns_back_and_keeps_the_drops():
    net, X = _checked(drops_cost=False)
    assert net.dropped_columns() == [1]
    net._check_selection()
    assert net.selection_check == SelectionCheck(
        pytest.approx(0.5), pytest.approx(0.7 + JITTER.mean()), (3,), first_step_only=True
    )
    assert net.first_mask_logits.tolist() == [0.0, -1e6, 0.0, 0.0, 0.0]
    never = net.never_read(X)
    assert never[:, 1].all() and not never[:, [0, 2, 3, 4]].any()
    assert net.dropped_columns() == [1]


def test_the_check_puts_every_column_back_and_the_certificate_claims_nothing():
    net, X = _checked(drops_cost=True)
    assert net.never_read(X)[:, 1].all()
    net._check_selection()
    assert net.selection_check == SelectionCheck(
        pytest.approx(0.5), pytest.approx(0.7 + JITTER.mean()), (1, 3)
    )
    assert (net.first_mask_logits == 0).all()
    assert not net.never_read(X).any() and net.dropped_columns() == []


def _fit(**kw) -> TabNetEntmaxClassifier:
    return TabNetEntmaxClassifier(max_epochs=12, n_d=4, n_a=4, random_state=0, **kw).fit(FRAME, Y)


@functools.cache
def _shared() -> TabNetEntmaxClassifier:
    """One fit for the tests that only set what the check left on it (on a copy)."""
    return _fit()


def _copied() -> TabNetEntmaxClassifier:
    return copy.deepcopy(_shared())


def test_a_faithful_fit_gives_its_held_out_rows_back_and_keeps_nothing_of_them():
    """The rows are held out (79 of 400, above the minimum) and given back when the
    warm-up ends; the fitted network keeps no reference to them and pickles."""
    assert int(HELD_OUT_SHARE * ROWS) >= HELD_OUT_MIN
    given = []
    original = HeldOutRows.__init__

    def spy(self, X, y, give_back, *rest):
        def back():
            given.append(len(X))
            give_back()

        original(self, X, y, back, *rest)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(HeldOutRows, "__init__", spy)
        clf = _fit()
    tabnet = clf.net_.module_.tabnet
    # once, with the held-out rows: a fifth of each class (rounded down)
    assert given == [sum(int(HELD_OUT_SHARE * n) for n in np.bincount(Y))]
    assert tabnet.held_out is None and float(tabnet.first_mask_step) >= tabnet.first_mask_warmup
    pickle.loads(pickle.dumps(clf))


def test_a_small_fit_probes_its_batches_and_holds_out_rows_for_the_check():
    """Below the minimum the probes run on the batches; the rows are still held out, for
    the check only (``probed`` False), and go back to training when the warm-up ends."""
    small = int(HELD_OUT_MIN / HELD_OUT_SHARE) - 10
    clf = TabNetEntmaxClassifier(max_epochs=3, n_d=4, n_a=4, random_state=0)
    stash = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(TabNet, "hold_out", lambda self, rows: stash.append(rows))
        clf.fit(FRAME[:small], Y[:small])
    (rows,) = stash
    held = held_out_rows(Y[:small], HELD_OUT_SHARE, seed=0)  # a share of each class
    assert rows.probed is False and 0 < rows.X.shape[0] == held.size < HELD_OUT_MIN
    assert sorted(np.bincount(rows.y.numpy())) == sorted(np.bincount(Y[held]))


def _small_net(steps: int) -> TabNet:
    """A network with held-out rows too few to probe on (``probed`` False), for its check
    only, trained ``steps`` steps into its selection."""
    torch.manual_seed(0)
    X = torch.randn(48, 5)
    y = (X[:, 0] > 0).long()
    net = TabNet(5, 2, mask_design=MaskDesign(faithful=True, warmup=100, budget=0.03))
    net.hold_out(HeldOutRows(X[:40], y[:40], lambda: None, torch.ones(40), probed=False))
    net.first_mask_step.fill_(30)  # the selection's window begins at 30% of the warm-up
    head = torch.nn.Linear(2, 2)

    def loss(scores, target):
        return torch.nn.functional.cross_entropy(head(scores), target, reduction="none")

    net.train()
    for _ in range(steps):
        net(X)
        net.record_selection(y, loss)
    return net


def test_a_small_fit_measures_its_checked_rows_over_the_first_steps_only():
    """The probes run on the batch; the checked rows are measured, all of them in one set,
    over the selection's first ``SAMPLES`` steps (the check's first losses), and not after."""
    net = _small_net(SAMPLES + 3)
    selection = net.selection
    assert selection.first_losses.n == SAMPLES
    assert sorted(selection.first_rows) == list(range(40))
    assert selection.first_chunks() == [tuple(range(40))]
    assert set(selection.row_weights.values()) == {1.0}
    assert net.held_out._turn == SAMPLES  # drawn at the first steps only, never probed
    assert net.held_out is not None  # until the warm-up ends


def test_a_check_that_put_columns_back_is_said_saved_and_reported(tmp_path):
    """The wiring after a check that fired (set on the fitted network, as the check sets it
    at the end of the warm-up): fit's warning names the columns and both losses, the
    attributes survive a saved file, and the report says it first."""
    clf = _copied()
    clf.net_.module_.tabnet.first_mask_logits.data.zero_()  # every column back
    clf.net_.module_.tabnet.selection_check = SelectionCheck(0.41, 0.52, (2, 4))
    with pytest.warns(UserWarning, match=r"from 0\.41 to 0\.52.*2 of 5 columns.*'c', 'e'"):
        clf._after_fit(clf._validate_predict_data(FRAME))
    assert clf.restored_features_.tolist() == [2, 4]
    np.testing.assert_allclose(clf.selection_losses_, [0.41, 0.52])
    save(clf, tmp_path / "m.safetensors")
    loaded = load(tmp_path / "m.safetensors")
    assert loaded.restored_features_.tolist() == [2, 4]
    page = report.feature_mask_report(loaded, FRAME[:20], tmp_path / "r.html").read_text(
        encoding="utf-8"
    )
    assert "Every column was kept." in page and "&#x27;c&#x27;, &#x27;e&#x27;" in page
    # a fit where the check did not fire has neither attribute
    quiet = _copied()
    quiet.net_.module_.tabnet.selection_check = None
    quiet._after_fit(quiet._validate_predict_data(FRAME))
    assert not hasattr(quiet, "restored_features_")
    assert not hasattr(quiet, "selection_losses_")


def test_a_check_that_undid_the_narrowing_only_says_so(tmp_path):
    """When the dropped columns stay out (the narrowing cost, the drops did not), the
    warning and the report name both: the columns back in the first step, and the dropped
    ones, still certified."""
    clf = _copied()
    tabnet = clf.net_.module_.tabnet
    with torch.no_grad():  # as the check leaves it: 'e' dropped, the others all read
        tabnet.first_mask_logits.zero_()
        tabnet.first_mask_logits[4] = -1e6
    tabnet.selection_check = SelectionCheck(0.41, 0.52, (0, 1, 2, 3), first_step_only=True)
    with pytest.warns(
        UserWarning, match=r"first step narrowed.*put 4 columns.*dropped 1 column \('e'\) is"
    ):
        clf._after_fit(clf._validate_predict_data(FRAME))
    page = report.feature_mask_report(clf, FRAME[:20], tmp_path / "r.html").read_text(
        encoding="utf-8"
    )
    assert "The first step reads every kept column." in page
    assert clf.never_read(FRAME[:20])[:, 4].all()


def test_the_columns_the_residual_test_kept_are_said_saved_and_reported(tmp_path, capsys):
    """The wiring of ``needed_features_`` (set on the fitted network as the selection sets
    it): the columns the residual test kept from a drop and those it brought back at the end
    of the warm-up, sorted and once each; saved and loaded; the report's box and the
    command line's note name them. Empty when it kept none; absent when no selection ran."""
    from sk_entmax.cli.report import _say_needed

    clf = _copied()
    tabnet = clf.net_.module_.tabnet
    tabnet.selection = BackwardElimination(5, 0.3)
    tabnet.selection.kept = {3, 1}
    tabnet.selection_readmitted = (3, 4)
    clf._after_fit(clf._validate_predict_data(FRAME))
    assert clf.needed_features_.tolist() == [1, 3, 4]
    save(clf, tmp_path / "m.safetensors")
    loaded = load(tmp_path / "m.safetensors")
    assert loaded.needed_features_.tolist() == [1, 3, 4]
    page = report.feature_mask_report(loaded, FRAME[:20], tmp_path / "r.html").read_text(
        encoding="utf-8"
    )
    assert "Columns kept because the model needed them." in page
    assert "kept 3 columns (&#x27;b&#x27;, &#x27;d&#x27;, &#x27;e&#x27;)" in page
    _say_needed(loaded)
    assert "note: TabNetEntmaxClassifier's column selection kept 3 columns (b, d, e)" in (
        capsys.readouterr().out
    )
    # the test kept none: empty, and nothing said
    tabnet.selection.kept, tabnet.selection_readmitted = set(), ()
    clf._after_fit(clf._validate_predict_data(FRAME))
    assert clf.needed_features_.tolist() == []
    _say_needed(clf)
    assert capsys.readouterr().out == ""
    page = report.feature_mask_report(clf, FRAME[:20], tmp_path / "q.html").read_text(
        encoding="utf-8"
    )
    assert "needed them" not in page
    # no selection ran (faithful_masks=False): no attribute
    tabnet.selection = None
    clf._after_fit(clf._validate_predict_data(FRAME))
    assert not hasattr(clf, "needed_features_")
