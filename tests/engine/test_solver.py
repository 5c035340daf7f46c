"""The linear estimators' full-batch solver, regularisation, linear-model API and threads.

Independent truth: scikit-learn's LogisticRegression, which minimises the same objective at
alpha = 1, and closed-form facts of the objective (its gradient vanishes at the optimum).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_iris,
    load_wine,
    make_classification,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier
from sk_entmax._engine.lbfgs import Lbfgs


def _scaled(load):
    X, y = load(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.mark.parametrize("load", [load_iris, load_wine, load_digits])
@pytest.mark.parametrize("C", [1.0, 0.1])
def test_alpha_1_is_logistic_regression(load, C):
    X, y = _scaled(load)
    ref = LogisticRegression(C=C, tol=1e-10, max_iter=10_000).fit(X, y)
    ours = EntmaxClassifier(alpha=1, C=C, tol=1e-10, max_iter=10_000).fit(X, y)
    scale = np.abs(ref.coef_).max()
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=0, atol=1e-4 * scale)
    np.testing.assert_allclose(
        ours.intercept_, ref.intercept_, rtol=0, atol=1e-4 * max(np.abs(ref.intercept_).max(), 1)
    )
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-5)


def test_binary_alpha_1_is_logistic_regression_at_twice_C():
    """Two-class multinomial weights (W0, W1) are penalised as ||W1 - W0||^2 / 2 at the
    optimum, so the model is binomial logistic regression at 2 C; coef_ is W1 - W0."""
    X, y = load_iris(return_X_y=True)
    X, y = StandardScaler().fit_transform(X[y > 0]), y[y > 0]
    ref = LogisticRegression(C=2.0, tol=1e-10, max_iter=10_000).fit(X, y)
    ours = EntmaxClassifier(alpha=1, C=1.0, tol=1e-10, max_iter=10_000).fit(X, y)
    assert ours.coef_.shape == (1, 4) and ours.intercept_.shape == (1,)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-4 * np.abs(ref.coef_).max())
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=1e-3)


@pytest.mark.parametrize("alpha", [1.25, 1.5, 2.0])
def test_lbfgs_reaches_a_stationary_point(alpha):
    """At the optimum the objective's gradient is 0: W (P - Y)^T-terms balance W / C."""
    X, y = _scaled(load_wine)
    clf = EntmaxClassifier(alpha=alpha, C=0.5, tol=1e-8, max_iter=1000).fit(X, y)
    net = clf.net_
    net.module_.zero_grad()
    net.objective({"X": X}, y, backward=True)
    grads = torch.cat([p.grad.ravel() for p in net.module_.parameters()])
    assert float(grads.abs().max()) <= 1e-7


def test_max_iter_warns_and_counts_iterations():
    X, y = _scaled(load_digits)
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        clf = EntmaxClassifier(max_iter=3).fit(X, y)
    assert clf.n_iter_ == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = EntmaxClassifier().fit(*_scaled(load_iris))
    assert 1 <= clf.n_iter_ < 100


def test_lbfgs_fit_does_not_depend_on_random_state():
    X, y = _scaled(load_wine)
    a = EntmaxClassifier(random_state=0).fit(X, y).predict_proba(X)
    b = EntmaxClassifier(random_state=1).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)


def test_C_controls_the_penalty():
    X, y = _scaled(load_wine)
    norms = [np.linalg.norm(EntmaxClassifier(C=C).fit(X, y).coef_) for C in (0.01, 0.1, 1.0)]
    assert norms[0] < norms[1] < norms[2]


@pytest.mark.parametrize(
    "params",
    [
        {"C": 0},
        {"C": -1.0},
        {"tol": -1e-4},
        {"max_iter": 0},
        {"solver": "sgd"},
        {"n_jobs": 0},
        {"warm_start": "yes"},
    ],
)
def test_bad_solver_parameters_name_themselves(params):
    name = next(iter(params))
    with pytest.raises(ValueError, match=name):
        EntmaxClassifier(**params).fit(*_scaled(load_iris))


def test_early_stopping_needs_adam():
    with pytest.raises(ValueError, match="solver='adam'"):
        EntmaxClassifier(early_stopping=True).fit(*_scaled(load_iris))


