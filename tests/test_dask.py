"""GridSearchCV on a Dask cluster through joblib's dask backend: the same scores as n_jobs=1.

The cluster is a ``distributed.LocalCluster`` on the loopback interface with two single-thread
workers in this process (``processes=False``): it starts in a fraction of a second where
worker processes take tens of seconds on two cores, and two workers running fits in threads
of one process is the harder case for reproducibility (torch's global random generator is
shared). Tasks still travel through the scheduler over TCP, pickled, as on a real cluster.

joblib's dask backend batches several quick fits into one task, so the number of tasks says
nothing about the number of fits. Each fit records instead where it ran: the estimators below
are thin subclasses whose ``fit`` notes the address of the Dask worker running it (the
workers live in this process, so a module-level list sees every note).
"""

from __future__ import annotations

import joblib
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, TabNetEntmaxClassifier

distributed = pytest.importorskip("distributed")

#: the worker address of each fit, or "local" for a fit outside the cluster
FIT_PLACES: list[str] = []


def _place() -> str:
    try:
        return distributed.get_worker().address
    except ValueError:  # not running inside a Dask worker
        return "local"


class RecordingEntmax(EntmaxClassifier):
    def fit(self, X, y, sample_weight=None):
        FIT_PLACES.append(_place())
        return super().fit(X, y, sample_weight=sample_weight)


class RecordingTabNet(TabNetEntmaxClassifier):
    def fit(self, X, y, sample_weight=None):
        FIT_PLACES.append(_place())
        return super().fit(X, y, sample_weight=sample_weight)


X_IRIS, Y_IRIS = load_iris(return_X_y=True)
CV = StratifiedKFold(n_splits=2, shuffle=True, random_state=0)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
    )
    with cluster, distributed.Client(cluster) as dask_client:
        yield dask_client


def _searches(estimator, grid, client):
    FIT_PLACES.clear()
    with joblib.parallel_backend("dask"):
        on_dask = GridSearchCV(estimator, grid, cv=CV, n_jobs=-1).fit(X_IRIS, Y_IRIS)
    # every cross-validation fit ran on one of the cluster's workers, however joblib batched
    # them into tasks; only the final refit runs here, in the caller
    n_fits = CV.get_n_splits() * len(on_dask.cv_results_["params"])
    workers = set(client.scheduler_info()["workers"])
    on_workers = [place for place in FIT_PLACES if place in workers]
    assert len(on_workers) == n_fits, FIT_PLACES
    assert FIT_PLACES.count("local") == 1, FIT_PLACES  # the refit
    assert len(FIT_PLACES) == n_fits + 1, FIT_PLACES
    local = GridSearchCV(estimator, grid, cv=CV, n_jobs=1).fit(X_IRIS, Y_IRIS)
    return on_dask, local


def _assert_same_search(on_dask, local):
    for key in ("mean_test_score", "std_test_score", "split0_test_score", "split1_test_score"):
        np.testing.assert_array_equal(on_dask.cv_results_[key], local.cv_results_[key])
    assert on_dask.best_params_ == local.best_params_
    np.testing.assert_array_equal(on_dask.predict_proba(X_IRIS), local.predict_proba(X_IRIS))


def test_grid_search_over_alpha_on_dask_matches_n_jobs_1(client):
    pipe = make_pipeline(StandardScaler(), RecordingEntmax(lr=0.05, max_epochs=15, random_state=0))
    grid = {"recordingentmax__alpha": [1.0, 1.5, 2.0]}
    on_dask, local = _searches(pipe, grid, client)
    _assert_same_search(on_dask, local)
    assert on_dask.best_score_ > 0.8


def test_grid_search_over_entmax_mode_on_dask_matches_n_jobs_1(client):
    tabnet = RecordingTabNet(n_d=4, n_a=4, n_steps=2, max_epochs=3, random_state=0)
    grid = {"entmax_mode": ["sparsemax", "entmax15"], "alpha": [1.5, 2.0]}
    on_dask, local = _searches(tabnet, grid, client)
    _assert_same_search(on_dask, local)
    assert len(on_dask.cv_results_["params"]) == 4
