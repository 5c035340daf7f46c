"""One lazy loader (``sk_entmax.entmax.lazy``) serves the three packages whose public names
are imported on first use: each resolves every name of its ``__all__``, lists them in
``dir()`` beside its imported public submodules and not its own imports, and imports none of
them (nor torch) when the package itself is imported.

Each check runs in a fresh interpreter, so that what the suite imported before cannot hide
an import the package makes.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PACKAGES = ["sk_entmax", "sk_entmax.entmax", "sk_entmax.nn"]


def _run(code: str) -> object:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("package", PACKAGES)
def test_importing_a_package_imports_none_of_its_names(package):
    code = (
        f"import json, sys, {package} as p\n"
        "loaded = sorted(n for n in p.__all__ if n in vars(p) and n != '__version__')\n"
        "print(json.dumps([loaded, 'torch' in sys.modules]))\n"
    )
    assert _run(code) == [[], False]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves_and_dir_lists_it(package):
    code = (
        f"import importlib, json, {package} as p\n"
        "before = dir(p)\n"
        "missing = [n for n in p.__all__ if n not in before]\n"
        "wrong = [n for n in p.__all__ if n in p._LAZY\n"
        "         and getattr(p, n) is not getattr(importlib.import_module(p._LAZY[n]), n)]\n"
        "kept = [n for n in p.__all__ if getattr(p, n) is not vars(p)[n]]\n"
        "after = dir(p)\n"
        "own = sorted({'Any', 'annotations', 'importlib', 'lazy_names', '_LAZY'} & set(after))\n"
        "print(json.dumps([missing, wrong, kept, sorted(set(p.__all__) - set(after)), own]))\n"
    )
    assert _run(code) == [[], [], [], [], []]


def test_a_submodule_resolves_on_first_use_and_a_missing_name_raises():
    code = (
        "import json, sk_entmax.entmax as core, sk_entmax.nn as nn\n"
        "assert core.activations.__name__ == 'sk_entmax.entmax.activations'\n"
        "assert 'activations' in dir(core)\n"
        "assert nn.tabnet.__name__ == 'sk_entmax.nn.tabnet'\n"
        "errors = []\n"
        "for package in (core, nn, __import__('sk_entmax')):\n"
        "    try:\n"
        "        package.no_such_name\n"
        "    except AttributeError as error:\n"
        "        errors.append(str(error))\n"
        "print(json.dumps(errors))\n"
    )
    assert _run(code) == [
        "module 'sk_entmax.entmax' has no attribute 'no_such_name'",
        "module 'sk_entmax.nn' has no attribute 'no_such_name'",
        "module 'sk_entmax' has no attribute 'no_such_name'",
    ]


def test_one_loader_serves_the_three_packages():
    """No package writes its own ``__getattr__``: each is the loader's."""
    code = (
        "import json, importlib\n"
        "names = [importlib.import_module(p).__getattr__.__module__ for p in "
        f"{PACKAGES!r}]\n"
        "print(json.dumps(names))\n"
    )
    assert _run(code) == ["sk_entmax.entmax.lazy"] * 3
