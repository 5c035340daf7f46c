"""Interpretability reports: the figures hold what they claim, the HTML stands alone."""

from __future__ import annotations

import base64
import html
import re
import subprocess
import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from sklearn.datasets import load_iris, load_wine  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sk_entmax import SparsemaxClassifier, TabNetEntmaxClassifier, report  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def wine():
    data = load_wine(as_frame=True)
    X = data.frame[data.feature_names].iloc[::2]  # 89 wines, every class: quick to fit
    y = data.target_names[data.target.to_numpy()[::2]]
    return X, y


@pytest.fixture(scope="module")
def tabnet(wine):
    X, y = wine
    # the paper's design: what the report says of masks that prove nothing
    clf = TabNetEntmaxClassifier(
        entmax_mode="adaptive", faithful_masks=False, max_epochs=1, random_state=0
    )
    return clf.fit(X, y)


@pytest.fixture(scope="module")
def sparse_pipe():
    X, y = load_iris(return_X_y=True)
    clf = SparsemaxClassifier(lr=0.05, max_epochs=40, random_state=0)
    return make_pipeline(StandardScaler(), clf).fit(X, y), X, y


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_import_does_not_load_matplotlib():
    code = "import sys, sk_entmax.report; print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(
    "call",
    [
        lambda clf, X: report.plot_feature_importances(clf, X),
        lambda clf, X: report.plot_step_masks(clf, X),
        lambda clf, X: report.plot_support_sizes(clf, X),
        lambda clf, X: report.feature_mask_report(clf, X, "never-written.html"),
    ],
)
def test_missing_matplotlib_names_the_extra(monkeypatch, tabnet, wine, tmp_path, call):
    monkeypatch.chdir(tmp_path)
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=re.escape("pip install matplotlib")):
        call(tabnet, wine[0])
    assert not (tmp_path / "never-written.html").exists()


def test_feature_importances_bars_named_from_dataframe(tabnet, wine):
    X, _ = wine
    ax = report.plot_feature_importances(tabnet, X)
    assert isinstance(ax, Axes)
    bars = ax.containers[0]
    assert len(bars) == X.shape[1]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert sorted(labels) == sorted(X.columns)
    widths = np.array([b.get_width() for b in bars])
    assert np.all(np.diff(widths) <= 1e-12)  # largest on top
    assert widths.sum() == pytest.approx(100.0)
    M_explain, _ = tabnet.explain(X)
    expected = 100 * M_explain.sum(axis=0) / M_explain.sum()
    assert widths.max() == pytest.approx(expected.max())
    # without data: the fitted importances
    ax = report.plot_feature_importances(tabnet, max_features=5)
    assert len(ax.containers[0]) == 5
    assert "8 more features" in ax.get_title(loc="left")
    shown = sorted(b.get_width() for b in ax.containers[0])
    assert shown[-1] == pytest.approx(100 * tabnet.feature_importances_.max())


def test_feature_names_fall_back_to_fit_then_positions(wine):
    X, y = wine
    clf = TabNetEntmaxClassifier(max_epochs=1, random_state=0).fit(X.to_numpy(), y)
    ax = report.plot_feature_importances(clf, X.to_numpy()[:20])
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == sorted(
        f"x{i}" for i in range(X.shape[1])
    )


def test_step_masks_show_exact_zeros_as_masked_cells(tabnet, wine):
    X, _ = wine
    rows = [3, 40, 80]
    fig = report.plot_step_masks(tabnet, X, rows)
    assert isinstance(fig, Figure)
    heatmaps = [ax for ax in fig.axes if ax.get_images()]
    assert len(heatmaps) == tabnet.n_steps
    _, masks = tabnet.explain(X.iloc[rows])
    for step, ax in enumerate(heatmaps):
        assert ax.get_title().startswith(f"step {step + 1}")
        assert [t.get_text() for t in ax.get_xticklabels()] == [str(X.index[r]) for r in rows]
        data = ax.get_images()[0].get_array()
        names = [t.get_text() for t in heatmaps[0].get_yticklabels()]
        columns = [list(X.columns).index(n) for n in names]
        expected = masks[step][:, columns].T
        np.testing.assert_array_equal(np.ma.getmaskarray(data), expected == 0)
        np.testing.assert_allclose(data.filled(0), expected)


