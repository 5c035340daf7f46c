"""Faithful TabNet masks (issue 29): with ``faithful_masks=True`` a feature whose mask is 0 at
every step cannot change that row's prediction; with the paper's design it can.

The certificate is tested as a property, against the model itself: in each row, every feature
``never_read`` lists is replaced (by another row's value, by a random draw, by NaN where the
column takes NaN, by an unseen category), and ``predict_proba`` must not move by a single bit.
The masks are made sparse by hand as well as by training, so the test does not depend on how
sparse a short fit happens to be."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch

from sk_entmax import TabNetEntmaxClassifier
from sk_entmax.persistence import load, save

MODES = [
    {"entmax_mode": "sparsemax"},
    {"entmax_mode": "entmax15"},
    {"entmax_mode": "constant", "entmax_alpha": 1.3},
    {"entmax_mode": "adaptive"},
]
MODE_IDS = ["sparsemax", "entmax15", "constant-1.3", "adaptive"]
SMALL = {"n_d": 4, "n_a": 4, "n_steps": 3, "max_epochs": 4, "random_state": 0}


def _frame(n: int = 240, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """Numbers, a text column with gaps, and a number column with gaps (a missing indicator)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 5)), columns=[f"x{i}" for i in range(5)])
    frame["color"] = pd.Series(rng.choice(["red", "green", "blue", None], n), dtype=object)
    gappy = rng.normal(size=n)
    gappy[rng.random(n) < 0.2] = np.nan
    frame["gappy"] = gappy
    y = (frame["x0"] + frame["x1"] > 0).to_numpy().astype(int)
    y += (frame["color"] == "red").to_numpy()  # three classes
    return frame, y


FRAME, Y = _frame()


def _sharpen(clf: TabNetEntmaxClassifier, seed: int) -> TabNetEntmaxClassifier:
    """A copy of ``clf`` with the first mask's logits and the attention weights spread, so
    that every mapping, softmax-like ones too, gives masks with many exact zeros (weights
    set by hand: the certificate must hold for any weights, not just trained ones)."""
    clf = copy.deepcopy(clf)
    rng = torch.Generator().manual_seed(seed)
    tabnet = clf.net_.module_.tabnet
    with torch.no_grad():
        logits = tabnet.first_mask_logits
        logits.copy_(torch.randn(logits.shape, generator=rng, dtype=logits.dtype) * 8)
        for attentive in tabnet.attentive_transformers:
            attentive.fc.weight.mul_(8.0)
    return clf


def _replaced(frame: pd.DataFrame, unread: np.ndarray, how: str, seed: int) -> pd.DataFrame:
    """``frame`` with every (row, feature) pair of ``unread`` given another value."""
    rng = np.random.default_rng(seed)
    out = frame.copy()
    n = len(frame)
    for j, name in enumerate(frame.columns):
        rows = np.flatnonzero(unread[:, j])
        if not rows.size:
            continue
        column = frame[name]
        if how == "other rows":
            values = column.to_numpy()[rng.integers(0, n, rows.size)]
        elif name == "color":  # random draws: known and unseen categories, and gaps
            values = rng.choice(np.array(["red", "blue", "mauve", None], dtype=object), rows.size)
        elif how == "random":
            values = rng.normal(size=rows.size) * 100.0
        else:  # "missing": NaN where the column takes NaN, else a far-out value
            values = np.full(rows.size, np.nan if name == "gappy" else 1e6)
        out.loc[out.index[rows], name] = values
    return out


@pytest.fixture(scope="module", params=MODES, ids=MODE_IDS)
def faithful(request):
    return TabNetEntmaxClassifier(faithful_masks=True, **SMALL, **request.param).fit(FRAME, Y)


@pytest.mark.parametrize("how", ["other rows", "random", "missing"])
@pytest.mark.parametrize("sharpen", [False, True], ids=["trained", "sharpened"])
def test_never_read_features_cannot_move_the_prediction(faithful, how, sharpen):
    if sharpen:
        faithful = _sharpen(faithful, seed=1)
    unread = faithful.never_read(FRAME)
    assert unread.shape == FRAME.shape and unread.dtype == bool
    if sharpen:
        assert unread.mean() > 0.02  # non-vacuous: dozens of (row, feature) pairs certified
    before = faithful.predict_proba(FRAME)
    for seed in range(3):
        after = faithful.predict_proba(_replaced(FRAME, unread, how, seed))
        assert np.array_equal(before, after)  # bit for bit, on every row
    # the certificate is exactly "mask 0 at every step", per original column
    _, masks = faithful.explain(FRAME)
    np.testing.assert_array_equal(unread, sum(masks.values()) == 0)


def test_the_certificate_survives_save_and_load(faithful, tmp_path):
    faithful = _sharpen(faithful, seed=2)
    save(faithful, tmp_path / "m.safetensors")
    restored = load(tmp_path / "m.safetensors")
    assert restored.faithful_masks is True
    np.testing.assert_array_equal(restored.never_read(FRAME), faithful.never_read(FRAME))
    np.testing.assert_array_equal(restored.predict_proba(FRAME), faithful.predict_proba(FRAME))


def test_the_first_mask_reads_no_input():
    clf = _sharpen(TabNetEntmaxClassifier(faithful_masks=True, **SMALL).fit(FRAME, Y), seed=3)
    _, masks = clf.explain(FRAME)
    assert (masks[0] == masks[0][:1]).all()  # the same first mask for every row
    assert clf.net_.module_.tabnet.initial_splitter is None


def test_zero_masks_of_the_papers_design_prove_nothing():
    """The measurement the issue reported, kept as a test: with the paper's design, changing
    only features whose mask is 0 at every step moves predictions, and never_read certifies
    nothing."""
    classic = TabNetEntmaxClassifier(faithful_masks=False, **SMALL).fit(FRAME, Y)
    with torch.no_grad():
        for attentive in classic.net_.module_.tabnet.attentive_transformers:
            attentive.fc.weight.mul_(6.0)  # sparse masks, as for the faithful design
    assert not classic.never_read(FRAME).any()
    _, masks = classic.explain(FRAME)
    zero = sum(masks.values()) == 0
    assert zero.mean() > 0.2
    before = classic.predict_proba(FRAME)
    moved = np.zeros(len(FRAME), dtype=bool)
    for seed in range(3):
        after = classic.predict_proba(_replaced(FRAME, zero, "random", seed))
        moved |= (after != before).any(axis=1)
    assert moved.mean() > 0.1


def test_faithful_masks_is_checked():
    with pytest.raises((TypeError, ValueError), match="faithful_masks"):
        TabNetEntmaxClassifier(faithful_masks="yes", max_epochs=1).fit(FRAME, Y)
