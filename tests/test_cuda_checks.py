"""``benchmarks/cuda_checks.sh``: it parses, it selects every CUDA test, and without CUDA it
says so in one line and exits 0 before any slow work."""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "cuda_checks.sh"
BASH = shutil.which("bash")
# a test under @pytest.mark.skipif([not ]torch.cuda.is_available(), ...), other decorators between
SKIPS_BY_CUDA = (
    r"@pytest\.mark\.skipif\((?:not )?torch\.cuda\.is_available\(\)[^\n]*\n"
    r"(?:@[^\n]*\n)*def (test_\w+)"
)

pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")


def _run(*args, cwd=ROOT, **env):
    return subprocess.run(
        [BASH, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "PYTHON": sys.executable, "CUDA_CHECKS_OUT": "", **env},
        check=False,
    )


def test_script_parses():
    result = subprocess.run([BASH, "-n", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def _cuda_tests_found_by_text():
    """``path::name`` of every test whose name says cuda or gpu or that skips by CUDA."""
    found = set()
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path.name == Path(__file__).name:
            continue
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT).as_posix()
        for test in re.findall(SKIPS_BY_CUDA, text):
            found.add(f"{name}::{test}")
        for test in re.findall(r"^def (test_\w*(?:cuda|gpu)\w*)", text, re.MULTILINE):
            found.add(f"{name}::{test}")
    return found


def test_selection_holds_every_cuda_test():
    result = _run("--list-tests")
    assert result.returncode == 0, result.stderr
    selected = set(result.stdout.split())
    expected = _cuda_tests_found_by_text()
    assert expected, "no CUDA test found in tests/ by the text search"
    assert expected <= selected, sorted(expected - selected)
    assert not any("test_cuda_checks.py" in test for test in selected)  # it would run itself


@pytest.mark.skipif(torch.cuda.is_available(), reason="with CUDA the script runs its checks")
def test_without_cuda_it_says_so_in_one_line_and_exits_0(tmp_path):
    start = time.perf_counter()
    result = _run(cwd=tmp_path, OUT=str(tmp_path))
    elapsed = time.perf_counter() - start
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    assert lines[0].startswith("cuda_checks: CUDA is not available here")
    assert lines[0].endswith("nothing to check, exiting 0")
    assert list(tmp_path.iterdir()) == []  # no summary, no logs
    assert elapsed < 10, f"took {elapsed:.1f} s"


@pytest.mark.skipif(torch.cuda.is_available(), reason="with CUDA the script runs its checks")
def test_with_a_driver_but_no_cuda_torch_decides(tmp_path):
    # an nvidia-smi that finds no GPU: the script asks torch, which says no
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 9\n")
    fake.chmod(0o755)
    out = tmp_path / "out"
    result = _run(cwd=tmp_path, OUT=str(out), PATH=f"{fake.parent}:{os.environ['PATH']}")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    assert f"torch {torch.__version__} reports torch.cuda.is_available() False" in lines[0]
    assert lines[0].endswith("nothing to check, exiting 0")
    assert not out.exists()
