"""Parameters are read once, through the constraint table (issue 25, point 3).

A method after fit reads only the parameters that apply to it (``n_jobs``), checked as
``fit`` checks them, so an invalid value set after fit gets the message ``fit`` gives for it.
What the fitted network is (its sizes) comes from the network, not from parameters that may
have changed since: those count at the next fit.
"""

import copy
import re

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris

from sk_entmax import (
    EntmaxClassifier,
    InvalidParameterError,
    SparsemaxClassifier,
    TabNetEntmaxClassifier,
    _base,
)

_IRIS_X, _IRIS_Y = load_iris(return_X_y=True)
_ROWS = np.r_[0:10, 50:60, 100:110]  # 10 rows of each class
X = ((_IRIS_X - _IRIS_X.mean(0)) / _IRIS_X.std(0))[_ROWS]
Y = _IRIS_Y[_ROWS]

ESTIMATORS = {
    "entmax": EntmaxClassifier(solver="adam", max_epochs=1, random_state=0),
    "sparsemax": SparsemaxClassifier(solver="adam", max_epochs=1, random_state=0),
    "entmax_hidden": EntmaxClassifier(hidden_layer_sizes=(3,), max_epochs=1, random_state=0),
    "tabnet": TabNetEntmaxClassifier(n_d=2, n_a=2, n_steps=1, max_epochs=1, random_state=0),
}

#: the public methods after fit that read n_jobs, per estimator
METHODS = {
    "linear": {
        "predict_proba": lambda est: est.predict_proba(X),
        "predict": lambda est: est.predict(X),
        "decision_function": lambda est: est.decision_function(X),
        "score": lambda est: est.score(X, Y),
        "partial_fit": lambda est: est.partial_fit(X, Y),
    },
    "tabnet": {
        "predict_proba": lambda est: est.predict_proba(X),
        "predict": lambda est: est.predict(X),
        "decision_function": lambda est: est.decision_function(X),
        "explain": lambda est: est.explain(X),
    },
}


@pytest.fixture(scope="module")
def fitted():
    return {name: clone(est).fit(X, Y) for name, est in ESTIMATORS.items()}


def _fit_error(estimator, **params) -> str:
    with pytest.raises(ValueError) as error:
        clone(estimator).set_params(**params).fit(X, Y)
    return str(error.value)


@pytest.mark.parametrize("name", ["entmax", "sparsemax", "tabnet"])
@pytest.mark.parametrize("n_jobs", [0, "two", -5, 2.5])
def test_n_jobs_set_after_fit_gets_fits_message(fitted, name, n_jobs):
    expected = _fit_error(ESTIMATORS[name], n_jobs=n_jobs)
    owner = type(ESTIMATORS[name]).__name__
    assert expected == (
        f"The 'n_jobs' parameter of {owner} must be one of None, -1 or an integer >= 1. "
        f"Got {n_jobs!r} instead."
    )
    estimator = copy.deepcopy(fitted[name]).set_params(n_jobs=n_jobs)
    for method, call in METHODS["tabnet" if name == "tabnet" else "linear"].items():
        with pytest.raises(ValueError) as error:
            call(estimator)
        assert type(error.value) is InvalidParameterError, method
        assert str(error.value) == expected, method


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("entmax_hidden", {"hidden_layer_sizes": "x", "batch_size": 0}),
        (
            "tabnet",
            {
                "n_d": "x",
                "n_a": 0,
                "n_steps": 0,
                "n_independent": 1.5,
                "batch_size": 0,
                "virtual_batch_size": 1,
            },
        ),
    ],
)
def test_sizes_set_after_fit_count_at_the_next_fit_only(fitted, name, params):
    estimator = copy.deepcopy(fitted[name])
    proba = estimator.predict_proba(X)
    vars(estimator).update(params)  # the values back, for predict_proba
    # the fitted network predicts as before; the parameters describe the next fit
    np.testing.assert_array_equal(estimator.predict_proba(X), proba)
    np.testing.assert_array_equal(estimator.predict(X), fitted[name].predict(X))
    if name == "tabnet":
        np.testing.assert_array_equal(estimator.explain(X)[0], fitted[name].explain(X)[0])
    # while the next fit rejects them with the package's message
    assert re.match(r"The '(\w+)' parameter", _fit_error(ESTIMATORS[name], **params))[1] in params


@pytest.mark.parametrize(
    ("name", "size"), [("entmax_hidden", "hidden_layer_sizes"), ("tabnet", "n_d")]
)
def test_predict_threads_follow_the_fitted_network(fitted, monkeypatch, name, size):
    works = []
    resolve = _base.resolve_n_jobs
    monkeypatch.setattr(
        _base, "resolve_n_jobs", lambda n, work: works.append(work) or resolve(n, work)
    )
    estimator = copy.deepcopy(fitted[name])
    estimator.predict_proba(X)
    estimator.set_params(**{size: (500, 500) if size == "hidden_layer_sizes" else 500})
    estimator.predict_proba(X)
    assert len(works) == 2 and works[0] == works[1]


def test_coef_error_names_the_fitted_hidden_layers(fitted):
    estimator = copy.deepcopy(fitted["entmax_hidden"]).set_params(hidden_layer_sizes=())
    with pytest.raises(AttributeError, match=r"this one has \(3,\)"):
        getattr(estimator, "coef_")  # noqa: B009 (the property raises)


class _Unread:
    """A parameter's value that no code may use: every use raises."""

    def _used(self, *args, **kwargs):
        raise AssertionError("a parameter was read from the estimator after it was checked")

    __eq__ = __hash__ = __bool__ = __int__ = __index__ = __float__ = __str__ = _used
    __repr__ = __iter__ = __len__ = __getattr__ = __call__ = _used


@pytest.mark.parametrize("name", ["entmax", "sparsemax", "tabnet", "partial_fit"])
def test_fit_reads_each_parameter_once(monkeypatch, name):
    """(issue 61.1) Once a fit (or a partial_fit call) has checked the parameters, its steps
    and hooks read the checked values only: the estimator's own (here unusable) are never
    read again, a seed's ``random_state`` and the ``device`` included."""
    estimator = clone(ESTIMATORS["sparsemax" if name == "partial_fit" else name])
    if name == "sparsemax":
        estimator.set_params(solver="lbfgs")
    expected = clone(estimator)
    real = _base.BaseEntmaxEstimator._checked

    def checked(self, *names):
        values = real(self, *names)
        self.__dict__.update(dict.fromkeys(names, _Unread()))
        return values

    def calls(est):
        if name == "partial_fit":
            return [
                lambda: est.partial_fit(X, Y, classes=np.unique(Y)),
                lambda: est.partial_fit(X, Y),
            ]
        return [lambda: est.fit(X, Y)]

    for call in calls(expected):
        call()
    params = estimator.get_params()
    with monkeypatch.context() as m:
        m.setattr(_base.BaseEntmaxEstimator, "_checked", checked)
        for call in calls(estimator):
            vars(estimator).update(params)  # the values back, for the next call to check
            call()
    vars(estimator).update(params)
    np.testing.assert_array_equal(estimator.predict_proba(X), expected.predict_proba(X))
