"""A model file read through one descriptor, and its digest.

:func:`~sk_entmax.persistence.load` opens the file once and reads everything (the header's
length, the header, each tensor) from that one descriptor: a :func:`save` to the same path
meanwhile replaces the path with a new file (a rename), never the bytes of the open one, so
a load sees the old file whole or the new one whole, never a mix of the two (safetensors'
own reader opened the path again for the tensors, and a load racing a save returned a model
whose calibration did not match its weights). It reads the safetensors layout itself: an
8-byte length, a JSON header of each tensor's dtype, shape and byte range, then the bytes,
each range checked to hold its tensor and the ranges to cover the bytes exactly, as
safetensors does.

The digest (:data:`DIGEST_KEY` in the file's metadata) is the SHA-256 of the model's JSON
document and of every tensor (its name, dtype, shape and bytes, in name order): every byte
the model depends on. ``save`` writes it, and ``load`` refuses a file whose bytes do not
match it, before it reads anything else (a file flipped on disk or in transit). A file
without one (written before it existed) is checked structurally only. It is a check of
integrity, not of origin: whoever edits a file can write its new digest.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import stat
from typing import Any

import torch

from sk_entmax.persistence._errors import _Invalid
from sk_entmax.persistence._header import _MAX_HEADER_BYTES as MAX_HEADER_BYTES

__all__ = ["DIGEST_KEY", "OneRead", "digest"]

#: the metadata entry that holds the digest
DIGEST_KEY = "sk_entmax_sha256"
#: the most commas and brackets the safetensors header may hold, counted in its text before
#: it is parsed: the model's JSON document (a string in it, whose commas and brackets count
#: too) may hold 300,000 values and 100,000 containers, and the tensors' table as many
#: again; parsed, that is tens of MB at most (a regular expression that skipped the strings
#: took 57 MB on a 1 MB document)
_MAX_TABLE_VALUES = 600_000
_MAX_TABLE_CONTAINERS = 200_000
_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
_NAMES = {dtype: name for name, dtype in _DTYPES.items()}
_CHUNK = 2**20


def digest(text: str, tensors: dict[str, torch.Tensor]) -> str:
    """The digest of a model's JSON document ``text`` and its ``tensors`` (see the module)."""
    sha = hashlib.sha256(text.encode("utf-8"))
    for name in sorted(tensors):
        tensor = tensors[name].detach().to("cpu").contiguous()
        _update(sha, name, _NAMES.get(tensor.dtype, str(tensor.dtype)), tuple(tensor.shape))
        if tensor.numel():
            sha.update(tensor.reshape(-1).view(torch.uint8).numpy())
    return sha.hexdigest()


def _update(sha: Any, name: str, dtype: str, shape: tuple[int, ...]) -> None:
    sha.update(b"\0" + json.dumps([name, dtype, list(shape)]).encode("utf-8") + b"\0")


