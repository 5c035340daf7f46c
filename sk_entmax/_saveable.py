"""The classes :mod:`sk_entmax.persistence` saves and builds: the package's estimators that
declare their saved state (``_saved_state``, see :mod:`sk_entmax._saved_state`).

A file names its estimator; load builds only a class listed here, looked up by name, so
nothing in a file can make it import or run other code. What each class stores is its own
declaration; this module only says which classes there are.
"""

from __future__ import annotations

from sk_entmax._linear import EntmaxClassifier, SparsemaxClassifier
from sk_entmax._saved_state import ModelState, WrapperState
from sk_entmax._tabnet import TabNetEntmaxClassifier, TabNetEntmaxRegressor, TabNetPretrainer
from sk_entmax.conformal import SparseConformalClassifier

__all__ = ["SAVEABLE", "saved_state"]

#: each class persistence saves, by name
SAVEABLE: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        EntmaxClassifier,
        SparsemaxClassifier,
        TabNetEntmaxClassifier,
        TabNetEntmaxRegressor,
        TabNetPretrainer,
        SparseConformalClassifier,
    )
}


def saved_state(obj: object) -> ModelState | WrapperState | None:
    """The saved state of ``obj``'s class, or None unless that class is one of
    :data:`SAVEABLE` exactly (not a subclass)."""
    cls = type(obj)
    if SAVEABLE.get(cls.__name__) is not cls:
        return None
    return cls._saved_state
