"""``python -m sk_entmax report`` says when the fit collapsed (issue 57, point 6): the fit's
warning as a note, and the held-out rows' signs on the terminal and in the page."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import pytest
import torch

from sk_entmax.__main__ import main
from sk_entmax.nn.tabnet import TabNet

pytest.importorskip("matplotlib")


def _csv(tmp_path, labels):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(len(labels), 4)), columns=["a", "b", "c", "d"])
    frame["kind"] = labels
    path = tmp_path / "table.csv"
    frame.to_csv(path, index=False)
    return path


def test_report_says_the_model_predicts_one_class(tmp_path, capsys):
    # 4 rare rows of 160: a two-epoch fit predicts 'common' everywhere
    path = _csv(tmp_path, np.where(np.arange(160) % 40 == 0, "rare", "common"))
    out = tmp_path / "one.html"
    args = ["report", "--data", str(path), "--target", "kind", "--out", str(out)]
    assert main([*args, "--max-epochs", "2", "--resamples", "0"]) == 0
    text = capsys.readouterr().out
    fit = "TabNetEntmaxClassifier's fit predicts one class, 'common', for every one of the 120 "
    assert f"note: {fit}training rows" in text
    held_out = "this model predicts one class, 'common', for every one of the 40 held-out rows"
    assert f"warning: {held_out}, of the 2 classes it was fitted on" in text
    page = out.read_text(encoding="utf-8")
    assert html.escape(f"{fit}training rows") in page  # the fit's note, in the data table
    assert '<div class="collapse warn"><strong>It predicts one class.</strong>' in page


def test_report_says_the_model_reads_one_column(tmp_path, capsys, monkeypatch):
    def all_but_b(self, X):
        never = torch.ones(X.shape[0], X.shape[1], dtype=torch.bool)
        never[:, 1] = False  # every row reads 'b', and nothing else
        return never

    monkeypatch.setattr(TabNet, "never_read", all_but_b)
    path = _csv(tmp_path, np.where(np.arange(160) % 2 == 0, "x", "y"))
    out = tmp_path / "b.html"
    args = ["report", "--data", str(path), "--target", "kind", "--out", str(out)]
    assert main([*args, "--max-epochs", "2", "--resamples", "20"]) == 0
    text = capsys.readouterr().out
    assert "note: TabNetEntmaxClassifier's fit reads one column of 4, column 'b', on" in text
    held_out = "warning: this model reads one column of 4, b, on the 40 held-out rows"
    assert held_out in text and "--no-faithful-masks" in text
    page = out.read_text(encoding="utf-8")
    assert '<div class="collapse warn"><strong>It reads one column of 4.</strong>' in page
