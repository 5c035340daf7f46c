"""The faithful design with a warm-up (``MaskDesign.warmup``): masks whose zeros cover the table.

Checked against closed forms and properties, not against training results: where the first
mask's zero falls (the exact entmax threshold from a uniform mask), how its warm-up counts
steps, that the regulariser is the entropy of the steps' mean mask, that the estimators
build this design while issue 29's stays what its files hold, and, on a short fit with the
warm-up shortened, that trained masks certify pairs in every mode and replacing those never
moves a probability.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

import sk_entmax._tabnet.shared as shared
from sk_entmax import TabNetEntmaxClassifier, TabNetEntmaxRegressor
from sk_entmax.nn.tabnet import TabNet
from sk_entmax.nn.tabnet_design import (
    FIRST_MASK_SHARPNESS,
    FIRST_MASK_WARMUP,
    MaskDesign,
    first_mask_warmup,
)
from sk_entmax.nn.tabnet_nets import TabNetClassifierNet
from sk_entmax.nn.tabnet_selection import FIRST_STEP_SHARE, SELECTION_BUDGET

# (entmax_mode, entmax_alpha, the first mapping's alpha)
MODES = [
    ("sparsemax", 1.5, 2.0),
    ("entmax15", 1.5, 1.5),
    ("constant", 1.3, 1.3),
    ("adaptive", 1.5, 1.5),
]
MODE_IDS = [m[0] for m in MODES]


def _net(mode: str, alpha: float, d: int = 6, warmup: int | None = 10, **kw) -> TabNet:
    design = {k: kw.pop(k) for k in ("budget", "first_step_share", "step_rest") if k in kw}
    torch.manual_seed(0)
    return TabNet(
        d,
        2,
        n_d=4,
        n_a=4,
        mask_design=MaskDesign(faithful=True, warmup=warmup, **design),
        entmax_mode=mode,
        entmax_alpha=alpha,
        **kw,
    )


def _first_mask(net: TabNet) -> torch.Tensor:
    net.eval()
    with torch.no_grad():
        _, masks = net.explain(torch.randn(3, net.n_features, dtype=torch.float32))
    return masks[0][0]


@pytest.mark.parametrize(("mode", "entmax_alpha", "alpha"), MODES, ids=MODE_IDS)
@pytest.mark.parametrize("step", [0, 5, 10, 50])
def test_a_feature_drops_out_of_the_first_mask_at_a_gap_of_one_over_k(
    mode, entmax_alpha, alpha, step
):
    """From a uniform mask, alpha-entmax drops a feature whose score is
    ``(d - 1)**(1 - alpha) / (alpha - 1)`` below the others' (closed form); the scale puts
    that gap at ``1 / k`` in the logits, k the warm-up's sharpness."""
    d = 6
    net = _net(mode, entmax_alpha, d)
    net.first_mask_step.fill_(step)
    k = 1 + (FIRST_MASK_SHARPNESS - 1) * min(1.0, step / 10)
    assert net.first_mask_scale() == pytest.approx(k * (d - 1) ** (1 - alpha) / (alpha - 1))
    for factor, dropped in ((1.02, True), (0.98, False)):
        with torch.no_grad():
            net.first_mask_logits.zero_()
            net.first_mask_logits[0] = -factor / k
        M = _first_mask(net)
        assert (M[0] == 0).item() is dropped
        assert (M[1:] > 0).all()
        torch.testing.assert_close(M.sum(), torch.tensor(1.0))


def test_only_training_steps_move_the_warmup():
    net = _net("entmax15", 1.5, warmup=4)
    X = torch.randn(8, 6)
    assert float(net.first_mask_step) == 0
    net.train()
    for expected in (1, 2, 3):
        scores, M_loss = net(X)
        (scores.sum() + M_loss.sum()).backward()
        assert float(net.first_mask_step) == expected
    with torch.no_grad():
        net(X)  # no gradients: not a training step
    net.eval()
    net(X)
    net.explain(X)
    assert float(net.first_mask_step) == 3
    for _ in range(5):
        net.train()
        net(X)
    # the sharpness stops at FIRST_MASK_SHARPNESS once the warm-up is over
    assert net.first_mask_scale() == pytest.approx(FIRST_MASK_SHARPNESS * 5**-0.5 / 0.5)


@pytest.mark.parametrize(("mode", "entmax_alpha", "alpha"), MODES, ids=MODE_IDS)
def test_the_regulariser_is_the_entropy_of_the_mean_mask(mode, entmax_alpha, alpha):
    net = _net(mode, entmax_alpha, n_steps=3).eval()
    with torch.no_grad():
        net.first_mask_logits.copy_(torch.linspace(-1, 1, 6))
        X = torch.randn(20, 6)
        _, M_loss = net(X)
        _, masks = net.explain(X)
    mean = sum(masks.values()) / 3
    entropy = -(mean * torch.log(torch.where(mean > 0, mean, 1.0))).sum(-1)
    torch.testing.assert_close(M_loss, entropy)
    # issue 29's design keeps the mean of the steps' entropies
    old = _net(mode, entmax_alpha, warmup=None, n_steps=3).eval()
    with torch.no_grad():
        _, old_loss = old(X)
        _, old_masks = old.explain(X)
    each = [-(m * torch.log(torch.where(m > 0, m, 1.0))).sum(-1) for m in old_masks.values()]
    torch.testing.assert_close(old_loss, sum(each) / 3)


def test_the_regulariser_is_zero_when_every_step_reads_one_and_the_same_feature():
    net = _net("sparsemax", 2.0).eval()
    with torch.no_grad():
        net.first_mask_logits.copy_(torch.tensor([50.0, 0, 0, 0, 0, 0]))
        # later steps: every score but feature 0's far below (the prior is positive)
        for attentive in net.attentive_transformers[1:]:
            attentive.bn.weight.zero_()
            attentive.bn.bias.copy_(torch.tensor([50.0, -50, -50, -50, -50, -50]))
        _, M_loss = net(torch.randn(5, 6))
    torch.testing.assert_close(M_loss, torch.zeros(5))


def test_issue_29_design_is_what_a_network_without_a_warmup_is():
    """Files saved before the warm-up store no first_mask_warmup: they build this design."""
    net = _net("entmax15", 1.5, warmup=None)
    assert net.first_mask_step is None and net.first_mask_scale() == 1.0
    assert "first_mask_step" not in net.state_dict()
    assert "first_mask_step" in _net("entmax15", 1.5).state_dict()
    with pytest.raises(ValueError, match="warmup"):
        _net("entmax15", 1.5, warmup=0)


FRAME = pd.DataFrame(np.random.default_rng(0).normal(size=(160, 6)), columns=list("abcdef"))
Y = (FRAME["a"] + 0.5 * FRAME["b"] > 0).to_numpy().astype(int)


def test_the_estimators_build_the_certifying_design():
    def module(est):
        return est.net_.module_

    kw = {"max_epochs": 1, "n_d": 4, "n_a": 4, "random_state": 0}
    faithful = TabNetEntmaxClassifier(faithful_masks=True, **kw).fit(FRAME, Y)
    # one training step per training batch
    batches = sum(1 for b in faithful.net_.history[-1]["batches"] if "train_loss" in b)
    assert batches > 1 and float(module(faithful).tabnet.first_mask_step) == batches
    # the warm-up is two thirds of the fit's planned steps (one epoch here), at most 600
    assert module(faithful).tabnet.first_mask_warmup == math.ceil(2 * batches / 3)
    assert module(faithful).tabnet.selection_budget == SELECTION_BUDGET
    assert module(faithful).tabnet.design.first_step_share == FIRST_STEP_SHARE
    assert module(faithful).lambda_sparse == shared.LAMBDA_SPARSE[True]
    assert module(faithful).settled_lambda_sparse == shared.SETTLED_LAMBDA_SPARSE == 1e-2
    assert module(faithful).tabnet.design == MaskDesign(
        faithful=True,
        warmup=math.ceil(2 * batches / 3),
        budget=SELECTION_BUDGET,
        first_step_share=FIRST_STEP_SHARE,
        step_rest=True,
    )
    assert module(faithful).tabnet.rest_logits is not None
    classic = TabNetEntmaxClassifier(faithful_masks=False, **kw).fit(FRAME, Y)
    assert module(classic).tabnet.first_mask_warmup is None
    assert module(classic).lambda_sparse == shared.LAMBDA_SPARSE[False] == 1e-3
    assert module(classic).settled_lambda_sparse is None
    assert module(classic).tabnet.design == MaskDesign()  # the paper's
    assert module(classic).tabnet.rest_logits is None
    chosen = TabNetEntmaxRegressor(faithful_masks=True, lambda_sparse=0.5, **kw)
    chosen.fit(FRAME, FRAME["a"].to_numpy())
    assert module(chosen).lambda_sparse == 0.5
    assert module(chosen).settled_lambda_sparse is None  # a number is the weight throughout
    assert module(chosen).tabnet.design.step_rest
    assert module(chosen).tabnet.first_mask_warmup == math.ceil(2 * batches / 3)
    # a long fit's warm-up is 600 steps, an open-ended one's (partial_fit) too
    assert first_mask_warmup(1200) == first_mask_warmup(None) == FIRST_MASK_WARMUP == 600
    assert first_mask_warmup(900) == 600 and first_mask_warmup(30) == 20


