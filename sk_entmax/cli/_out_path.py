"""The check of ``--out`` before any work: a file the report may be written to."""

from __future__ import annotations

import os
from pathlib import Path

from sk_entmax.cli._errors import UsageError


def _check_out(path: Path) -> None:
    """Refuse an ``--out`` that cannot or must not be written, before any work is done."""
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
        if not os.access(path, os.W_OK):
            raise UsageError(f"cannot write --out {path}: permission denied")
    elif not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write --out {path}: no permission to write in {parent}")
