"""The code base stays ruff clean (rules and line length configured in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_ruff_check_is_clean():
    paths = [p for p in ("sk_entmax", "tests", "benchmarks", "examples") if (ROOT / p).is_dir()]
    result = subprocess.run(
        ["ruff", "check", "--no-cache", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
