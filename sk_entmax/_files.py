"""Files the package writes whole or not at all: the temporary file beside the target.

:func:`sk_entmax.persistence.save` and the reports (:mod:`sk_entmax.report`) write to a new
temporary file in the target's folder and rename it over the target, so that a reader sees
the old file or the new one, never half of one. Each decides what the target may be (save
replaces the file a link names; a report refuses a link); both start from this file.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

__all__ = ["new_temporary_file"]


def new_temporary_file(folder: str | os.PathLike, name: str) -> tuple[int, Path]:
    """A new, empty file of a random name in ``folder``, open for writing: its descriptor and
    path. Created exclusively (never an existing file, never through a link), with the
    permissions a new file gets (``0o666`` less the umask); the name starts with a dot and
    ``name`` (at most 100 characters of it) and ends in ``.tmp``.

    Raises
    ------
    OSError
        When the folder does not take a new file (missing, read-only, full, ...).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        temp = Path(folder) / f".{name[:100]}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(temp, flags, 0o666), temp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(folder))
