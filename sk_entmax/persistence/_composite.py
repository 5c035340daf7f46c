"""A scikit-learn ``Pipeline`` or ``ColumnTransformer`` in a model file (format version 2).

The scikit-learn part goes through `skops <https://skops.readthedocs.io>`_, the maintained
library for exactly this: it stores estimators as their attributes (numpy arrays as
``.npy``, without pickle) and on load builds only the types it trusts, refusing the rest
before anything is built. This package's estimators hold a torch network, which skops
would only store by pickling it, so each one is taken out of the pipeline first and stored
as a model entry of the file, as :func:`~sk_entmax.persistence.save` stores it alone
(JSON and safetensors, every entry checked on load): the pipeline that goes to skops holds
the string ``"sk_entmax.persistence:model:<i>"`` in its place, and
:func:`~sk_entmax.persistence.load` puts the loaded model back there.

Why skops and not this format's own schema for the scikit-learn part: a schema would have
to declare, for every transformer a user may put in a pipeline, each fitted attribute of
each scikit-learn version (``OneHotEncoder`` alone has a dozen, several private), and keep
up with them; skops does exactly that, tested against every scikit-learn estimator. What
it builds on load are scikit-learn's own classes from their stored attributes; any other
type (a function, a class of another package; :data:`EXTRA_TRUSTED` excepted) is refused,
at save, with a ``TypeError`` naming it, and at load (a file edited or forged), with a
``ValueError`` naming it, before anything is built.
"""

from __future__ import annotations

import base64
import binascii
import copy
import zipfile
from collections.abc import Callable
from typing import Any

import torch
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline

from sk_entmax._version import __version__
from sk_entmax.persistence._errors import _Invalid
from sk_entmax.persistence._header import FORMAT_VERSION
from sk_entmax.persistence._skops_part import (
    check_archive,
    check_built,
    memory_owner,
    refused_type,
)
from sk_entmax.persistence._skops_part import objects as _walk

__all__ = ["assemble", "is_composite", "pipeline_entry", "read_pipeline"]

#: what stands in the skops part for the i-th estimator of this package
PLACEHOLDER = "sk_entmax.persistence:model:{}"

#: the types beyond skops' defaults (scikit-learn's estimators, numpy's and scipy's data,
#: numpy's ufuncs) that a stored pipeline may hold: numpy's dtypes (``OneHotEncoder``'s
#: ``dtype``), scikit-learn's column selector (plain data: a pattern and dtypes) and the
#: score functions of scikit-learn's univariate feature selection (``SelectKBest``'s
#: ``score_func``), each named exactly: nothing of another package, nothing of the user's.
#: ``_RemainderColsList`` is the list of a fitted ColumnTransformer's remainder columns under
#: scikit-learn 1.6 (a ``UserList`` of column indices and three flags; from 1.7 on a plain
#: list): without it, a ColumnTransformer fitted there with a remainder entry cannot be saved
#: on the declared scikit-learn floor.
EXTRA_TRUSTED = frozenset(
    {
        "numpy.dtype",
        "sklearn.compose._column_transformer._RemainderColsList",
        "sklearn.compose._column_transformer.make_column_selector",
        "sklearn.feature_selection._univariate_selection.chi2",
        "sklearn.feature_selection._univariate_selection.f_classif",
        "sklearn.feature_selection._univariate_selection.f_regression",
        "sklearn.feature_selection._univariate_selection.r_regression",
        "sklearn.feature_selection._mutual_info.mutual_info_classif",
        "sklearn.feature_selection._mutual_info.mutual_info_regression",
    }
)


def is_composite(obj: Any) -> bool:
    """Whether ``obj`` is a Pipeline or ColumnTransformer (what version 2 files hold)."""
    return isinstance(obj, (Pipeline, ColumnTransformer))


def _ours(obj: Any) -> bool:
    return type(obj).__module__.startswith("sk_entmax.")


