"""Run the documentation's Python code blocks as scripts (used by test_doc_snippets.py).

``python tests/run_snippets.py blocks.json results.json``: each block runs in a namespace
of its own, in a folder of its own, with every warning an error, and writes what it
printed and the error it raised (if any). A top-level expression that is not a call to
``print`` must evaluate to None or to an estimator (``search.fit(X, y)``): a value that an
interpreter would show and a script drops is an error, so a block shows only what it
prints.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import sys
import tempfile
import traceback
import types
import warnings
from pathlib import Path


def _is_print(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "print"
    )


def run(code: str, name: str) -> None:
    tree = ast.parse(code, name)
    # the block's own __main__ module, as a script has: a class it defines pickles by name
    # (scikit-learn's estimator checks pickle the estimator)
    main = types.ModuleType("__main__")
    namespace = main.__dict__
    runner, sys.modules["__main__"] = sys.modules["__main__"], main
    try:
        for node in tree.body:
            if isinstance(node, ast.Expr) and not _is_print(node):
                value = eval(compile(ast.Expression(node.value), name, "eval"), namespace)
                if value is not None and not hasattr(value, "get_params"):
                    raise AssertionError(
                        f"line {node.lineno}: this expression gives a {type(value).__name__}, "
                        "which an interpreter shows and a script drops: print it"
                    )
            else:
                exec(compile(ast.Module([node], type_ignores=[]), name, "exec"), namespace)
    finally:
        sys.modules["__main__"] = runner


def main() -> None:
    blocks = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    results = []
    home = os.getcwd()
    for block in blocks:
        out = io.StringIO()
        error = None
        folder = tempfile.mkdtemp(prefix="snippet-")
        os.chdir(folder)
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(out):
                warnings.simplefilter("error")
                # pandas 1.5's own internals under numpy 1.25 (the declared floors) warn
                # when scikit-learn takes .values of a mixed frame: harmless, gone from
                # pandas 2.0.2 on
                warnings.filterwarnings(
                    "ignore",
                    message="np.find_common_type is deprecated",
                    category=DeprecationWarning,
                )
                run(block["code"], block["name"])
        except BaseException:
            error = traceback.format_exc(limit=-3)
        finally:
            os.chdir(home)
        results.append({"name": block["name"], "out": out.getvalue(), "error": error})
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        json.dump(results, handle)


if __name__ == "__main__":
    main()
