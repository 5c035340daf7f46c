"""The file on disk: written whole or not at all, and only to a regular file or a new
path (see :func:`~sk_entmax.persistence.save`)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat

import torch

from sk_entmax._files import new_temporary_file
from sk_entmax.persistence._errors import _Invalid
from sk_entmax.persistence._reader import OneRead


def _safetensors():
    try:
        import safetensors
        import safetensors.torch
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "sk_entmax.persistence needs the safetensors package, a dependency of sk_entmax: "
            "pip install safetensors"
        ) from error
    return safetensors


_FILE_KINDS = (
    (stat.S_ISFIFO, "fifo"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


def _save_target(path: str) -> tuple[str, int | None]:
    """The file :func:`save` writes for ``path`` (the file a symbolic link names), with the
    permission bits it is to keep (None for a new file); refuses anything but a regular file
    or a new path with an OSError naming ``path``."""
    try:
        info = os.stat(path)  # follows symbolic links: what the path names is what counts
    except FileNotFoundError:
        return os.path.realpath(path), None
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(
            errno.EISDIR, "is a directory; save writes a file (give a file name)", path
        )
    if not stat.S_ISREG(info.st_mode):
        kind = next((k for test, k in _FILE_KINDS if test(info.st_mode)), "special file")
        raise OSError(
            errno.EINVAL,
            f"is a {kind}, not a regular file; save replaces a regular file or writes a new "
            "one, nothing else",
            path,
        )
    return os.path.realpath(path), stat.S_IMODE(info.st_mode)


def _write_file(path: str, tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> None:
    """Write the safetensors file for ``path`` whole or not at all (see :func:`save`)."""
    st = _safetensors()
    real, mode = _save_target(path)
    folder, base = os.path.split(real)
    try:
        fd, temporary_path = new_temporary_file(folder, base)
    except OSError as error:
        raise type(error)(
            error.errno, f"cannot create a file beside it ({error.strerror})", path
        ) from None
    temporary = os.fspath(temporary_path)
    try:
        try:
            created = stat.S_IMODE(os.fstat(fd).st_mode)
        finally:
            os.close(fd)
        try:
            st.torch.save_file(tensors, temporary, metadata=metadata)
        except st.SafetensorError as error:
            raise OSError(errno.EIO, f"the file could not be written ({error})", path) from None
        try:
            with OneRead(temporary) as written:  # load reads every file save writes
                written.check_digest()
        except _Invalid as error:
            raise ValueError(f"cannot save to {path!r}: {error}") from None
        # the mode of the file replaced, or of a new file; safetensors may have made the
        # temporary file anew, with its own
        os.chmod(temporary, created if mode is None else mode)
        fd = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        _save_target(path)  # what the path names now, just before it is replaced
        os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