def _take_out(obj: Any, models: list[Any]) -> Any:
    """``obj`` with each estimator of this package among the steps of its Pipelines (nested
    ones included) replaced by its placeholder, appended to ``models``; copies of the
    Pipelines, ``obj`` itself left as it is."""
    if _ours(obj):
        models.append(obj)
        return PLACEHOLDER.format(len(models) - 1)
    if isinstance(obj, Pipeline):
        new = copy.copy(obj)
        new.steps = [(name, _take_out(step, models)) for name, step in obj.steps]
        return new
    return obj


def _stray(obj: Any) -> Any:
    """An estimator of this package left in ``obj`` once the Pipelines' steps are taken out
    (inside a ColumnTransformer or FeatureUnion, say), or None."""
    if _ours(obj):
        return obj
    children: list[Any] = []
    for attr in ("steps", "transformers", "transformers_", "transformer_list"):
        for item in getattr(obj, attr, None) or []:
            if isinstance(item, tuple) and len(item) >= 2:
                children.append(item[1])
    for child in children:
        found = _stray(child)
        if found is not None:
            return found
    return None


def _skops():
    try:
        import skops.io
    except ImportError:  # pragma: no cover - a dependency of the package
        raise ImportError(
            "saving and loading a Pipeline needs skops, a dependency of sk_entmax: "
            "pip install skops"
        ) from None
    return skops.io


