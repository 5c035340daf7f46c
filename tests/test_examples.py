"""Every script in examples/ runs to the end (quick mode: a few epochs) and draws its figures."""

from __future__ import annotations

import runpy
import warnings
from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXPECTED = {
    "plot_conformal_sets.py": 1,
    "plot_grid_search_alpha.py": 1,
    "plot_multilabel.py": 2,
    "plot_scoring_sparse_probabilities.py": 1,
    "plot_sparse_probabilities.py": 2,
    "plot_tabnet_masks.py": 3,
    "plot_tabnet_regression.py": 2,
}


def test_every_example_is_listed():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name, monkeypatch, capsys):
    monkeypatch.setenv("SK_ENTMAX_EXAMPLE_QUICK", "1")
    plt.close("all")
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*non-interactive.*")  # plt.show on Agg
            runpy.run_path(str(EXAMPLES / name), run_name="__main__")
        figures = [plt.figure(n) for n in plt.get_fignums()]
        assert len(figures) == EXPECTED[name]
        for figure in figures:
            assert figure.axes and all(
                ax.has_data() for ax in figure.axes if ax.get_label() != "<colorbar>"
            )
    finally:
        plt.close("all")
    assert capsys.readouterr().out  # each example prints its numbers
