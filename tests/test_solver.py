"""The linear estimators' full-batch solver, regularisation, linear-model API and threads.

Independent truth: scikit-learn's LogisticRegression, which minimises the same objective at
alpha = 1, and closed-form facts of the objective (its gradient vanishes at the optimum).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits, load_iris, load_wine, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier


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
    assert isinstance(linear.net_.optimizer_, torch.optim.LBFGS)
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
    with pytest.raises(ValueError, match="classes must be passed"):
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
    from sk_entmax._threads import available_cores

    assert seen[-1] == min(clf.n_jobs, available_cores())  # capped at the cores (warned)


def test_default_threads_are_one_for_small_data(monkeypatch):
    from sk_entmax import _threads
    from sk_entmax._threads import resolve_n_jobs

    monkeypatch.setattr(_threads, "available_cores", lambda: 4)
    assert resolve_n_jobs(None, work=1e6) == 1
    assert resolve_n_jobs(3, work=1e6) == 3
    assert resolve_n_jobs(-1, work=1e6) >= 1


@pytest.mark.parametrize(
    ("others", "expected"),
    [
        ([0] * 8, 4),  # no other process runs: every core is idle
        ([1] * 8, 3),  # one other task
        ([2, 1] * 4, 2),  # 1.5 others on average: 2.5 idle cores, two threads
        ([8] * 8, 1),  # more others than cores: still one thread
    ],
)
def test_default_threads_follow_other_processes_runnable_tasks(monkeypatch, others, expected):
    from sk_entmax import _threads

    counts = iter(others)
    monkeypatch.setattr(_threads, "_runnable_tasks", lambda: next(counts))
    monkeypatch.setattr(_threads, "available_cores", lambda: 4)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(_threads, "_SAMPLE_GAP_SECONDS", 0.0)
    assert _threads.resolve_n_jobs(None, work=1e9) == expected
    # a small task takes one thread without looking at the machine
    monkeypatch.setattr(_threads, "_runnable_tasks", lambda: pytest.fail("sampled"))
    assert _threads.resolve_n_jobs(None, work=1e6) == 1


def test_own_threads_are_not_counted_as_other_processes(tmp_path):
    from sk_entmax import _threads

    # a /proc where 5 tasks are runnable, 2 of them threads of this process (this one and
    # a spinning OpenMP worker); a third thread sleeps, and a thread name holds ") S"
    (tmp_path / "loadavg").write_text("0.50 0.40 0.30 5/312 4242\n")
    for tid, name, state in [(1, "python", "R"), (2, "omp) S (x", "R"), (3, "python", "S")]:
        (tmp_path / "self" / "task" / str(tid)).mkdir(parents=True)
        (tmp_path / "self" / "task" / str(tid) / "stat").write_text(
            f"{tid} ({name}) {state} 1 1 1 0 -1\n"
        )
    assert _threads._runnable_tasks(str(tmp_path)) == 3
    assert _threads._runnable_tasks(str(tmp_path / "missing")) is None


def test_idle_cores_fall_back_to_the_load_average(monkeypatch):
    from sk_entmax import _threads

    monkeypatch.setattr(_threads, "_runnable_tasks", lambda: None)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(_threads.os, "getloadavg", lambda: (1.5, 1.0, 1.0))
    assert _threads._idle_cores() == 2.5


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
def test_objective_in_blocks_equals_one_pass(monkeypatch, learn_alpha):
    from sk_entmax import _solver

    X, y = _scaled(load_wine)
    weight = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    clf = EntmaxClassifier(alpha=1.5, learn_alpha=learn_alpha, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y, sample_weight=weight)
    net, data = clf.net_, {"X": X, "sample_weight": weight}

    def value_and_grads():
        net.optimizer_.zero_grad()
        value = net.objective(data, y, backward=True)
        return value, [p.grad.clone() for p in net.module_.parameters()]

    one_value, one_grads = value_and_grads()
    monkeypatch.setattr(_solver, "_FIT_ROWS", 7)  # 178 rows: 26 blocks, the last short
    value, grads = value_and_grads()
    torch.testing.assert_close(value, one_value, rtol=1e-12, atol=0)
    for grad, one in zip(grads, one_grads, strict=True):
        torch.testing.assert_close(grad, one, rtol=1e-10, atol=1e-14)
