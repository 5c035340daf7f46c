"""The report and the command line for a regression target: ``--task``, the options it
refuses, and the HTML report of a TabNetEntmaxRegressor (masks, never-read lists, predicted
against true values, nothing about classes or probabilities)."""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from sklearn.datasets import make_friedman1  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402

from sk_entmax import TabNetEntmaxRegressor, report  # noqa: E402
from sk_entmax.__main__ import main  # noqa: E402
from sk_entmax.cli import report as cli  # noqa: E402

TINY = {"n_d": 4, "n_a": 4, "n_steps": 2, "n_independent": 1, "n_shared": 1, "lr": 0.1}
#: what only a classifier's report shows
CLASSIFIER_ONLY = (
    "predict_proba",
    "Sparse probabilities",
    "Probability support",
    "Conformal prediction sets",
    "<td>classes</td>",
    "accuracy",
)


def _frame(n: int = 120, n_features: int = 10) -> pd.DataFrame:
    """Friedman's regression problem: 5 of the features matter, plus a text column with
    a gap and a number missing, as a user's CSV holds them."""
    X, y = make_friedman1(n_samples=n, n_features=n_features, noise=0.1, random_state=0)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(n_features)])
    frame["colour"] = np.where(np.arange(n) % 3 == 0, "red", "blue")
    frame.loc[4, "colour"] = np.nan
    frame.loc[5, "f2"] = np.nan
    frame["price"] = y
    frame["species"] = np.where(y > np.median(y), "dear", "cheap")
    return frame


@pytest.fixture(scope="module")
def frame():
    return _frame()


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory, frame):
    path = tmp_path_factory.mktemp("data") / "prices.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def regressor(frame):
    X = frame.drop(columns=["price", "species"])
    return TabNetEntmaxRegressor(max_epochs=3, random_state=0, **TINY).fit(X, frame["price"])


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m sk_entmax report: error: ")
    return err


