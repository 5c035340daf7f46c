"""The one write path of the reports and of ``to_onnx`` (``sk_entmax._files.write_whole``):
every error it raises names the file being written (issue 58, point 22)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import sk_entmax._files as files


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def _read_only(folder, name):
    raise PermissionError(errno.EACCES, "Permission denied", str(Path(folder) / f".{name}.x.tmp"))


def _no_folder(self, *args, **kwargs):
    raise PermissionError(errno.EACCES, "Permission denied", str(self))


@pytest.mark.parametrize(
    ("where", "fault", "kind"),
    [
        ("os.fsync", _full_disk, OSError),
        ("os.replace", _full_disk, OSError),
        ("new_temporary_file", _read_only, PermissionError),
        ("Path.mkdir", _no_folder, PermissionError),
    ],
    ids=["full-disk-flush", "full-disk-rename", "read-only-folder", "folder-not-created"],
)
def test_a_failed_write_names_the_target(tmp_path, monkeypatch, where, fault, kind):
    target = tmp_path / "sub" / "model.onnx"
    if where == "Path.mkdir":
        monkeypatch.setattr(Path, "mkdir", fault)
    elif where == "new_temporary_file":
        target.parent.mkdir()
        monkeypatch.setattr(files, "new_temporary_file", fault)
    else:
        _, name = where.split(".")
        monkeypatch.setattr(os, name, fault)
    with pytest.raises(kind) as raised:
        files.write_whole(target, b"data", "an ONNX file")
    assert raised.value.filename == str(target)
    assert "cannot write an ONNX file" in str(raised.value)
    monkeypatch.undo()
    assert not target.exists()
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []
