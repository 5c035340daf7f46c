"""One vocabulary for parameter errors (issue 31.1).

Every invalid parameter, of an estimator, the conformal wrapper, a metric, a report or a
core function, raises :class:`sk_entmax.InvalidParameterError` (a ``ValueError`` and a
``TypeError``, as scikit-learn's own is) in scikit-learn's wording: "The 'alpha' parameter of
EntmaxClassifier must be ... Got ... instead."
"""

import inspect
import re

import numpy as np
import pytest
import torch
from sklearn.datasets import load_iris

import sk_entmax
from sk_entmax import (
    EntmaxClassifier,
    InvalidParameterError,
    SparseConformalClassifier,
    SparsemaxClassifier,
    TabNetEntmaxClassifier,
)
from sk_entmax.entmax import SparsemaxLoss, entmax_bisect
from sk_entmax.entmax.constraints import REJECT
from sk_entmax.metrics import stratified_coverage, tsallis_loss

X, y = load_iris(return_X_y=True)
ESTIMATORS = [EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier]
# values tried in turn: the first one a parameter's constraint refuses is the bad value
CANDIDATES = ["not a value", -7, 0, 0.0, 2.5, None, True, 1e12]


def _sklearn_wording(name: str, owner: str) -> str:
    return (
        rf"^The '{re.escape(name)}' parameter of {re.escape(owner)} must be .+\. Got .+ instead\.$"
    )


def _bad_values(cls):
    for name, constraint in cls._constraints.items():
        for value in CANDIDATES:
            if constraint.accept(value) is REJECT:
                yield name, value
                break


@pytest.mark.parametrize(
    ("cls", "name", "value"),
    [(cls, name, value) for cls in ESTIMATORS for name, value in _bad_values(cls)],
    ids=lambda v: getattr(v, "__name__", repr(v)),
)
def test_every_parameter_of_the_table_is_refused_in_one_style(cls, name, value):
    with pytest.raises(InvalidParameterError, match=_sklearn_wording(name, cls.__name__)):
        cls(**{"max_epochs": 1, name: value}).fit(X, y)


def test_every_table_entry_has_a_bad_value_tried():
    for cls in ESTIMATORS:
        assert {name for name, _ in _bad_values(cls)} == set(cls._constraints), cls


@pytest.mark.parametrize(
    "params",
    [
        {"confidence_level": 1.5},
        {"confidence_level": []},
        {"mapping_alpha": 1.0},
        {"mapping_alpha": "x"},
        {"prefit": "yes"},
        {"class_conditional": 1},
        {"estimator": object()},
    ],
)
def test_the_conformal_wrapper_uses_its_table(params):
    (name,) = params
    with pytest.raises(
        InvalidParameterError, match=_sklearn_wording(name, "SparseConformalClassifier")
    ):
        SparseConformalClassifier(**params).fit(X, y)


def test_the_error_is_a_value_error_and_a_type_error():
    assert issubclass(InvalidParameterError, ValueError)
    assert issubclass(InvalidParameterError, TypeError)
    assert sk_entmax.InvalidParameterError is InvalidParameterError


def test_metrics_read_the_estimators_alpha_constraint():
    # the same rule and the same words as EntmaxClassifier's alpha
    with pytest.raises(InvalidParameterError) as metric:
        tsallis_loss([0, 1], [[0.5, 0.5], [0.2, 0.8]], alpha=0.5)
    with pytest.raises(InvalidParameterError) as estimator:
        EntmaxClassifier(alpha=0.5).fit(X, y)
    assert (
        str(metric.value).split(" parameter of ")[1].split(" ", 1)[1]
        == (str(estimator.value).split(" parameter of ")[1].split(" ", 1)[1])
    )
    sets = np.ones((4, 3), dtype=bool)
    with pytest.raises(InvalidParameterError, match=_sklearn_wording("by", "stratified_coverage")):
        stratified_coverage([0, 1, 2, 0], sets, by="size")


def test_core_functions_name_themselves():
    Z = torch.randn(3, 4)
    with pytest.raises(InvalidParameterError, match=r"The 'n_iter' parameter of entmax_bisect"):
        entmax_bisect(Z, 1.5, n_iter=0)
    with pytest.raises(InvalidParameterError, match=r"The 'reduction' parameter"):
        SparsemaxLoss(reduction="total")


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_estimator_parameters_are_keyword_only(cls):
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert parameters and all(p.kind is p.KEYWORD_ONLY for p in parameters)
    with pytest.raises(TypeError):
        cls(1.5)


@pytest.mark.parametrize(
    "cls",
    [*ESTIMATORS, sk_entmax.TabNetEntmaxRegressor, sk_entmax.TabNetPretrainer],
    ids=lambda c: c.__name__,
)
@pytest.mark.parametrize(
    ("name", "value"),
    [("random_state", "abc"), ("random_state", -1), ("random_state", 1.5), ("device", "gpu")],
)
def test_random_state_and_device_are_in_the_table_and_refused_in_one_style(cls, name, value):
    """issue 44: random_state once raised a plain ValueError from deep inside the fit."""
    assert name in cls._constraints
    Xf, yf = X[::8], y[::8]
    with pytest.raises(InvalidParameterError, match=_sklearn_wording(name, cls.__name__)):
        est = cls(**{"max_epochs": 1, name: value})
        est.fit(Xf) if cls is sk_entmax.TabNetPretrainer else est.fit(Xf, yf.astype(float))


@pytest.mark.parametrize("value", [None, 0, np.int64(3), 2**32 - 1, np.random.RandomState(0)])
def test_random_state_takes_what_check_random_state_takes(value):
    assert SparsemaxClassifier(max_epochs=1, random_state=value).fit(X, y).n_iter_ >= 1
