"""The residual test that keeps, or brings back, a column the model still misses.

:func:`residual_pvalues` is checked against answers known by construction (a residual that
moves with a column, one that does not, mirrored outputs, categories, gaps) and against the
chi-squared it claims under the null (its rejection rate over many independent draws);
:class:`BackwardElimination` keeps what the test says is needed; a :class:`TabNet` brings
back, at the end of its warm-up, a dropped column the label depends on and not a dropped
noise column.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sk_entmax.nn.tabnet import TabNet
from sk_entmax.nn.tabnet_design import MaskDesign
from sk_entmax.nn.tabnet_residual import MIN_LEVEL_ROWS, residual_pvalues
from sk_entmax.nn.tabnet_selection import (
    DROPPED_LOGIT,
    LATER_LOGIT,
    BackwardElimination,
    HeldOutRows,
)


def _binary_gradient(p: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """A two-output classifier's gradient of the log loss: probabilities minus one-hot."""
    return torch.stack([(1 - p) - (1 - y), p - y], 1)


def test_a_column_the_label_still_depends_on_has_a_tiny_p_value():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(2000, 3, generator=g)
    # the label depends on column 0 linearly and on column 1 through its square; the
    # model knows neither (a constant probability); column 2 is noise
    logit = 1.5 * X[:, 0] + (X[:, 1] ** 2 - 1.0) - 1.0
    y = (torch.rand(2000, generator=g) < torch.sigmoid(logit)).double()
    p = residual_pvalues(X, _binary_gradient(torch.full((2000,), float(y.mean())), y), [False] * 3)
    assert p[0] < 1e-20 and p[1] < 1e-10
    assert p[2] > 1e-3


def test_a_column_the_model_has_learned_leaves_no_signal():
    g = torch.Generator().manual_seed(1)
    X = torch.randn(2000, 2, generator=g)
    prob = torch.sigmoid(2.0 * X[:, 0])
    y = (torch.rand(2000, generator=g) < prob).double()
    p = residual_pvalues(X, _binary_gradient(prob.double(), y), [False, False])
    assert p[0] > 1e-3  # the model's own probabilities: nothing of column 0 is left


def test_the_null_rejection_rate_is_the_level():
    """Under the null (a residual independent of the columns) the p-values are close to
    uniform: over 1500 column draws, the share below 0.05 and 0.01 is within sampling error
    of the level (a rare class, a category with small levels and gaps included)."""
    g = torch.Generator().manual_seed(2)
    pvalues = []
    for _ in range(150):
        X = torch.randn(500, 10, generator=g)
        X[:, 8] = torch.randint(0, 8, (500,), generator=g).double()
        X[:40, 9] = float("nan")
        y = (torch.rand(500, generator=g) < 0.1).double()
        grad = _binary_gradient(torch.full((500,), 0.1, dtype=torch.float64), y)
        pvalues.append(residual_pvalues(X, grad, [False] * 8 + [True, False]))
    pvalues = torch.cat(pvalues)
    for level in (0.05, 0.01):
        rate = float((pvalues < level).double().mean())
        error = (level * (1 - level) / pvalues.numel()) ** 0.5
        assert abs(rate - level) < 4 * error + 0.004, (level, rate)


def test_a_column_says_nothing_beyond_a_kept_column_it_follows():
    """The model has not yet learned kept column 0; column 1 is column 0 plus a little
    noise. Alone, 1 follows the residual; given 0, it says nothing more. Column 2, which
    the label also depends on, is flagged either way."""
    g = torch.Generator().manual_seed(6)
    X = torch.randn(2000, 3, generator=g)
    X[:, 1] = X[:, 0] + 0.05 * torch.randn(2000, generator=g)
    y = (torch.rand(2000, generator=g) < torch.sigmoid(2.0 * X[:, 0] + X[:, 2])).double()
    residual = torch.full((2000,), 0.5, dtype=torch.float64) - y
    alone = residual_pvalues(X[:, 1:], residual, [False, False])
    given = residual_pvalues(X[:, 1:], residual, [False, False], X[:, :1], [False])
    assert alone[0] < 1e-20 and given[0] > 1e-3
    assert alone[1] < 1e-10 and given[1] < 1e-10


def test_a_copy_of_a_kept_column_says_nothing():
    """Partialled out, an exact copy of a kept column leaves only rounding: no test."""
    g = torch.Generator().manual_seed(7)
    X = torch.randn(500, 1, generator=g, dtype=torch.float64)
    residual = torch.randn(500, generator=g, dtype=torch.float64) + X[:, 0]
    assert residual_pvalues(X, residual, [False], X.clone(), [False]).item() == 1.0


def test_mirrored_outputs_count_once():
    """A binary classifier's two outputs are one residual: its p-value is that of the one
    output alone, not a Bonferroni of two."""
    g = torch.Generator().manual_seed(3)
    X = torch.randn(300, 2, generator=g)
    y = (torch.rand(300, generator=g) < torch.sigmoid(0.5 * X[:, 0])).double()
    prob = torch.full((300,), 0.5, dtype=torch.float64)
    both = residual_pvalues(X, _binary_gradient(prob, y), [False, False])
    one = residual_pvalues(X, prob - y, [False, False])
    torch.testing.assert_close(both, one)


