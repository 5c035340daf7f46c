"""The L-BFGS optimizer of the linear estimators (sk_entmax._engine.lbfgs), against closed forms,
scipy, and the first fit in a fresh process."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from scipy.optimize import minimize, rosen, rosen_der

from sk_entmax._engine.lbfgs import Lbfgs


def _run(objective, x0, **settings):
    """Minimize ``objective`` (a torch function of one float64 vector) from ``x0``."""
    x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    optimizer = Lbfgs([x], **settings)
    values = []

    def closure():
        optimizer.zero_grad()
        value = objective(x)
        value.backward()
        values.append(float(value.detach()))
        return value

    optimizer.step(closure)
    return x.detach().numpy(), optimizer, values


def test_a_convex_quadratic_reaches_its_closed_form_minimum():
    rng = np.random.default_rng(0)
    m = rng.normal(size=(20, 20))
    a = torch.tensor(m @ m.T + 20 * np.eye(20))
    b = torch.tensor(rng.normal(size=20))
    x, optimizer, _ = _run(
        lambda x: 0.5 * x @ a @ x - b @ x,
        np.zeros(20),
        max_iter=100,
        tolerance_grad=1e-10,
        tolerance_change=0.0,
    )
    # the run also stops once f no longer changes in float64 (tolerance_change=0), which
    # bounds |x - x*| by about sqrt(2 eps |f*| / lambda_min) = 3e-9 here, not by the gradient
    # tolerance: where it stops depends on how the host's dot products round (1.4e-9 on one
    # Xeon host, within 1e-9 on others)
    np.testing.assert_allclose(x, np.linalg.solve(a.numpy(), b.numpy()), rtol=0, atol=1e-8)
    assert 0 < optimizer.state["n_iter"] < 100


def test_rosenbrock_reaches_the_minimum_scipy_reaches():
    x0 = np.array([-1.2, 1.0, -0.5, 0.8])
    x, optimizer, values = _run(
        lambda x: (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum(),
        x0,
        max_iter=500,
        max_eval=1000,
        tolerance_grad=1e-9,
        tolerance_change=1e-15,
    )
    reference = minimize(rosen, x0, jac=rosen_der, method="L-BFGS-B", options={"gtol": 1e-9})
    np.testing.assert_allclose(x, np.ones(4), atol=1e-6)  # the closed-form minimizer
    np.testing.assert_allclose(x, reference.x, atol=1e-6)
    assert optimizer.state["func_evals"] == len(values)


def test_accepted_points_decrease_the_objective_and_budgets_hold():
    x0 = np.array([-1.2, 1.0])
    seen = []

    def objective(x):
        value = 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2
        seen.append(x.detach().clone())
        return value

    x, optimizer, values = _run(objective, x0, max_iter=7, max_eval=30)
    assert optimizer.state["n_iter"] <= 7
    assert optimizer.state["func_evals"] <= 30
    # the parameters end on a point that was evaluated, below the start
    ended = [i for i, point in enumerate(seen) if np.array_equal(point.numpy(), x)]
    assert ended and values[ended[-1]] < values[0]


def test_a_started_minimum_stops_at_once():
    x, optimizer, _ = _run(lambda x: (x**2).sum(), np.zeros(3))
    assert optimizer.state == {"n_iter": 0, "func_evals": 1}
    np.testing.assert_array_equal(x, np.zeros(3))


def test_settings_are_checked():
    x = torch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="line_search_fn"):
        Lbfgs([x], line_search_fn=None)
    with pytest.raises(ValueError, match="one parameter group"):
        Lbfgs([{"params": [x]}, {"params": [torch.zeros(1, requires_grad=True)]}])


def test_state_round_trips_and_the_optimizer_pickles():
    _, optimizer, _ = _run(lambda x: ((x - 3) ** 2).sum(), np.zeros(2))
    state = optimizer.state_dict()
    copy = pickle.loads(pickle.dumps(optimizer))
    assert copy.state_dict() == state
    other = Lbfgs([torch.zeros(2, requires_grad=True)])
    other.load_state_dict(state)
    assert other.state == optimizer.state


def test_the_first_fit_imports_neither_torch_compiler_nor_sympy():
    """Building a torch.optim optimizer imports torch._dynamo, and autograd's shape check
    of a grad_outputs tensor imports sympy: together about a second of a fresh process's
    first fit (issue 27.5). The default linear fit goes through neither."""
    code = (
        "import sys\n"
        "from sklearn.datasets import load_iris\n"
        "from sk_entmax import EntmaxClassifier, SparsemaxClassifier\n"
        "X, y = load_iris(return_X_y=True)\n"
        "SparsemaxClassifier().fit(X, y).predict_proba(X)\n"
        "EntmaxClassifier(learn_alpha=True).fit(X, y)\n"
        "print(sorted(m for m in ('torch._dynamo', 'sympy') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stderr
