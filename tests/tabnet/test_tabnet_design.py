"""TabNet's mask design as one value (``MaskDesign``): what it decides once, how the
estimators' parameters map onto it, and that files holding the flat arguments of before
still load as the design they were fitted with."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from saved_files import read_saved, write_saved

from sk_entmax import TabNetEntmaxClassifier, TabNetPretrainer
from sk_entmax._tabnet.design import mask_design
from sk_entmax.nn.tabnet import TabNet
from sk_entmax.nn.tabnet_blocks import GhostBatchNorm
from sk_entmax.nn.tabnet_design import PAPER, MaskDesign, saved_design
from sk_entmax.nn.tabnet_nets import TabNetClassifierNet
from sk_entmax.nn.tabnet_selection import FIRST_STEP_SHARE, SELECTION_BUDGET
from sk_entmax.persistence import load, save

ESTIMATORS = MaskDesign(
    faithful=True,
    warmup=600,
    budget=SELECTION_BUDGET,
    first_step_share=FIRST_STEP_SHARE,
    step_rest=True,
)


def test_the_design_decides_what_it_is_once():
    assert (PAPER.sharpened, PAPER.selecting, PAPER.rests) == (False, False, False)
    learned = MaskDesign(faithful=True)
    assert not learned.sharpened and not learned.selecting
    sharpened = MaskDesign(faithful=True, warmup=10, step_rest=True)
    assert sharpened.sharpened and sharpened.rests and not sharpened.selecting
    assert ESTIMATORS.selecting and ESTIMATORS.rests
    # a warm-up or a budget without a faithful first mask sharpens and selects nothing
    assert not MaskDesign(warmup=10, budget=0.1).selecting
    with pytest.raises(AttributeError):
        ESTIMATORS.warmup = 5  # frozen
    assert MaskDesign.of(None) == PAPER and MaskDesign.of(ESTIMATORS) is ESTIMATORS
    assert MaskDesign.of(ESTIMATORS.as_fields()) == ESTIMATORS


@pytest.mark.parametrize(
    "fields",
    [
        {"faithful": "yes"},
        {"warmup": 0},
        {"warmup": 1.5},
        {"budget": 0.0},
        {"budget": 1.5},
        {"first_step_share": -0.1},
        {"step_rest": 1.0},
    ],
)
def test_each_field_is_checked(fields):
    (name,) = fields
    with pytest.raises(ValueError, match=name):
        MaskDesign(**fields)


def test_a_design_is_one_value_or_none():
    with pytest.raises(TypeError, match="mask_design"):
        TabNet(4, 2, mask_design=True)
    with pytest.raises(TypeError):
        MaskDesign.of({"faithful": True, "sharpened": True})  # not a field one gives


def test_the_estimators_map_their_parameters_onto_one_design():
    faithful = {"faithful_masks": True, "mask_warmup": 600}
    assert mask_design(faithful, None) == ESTIMATORS  # open-ended: the whole warm-up
    assert mask_design(faithful, 30).warmup == 20  # two thirds of a short fit
    assert mask_design({**faithful, "mask_warmup": 50}, 3000).warmup == 50
    assert mask_design(faithful, 90, selects=False) == MaskDesign(faithful=True, warmup=60)
    assert mask_design({"faithful_masks": False, "mask_warmup": 600}, 90) == PAPER


def test_mask_warmup_sets_the_warmup_of_a_fit_and_survives_clone():
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(64, 3)), columns=list("abc"))
    y = (frame["a"] > 0).to_numpy().astype(int)
    tiny = {"n_d": 4, "n_a": 4, "n_steps": 2, "max_epochs": 8, "random_state": 0}
    clf = TabNetEntmaxClassifier(mask_warmup=3, **tiny).fit(frame, y)
    assert clf.net_.module_.tabnet.design.warmup == 3
    assert not clf.net_.module_.settling
    assert clf.get_params()["mask_warmup"] == 3
    pre = TabNetPretrainer(mask_warmup=2, **tiny).fit(frame)
    assert pre.net_.module_.tabnet.design == MaskDesign(faithful=True, warmup=2)
    with pytest.raises(ValueError, match="mask_warmup"):
        TabNetEntmaxClassifier(mask_warmup=0, **tiny).fit(frame, y)


def test_the_flat_arguments_of_saved_files_give_the_same_design():
    flat = {
        "n_features": 4,
        "faithful_masks": True,
        "first_mask_warmup": 600,
        "selection_budget": SELECTION_BUDGET,
        "first_step_share": FIRST_STEP_SHARE,
        "step_rest": True,
    }
    assert saved_design(flat) == ESTIMATORS and flat == {"n_features": 4}
    assert saved_design({"n_features": 4}) is None
    torch.manual_seed(0)
    old = TabNetClassifierNet(n_features=4, n_outputs=2, faithful_masks=True, step_rest=False)
    assert old.tabnet.design == MaskDesign(faithful=True)
    with pytest.raises(TypeError, match="mask_design only"):
        TabNetClassifierNet(n_features=4, n_outputs=2, faithful_masks=True, mask_design=PAPER)


def test_a_file_with_the_flat_design_arguments_loads_and_predicts_the_same(tmp_path):
    """A file written before the design was one value holds its fields as five network
    arguments; it loads as the design it was fitted with, and predicts and certifies the
    same, bit for bit."""
    frame = pd.DataFrame(np.random.default_rng(1).normal(size=(120, 4)), columns=list("abcd"))
    y = (frame["b"] > 0).to_numpy().astype(int)
    clf = TabNetEntmaxClassifier(
        n_d=4, n_a=4, n_steps=2, max_epochs=4, mask_warmup=12, random_state=0
    ).fit(frame, y)
    save(clf, tmp_path / "new.safetensors")
    header, tensors = read_saved(tmp_path / "new.safetensors")
    pairs = header["net"]["module_kwargs"]["__dict__"]
    (design,) = [value for name, value in pairs if name == "mask_design"]
    fields = dict(design["__dict__"])
    old_names = {
        "faithful": "faithful_masks",
        "warmup": "first_mask_warmup",
        "budget": "selection_budget",
        "first_step_share": "first_step_share",
        "step_rest": "step_rest",
    }
    pairs[:] = [p for p in pairs if p[0] != "mask_design"]
    pairs += [[old_names[k], v] for k, v in fields.items()]
    header["params"] = {k: v for k, v in header["params"].items() if k != "mask_warmup"}
    back = load(write_saved(tmp_path / "old.safetensors", header, tensors))
    assert back.net_.module_.tabnet.design == clf.net_.module_.tabnet.design
    assert back.mask_warmup == 600  # a file without the parameter means its default
    np.testing.assert_array_equal(back.predict_proba(frame), clf.predict_proba(frame))
    np.testing.assert_array_equal(back.never_read(frame), clf.never_read(frame))


def test_the_ghost_split_is_an_argument():
    assert GhostBatchNorm(3).split_max_chunks == 4
    assert GhostBatchNorm(3, split_max_chunks=0).split_max_chunks == 0
    with pytest.raises(ValueError, match="split_max_chunks"):
        GhostBatchNorm(3, split_max_chunks=-1)
