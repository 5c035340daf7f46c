"""Files the package writes whole or not at all: the temporary file beside the target.

:func:`sk_entmax.persistence.save`, the reports (:mod:`sk_entmax.report`) and
:func:`sk_entmax.export.to_onnx` write to a new temporary file in the target's folder and
rename it over the target, so that a reader sees the old file or the new one, never half of
one. Save replaces the file a link names (its own writer, from :func:`new_temporary_file`);
the reports and the ONNX export refuse a link, a folder and any file that is not a regular
file, through :func:`check_target` and :func:`write_whole`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["check_target", "new_temporary_file", "write_whole"]

_KINDS = [
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
]


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


def check_target(path: str | os.PathLike, shown: str, what: str = "a report") -> int | None:
    """The permission bits of the regular file at ``path``, None when there is nothing.

    Does not follow a link at ``path``: a link (dangling or not), a folder or any other file
    that is not a regular file (a named pipe, a socket, a device such as ``/dev/null``)
    raises an OSError whose ``filename`` is ``shown``.

    Parameters
    ----------
    path : str or path-like
        The file to check.
    shown : str
        The path as the caller gave it, named in the error.
    what : str, default="a report"
        What is written, as the error names it ("an ONNX file").

    Returns
    -------
    int or None
        The permission bits of the regular file there, None when nothing is there.

    Raises
    ------
    OSError
        When ``path`` is a link, a folder (``IsADirectoryError``) or not a regular file
        (``FileExistsError``).
    """
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None
    mode = found.st_mode
    if stat.S_ISLNK(mode):
        raise OSError(
            errno.ELOOP,
            f"is a symbolic link; {what} is not written through one (that would overwrite "
            "the file it points to): remove the link or choose another path",
            shown,
        )
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder; give a file name", shown)
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "a special file")
        raise FileExistsError(
            errno.EEXIST,
            f"is not a regular file ({kind}); {what} only replaces a regular file",
            shown,
        )
    return stat.S_IMODE(mode) & 0o777


def write_whole(path: str | os.PathLike, data: bytes, what: str = "a report") -> Path:
    """Write ``data`` to ``path``: whole, or not at all, and never through a link.

    Missing parent folders are created. The bytes go to a new temporary file in the
    target folder (:func:`new_temporary_file`), flushed to disk, which is then renamed over
    ``path`` (:func:`os.replace`): a reader sees the old file or the new one, never half of
    one, and an error at any point (a full disk, an interrupt) removes the temporary file
    and leaves the old file as it was.

    What is at ``path`` when the file is written:

    - nothing: the file is created, with the permissions a new file gets;
    - a regular file: it is replaced, and its permission bits are kept; its other names
      (hard links) keep the old content;
    - a symbolic link (dangling or not), a folder, a named pipe, a socket or a device: the
      write is refused with an OSError naming ``path``, and it is left as it was. The check
      is made before writing and again just before the rename; a link planted after that
      is replaced by the rename, which renames over the link itself, never its target.

    Parameters
    ----------
    path : str or path-like
        Where to write. Links in its folders are followed (they are the user's choice of
        folder); a link at the path itself is not.
    data : bytes
        The file's content.
    what : str, default="a report"
        What is written, as an error names it ("an ONNX file").

    Returns
    -------
    pathlib.Path
        The path written: its folder resolved to an absolute path without links, then the
        file name as given.

    Raises
    ------
    OSError
        When the file cannot be written, or ``path`` is a link or not a regular file.
    """
    path = Path(path)
    shown = str(path)
    if path.name in ("", ".", ".."):
        raise IsADirectoryError(errno.EISDIR, "is a folder; give a file name", shown)
    with _naming(shown, what):
        path.parent.mkdir(parents=True, exist_ok=True)
    target = path.parent.resolve() / path.name
    mode = check_target(target, shown, what)
    with _naming(shown, what):
        fd, temp = new_temporary_file(target.parent, path.name)
    try:
        with _naming(shown, what), os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if mode is not None and hasattr(os, "fchmod"):
                os.fchmod(handle.fileno(), mode)
            handle.flush()
            os.fsync(handle.fileno())
        check_target(target, shown, what)  # again: anything planted while it was written?
        with _naming(shown, what):
            os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return target


@contextlib.contextmanager
def _naming(shown: str, what: str) -> Iterator[None]:
    """Re-raise an OSError of the block as the same kind of error naming ``shown``, the
    file being written (a full disk said "No space left on device" and named nothing; a
    read-only folder named the temporary file)."""
    try:
        yield
    except OSError as error:
        if error.filename == shown:
            raise
        reason = error.strerror or str(error)
        raise type(error)(error.errno, f"cannot write {what} ({reason})", shown) from None
