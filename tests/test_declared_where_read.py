"""A class's declarations are in the class, not attached from elsewhere (issue 61).

``SparseConformalClassifier._saved_state`` used to be set onto the class by
``sk_entmax._conformal_state``, so a program that had not imported persistence saw a class
without it. Each test imports in a fresh interpreter, so what the suite imported before
cannot hide a missing declaration.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import sk_entmax

PACKAGE = Path(sk_entmax.__file__).parent


@pytest.mark.parametrize(
    "statement",
    [
        "from sk_entmax.conformal import SparseConformalClassifier",
        "from sk_entmax import SparseConformalClassifier",
    ],
)
def test_the_conformal_wrapper_declares_its_saved_state_on_import(statement):
    code = (
        f"import sys\n{statement}\n"
        "from sk_entmax._saved_state import WrapperState\n"
        "state = vars(SparseConformalClassifier).get('_saved_state')\n"
        "assert isinstance(state, WrapperState), state\n"
        "assert 'sk_entmax._saveable' not in sys.modules\n"
        "assert 'sk_entmax.persistence' not in sys.modules\n"
        "print(state.key, state.model, state.parameter)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "conformal estimator_ estimator"


def test_no_module_sets_an_attribute_on_a_class_of_another_module():
    """No module of the package assigns to an attribute of a class it imports (``Class.x =
    ...`` at module level): a class's declarations are read where the class is."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.asname or alias.name
            for node in tree.body
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
            if alias.name[:1].isupper()
        }
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign | ast.AugAssign):
                targets = [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id in imported
                ):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found
