"""Files saved before the persistence rewrite (issue 31) still load and predict as they did.

The files in ``tests/data/saved_before_issue31`` were written by commit a783ce1 (format
version 1), with ``expected_proba.npz`` holding what each model's ``predict_proba`` (and the
conformal wrapper's ``predict_set``) returned then on the data rebuilt below.

The probabilities are compared up to float64 rounding, not bit for bit: torch's CPU kernels
round differently by the CPU they run on (the TabNet files predict up to 2.2e-16 apart on
an AVX2 machine from the machine that wrote them); the exact zeros, and the conformal sets,
must be the same.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris, make_multilabel_classification

from sk_entmax.persistence import load

HERE = Path(__file__).parents[1] / "data" / "saved_before_issue31"


def _data(name):
    if name == "entmax_multilabel":
        return make_multilabel_classification(60, 5, n_classes=3, random_state=0)[0]
    if name == "tabnet_frame":
        rng = np.random.default_rng(0)
        return pd.DataFrame(
            {
                "a": rng.normal(size=120),
                "c": rng.choice(["x", "y", None], size=120),
                "d": np.where(rng.random(120) < 0.2, np.nan, rng.normal(size=120)),
            }
        )
    return load_iris(return_X_y=True)[0]


NAMES = [
    "sparsemax_iris",
    "entmax_learned_alpha",
    "entmax_multilabel",
    "tabnet_frame",
    "tabnet_faithful",
    "conformal",
]


@pytest.mark.parametrize("name", NAMES)
def test_files_saved_before_issue_31_load_and_predict_the_same(name):
    expected = np.load(HERE / "expected_proba.npz")
    model = load(HERE / f"{name}.safetensors")
    X = _data(name)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba, expected[name], rtol=0, atol=1e-13)
    np.testing.assert_array_equal(proba == 0, expected[name] == 0)
    if name == "conformal":
        np.testing.assert_array_equal(model.predict_set(X), expected[name + "__set"])


def test_a_faithful_file_saved_before_the_column_selection_keeps_its_learned_first_mask():
    """``tests/data/saved_before_selection`` holds a faithful TabNetEntmaxClassifier
    written by commit 7431eeb, whose first mask was learned by gradient (entmax15 mode, the
    warm-up shortened to 20 steps, 6 epochs on a 160 x 6 normal frame of seed 0), with its
    ``predict_proba`` and ``never_read`` then. It stores no ``selection_budget`` and loads
    as the design it was fitted with."""
    folder = Path(__file__).parents[1] / "data" / "saved_before_selection"
    expected = np.load(folder / "expected.npz")
    model = load(folder / "tabnet_learned_first_mask.safetensors")
    assert model.net_.module_.tabnet.selection_budget is None
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(160, 6)), columns=list("abcdef"))
    proba = model.predict_proba(frame)
    np.testing.assert_allclose(proba, expected["proba"], rtol=0, atol=1e-13)
    np.testing.assert_array_equal(proba == 0, expected["proba"] == 0)
    np.testing.assert_array_equal(model.never_read(frame), expected["never_read"])
