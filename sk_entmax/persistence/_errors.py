"""The two errors of persistence: a file that is not a valid model file, a value that
cannot be stored as data."""

from __future__ import annotations

# a file that is not a valid model file: the error the estimators' attribute checks raise too
from sk_entmax._attributes import Invalid as _Invalid

__all__ = ["_Invalid", "_Unserializable", "printable"]


class _Unserializable(TypeError):
    """A value :func:`~sk_entmax.persistence._codec._encode` cannot write as data;
    :func:`~sk_entmax.persistence.save` raises it as a TypeError that names the value."""


def printable(text: str) -> str:
    """``text`` with each character that is not printable written as Python escapes it
    (ESC as ``\\x1b``, a newline as ``\\n``): a message may quote what a file holds, and
    a terminal must show it, not obey it."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
