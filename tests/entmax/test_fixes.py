"""Each place where the reference entmax 1.3 is wrong, and our behaviour there.

Every test names the defect it covers; the README table links here.
"""

from __future__ import annotations

import entmax as reference
import pytest
import torch

from sk_entmax.entmax import (
    AdaptiveEntmax,
    Entmax15,
    Entmax15Loss,
    EntmaxBisect,
    EntmaxBisectLoss,
    NormmaxBisectLoss,
    Sparsemax,
    SparsemaxBisect,
    SparsemaxBisectLoss,
    SparsemaxLoss,
    budget_bisect,
    entmax15,
    entmax15_loss,
    entmax_bisect,
    entmax_bisect_loss,
    normmax_bisect,
    normmax_bisect_loss,
    sparsemax,
    sparsemax_bisect,
    sparsemax_bisect_loss,
    sparsemax_loss,
)

NEG_INF = float("-inf")

MAPPINGS = {
    "sparsemax": sparsemax,
    "sparsemax_k2": lambda X, **kw: sparsemax(X, k=2, **kw),
    "entmax15": entmax15,
    "entmax15_k2": lambda X, **kw: entmax15(X, k=2, **kw),
    "entmax_bisect_1.33": lambda X, **kw: entmax_bisect(X, 1.33, **kw),
    "entmax_bisect_0.75": lambda X, **kw: entmax_bisect(X, 0.75, **kw),
    "entmax_bisect_tensor": lambda X, **kw: entmax_bisect(
        X, torch.tensor(1.25, dtype=X.dtype), **kw
    ),
    "softmax_alpha_1": lambda X, **kw: entmax_bisect(X, 1.0, **kw),
    "sparsemax_bisect": sparsemax_bisect,
    "normmax_bisect": lambda X, **kw: normmax_bisect(X, 1.5, **kw),
}
TRAINABLE = {
    "sparsemax",
    "sparsemax_k2",
    "entmax15",
    "entmax15_k2",
    "entmax_bisect_1.33",
    "entmax_bisect_0.75",
    "entmax_bisect_tensor",
    "softmax_alpha_1",
    "sparsemax_bisect",
}

LOSSES = {
    "sparsemax_loss": sparsemax_loss,
    "sparsemax_loss_k2": lambda X, y: sparsemax_loss(X, y, k=2),
    "entmax15_loss": entmax15_loss,
    "entmax15_loss_k2": lambda X, y: entmax15_loss(X, y, k=2),
    "sparsemax_bisect_loss": sparsemax_bisect_loss,
    "entmax_bisect_loss": lambda X, y: entmax_bisect_loss(X, y, alpha=1.33),
    "cross_entropy": lambda X, y: entmax_bisect_loss(X, y, alpha=1.0),
    "normmax_bisect_loss": lambda X, y: normmax_bisect_loss(X, y, alpha=1.5),
}
LOSS_MODULES = [
    SparsemaxLoss,
    Entmax15Loss,
    SparsemaxBisectLoss,
    EntmaxBisectLoss,
    NormmaxBisectLoss,
]


def _call(name, X, training=True):
    fn = MAPPINGS[name]
    return fn(X, training=training) if name in TRAINABLE else fn(X)


# --------------------------------------------------------------- 1. negative dim with k


@pytest.mark.parametrize("fn", [sparsemax, entmax15], ids=["sparsemax", "entmax15"])
@pytest.mark.parametrize("dim", [-2, -3, -4])
def test_negative_dim_with_k(fn, dim):
    torch.manual_seed(0)
    X = torch.randn(3, 4, 5, 6, dtype=torch.float64)
    expected = fn(X, dim=dim + 4)
    assert torch.allclose(fn(X, dim=dim, k=2), expected, atol=1e-12)
    assert torch.allclose(fn(X, dim=dim, k=1), expected, atol=1e-12)
    # The reference computes the same thing for the positive axis ...
    ref = getattr(reference, fn.__name__)
    assert torch.allclose(ref(X, dim=dim + 4, k=2), expected, atol=1e-12)


def test_negative_dim_with_k_crashes_in_reference():
    X = torch.randn(3, 4, 5)
    with pytest.raises((IndexError, RuntimeError)):
        reference.sparsemax(X, dim=-2, k=2)


