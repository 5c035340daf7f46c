"""The report tells the truth about a collapsed fit (issue 57, point 6): features at exactly
0% are not ranked (no tie, no "not settled"), and a model that reads one column or predicts
one class says so in a box under the summary."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from sk_entmax import TabNetEntmaxClassifier, TabNetEntmaxRegressor, report

TINY = {"n_d": 4, "n_a": 4, "n_steps": 2, "n_independent": 1, "n_shared": 1, "lr": 0.05}


def _intervals(importances, low, high):
    return report.ImportanceIntervals(
        feature_names=["a", "b", "c", "d", "e"],
        importances=np.array(importances, dtype=float),
        low=np.array(low, dtype=float),
        high=np.array(high, dtype=float),
        confidence=0.9,
        n_rows=100,
        n_resamples=200,
    )


def test_features_at_exactly_zero_are_not_a_tie():
    # one feature read: the other four are exactly 0, with intervals [0, 0]
    one = _intervals([0, 1, 0, 0, 0], [0, 1, 0, 0, 0], [0, 1, 0, 0, 0])
    assert one.overlapping() == [] and one.overlapping(top=4) == []
    text = one.verdict()
    assert text.startswith(
        "Nothing to rank: on these 100 rows only 'b' has a share above 0; the other 4 are "
        "exactly 0%, not tied"
    )
    assert "Not settled" not in text and "tied." not in text


def test_only_the_features_read_are_compared():
    # a and b tie; c is read (its interval reaches 0); d and e are exactly 0
    tied = _intervals([0.5, 0.4, 0.1, 0, 0], [0.3, 0.3, 0, 0, 0], [0.6, 0.5, 0.2, 0, 0])
    assert tied.overlapping() == [("a", "b")]
    text = tied.verdict()
    assert text.startswith("Not settled: on these 100 rows the 90% intervals of 'a' and 'b' ")
    assert "'c' and 'd'" not in text and "'d' and 'e'" not in text
    assert "The 2 features at exactly 0% are left out of the ranking" in text
    apart = _intervals([0.6, 0.3, 0.1, 0, 0], [0.5, 0.2, 0.05, 0, 0], [0.7, 0.4, 0.15, 0, 0])
    assert apart.overlapping(top=4) == []
    assert apart.verdict().startswith("The top 3 stand apart on these 100 rows")


def _frame(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.normal(size=(n, 4)), columns=["a", "b", "c", "d"])


def test_report_says_when_the_model_predicts_one_class(tmp_path):
    X = _frame(160)
    y = np.where(np.arange(160) < 2, "rare", "common")
    with pytest.warns(UserWarning, match="predicts one class, 'common'"):
        clf = TabNetEntmaxClassifier(**TINY, max_epochs=2, random_state=0).fit(X, y)
    page = report.feature_mask_report(clf, X[:40], tmp_path / "one.html", n_resamples=0)
    page = page.read_text(encoding="utf-8")
    assert '<div class="collapse warn"><strong>It predicts one class.</strong> ' in page
    said = (
        "This model predicts one class, 'common', for every one of these 40 rows, of the 2 "
        "classes it was fitted on"
    )
    assert html.escape(said) in page


@pytest.mark.parametrize("cls", [TabNetEntmaxClassifier, TabNetEntmaxRegressor])
def test_report_says_when_the_model_reads_one_column(tmp_path, monkeypatch, cls):
    X = _frame(120)
    y = X["c"].to_numpy() if cls is TabNetEntmaxRegressor else np.where(X["c"] > 0, "x", "y")
    est = cls(**TINY, max_epochs=2, random_state=0).fit(X, y)
    # no row of these reads anything but 'c' (the certificate, as never_read gives it)
    only_c = np.ones((40, 4), dtype=bool)
    only_c[:, 2] = False
    monkeypatch.setattr(est, "never_read", lambda X: only_c)
    page = report.feature_mask_report(est, X[:40], tmp_path / "c.html", y=y[:40])
    page = page.read_text(encoding="utf-8")
    assert '<div class="collapse warn"><strong>It reads one column of 4.</strong> ' in page
    said = (
        "This model reads one column of 4, 'c', on these 40 rows: every other feature is "
        "provably never read by any of their predictions (never_read)"
    )
    assert html.escape(said) in page


def test_a_report_on_a_model_that_did_not_collapse_has_no_box(tmp_path):
    X = _frame(160)
    y = np.where(X["a"] + X["b"] > 0, "x", "y")
    clf = TabNetEntmaxClassifier(**TINY, max_epochs=5, random_state=0).fit(X, y)
    assert len(set(clf.predict(X[:40]))) == 2
    page = report.feature_mask_report(clf, X[:40], tmp_path / "fine.html", n_resamples=0)
    assert 'class="collapse' not in page.read_text(encoding="utf-8")
