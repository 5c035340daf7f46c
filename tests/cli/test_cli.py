"""The command line: ``python -m sk_entmax demo`` and ``python -m sk_entmax report``."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_iris

from sk_entmax.__main__ import main

pytest.importorskip("matplotlib")

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sk_entmax", *args], capture_output=True, text=True, env=ENV
    )


@pytest.fixture(scope="module")
def iris_csv(tmp_path_factory):
    """Iris with species names, a text column and one missing number: a user's CSV."""
    data = load_iris(as_frame=True)
    frame = data.frame.drop(columns="target")
    frame["species"] = data.target_names[data.target]
    frame["colour"] = np.where(frame.index % 3 == 0, "red", "blue")
    frame.loc[5, "sepal length (cm)"] = np.nan
    path = tmp_path_factory.mktemp("data") / "iris.csv"
    frame.to_csv(path, index=False)
    return path


def test_demo_quick_prints_the_table_and_writes_the_report(capsys, tmp_path):
    out = tmp_path / "demo.html"
    assert main(["demo", "--quick", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "3/3 [" in captured.err  # TabNet's progress bar, shown by default (issue 44)
    header = next(line for line in text.splitlines() if "exact zeros" in line and "fit" in line)
    assert header.split()[:2] == ["model", "accuracy"]
    rows = {}
    for line in text.splitlines():
        match = re.match(r"\s+(.+?)\s+([01]\.\d{3})\s+(\d+\.\d)%\s+(\d\.\d\d) of 3\s", line)
        if match:
            rows[match.group(1)] = float(match.group(3))
    assert list(rows) == [
        "softmax: LogisticRegression",
        "SparsemaxClassifier",
        "EntmaxClassifier (alpha 1.5)",
        "TabNetEntmaxClassifier",
    ]
    assert rows["softmax: LogisticRegression"] == 0.0
    assert rows["SparsemaxClassifier"] > 0.0
    assert "[4/4] TabNetEntmaxClassifier" in text  # progress, one line per model
    # faithful masks by default: the certificate's share (3 quick epochs choose nothing)
    assert re.search(r"Never read, provably: \d+% of the \(wine, measurement\) pairs", text)
    # probability rows print exact zeros as a bare "0"
    assert re.search(r"class_\d\s.*\s0\s", text)
    assert f"Feature-mask report: {out.resolve()}" in text
    page = out.read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == 7 and "flavanoids" in page


def test_demo_without_matplotlib_says_which_extra(monkeypatch, tmp_path):
    from sk_entmax.cli import demo as _demo

    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    out = io.StringIO()
    # the model and data are never touched when there is nothing to draw with
    assert _demo._report(None, None, None, tmp_path / "x.html", out) is None
    text = out.getvalue()
    assert "No feature-mask report" in text and "pip install matplotlib" in text
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize("model", ["tabnet", "sparsemax"])
def test_report_command_fits_and_writes(iris_csv, tmp_path, capsys, model):
    out = tmp_path / f"{model}.html"
    status = main(
        [
            "report",
            "--data",
            str(iris_csv),
            "--target",
            "species",
            "--model",
            model,
            "--out",
            str(out),
            "--max-epochs",
            "3",
        ]
    )
    assert status == 0
    text = capsys.readouterr().out
    assert "held-out accuracy" in text and f"report written to {out.resolve()}" in text
    page = out.read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == (7 if model == "tabnet" else 3)
    assert "setosa" in page
    # the terminal and the page say what was done to the data, and on how many rows
    for line in (
        "rows dropped: none (every row has a value in 'species')",
        "training rows: 112 of 150 (75%, stratified by class); the other 38 are held out",
    ):
        assert line in text
        label, said = line.split(": ", 1)
        assert f"<td>{label}</td><td>{said}" in page.replace("&#x27;", "'")
    if model == "tabnet":
        assert "colour" in page and "petal length (cm)" in page
        # faithful masks by default: the certificate is printed (3 epochs choose nothing)
        assert re.search(
            r"never read: .+ \(row, feature\) pairs\) over the 38 held-out rows; with "
            r"faithful masks these predictions provably did not depend on those features",
            text,
        )
        assert "  row " in text and "this prediction never read" in page
        assert "Zero masks are not proof of non-use." not in page
        assert "median" not in text  # TabNet takes the gap as it is
        assert re.search(
            r"missing values: kept, nothing imputed beforehand: TabNetEntmaxClassifier "
            r"handles them; numeric columns sepal length \(cm\) \(\d training, \d held out\)",
            text,
        )
    else:
        assert re.search(
            r"missing values: filled by the model's pipeline \(SimpleImputer\) with the "
            r"median of the training rows in sepal length \(cm\)",
            text,
        )


def _iris_frame():
    data = load_iris(as_frame=True)
    frame = data.frame.drop(columns="target")
    frame["species"] = data.target_names[data.target]
    return frame


def test_report_says_which_rows_it_dropped_and_what_it_trained_on(tmp_path, capsys):
    frame = _iris_frame()
    frame.loc[[3, 40, 41, 120], "species"] = np.nan  # four rows without a label
    frame.loc[7, "petal width (cm)"] = np.inf  # read as missing, and said
    path = tmp_path / "unlabelled.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "r.html"
    args = ["report", "--data", str(path), "--target", "species", "--out", str(out)]
    assert main([*args, "--max-epochs", "2"]) == 0
    text = capsys.readouterr().out
    page = out.read_text(encoding="utf-8").replace("&#x27;", "'")
    expected = [
        "rows dropped: 4 of 150, with no value in 'species' (no label to learn or score); "
        "146 labelled rows kept",
        "training rows: 109 of 146 (75%, stratified by class)",
        "infinite values read as missing: petal width (cm) (1)",
    ]
    for line in expected:
        assert line in text, text
        label, said = line.split(": ", 1)
        assert f"<td>{label}</td><td>{said}" in page
    assert "fitting TabNetEntmaxClassifier on 109 rows x 4 columns" in text


def test_report_notes_a_gap_the_training_rows_did_not_have(tmp_path, capsys):
    import pandas as pd
    from sklearn.model_selection import train_test_split

    frame = _iris_frame()
    # the same split as the report's: put a gap in one held-out row only
    _, held_out = train_test_split(
        frame, test_size=0.25, stratify=frame["species"], random_state=0
    )
    frame.loc[held_out.index[0], "sepal width (cm)"] = np.nan
    path = tmp_path / "gap.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "r.html"
    args = ["report", "--data", str(path), "--target", "species", "--out", str(out)]
    assert main([*args, "--max-epochs", "2"]) == 0
    captured = capsys.readouterr()
    assert "numeric columns sepal width (cm) (0 training, 1 held out), complete in the " in (
        captured.out
    )
    note = "note: numeric column 'sepal width (cm)': 1 missing value(s), where the training"
    assert captured.out.count(note) == 1  # said once, not once per use of the model
    assert "Warning" not in captured.err
    page = out.read_text(encoding="utf-8").replace("&#x27;", "'")
    assert "<td>note</td><td>numeric column 'sepal width (cm)': 1 missing value(s)" in page
    assert pd.read_csv(path)["sepal width (cm)"].isna().sum() == 1


def _write(path, content: bytes | str):
    mode = "wb" if isinstance(content, bytes) else "w"
    with open(path, mode) as handle:
        handle.write(content)
    return path


@pytest.mark.parametrize(
    ("name", "content", "target", "message"),
    [
        (None, None, "species", "no such file"),
        ("folder", None, "species", "is a folder"),
        ("image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200), "y", "binary"),
        ("empty.csv", "", "y", "is empty"),
        ("one.csv", "a\n1\n2\n3\n", "a", "1 column"),
        ("few.csv", "a,b\n1,x\n2,y\n", "b", "at least 10"),
        ("ids.csv", "x,y\n" + "".join(f"{i},id{i}\n" for i in range(30)), "y", "identifier"),
        ("one_class.csv", "x,y\n" + "".join(f"{i},a\n" for i in range(30)), "y", "single class"),
        # a continuous target is a regression target now (--task auto); --task
        # classification refuses it: tests/test_report_regression.py
    ],
    ids=[
        "missing",
        "folder",
        "png",
        "empty",
        "one-column",
        "few-rows",
        "ids",
        "one-class",
    ],
)
def test_report_bad_input_is_one_line(
    monkeypatch, tmp_path, capsys, name, content, target, message
):
    monkeypatch.chdir(tmp_path)  # the default --out, report.html, must not land in the repo
    if name is None:
        path = tmp_path / "missing.csv"
    elif content is None:
        path = tmp_path / name
        path.mkdir()
    else:
        path = _write(tmp_path / name, content)
    assert main(["report", "--data", str(path), "--target", target]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m sk_entmax report: error: ")
    assert message in err


def test_report_missing_target_column_through_the_real_entry_point(iris_csv):
    result = _run("report", "--data", str(iris_csv), "--target", "kind")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "no column 'kind'" in lines[0] and "species" in lines[0]
    assert result.stdout == ""


def test_report_missing_file_through_the_real_entry_point(tmp_path):
    result = _run("report", "--data", str(tmp_path / "nope.csv"), "--target", "y")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"python -m sk_entmax report: error: no such file: {tmp_path / 'nope.csv'}"
    ]


def test_report_reads_semicolons_and_latin1(tmp_path, capsys):
    rows = "".join(f"{i};{(i * 7) % 5};{'été' if i % 2 else 'hiver'}\n" for i in range(40))
    path = _write(tmp_path / "semi.csv", ("a;b;saison\n" + rows).encode("latin-1"))
    out = tmp_path / "semi.html"
    status = main(
        [
            "report",
            "--data",
            str(path),
            "--target",
            "saison",
            "--model",
            "entmax",
            "--max-epochs",
            "2",
            "--out",
            str(out),
        ]
    )
    assert status == 0
    assert "été" in out.read_text(encoding="utf-8")


def test_unknown_command_exits_non_zero():
    with pytest.raises(SystemExit) as info:
        main(["nope"])
    assert info.value.code != 0


def test_module_entry_point_help():
    result = _run("--help")
    assert result.returncode == 0
    assert "demo" in result.stdout and "report" in result.stdout


# --------------------------------------------------------------------------- hostile names


def test_report_draws_names_that_look_like_math(tmp_path, capsys):
    rows = "".join(f"{i % 7},{(i * 3) % 5},{'$x^{$' if i % 2 else '$y$'}\n" for i in range(40))
    path = _write(tmp_path / "math.csv", "$\\undefinedcmd$,$\\frac{$,label\n" + rows)
    out = tmp_path / "math.html"
    args = ["report", "--data", str(path), "--target", "label", "--out", str(out)]
    assert main([*args, "--max-epochs", "1"]) == 0, capsys.readouterr().err
    page = out.read_text(encoding="utf-8")
    assert "$\\undefinedcmd$" in page and "$x^{$" in page


# --------------------------------------------------------------------------- output paths


def test_demo_default_report_is_in_a_fresh_private_folder(tmp_path, monkeypatch):
    import tempfile

    from sk_entmax.cli.demo import default_report_path

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    first, second = default_report_path(), default_report_path()
    assert first.parent != second.parent
    for path in (first, second):
        assert path.parent.parent == tmp_path and path.parent.is_dir()
        assert not path.exists() and not path.parent.is_symlink()
        assert path.parent.stat().st_mode & 0o777 == 0o700


def test_run_demo_refuses_to_write_through_a_symlink(tmp_path):
    from sk_entmax.cli import demo as _demo

    victim = _write(tmp_path / "victim.txt", "precious")
    link = tmp_path / "link.html"
    link.symlink_to(victim)
    with pytest.raises(ValueError, match="symbolic link"):
        _demo._report(None, None, None, link, io.StringIO())  # refused before any drawing
    assert victim.read_text() == "precious"


@pytest.mark.parametrize("command", ["demo", "report"])
def test_out_that_is_a_symlink_is_refused_before_any_work(
    tmp_path, capsys, monkeypatch, iris_csv, command
):
    from sk_entmax.cli import report as cli

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted before checking --out")

    monkeypatch.setattr(cli, "_estimator", no_fit)
    monkeypatch.setattr("sk_entmax.cli.demo._run", no_fit)
    victim = _write(tmp_path / "victim.txt", "precious")
    link = tmp_path / "link.html"
    link.symlink_to(victim)
    data = ["--data", str(iris_csv), "--target", "species"] if command == "report" else []
    assert main([command, *data, "--out", str(link)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "symbolic link" in err
    assert victim.read_text() == "precious"


@pytest.mark.parametrize("command", ["demo", "report"])
@pytest.mark.parametrize("where", ["folder", "under-a-file"])
def test_out_that_cannot_be_written_is_one_line_before_any_fit(
    tmp_path, capsys, monkeypatch, iris_csv, command, where
):
    from sk_entmax.cli import report as cli

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted before checking --out")

    monkeypatch.setattr(cli, "_estimator", no_fit)
    monkeypatch.setattr("sk_entmax.cli.demo._run", no_fit)
    if where == "folder":
        out, message = tmp_path, "is a folder"
    else:
        out, message = _write(tmp_path / "file.txt", "x") / "sub" / "r.html", "not a folder"
    data = ["--data", str(iris_csv), "--target", "species"] if command == "report" else []
    assert main([command, *data, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"python -m sk_entmax {command}: error: ")
    assert message in err


def test_an_unexpected_error_is_one_line_too(monkeypatch, capsys, iris_csv, tmp_path):
    from sk_entmax.cli import report as cli

    def broken(args):
        raise RuntimeError("something odd\nwith a second line")

    monkeypatch.setattr(cli, "_report", broken)
    out = str(tmp_path / "r.html")
    assert main(["report", "--data", str(iris_csv), "--target", "species", "--out", out]) == 1
    err = capsys.readouterr().err
    assert err == "python -m sk_entmax report: error: RuntimeError: something odd\n"


# --------------------------------------------------------------------------- hostile CSV files


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-8-sig", "utf-32"])
def test_report_reads_utf16_and_other_unicode_csv(tmp_path, encoding):
    from sk_entmax.cli._csv import _read_table

    rows = "".join(f"{i},{(i * 7) % 5},{'été' if i % 2 else 'hiver'}\n" for i in range(40))
    path = _write(tmp_path / "wide.csv", ("a,b,saison\n" + rows).encode(encoding))
    table = _read_table(path, "saison")
    assert list(table.X.columns) == ["a", "b"] and len(table.y) == 40
    assert set(table.y) == {"été", "hiver"}
    assert (table.n_rows, table.n_unlabelled) == (40, 0)


def test_report_names_the_encoding_it_could_not_read(tmp_path, capsys):
    path = _write(tmp_path / "mixed.csv", b"a,b\n" + b"1,\x00\x01\x02\x03\n" * 20)
    assert main(["report", "--data", str(path), "--target", "b"]) == 2
    err = capsys.readouterr().err
    assert "binary data" in err and "UTF-16" in err


def test_report_refuses_a_wide_header_without_rows_before_parsing(tmp_path, capsys):
    path = _write(tmp_path / "wide.csv", ",".join(f"c{i}" for i in range(20_000)) + "\n")
    assert main(["report", "--data", str(path), "--target", "c0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "20000 columns) and no data rows" in err


def test_report_refuses_too_many_columns_before_parsing(tmp_path, monkeypatch):
    from sk_entmax.cli._csv import _read_table
    from sk_entmax.cli._errors import UsageError

    header = ",".join(f"c{i}" for i in range(51)) + "\n"
    path = _write(tmp_path / "wide.csv", header + ",".join("1" * 51) + "\n")
    monkeypatch.setattr("pandas.read_csv", lambda *a, **k: pytest.fail("parsed"))
    with pytest.raises(UsageError, match="has 51 columns; the report reads tables of up to 50"):
        _read_table(path, "c0", max_columns=50)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["a", None, "b"], r"mixes missing values \(None\) and text \('a'\)"),
        (["a", 1, "b"], r"mixes numbers \(1\) and text \('a'\)"),
    ],
)
def test_report_says_what_is_wrong_with_a_mixed_target(values, message):
    import pandas as pd

    from sk_entmax.cli._errors import UsageError
    from sk_entmax.cli._task import _check_target

    with pytest.raises(UsageError, match=message):
        _check_target(pd.Series(values * 10, dtype=object), "y")


# ------------------------------------------------------------------ importance intervals


def test_report_gives_the_importance_intervals_on_the_terminal_and_page(
    iris_csv, tmp_path, capsys
):
    out = tmp_path / "intervals.html"
    args = ["report", "--data", str(iris_csv), "--target", "species", "--out", str(out)]
    assert main([*args, "--max-epochs", "2", "--resamples", "50"]) == 0
    text = capsys.readouterr().out
    assert (
        "feature importances on the 38 held-out rows, 90% interval over 50 bootstrap "
        "resamples of them (top 5 of 5):"
    ) in text
    listed = re.findall(r"^  (.+?)\s+([\d.]+)% \(([\d.]+)% to ([\d.]+)%\)$", text, re.M)
    assert len(listed) == 5
    page = out.read_text(encoding="utf-8")
    assert "50 bootstrap resamples of these 38 rows" in page
    for name, share, low, high in listed:
        assert float(low) <= float(share) <= float(high)
        # the page shows the same interval (same rows, resamples and seed), to 2 decimals
        found = re.search(
            rf"<td>{re.escape(name)}</td><td>([\d.]+)%</td><td>([\d.]+)% to ([\d.]+)%</td>",
            page,
        )
        assert found, name
        assert [float(v) for v in found.groups()] == pytest.approx(
            [float(share), float(low), float(high)], abs=0.051
        )
    verdict = re.search(r"^ranking: (.+)$", text, re.M).group(1)
    assert verdict.startswith(("Not settled: on these 38 rows", "The top 3 stand apart"))
    assert verdict.replace("'", "&#x27;") in page
    # --resamples 0: neither the intervals nor the verdict
    assert main([*args, "--max-epochs", "1", "--resamples", "0"]) == 0
    text = capsys.readouterr().out
    assert "bootstrap" not in text and "ranking:" not in text
    assert '<div class="trust' not in out.read_text(encoding="utf-8")


@pytest.mark.parametrize("value", ["-1", "many"])
def test_report_refuses_a_bad_resample_count(iris_csv, capsys, value):
    with pytest.raises(SystemExit) as info:
        main(["report", "--data", str(iris_csv), "--target", "species", "--resamples", value])
    assert info.value.code == 2
    assert f"--resamples: must be an integer >= 0; got {value!r}" in capsys.readouterr().err


def test_missing_note_names_as_learned_only_columns_with_gaps_in_training():
    # column a has a gap only in the held-out rows: it takes its training mean and gets no
    # learned indicator; b has gaps in both parts and gets one
    import pandas as pd

    from sk_entmax.cli._notes import _missing_values_note

    X_train = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [np.nan, 1.0, 2.0]})
    X_test = pd.DataFrame({"a": [np.nan, 1.0], "b": [np.nan, 0.0]})
    label, text = _missing_values_note(X_train, X_test, "tabnet")
    assert label == "missing values"
    learned, rest = text.split(" get a learned missing indicator")
    assert "b (1 training, 1 held out)" in learned and "a (" not in learned
    assert "a (0 training, 1 held out), complete in the training rows, take their" in rest


def test_report_notes_dirty_columns_in_its_data_table(tmp_path, capsys):
    # issue 27.4: a numeric column with a stray "?" and an identifier column are named, on
    # the terminal and in the report's "Data" table (the fit's warnings were not shown)
    frame = _iris_frame()
    frame["sepal length (cm)"] = frame["sepal length (cm)"].astype(str)
    frame.loc[frame.index[0], "sepal length (cm)"] = "?"
    frame["passenger"] = [f"row {i}" for i in range(len(frame))]
    path = tmp_path / "dirty.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "r.html"
    args = ["report", "--data", str(path), "--target", "species", "--out", str(out)]
    assert main([*args, "--max-epochs", "1"]) == 0
    captured = capsys.readouterr()
    assert "note: categorical column 'sepal length (cm)':" in captured.out
    assert "note: categorical column 'passenger':" in captured.out
    page = out.read_text(encoding="utf-8").replace("&#x27;", "'")
    assert "<td>note</td><td>categorical column 'passenger'" in page
    assert "<td>note</td><td>categorical column 'sepal length (cm)'" in page


# --------------------------------------------------------------------------- --confidence


def test_report_confidence_gives_conformal_sets_on_terminal_and_page(tmp_path, capsys):
    from sk_entmax.cli import report as cli
    from sk_entmax.conformal import SparseConformalClassifier

    frame = _iris_frame()
    # class labels are data: the page escapes them
    frame["species"] = frame["species"].map({"setosa": "<b>setosa</b>"}).fillna(frame["species"])
    path = tmp_path / "iris.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "sets.html"
    args = ["report", "--data", str(path), "--target", "species", "--model", "sparsemax"]
    args += ["--out", str(out), "--max-epochs", "3"]
    assert main([*args, "--confidence", "0.8"]) == 0
    text = capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert (
        "calibration rows: 23 of the 112 training rows (20%, stratified by class) calibrate "
        "the conformal sets; the model is fitted on the other 89" in text
    )
    assert "fitting SparsemaxClassifier on 89 rows" in text
    assert "conformal prediction sets: target coverage 0.8 (calibrated on 23 rows" in text
    match = re.search(
        r"empirical coverage on the 38 held-out rows: ([01]\.\d{3}) \((\d+) of 38 sets", text
    )
    assert match, text
    coverage, covered = float(match.group(1)), int(match.group(2))
    assert coverage == round(covered / 38, 3)
    sizes = re.search(r"set sizes \(rows\): (.+)", text).group(1)
    counts = dict(re.findall(r"(\d) class(?:es)?: (\d+)", sizes))
    assert sum(map(int, counts.values())) == 38
    samples = re.findall(
        r"  row (\d+) \(true ([^,)]+)(, missed)?\): set \{(.*)\}; ruled out", text
    )
    assert len(samples) == 5

    # the same sets, recomputed: the same splits, fit and calibration
    table = cli._read_table(path, "species")
    X, _ = cli._infinite_to_missing(table.X)
    X_train, X_test, y_train, y_test, _ = cli._split(X, table.y, 0)
    X_fit, X_cal, y_fit, y_cal, _ = cli._split(X_train, y_train, 0, test_size=0.2)
    clf = cli._estimator("sparsemax", X, 3, 0).fit(X_fit, y_fit)
    conformal = SparseConformalClassifier(clf, prefit=True, confidence_level=0.8)
    sets = conformal.conformalize(X_cal, y_cal).predict_set(X_test)
    hits = sets[np.arange(len(y_test)), np.searchsorted(conformal.classes_, y_test)]
    assert covered == int(hits.sum())
    assert counts == {
        str(size): str(n) for size, n in zip(*np.unique(sets.sum(axis=1), return_counts=True))
    }
    for (row, true, missed, kept), position in zip(samples, range(5), strict=True):
        assert row == str(X_test.index[position]) and true == y_test.iloc[position]
        assert kept.split(", ") == list(conformal.classes_[sets[position]])
        assert bool(missed) != bool(hits[position])

    section = page[page.index("<h2>Conformal prediction sets</h2>") :]
    assert "<td>target coverage</td><td>0.8</td>" in section
    assert f"<td>empirical coverage</td><td>{match.group(1)} ({covered} of 38 sets" in section
    for size, n in counts.items():
        assert f"<td>{size} class{'' if size == '1' else 'es'}</td><td>{n} rows</td>" in section
    assert "&lt;b&gt;setosa&lt;/b&gt;" in section and "<b>setosa" not in page
    assert "<td>calibration rows</td><td>23 of the 112 training rows" in page

    # without --confidence nothing of it
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "conformal" not in text and "calibration rows" not in text
    assert "fitting SparsemaxClassifier on 112 rows" in text
    assert "Conformal prediction sets" not in out.read_text(encoding="utf-8")


@pytest.mark.parametrize("value", ["0", "1", "1.5", "x", "nan"])
def test_report_refuses_a_bad_confidence(iris_csv, capsys, value):
    with pytest.raises(SystemExit) as info:
        main(["report", "--data", str(iris_csv), "--target", "species", "--confidence", value])
    assert info.value.code == 2
    err = capsys.readouterr().err
    message = f"--confidence: must be a number strictly between 0 and 1, e.g. 0.9; got {value!r}"
    assert err.splitlines()[-1].endswith(message)


def test_help_describes_confidence(capsys):
    with pytest.raises(SystemExit) as info:
        main(["report", "--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--confidence L" in text and "empirical" in text


# --------------------------------------------------------------------------- --faithful-masks


def test_report_faithful_masks_lists_what_predictions_never_read(tmp_path, capsys, monkeypatch):
    from sklearn.datasets import load_wine

    from sk_entmax.cli import report as cli

    data = load_wine(as_frame=True)
    frame = data.frame[data.feature_names].copy()
    frame["kind"] = data.target_names[data.target]
    path = tmp_path / "wine.csv"
    frame.to_csv(path, index=False)
    fitted, build = [], cli._estimator

    def keep(*args, **kwargs):
        fitted.append(build(*args, **kwargs))
        return fitted[-1]

    monkeypatch.setattr(cli, "_estimator", keep)
    # a short fit: the warm-up (which chooses the columns) shortened to 100 steps
    monkeypatch.setattr(
        cli, "_estimator", lambda *a, **k: keep(*a, **k).set_params(mask_warmup=100)
    )
    out = tmp_path / "faithful.html"
    args = ["report", "--data", str(path), "--target", "kind", "--out", str(out)]
    assert main([*args, "--max-epochs", "16", "--resamples", "0"]) == 0  # the default
    text = capsys.readouterr().out
    (clf,) = fitted
    assert clf.faithful_masks is True
    table = cli._read_table(path, "kind")
    _, X_test, _, _, _ = cli._split(table.X, table.y, 0)  # the report's held-out rows
    never = clf.never_read(X_test)
    assert never[:8].any()  # else every line would read "none"
    share = f"{100 * never.mean():.1f}% ({never.sum()} of {never.size} (row, feature) pairs)"
    assert f"never read: {share} over the {len(X_test)} held-out rows; with faithful" in text
    lines = re.findall(r"^  row (\S+): this prediction never read: (.+)$", text, re.M)
    assert lines == [
        (str(X_test.index[r]), ", ".join(X_test.columns[never[r]]) or "none") for r in range(8)
    ]
    assert "paper's mask design" not in text
    page = out.read_text(encoding="utf-8")
    for row, names in lines:
        assert f"<td>row {row}</td><td>this prediction never read: {names}</td>" in page
    assert f"<td>(row, feature) pairs never read</td><td>{share}, provably" in page


def test_report_no_faithful_masks_fits_the_papers_design(iris_csv, capsys, tmp_path):
    out = tmp_path / "paper.html"
    args = ["report", "--data", str(iris_csv), "--target", "species", "--out", str(out)]
    assert main([*args, "--max-epochs", "3", "--resamples", "0", "--no-faithful-masks"]) == 0
    text = capsys.readouterr().out
    assert (
        "never read: not available. This model uses the paper's mask design: the first "
        "step reads every feature, so a feature whose mask is 0 at every step can still "
        "change the prediction. Fit with faithful masks (leave out --no-faithful-masks) for "
        "masks that certify non-use."
    ) in text
    page = out.read_text(encoding="utf-8")
    assert "Zero masks are not proof of non-use." in page
    assert "this prediction never read" not in text + page


@pytest.mark.parametrize("flag", ["--faithful-masks", "--no-faithful-masks"])
def test_report_faithful_masks_is_for_tabnet_only(iris_csv, capsys, tmp_path, flag):
    out = str(tmp_path / "r.html")
    args = ["report", "--data", str(iris_csv), "--target", "species", "--out", out]
    assert main([*args, "--model", "sparsemax", flag]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{flag} is for --model tabnet" in err
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    assert flag in capsys.readouterr().out


# --------------------------------------------------------------------- --task auto (issue 44)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # whole numbers stored as floats, 30 distinct in 60 rows: a quantity (diabetes-like)
        ([float(25 + 7 * (i % 30)) for i in range(60)], "regression"),
        ([25 + 7 * (i % 30) for i in range(60)], "regression"),  # the same as integers
        ([i % 20 for i in range(60)], "classification"),  # 20 distinct: not more than 20
        ([i % 25 for i in range(1000)], "classification"),  # 25 distinct, 2.5% of the rows
        ([f"c{i % 30}" for i in range(60)], "classification"),  # text is never a quantity
        ([bool(i % 2) for i in range(60)], "classification"),
        ([i * 0.5 for i in range(30)], "regression"),  # not all whole: continuous
    ],
    ids=["floats", "ints", "20-distinct", "few-per-row", "text", "bool", "continuous"],
)
def test_task_auto_reads_many_distinct_numbers_as_a_quantity(values, expected):
    import pandas as pd

    from sk_entmax.cli._task import _resolve_task

    assert _resolve_task(pd.Series(values), "y", "auto") == expected


def test_report_fits_a_regressor_for_whole_numbers_too_many_to_be_classes(tmp_path, capsys):
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    y = np.round(150 + 60 * x)  # whole numbers stored as 151.0, 75.0, ...
    path = _write(tmp_path / "d.csv", "x,target\n" + "".join(f"{a},{b}\n" for a, b in zip(x, y)))
    args = ["report", "--data", str(path), "--target", "target", "--out", str(tmp_path / "r.html")]
    assert main([*args, "--max-epochs", "1", "--resamples", "0"]) == 0
    out = capsys.readouterr().out
    n = len(set(y))
    assert (
        f"task: regression on 'target' (--task auto: numbers, {n} distinct values in 60 rows"
        in out
    )
    assert "too many to be classes" in out and "fitting TabNetEntmaxRegressor" in out
    assert "accuracy" not in out


def test_report_says_in_one_line_when_classes_are_many_and_small(tmp_path, capsys):
    x = np.arange(60) * 0.1
    path = _write(
        tmp_path / "c.csv", "x,y\n" + "".join(f"{a},{i % 15}\n" for i, a in enumerate(x))
    )
    out_path = tmp_path / "r.html"
    base = ["report", "--data", str(path), "--target", "y", "--out", str(out_path)]
    assert main([*base, "--model", "sparsemax", "--max-epochs", "1"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("classes:")]
    assert lines == [
        "classes: 15 classes in 'y', 15 of them with fewer than 10 rows: too few rows per class "
        "to learn each one well; if 'y' is a quantity, give --task regression"
    ]


def test_help_states_the_task_auto_rule(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "more than 20 distinct values and more than 5% of the rows distinct" in text


# ------------------------------------------------------------------ odd targets (issue 45.8)


def _target_csv(tmp_path, values) -> str:
    rows = "\n".join(f"{i % 7},{i % 3},{v}" for i, v in enumerate(values))
    return str(_write(tmp_path / "odd.csv", "a,b,t\n" + rows + "\n"))


def test_a_target_of_huge_whole_numbers_names_task_regression(tmp_path, capsys):
    # 12 distinct values of magnitude 2**60 and more (floats, all whole): too few to be read
    # as a quantity by --task auto, and type_of_target calls them continuous
    values = [float(2**60 * (k + 1) + 2**55) * 7.3 for k in range(12)] * 2
    assert main(["report", "--data", _target_csv(tmp_path, values), "--target", "t"]) == 2
    assert "give --task regression" in capsys.readouterr().err


def test_a_target_mixing_numbers_and_text_is_refused(tmp_path, capsys):
    path = _target_csv(tmp_path, ["1.5", "2.5", "abc"] * 8)
    assert main(["report", "--data", path, "--target", "t"]) == 2
    assert re.search(r"mixes numbers \('1.5'\) and text \('abc'\)", capsys.readouterr().err)


def test_integers_beyond_64_bits_are_numbers(tmp_path, capsys):
    from sk_entmax.cli._csv import _read_table

    values = [2**70 + k * 2**66 for k in range(40)]
    path = Path(_target_csv(tmp_path, values))
    table = _read_table(path, "t")
    assert table.task == "regression" and table.y.dtype == np.float64
    assert _read_table(path, "t", "regression").task == "regression"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_at_out_is_refused_before_the_fit(iris_csv, tmp_path, capsys, monkeypatch):
    fifo = tmp_path / "report.html"
    os.mkfifo(fifo)
    monkeypatch.setattr(
        "sk_entmax.cli.report._read_table", lambda *a, **k: pytest.fail("read before --out")
    )
    args = ["report", "--data", str(iris_csv), "--target", "species", "--out", str(fifo)]
    assert main(args) == 2
    assert "not a regular file" in capsys.readouterr().err


# issue 58, point 9: the report never replaces the data, nor a file that is not a report


@pytest.mark.parametrize("through", ["same-path", "hard-link"])
def test_report_out_equal_to_data_is_refused_and_the_data_kept(capsys, tmp_path, through):
    path = tmp_path / "data.csv"
    path.write_text("x,y\n1,a\n2,b\n3,a\n4,b\n")
    out = path
    if through == "hard-link":
        out = tmp_path / "other-name.csv"
        os.link(path, out)
    before = path.read_bytes()
    assert main(["report", "--data", str(path), "--target", "y", "--out", str(out)]) == 2
    assert "is the --data file" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_report_refuses_to_replace_a_file_that_is_not_a_report(capsys, tmp_path, iris_csv):
    out = tmp_path / "notes.html"
    out.write_text("<p>my notes</p>")
    assert main(["report", "--data", str(iris_csv), "--target", "species", "--out", str(out)]) == 2
    assert "exists and is not a report of sk_entmax" in capsys.readouterr().err
    assert out.read_text() == "<p>my notes</p>"
    report = tmp_path / "old-report.html"  # a report written before is replaced (checked only)
    report.write_text("<!DOCTYPE html>\n<body>...<footer>Written by sk_entmax 0.1.</footer>")
    from sk_entmax.cli._out_path import _check_out

    _check_out(report, iris_csv)
    (tmp_path / "empty.html").touch()
    _check_out(tmp_path / "empty.html", iris_csv)


def test_report_refuses_a_target_with_more_classes_than_it_reports_on(capsys, tmp_path):
    """(issue 58, point 11) 1,001 classes of two rows each: refused before any fit."""
    from sk_entmax.cli._task import MAX_REPORT_CLASSES

    n = MAX_REPORT_CLASSES + 1
    labels = [f"c{i}" for i in range(n)] * 2
    path = tmp_path / "many.csv"
    path.write_text("x,label\n" + "".join(f"{i},{c}\n" for i, c in enumerate(labels)))
    out = tmp_path / "r.html"
    assert main(["report", "--data", str(path), "--target", "label", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{n:,} classes; the report is made for at most {MAX_REPORT_CLASSES:,}" in err
    assert not out.exists()


def test_integer_labels_beyond_float64s_precision_stay_distinct(tmp_path):
    """(issue 58, point 18) 10**20 + k for k in 0, 1, 2: three classes, read exactly."""
    from sk_entmax.cli._csv import _read_table

    labels = [10**20 + k % 3 for k in range(30)]
    path = tmp_path / "big.csv"
    path.write_text("x,label\n" + "".join(f"{i},{c}\n" for i, c in enumerate(labels)))
    table = _read_table(path, "label")
    assert table.task == "classification"
    assert sorted(set(table.y)) == [str(10**20), str(10**20 + 1), str(10**20 + 2)]


def test_a_regression_target_too_wide_for_the_report_is_refused_before_the_fit(capsys, tmp_path):
    """(issue 58, point 17) A target of scale 1e200: one line saying why, no warnings."""
    values = [1e200 * ((i * 7) % 11 - 5) for i in range(40)]
    path = tmp_path / "huge.csv"
    path.write_text("x,y\n" + "".join(f"{i},{v!r}\n" for i, v in enumerate(values)))
    out = tmp_path / "r.html"
    args = ["report", "--data", str(path), "--target", "y", "--task", "regression"]
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rescale the target" in err
    assert not out.exists()


@pytest.mark.parametrize("length", [100_000, 140_000])
def test_a_column_name_too_long_to_print_is_refused_in_one_short_line(capsys, tmp_path, length):
    """(issue 58, point 21) Over 128 KiB the CSV reader failed (exit 1); 100 KB was printed
    in full, twice."""
    path = tmp_path / "long.csv"
    rows = "".join(f"{i},{i % 2}\n" for i in range(30))
    path.write_text("n" * length + ",label\n" + rows)
    out = tmp_path / "r.html"
    assert main(["report", "--data", str(path), "--target", "label", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"column 1 has {length:,} characters" in err and len(err) < 500
    assert not out.exists()


def test_version_prints_the_package_version(capsys):
    from sk_entmax import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"python -m sk_entmax {__version__}\n"


@pytest.mark.parametrize(("given", "meant"), [("Vote", "vote"), ("votes", "vote")])
def test_a_missing_target_suggests_the_near_match(tmp_path, capsys, given, meant):
    path = _write(tmp_path / "votes.csv", b"age,vote\n30,yes\n40,no\n")
    assert main(["report", "--data", str(path), "--target", given]) == 2
    error = capsys.readouterr().err.strip()
    assert f"no column {given!r}" in error and f"(did you mean {meant!r}?)" in error


def test_dir_of_the_package_lists_only_public_names():
    import sk_entmax

    names = dir(sk_entmax)
    assert set(sk_entmax.__all__) <= set(names)
    assert not {"Any", "annotations", "importlib", "ModuleType"} & set(names)


def test_a_convergence_warning_becomes_one_note_of_ours(iris_csv, tmp_path, capsys, monkeypatch):
    """Issue 60.3: the report says in one line of its own that L-BFGS stopped short, with no
    raw warning (no site-packages path, no advice to scale what it already scales)."""
    import warnings

    from sk_entmax import SparsemaxClassifier

    fit = SparsemaxClassifier.fit

    def short_fit(self, X, y, sample_weight=None):
        self.max_iter = 2
        return fit(self, X, y, sample_weight)

    monkeypatch.setattr(SparsemaxClassifier, "fit", short_fit)
    out = tmp_path / "short.html"
    with warnings.catch_warnings(record=True) as escaped:
        warnings.simplefilter("always")
        status = main(
            [
                "report",
                "--data",
                str(iris_csv),
                "--target",
                "species",
                "--model",
                "sparsemax",
                "--out",
                str(out),
            ]
        )
    assert status == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.out.splitlines() if "L-BFGS" in line]
    assert len(notes) == 1 and notes[0].startswith("note: L-BFGS stopped at max_iter=2 ")
    assert notes[0].endswith("the fit has not converged; the model is used as it is")
    assert "StandardScaler" not in captured.out + captured.err
    assert not [w for w in escaped if "L-BFGS" in str(w.message)]
