"""How the reports reach the disk, and what the command line prints of the user's names.

A report is written to a temporary file in the target folder and renamed over the path, so
a link at the path is never followed, even one planted while the page was being drawn; a
link or a special file found there is refused. Names from the user's CSV reach the terminal
with their control characters escaped, and are kept as written (no stripping).
"""

from __future__ import annotations

import os
import stat
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import matplotlib.pyplot as plt
from sklearn.datasets import load_iris, load_wine
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_entmax import SparsemaxClassifier, TabNetEntmaxClassifier, report
from sk_entmax.__main__ import main
from sk_entmax.report import html_page

ESC = "\x1b"


@pytest.fixture(scope="module")
def wine():
    data = load_wine(as_frame=True)
    X = data.frame[data.feature_names].iloc[::2]
    y = data.target_names[data.target.to_numpy()[::2]]
    return X, y


@pytest.fixture(scope="module")
def tabnet(wine):
    X, y = wine
    return TabNetEntmaxClassifier(n_d=4, n_a=4, n_steps=2, max_epochs=1, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def sparse_pipe():
    X, y = load_iris(return_X_y=True)
    clf = SparsemaxClassifier(max_epochs=5, random_state=0)
    return make_pipeline(StandardScaler(), clf).fit(X, y), X, y


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(params=["feature_mask_report", "probability_support_report"])
def write(request, tabnet, wine, sparse_pipe):
    """One of the report writers, as ``write(path)``."""
    if request.param == "feature_mask_report":
        X, y = wine
        return lambda path: report.feature_mask_report(tabnet, X, path, y=y, n_resamples=5)
    clf, X, y = sparse_pipe
    return lambda path: report.probability_support_report(clf, X, path, y=y)


def _victim(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    return victim


def _plant_link_while_drawing(monkeypatch, link, victim):
    """Make the page's summary (drawn after any check, before the write) plant ``link``."""
    summary = html_page._summary

    def planting(*args, **kwargs):
        link.symlink_to(victim)
        return summary(*args, **kwargs)

    monkeypatch.setattr(html_page, "_summary", planting)


# ------------------------------------------------------------------ writing from Python


def test_a_link_planted_while_the_page_is_drawn_is_not_followed(write, tmp_path, monkeypatch):
    victim = _victim(tmp_path)
    out = tmp_path / "out" / "report.html"
    out.parent.mkdir()
    _plant_link_while_drawing(monkeypatch, out, victim)
    with pytest.raises(OSError, match="symbolic link") as info:
        write(out)
    assert str(out) in str(info.value) and info.value.filename == str(out)
    assert victim.read_text() == "precious"
    assert out.is_symlink()  # refused: left as it was
    assert os.listdir(out.parent) == ["report.html"]  # no temporary file left behind


def test_a_link_planted_while_the_file_is_written_is_not_followed(write, tmp_path, monkeypatch):
    victim = _victim(tmp_path)
    out = tmp_path / "report.html"
    fsync = os.fsync

    def planting(fd):  # the page is in the temporary file; the rename is next
        out.symlink_to(victim)
        fsync(fd)

    monkeypatch.setattr(os, "fsync", planting)
    with pytest.raises(OSError, match="symbolic link"):
        write(out)
    assert victim.read_text() == "precious" and out.is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["report.html", "victim.txt"]


def test_a_link_planted_after_the_last_check_is_replaced_not_followed(
    write, tmp_path, monkeypatch
):
    victim = _victim(tmp_path)
    out = tmp_path / "report.html"
    replace = os.replace

    def planting(source, target):
        out.symlink_to(victim)
        replace(source, target)

    monkeypatch.setattr(os, "replace", planting)
    assert write(out) == out.resolve().parent / "report.html"
    assert victim.read_text() == "precious"
    assert not out.is_symlink() and out.read_text(encoding="utf-8").startswith("<!DOCTYPE")


def test_a_link_at_the_path_is_refused(write, tmp_path):
    victim = _victim(tmp_path)
    out = tmp_path / "report.html"
    out.symlink_to(victim)
    with pytest.raises(OSError, match="symbolic link"):
        write(out)
    assert victim.read_text() == "precious" and out.is_symlink()
    # a dangling link too: following it would create a file wherever it points
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to(tmp_path / "elsewhere.html")
    with pytest.raises(OSError, match="symbolic link"):
        write(dangling)
    assert not (tmp_path / "elsewhere.html").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_special_file_or_a_folder_at_the_path_is_refused(write, tmp_path):
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file") as info:
        write(fifo)  # before: opening the pipe to write blocked until a reader came
    assert info.value.filename == str(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    folder = tmp_path / "folder.html"
    folder.mkdir()
    with pytest.raises(OSError, match="folder"):
        write(folder)
    assert folder.is_dir() and not any(folder.iterdir())
    assert sorted(os.listdir(tmp_path)) == ["folder.html", "pipe.html"]


def test_an_existing_file_is_replaced_whole_not_written_through(write, tmp_path):
    out = tmp_path / "report.html"
    out.write_text("old report")
    out.chmod(0o640)
    other = tmp_path / "hard_link.txt"
    os.link(out, other)  # a second name of the old file: it keeps the old text
    path = write(out)
    assert path == out.resolve()
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert other.read_text() == "old report"
    if sys.platform != "win32":
        assert stat.S_IMODE(os.stat(out).st_mode) == 0o640  # its permissions are kept
    assert sorted(os.listdir(tmp_path)) == ["hard_link.txt", "report.html"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(write, tmp_path, monkeypatch):
    out = tmp_path / "report.html"
    out.write_text("old report")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write(out)
    assert out.read_text() == "old report"
    assert os.listdir(tmp_path) == ["report.html"]


def test_the_returned_path_is_the_file_written_in_a_linked_folder(write, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    path = write(tmp_path / "alias" / "sub" / "report.html")  # missing folders are created
    assert path == real.resolve() / "sub" / "report.html"
    assert path.is_file() and not path.is_symlink()


# ------------------------------------------------------------------ the command line


def _write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def _csv(tmp_path, names: list[str], name: str = "data.csv"):
    """A CSV of 60 rows: the given feature columns (numbers), then ``label`` (two classes)."""
    import pandas as pd

    rng = np.random.default_rng(0)
    label = np.array(["p", "q"])[np.arange(60) % 2]
    frame = pd.DataFrame(
        {n: rng.normal(size=60) + i * (label == "p") for i, n in enumerate(names)}
    )
    frame["label"] = label
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("model", ["tabnet", "sparsemax"])
def test_cli_does_not_follow_a_link_planted_during_the_fit(tmp_path, capsys, monkeypatch, model):
    from sk_entmax.cli import report as cli

    data = _csv(tmp_path, ["a", "b"])
    victim = _victim(tmp_path)
    out = tmp_path / "victim2.html"
    fit = cli._fit

    def fit_then_plant(*args, **kwargs):
        said = fit(*args, **kwargs)
        out.symlink_to(victim)  # after the check of --out, before the write
        return said

    monkeypatch.setattr(cli, "_fit", fit_then_plant)
    args = ["report", "--data", str(data), "--target", "label", "--model", model]
    # (--no-progress: TabNet's progress bar, on standard error by default, is not the error)
    options = ["--max-epochs", "1", "--resamples", "0", "--no-progress"]
    status = main([*args, "--out", str(out), *options])
    captured = capsys.readouterr()
    assert status == 2
    assert victim.read_text() == "precious"
    assert "report written" not in captured.out
    assert captured.err.count("\n") == 1
    assert f"cannot write {out}" in captured.err and "symbolic link" in captured.err
    assert sorted(os.listdir(tmp_path)) == ["data.csv", "victim.txt", "victim2.html"]


def test_cli_escapes_control_characters_in_the_missing_column_error(tmp_path, capsys):
    data = _csv(tmp_path, [f"{ESC}[31mred", "été"])
    assert main(["report", "--data", str(data), "--target", "nope"]) == 2
    err = capsys.readouterr().err
    assert ESC not in err
    assert err.count("\n") == 1
    assert r"'\x1b[31mred'" in err and "'été'" in err and "'label'" in err


def test_cli_escapes_control_characters_in_the_lines_it_prints(tmp_path, capsys):
    import pandas as pd

    data = _csv(tmp_path, [f"{ESC}[31mred", "été", "plain"])
    frame = pd.read_csv(data)
    frame.iloc[::7, 0] = np.nan  # the notes name it too
    frame.to_csv(data, index=False)
    out = tmp_path / "r.html"
    args = ["report", "--data", str(data), "--target", "label", "--out", str(out)]
    assert main([*args, "--max-epochs", "1", "--resamples", "20"]) == 0
    text = capsys.readouterr().out
    assert ESC not in text
    # the importances (the rows' never-read lines follow, "  row ...")
    listed = [line for line in text.splitlines() if line.startswith("  ") and "  row " != line[:6]]
    assert len(listed) == 3
    names = {line.split()[0] for line in listed}
    assert names == {r"'\x1b[31mred'", "été", "plain"}  # ordinary unicode is left alone
    assert r"'\x1b[31mred' (" in text  # the missing-values note
    assert f"report written to {out.resolve()}" in text


def test_cli_keeps_names_that_differ_only_in_spaces_apart(tmp_path, capsys):
    from sk_entmax.cli._csv import _read_table

    data = _csv(tmp_path, [" a", "a ", "b"])
    table = _read_table(data, "label")
    assert list(table.X.columns) == [" a", "a ", "b"]
    out = tmp_path / "r.html"
    args = ["report", "--data", str(data), "--target", "label", "--out", str(out)]
    assert main([*args, "--max-epochs", "1", "--resamples", "20"]) == 0
    text = capsys.readouterr().out
    lines = [line for line in text.splitlines() if line[:2] == "  " and line[:6] != "  row "]
    listed = sorted(line.split("  ")[1].strip() for line in lines)
    assert listed == ["' a'", "'a '", "b"]


def test_cli_names_every_column_a_target_could_mean(tmp_path, capsys):
    data = _csv(tmp_path, [" a", "a ", "b"])
    assert main(["report", "--data", str(data), "--target", "a"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "' a'" in err and "'a '" in err
    # the exact name picks its column
    from sk_entmax.cli._csv import _read_table

    rows = "".join(f"{i},{'yes' if i % 2 else 'no'},{i % 3}\n" for i in range(40))
    data = _write(tmp_path / "labels.csv", " a,a ,b\n" + rows)
    table = _read_table(data, "a ")
    assert table.y.name == "a " and list(table.X.columns) == [" a", "b"]


def test_cli_still_finds_a_target_written_with_spaces_after_the_commas(tmp_path, capsys):
    from sk_entmax.cli._csv import _read_table

    rows = "".join(f"{i}, {i % 3}, {'yes' if i % 2 else 'no'}\n" for i in range(40))
    data = _write(tmp_path / "spaced.csv", "x, y, label\n" + rows)
    table = _read_table(data, "label")
    assert table.y.name == " label" and list(table.X.columns) == ["x", " y"]
    out = tmp_path / "r.html"
    args = ["report", "--data", str(data), "--target", "label", "--model", "sparsemax"]
    assert main([*args, "--out", str(out), "--max-epochs", "1"]) == 0
    text = capsys.readouterr().out
    assert "target column: ' label', the one column named 'label' once leading" in text
