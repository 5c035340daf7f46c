"""The benchmarks use the public API only: no script under ``benchmarks/`` imports a private
name (issue 61), so that what they measure is what a user can call."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
#: the calls that import a module named by a string
DYNAMIC_IMPORTS = {"importlib.import_module", "import_module", "__import__"}


def _private(dotted: str) -> bool:
    """Whether a dotted name has a component that starts with ``_`` (``__future__`` aside)."""
    return any(part.startswith("_") and part != "__future__" for part in dotted.split("."))


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def private_uses(source: str) -> list[str]:
    """Every import of a private name in ``source``: a module path with a ``_`` component
    (``import``, ``from ... import``, a relative import, or a string given to
    ``importlib.import_module`` or ``__import__``), a ``_`` name imported from a module, and
    a ``_`` attribute of anything but ``self`` or ``cls`` (``sk_entmax._base.X``,
    ``clf._work_per_row``); each as ``"line N: what"``."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                found.append(f"line {node.lineno}: a relative import from {module or '.'}")
            elif _private(module):
                found.append(f"line {node.lineno}: from {module} import ...")
            for alias in node.names:
                if alias.name.startswith("_") and not _dunder(alias.name):
                    found.append(f"line {node.lineno}: from {module} import {alias.name}")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in DYNAMIC_IMPORTS:
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                if _private(first.value):
                    found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not _dunder(node.attr)
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


SCRIPTS = sorted(BENCHMARKS.rglob("*.py"))
SHELL = sorted(BENCHMARKS.rglob("*.sh"))
#: a Python heredoc of a shell script: ``"$PY" - <<'EOF'`` up to its ``EOF`` line
HEREDOC = re.compile(r"<<\s*'EOF'[^\n]*\n(.*?)^EOF$", re.DOTALL | re.MULTILINE)


def test_there_are_benchmarks():
    assert SCRIPTS
    assert (BENCHMARKS / "helpers.py") in SCRIPTS
    assert any(HEREDOC.search(path.read_text(encoding="utf-8")) for path in SHELL)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.relative_to(BENCHMARKS).as_posix())
def test_benchmark_imports_no_private_name(path):
    assert private_uses(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", SHELL, ids=lambda p: p.relative_to(BENCHMARKS).as_posix())
def test_python_in_shell_scripts_imports_no_private_name(path):
    # cuda_checks.sh runs Python heredocs: they are held to the same rule
    for block in HEREDOC.findall(path.read_text(encoding="utf-8")):
        assert private_uses(block) == [], block[:200]


@pytest.mark.parametrize(
    "line",
    [
        "import sk_entmax._base as base",
        "from sk_entmax._tabnet.sizing import auto_batch_size",
        "from sk_entmax.entmax.kernels.cpu import _support_arrays",
        "from _helpers import EpochTimer",
        "from . import helpers",
        "import importlib\nm = importlib.import_module('sk_entmax.entmax.kernels._numba_maps')",
        "def f():\n    from sk_entmax._engine.threads import available_cores",
        "clf = TabNetEntmaxClassifier()\nclf._work_per_row({}, 4, 2)",
        "import torch\ntorch._dynamo.reset()",
        "import sk_entmax\nsk_entmax._base.TRAINING_THREADS = 2",
    ],
)
def test_the_check_finds_private_imports(line):
    # the imports issue 61 removed from the benchmarks, and their kin: each is found
    assert private_uses(line)


@pytest.mark.parametrize(
    "line",
    [
        "from __future__ import annotations",
        "from sk_entmax import TabNetEntmaxClassifier",
        "from sk_entmax.nn.tabnet import GhostBatchNorm",
        "from helpers import EpochTimer",
        "import torch\ntorch.compiler.reset()",
        "class A:\n    def f(self):\n        self._start = 0",
        "import importlib\nimportlib.import_module('sk_entmax_old.entmax')",
    ],
)
def test_the_check_passes_public_imports(line):
    assert private_uses(line) == []