def _page(path) -> str:
    return html.unescape(path.read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- the CLI


def test_cli_fits_a_regressor_for_a_continuous_target(csv_path, tmp_path, capsys, monkeypatch):
    """--task auto picks regression; with faithful masks (the default) the terminal and the
    page list what the regressor's predictions never read, as ``never_read`` says."""
    fitted, build = [], cli._estimator

    def keep(*args, **kwargs):
        fitted.append(build(*args, **kwargs))
        return fitted[-1]

    monkeypatch.setattr(cli, "_estimator", keep)
    # a short fit: the warm-up (which chooses the columns) shortened to 100 steps
    monkeypatch.setattr(
        cli, "_estimator", lambda *a, **k: keep(*a, **k).set_params(mask_warmup=100)
    )
    out = tmp_path / "price.html"
    args = ["report", "--data", str(csv_path), "--target", "price", "--out", str(out)]
    args += ["--max-epochs", "16", "--resamples", "20"]  # faithful masks: the default
    assert main(args) == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    (reg,) = fitted
    assert isinstance(reg, TabNetEntmaxRegressor) and reg.faithful_masks is True
    assert "task: regression on 'price' (--task auto: numbers, not all whole)" in text
    assert "training rows: 90 of 120 (75%, not stratified)" in text
    assert "TabNetEntmaxRegressor handles them" in text
    assert re.search(r"fitting TabNetEntmaxRegressor on 90 rows x 12 columns \(regression", text)
    assert "classes" not in text and "predict_proba" not in text
    # the held-out scores, as scikit-learn computes them on the report's rows
    table = cli._read_table(csv_path, "price")
    X, _ = cli._infinite_to_missing(table.X)
    _, X_test, _, y_test, stratified = cli._split(X, table.y, 0, by_class=False)
    assert not stratified
    predicted = reg.predict(X_test)
    r2 = r2_score(y_test, predicted)
    rmse = float(np.sqrt(np.mean((predicted - y_test.to_numpy()) ** 2)))
    assert f"held-out R² {r2:.3f} and RMSE {rmse:.4g} on 30 rows" in text
    assert "feature importances on the 30 held-out rows" in text
    # the never-read lines are never_read's, on the terminal and on the page
    never = reg.never_read(X_test)
    assert never[:8].any()  # else every line would read "none"
    share = f"{100 * never.mean():.1f}% ({never.sum()} of {never.size} (row, feature) pairs)"
    assert f"never read: {share} over the 30 held-out rows" in text
    lines = re.findall(r"^  row (\S+): this prediction never read: (.+)$", text, re.M)
    assert lines == [
        (str(X_test.index[r]), ", ".join(X_test.columns[never[r]]) or "none") for r in range(8)
    ]
    page = _page(out)
    for row, names in lines:
        assert f"<td>row {row}</td><td>this prediction never read: {names}</td>" in page
    assert f"<td>(row, feature) pairs never read</td><td>{share}, provably" in page
    # masks and importances as for a classifier, predicted against true instead of classes
    assert page.count("data:image/png;base64,") == 5
    for alt in ("global feature importance", "feature masks per step", "predicted against true"):
        assert f'alt="{alt}"' in page
    assert f"<td>R² on these rows</td><td>{r2:.3f}</td>" in page
    assert f"price: R² {r2:.3f}, RMSE {rmse:.4g}" in page
    assert "<td>task</td><td>regression on 'price'" in page
    for text_only in CLASSIFIER_ONLY:
        assert text_only not in page


def test_task_classification_refuses_a_continuous_target(csv_path, capsys, tmp_path):
    out = str(tmp_path / "r.html")
    args = ["report", "--data", str(csv_path), "--target", "price", "--out", out]
    assert main([*args, "--task", "classification"]) == 2
    err = _one_line_error(capsys)
    assert "column 'price' holds continuous numbers" in err
    assert "--task classification cannot fit it" in err and "--task regression" in err


def test_task_regression_refuses_text_labels(csv_path, capsys, tmp_path):
    out = str(tmp_path / "r.html")
    args = ["report", "--data", str(csv_path), "--target", "species", "--out", out]
    assert main([*args, "--task", "regression"]) == 2
    err = _one_line_error(capsys)
    assert "column 'species' holds text (" in err and "--task regression needs" in err


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--confidence", "0.9"], "--confidence gives conformal prediction sets"),
        (["--model", "sparsemax"], "--model sparsemax is a linear classifier"),
        (["--model", "entmax"], "--model entmax is a linear classifier"),
    ],
)
def test_classification_options_are_refused_for_a_regression_target(
    csv_path, capsys, tmp_path, option, message
):
    out = tmp_path / "r.html"
    args = ["report", "--data", str(csv_path), "--target", "price", "--out", str(out), *option]
    assert main(args) == 2  # --task auto: refused once the target is read, before any fit
    err = _one_line_error(capsys)
    assert message in err and "a regression target (--task auto)" in err
    # --task regression: refused before the file is even read
    missing = ["--data", str(tmp_path / "missing.csv")]
    assert main([*args[:1], *missing, *args[3:], "--task", "regression"]) == 2
    err = _one_line_error(capsys)
    assert message in err and "--task regression asks for a regressor" in err
    assert not out.exists()


def test_whole_numbers_stay_class_labels_and_the_refusal_names_task_regression(tmp_path, capsys):
    path = tmp_path / "counts.csv"
    # 12 distinct whole numbers (not more than 20): class labels for --task auto
    path.write_text("x,count\n" + "".join(f"{i * 0.5},{3 * i}\n" for i in range(12)))
    assert main(["report", "--data", str(path), "--target", "count"]) == 2
    err = _one_line_error(capsys)
    assert "(is it an identifier? If it is a quantity, give --task regression.)" in err


