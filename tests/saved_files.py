"""A saved model file's JSON header and tensors, read and written back, for the tests that
edit or forge files (the header is the ``sk_entmax`` entry of the safetensors metadata)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import safetensors
import safetensors.torch
import torch


def read_saved(path: str | Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The header (parsed) and the tensors of the file at ``path``."""
    with safetensors.safe_open(str(path), framework="pt") as handle:
        header = json.loads(handle.metadata()["sk_entmax"])
        tensors = {k: handle.get_tensor(k) for k in handle.keys()}
    return header, tensors


def write_saved(path: str | Path, header: dict[str, Any] | str, tensors) -> Path:
    """Write ``tensors`` with ``header`` (a dict, or JSON text as it is) to ``path``."""
    text = header if isinstance(header, str) else json.dumps(header)
    safetensors.torch.save_file(tensors, str(path), metadata={"sk_entmax": text})
    return Path(path)
