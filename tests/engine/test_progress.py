"""verbose=1 shows a progress bar with the time left (issue 44); verbose=0 stays silent; the
command line and the demo show TabNet's bar by default."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sklearn.datasets import load_iris

from sk_entmax import EntmaxClassifier, TabNetEntmaxClassifier, TabNetEntmaxRegressor

X, Y = load_iris(return_X_y=True)
SMALL = {"n_d": 4, "n_a": 4, "n_steps": 1, "n_independent": 1, "n_shared": 1}


def _bar_done(err: str, epochs: int) -> bool:
    """tqdm's last state: every epoch done, elapsed<remaining, the losses as postfix."""
    last = err.replace("\r", "\n").strip().splitlines()[-1]
    pattern = rf"{epochs}/{epochs} \[\d\d:\d\d<\d\d:\d\d, .*train loss=\d\.\d{{4}}, best="
    return re.search(pattern, last) is not None


@pytest.mark.parametrize(
    "estimator",
    [
        TabNetEntmaxClassifier(max_epochs=3, random_state=0, verbose=1, **SMALL),
        TabNetEntmaxRegressor(max_epochs=3, random_state=0, verbose=1, **SMALL),
        EntmaxClassifier(solver="adam", lr=0.05, max_epochs=3, random_state=0, verbose=1),
    ],
    ids=lambda e: type(e).__name__,
)
def test_verbose_one_is_a_progress_bar_with_the_time_left(estimator, capsys):
    capsys.readouterr()
    target = Y.astype(float) if "Regressor" in type(estimator).__name__ else Y
    estimator.fit(X, target)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert _bar_done(captured.err, 3), captured.err
    # the bar is not model state: the fitted estimator pickles, bar or no bar
    import pickle

    pickle.loads(pickle.dumps(estimator))


def test_verbose_zero_stays_silent(capsys):
    capsys.readouterr()
    TabNetEntmaxClassifier(max_epochs=2, random_state=0, **SMALL).fit(X, Y)
    assert capsys.readouterr() == ("", "")


def test_the_bar_does_not_change_the_model():
    quiet = TabNetEntmaxClassifier(max_epochs=2, random_state=0, **SMALL).fit(X, Y)
    loud = TabNetEntmaxClassifier(max_epochs=2, random_state=0, verbose=1, **SMALL).fit(X, Y)
    np.testing.assert_array_equal(quiet.predict_proba(X), loud.predict_proba(X))


def test_the_report_command_shows_tabnet_progress_unless_told_not_to(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from sk_entmax.__main__ import main

    path = tmp_path / "d.csv"
    rng = np.random.default_rng(0)
    rows = [f"{a:.3f},{b:.3f},{'yes' if a + b > 0 else 'no'}" for a, b in rng.normal(size=(40, 2))]
    path.write_text("a,b,label\n" + "\n".join(rows) + "\n")
    args = ["report", "--data", str(path), "--target", "label", "--out", str(tmp_path / "r.html")]
    options = ["--max-epochs", "2", "--resamples", "0"]
    assert main([*args, *options]) == 0
    captured = capsys.readouterr()
    assert _bar_done(captured.err, 2), captured.err
    assert re.search(r"^fitted in \d+\.\d s$", captured.out, re.MULTILINE)
    assert main([*args, *options, "--no-progress"]) == 0
    assert "epoch" not in capsys.readouterr().err
