"""Values a model file may not hold (issue 45, point 10): load refuses a negative batch
norm running variance, which predict would otherwise blame on X."""

from __future__ import annotations

import json

import pytest
import safetensors
import safetensors.torch
from sklearn.datasets import load_iris

from sk_entmax import TabNetEntmaxClassifier
from sk_entmax.persistence import load, save


def test_a_negative_running_variance_is_refused_at_load(tmp_path):
    X, y = load_iris(return_X_y=True)
    model = TabNetEntmaxClassifier(n_d=4, n_a=4, n_steps=1, max_epochs=1, random_state=0)
    path = tmp_path / "tabnet.safetensors"
    save(model.fit(X, y), path)
    with safetensors.safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata()
        tensors = {k: handle.get_tensor(k) for k in handle.keys()}
    names = [k for k in tensors if k.endswith("running_var")]
    assert names and json.loads(metadata["sk_entmax"])["estimator"] == "TabNetEntmaxClassifier"
    tensors[names[0]][0] = -0.25
    metadata.pop("sk_entmax_sha256")  # an edit without a digest: checked structurally
    safetensors.torch.save_file(tensors, str(path), metadata=metadata)
    with pytest.raises(ValueError, match=rf"cannot load .*{names[0]}.*negative.*-0\.25"):
        load(path)
