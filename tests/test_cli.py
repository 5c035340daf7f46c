"""The command line: ``python -m sk_entmax``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sk_entmax.__main__ import main


def test_demo_runs_and_shows_exact_zeros(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "sparsemax" in out and "exact zeros" in out
    assert "0.0000" in out


def test_unknown_command_exits_non_zero():
    with pytest.raises(SystemExit) as info:
        main(["nope"])
    assert info.value.code != 0


def test_module_entry_point_help():
    result = subprocess.run(
        [sys.executable, "-m", "sk_entmax", "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0 and "demo" in result.stdout
