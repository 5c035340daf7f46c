"""Control characters in labels, column names and the caller's text never reach the HTML
report raw (issue 45, point 11): ESC, BEL and the right-to-left override are shown as
``\\x1b``, ``\\x07``, ``\\u202e``, as the terminal output shows them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sk_entmax import TabNetEntmaxClassifier, report  # noqa: E402

HOSTILE = ["\x1b[31mred", "bell\x07", "cost\u202egnp.exe", "tab\tline\nbreak"]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_control_characters_are_shown_escaped_in_the_html_report(tmp_path):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 4)), columns=HOSTILE)
    y = np.array(["ok\x1b[2J", "bidi\u202eevil", "plain"])[
        (X.iloc[:, 0] > 0).to_numpy().astype(int) + (X.iloc[:, 1] > 0.5).to_numpy()
    ]
    clf = TabNetEntmaxClassifier(n_d=4, n_a=4, n_steps=1, max_epochs=1, random_state=0)
    clf.fit(X, y)
    pages = [
        report.feature_mask_report(
            clf, X, tmp_path / "masks.html", y=y, n_resamples=5, title="t\x1bitle"
        ),
        report.probability_support_report(
            clf, X, tmp_path / "proba.html", y=y, data=[("step\x07", "dropped\u202e 3")]
        ),
    ]
    for path in pages:
        text = path.read_text(encoding="utf-8")
        for raw in ("\x1b", "\x07", "\u202e", "\t"):
            assert raw not in text, (path.name, repr(raw))
        assert r"\x1b[31mred" in text or path.name == "proba.html"  # a column name
        assert r"bidi\u202eevil" in text  # a class label
    assert r"t\x1bitle" in pages[0].read_text(encoding="utf-8")
    assert r"step\x07" in pages[1].read_text(encoding="utf-8")