# --------------------------------------------------------------- 2. n_iter of sparsemax_bisect


def test_sparsemax_bisect_honours_n_iter():
    torch.manual_seed(0)
    X = torch.randn(64, 20, dtype=torch.float64)
    exact = sparsemax(X)
    errors = [
        (sparsemax_bisect(X, n_iter=n, ensure_sum_one=False) - exact).abs().max().item()
        for n in (2, 8, 20, 50)
    ]
    assert errors[0] > 1e-2
    assert errors == sorted(errors, reverse=True)
    assert errors[-1] < 1e-12
    # the reference ignores n_iter: 2 steps give the same as 50
    assert torch.equal(
        reference.sparsemax_bisect(X, n_iter=2), reference.sparsemax_bisect(X, n_iter=50)
    )


def test_sparsemax_bisect_module_default_n_iter():
    X = torch.randn(4, 7, dtype=torch.float64)
    assert SparsemaxBisect().n_iter == 50
    assert torch.allclose(SparsemaxBisect()(X), sparsemax(X), atol=1e-10)


# --------------------------------------------------------------- 3. masking and NaN


@pytest.mark.parametrize("name", list(MAPPINGS))
@pytest.mark.parametrize("training", [True, False])
def test_masking_neg_inf_gets_zero(name, training):
    torch.manual_seed(1)
    X = torch.randn(4, 6, dtype=torch.float64)
    X[0, :3] = NEG_INF
    X[1, 5] = NEG_INF
    X.requires_grad_()
    P = _call(name, X, training)
    assert not P.isnan().any()
    assert (P[0, :3] == 0).all() and P[1, 5] == 0
    assert torch.allclose(P.sum(-1), torch.ones(4, dtype=P.dtype))
    # the masked entries behave as if they were not there
    expected = _call(name, X.detach()[1:2, :5], training)
    assert torch.allclose(P[1, :5], expected[0], atol=1e-10)
    (grad,) = torch.autograd.grad((P * torch.randn_like(P)).sum(), X)
    assert torch.isfinite(grad).all()
    assert (grad[0, :3] == 0).all()


@pytest.mark.parametrize("name", list(MAPPINGS))
@pytest.mark.parametrize("training", [True, False])
def test_masking_all_neg_inf_row_is_zero_with_zero_gradient(name, training):
    torch.manual_seed(2)
    X = torch.randn(3, 5, dtype=torch.float64)
    X[1] = NEG_INF
    X.requires_grad_()
    P = _call(name, X, training)
    assert torch.equal(P[1], torch.zeros(5, dtype=P.dtype))
    assert torch.allclose(P[[0, 2]].sum(-1), torch.ones(2, dtype=P.dtype))
    (grad,) = torch.autograd.grad((P * torch.randn_like(P)).sum(), X)
    assert torch.isfinite(grad).all()
    assert torch.equal(grad[1], torch.zeros(5, dtype=grad.dtype))


def test_masking_alpha_gradient_finite_with_masked_rows():
    X = torch.randn(3, 5, dtype=torch.float64)
    X[0, :2] = NEG_INF
    X[1] = NEG_INF
    for training in (True, False):
        alpha = torch.full((3, 1), 1.4, dtype=torch.float64, requires_grad=True)
        P = entmax_bisect(X, alpha, training=training)
        (grad,) = torch.autograd.grad(P[:, -1].sum(), alpha)
        assert torch.isfinite(grad).all() and grad[1] == 0


@pytest.mark.parametrize("name", list(LOSSES))
def test_masking_losses_stay_finite_with_neg_inf_logits(name):
    torch.manual_seed(3)
    X = torch.randn(4, 6, dtype=torch.float64)
    X[:, 4:] = NEG_INF
    X.requires_grad_()
    y = torch.tensor([0, 1, 2, 3])
    loss = LOSSES[name](X, y)
    assert torch.isfinite(loss).all() and (loss >= 0).all()
    (grad,) = torch.autograd.grad(loss.sum(), X)
    assert torch.isfinite(grad).all()
    assert (grad[:, 4:] == 0).all()
    # and the value is the loss of the unmasked problem
    assert torch.allclose(loss, LOSSES[name](X.detach()[:, :4], y), atol=1e-8)


