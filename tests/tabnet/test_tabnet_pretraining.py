"""TabNetPretrainer and the supervised TabNets' ``pretrainer``: scikit-learn's checks, what the
encoder can see of a hidden feature, which cells are reconstruction targets, the start from
the pretrained weights, clone / Pipeline / GridSearchCV, and the errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from sk_entmax import (
    InvalidParameterError,
    TabNetEntmaxClassifier,
    TabNetEntmaxRegressor,
    TabNetPretrainer,
)
from sk_entmax.nn.tabnet_pretraining import TabNetPretrainingNet
from sk_entmax.persistence import load, save

TINY = {"n_d": 4, "n_a": 4, "n_steps": 2, "n_independent": 1, "n_shared": 1, "lr": 0.05}


def _pre(**params):
    return TabNetPretrainer(**{**TINY, "random_state": 0, **params})


def _table(n: int = 200, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """Two numeric columns, one with gaps, a twin of the first, and a text column; a
    binary target."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n)
    b = rng.standard_normal(n)
    b[rng.random(n) < 0.2] = np.nan
    X = pd.DataFrame(
        {
            "a": a,
            "b": b,
            "twin": a + 0.01 * rng.standard_normal(n),
            "colour": pd.Series(rng.choice(["red", "green", "blue"], n), dtype="category"),
        }
    )
    return X, (a > 0).astype(int)


# Two epochs keep the checks fast; a mini-batch transformer fails the sample-weight check
# only through its estimators (it takes no sample_weight), so nothing is expected to fail
@parametrize_with_checks([_pre(max_epochs=2)], expected_failed_checks=lambda e: {})
def test_sklearn_compatible_pretrainer(estimator, check):
    check(estimator)


# ------------------------------------------------------------------ the network


def _net(**params) -> TabNetPretrainingNet:
    torch.manual_seed(0)
    return TabNetPretrainingNet(
        n_features=4,
        n_steps=2,
        cat_idxs=[3],
        cat_dims=[4],
        missing_idxs=[1],
        missing_fill=[0.0, 0.5, 0.0, 0.0],
        **params,
    ).double()


def _rows(n: int = 64) -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    X = torch.randn(n, 4, generator=g, dtype=torch.float64)
    X[:, 3] = torch.randint(0, 4, (n,), generator=g).double()
    X[::5, 1] = float("nan")
    return X


def test_the_encoder_cannot_see_a_hidden_feature():
    """In evaluation mode (the same hidden features at every call) a row's reconstruction
    is the same whatever the values of its hidden features, a missing value included."""
    net = _net().eval()
    X = _rows()
    with torch.no_grad():
        reconstruction, _, hidden = net(X)
        assert hidden.any() and (~hidden).any()
        changed = X.clone()
        noise = torch.randn(X.shape, generator=torch.Generator().manual_seed(2), dtype=X.dtype)
        changed[:, :3] = torch.where(hidden[:, :3], 100.0 * noise[:, :3], X[:, :3])
        changed[:, 1] = torch.where(hidden[:, 1], float("nan"), changed[:, 1])
        changed[:, 3] = torch.where(hidden[:, 3], 3 - X[:, 3], X[:, 3])
        again, _, hidden_again = net(changed)
    assert torch.equal(hidden, hidden_again)
    assert torch.equal(reconstruction, again)
    # and a visible feature does move it: the test can fail
    visible = X.clone()
    visible[:, 0] = torch.where(hidden[:, 0], X[:, 0], X[:, 0] + 5.0)
    with torch.no_grad():
        assert not torch.equal(net(visible)[0], reconstruction)