def test_auto_solver_is_lbfgs_for_the_linear_model_and_adam_with_hidden_layers():
    X, y = _scaled(load_iris)
    linear = EntmaxClassifier().fit(X, y)
    hidden = EntmaxClassifier(hidden_layer_sizes=(8,), max_epochs=3, random_state=0).fit(X, y)
    assert isinstance(linear.net_.optimizer_, Lbfgs)
    assert isinstance(hidden.net_.optimizer_, torch.optim.Adam)
    with pytest.raises(AttributeError, match="linear model only"):
        hidden.coef_  # noqa: B018


@pytest.mark.parametrize("solver", ["lbfgs", "adam"])
def test_learn_alpha_moves_alpha_with_both_solvers(solver):
    X, y = _scaled(load_wine)
    clf = EntmaxClassifier(
        alpha=1.5, learn_alpha=True, solver=solver, max_epochs=30, lr=0.05, random_state=0
    ).fit(X, y)
    assert clf.alpha_ != pytest.approx(1.5, abs=1e-3)


@pytest.mark.parametrize("load", [load_iris, load_wine, load_breast_cancer, load_digits])
def test_learned_alpha_stays_in_its_range_and_the_fit_converges(load):
    # issue 27.2: learn_alpha ran away (alpha_ 5.9 to 16.4 on these sets) and L-BFGS never
    # converged; the learned alpha is now in (1, alpha_max) by construction
    X, y = _scaled(load)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = EntmaxClassifier(learn_alpha=True).fit(X, y)
    assert 1.0 < clf.alpha_ < 2.0
    assert clf.n_iter_ < clf.max_iter


def test_alpha_max_widens_the_learned_range():
    X, y = _scaled(load_iris)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = EntmaxClassifier(learn_alpha=True, alpha_max=4.0).fit(X, y)
    assert 1.0 < clf.alpha_ < 4.0
    assert clf.net_.module_.head.alpha_map.alpha_max == 4.0
    with pytest.raises(ValueError, match="alpha_max"):
        EntmaxClassifier(learn_alpha=True, alpha_max=1.0).fit(X, y)


# --------------------------------------------------------------------------- linear model API


def test_coef_and_decision_function_give_predict_proba():
    from sk_entmax.entmax import entmax15

    X, y = _scaled(load_wine)
    clf = EntmaxClassifier().fit(X, y)
    assert clf.coef_.shape == (3, X.shape[1]) and clf.intercept_.shape == (3,)
    scores = clf.decision_function(X)
    np.testing.assert_allclose(scores, X @ clf.coef_.T + clf.intercept_, rtol=1e-9, atol=1e-9)
    proba = entmax15(torch.from_numpy(scores), dim=-1).numpy()
    np.testing.assert_allclose(clf.predict_proba(X), proba, atol=1e-12)


def test_cross_val_predict_decision_function():
    X, y = _scaled(load_iris)
    scores = cross_val_predict(EntmaxClassifier(), X, y, cv=3, method="decision_function")
    assert scores.shape == (150, 3) and np.isfinite(scores).all()


def test_binary_decision_function_is_one_dimensional():
    X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    clf = SparsemaxClassifier().fit(X, y)
    scores = clf.decision_function(X)
    assert scores.shape == (200,)
    np.testing.assert_array_equal(clf.predict(X), (scores > 0).astype(int))


def test_warm_start_starts_from_the_previous_coefficients():
    X, y = _scaled(load_digits)
    cold = EntmaxClassifier(tol=1e-6, max_iter=500).fit(X, y)
    warm = EntmaxClassifier(tol=1e-6, max_iter=500, warm_start=True).fit(X, y)
    first = warm.n_iter_
    warm.fit(X, y)  # already at the optimum: it stops at once
    assert warm.n_iter_ < first / 5
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-3 * np.abs(cold.coef_).max())
    with pytest.raises(ValueError, match="warm_start"):
        warm.fit(X[:, :10], y)


def test_partial_fit_on_streamed_chunks_approaches_fit():
    X, y = make_classification(
        n_samples=3000, n_features=10, n_informative=6, n_classes=3, random_state=0
    )
    X = StandardScaler().fit_transform(X)
    full = EntmaxClassifier().fit(X, y)
    stream = EntmaxClassifier(random_state=0, lr=0.01)
    with pytest.raises(
        ValueError,
        match=r"'classes' parameter of EntmaxClassifier\.partial_fit must be given on the first",
    ):
        EntmaxClassifier().partial_fit(X[:100], y[:100])
    for epoch in range(5):
        for chunk in np.array_split(np.arange(len(X)), 6):
            stream.partial_fit(X[chunk], y[chunk], classes=np.unique(y) if epoch == 0 else None)
    assert stream.n_iter_ == 30
    assert abs(stream.score(X, y) - full.score(X, y)) < 0.02
    with pytest.raises(ValueError, match="not in classes"):
        stream.partial_fit(X[:5], np.full(5, 7))