def test_step_masks_reject_rows_outside_the_data(tabnet, wine):
    with pytest.raises(ValueError, match="outside X"):
        report.plot_step_masks(tabnet, wine[0], [0, 10_000])


def test_mask_sparsity_bars_are_the_share_of_zeros(tabnet, wine):
    X, _ = wine
    ax = report.plot_mask_sparsity(tabnet, X)
    _, masks = tabnet.explain(X)
    heights = [b.get_height() for b in ax.containers[0]]
    assert heights == pytest.approx([100 * (masks[s] == 0).mean() for s in sorted(masks)])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["step 1", "step 2", "step 3"]


def test_mask_alpha_bars_reach_the_learned_alphas(tabnet):
    ax = report.plot_mask_alpha(tabnet)
    tops = [b.get_y() + b.get_height() for b in ax.containers[0]]
    assert tops == pytest.approx(tabnet.mask_alpha_.tolist())
    assert "learned" in ax.get_title(loc="left")


def test_tabnet_plots_refuse_a_linear_model(sparse_pipe):
    clf, X, _ = sparse_pipe
    with pytest.raises(TypeError, match="plot_class_support"):
        report.plot_step_masks(clf, X)


def test_probabilities_write_exact_zeros_as_zero(sparse_pipe):
    clf, X, _ = sparse_pipe
    rows = [0, 60, 120, 75]
    ax = report.plot_probabilities(clf, X, rows)
    proba = clf.predict_proba(X[rows])
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == proba.size
    assert texts.count("0") == int((proba == 0).sum()) > 0
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2"]


def test_support_plots_count_the_nonzero_classes(sparse_pipe):
    clf, X, _ = sparse_pipe
    proba = clf.predict_proba(X)
    ax = report.plot_class_support(clf, X)
    assert [b.get_height() for b in ax.containers[0]] == pytest.approx(
        list(100 * (proba > 0).mean(axis=0))
    )
    ax = report.plot_support_sizes(clf, X)
    sizes = (proba > 0).sum(axis=1)
    assert [b.get_height() for b in ax.containers[0]] == [
        int((sizes == k).sum()) for k in (1, 2, 3)
    ]
    assert f"mean {sizes.mean():.2f} of 3" in ax.get_title(loc="left")


def _images(page: str) -> list[bytes]:
    found = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    return [base64.b64decode(data) for data in found]


def test_feature_mask_report_is_one_self_contained_file(tabnet, wine, tmp_path):
    X, y = wine
    path = report.feature_mask_report(tabnet, X, tmp_path / "sub" / "masks.html", y=y)
    assert path == (tmp_path / "sub" / "masks.html").resolve()
    page = path.read_text(encoding="utf-8")
    images = _images(page)
    assert len(images) == 7  # importances, masks, sparsity, alpha, rows, support, sizes
    assert all(image.startswith(PNG) for image in images)
    assert not re.search(r'(src|href)="(?!data:)', page)  # nothing fetched from elsewhere
    assert "<script" not in page
    for name in X.columns:
        assert name in page  # the importance table names every feature
    assert "adaptive" in page and "accuracy on these rows" in page


def test_probability_support_report_for_a_pipeline(sparse_pipe, tmp_path):
    clf, X, y = sparse_pipe
    path = report.probability_support_report(clf, X, tmp_path / "support.html", y=y)
    page = path.read_text(encoding="utf-8")
    assert len(_images(page)) == 3
    assert "SparsemaxClassifier" in page
    accuracy = float(re.search(r"accuracy on these rows</td><td>([0-9.]+)", page).group(1))
    assert accuracy == pytest.approx(clf.score(X, y), abs=5e-4)


# names matplotlib would read as math ("$...$") are drawn as they are written

MATH_NAMES = ["$\\undefinedcmd$", "$\\frac{$", "costs $5 or $6", "a \\$ sign"]