def test_only_hidden_observed_cells_are_reconstruction_targets():
    """The loss's gradient with respect to the reconstruction is nonzero exactly at the
    hidden cells that are not missing (a NaN, or the categorical code 0)."""
    net = _net(lambda_sparse=0.0).train()
    X = _rows()
    X[::7, 3] = 0.0  # "unknown or missing" category
    reconstruction, entropy, hidden = net(X)
    reconstruction.retain_grad()
    net.loss((reconstruction, entropy, hidden), X).sum().backward()
    grad = reconstruction.grad
    scored = hidden & ~torch.isnan(X)
    scored[:, 3] &= X[:, 3] > 0
    continuous = grad[:, :3] != 0
    assert torch.equal(continuous, scored[:, :3])
    categorical = (grad[:, 3:] != 0).any(dim=1)
    assert torch.equal(categorical, scored[:, 3])
    assert scored[:, 1].any() and (hidden[:, 1] & torch.isnan(X[:, 1])).any()


def test_the_numeric_target_is_standardized():
    """A row with one hidden numeric cell costs the squared error of the standardized value,
    so predicting the mean costs 1 for a value one standard deviation away."""
    net = TabNetPretrainingNet(
        n_features=2, n_steps=1, target_mean=[10.0, 0.0], target_scale=[2.0, 1.0]
    ).double()
    reconstruction = torch.zeros(1, 2, dtype=torch.float64)
    hidden = torch.tensor([[True, False]])
    X = torch.tensor([[12.0, 5.0]], dtype=torch.float64)
    loss = net.loss((reconstruction, torch.zeros(1, dtype=torch.float64), hidden), X)
    assert loss.item() == pytest.approx(1.0)


def test_the_hidden_features_are_drawn_from_their_own_generator():
    net = _net().train()
    X = _rows(512)
    before = torch.get_rng_state()
    first = net(X)[2]
    second = net(X)[2]
    assert torch.equal(torch.get_rng_state(), before)
    assert not torch.equal(first, second)  # a new draw at each training call
    share = first.double().mean().item()
    assert 0.15 < share < 0.25  # pretraining_ratio=0.2 of 2,048 draws
    net.eval()
    assert torch.equal(net(X)[2], net(X)[2])


# ------------------------------------------------------------------ the estimator


def test_pretraining_learns_to_reconstruct():
    """On a table with a twin column, the reconstruction loss falls well below the cost of
    predicting the mean (about 1 for a hidden numeric cell)."""
    X, _ = _table(400)
    pre = _pre(max_epochs=40, lambda_sparse=0.0, batch_size=400).fit(X)
    losses = pre.net_.history[:, "train_loss"]
    assert losses[-1] < 0.5 and losses[-1] < 0.6 * losses[0]
    assert pre.transform(X).shape == (400, 4)
    assert list(pre.missing_features_) == ["b"]
    assert pre.feature_importances_.shape == (4,)


def test_transform_in_a_pipeline_and_feature_names():
    X, y = _table()
    pipe = make_pipeline(_pre(max_epochs=2), LogisticRegression()).fit(X, y)
    assert pipe.predict(X).shape == (200,)
    names = pipe[0].get_feature_names_out()
    assert list(names) == [f"tabnetpretrainer{i}" for i in range(4)]


@pytest.mark.parametrize("cls", [TabNetEntmaxClassifier, TabNetEntmaxRegressor])
def test_the_supervised_fit_starts_from_the_pretrained_encoder(cls):
    """With a learning rate too small to move them, the fitted encoder's weights are the
    pretrainer's (and not without a pretrainer), its output layer not; the estimator takes
    the pretrainer's column encoding."""
    X, y = _table()
    pre = _pre(max_epochs=3).fit(X)
    params = {**TINY, "lr": 1e-12, "max_epochs": 1, "random_state": 1}
    model = cls(**params, pretrainer=FrozenEstimator(pre)).fit(X.iloc[:40], y[:40])
    scratch = cls(**params).fit(X.iloc[:40], y[:40])
    theirs = dict(pre.net_.module_.tabnet.named_parameters())
    for name, ours in model.net_.module_.tabnet.named_parameters():
        if name.startswith("final_mapping"):
            continue
        if name == "rest_logits":  # the later steps' rests are the task's own
            assert ours.abs().max() < 1e-8 and name not in theirs
            continue
        if name == "first_mask_logits":  # the faithful model chooses its columns afresh
            assert (ours == 0).all() and (theirs[name] != 0).any()
            continue
        torch.testing.assert_close(ours, theirs[name], atol=1e-8, rtol=0)
    first = scratch.net_.module_.tabnet.shared[0].weight
    assert not torch.allclose(first, theirs["shared.0.weight"])
    assert model.categories_[0].tolist() == pre.categories_[0].tolist()
    # the 40 labelled rows have gaps in b too; what counts is that the encoding is the same
    assert list(model.missing_features_) == list(pre.missing_features_)