def test_partial_fit_continues_a_fitted_model():
    X, y = _scaled(load_wine)
    clf = EntmaxClassifier().fit(X, y)
    before = clf.coef_.copy()
    clf.partial_fit(X, y)
    assert isinstance(clf.net_.optimizer_, torch.optim.Adam)
    assert np.abs(clf.coef_ - before).max() < 0.2 * np.abs(before).max()


# --------------------------------------------------------------------------- threads


class _Boom(RuntimeError):
    pass


@pytest.mark.parametrize(
    "make",
    [
        lambda: EntmaxClassifier(n_jobs=1),
        lambda: EntmaxClassifier(n_jobs=2, solver="adam", max_epochs=2, random_state=0),
        lambda: TabNetEntmaxClassifier(n_jobs=1, max_epochs=2, random_state=0),
    ],
)
def test_thread_setting_is_restored_after_fit_predict_and_errors(make, monkeypatch):
    X, y = _scaled(load_iris)
    before = torch.get_num_threads()
    seen = []
    clf = make()
    original = type(clf)._after_fit

    def spy(self, X):
        seen.append(torch.get_num_threads())
        return original(self, X)

    monkeypatch.setattr(type(clf), "_after_fit", spy)
    clf.fit(X, y)
    assert torch.get_num_threads() == before
    clf.predict_proba(X)
    assert torch.get_num_threads() == before

    def boom(self, *args, **kwargs):
        seen.append(torch.get_num_threads())
        raise _Boom

    monkeypatch.setattr(type(clf), "_full_batch_start", boom)
    monkeypatch.setattr(type(clf.net_), "partial_fit", boom)
    with pytest.raises(_Boom):
        clf.fit(X, y)
    assert torch.get_num_threads() == before
    from sk_entmax._engine.threads import TRAINING_THREADS

    # every training step runs on one torch thread, whatever n_jobs is (the model is then
    # the same at every n_jobs); L-BFGS spreads its blocks over n_jobs one-thread workers
    assert TRAINING_THREADS == 1
    assert set(seen) == {TRAINING_THREADS}


def test_default_threads_are_one_for_small_data(monkeypatch):
    from sk_entmax._engine import threads as _threads
    from sk_entmax._engine.threads import resolve_n_jobs

    monkeypatch.setattr(_threads, "available_cores", lambda: 4)
    assert resolve_n_jobs(None, work=1e6) == 1
    assert resolve_n_jobs(3, work=1e6) == 3
    assert resolve_n_jobs(-1, work=1e6) >= 1


def test_default_threads_never_read_the_machine_load(monkeypatch):
    # issue 27.1: n_jobs=None depends on the task's size and the cores alone, so a busy
    # machine cannot change the model (before, /proc/loadavg was sampled: this failed)
    import builtins

    from sk_entmax._engine import threads as _threads

    real_open = builtins.open

    def no_proc(path, *args, **kwargs):
        assert not str(path).startswith("/proc"), f"read {path}"
        return real_open(path, *args, **kwargs)

    def no_loadavg():
        raise AssertionError("read the load average")

    monkeypatch.setattr(builtins, "open", no_proc)
    monkeypatch.setattr(_threads.os, "getloadavg", no_loadavg)
    monkeypatch.setattr(_threads, "available_cores", lambda: 4)
    expected = {1e6: 1, 1.5e7: 1, 2e7: 2, 3.5e7: 3, 1e9: 4, 1e12: 4}
    for work, threads in expected.items():
        assert _threads.resolve_n_jobs(None, work=work) == threads


