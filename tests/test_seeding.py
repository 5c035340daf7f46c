"""A fit's seeded start and ``load`` leave torch's global generator alone (issue 26, 5a).

The initial weights are drawn from a private generator seeded by ``random_state``, and
training draws from generators of its own: torch's global generator is never seeded,
forked, read or drawn from, so a thread that seeded it sees its own sequence however many
fits and loads run beside it.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, TabNetEntmaxClassifier

X, Y = load_iris(return_X_y=True)
X = StandardScaler().fit_transform(X)

FITS = {
    # the network initialised, then set to zero: the full-batch L-BFGS solver
    "linear": lambda: EntmaxClassifier(random_state=0),
    # hidden layers, mini-batches and an early-stopping split, validated each epoch
    "mlp": lambda: EntmaxClassifier(
        hidden_layer_sizes=(4,),
        max_epochs=1,
        early_stopping=True,
        validation_fraction=0.2,
        random_state=1,
    ),
    "tabnet": lambda: TabNetEntmaxClassifier(
        n_d=4, n_a=4, n_steps=1, max_epochs=1, early_stopping=True, random_state=2
    ),
}


def _fits():
    """Fits of each kind and a partial_fit: their probabilities, in order."""
    out = [make().fit(X, Y).predict_proba(X) for make in FITS.values()]
    out.append(FITS["mlp"]().partial_fit(X, Y, classes=np.unique(Y)).predict_proba(X))
    return out


def _loads(path):
    """Two loads of the model saved at ``path``: their probabilities."""
    from sk_entmax.persistence import load

    return [load(path).predict_proba(X) for _ in range(2)]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    from sk_entmax.persistence import save

    path = tmp_path_factory.mktemp("seeding") / "tabnet.safetensors"
    save(FITS["tabnet"]().fit(X, Y), path)
    return path


def _beside_a_seeded_thread(work):
    """Run ``work`` (twice) in a thread while another seeds torch's global generator and
    draws from it, one number at a time, at least 3,000 and until ``work`` is done; returns
    how many draws differ from the seeded sequence, of how many, and ``work``'s results."""
    seed, least = 20260101, 3000
    started, done = threading.Event(), threading.Event()
    draws, results, errors = [], [], []

    def seeded():
        torch.manual_seed(seed)
        started.set()
        while len(draws) < least or not done.is_set():
            draws.append(torch.rand(1).item())
            time.sleep(0.0002)  # let the other thread run between draws

    def working():
        started.wait()
        try:
            for _ in range(2):
                results.append(work())
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            done.set()

    threads = [threading.Thread(target=seeded), threading.Thread(target=working)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    assert len(draws) >= least
    torch.manual_seed(seed)
    reference = [torch.rand(1).item() for _ in draws]
    differ = sum(a != b for a, b in zip(draws, reference, strict=True))
    return differ, len(draws), results


def test_fits_beside_a_seeded_thread_leave_its_draws_alone():
    expected = _fits()  # alone: what the fits give
    differ, n, results = _beside_a_seeded_thread(_fits)
    assert differ == 0, f"{differ} of {n} draws differ from the seeded sequence"
    for run in results:  # and the fits made beside the draws are those made alone
        for got, want in zip(run, expected, strict=True):
            np.testing.assert_array_equal(got, want)


def test_fits_and_loads_beside_a_seeded_thread_leave_its_draws_alone(saved):
    expected = _fits() + _loads(saved)
    differ, n, results = _beside_a_seeded_thread(lambda: _fits() + _loads(saved))
    assert differ == 0, f"{differ} of {n} draws differ from the seeded sequence"
    for run in results:
        for got, want in zip(run, expected, strict=True):
            np.testing.assert_array_equal(got, want)


def _refuse_the_global_generator(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("torch's global generator was used")

    for module, name in [
        (torch, "manual_seed"),
        (torch, "seed"),
        (torch, "get_rng_state"),
        (torch, "set_rng_state"),
        (torch.random, "manual_seed"),
        (torch.random, "seed"),
        (torch.random, "fork_rng"),
        (torch.random, "get_rng_state"),
        (torch.random, "set_rng_state"),
    ]:
        monkeypatch.setattr(module, name, refuse)


def test_a_fit_neither_seeds_nor_forks_nor_reads_the_global_generator(monkeypatch):
    _refuse_the_global_generator(monkeypatch)
    first, second = _fits(), _fits()
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)  # still seeded by random_state


def test_a_load_neither_seeds_nor_forks_nor_reads_the_global_generator(saved, monkeypatch):
    expected = _loads(saved)
    _refuse_the_global_generator(monkeypatch)
    for got, want in zip(_loads(saved), expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_random_state_still_decides_the_initial_weights():
    a = FITS["mlp"]().fit(X, Y).predict_proba(X)
    b = FITS["mlp"]().set_params(random_state=7).fit(X, Y).predict_proba(X)
    assert not np.allclose(a, b)
