"""The checks of a Pipeline file's scikit-learn part (the skops archive): its zip members,
its schema (size, node kinds, the types it calls or refuses) before skops reads it, and the
objects skops built from it, before they are handed to the caller.

Why each check (issue 58):

- the archive: only stored and deflated members (a bzip2 or lzma member of 11 KB unpacks to
  hundreds of MB that zipfile's sizes do not bound while it decompresses), at most
  :data:`MAX_UNPACKED_BYTES` in :data:`MAX_MEMBERS` files;
- the schema (``schema.json``, the document skops builds from): at most
  :data:`MAX_SCHEMA_BYTES`, with at most the values and containers a model header may hold,
  counted before it is parsed (95 KB of deflated JSON took 1.66 GB to parse);
- each node of the schema: one of the kinds in :data:`LOADERS`, which only reference a type
  (a function is looked up, never called; a class is built with ``__new__`` and given its
  stored attributes). The kinds that call the type they name with stored arguments
  (``ReduceNode``, ``ConstructorFromReduceNode``, ``TreeNode``, ...) are refused: through
  them a trusted score function ran on 256 MB of stored data at load;
- the types of :data:`REFUSED`: scikit-learn estimators whose compiled code reads their
  fitted arrays by stored indices without checking them (libsvm's support vectors, a
  tree's nodes), so that a forged attribute makes ``predict`` read out of bounds;
- once built: no ``memory`` (a Pipeline's joblib cache folder, which a refit writes
  pickles to and unpickles from: a cache planted beside a file ran code on ``fit``), and
  every ``n_jobs`` at most the cores this process may use (capped, with a warning).
"""

from __future__ import annotations

import io
import json
import warnings
import zipfile
from collections.abc import Iterator
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from sk_entmax._engine.threads import available_cores
from sk_entmax.persistence._errors import _Invalid
from sk_entmax.persistence._header import _check_json_size

__all__ = [
    "LOADERS",
    "REFUSED",
    "check_archive",
    "check_built",
    "memory_owner",
    "objects",
    "refused_type",
]

#: the most the skops part may unpack to, and the files it may hold, so that a small file
#: cannot make load allocate much (a pipeline's part is kilobytes to a few MiB)
MAX_UNPACKED_BYTES = 256 * 2**20
MAX_MEMBERS = 100_000
#: the most its schema may hold (a pipeline's schema is tens of KB; its arrays are .npy
#: members, not JSON)
MAX_SCHEMA_BYTES = 4 * 2**20
#: the zip compressions load reads: those skops writes
_COMPRESSIONS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}

#: the kinds of skops node load builds: each references a type or holds data, and none
#: calls a stored type with stored arguments
LOADERS = frozenset(
    {
        "DictNode",
        "ListNode",
        "SetNode",
        "TupleNode",
        "JsonNode",
        "BytesNode",
        "BytearrayNode",
        "SliceNode",
        "FunctionNode",
        "TypeNode",
        "ObjectNode",
        "NdArrayNode",
        "DTypeNode",
        "SparseMatrixNode",
        "MaskedArrayNode",
        "DefaultDictNode",
        "RandomStateNode",
        "RandomGeneratorNode",
    }
)
#: the kinds above that build the type they name by calling it (with no argument): only
#: with these types
_CALLED_TYPES = {
    "RandomStateNode": "numpy.random.mtrand.RandomState",
    "RandomGeneratorNode": "numpy.random._generator.Generator",
}

#: scikit-learn's types a stored pipeline may not hold: their compiled code indexes memory
#: with stored fitted arrays it does not check (a ``_n_support`` that keeps its sum made
#: ``SVC.predict`` crash the process)
REFUSED = frozenset(
    {
        "sklearn.svm._classes.SVC",
        "sklearn.svm._classes.NuSVC",
        "sklearn.svm._classes.SVR",
        "sklearn.svm._classes.NuSVR",
        "sklearn.svm._classes.OneClassSVM",
        "sklearn.neighbors._kd_tree.KDTree",
        "sklearn.neighbors._ball_tree.BallTree",
        "sklearn.tree._tree.Tree",
    }
)


def refused_type(obj: Any) -> str | None:
    """The name in :data:`REFUSED` of ``obj``'s type (a subclass included), or None."""
    for cls in type(obj).__mro__:
        name = f"{cls.__module__}.{cls.__qualname__}"
        if name in REFUSED:
            return name
    return None


