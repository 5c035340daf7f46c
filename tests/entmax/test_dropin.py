"""User code written against ``entmax`` runs unchanged after swapping the import.

The same snippet, written the way entmax 1.3 users write it (positional arguments in the
reference's order, submodule imports, module classes), runs once with ``entmax`` and once
with ``sk_entmax.entmax``; the results must agree.
"""

from __future__ import annotations

import importlib

import pytest
import torch

API = [
    "sparsemax", "entmax15", "Sparsemax", "Entmax15",
    "sparsemax_bisect", "entmax_bisect", "normmax_bisect", "budget_bisect",
    "SparsemaxBisect", "EntmaxBisect", "NormmaxBisect", "BudgetBisect",
    "sparsemax_loss", "entmax15_loss", "sparsemax_bisect_loss", "entmax_bisect_loss",
    "normmax_bisect_loss", "SparsemaxLoss", "SparsemaxBisectLoss", "Entmax15Loss",
    "EntmaxBisectLoss", "NormmaxBisectLoss",
]  # fmt: skip


def user_code(pkg: str) -> dict[str, torch.Tensor]:
    """A user's script; ``pkg`` is the only thing that changes."""
    lib = importlib.import_module(pkg)
    act = importlib.import_module(f"{pkg}.activations")
    rf = importlib.import_module(f"{pkg}.root_finding")
    losses = importlib.import_module(f"{pkg}.losses")
    torch.manual_seed(0)
    X = torch.randn(6, 8, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, 8, (6,))
    out = {
        "sparsemax": act.sparsemax(X, 1, 3),
        "entmax15": act.entmax15(X, -1, None),
        "Sparsemax": act.Sparsemax(1, 4)(X),
        "Entmax15": act.Entmax15(0)(X),
        "entmax_bisect": rf.entmax_bisect(X, 1.25, -1, 40, True),
        "entmax_bisect_row_alpha": lib.entmax_bisect(X, torch.full((6, 1), 1.7).double()),
        "sparsemax_bisect": rf.sparsemax_bisect(X, -1, 50, True),
        "normmax_bisect": rf.normmax_bisect(X, 2, -1, 50),
        "budget_bisect": rf.budget_bisect(X, 3, -1, 50),
        "EntmaxBisect": rf.EntmaxBisect(1.6, 0, 50)(X),
        "NormmaxBisect": rf.NormmaxBisect(1.5)(X),
        "BudgetBisect": rf.BudgetBisect(2)(X),
        "SparsemaxBisect": rf.SparsemaxBisect(dim=-1, n_iter=50)(X),
        "sparsemax_loss": losses.sparsemax_loss(X, y, 3),
        "entmax15_loss": losses.entmax15_loss(X, y, None),
        "sparsemax_bisect_loss": losses.sparsemax_bisect_loss(X, y, 50),
        "entmax_bisect_loss": losses.entmax_bisect_loss(X, y, 1.3, 50),
        "normmax_bisect_loss": losses.normmax_bisect_loss(X, y, 2, 50),
        "SparsemaxLoss": losses.SparsemaxLoss(None, int(y[0]), "sum")(X, y),
        "Entmax15Loss": lib.Entmax15Loss(100, int(y[1]), "elementwise_mean")(X, y),
        "SparsemaxBisectLoss": lib.SparsemaxBisectLoss(50, int(y[2]), "none")(X, y),
        "EntmaxBisectLoss": lib.EntmaxBisectLoss(1.5, 50, int(y[0]))(X, y),
        "NormmaxBisectLoss": lib.NormmaxBisectLoss(2, 50)(X, y),
    }
    total = sum(
        (v * torch.linspace(0.5, 1.5, v.numel()).view_as(v).double()).sum() for v in out.values()
    )
    out["grad"] = torch.autograd.grad(total, X)[0]
    return {k: v.detach() for k, v in out.items()}


def test_every_public_name_exists():
    import entmax

    import sk_entmax.entmax as ours

    for name in API:
        assert hasattr(entmax, name)
        assert hasattr(ours, name), name
        assert name in ours.__all__


@pytest.fixture(scope="module")
def both():
    return user_code("entmax"), user_code("sk_entmax.entmax")


@pytest.mark.parametrize("key", [
    "sparsemax", "entmax15", "Sparsemax", "Entmax15", "entmax_bisect",
    "entmax_bisect_row_alpha", "sparsemax_bisect", "normmax_bisect", "budget_bisect",
    "EntmaxBisect", "NormmaxBisect", "BudgetBisect", "SparsemaxBisect", "sparsemax_loss",
    "entmax15_loss", "sparsemax_bisect_loss", "entmax_bisect_loss", "normmax_bisect_loss",
    "SparsemaxLoss", "Entmax15Loss", "SparsemaxBisectLoss", "EntmaxBisectLoss",
    "NormmaxBisectLoss", "grad",
])  # fmt: skip
def test_same_results_after_swapping_the_import(both, key):
    theirs, mine = both
    assert mine[key].shape == theirs[key].shape
    assert torch.allclose(mine[key], theirs[key], atol=1e-6), key
