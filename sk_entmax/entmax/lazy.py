"""Public names imported on first use (PEP 562): the one lazy loader of ``sk_entmax``,
``sk_entmax.entmax`` and ``sk_entmax.nn``.

Each package lists its public names (``__all__``) and where each lives, and takes its
module-level ``__getattr__`` and ``__dir__`` from :func:`lazy_names`, so that importing the
package imports none of those modules (``import sk_entmax`` stays light, the vocabulary
modules import without torch). It lives in the core, the lowest layer, which the other two
packages import; it imports nothing but the standard library.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, public: Iterable[str], lazy: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of a package whose public names
    are imported on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    public : iterable of str
        Its public names (its ``__all__``), which ``dir()`` lists whether or not they have
        been imported.
    lazy : mapping of str to str
        Where each lazily imported name lives: its module's full name.

    Returns
    -------
    getattr : callable
        ``__getattr__(name)``: a name of ``lazy``, imported from its module and kept in the
        package's namespace (so it is imported once); else the package's submodule of that
        name, imported; else :class:`AttributeError`.
    dir : callable
        ``__dir__()``: the public names, the package's dunder names, and its public
        submodules imported so far, not its own imports (``importlib``, ``Any``).

    Examples
    --------
    In a package's ``__init__.py``::

        __all__ = ["Thing"]
        _LAZY = {"Thing": "mypackage.things"}
        __getattr__, __dir__ = lazy_names(__name__, __all__, _LAZY)
    """
    public = frozenset(public)

    def __getattr__(name: str) -> Any:
        namespace = vars(sys.modules[package])
        if name in lazy:
            value = getattr(importlib.import_module(lazy[name]), name)
            namespace[name] = value
            return value
        if not (name.startswith("__") and name.endswith("__")):
            try:  # a submodule, as importing the package used to import them all
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{package}.{name}":
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        names = set(public)
        for name, value in vars(sys.modules[package]).items():
            dunder = name.startswith("__") and name.endswith("__")
            submodule = (
                not name.startswith("_")
                and isinstance(value, ModuleType)
                and value.__name__ == f"{package}.{name}"
            )
            if dunder or submodule:
                names.add(name)
        return sorted(names)

    return __getattr__, __dir__