@pytest.fixture(scope="module")
def mathy():
    import pandas as pd

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(40, 5)), columns=[*MATH_NAMES, "<script>alert(1)"])
    X.index = [f"${i}$" for i in range(40)]  # row labels are drawn too
    y = np.array(["$\\frac{$", "$x^{$"])[np.arange(40) % 2]
    X.iloc[:, 0] += 2 * (np.arange(40) % 2)
    return X, y


def _draw(artist):
    figure = artist if isinstance(artist, Figure) else artist.figure
    figure.canvas.draw()  # where matplotlib parses math; a bad expression raises here


def test_math_like_names_do_not_break_the_reports(mathy, tmp_path):
    X, y = mathy
    tabnet = TabNetEntmaxClassifier(n_d=4, n_a=4, n_steps=2, max_epochs=1, random_state=0)
    tabnet.fit(X, y)
    page = report.feature_mask_report(tabnet, X, tmp_path / "masks.html", y=y).read_text(
        encoding="utf-8"
    )
    for name in MATH_NAMES:
        assert name in page
    assert "<script" not in page and "&lt;script&gt;alert(1)" in page  # HTML is escaped
    linear = SparsemaxClassifier(max_epochs=2, random_state=0).fit(X, y)
    page = report.probability_support_report(linear, X, tmp_path / "support.html", y=y)
    assert "$\\frac{$" in page.read_text(encoding="utf-8")
    _draw(report.plot_feature_importances(tabnet, X))
    _draw(report.plot_step_masks(tabnet, X, [0, 1]))
    _draw(report.plot_probabilities(linear, X, [0, 1]))
    _draw(report.plot_class_support(linear, X))


def test_math_like_names_keep_their_text(mathy):
    from matplotlib.text import Text

    X, y = mathy
    linear = SparsemaxClassifier(max_epochs=2, random_state=0).fit(X, y)
    ax = report.plot_probabilities(linear, X, [0, 1])
    _draw(ax)
    shown = {}
    for label in ax.get_xticklabels() + ax.get_yticklabels():
        # the text matplotlib renders: it shows an escaped "\$" as "$", outside math
        text, is_math = Text._preprocess_math(label, label.get_text())
        assert not is_math
        shown[text] = label
    assert {"$\\frac{$", "$x^{$", "$0$", "$1$"} <= set(shown)


# the data notes: what was done to the data before the fit, in the page


def test_reports_show_the_data_notes_escaped(tabnet, wine, sparse_pipe, tmp_path):
    X, y = wine
    notes = [("rows dropped", "3 of 92, with no label"), ("training rows", "<b>89</b>")]
    page = report.feature_mask_report(
        tabnet, X, tmp_path / "masks.html", y=y, data=notes
    ).read_text(encoding="utf-8")
    assert "<h2>Data</h2>" in page
    assert "<td>rows dropped</td><td>3 of 92, with no label</td>" in page
    assert "&lt;b&gt;89&lt;/b&gt;" in page and "<b>89</b>" not in page
    clf, X_iris, y_iris = sparse_pipe
    page = report.probability_support_report(
        clf, X_iris, tmp_path / "support.html", y=y_iris, data=notes
    ).read_text(encoding="utf-8")
    assert "<td>rows dropped</td><td>3 of 92, with no label</td>" in page
    # without notes there is no Data section
    page = report.probability_support_report(clf, X_iris, tmp_path / "plain.html").read_text(
        encoding="utf-8"
    )
    assert "<h2>Data</h2>" not in page


def test_report_data_notes_must_be_pairs(sparse_pipe, tmp_path):
    clf, X, _ = sparse_pipe
    match = "'data' parameter of probability_support_report must be None or a sequence of"
    with pytest.raises(ValueError, match=match):
        report.probability_support_report(clf, X, tmp_path / "x.html", data=["rows dropped"])
    assert not (tmp_path / "x.html").exists()


