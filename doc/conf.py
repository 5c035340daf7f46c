"""Sphinx configuration of the sk_entmax documentation.

Build with ``python -m sphinx -W -b html doc doc/_build/html``. The gallery runs every
``examples/plot_*.py`` script; ``SK_ENTMAX_EXAMPLE_QUICK=1`` in the environment trains each
for a few epochs only (what the test suite does), without it they run in full.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# tests/test_docs.py builds a copy of doc/, examples/ and the other files the pages read
ROOT = HERE.parent
if (ROOT / "sk_entmax").is_dir():
    sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(HERE / "sphinxext"))

import sk_entmax  # noqa: E402

project = "sk_entmax"
author = "the sk_entmax developers"
copyright = "2026, the sk_entmax developers"
release = sk_entmax.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "**.zip"]
templates_path = ["_templates"]

# Every cross-reference must resolve: a renamed function breaks the build, not a link.
nitpicky = True
nitpick_ignore = [
    # Private helpers and standard-library names that docstrings mention by role.
    ("py:class", "FiniteLossCheck"),
    ("py:class", "sk_entmax.nn.tabnet_embedding.ColumnEmbedding"),
    ("py:mod", "sk_entmax.report.conformal"),
    ("py:func", "os.replace"),
]
nitpick_ignore_regex = [
    # Methods named by their defining module's path (documented under the public path).
    (r"py:meth", r"sk_entmax\.(nn|conformal)\.\w+\.\w+\.\w+"),
    (r"py:meth", r"sk_entmax\.conformal\.SparseConformalClassifier\.\w+"),
    (r"py:.*", r"(?s)matplotlib\..*"),
    # Types named in signatures and in the base classes of torch and scikit-learn objects,
    # which this site does not document.
    (r"py:.*", r"(?s)(torch|numpy|np|sklearn|skorch|pandas|pd|collections|typing)\..*"),
]

autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"
autodoc_member_order = "bysource"

numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()  # tests/test_docstrings.py validates

myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath"]
suppress_warnings = ["myst.header"]

html_theme = "pydata_sphinx_theme"
html_title = f"sk_entmax {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # the examples' code is written to 99 columns: give it the room of the page outline
    "secondary_sidebar_items": {"[!a]**": ["page-toc"], "a[!u]**": ["page-toc"]},
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_show_sourcelink = False


sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "image_scrapers": ("sk_entmax_docs.check_figures", "matplotlib"),
    "download_all_examples": False,
    "backreferences_dir": "generated/backreferences",
    "doc_module": ("sk_entmax",),
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "plot_gallery": "True",
    "within_subsection_order": "FileNameSortKey",
    "reset_modules": ("matplotlib",),
    "show_memory": False,
    "min_reported_time": 3600,
}

if os.environ.get("SK_ENTMAX_EXAMPLE_QUICK") != "1":
    print("doc/conf.py: SK_ENTMAX_EXAMPLE_QUICK is not 1: the examples train in full")


_SHAPE_OF_ATTRIBUTE = re.compile(r"\(([a-z][a-z_]*_),")


def _quote_attribute_shapes(app, what, name, obj, options, lines):
    """Quote ``(n_features_in_,)`` in types, which reStructuredText reads as a link."""
    lines[:] = [_SHAPE_OF_ATTRIBUTE.sub(r"(``\1``,", line) for line in lines]


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Document only the members this package defines, not those of its base classes."""
    if skip or what != "class":
        return skip
    module = getattr(obj, "__module__", None) or ""
    if isinstance(obj, property):
        module = getattr(obj.fget, "__module__", "") or ""
    if not module.startswith("sk_entmax"):
        return True
    return None


def setup(app):
    app.connect("autodoc-process-docstring", _quote_attribute_shapes, priority=400)
    app.connect("autodoc-skip-member", _skip_foreign_members)