class OneRead:
    """A safetensors file opened once; what :func:`load` reads of it (the metadata, each
    tensor's dtype and shape, a tensor), all through one descriptor. A context manager."""

    def __init__(self, path: str) -> None:
        self.path = path
        # not blocking: a fifo at the path is refused below, not waited on
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            info = os.fstat(self._fd)
            if not stat.S_ISREG(info.st_mode):
                raise OSError(errno.EINVAL, "is not a regular file; load reads a model file", path)
            self._size = info.st_size
            self._read_table()
        except BaseException:
            os.close(self._fd)
            raise

    def __enter__(self) -> OneRead:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self._fd)

    def _read(self, size: int, offset: int) -> bytearray:
        out = bytearray(size)
        self._read_into(memoryview(out), offset)
        return out

    def _read_into(self, buffer: memoryview, offset: int) -> None:
        """Fill ``buffer`` with the file's bytes from ``offset``, 16 MiB at a time."""
        done = 0
        os.lseek(self._fd, offset, os.SEEK_SET)
        while done < len(buffer):
            chunk = os.read(self._fd, min(len(buffer) - done, 16 * _CHUNK))
            if not chunk:
                raise _Invalid("the file ends before the bytes its header gives")
            buffer[done : done + len(chunk)] = chunk
            done += len(chunk)

    def _read_table(self) -> None:
        if self._size < 8:
            raise _Invalid("not a safetensors file: shorter than its 8-byte header length")
        length = int.from_bytes(self._read(8, 0), "little")
        if length > MAX_HEADER_BYTES:
            raise _Invalid(
                f"not a safetensors file save wrote: its first 8 bytes give a header of "
                f"{length:,} bytes; a model file's header is at most {MAX_HEADER_BYTES:,}"
            )
        if 8 + length > self._size:
            raise _Invalid("not a safetensors file: its header is longer than the file")
        raw = self._read(length, 8)
        values, containers = raw.count(b",") + 1, raw.count(b"[") + raw.count(b"{")
        if values > _MAX_TABLE_VALUES or containers > _MAX_TABLE_CONTAINERS:
            raise _Invalid(
                f"the file's tensor table holds about {values:,} values in {containers:,} "
                f"lists and objects; a model file holds at most {_MAX_TABLE_VALUES:,} and "
                f"{_MAX_TABLE_CONTAINERS:,}"
            )
        try:
            table = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            raise _Invalid("not a safetensors file: its header is not UTF-8 JSON") from None
        if not isinstance(table, dict):
            raise _Invalid("not a safetensors file: its header is not a JSON object")
        metadata = table.pop("__metadata__", None) or {}
        if not isinstance(metadata, dict) or not all(
            isinstance(v, str) for v in metadata.values()
        ):
            raise _Invalid("not a safetensors file: its metadata is not strings")
        self._metadata: dict[str, str] = metadata
        self._start = 8 + length
        self._entries = {key: self._entry(key, value) for key, value in table.items()}
        ranges = sorted(entry[2] for entry in self._entries.values())
        end = 0
        for begin, stop in ranges:
            if begin != end:
                raise _Invalid("not a safetensors file: its tensors' bytes overlap or leave gaps")
            end = stop
        if self._start + end != self._size:
            raise _Invalid(
                f"not a safetensors file save wrote: its tensors take {end:,} bytes, but "
                f"{self._size - self._start:,} follow the header"
            )

    def _entry(self, key: str, value: Any) -> tuple[str, tuple[int, ...], tuple[int, int]]:
        if not isinstance(value, dict) or set(value) != {"dtype", "shape", "data_offsets"}:
            raise _Invalid(f"not a safetensors file: tensor {key[:100]!r} is malformed")
        dtype, shape, offsets = value["dtype"], value["shape"], value["data_offsets"]
        plain = (
            isinstance(dtype, str)
            and isinstance(shape, list)
            and all(type(n) is int and n >= 0 for n in shape)
            and isinstance(offsets, list)
            and len(offsets) == 2
            and all(type(n) is int and n >= 0 for n in offsets)
        )
        if not plain or offsets[0] > offsets[1]:
            raise _Invalid(f"not a safetensors file: tensor {key[:100]!r} is malformed")
        if dtype not in _DTYPES:
            raise _Invalid(f"tensor {key} has dtype {dtype[:20]}, which no network holds")
        size = math.prod(shape) * _DTYPES[dtype].itemsize
        if offsets[1] - offsets[0] != size:
            raise _Invalid(
                f"not a safetensors file: tensor {key[:100]!r} of shape {shape} takes "
                f"{offsets[1] - offsets[0]:,} bytes, not {size:,}"
            )
        return dtype, tuple(shape), (offsets[0], offsets[1])

    def check_digest(self) -> None:
        """Refuse (``_Invalid``) a file whose bytes do not match its stored digest; a file
        without one passes."""
        stored = self._metadata.get(DIGEST_KEY)
        if stored is None:
            return
        text = self._metadata.get("sk_entmax", "")
        sha = hashlib.sha256(text.encode("utf-8"))
        for name in sorted(self._entries):
            dtype, shape, (begin, stop) = self._entries[name]
            _update(sha, name, dtype, shape)
            for offset in range(begin, stop, 4 * _CHUNK):
                sha.update(self._read(min(4 * _CHUNK, stop - offset), self._start + offset))
        if sha.hexdigest() != stored:
            raise _Invalid(
                "its bytes do not match the digest save stored in it: the file was corrupted "
                "(on disk or in transit) or edited after it was saved; save the model again"
            )

    def metadata(self) -> dict[str, str]:
        """The file's metadata (strings)."""
        return dict(self._metadata)

    def shapes(self) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        """Name -> (shape, dtype) of the stored tensors, from the header alone."""
        return {key: (shape, _DTYPES[dtype]) for key, (dtype, shape, _) in self._entries.items()}

    def get_tensor(self, key: str) -> torch.Tensor:
        """The stored tensor ``key``, read from the file's descriptor."""
        dtype, shape, (begin, stop) = self._entries[key]
        tensor = torch.empty(shape, dtype=_DTYPES[dtype])
        if stop > begin:
            raw = tensor.reshape(-1).view(torch.uint8).numpy()
            self._read_into(memoryview(raw).cast("B"), self._start + begin)
        return tensor