def test_masking_reference_loss_fails_with_neg_inf():
    X = torch.randn(2, 4)
    X[:, 3] = NEG_INF
    loss = reference.sparsemax_loss(X, torch.tensor([0, 1]))
    assert torch.isnan(loss).any()


def test_masking_losses_with_all_masked_ignored_row():
    X = torch.randn(3, 4, dtype=torch.float64)
    X[1] = NEG_INF
    X.requires_grad_()
    y = torch.tensor([0, -100, 2])
    for Loss in LOSS_MODULES:
        loss = Loss(k=None)(X, y) if Loss in (Entmax15Loss,) else Loss()(X, y)
        (grad,) = torch.autograd.grad(loss, X)
        assert torch.isfinite(loss) and torch.isfinite(grad).all()
        assert (grad[1] == 0).all()


@pytest.mark.parametrize("name", list(MAPPINGS))
@pytest.mark.parametrize("training", [True, False])
def test_nan_stays_in_its_row(name, training):
    torch.manual_seed(4)
    X = torch.randn(3, 5, dtype=torch.float64)
    clean = _call(name, X, training)
    X[1, 2] = float("nan")
    P = _call(name, X, training)
    assert P[1].isnan().all()
    assert torch.equal(P[[0, 2]], clean[[0, 2]])


@pytest.mark.parametrize("name", list(MAPPINGS))
def test_posinf_gives_nan_in_its_row_only(name):
    # documented (issue 26.5): +inf has no limit here, as in torch.softmax; the row holding
    # it gets NaN at least at its +inf entry, every other row is solved as if alone
    torch.manual_seed(4)
    for training in (True, False):
        X = torch.randn(3, 5, dtype=torch.float64)
        clean = _call(name, X, training)
        X[1, 2] = float("inf")
        P = _call(name, X, training)
        assert P[1, 2].isnan()
        assert not P[1].isinf().any()
        assert torch.equal(P[[0, 2]], clean[[0, 2]])


def test_posinf_gives_a_nan_loss_in_its_row_only():
    torch.manual_seed(4)
    X = torch.randn(3, 4, dtype=torch.float64)
    y = torch.tensor([0, 1, 2])
    for Loss in LOSS_MODULES:
        clean = Loss(reduction="none")(X, y)
        Xi = X.clone()
        Xi[1, 3] = float("inf")
        loss = Loss(reduction="none")(Xi, y)
        assert loss[1].isnan(), Loss.__name__
        assert torch.equal(loss[[0, 2]], clean[[0, 2]]), Loss.__name__


# --------------------------------------------------------------- 4. ignore_index


@pytest.mark.parametrize("Loss", LOSS_MODULES)
@pytest.mark.parametrize("reduction", ["elementwise_mean", "mean", "sum", "none"])
def test_default_ignore_index_is_ignored(Loss, reduction):
    torch.manual_seed(5)
    X = torch.randn(6, 4, dtype=torch.float64)
    y = torch.tensor([0, -100, 2, 3, -100, 1])
    keep = y != -100
    loss = Loss(reduction=reduction)(X, y)
    kept = Loss(reduction="none")(X[keep], y[keep])
    if reduction == "none":
        assert torch.equal(loss[~keep], torch.zeros(2, dtype=loss.dtype))
        assert torch.allclose(loss[keep], kept)
    elif reduction == "sum":
        assert torch.allclose(loss, kept.sum())
    else:
        assert torch.allclose(loss, kept.mean())


def test_default_ignore_index_crashes_reference():
    X = torch.randn(3, 4)
    y = torch.tensor([0, -100, 2])
    with pytest.raises((IndexError, RuntimeError)):
        reference.SparsemaxLoss()(X, y)


