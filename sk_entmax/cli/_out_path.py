"""The check of ``--out`` before any work: a file the report may be written to."""

from __future__ import annotations

import os
from pathlib import Path

from sk_entmax.cli._errors import UsageError

#: how a report this package wrote begins, and what its last bytes hold
_REPORT_START = b"<!DOCTYPE html>"
_REPORT_MARK = b"Written by sk_entmax"
_TAIL_BYTES = 4096


def _is_report(path: Path) -> bool:
    """Whether the regular file ``path`` is empty or a report this package wrote (its
    first bytes the doctype, its last ones the footer), read without following links."""
    with open(path, "rb") as file:
        head = file.read(len(_REPORT_START))
        if not head:
            return True
        size = file.seek(0, os.SEEK_END)
        file.seek(max(0, size - _TAIL_BYTES))
        tail = file.read()
    return head == _REPORT_START and _REPORT_MARK in tail


def _check_out(path: Path, data: Path | None = None) -> None:
    """Refuse an ``--out`` that cannot or must not be written, before any work is done:
    also the ``--data`` file itself, and an existing file that is not one of this
    package's reports (nor empty), which the report would replace."""
    if path.is_symlink():
        raise UsageError(
            f"--out {path} is a symbolic link (to {os.readlink(path)}); writing the report "
            "would overwrite its target, so it is refused: remove the link or choose "
            "another file"
        )
    if path.is_dir():
        raise UsageError(
            f"--out {path} is a folder; give a file name, e.g. {path / 'report.html'}"
        )
    if path.exists() and not path.is_file():  # a named pipe, a socket, a device
        raise UsageError(
            f"--out {path} is not a regular file (a named pipe, a socket or a device); "
            "the report is written to a file: choose another name"
        )
    parent = path.absolute().parent
    while not parent.exists():  # the report creates missing folders: check the first that is
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"cannot write --out {path}: {parent} is not a folder")
    if path.exists():
        if data is not None and data.exists() and os.path.samefile(path, data):
            raise UsageError(
                f"--out {path} is the --data file {data}: writing the report would replace "
                "the data; choose another name for the report"
            )
        if not os.access(path, os.W_OK):
            raise UsageError(f"cannot write --out {path}: permission denied")
        try:
            ours = _is_report(path)
        except OSError as error:
            raise UsageError(f"cannot read --out {path}: {error.strerror or error}") from None
        if not ours:
            raise UsageError(
                f"--out {path} exists and is not a report of sk_entmax (nor empty); it is "
                "not replaced: choose another name, or remove the file first"
            )
    elif not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write --out {path}: no permission to write in {parent}")
