"""What a stranger who depends on the package reads: the licence, the declared ranges, README.

The declared lower bounds are the versions the lowest-versions job of ``.ci/run`` installs
(``tests/constraints-lowest.txt``), so that nothing wider than what was tested is declared.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

pytestmark = pytest.mark.lowest_versions

ROOT = Path(__file__).resolve().parents[1]


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_license_is_an_spdx_expression_with_its_file():
    project = _project()
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text


def test_declared_lower_bounds_are_the_tested_lowest_versions():
    lowest = _pins(ROOT / "tests" / "constraints-lowest.txt")
    declared = {}
    for requirement in _project()["dependencies"]:
        # an upper bound only where a newer release was run and one after it was not (torch)
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)(?:,<[0-9.]+)?", requirement)
        assert match, f"{requirement!r} is not of the form name>=version[,<version]"
        declared[match[1].lower()] = match[2]
    assert set(declared) == set(lowest)
    for name, bound in declared.items():
        # "2.13" declared, "2.13.0" installed: the same release
        assert lowest[name].split(".")[: len(bound.split("."))] == bound.split("."), name


def test_readme_is_at_most_10_kb_with_no_line_over_120_characters():
    raw = (ROOT / "README.md").read_bytes()
    assert len(raw) <= 10_000
    long = [n for n, line in enumerate(raw.decode().splitlines(), 1) if len(line) > 120]
    assert long == []
