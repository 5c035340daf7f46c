"""Interpretability reports: the figures hold what they claim, the HTML stands alone."""

from __future__ import annotations

import base64
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
    return TabNetEntmaxClassifier(entmax_mode="adaptive", max_epochs=1, random_state=0).fit(X, y)


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
    with pytest.raises(ImportError, match=re.escape("sk-entmax[plot]")):
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
    with pytest.raises(ValueError, match="data must be a sequence of"):
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