def test_a_frozen_pretrainer_survives_clone_and_grid_search():
    X, y = _table()
    pre = _pre(max_epochs=2).fit(X)
    frozen, net = FrozenEstimator(pre), pre.net_
    clf = TabNetEntmaxClassifier(**TINY, max_epochs=2, random_state=0, pretrainer=frozen)
    assert clone(clf).pretrainer is frozen
    search = GridSearchCV(clf, {"gamma": [1.0, 1.5]}, cv=2).fit(X, y)
    assert search.best_estimator_.pretrainer.estimator is pre
    assert pre.net_ is net  # nothing refitted it


def test_an_unfitted_pretrainer_is_fitted_as_a_copy_inside_fit():
    X, y = _table()
    spec = TabNetPretrainer(**TINY, max_epochs=2)
    clf = TabNetEntmaxClassifier(**TINY, max_epochs=2, random_state=3, pretrainer=spec)
    search = GridSearchCV(clf, {"pretrainer__pretraining_ratio": [0.2, 0.5]}, cv=2).fit(X, y)
    assert not hasattr(spec, "net_")  # the parameter itself is never fitted
    assert search.best_params_["pretrainer__pretraining_ratio"] in (0.2, 0.5)
    # a copy whose random_state is None takes the estimator's: the fit is reproducible
    a = clone(clf).fit(X, y).predict_proba(X)
    b = clone(clf).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)


def test_pretraining_leaves_the_global_generator_alone():
    X, _ = _table()
    before = torch.get_rng_state()
    a = _pre(max_epochs=2).fit(X).transform(X)
    assert torch.equal(torch.get_rng_state(), before)
    np.testing.assert_array_equal(a, _pre(max_epochs=2).fit(X).transform(X))


def test_errors_name_the_parameter():
    X, y = _table()
    pre = _pre(max_epochs=1).fit(X)
    with pytest.raises(ValueError, match="n_d=8 differs from its pretrainer's n_d=4"):
        TabNetEntmaxClassifier(pretrainer=FrozenEstimator(pre), max_epochs=1).fit(X, y)
    with pytest.raises(InvalidParameterError, match="pretrainer"):
        TabNetEntmaxClassifier(pretrainer=LogisticRegression()).fit(X, y)
    with pytest.raises(InvalidParameterError, match="fit the pretrainer first"):
        TabNetEntmaxClassifier(**TINY, pretrainer=FrozenEstimator(_pre())).fit(X, y)
    with pytest.raises(ValueError, match="same columns"):
        TabNetEntmaxClassifier(**TINY, pretrainer=FrozenEstimator(pre)).fit(X.iloc[:, :3], y)
    with pytest.raises(InvalidParameterError, match="pretraining_ratio"):
        _pre(pretraining_ratio=1.0).fit(X)
    with pytest.raises(InvalidParameterError, match="n_independent_decoder"):
        _pre(n_shared_decoder=0, n_independent_decoder=0).fit(X)


def test_save_stores_the_fine_tuned_network_and_the_pretrainer(tmp_path):
    """The file holds the fine-tuned network and, as a nested entry, the frozen pretrainer
    (tests/test_persistence_pretrainer.py checks both bit for bit); no warning."""
    X, y = _table()
    pre = _pre(max_epochs=2).fit(X)
    clf = TabNetEntmaxClassifier(**TINY, max_epochs=2, random_state=0)
    clf.set_params(pretrainer=FrozenEstimator(pre)).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        save(clf, tmp_path / "m.safetensors")
        back = load(tmp_path / "m.safetensors")
    assert isinstance(back.pretrainer, FrozenEstimator)
    np.testing.assert_array_equal(back.pretrainer.transform(X), pre.transform(X))
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