def test_a_categorys_levels_and_a_gap_carry_the_signal():
    g = torch.Generator().manual_seed(4)
    n = 1200
    codes = torch.randint(0, 4, (n,), generator=g).double()
    gaps = torch.randn(n, generator=g)
    gaps[:300] = float("nan")
    # level 2 and a missing value raise the label; neither is monotone in the codes' order
    logit = torch.where(codes == 2, 1.5, -0.5) + torch.where(torch.isnan(gaps), 1.5, 0.0)
    y = (torch.rand(n, generator=g) < torch.sigmoid(logit)).double()
    X = torch.stack([codes, gaps], 1)
    p = residual_pvalues(
        X, torch.full((n,), float(y.mean()), dtype=torch.float64) - y, [True, False]
    )
    assert p[0] < 1e-10 and p[1] < 1e-10


def test_small_levels_share_one_indicator():
    """Levels with fewer than ``MIN_LEVEL_ROWS`` rows are pooled, so a level of one row,
    whatever its residual, cannot decide on its own."""
    n = 400
    codes = torch.zeros(n, dtype=torch.float64)
    codes[: n // 2] = 1.0
    codes[-1] = 7.0  # one row alone
    residual = torch.tensor([1.0, -1.0]).repeat(n // 2).double()
    residual[-1] = 50.0
    p = residual_pvalues(codes[:, None], residual, [True])
    assert MIN_LEVEL_ROWS > 1 and p[0] > 0.01


def test_a_constant_column_or_residual_says_nothing():
    X = torch.ones(50, 1, dtype=torch.float64)
    assert residual_pvalues(X, torch.randn(50), [False]).item() == 1.0
    assert residual_pvalues(torch.randn(50, 1), torch.zeros(50), [False]).item() == 1.0


# --------------------------------------------------------------------- the elimination


def _feed(elimination: BackwardElimination, worth, needed, steps=200) -> list:
    drops = []
    for _ in range(steps):
        probes = elimination.probes()
        if not probes:
            break
        gone = set(range(elimination.n_columns)) - set(elimination.alive)
        losses = [
            (probe, 2.0 if probe.kind == "null" else 1.0 + worth(set(probe.columns) | gone))
            for probe in probes
        ]
        dropped = elimination.record(1.0 + worth(gone), losses, None, needed)
        if dropped:
            drops.append(sorted(dropped))
    return drops


def test_a_column_the_residual_needs_is_kept_for_good():
    """Columns 1, 2 and 3 are worth nothing to the model as it is; the residual says 2
    still holds signal: 1 and 3 go, 2 stays, and no later decision drops it."""
    asked = []

    def needed(columns):
        asked.append(sorted(columns))
        return {2} & set(columns)

    e = BackwardElimination(4, 0.4)
    drops = _feed(e, lambda cols: 0.5 * len(cols & {0}), needed)
    assert drops == [[1, 3]] and e.alive == [0, 2] and e.kept == {2}
    assert asked[0] == [1, 2, 3]  # asked once, with the group the budget allowed
    assert all(2 not in a for a in asked[1:])


def test_a_drop_that_keeps_everything_spends_no_budget():
    e = BackwardElimination(3, 0.4)
    drops = _feed(e, lambda cols: 0.0, lambda columns: set(columns))
    assert drops == [] and e.alive == [0, 1, 2] and e.kept == {0, 1, 2}
    assert e.budget == pytest.approx(0.4)


# ------------------------------------------------------------------------ the network


def _readmitting_net(first_step_share):
    torch.manual_seed(0)
    net = TabNet(
        4,
        2,
        n_d=4,
        n_a=4,
        n_steps=2,
        mask_design=MaskDesign(
            faithful=True,
            warmup=10,
            budget=0.1,
            first_step_share=first_step_share,
            step_rest=True,
        ),
    )
    g = torch.Generator().manual_seed(5)
    X = torch.randn(1500, 4, generator=g)
    # the label depends on columns 0 and 1; 2 and 3 are noise
    y = (torch.rand(1500, generator=g) < torch.sigmoid(2.0 * X[:, 0] - 2.0 * X[:, 1])).long()
    net.hold_out(HeldOutRows(X[:300], y[:300], lambda: None, torch.ones(300)))
    net.test_residuals_on(X, y)
    with torch.no_grad():
        net.first_mask_logits[1:] = DROPPED_LOGIT  # 1 was dropped before it was learned
    return net


def _cross_entropy(scores, target):
    return torch.nn.functional.cross_entropy(scores, target, reduction="none")


@pytest.mark.parametrize("first_step_share", [0.5, None])
def test_the_warm_ups_end_brings_back_a_dropped_column_the_label_needs(first_step_share):
    net = _readmitting_net(first_step_share)
    net._readmit(_cross_entropy)
    assert net.selection_readmitted == (1,)
    assert net.dropped_columns() == [2, 3]
    expected = LATER_LOGIT if first_step_share is not None else 0.0
    assert net.first_mask_logits[1].item() == expected
    # the certificate follows: column 1 may now be read, 2 and 3 still never
    X = torch.randn(64, 4)
    never = net.never_read(X)
    assert never[:, 2:].all()


def test_the_residual_test_leaves_the_models_statistics_alone():
    net = _readmitting_net(0.5)
    net.train()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    net._signal_left([1, 2, 3], _cross_entropy)
    after = net.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert net.training


def test_without_rows_to_test_on_nothing_is_tested():
    net = _readmitting_net(0.5)
    net.residual_rows = None
    assert net._signal_left([1, 2], _cross_entropy) == set()
    assert np.isfinite(net.first_mask_logits.detach().numpy()).all()