@pytest.mark.parametrize(("mode", "entmax_alpha", "alpha"), MODES, ids=MODE_IDS)
def test_the_estimators_read_only_the_columns_the_elimination_keeps(mode, entmax_alpha, alpha):
    """A fit whose warm-up (shortened to 120 steps) is over: in every mode the labels'
    two columns are kept, the first step reads only the column of largest contribution
    (``a``: ``b`` has half its weight), every mask of every step is exactly 0 on the
    dropped columns, ``never_read`` certifies them, and the noise columns for at least 30%
    of the (row, column) pairs, and replacing what it certifies moves no probability, bit
    for bit."""
    clf = TabNetEntmaxClassifier(
        faithful_masks=True,
        mask_warmup=120,
        entmax_mode=mode,
        entmax_alpha=entmax_alpha,
        n_d=4,
        n_a=4,
        max_epochs=20,
        random_state=0,
    ).fit(FRAME, Y)
    tabnet = clf.net_.module_.tabnet
    assert float(tabnet.first_mask_step) >= 120 and tabnet.selection_budget == SELECTION_BUDGET
    logits = tabnet.first_mask_logits.detach().numpy()
    dropped = logits < -1e5
    assert not dropped[:2].any()
    assert (logits == 0).nonzero()[0].tolist() == [0]  # the first step reads a alone
    _, masks = clf.explain(FRAME)
    assert (masks[0][:, 1:] == 0).all()
    for m in masks.values():
        assert (m[:, dropped] == 0).all()
    unread = clf.never_read(FRAME)
    assert unread[:, dropped].all() and not unread[:, 0].any()
    assert unread[:, 2:].mean() >= 0.3
    before = clf.predict_proba(FRAME)
    # a frame .mask rebuilds (laid out otherwise in memory) and a row-major array: bit for bit
    np.testing.assert_array_equal(clf.predict_proba(FRAME.mask(unread, 1e6)), before)
    # a row-major copy: before pandas 3, FRAME.to_numpy() is a view of FRAME's data (and
    # already row-major, so ascontiguousarray did not copy it): writing into it changed
    # FRAME for every later test
    replaced = np.array(FRAME.to_numpy(), order="C")
    replaced[unread] = -1e6
    replaced = pd.DataFrame(replaced, columns=FRAME.columns)
    np.testing.assert_array_equal(clf.predict_proba(replaced), before)


def test_the_stopping_rule_counts_no_epoch_of_the_warmup():
    """While the module is ``settling`` (the masks still sharpen, so the loss may rise by
    design) no epoch is a miss; the count starts afresh at the first settled epoch."""
    from types import SimpleNamespace

    from skorch.history import History

    from sk_entmax._engine.callbacks import StoppingRule

    class Settling(torch.nn.Module):  # speaks to the engine (sk_entmax.nn.protocols)
        settling = True
        selection_reduce = None
        selection_processes = 1

    module = Settling()
    net = SimpleNamespace(history=History(), module_=module, verbose=0)
    rule = StoppingRule(monitor="train_loss", patience=2, threshold=0.0, threshold_mode="abs")
    rule.on_train_begin(net)
    stopped_at = None
    for epoch in range(1, 15):
        module.settling = epoch <= 5
        net.history.new_epoch()
        net.history.record("epoch", epoch)
        net.history.record("train_loss", 1.0 + 0.1 * epoch)  # never improves
        try:
            rule.on_epoch_end(net)
        except KeyboardInterrupt:
            stopped_at = epoch
            break
    # epoch 6 is the first settled one (the best so far), 7 and 8 are the two misses
    assert stopped_at == 8 and rule.stopped_ and rule.best_epoch_ == 6