@pytest.mark.parametrize("Loss", LOSS_MODULES)
@pytest.mark.parametrize("reduction", ["elementwise_mean", "mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_default_ignore_index_all_rows_ignored_gives_exact_zero(Loss, reduction, ignore_index):
    X = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    y = torch.full((4,), ignore_index)
    loss = Loss(ignore_index=ignore_index, reduction=reduction)(X, y)
    assert (loss == 0).all()
    (grad,) = torch.autograd.grad(loss.sum(), X)
    assert torch.equal(grad, torch.zeros_like(X))


def test_reduction_is_validated():
    with pytest.raises(ValueError, match=r"elementwise_mean.*mean.*sum.*none"):
        SparsemaxLoss(reduction="average")


# --------------------------------------------------------------- 5. alpha = 1 and near 1


@pytest.mark.parametrize("training", [True, False])
def test_alpha_one_is_softmax(training):
    torch.manual_seed(6)
    X = torch.randn(5, 7, dtype=torch.float64)
    expected = torch.softmax(X, -1)
    assert torch.allclose(entmax_bisect(X, 1.0, training=training), expected, atol=1e-12)
    alpha = torch.tensor([[1.0], [1.0], [1.0], [1.5], [1.0]], dtype=torch.float64)
    P = entmax_bisect(X, alpha, training=training)
    assert torch.allclose(P[[0, 1, 2, 4]], expected[[0, 1, 2, 4]], atol=1e-10)
    assert torch.allclose(P[3], entmax15(X[3]), atol=1e-10)
    # the reference returns a uniform vector
    assert torch.allclose(reference.entmax_bisect(X, 1.0), torch.full_like(X, 1 / 7))


def test_alpha_gradient_near_one_float32():
    X = torch.tensor([[-1.0, 0.0, 0.5], [1.0, 2.0, 3.5]])
    alpha = torch.tensor(1.0001, requires_grad=True)
    (ours,) = torch.autograd.grad(entmax_bisect(X, alpha)[0, 0], alpha)
    # truth: the reference's own formula is accurate in float64 this far from 1
    alpha64 = torch.tensor(1.0001, dtype=torch.float64, requires_grad=True)
    (truth,) = torch.autograd.grad(reference.entmax_bisect(X.double(), alpha64)[0, 0], alpha64)
    # and a central difference of our float64 forward agrees
    h = 1e-6
    fd = (
        entmax_bisect(X.double(), 1.0001 + h)[0, 0] - entmax_bisect(X.double(), 1.0001 - h)[0, 0]
    ) / (2 * h)
    assert abs(truth.item() - (-0.2003)) < 1e-3
    assert abs(fd.item() - truth.item()) < 1e-6
    assert abs(ours.item() - truth.item()) < 1e-4
    alpha_ref = torch.tensor(1.0001, requires_grad=True)
    (ref32,) = torch.autograd.grad(reference.entmax_bisect(X, alpha_ref)[0, 0], alpha_ref)
    assert abs(ref32.item() - truth.item()) > 0.3  # the reference is wrong in float32


@pytest.mark.parametrize("alpha", [1.0, 1.0 + 1e-6, 1.001, 1.05])
def test_alpha_gradient_continuous_through_one(alpha):
    torch.manual_seed(7)
    X = torch.randn(4, 6, dtype=torch.float64)
    a = torch.tensor(alpha, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(entmax_bisect(X, a)[:, 0].sum(), a)
    h = 1e-5
    fd = (entmax_bisect(X, alpha + h)[:, 0].sum() - entmax_bisect(X, alpha - h)[:, 0].sum()) / (
        2 * h
    )
    assert abs(grad.item() - fd.item()) < 1e-6


# --------------------------------------------------------------- 6. distribution targets


def _tsallis(P, alpha):
    P = P.double()
    if alpha == 1:
        return -(torch.where(P > 0, P * P.log(), 0)).sum(-1)
    return (1 - (P**alpha).sum(-1)) / (alpha * (alpha - 1))


DIST_LOSSES = [
    ("sparsemax", sparsemax_loss, lambda X: sparsemax(X), 2.0),
    ("entmax15", entmax15_loss, lambda X: entmax15(X), 1.5),
    ("sparsemax_bisect", sparsemax_bisect_loss, lambda X: sparsemax(X), 2.0),
    (
        "entmax_bisect",
        lambda X, q: entmax_bisect_loss(X, q, alpha=1.25),
        lambda X: entmax_bisect(X, 1.25),
        1.25,
    ),
    (
        "cross_entropy",
        lambda X, q: entmax_bisect_loss(X, q, alpha=1.0),
        lambda X: torch.softmax(X, -1),
        1.0,
    ),
]


@pytest.mark.parametrize("name, loss_fn, mapping, alpha", DIST_LOSSES)
def test_distribution_target_is_fenchel_young(name, loss_fn, mapping, alpha):
    torch.manual_seed(8)
    X = torch.randn(5, 6, dtype=torch.float64, requires_grad=True)
    q = sparsemax(torch.randn(5, 6, dtype=torch.float64) * 3)
    loss = loss_fn(X, q)
    p = mapping(X.detach())
    expected = _tsallis(p, alpha) - _tsallis(q, alpha) + ((p - q) * X.detach()).sum(-1)
    assert torch.allclose(loss, expected, atol=1e-9)
    assert (loss >= -1e-12).all()
    (grad,) = torch.autograd.grad(loss.sum(), X)
    assert torch.allclose(grad, p - q, atol=1e-9)


def test_distribution_target_normmax():
    torch.manual_seed(9)
    X = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    q = torch.softmax(torch.randn(4, 5, dtype=torch.float64), -1)
    loss = normmax_bisect_loss(X, q, alpha=1.5)
    p = normmax_bisect(X.detach(), 1.5)
    norm = lambda P: (P**1.5).sum(-1) ** (1 / 1.5)  # noqa: E731
    expected = norm(q) - norm(p) + ((p - q) * X.detach()).sum(-1)
    assert torch.allclose(loss, expected, atol=1e-9)
    (grad,) = torch.autograd.grad(loss.sum(), X)
    assert torch.allclose(grad, p - q, atol=1e-9)


@pytest.mark.parametrize("name", list(LOSSES))
def test_distribution_target_one_hot_equals_index(name):
    torch.manual_seed(10)
    X = torch.randn(6, 5, dtype=torch.float64)
    y = torch.tensor([0, 4, 2, 2, 1, 3])
    one_hot = torch.nn.functional.one_hot(y, 5).double()
    assert torch.allclose(LOSSES[name](X, y), LOSSES[name](X, one_hot), atol=1e-12)


def test_distribution_target_multilabel_sparsemax_closed_form():
    """Martins & Astudillo (2016), eq. for the multi-label sparsemax loss."""
    torch.manual_seed(11)
    z = torch.randn(8, 6, dtype=torch.float64)
    y = (torch.rand(8, 6) < 0.4).double()
    y[y.sum(1) == 0, 0] = 1
    q = y / y.sum(1, keepdim=True)
    p = sparsemax(z)
    support = p > 0
    tau = ((z * support).sum(1) - 1) / support.sum(1)
    closed = (
        -(q * z).sum(1) + 0.5 * ((z**2 - tau[:, None] ** 2) * support).sum(1) + 0.5 * (q**2).sum(1)
    )
    assert torch.allclose(sparsemax_loss(z, q), closed, atol=1e-10)
    assert torch.allclose(SparsemaxLoss(reduction="none")(z, q), closed, atol=1e-10)


def test_distribution_target_is_validated():
    X = torch.randn(3, 4)
    with pytest.raises(ValueError, match="sum to 1"):
        sparsemax_loss(X, torch.ones(3, 4))
    with pytest.raises(ValueError, match="shape"):
        sparsemax_loss(X, torch.full((3, 5), 0.2))
    with pytest.raises(ValueError, match="class index 4"):
        sparsemax_loss(X, torch.tensor([0, 4, 1]))


# --------------------------------------------------------------- 7. loss gradient in alpha


@pytest.mark.parametrize("loss_fn", [entmax_bisect_loss, normmax_bisect_loss])
@pytest.mark.parametrize("alpha0", [1.0, 1.3, 1.7, 2.5])
@pytest.mark.parametrize("target_kind", ["index", "distribution"])
def test_loss_alpha_gradient(loss_fn, alpha0, target_kind):
    if loss_fn is normmax_bisect_loss and alpha0 == 1.0:
        pytest.skip("normmax needs alpha > 1")
    torch.manual_seed(12)
    X = torch.randn(5, 6, dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 3, 4])
    if target_kind == "distribution":
        y = torch.softmax(torch.randn(5, 6, dtype=torch.float64), -1)
    alpha = torch.full((5,), alpha0, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(loss_fn(X, y, alpha=alpha).sum(), alpha)
    assert grad.shape == (5,) and (grad != 0).any()
    h = 1e-6
    fd = (loss_fn(X, y, alpha=alpha0 + h) - loss_fn(X, y, alpha=alpha0 - h)) / (2 * h)
    assert torch.allclose(grad, fd, atol=1e-6)


def test_loss_alpha_gradient_module_parameter():
    alpha = torch.nn.Parameter(torch.tensor(1.4))
    crit = EntmaxBisectLoss(alpha=alpha)
    assert any(p is alpha for p in crit.parameters())
    loss = crit(torch.randn(8, 5), torch.randint(0, 5, (8,)))
    loss.backward()
    assert alpha.grad is not None and alpha.grad != 0


# --------------------------------------------------------------- 8. a learnable alpha


def test_adaptive_alpha_is_learned():
    torch.manual_seed(13)
    layer = AdaptiveEntmax(alpha=1.5)
    assert [name for name, _ in layer.named_parameters()] == ["alpha_raw"]
    X = torch.randn(16, 8)
    target = torch.softmax(torch.randn(16, 8) * 0.1, -1)  # dense target pulls alpha down
    opt = torch.optim.SGD(layer.parameters(), lr=1.0)
    before = layer.alpha.item()
    for _ in range(5):
        opt.zero_grad()
        ((layer(X) - target) ** 2).sum().backward()
        opt.step()
    assert layer.alpha.item() != pytest.approx(before, abs=1e-3)
    assert layer.alpha.item() < before


def test_adaptive_alpha_stays_in_range_by_construction():
    layer = AdaptiveEntmax(alpha=1.5, shape=(3, 1))
    opt = torch.optim.SGD(layer.parameters(), lr=1e6)
    X = torch.randn(3, 6)
    for sign in (1, -1):
        opt.zero_grad()
        (sign * layer(X)[:, 0].sum()).backward()
        opt.step()
        # the ends are reached only when the sigmoid saturates in floating point, and
        # both are valid (alpha = 1 is softmax, alpha = 2 sparsemax)
        assert ((layer.alpha >= 1) & (layer.alpha <= 2)).all()
        P = layer(X)
        assert torch.isfinite(P).all() and torch.allclose(P.sum(-1), torch.ones(3))
        assert torch.isfinite(torch.autograd.grad(P[:, 0].sum(), layer.alpha_raw)[0]).all()


def test_adaptive_alpha_unbounded_range():
    layer = AdaptiveEntmax(alpha=3.0, alpha_max=None)
    assert layer.alpha.item() == pytest.approx(3.0, rel=1e-6)
    opt = torch.optim.SGD(layer.parameters(), lr=1e6)
    (-layer(torch.randn(4, 5))[:, 0].sum()).backward()
    opt.step()
    assert layer.alpha.item() >= 1


def test_adaptive_alpha_rejects_bad_init():
    with pytest.raises(ValueError, match="alpha"):
        AdaptiveEntmax(alpha=1.0)
    with pytest.raises(ValueError, match="alpha"):
        AdaptiveEntmax(alpha=2.5)


# --------------------------------------------------------------- 9. half precision


HALF_MAPPINGS = [n for n in MAPPINGS if n != "entmax_bisect_0.75"] + ["budget"]


def _half_call(name, X):
    if name == "budget":
        return budget_bisect(X, 2)
    return _call(name, X)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", HALF_MAPPINGS)
def test_half_precision_computed_in_float32(dtype, name):
    torch.manual_seed(14)
    X = torch.randn(6, 9).to(dtype)
    P = _half_call(name, X)
    assert P.dtype == dtype
    expected = _half_call(name, X.float())
    assert torch.allclose(P.float(), expected.to(dtype).float(), atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", [n for n in MAPPINGS if n != "entmax_bisect_0.75"])
def test_half_precision_large_logits(dtype, name):
    torch.manual_seed(15)
    X = (torch.randn(8, 12) * 1e3).clamp(-1e3, 1e3).to(dtype)
    X.requires_grad_()
    P = _call(name, X)
    assert torch.isfinite(P).all()
    assert ((P.float().sum(-1) - 1).abs() <= 2e-2).all()
    P.float().sum().backward()
    assert X.grad.dtype == dtype and torch.isfinite(X.grad).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", list(LOSSES))
def test_half_precision_losses(dtype, name):
    torch.manual_seed(16)
    X = (torch.randn(5, 6) * 1e3).to(dtype).requires_grad_()
    y = torch.tensor([0, 1, 2, 3, 4])
    loss = LOSSES[name](X, y)
    assert loss.dtype == dtype and torch.isfinite(loss).all()
    loss.float().sum().backward()
    assert torch.isfinite(X.grad).all()


# --------------------------------------------------------------- 10. the plain-op path


EVAL_MODULES = [
    Sparsemax(),
    Sparsemax(dim=0, k=2),
    Entmax15(),
    Entmax15(dim=1, k=2),
    EntmaxBisect(alpha=1.33),
    EntmaxBisect(alpha=torch.tensor(1.7)),
    SparsemaxBisect(),
    AdaptiveEntmax(alpha=1.4),
]


@pytest.mark.parametrize("name", sorted(TRAINABLE))
def test_eval_path_same_values_and_gradients(name):
    torch.manual_seed(17)
    X = torch.randn(5, 3, 7, dtype=torch.float64, requires_grad=True)
    W = torch.randn(5, 3, 7, dtype=torch.float64)
    P_train = _call(name, X, True)
    P_eval = _call(name, X, False)
    assert torch.allclose(P_train, P_eval, atol=1e-12)
    (g_train,) = torch.autograd.grad((P_train * W).sum(), X)
    (g_eval,) = torch.autograd.grad((P_eval * W).sum(), X)  # no in-place error on backward
    assert torch.allclose(g_train, g_eval, atol=1e-9)


def test_eval_path_alpha_gradient_matches():
    X = torch.randn(4, 6, dtype=torch.float64)
    grads = []
    for training in (True, False):
        alpha = torch.full((4, 1), 1.6, dtype=torch.float64, requires_grad=True)
        P = entmax_bisect(X, alpha, training=training)
        grads.append(torch.autograd.grad(P[:, 0].sum(), alpha)[0])
    assert torch.allclose(grads[0], grads[1], atol=1e-9)


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")  # shapes are specialised
@pytest.mark.parametrize("module", EVAL_MODULES, ids=lambda m: repr(m))
def test_eval_path_jit_trace(module):
    module = module.eval()
    X = torch.randn(4, 6)
    traced = torch.jit.trace(module, (X,), check_trace=False)
    X2 = torch.randn(4, 6) * 3
    assert torch.allclose(traced(X2), module.train()(X2), atol=1e-6)
    module.eval()


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
@pytest.mark.parametrize("module", EVAL_MODULES, ids=lambda m: repr(m))
def test_eval_path_jit_trace_passes_its_check_and_generalises(module):
    """Issue 12: the bisection modules failed jit.trace's own check (graphs differed)."""
    module = module.eval()
    gen = torch.Generator().manual_seed(12)
    traced = torch.jit.trace(module, (torch.randn(3, 7, generator=gen),))  # check on
    for shape in [(5, 7), (2, 7), (5, 4), (6, 11)]:  # other batch sizes, other widths
        X = torch.randn(*shape, generator=gen) * 3
        expected = module(X)
        assert torch.allclose(traced(X), expected, atol=1e-6), shape
        assert torch.allclose(expected, module.train()(X), atol=1e-5), shape
        module.eval()


@pytest.mark.parametrize("module", EVAL_MODULES, ids=lambda m: repr(m))
def test_eval_path_torch_export(module):
    module = module.eval()
    X = torch.randn(4, 6)
    exported = torch.export.export(module, (X,))
    X2 = torch.randn(4, 6) * 3
    assert torch.allclose(exported.module()(X2), module.train()(X2), atol=1e-6)
    module.eval()


def test_modules_pass_self_training(monkeypatch):
    seen = []
    import sk_entmax.entmax.activations as act

    original = act.SparsemaxFunction.apply

    def spy(*args):
        seen.append(True)
        return original(*args)

    monkeypatch.setattr(act.SparsemaxFunction, "apply", spy)
    from sk_entmax.entmax.kernels import cpu  # the training path on CPU, where numba loads

    kernel = cpu.entmax_cpu
    monkeypatch.setattr(cpu, "entmax_cpu", lambda *a, **k: seen.append(True) or kernel(*a, **k))
    layer = Sparsemax()
    layer(torch.randn(2, 3))
    layer.eval()(torch.randn(2, 3))
    assert seen == [True]


# --------------------------------------------------------------- the alpha dispatcher


@pytest.mark.parametrize("alpha", [1.0, 1.25, 1.5, 2.0, 2.5])
def test_dispatch_picks_the_exact_mapping(alpha):
    from sk_entmax.entmax import entmax, entmax_loss

    torch.manual_seed(18)
    X = torch.randn(6, 5, dtype=torch.float64)
    y = torch.randint(0, 5, (6,))
    exact = {1.0: torch.softmax(X, -1), 1.5: entmax15(X), 2.0: sparsemax(X)}
    P = entmax(X, alpha)
    assert torch.allclose(P, entmax_bisect(X, alpha), atol=1e-10)
    if alpha in exact:
        assert torch.equal(P, exact[alpha])
    assert torch.allclose(entmax_loss(X, y, alpha), entmax_bisect_loss(X, y, alpha), atol=1e-9)
    if alpha == 1.0:
        ce = torch.nn.functional.cross_entropy(X, y, reduction="none")
        assert torch.allclose(entmax_loss(X, y, alpha), ce, atol=1e-12)


# --------------------------------------------------------------- n_iter=None (issue 12)


def test_n_iter_none_means_the_default():
    """``SparsemaxBisect(n_iter=None)`` is the reference's default; it used to raise."""
    gen = torch.Generator().manual_seed(4)
    X = torch.randn(5, 6, generator=gen, dtype=torch.float64)
    y = torch.randint(0, 6, (5,), generator=gen)
    alpha = torch.full((5, 1), 1.3, dtype=torch.float64)
    pairs = [
        (SparsemaxBisect(n_iter=None)(X), SparsemaxBisect(n_iter=50)(X)),
        (SparsemaxBisect(n_iter=None).eval()(X), SparsemaxBisect().eval()(X)),
        (EntmaxBisect(1.3, n_iter=None)(X), EntmaxBisect(1.3)(X)),
        (AdaptiveEntmax(1.3, n_iter=None)(X), AdaptiveEntmax(1.3)(X)),
        (sparsemax_bisect(X, n_iter=None), sparsemax_bisect(X)),
        (entmax_bisect(X, 1.3, n_iter=None), entmax_bisect(X, 1.3)),
        (
            entmax_bisect(X, alpha, n_iter=None, training=False),
            entmax_bisect(X, alpha, training=False),
        ),
        (entmax_bisect(X, 0.8, n_iter=None), entmax_bisect(X, 0.8, n_iter=50)),
        (normmax_bisect(X, n_iter=None), normmax_bisect(X)),
        (budget_bisect(X, n_iter=None), budget_bisect(X)),
        (sparsemax_bisect_loss(X, y, n_iter=None), sparsemax_bisect_loss(X, y)),
        (entmax_bisect_loss(X, y, 1.3, n_iter=None), entmax_bisect_loss(X, y, 1.3)),
        (SparsemaxBisectLoss(n_iter=None)(X, y), SparsemaxBisectLoss()(X, y)),
        (EntmaxBisectLoss(n_iter=None)(X, y), EntmaxBisectLoss()(X, y)),
        (NormmaxBisectLoss(n_iter=None)(X, y), NormmaxBisectLoss()(X, y)),
    ]
    for i, (got, expected) in enumerate(pairs):
        assert torch.equal(got, expected), i
    # and the drop-in value: the reference's own default module
    ref = reference.SparsemaxBisect(n_iter=None)(X)
    assert torch.allclose(SparsemaxBisect(n_iter=None)(X), ref, atol=1e-7)
    assert torch.allclose(
        sparsemax_bisect_loss(X, y, n_iter=None), reference.sparsemax_bisect_loss(X, y), atol=1e-7
    )


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "50"])
def test_n_iter_still_rejects_other_values(bad):
    with pytest.raises(
        ValueError,
        match="'n_iter' parameter of entmax_bisect must be one of None or an integer >= 1",
    ):
        entmax_bisect(torch.randn(2, 3), n_iter=bad)


def test_posinf_is_documented_for_every_mapping_and_loss():
    # the behaviour above is a documented contract, not an accident (failed before: the
    # docstrings spoke of -inf and NaN only)
    import sk_entmax.entmax as core

    functions = [getattr(core, name) for name in core.__all__ if name[0].islower()]
    undocumented = [
        f.__name__
        for f in functions
        if f.__name__ not in ("entmax_attention", "entmax_attention_weights")
        and "``+inf``" not in (f.__doc__ or "")
    ]
    assert not undocumented
