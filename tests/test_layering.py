"""Who imports whom (issue 48): the declaration vocabularies import no torch, a lower layer
imports nothing above it, and persistence knows no estimator by name.

Each test reads the source or imports in a fresh interpreter, so it fails on the first
import that breaks the rule, whatever the suite imported before.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import sk_entmax

PACKAGE = Path(sk_entmax.__file__).parent

#: plain-Python vocabularies: what a parameter may be (and the estimators' and TabNet's
#: tables of them), what a network's stored tensors look like, what an estimator's saved
#: state is
VOCABULARIES = (
    "sk_entmax.entmax.constraints",
    "sk_entmax.nn._tabnet_arguments",
    "sk_entmax._parameters",
    "sk_entmax.nn._tensor_spec",
    "sk_entmax._saved_state",
)


@pytest.mark.parametrize("module", VOCABULARIES)
def test_a_vocabulary_imports_without_torch(module):
    code = (
        f"import sys, {module}\n"
        "heavy = sorted(m for m in ('torch', 'sklearn', 'skorch') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "", f"{module} imports {out.stdout.strip()}"


def test_the_metrics_import_without_torch():
    """Scoring probability arrays needs no torch: the metrics import the constraint
    vocabulary and the parameters' table at their top, neither of which imports it."""
    code = "import sys, sk_entmax.metrics\nprint('torch' in sys.modules)\n"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"


def test_the_public_import_paths_still_work():
    code = (
        "from sk_entmax.entmax import entmax15, EntmaxBisect, entmax_attention\n"
        "from sk_entmax.nn import TabNet, TabNetPretrainingNet\n"
        "import sk_entmax.entmax as core, sk_entmax.nn as nn\n"
        "assert core.activations.entmax15 is entmax15 and nn.tabnet.TabNet is TabNet\n"
        "assert 'sparsemax' in dir(core) and 'EntmaxHead' in dir(nn)\n"
        "print(core.sparsemax.__module__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "sk_entmax.entmax.activations"


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of its code."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize(
    "lower, upper",
    [
        # the parameters' table is read by the TabNet package; a constraint of TabNet's
        # lives there, beside its check
        ("_parameters.py", "sk_entmax._tabnet"),
        # the core imports no estimator, no scikit-learn, no skorch
        ("entmax", "sk_entmax._"),
        ("entmax", "sklearn"),
        ("entmax", "skorch"),
        # the networks import no estimator and no persistence
        ("nn", "sk_entmax._"),
        ("nn", "sk_entmax.persistence"),
        # the estimators and their declarations never import persistence
        ("_saved_state.py", "sk_entmax."),
        ("_tabnet", "sk_entmax.persistence"),
        ("_linear.py", "sk_entmax.persistence"),
        ("_classifier.py", "sk_entmax.persistence"),
    ],
)
def test_no_import_points_upward(lower, upper):
    root = PACKAGE / lower
    files = sorted(root.rglob("*.py")) if root.is_dir() else [root]
    assert files
    upward = {
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in files
        for name in _imported(path)
        if name.startswith(upper)
    }
    assert not upward


def _estimator_and_network_names() -> list[str]:
    """The public classes of the package (estimators, the conformal wrapper) and its
    networks."""
    import sk_entmax.nn

    names = [n for n in sk_entmax.__all__ if isinstance(getattr(sk_entmax, n), type)]
    names += [n for n in sk_entmax.nn.__all__ if isinstance(getattr(sk_entmax.nn, n), type)]
    return sorted(set(names) - {"InvalidParameterError", "NonFiniteLossError"})


def test_persistence_names_no_estimator_or_network():
    """What is saved is each class's own declaration: persistence's source holds none of
    their names, in code, strings or comments (so no table of names, no comparison with
    one)."""
    names = _estimator_and_network_names()
    assert "TabNetPretrainer" in names and "SparseConformalClassifier" in names
    assert "TabNetClassifierNet" in names
    pattern = re.compile(r"\b(" + "|".join(names) + r")\b")
    found = {
        f"{path.name}: {match}"
        for path in sorted((PACKAGE / "persistence").glob("*.py"))
        for match in pattern.findall(path.read_text())
    }
    assert not found


def test_every_saveable_class_declares_its_saved_state():
    from sk_entmax._saveable import SAVEABLE
    from sk_entmax._saved_state import ModelState, WrapperState

    assert set(SAVEABLE) == set(_estimator_and_network_names()) & set(sk_entmax.__all__)
    for cls in SAVEABLE.values():
        state = cls.__dict__.get("_saved_state") or cls._saved_state
        assert isinstance(state, (ModelState, WrapperState))
        if isinstance(state, ModelState):
            assert hasattr(state.network, "state_spec")
