"""The command line's one error type, and the one line an unforeseen error prints."""

from __future__ import annotations


class UsageError(Exception):
    """A problem with the user's input, reported as one line without a traceback."""


def _first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, or its type's name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
