"""The two errors of persistence: a file that is not a valid model file, a value that
cannot be stored as data."""

from __future__ import annotations


class _Invalid(Exception):
    """Why a file is not a valid model file; :func:`load` raises it as a ValueError."""


class _Unserializable(TypeError):
    """A value :func:`~sk_entmax.persistence._codec._encode` cannot write as data;
    :func:`~sk_entmax.persistence.save` raises it as a TypeError that names the value."""