def test_feature_mask_report_names_the_learned_missing_indicators(wine, tmp_path):
    X, y = wine
    X = X.copy()
    X.iloc[::4, X.columns.get_loc("proline")] = np.nan
    clf = TabNetEntmaxClassifier(n_d=4, n_a=4, n_steps=2, max_epochs=1, random_state=0)
    clf.fit(X, y)
    page = report.feature_mask_report(clf, X, tmp_path / "masks.html", y=y).read_text(
        encoding="utf-8"
    )
    assert "learned missing indicators (numeric columns with gaps at fit)</td><td>proline<" in (
        page
    )


# how uncertain each importance is: bootstrap intervals over the rows reported on


def test_importance_intervals_hold_the_point_estimates(tabnet, wine):
    X, _ = wine
    found = report.importance_intervals(tabnet, X, n_resamples=300)
    assert isinstance(found, report.ImportanceIntervals)
    assert found.feature_names == list(X.columns)
    assert (found.n_rows, found.n_resamples, found.confidence) == (len(X), 300, 0.9)
    M_explain, _ = tabnet.explain(X)
    np.testing.assert_allclose(found.importances, M_explain.sum(0) / M_explain.sum())
    assert np.all(found.low <= found.importances) and np.all(found.importances <= found.high)
    assert np.all(found.high - found.low > 0)  # 89 rows do not pin a share down exactly
    assert np.all(found.low >= 0) and np.all(found.high <= 1)
    wider = report.importance_intervals(tabnet, X, n_resamples=300, confidence=0.99)
    assert np.all(wider.low <= found.low) and np.all(wider.high >= found.high)


def test_importance_intervals_narrow_with_more_rows(tabnet, wine):
    import pandas as pd

    X, _ = wine
    few = report.importance_intervals(tabnet, X, random_state=1)
    many = report.importance_intervals(tabnet, pd.concat([X] * 4), random_state=1)
    np.testing.assert_allclose(many.importances, few.importances, atol=1e-12)
    ratio = (many.high - many.low).mean() / (few.high - few.low).mean()
    assert 0.35 < ratio < 0.65  # about 1 / sqrt(4)


def test_importance_intervals_repeat_with_their_seed(tabnet, wine):
    X, _ = wine
    first = report.importance_intervals(tabnet, X, random_state=3)
    again = report.importance_intervals(tabnet, X, random_state=3)
    other = report.importance_intervals(tabnet, X, random_state=4)
    np.testing.assert_array_equal(first.low, again.low)
    np.testing.assert_array_equal(first.high, again.high)
    assert not np.array_equal(first.low, other.low)


def test_importance_intervals_of_one_row_or_a_zero_column_are_points(tabnet, wine):
    X, _ = wine
    one = report.importance_intervals(tabnet, X.iloc[[5]], n_resamples=20)
    np.testing.assert_array_equal(one.low, one.importances)
    np.testing.assert_array_equal(one.high, one.importances)
    found = report.importance_intervals(tabnet, X)
    never = found.importances == 0
    np.testing.assert_array_equal(found.high[never], 0.0)


def test_importance_intervals_through_a_pipeline(wine):
    X, y = wine
    pipe = make_pipeline(
        StandardScaler(), TabNetEntmaxClassifier(n_d=4, n_a=4, max_epochs=1, random_state=0)
    ).fit(X.to_numpy(), y)
    found = report.importance_intervals(pipe, X.to_numpy(), n_resamples=50)
    assert found.feature_names == [f"x{i}" for i in range(X.shape[1])]
    assert np.all(found.low <= found.importances) and np.all(found.importances <= found.high)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"n_resamples": 0},
            "The 'n_resamples' parameter of importance_intervals must be an integer >= 1. "
            "Got 0 instead.",
        ),
        ({"n_resamples": 2.5}, "'n_resamples' parameter .* must be an integer"),
        ({"n_resamples": True}, "'n_resamples' parameter .* must be an integer"),
        ({"confidence": 1.0}, r"'confidence' parameter .* must be a real number > 0 and < 1"),
        ({"confidence": 0}, "'confidence' parameter of importance_intervals must be"),
        ({"confidence": "0.9"}, "'confidence' parameter of importance_intervals must be"),
    ],
)
def test_importance_intervals_name_the_bad_parameter(tabnet, wine, kwargs, match):
    with pytest.raises(ValueError, match=match):
        report.importance_intervals(tabnet, wine[0], **kwargs)


