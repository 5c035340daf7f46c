"""The numbers quoted in the seed article (shared/seed/) and the entmax README."""

from __future__ import annotations

import torch

from sk_entmax.entmax import Entmax15, Sparsemax, entmax15, entmax_bisect, sparsemax


def test_sparsemax_seed_vector():
    x = torch.tensor([-2.0, 0.0, 0.5])
    assert torch.allclose(sparsemax(x, dim=0), torch.tensor([0.0, 0.25, 0.75]), atol=1e-7)
    assert torch.allclose(Sparsemax(dim=0)(x), torch.tensor([0.0, 0.25, 0.75]), atol=1e-7)
    assert sparsemax(x, dim=0)[0] == 0


def test_entmax15_seed_vector():
    x = torch.tensor([-2.0, 0.0, 0.5])
    expected = torch.tensor([0.0, 0.3260, 0.6740])
    assert torch.allclose(entmax15(x, dim=0), expected, atol=1e-4)
    assert torch.allclose(Entmax15(dim=0)(x), expected, atol=1e-4)
    assert entmax15(x, dim=0)[0] == 0


def test_softmax_seed_vector_for_contrast():
    x = torch.tensor([-2.0, 0.0, 0.5])
    expected = torch.tensor([0.0486, 0.3592, 0.5922])
    assert torch.allclose(entmax_bisect(x, 1.0, dim=0), expected, atol=1e-4)


def test_entmax_bisect_seed_values_and_alpha_gradient():
    x = torch.tensor([[-1.0, 0.0, 0.5], [1.0, 2.0, 3.5]])
    alpha = torch.tensor(1.33, requires_grad=True)
    p = entmax_bisect(x, alpha)
    expected = torch.tensor([[0.0460, 0.3276, 0.6264], [0.0026, 0.1012, 0.8963]])
    assert torch.allclose(p, expected, atol=1e-4)
    (d_alpha,) = torch.autograd.grad(p[0, 0], alpha)
    assert abs(d_alpha.item() - (-0.2562)) < 1e-4
