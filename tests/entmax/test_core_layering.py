"""The core's packages meet at their faces (issue 61): no module of ``sk_entmax.entmax``
imports a private name, or from a private module, of another of the core's packages.

A package here is a folder of the core: the root (``sk_entmax/entmax/``) and each
sub-package (``common/``, ``solvers/``, ``kernels/``). Inside one package, private modules
may import each other; across two, an import goes through the target's face (its
``__init__``) or a public module, and names only public names. The test reads the source
with :mod:`ast`, so it sees every import at any depth of a module's code, relative ones
resolved.
"""

from __future__ import annotations

import ast
from pathlib import Path

import sk_entmax

CORE = "sk_entmax.entmax"
ROOT = Path(sk_entmax.__file__).parent / "entmax"


def _parts(module: str) -> list[str]:
    """The components of a module of the core after ``sk_entmax.entmax``."""
    return module.split(".")[2:]


def _is_package(module: str) -> bool:
    return ROOT.joinpath(*_parts(module)).is_dir()


def _is_module(module: str) -> bool:
    path = ROOT.joinpath(*_parts(module))
    return path.is_dir() or path.with_suffix(".py").is_file()


def _package_of(module: str) -> str:
    """The package a module of the core belongs to: itself if it is one, else its parent."""
    return module if _is_package(module) else module.rpartition(".")[0]


def _crossings(module: str, source: str, package: bool = False) -> list[str]:
    """Each import of ``module`` (whose code is ``source``) that reaches a private module or
    name of another package of the core."""
    home = module if package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = home
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                target = f"{base}.{target}" if target else base
            imported = [(target, alias.name) for alias in node.names]
        else:
            continue
        for target, name in imported:
            if target != CORE and not target.startswith(f"{CORE}."):
                continue
            if name and _is_module(f"{target}.{name}"):  # ``from package import module``
                target, name = f"{target}.{name}", None
            if _package_of(target) == home:
                continue
            names = _parts(target) + ([name] if name and name != "*" else [])
            if any(part.startswith("_") for part in names):
                found.append(f"{module} imports {target}" + (f":{name}" if name else ""))
    return found


def _every_crossing() -> list[str]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        package = parts[-1] == "__init__"
        module = ".".join((CORE, *(parts[:-1] if package else parts)))
        found += _crossings(module, path.read_text(), package)
    return found


def test_no_private_name_crosses_the_cores_packages():
    assert _every_crossing() == []


def test_the_rule_sees_each_kind_of_crossing():
    """The rule can fail: a module of ``kernels/`` that imports a root module's private
    name, from a root private module (absolutely, relatively, inside a function), or a
    private module itself, is caught; public names and its own package's modules are not."""
    source = (
        "import sk_entmax.entmax.tracing\n"  # public module of the root: allowed
        "from sk_entmax.entmax.algorithms import Case\n"  # public name: allowed
        "from sk_entmax.entmax.kernels import _compress\n"  # its own package: allowed
        "from . import _fast_pow\n"  # its own package, relatively: allowed
        "from sk_entmax.entmax.algorithms import _private\n"
        "from sk_entmax.entmax._modules import Something\n"
        "from .._modules import Other\n"
        "from sk_entmax.entmax import _modules\n"
        "def late():\n"
        "    from ..algorithms import _hidden\n"
    )
    found = _crossings("sk_entmax.entmax.kernels.probe", source)
    assert found == [
        "sk_entmax.entmax.kernels.probe imports sk_entmax.entmax.algorithms:_private",
        "sk_entmax.entmax.kernels.probe imports sk_entmax.entmax._modules:Something",
        "sk_entmax.entmax.kernels.probe imports sk_entmax.entmax._modules:Other",
        "sk_entmax.entmax.kernels.probe imports sk_entmax.entmax._modules",
        "sk_entmax.entmax.kernels.probe imports sk_entmax.entmax.algorithms:_hidden",
    ]
    # the root's private modules import each other freely: one package
    assert _crossings("sk_entmax.entmax.dispatch", "from ._fenchel_young import _loss\n") == []
