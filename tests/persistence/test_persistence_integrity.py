"""A model file read through one descriptor, and its digest (issue 58, points 6 and 10):
a load that races a save sees one file whole, and flipped bytes are refused by name."""

from __future__ import annotations

import builtins
import json
import os

import numpy as np
import pytest
from saved_files import read_saved, write_saved
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_entmax import SparseConformalClassifier, SparsemaxClassifier
from sk_entmax.persistence import load, save


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    return X, (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int) + (X[:, 2] > 1)


@pytest.fixture(scope="module")
def two(data):
    """Two fitted pipelines of the same shape and different weights."""
    X, y = data
    make = lambda c: make_pipeline(StandardScaler(), SparsemaxClassifier(C=c, random_state=0))  # noqa: E731
    return make(1.0).fit(X, y), make(0.01).fit(X, y)


def _offset(path, name: str) -> int:
    """The position in the file of the first byte of tensor ``name``."""
    with open(path, "rb") as file:
        length = int.from_bytes(file.read(8), "little")
        table = json.loads(file.read(length))
    return 8 + length + table[name]["data_offsets"][0]


def _flip(path, offset: int) -> None:
    with open(path, "r+b") as file:
        file.seek(offset)
        byte = file.read(1)[0]
        file.seek(offset)
        file.write(bytes([byte ^ 1]))


def test_a_flipped_bit_in_a_weight_is_refused(two, data, tmp_path):
    """The lowest bit of one float32 weight: a finite weight the structural checks pass."""
    path = tmp_path / "p.safetensors"
    save(two[0], path)
    _flip(path, _offset(path, "models.0.layers.0.weight"))
    with pytest.raises(ValueError, match=r"cannot load .*do not match the digest"):
        load(path)


def test_a_flipped_byte_in_the_pipeline_part_is_refused(two, tmp_path):
    path = tmp_path / "p.safetensors"
    save(two[0], path)
    raw = path.read_bytes()
    header, _ = read_saved(path)
    position = raw.index(header["pipeline"][200:240].encode())
    swapped = raw[:position] + bytes([raw[position] ^ 0x20]) + raw[position + 1 :]
    path.write_bytes(swapped)  # a base64 letter's case: still base64
    with pytest.raises(ValueError, match=r"cannot load .*do not match the digest"):
        load(path)


def test_files_without_a_digest_still_load(two, data, tmp_path):
    """A file written before the digest existed (the tests' helper writes none)."""
    X, _ = data
    path = tmp_path / "p.safetensors"
    save(two[0], path)
    old = write_saved(tmp_path / "old.safetensors", *read_saved(path))
    np.testing.assert_array_equal(load(old).predict_proba(X), two[0].predict_proba(X))


def test_a_load_sees_the_file_it_opened_whole_while_a_save_replaces_it(two, data, tmp_path):
    """The path is replaced, as save replaces it, right after load first opens it: load
    reads the file it opened, never the new one in part or whole."""
    X, _ = data
    path = str(tmp_path / "p.safetensors")
    newer = str(tmp_path / "newer.safetensors")
    save(two[0], path)
    save(two[1], newer)
    real_open, real_os_open = builtins.open, os.open
    replaced = []

    def replace_after(opened):
        if not replaced:
            replaced.append(True)
            os.replace(newer, path)
        return opened

    def spy_open(file, *args, **kwargs):
        opened = real_open(file, *args, **kwargs)
        return replace_after(opened) if os.fspath(file) == path else opened

    def spy_os_open(file, *args, **kwargs):
        opened = real_os_open(file, *args, **kwargs)
        return replace_after(opened) if os.fspath(file) == path else opened

    mp = pytest.MonkeyPatch()
    mp.setattr(builtins, "open", spy_open)
    mp.setattr(os, "open", spy_os_open)
    try:
        loaded = load(path)
    finally:
        mp.undo()
    assert replaced
    np.testing.assert_array_equal(loaded.predict_proba(X), two[0].predict_proba(X))
    np.testing.assert_array_equal(load(path).predict_proba(X), two[1].predict_proba(X))


def test_a_conformal_file_written_by_save_carries_a_digest(data, tmp_path):
    X, y = data
    model = SparseConformalClassifier(SparsemaxClassifier(random_state=0)).fit(X, y)
    path = tmp_path / "c.safetensors"
    save(model, path)
    name = next(iter(read_saved(path)[1]))
    _flip(path, _offset(path, name))
    with pytest.raises(ValueError, match="do not match the digest"):
        load(path)