def pipeline_entry(
    obj: Any, model_entry: Callable[[Any], tuple[dict[str, Any], dict[str, torch.Tensor]]]
) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The header and tensors of a version 2 file for the fitted Pipeline or
    ColumnTransformer ``obj``; ``model_entry`` gives those of one estimator of this package.
    Refuses, with a TypeError naming it, what load would refuse."""
    sio = _skops()
    name = type(obj).__name__
    models: list[Any] = []
    skeleton = _take_out(obj, models)
    stray = _stray(skeleton)
    if stray is not None:
        raise TypeError(
            f"cannot save {name}: it holds a {type(stray).__name__} inside a "
            f"{type(obj).__name__} other than as a step of a Pipeline; save stores this "
            "package's estimators as steps of a Pipeline only"
        )
    _refuse_at_save(skeleton, name)
    try:
        data = sio.dumps(skeleton, compression=zipfile.ZIP_DEFLATED, compresslevel=9)
    except Exception as error:  # skops says which object it cannot store
        raise TypeError(
            f"cannot save {name}: skops cannot store a part of it ({type(error).__name__}: "
            f"{error}); this package's estimators are stored only as steps of a Pipeline"
        ) from None
    refused = sorted(set(sio.get_untrusted_types(data=data)) - EXTRA_TRUSTED)
    if refused:
        raise TypeError(
            f"cannot save {name}: it holds {', '.join(refused)}, which load would refuse: a "
            "saved Pipeline or ColumnTransformer may hold scikit-learn's estimators and "
            "data, and this package's estimators as steps of a Pipeline (not inside a "
            "ColumnTransformer), nothing that runs code on load; use pickle or joblib where "
            "the file's source is trusted"
        )
    try:
        check_archive(data)
    except _Invalid as error:
        raise TypeError(f"cannot save {name}: load would refuse it: {error}") from None
    entries, tensors = [], {}
    for i, model in enumerate(models):
        entry, model_tensors = model_entry(model)
        entries.append(entry)
        tensors.update({f"models.{i}.{key}": t for key, t in model_tensors.items()})
    header = {
        "format_version": FORMAT_VERSION,
        "sk_entmax_version": __version__,
        "pipeline": base64.b64encode(data).decode("ascii"),
        "models": entries,
    }
    return header, tensors


def _refuse_at_save(obj: Any, name: str) -> None:
    """Refuse, naming it, a ``memory`` set anywhere in ``obj`` (the pipeline to store, with
    this package's estimators taken out) (a ValueError: the cache
    folder is not part of the model, and a loaded pipeline must not read one) and a type
    load does not build (a TypeError)."""
    owner = memory_owner(obj)
    if owner is not None:
        raise ValueError(
            f"cannot save {name}: its {type(owner).__name__} has memory={owner.memory!r}, a "
            "joblib cache folder, which load refuses: a refit of the loaded pipeline would "
            "write pickles of its data to that folder and unpickle them from it. Save a copy "
            "without it: set_params(memory=None)"
        )
    for item in _walk(obj):
        refused = refused_type(item)
        if refused is not None:
            raise TypeError(
                f"cannot save {name}: it holds a {refused}, which load refuses: "
                "scikit-learn's compiled code reads its fitted arrays unchecked, so a "
                "forged file could crash the process; use pickle or joblib where the "
                "file's source is trusted"
            )


def read_pipeline(
    header: dict[str, Any], stored: dict[str, tuple]
) -> tuple[Any, list[tuple[dict[str, Any], dict[str, tuple], str]]]:
    """The scikit-learn part of a version 2 file, built by skops from trusted types only,
    and each model entry with its stored tensors (names without their prefix) and prefix.
    Everything wrong is an ``_Invalid`` saying why."""
    sio = _skops()
    entries = header["models"]
    parts: list[dict[str, tuple]] = [{} for _ in entries]
    for key, value in stored.items():
        prefix, _, rest = key.partition(".")
        index, _, rest = rest.partition(".")
        if prefix != "models" or not index.isdigit() or int(index) >= len(entries) or not rest:
            raise _Invalid(
                f"tensor {key} belongs to no model entry (models.<i>.<name>, i below "
                f"{len(entries)})"
            )
        parts[int(index)][rest] = value
    text = header["pipeline"]
    if not isinstance(text, str):
        raise _Invalid("the header's pipeline entry is not a string")
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeError, ValueError):
        raise _Invalid("the header's pipeline entry is not base64") from None
    check_archive(data)
    try:
        found = set(sio.get_untrusted_types(data=data))
    except Exception as error:
        raise _Invalid(
            f"the pipeline entry is not one skops reads ({type(error).__name__}: {error})"
        ) from None
    refused = sorted(found - EXTRA_TRUSTED)
    if refused:
        raise _Invalid(
            f"the pipeline entry holds types load does not build: {', '.join(refused[:10])}"
        )
    try:
        pipeline = sio.loads(data, trusted=sorted(found))
    except Exception as error:
        raise _Invalid(
            f"the pipeline entry is not one skops reads ({type(error).__name__}: {error})"
        ) from None
    check_built(pipeline)
    if not is_composite(pipeline):
        raise _Invalid(
            f"the pipeline entry holds a {type(pipeline).__name__}, not a Pipeline or "
            "ColumnTransformer"
        )
    return pipeline, [(e, parts[i], f"models.{i}.") for i, e in enumerate(entries)]


def assemble(pipeline: Any, models: list[Any]) -> Any:
    """``pipeline`` with each placeholder among its Pipelines' steps replaced by its loaded
    model; every model must stand in exactly one place."""
    used = [0] * len(models)

    def put_back(obj: Any) -> Any:
        if isinstance(obj, str) and obj.startswith(PLACEHOLDER.format("")):
            index = obj[len(PLACEHOLDER.format("")) :]
            if not index.isdigit() or int(index) >= len(models):
                raise _Invalid(f"the pipeline names a model {obj!r} the file does not hold")
            used[int(index)] += 1
            return models[int(index)]
        if isinstance(obj, Pipeline):
            obj.steps = [(name, put_back(step)) for name, step in obj.steps]
        return obj

    put_back(pipeline)
    if any(count != 1 for count in used):
        raise _Invalid(
            "each model entry must stand in exactly one step of the pipeline; the steps "
            f"name them {used} times"
        )
    return pipeline
