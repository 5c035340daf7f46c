"""The conformal section of the report (issue 62, point 4): the coverage of each class's
rows and the set-size histogram, counted here from the sets, and the warning about a class
too rare for a class-conditional quantile."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression, RidgeClassifier

from sk_entmax import SparseConformalClassifier, report
from sk_entmax.report._page_sections import _conformal_sections


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    names = np.array(["<i>setosa</i>", "versicolor", "virginica"])[y]
    order = np.random.default_rng(0).permutation(len(y))
    return X[order], names[order]


def test_per_class_coverage_and_histogram_on_the_page(iris, tmp_path):
    X, y = iris
    model = LogisticRegression(max_iter=500).fit(X[:60], y[:60])
    conformal = SparseConformalClassifier(
        model, prefit=True, confidence_level=0.8, randomized=True, random_state=0
    )
    conformal.conformalize(X[60:100], y[60:100])
    sets = report.conformal_sets(conformal, X[100:], y[100:])
    predicted = conformal.predict_set(X[100:])
    rows = sets.class_coverage()
    for (name, n, hit, share, calibration, short), label in zip(
        rows, conformal.classes_, strict=True
    ):
        mine = y[100:] == label
        column = list(conformal.classes_).index(label)
        assert name == label and n == mine.sum() and hit == predicted[mine, column].sum()
        assert share == pytest.approx(hit / n)
        assert calibration == (y[60:100] == label).sum() and not short
    page = report.probability_support_report(
        model, X[100:], tmp_path / "r.html", y=y[100:], conformal=sets
    ).read_text(encoding="utf-8")
    section = page[page.index("<h2>Conformal prediction sets</h2>") :]
    assert "&lt;i&gt;setosa&lt;/i&gt;" in section and "<i>setosa" not in page
    table = section[section.index('class="summary class-coverage"') :]
    for name, n, hit, share, calibration, _ in rows:
        escaped = name.replace("<", "&lt;").replace(">", "&gt;")
        assert (
            f"<tr><td>{escaped}</td><td>{n}</td><td>{hit}</td><td>{share:.3f}</td>"
            f"<td>{calibration}</td></tr>" in table
        )
    bars = re.findall(r"<title>(\d+) class(?:es)?: (\d+) rows</title></rect>", section)
    sizes, counts = np.unique(predicted.sum(axis=1), return_counts=True)
    assert [(int(a), int(b)) for a, b in bars] == list(zip(sizes.tolist(), counts.tolist()))
    assert any(line.startswith("  class versicolor: coverage") for line in sets.lines())


def test_a_class_too_rare_for_its_quantile_warns_and_is_marked(iris):
    X, y = iris
    model = LogisticRegression(max_iter=500).fit(X[:60], y[:60])
    rare = np.r_[np.flatnonzero(y != "virginica")[60:90], np.flatnonzero(y == "virginica")[:5]]
    conformal = SparseConformalClassifier(model, prefit=True, confidence_level=0.9)
    conformal.conformalize(X[rare], y[rare])
    with pytest.warns(UserWarning, match=r"1 class has fewer calibration rows.*virginica \(5"):
        sets = report.conformal_sets(conformal, X[100:], y[100:])
    marked = [row for row in sets.class_coverage() if row[5]]
    assert [row[0] for row in marked] == ["virginica"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # enough rows: no warning
        report.conformal_sets(conformal.conformalize(X[60:150], y[60:150]), X[:20], y[:20])
    # the section alone (the whole page is drawn in the test above)
    page = "".join(_conformal_sections(sets))
    assert "5 (too few for a class-conditional quantile)" in page


def test_cross_conformal_says_where_its_calibration_comes_from(iris):
    X, y = iris
    conformal = SparseConformalClassifier(RidgeClassifier(), cv=3, random_state=0)
    conformal.fit(X[:120], y[:120])
    sets = report.conformal_sets(conformal, X[120:], y[120:])
    assert "calibrated on 120 rows scored out of fold (cv=3)" in sets.lines()[0]
    assert sum(row[4] for row in sets.class_coverage()) == 120