def test_regression_target_must_be_finite_and_vary(tmp_path, capsys):
    path = tmp_path / "inf.csv"
    path.write_text("x,y\n" + "".join(f"{i},{i * 0.5 if i != 3 else 'inf'}\n" for i in range(20)))
    assert main(["report", "--data", str(path), "--target", "y"]) == 2
    assert "holds 1 infinite value(s)" in _one_line_error(capsys)
    path = tmp_path / "flat.csv"
    path.write_text("x,y\n" + "".join(f"{i},2\n" for i in range(20)))
    assert main(["report", "--data", str(path), "--target", "y", "--task", "regression"]) == 2
    assert "holds a single value (2) in every row" in _one_line_error(capsys)


def test_help_describes_the_task(capsys):
    with pytest.raises(SystemExit) as info:
        main(["report", "--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--task {auto,classification,regression}" in text
    assert "type_of_target: continuous" in text and "TabNetEntmaxRegressor" in text


# ----------------------------------------------------------------------- the report


def test_regressor_report_shows_predicted_against_true_and_no_probabilities(
    regressor, frame, tmp_path
):
    X, y = frame.drop(columns=["price", "species"]), frame["price"]
    path = report.feature_mask_report(regressor, X, tmp_path / "r.html", y=y, n_resamples=0)
    page = _page(path)
    r2 = regressor.score(X, y)
    rmse = float(np.sqrt(np.mean((regressor.predict(X) - y.to_numpy()) ** 2)))
    assert "<h2>Predicted against true</h2>" in page
    assert f"price: R² {r2:.3f}, RMSE {rmse:.4g} (true values' standard deviation" in page
    assert f"<td>RMSE on these rows</td><td>{rmse:.4g}</td>" in page
    assert "<td>model</td><td>TabNetEntmaxRegressor</td>" in page
    # faithful_masks=True, the default: the page says what a zero mask proves
    assert "Zero masks are not proof of non-use." not in page
    assert "This model uses faithful masks (faithful_masks=True)" in page
    assert page.count("data:image/png;base64,") == 5
    for text in CLASSIFIER_ONLY:
        assert text not in page
    # without y: the masks, and a note instead of the figure
    page = _page(report.feature_mask_report(regressor, X, tmp_path / "n.html", n_resamples=0))
    assert page.count("data:image/png;base64,") == 4 and "No true values were given" in page


def test_regressor_report_refuses_what_is_for_classifiers(regressor, frame, tmp_path):
    X = frame.drop(columns=["price", "species"])
    with pytest.raises(TypeError, match="is a regressor: it has no predict_proba"):
        report.probability_support_report(regressor, X, tmp_path / "p.html")
    with pytest.raises(TypeError, match="conformal prediction sets are for classifiers"):
        report.feature_mask_report(regressor, X, tmp_path / "c.html", conformal=object())
    with pytest.raises(ValueError, match="predicts 1 target"):
        report.feature_mask_report(regressor, X, tmp_path / "y.html", y=np.ones((len(X), 2)))
    assert not list(tmp_path.iterdir())


def test_multi_output_regressor_gets_one_panel_per_target(frame, tmp_path):
    """Supported by feature_mask_report (the CLI reads one target column): one scatter per
    target, named from the DataFrame's columns, R² averaged as ``score`` does."""
    X = frame.drop(columns=["price", "species"])
    Y = pd.DataFrame({"price": frame["price"], "double": 2 * frame["f0"] - frame["f1"]})
    reg = TabNetEntmaxRegressor(max_epochs=2, random_state=0, **TINY).fit(X, Y)
    page = _page(report.feature_mask_report(reg, X, tmp_path / "m.html", y=Y, n_resamples=0))
    pred = reg.predict(X)
    each = [r2_score(Y.iloc[:, j], pred[:, j]) for j in range(2)]
    assert "<td>targets</td><td>price, double</td>" in page
    assert (
        f"<td>R² on these rows</td><td>{reg.score(X, Y):.3f} (mean over 2 targets: "
        f"price {each[0]:.3f}, double {each[1]:.3f})</td>"
    ) in page
    assert f"price: R² {each[0]:.3f}" in page and f"double: R² {each[1]:.3f}" in page
    assert page.count('alt="predicted against true"') == 1
