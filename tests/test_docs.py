"""The documentation site builds without a warning, and runs every example on the way.

``test_site_builds`` builds ``doc/`` with Sphinx as a user would (``-W``: every warning is an
error; ``doc/conf.py`` sets ``nitpicky``, so every cross-reference must resolve), from a copy
of the files it reads, into a temporary folder. The gallery runs each ``examples/plot_*.py``
in quick mode (``SK_ENTMAX_EXAMPLE_QUICK=1``: a few epochs), so the build is also the
examples' smoke test: each must run to the end, print its numbers and draw its figures, every
axes with data (``doc/sphinxext/sk_entmax_docs.py`` records them).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from public_modules import PUBLIC_MODULES

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "doc"
EXAMPLES = ROOT / "examples"

MODULES = PUBLIC_MODULES

# figures each example draws; an example not listed here must draw at least one
FIGURES = {
    "plot_conformal_sets.py": 1,
    "plot_grid_search_alpha.py": 1,
    "plot_multilabel.py": 2,
    "plot_scoring_sparse_probabilities.py": 1,
    "plot_sparse_probabilities.py": 2,
    "plot_tabnet_masks.py": 3,
    "plot_tabnet_pretraining.py": 2,
    "plot_tabnet_regression.py": 2,
}


def _api_sections():
    """The text of each module's section of doc/api.rst, by module name."""
    text = (DOC / "api.rst").read_text(encoding="utf-8")
    heading = re.compile(r"^``(sk_entmax[\w.]*)``: .*\n=+$", re.MULTILINE)
    starts = list(heading.finditer(text))
    return {
        m.group(1): text[m.end() : (starts[i + 1].start() if i + 1 < len(starts) else None)]
        for i, m in enumerate(starts)
    }


@pytest.mark.parametrize("module_name", MODULES)
def test_api_reference_lists_every_public_name(module_name):
    sections = _api_sections()
    assert module_name in sections, f"doc/api.rst has no section for {module_name}"
    listed = set(re.findall(r"^\s+(\w+)\s*$", sections[module_name], re.MULTILINE))
    listed |= set(re.findall(r"^\.\. py:data:: (\w+)", sections[module_name], re.MULTILINE))
    missing = sorted(set(importlib.import_module(module_name).__all__) - listed)
    assert not missing, f"doc/api.rst, section {module_name}, lacks {missing}"


def test_every_example_is_in_the_gallery_pattern():
    # sphinx-gallery runs the files whose name matches doc/conf.py's "filename_pattern"
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert scripts and all(name.startswith("plot_") for name in scripts), scripts


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("sphinx")
    pytest.importorskip("sphinx_gallery")
    pytest.importorskip("matplotlib")
    src = tmp_path_factory.mktemp("site")
    # what the pages read: doc/ (without earlier build output), the examples, the
    # changelog and the benchmarks' figures
    shutil.copytree(
        DOC,
        src / "doc",
        ignore=shutil.ignore_patterns(
            "_build", "generated", "auto_examples", "sg_execution_times.rst", "__pycache__"
        ),
    )
    shutil.copytree(EXAMPLES, src / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "CHANGELOG.md", src / "CHANGELOG.md")
    (src / "benchmarks").mkdir()
    for figure in (ROOT / "benchmarks").glob("*.png"):
        shutil.copy(figure, src / "benchmarks" / figure.name)
    out = src / "html"
    env = dict(os.environ, SK_ENTMAX_EXAMPLE_QUICK="1", MPLBACKEND="Agg")
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-E", "-q"]
    result = subprocess.run(
        [*command, str(src / "doc"), str(out)],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
    )
    return src, out, result


def test_site_builds_without_warnings(site):
    _, out, result = site
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-20000:]
    for page in ["index", "getting_started", "api", "changelog", "auto_examples/index"]:
        assert (out / f"{page}.html").is_file(), page


def test_every_public_name_has_its_api_page(site):
    _, out, result = site
    assert result.returncode == 0
    api = (out / "api.html").read_text(encoding="utf-8")
    for module_name in MODULES:
        for name in importlib.import_module(module_name).__all__:
            assert f"{module_name}.{name}" in api or f"sk_entmax.{name}" in api, name


def test_every_example_runs_prints_and_draws(site):
    src, _, result = site
    assert result.returncode == 0
    gallery = src / "doc" / "auto_examples"
    figures = json.loads((gallery / "figures.json").read_text())
    for script in sorted(EXAMPLES.glob("plot_*.py")):
        drawn = figures.get(script.name, [])
        expected = FIGURES.get(script.name)
        assert len(drawn) == expected if expected else drawn, (script.name, drawn)
        assert all(drawn), f"{script.name}: a figure has an axes without data"
        page = (gallery / f"{script.stem}.rst").read_text(encoding="utf-8")
        assert "sphx-glr-script-out" in page, f"{script.name} printed nothing"


# The quickstart's printed probabilities are checked by running it: test_doc_snippets.py.