@pytest.mark.parametrize("early_stopping", [False, True])
def test_a_faithful_fit_runs_through_its_warmup(early_stopping):
    """With a patience of one epoch a fit would stop as soon as the sharpening raises the
    loss; it runs until the warm-up (shortened to 60 steps) is over, on the training loss
    and on the held-out loss of early stopping (issue 60.4), whose best epoch, the one its
    weights are restored from, is a settled one."""
    clf = TabNetEntmaxClassifier(
        faithful_masks=True,
        mask_warmup=60,
        n_d=4,
        n_a=4,
        max_epochs=30,
        patience=1,
        early_stopping=early_stopping,
        random_state=0,
    ).fit(FRAME, Y)
    assert float(clf.net_.module_.tabnet.first_mask_step) > 60
    assert not clf.net_.module_.settling
    history = clf.net_.history
    assert ("valid_loss" in history[-1]) is early_stopping
    steps = sum("train_loss" in batch for batch in history[0]["batches"])
    first_settled = math.ceil(60 / steps)  # the first epoch that ends after the warm-up
    stopper = dict(clf.net_.callbacks_)["early_stopping"]
    assert stopper.best_epoch_ >= first_settled and clf.n_iter_ > first_settled


def _resting(rest: float) -> TabNet:
    """A selecting network past its warm-up whose first step reads column 0 only (1 to 3
    kept for the later steps, 4 dropped), its later steps' rests at ``rest``."""
    net = _net("sparsemax", 1.5, d=5, budget=0.03, first_step_share=0.5, step_rest=True)
    with torch.no_grad():
        net.first_mask_logits.copy_(torch.tensor([0.0, -1e3, -1e3, -1e3, -1e6]))
        net.first_mask_step.fill_(10)
        net.rest_logits.fill_(rest)
    return net.eval()


def test_a_later_step_that_rests_reads_nothing_and_the_certificate_holds():
    """A later step whose rest takes all of the mass reads nothing: the row reads only the
    first step's column, never_read certifies the others, and they cannot move its
    scores; with the rests far below the scores, every later step reads something."""
    torch.manual_seed(1)
    X = torch.randn(32, 5)
    net = _resting(50.0)
    with torch.no_grad():
        _, masks = net.explain(X)
        scores = net(X)[0]
        other = X.clone()
        other[:, 1:] = 10 * torch.randn(32, 4)
        assert torch.equal(net(other)[0], scores)
        never = net.never_read(X)
    torch.testing.assert_close(masks[0].sum(-1), torch.ones(32))
    assert all((masks[step] == 0).all() for step in (1, 2))
    assert never[:, 1:].all() and not never[:, 0].any()
    reading = _resting(-50.0)
    with torch.no_grad():
        _, masks = reading.explain(X)
    for step in (1, 2):
        torch.testing.assert_close(masks[step].sum(-1), torch.ones(32))
        assert (masks[step][:, 4] == 0).all()  # the dropped column stays unread
    assert not reading.never_read(X)[:, 1:4].all()


def test_the_rests_are_the_certifying_designs_only():
    assert _net("sparsemax", 1.5, step_rest=True).rest_logits.shape == (2,)
    assert _net("sparsemax", 1.5, warmup=None, step_rest=True).rest_logits is None
    assert _net("sparsemax", 1.5).rest_logits is None
    with pytest.raises(ValueError, match="step_rest"):
        _net("sparsemax", 1.5, step_rest="yes")


def test_the_regulariser_weighs_more_once_the_warmup_has_ended():
    """``settled_lambda_sparse`` is the weight once the warm-up has ended, in the
    certifying design only; None keeps ``lambda_sparse`` throughout."""
    torch.manual_seed(0)
    kw = {"n_features": 4, "n_outputs": 2, "n_d": 4, "n_a": 4}
    design = MaskDesign(faithful=True, warmup=10)
    net = TabNetClassifierNet(1e-3, settled_lambda_sparse=1e-2, mask_design=design, **kw)
    assert net.sparsity_weight() == 1e-3
    net.tabnet.first_mask_step.fill_(10)
    assert net.sparsity_weight() == 1e-2
    X, target = torch.randn(8, 4), torch.randint(0, 2, (8,))
    output = net(X)
    scores, entropy = output
    expected = net.data_loss(scores, target) + 1e-2 * entropy
    torch.testing.assert_close(net.loss(output, target), expected)
    same = TabNetClassifierNet(1e-3, mask_design=design, **kw)
    same.tabnet.first_mask_step.fill_(10)
    assert same.sparsity_weight() == 1e-3
    faithful = MaskDesign(faithful=True)  # no warm-up
    paper = TabNetClassifierNet(1e-3, settled_lambda_sparse=1e-2, mask_design=faithful, **kw)
    assert paper.sparsity_weight() == 1e-3
