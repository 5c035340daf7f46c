"""EntmaxHead.loss_and_grad: the closed-form loss and score gradient of the full-batch solver.

Independent truth: the core's Fenchel-Young loss (``entmax_loss``) and autograd through it,
and the reference ``entmax`` package's losses where it has them.
"""

from __future__ import annotations

import entmax as reference
import pytest
import torch

from sk_entmax.entmax import entmax_loss
from sk_entmax.nn.head import EntmaxHead
from sk_entmax.nn.linear import EntmaxLinearNet

ALPHAS = [1.0, 1.05, 1.25, 1.33, 1.5, 1.75, 2.0, 3.0]


def _scores(n: int = 64, k: int = 5, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return 2 * torch.randn(n, k, generator=gen, dtype=torch.float64)


def _targets(n: int = 64, k: int = 5, seed: int = 0):
    gen = torch.Generator().manual_seed(seed + 1)
    index = torch.randint(0, k, (n,), generator=gen)
    labels = (torch.rand(n, k, generator=gen, dtype=torch.float64) < 0.4).double()
    labels[labels.sum(1) == 0, 0] = 1.0
    return index, labels / labels.sum(1, keepdim=True)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("kind", ["index", "distribution"])
def test_loss_and_grad_match_autograd_of_the_core_loss(alpha, kind):
    scores = _scores()
    index, distribution = _targets()
    target = index if kind == "index" else distribution
    head = EntmaxHead(alpha)
    loss, grad = head.loss_and_grad(scores, target)

    leaf = scores.clone().requires_grad_()
    expected = entmax_loss(leaf, target, alpha)
    (expected_grad,) = torch.autograd.grad(expected.sum(), leaf)
    torch.testing.assert_close(loss, expected.detach(), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(grad, expected_grad, rtol=1e-10, atol=1e-12)
    assert not loss.requires_grad and not grad.requires_grad


@pytest.mark.parametrize(
    ("alpha", "reference_loss"),
    [
        (2.0, lambda s, y: reference.sparsemax_loss(s, y)),
        (1.5, lambda s, y: reference.entmax15_loss(s, y)),
        (1.25, lambda s, y: reference.entmax_bisect_loss(s, y, 1.25, n_iter=100)),
    ],
)
def test_loss_matches_the_reference_package(alpha, reference_loss):
    scores = _scores(seed=3)
    index, _ = _targets(seed=3)
    loss, _ = EntmaxHead(alpha).loss_and_grad(scores, index)
    torch.testing.assert_close(loss, reference_loss(scores, index), rtol=1e-7, atol=1e-9)


def test_softmax_loss_is_cross_entropy():
    scores = _scores(seed=5)
    index, distribution = _targets(seed=5)
    loss, grad = EntmaxHead(1.0).loss_and_grad(scores, index)
    torch.testing.assert_close(
        loss, torch.nn.functional.cross_entropy(scores, index, reduction="none")
    )
    torch.testing.assert_close(grad.sum(1), torch.zeros(len(scores), dtype=torch.float64))
    # against a distribution the loss is the KL divergence: cross-entropy minus its entropy
    loss, _ = EntmaxHead(1.0).loss_and_grad(scores, distribution)
    log_p = torch.log_softmax(scores, 1)
    kl = (distribution * (torch.log(distribution.clamp_min(1e-300)) - log_p)).sum(1)
    torch.testing.assert_close(loss, kl)


def test_gradient_is_proba_minus_target_and_vanishes_at_the_target():
    head = EntmaxHead(2.0)
    scores = torch.tensor([[3.0, 0.0, 0.0], [0.2, 0.1, 0.0]], dtype=torch.float64)
    loss, grad = head.loss_and_grad(scores, torch.tensor([0, 2]))
    # row 0: sparsemax puts all its mass on the target, so loss and gradient are 0
    assert loss[0] == 0 and torch.all(grad[0] == 0)
    expected = head.proba(scores[1:]) - torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64)
    torch.testing.assert_close(grad[1:], expected)
    assert loss[1] > 0


def test_learned_alpha_is_refused():
    net = EntmaxLinearNet(3, 4, alpha=1.5, learn_alpha=True)
    with pytest.raises(ValueError, match="fixed alpha"):
        net.loss_and_grad(torch.zeros(2, 4), torch.tensor([0, 1]))
