"""The ``device`` parameter: "mps" where torch has it, a clear refusal elsewhere (issue 27.5)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sk_entmax import EntmaxClassifier, TabNetEntmaxClassifier
from sk_entmax._engine import device as _device

X = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)
Y = np.arange(40) % 2


def test_mps_is_accepted_where_torch_has_it(monkeypatch):
    monkeypatch.setattr(_device, "_mps_available", lambda: True)
    assert _device.resolve_device("mps") == "mps"
    assert _device.resolve_device(torch.device("mps")) == "mps"


def test_mps_where_torch_lacks_it_says_so(monkeypatch):
    monkeypatch.setattr(_device, "_mps_available", lambda: False)
    with pytest.raises(ValueError, match=r"device='mps'.*MPS .* not available"):
        EntmaxClassifier(device="mps").fit(X, Y)


def test_mps_with_lbfgs_says_why_not(monkeypatch):
    # L-BFGS computes in float64, which MPS lacks: refused before anything is built
    monkeypatch.setattr(_device, "_mps_available", lambda: True)
    with pytest.raises(ValueError, match=r"solver='adam'.*float64"):
        EntmaxClassifier(device="mps").fit(X, Y)


@pytest.mark.skipif(not _device._mps_available(), reason="needs MPS (an Apple GPU)")
@pytest.mark.parametrize(
    "make",
    [
        lambda: EntmaxClassifier(solver="adam", max_epochs=2, device="mps"),
        lambda: TabNetEntmaxClassifier(max_epochs=1, device="mps"),
    ],
)
def test_fit_and_predict_on_mps(make):
    clf = make().fit(X, Y)
    proba = clf.predict_proba(X)
    assert np.allclose(proba.sum(axis=1), 1.0, atol=1e-5)