def test_importance_intervals_refuse_a_linear_model(sparse_pipe):
    clf, X, _ = sparse_pipe
    with pytest.raises(TypeError, match="importance_intervals needs a fitted TabNet"):
        report.importance_intervals(clf, X)


def _intervals(importances, low, high):
    return report.ImportanceIntervals(
        feature_names=["a", "b", "c", "d", "e"],
        importances=np.array(importances),
        low=np.array(low),
        high=np.array(high),
        confidence=0.9,
        n_rows=100,
        n_resamples=200,
    )


def test_overlapping_names_the_neighbours_that_tie():
    # ranked: c (0.4), a (0.3), b (0.2), e (0.06), d (0.04)
    apart = _intervals(
        [0.3, 0.2, 0.4, 0.04, 0.06],
        [0.27, 0.17, 0.35, 0.02, 0.03],
        [0.33, 0.23, 0.45, 0.08, 0.09],
    )
    assert apart.order().tolist() == [2, 0, 1, 4, 3]
    assert apart.overlapping() == []
    assert apart.overlapping(top=4) == [("e", "d")]
    assert apart.verdict().startswith("The top 3 stand apart on these 100 rows")
    tied = _intervals(
        [0.3, 0.2, 0.4, 0.04, 0.06],
        [0.25, 0.12, 0.29, 0.02, 0.03],  # c's interval reaches into a's; b's into e's
        [0.36, 0.23, 0.45, 0.08, 0.13],
    )
    assert tied.overlapping() == [("c", "a"), ("b", "e")]
    text = tied.verdict()
    assert text.startswith("Not settled: on these 100 rows the 90% intervals of 'c' and 'a'; ")
    assert "'b' and 'e' overlap" in text and "the order within each pair" in text
    assert "random_state" in text  # and what the intervals do not cover: the seed
    with pytest.raises(ValueError, match=r"'top' parameter .* must be an integer >= 1"):
        tied.overlapping(top=0)


def test_feature_mask_report_shows_the_intervals_and_the_verdict(tabnet, wine, tmp_path):
    X, y = wine
    path = report.feature_mask_report(tabnet, X, tmp_path / "masks.html", y=y, random_state=7)
    page = path.read_text(encoding="utf-8")
    found = report.importance_intervals(tabnet, X, random_state=7)
    for name, share, low, high in zip(
        found.feature_names, found.importances, found.low, found.high
    ):
        row = (
            f"<td>{html.escape(name)}</td><td>{100 * share:.2f}%</td>"
            f"<td>{100 * low:.2f}% to {100 * high:.2f}%</td>"
        )
        assert row in page
    assert "<td>90% interval</td>" in page
    assert "200 bootstrap resamples of these 89 rows" in page
    assert html.escape(found.verdict()) in page
    kind = "warn" if found.overlapping() else "ok"
    assert f'<div class="trust {kind}"><strong>Can this ranking be trusted?</strong>' in page
    assert len(_images(page)) == 7
    # the same seed writes the same page
    again = report.feature_mask_report(tabnet, X, tmp_path / "again.html", y=y, random_state=7)
    assert again.read_text(encoding="utf-8") == page
    # no resamples: no intervals and no verdict
    plain = report.feature_mask_report(tabnet, X, tmp_path / "plain.html", n_resamples=0)
    plain = plain.read_text(encoding="utf-8")
    assert "% interval</td>" not in plain and "bootstrap" not in plain
    assert '<div class="trust' not in plain


def test_feature_mask_report_says_when_the_ranking_is_a_tie(tabnet, wine, tmp_path):
    X, _ = wine
    # 3 rows: wide intervals, the top features cannot stand apart
    found = report.importance_intervals(tabnet, X.iloc[:3])
    assert found.overlapping()
    page = report.feature_mask_report(tabnet, X.iloc[:3], tmp_path / "few.html")
    page = page.read_text(encoding="utf-8")
    assert '<div class="trust warn">' in page and "Not settled: on these 3 rows" in page


