"""The two errors of persistence: a file that is not a valid model file, a value that
cannot be stored as data."""

from __future__ import annotations

# a file that is not a valid model file: the error the estimators' attribute checks raise too
from sk_entmax._attributes import Invalid as _Invalid

__all__ = ["_Invalid", "_Unserializable"]


class _Unserializable(TypeError):
    """A value :func:`~sk_entmax.persistence._codec._encode` cannot write as data;
    :func:`~sk_entmax.persistence.save` raises it as a TypeError that names the value."""