def check_archive(data: bytes) -> None:
    """Refuse a skops part that is not a zip archive of stored or deflated members, that
    unpacks to more than :data:`MAX_UNPACKED_BYTES` or holds more than :data:`MAX_MEMBERS`
    files, or whose schema is too large or names a node kind outside :data:`LOADERS` or
    a type of :data:`REFUSED`; each an ``_Invalid`` saying why."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
            _check_members(members)
            schema = archive.getinfo("schema.json")
            if schema.file_size > MAX_SCHEMA_BYTES:
                raise _Invalid(
                    f"the pipeline entry's schema unpacks to {schema.file_size:,} bytes; a "
                    f"saved pipeline's is at most {MAX_SCHEMA_BYTES:,}"
                )
            raw = archive.read(schema)
    except (zipfile.BadZipFile, ValueError, EOFError, KeyError, NotImplementedError) as error:
        raise _Invalid(f"the pipeline entry is not a skops archive ({error})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Invalid("the pipeline entry's schema is not UTF-8 text") from None
    _check_json_size(text)
    try:
        tree = json.loads(text, parse_constant=lambda name: None)
    except RecursionError:
        raise _Invalid("the pipeline entry's schema nests too deeply") from None
    except ValueError as error:
        raise _Invalid(f"the pipeline entry's schema is not JSON ({error})") from None
    _check_nodes(tree)


def _check_members(members: list[zipfile.ZipInfo]) -> None:
    size = sum(member.file_size for member in members)
    if len(members) > MAX_MEMBERS or size > MAX_UNPACKED_BYTES:
        raise _Invalid(
            f"the pipeline entry unpacks to {size:,} bytes in {len(members):,} files; a "
            f"saved pipeline holds at most {MAX_UNPACKED_BYTES:,} in {MAX_MEMBERS:,}"
        )
    for member in members:
        if member.compress_type not in _COMPRESSIONS:
            raise _Invalid(
                f"the pipeline entry's member {member.filename!r} uses zip compression "
                f"{member.compress_type}; load reads only stored and deflated members"
            )


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object of ``tree`` that is a skops node (has ``__loader__``)."""
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "__loader__" in item:
                yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _check_nodes(tree: Any) -> None:
    for node in _nodes(tree):
        loader = node["__loader__"]
        name = f"{node.get('__module__')}.{node.get('__class__')}"
        if loader not in LOADERS:
            raise _Invalid(
                f"the pipeline entry builds {name} with skops' {str(loader)[:80]!r}, which "
                "load does not use (it calls a stored type with stored arguments, or is "
                "unknown): a saved pipeline's functions are referenced, never called"
            )
        if loader in _CALLED_TYPES and name != _CALLED_TYPES[loader]:
            raise _Invalid(
                f"the pipeline entry builds {name} with skops' {loader!r}, which builds "
                f"{_CALLED_TYPES[loader]} only"
            )
        if name in REFUSED:
            raise _Invalid(
                f"the pipeline entry holds a {name}, whose fitted arrays scikit-learn's "
                "compiled code reads unchecked; load does not build it"
            )


def objects(root: Any) -> Iterator[Any]:
    """Every object reachable from ``root`` through lists, tuples, dicts and the
    attributes of objects (each once)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, (str, bytes, int, float, np.ndarray)):
            continue
        seen.add(id(item))
        yield item
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif hasattr(item, "__dict__") and not isinstance(item, type):
            stack.extend(vars(item).values())


def memory_owner(root: Any) -> BaseEstimator | None:
    """An estimator reachable from ``root`` whose ``memory`` is set (a Pipeline's joblib
    cache, a clustering's), or None."""
    for obj in objects(root):
        if isinstance(obj, BaseEstimator) and getattr(obj, "memory", None) is not None:
            return obj
    return None


def check_built(root: Any) -> None:
    """Refuse (``_Invalid``) a built pipeline that holds a refused type or a ``memory``,
    and cap each ``n_jobs`` above this process's cores at them, with a warning."""
    cores = available_cores()
    for obj in objects(root):
        name = refused_type(obj)
        if name is not None:
            raise _Invalid(f"the pipeline entry holds a {name}, which load does not build")
        if not isinstance(obj, BaseEstimator):
            continue
        if getattr(obj, "memory", None) is not None:
            raise _Invalid(
                f"the pipeline entry's {type(obj).__name__} has memory="
                f"{str(obj.memory)[:200]!r}: a refit would write pickles to that folder and "
                "unpickle them from it, so load refuses a stored cache (save refuses one)"
            )
        n_jobs = vars(obj).get("n_jobs")
        if isinstance(n_jobs, (int, np.integer)) and not isinstance(n_jobs, bool):
            if n_jobs > cores:
                warnings.warn(
                    f"the loaded {type(obj).__name__} has n_jobs={int(n_jobs)}, more than "
                    f"the {cores} cores this process may use; capped at {cores}",
                    UserWarning,
                    stacklevel=4,
                )
                obj.n_jobs = cores