def test_feature_mask_report_checks_the_bootstrap_parameters(tabnet, wine, tmp_path):
    with pytest.raises(ValueError, match=r"'n_resamples' parameter .* must be an integer >= 0"):
        report.feature_mask_report(tabnet, wine[0], tmp_path / "x.html", n_resamples=-1)
    with pytest.raises(ValueError, match=r"'confidence' parameter .* must be"):
        report.feature_mask_report(tabnet, wine[0], tmp_path / "x.html", confidence=90)
    assert not (tmp_path / "x.html").exists()


def test_feature_importance_plot_draws_the_intervals(tabnet, wine):
    X, _ = wine
    ax = report.plot_feature_importances(tabnet, X, n_resamples=100, random_state=2)
    bars, whiskers = ax.containers
    found = report.importance_intervals(tabnet, X, n_resamples=100, random_state=2)
    order = found.order()
    np.testing.assert_allclose([b.get_width() for b in bars], 100 * found.importances[order])
    segments = whiskers.lines[2][0].get_segments()  # one horizontal segment per bar
    ends = np.array([[seg[0][0], seg[1][0]] for seg in segments])
    np.testing.assert_allclose(ends[:, 0], 100 * found.low[order])
    np.testing.assert_allclose(ends[:, 1], 100 * found.high[order])
    assert "whiskers: 90% interval over 100 bootstrap resamples of the 89 rows" in (
        ax.get_xlabel()
    )
    _draw(ax)
    assert len(report.plot_feature_importances(tabnet, X).containers) == 1  # default: none
    with pytest.raises(ValueError, match="n_resamples > 0 needs X"):
        report.plot_feature_importances(tabnet, n_resamples=10)


# what the predictions never read: a proof with faithful_masks=True, nothing without


@pytest.fixture(scope="module")
def faithful(wine):
    X, y = wine
    # a short fit: the warm-up (which chooses the columns) shortened to 100 steps
    clf = TabNetEntmaxClassifier(
        faithful_masks=True,
        mask_warmup=100,
        n_d=4,
        n_a=4,
        n_steps=2,
        max_epochs=16,
        random_state=0,
    )
    return clf.fit(X, y)


def test_feature_mask_report_lists_what_faithful_predictions_never_read(faithful, wine, tmp_path):
    X, y = wine
    rows = [0, 7, 40, 80]
    path = report.feature_mask_report(
        faithful, X, tmp_path / "faithful.html", y=y, rows=rows, n_resamples=0
    )
    page = path.read_text(encoding="utf-8")
    never = faithful.never_read(X)
    assert never[rows].any()  # else the lines below would all read "none"
    for r in rows:
        names = ", ".join(X.columns[never[r]]) or "none"
        line = f"<tr><td>row {X.index[r]}</td><td>this prediction never read: {names}</td></tr>"
        assert line in page
    assert page.count("this prediction never read: ") == len(rows)  # the chosen rows only
    share = f"{100 * never.mean():.1f}% ({never.sum()} of {never.size} (row, feature) pairs)"
    assert f"<td>(row, feature) pairs never read</td><td>{share}, provably" in page
    assert f"Over these {len(X)} rows: {share} never read." in page
    assert "<td>faithful_masks</td><td>True</td>" in page
    assert "not proof" not in page and "paper&#x27;s mask design" not in page


def test_feature_mask_report_says_classic_zero_masks_prove_nothing(tabnet, wine, tmp_path):
    from sk_entmax.report.masks import NOT_PROOF

    X, _ = wine
    page = report.feature_mask_report(tabnet, X, tmp_path / "classic.html", n_resamples=0)
    page = page.read_text(encoding="utf-8")
    statement = NOT_PROOF.format(how="faithful_masks=True")
    assert statement.startswith("This model uses the paper's mask design: the first step")
    assert f"Zero masks are not proof of non-use.</strong> {html.escape(statement)}" in page
    assert "never read: " not in page and "Features each prediction never read" not in page
    assert "<td>(row, feature) pairs never read</td><td>not available" in page