@pytest.mark.parametrize("learn_alpha", [False, True])
def test_lbfgs_fit_is_bit_identical_at_every_thread_count(learn_alpha):
    # issue 27.1: the objective's blocks are fixed by the data and added in order, each
    # evaluated with one torch thread, so n_jobs changes the speed, never the model (blocks
    # of the default size: a product over that many rows is where torch splits its sums)
    from sk_entmax._engine import solver as _solver

    n = 2 * _solver._FIT_ROWS + 500  # three blocks
    X, y = make_classification(
        n_samples=n, n_features=8, n_informative=5, n_classes=3, random_state=0
    )
    X[:, 0] *= 1e3  # scores of very different scales: rounding differs at the smallest change
    states = []
    for n_jobs in (1, 2, 4):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the cap at the cores; convergence
            clf = EntmaxClassifier(
                alpha=1.3, n_jobs=n_jobs, max_iter=15, learn_alpha=learn_alpha
            ).fit(X, y)
        states.append({k: v.clone() for k, v in clf.net_.module_.state_dict().items()})
    for state in states[1:]:
        assert state.keys() == states[0].keys()
        for key in state:
            assert torch.equal(state[key], states[0][key]), key


def test_pipeline_with_lbfgs_default():
    X, y = load_iris(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), EntmaxClassifier()).fit(X, y)
    assert pipe.score(X, y) > 0.9


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_lbfgs_on_cuda_matches_cpu():
    X, y = _scaled(load_wine)
    cpu = EntmaxClassifier(tol=1e-8, max_iter=500).fit(X, y)
    gpu = EntmaxClassifier(tol=1e-8, max_iter=500, device="cuda").fit(X, y)
    assert next(gpu.net_.module_.parameters()).is_cuda
    np.testing.assert_allclose(gpu.coef_, cpu.coef_, atol=1e-4 * np.abs(cpu.coef_).max())
    np.testing.assert_allclose(gpu.predict_proba(X), cpu.predict_proba(X), atol=1e-5)


@pytest.mark.parametrize("learn_alpha", [False, True])
def test_objective_in_blocks_equals_one_pass(learn_alpha):
    X, y = _scaled(load_wine)
    weight = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    clf = EntmaxClassifier(alpha=1.5, learn_alpha=learn_alpha, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y, sample_weight=weight)
    net, data = clf.net_, {"X": X, "sample_weight": weight}

    def value_and_grads(**blocks):
        net.optimizer_.zero_grad()
        value = net.objective(data, y, backward=True, **blocks)
        return value, [p.grad.clone() for p in net.module_.parameters()]

    one_value, one_grads = value_and_grads()
    value, grads = value_and_grads(max_rows=7)  # 178 rows: 26 blocks, the last short
    torch.testing.assert_close(value, one_value, rtol=1e-12, atol=0)
    for grad, one in zip(grads, one_grads, strict=True):
        torch.testing.assert_close(grad, one, rtol=1e-10, atol=1e-14)


def test_one_partial_fit_call_learns_its_chunk():
    # issue 27.3: a chunk of at most 200 rows was one batch, one Adam step: one call on wine
    # reached 0.028; the mean over seeds must now reach 0.9 (SGDClassifier: 0.99)
    X, y = _scaled(load_wine)
    scores = [
        EntmaxClassifier(random_state=seed).partial_fit(X, y, classes=np.unique(y)).score(X, y)
        for seed in range(3)
    ]
    assert np.mean(scores) >= 0.9, scores


def test_the_objective_blocks_shrink_with_the_classes(monkeypatch):
    """(issue 58, point 11) Rows times classes per block stay bounded: 300 rows of 60
    classes with a bound of 600 scores are evaluated 10 rows at a time, to the value of
    one block."""
    from sk_entmax._engine import solver as _solver

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 4)), np.arange(300) % 60
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        net = SparsemaxClassifier(max_iter=2).fit(X, y).net_
    assert _solver._block_rows(60) == _solver._FIT_ROWS > 300  # the default: one block
    assert _solver._block_rows(60, max_scores=600) == 10
    assert net._block_rows(max_scores=600) == 10
    seen = []
    real = _solver.float64_rows
    monkeypatch.setattr(
        _solver,
        "float64_rows",
        lambda data, start, stop, *a, **k: (
            seen.append(stop - start) or real(data, start, stop, *a, **k)
        ),
    )
    one = net.objective({"X": X}, y, backward=False)
    assert seen == [300]
    seen.clear()
    value = net.objective({"X": X}, y, backward=False, max_scores=600)
    assert seen == [10] * 30
    torch.testing.assert_close(value, one, rtol=1e-12, atol=0)
