"""numpydoc's validation of every public object's docstring.

The public objects are those named in the ``__all__`` of the modules in ``MODULES`` (the
modules the API reference documents), and their public methods and properties defined in
this package (what ``doc/conf.py`` puts on the API pages; methods inherited from torch,
scikit-learn or skorch are theirs to document).
"""

from __future__ import annotations

import importlib
import inspect

import pytest
from public_modules import PUBLIC_MODULES

validate = pytest.importorskip("numpydoc.validate").validate

MODULES = PUBLIC_MODULES

# Checks not applied to any docstring, as in scikit-learn's own test:
#   GL01, GL02: where the summary starts and the closing quotes go (layout, not content);
#   RT02: a Returns entry may name the returned object, not only its type;
#   ES01, SA01, EX01: an extended summary, a See Also and an Examples section; the user
#     guide and the gallery carry the examples, and many short docstrings need neither;
#   SS02: a summary may start with the lowercase name of a function or parameter
#     (``sparsemax`` is spelled so), where numpydoc asks for a capital letter.
IGNORED = {"GL01", "GL02", "RT02", "ES01", "SA01", "EX01", "SS02"}

# torch.nn.Module's protocol methods: the module's own docstring documents the call, and
# ``extra_repr`` is for ``repr``; their parameters are torch's.
TORCH_PROTOCOL = {"forward", "extra_repr", "train"}

# Docstrings that failed these checks when the test was written, with the failing checks.
# Fix a docstring, then remove its entry; a new public object must pass as it is.
KNOWN_FAILURES = {
    "sk_entmax.EntmaxClassifier": {"PR08"},
    "sk_entmax.SparsemaxClassifier": {"PR08"},
    "sk_entmax.TabNetEntmaxClassifier": {"PR08"},
    "sk_entmax.TabNetEntmaxRegressor": {"PR08"},
    "sk_entmax.TabNetPretrainer": {"PR08"},
    "sk_entmax.InvalidParameterError": {"SS06"},
    "sk_entmax.entmax.AdaptiveEntmax.alpha_of_raw": {"SS06", "PR01", "RT01"},
    "sk_entmax.entmax.AdaptiveEntmax.raw_of_alpha": {"PR01"},
    "sk_entmax.entmax.Entmax15Loss.loss": {"PR01", "RT01"},
    "sk_entmax.entmax.EntmaxBisectLoss.loss": {"PR01", "RT01"},
    "sk_entmax.entmax.NormmaxBisectLoss.loss": {"PR01", "RT01"},
    "sk_entmax.entmax.SparsemaxBisectLoss.loss": {"PR01", "RT01"},
    "sk_entmax.entmax.SparsemaxLoss.loss": {"PR01", "RT01"},
    "sk_entmax.entmax.entmax_attention_weights": {"PR04"},
    "sk_entmax.nn.EntmaxHead.loss": {"PR01", "RT01"},
    "sk_entmax.nn.EntmaxHead.loss_and_grad": {"RT03"},
    "sk_entmax.nn.EntmaxHead.proba": {"PR01", "RT01"},
    "sk_entmax.nn.EntmaxLinearNet.loss": {"PR01", "RT01"},
    "sk_entmax.nn.EntmaxLinearNet.loss_and_grad": {"SS06", "PR01", "RT01"},
    "sk_entmax.nn.EntmaxLinearNet.penalized_parameters": {"SS06", "RT01"},
    "sk_entmax.nn.EntmaxLinearNet.proba": {"PR01", "RT01"},
    "sk_entmax.nn.EntmaxMultiheadAttention": {"PR04"},
    "sk_entmax.nn.TabNet.embed": {"PR01", "RT01"},
    "sk_entmax.nn.TabNet.never_read": {"SS06"},
    "sk_entmax.nn.TabNetClassifierNet.loss": {"PR01", "RT01"},
    "sk_entmax.nn.TabNetClassifierNet.proba": {"PR01", "RT01"},
    "sk_entmax.nn.TabNetRegressorNet.loss": {"SS06", "PR01", "RT01"},
    "sk_entmax.metrics.tsallis_loss": {"SS05"},
    "sk_entmax.report.ConformalSets": {"PR01"},
    "sk_entmax.report.ConformalSets.lines": {"RT01"},
    "sk_entmax.report.ConformalSets.n_rows": {"GL08"},
    "sk_entmax.report.ConformalSets.row_sets": {"RT01"},
    "sk_entmax.report.ConformalSets.size_counts": {"RT01"},
    "sk_entmax.report.ImportanceIntervals": {"PR01"},
    "sk_entmax.report.ImportanceIntervals.order": {"RT01"},
    "sk_entmax.report.ImportanceIntervals.overlapping": {"SS05"},
    "sk_entmax.report.conformal_sets": {"RT03"},
    "sk_entmax.report.plot_step_masks": {"SS05"},
}


def _own_members(cls):
    """Public methods and properties of ``cls`` that this package defines."""
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        raw = inspect.getattr_static(cls, name)
        function = raw.fget if isinstance(raw, property) else getattr(raw, "__func__", raw)
        if not callable(function):
            continue
        if not (getattr(function, "__module__", None) or "").startswith("sk_entmax"):
            continue
        yield name


def _public_objects():
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if not callable(obj):  # constants such as __version__ and FORMAT_VERSION
                continue
            yield f"{module_name}.{name}"
            if inspect.isclass(obj):
                torch_module = any(
                    f"{base.__module__}.{base.__qualname__}" == "torch.nn.modules.module.Module"
                    for base in obj.__mro__
                )
                for member in _own_members(obj):
                    if torch_module and member in TORCH_PROTOCOL:
                        continue
                    yield f"{module_name}.{name}.{member}"


OBJECTS = sorted(set(_public_objects()))


def test_every_module_is_validated():
    for module_name in MODULES:
        assert any(path.startswith(f"{module_name}.") for path in OBJECTS), module_name


@pytest.mark.parametrize("path", OBJECTS)
def test_docstring(path):
    result = validate(path)
    allowed = IGNORED | KNOWN_FAILURES.get(path, set())
    errors = [f"{code}: {message}" for code, message in result["errors"] if code not in allowed]
    assert not errors, f"{path} ({result['file']}:{result['file_line']}):\n" + "\n".join(errors)
