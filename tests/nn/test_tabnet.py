"""TabNet and its pieces: shapes, masks and their mappings, ghost batch norm, training."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from sk_entmax.entmax import entmax15, entmax_bisect, sparsemax
from sk_entmax.nn import TabNet
from sk_entmax.nn.tabnet import ENTMAX_MODES, AttentiveTransformer, GhostBatchNorm
from sk_entmax.nn.tabnet_nets import TabNetClassifierNet

SPARSE_MODES = ["sparsemax", "entmax15"]
SMALL = {"n_d": 4, "n_a": 4, "n_steps": 2, "n_independent": 1, "n_shared": 1}
CATS = {"cat_idxs": [1, 3], "cat_dims": [4, 6], "cat_emb_dims": [3, 2]}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny tensors: thread hand-offs cost more than they save, badly so on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def make_X(n: int, n_features: int, seed: int = 0, cats: dict | None = None) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, n_features, generator=g)
    for idx, dim in zip((cats or {}).get("cat_idxs", ()), (cats or {}).get("cat_dims", ())):
        X[:, idx] = torch.randint(0, dim, (n,), generator=g).float()
    return X


def make_net(n_features: int = 6, n_outputs: int = 3, seed: int = 0, **kwargs) -> TabNet:
    torch.manual_seed(seed)
    return TabNet(n_features, n_outputs, **{**SMALL, **kwargs})


def capture_masks(net: TabNet, X: torch.Tensor) -> list[dict]:
    """Run ``net(X)``, recording each attentive transformer's inputs and output mask."""
    records: list[dict] = []

    def hook(module, args, output):
        records.append({"module": module, "a": args[0], "prior": args[1], "M": output})

    handles = [att.register_forward_hook(hook) for att in net.attentive_transformers]
    try:
        net(X)
    finally:
        for handle in handles:
            handle.remove()
    return records


# --------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("mode", ENTMAX_MODES)
@pytest.mark.parametrize("cats", [{}, CATS], ids=["numeric", "categorical"])
@pytest.mark.parametrize("train", [True, False])
def test_forward_shapes(mode, cats, train):
    net = make_net(5, 3, entmax_mode=mode, entmax_alpha=1.3, **cats).train(train)
    scores, M_loss = net(make_X(40, 5, cats=cats))
    assert scores.shape == (40, 3)
    assert M_loss.shape == (40,)
    assert torch.isfinite(scores).all()
    assert (M_loss >= 0).all()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_shared": 0, "n_independent": 2},
        {"n_shared": 3, "n_independent": 0},
        {"n_steps": 1, "n_d": 1, "n_a": 1},
        {"n_d": 3, "n_a": 5, "n_steps": 4},
    ],
)
def test_layer_count_variants(kwargs):
    net = make_net(4, 2, **kwargs)
    scores, _ = net(make_X(20, 4))
    assert scores.shape == (20, 2)
    n_glu = kwargs.get("n_shared", 1) + kwargs.get("n_independent", 1)
    assert all(len(ft.layers) == n_glu for ft in net.feature_transformers)


def test_shared_layers_are_shared_and_batch_norms_are_not():
    net = make_net(6, 2, n_steps=3, n_shared=2)
    transformers = [net.initial_splitter, *net.feature_transformers]
    for i in range(2):
        fcs = {id(ft.layers[i].fc) for ft in transformers}
        bns = {id(ft.layers[i].bn) for ft in transformers}
        assert fcs == {id(net.shared[i])}
        assert len(bns) == len(transformers)
    independent = {id(ft.layers[2].fc) for ft in transformers}
    assert len(independent) == len(transformers)
    # each shared weight is counted once by parameters()
    assert len(list(net.parameters())) == len({id(p) for p in net.parameters()})


def test_float64_module():
    net = make_net(5, 2, entmax_mode="adaptive").double()
    scores, M_loss = net(make_X(10, 5).double())
    assert scores.dtype == M_loss.dtype == torch.float64


# --------------------------------------------------------------------------- masks


@pytest.mark.parametrize("mode", ENTMAX_MODES)
@pytest.mark.parametrize("train", [True, False])
def test_masks_on_simplex(mode, train):
    net = make_net(20, 2, n_steps=3, entmax_mode=mode, entmax_alpha=1.7).train(train)
    X = make_X(64, 20)
    for record in capture_masks(net, X):
        M = record["M"]
        assert M.shape == (64, 20)
        assert (M >= 0).all()
        torch.testing.assert_close(M.sum(-1), torch.ones(64), atol=1e-5, rtol=0)
    _, masks = net.explain(X)
    for M in masks.values():
        torch.testing.assert_close(M.sum(-1), torch.ones(64), atol=1e-5, rtol=0)


@pytest.mark.parametrize("mode", SPARSE_MODES)
def test_sparse_modes_give_exact_zeros(mode):
    net = make_net(20, 2, entmax_mode=mode)  # train mode: the scores are batch-normalised
    _, masks = net.explain(make_X(64, 20))
    for M in masks.values():
        assert (M == 0).any()
        assert (M > 0).any(-1).all()


@pytest.mark.parametrize(
    ("mode", "alpha"),
    [
        ("sparsemax", 1.5),
        ("entmax15", 1.5),
        ("constant", 1.0),
        ("constant", 1.3),
        ("constant", 1.5),
        ("constant", 2.0),
        ("adaptive", 1.3),
    ],
)
@pytest.mark.parametrize("train", [True, False])
def test_mask_mapping_follows_mode(mode, alpha, train):
    """Each step's mask is the mode's mapping applied to the attentive pre-activation."""
    net = make_net(12, 2, n_steps=3, entmax_mode=mode, entmax_alpha=alpha).train(train)
    records = capture_masks(net, make_X(50, 12))
    assert len(records) == 3
    for step, record in enumerate(records):
        att = record["module"]
        assert att is net.attentive_transformers[step]
        # recompute the pre-activation in the same mode, keeping the running statistics
        saved = {k: v.clone() for k, v in att.bn.state_dict().items()}
        with torch.no_grad():
            Z = att.scores(record["a"], record["prior"])
        att.bn.load_state_dict(saved)
        if mode == "sparsemax" or (mode == "constant" and alpha == 2.0):
            expected = sparsemax(Z, dim=-1)
        elif mode == "entmax15" or (mode == "constant" and alpha == 1.5):
            expected = entmax15(Z, dim=-1)
        elif mode == "constant" and alpha == 1.0:
            expected = torch.softmax(Z, dim=-1)
        elif mode == "constant":
            expected = entmax_bisect(Z, alpha, dim=-1)
        else:
            expected = entmax_bisect(Z, att.adaptive.alpha, dim=-1)
        torch.testing.assert_close(record["M"].detach(), expected, atol=1e-6, rtol=1e-5)


def test_prior_update_and_first_prior():
    net = make_net(8, 2, n_steps=3, gamma=1.5, entmax_mode="entmax15")
    records = capture_masks(net, make_X(30, 8))
    torch.testing.assert_close(records[0]["prior"], torch.ones(30, 8))
    for before, after in itertools.pairwise(records):
        torch.testing.assert_close(after["prior"], before["prior"] * (1.5 - before["M"]))


def test_sparsity_loss_is_per_row_mean_mask_entropy():
    net = make_net(8, 2, n_steps=3, entmax_mode="entmax15").eval()
    X = make_X(30, 8)
    _, M_loss = net(X)
    records = capture_masks(net, X)
    entropies = [(-r["M"] * torch.log(r["M"] + 1e-15)).sum(-1) for r in records]
    torch.testing.assert_close(M_loss, torch.stack(entropies).mean(0))


# --------------------------------------------------------------------------- alphas


@pytest.mark.parametrize(
    ("mode", "alpha", "expected"),
    [
        ("sparsemax", 1.2, 2.0),
        ("entmax15", 1.2, 1.5),
        ("constant", 1.2, 1.2),
        ("constant", 1.0, 1.0),
        ("adaptive", 1.2, 1.2),
        ("adaptive", 1.0, 1.01),
        ("adaptive", 2.0, 1.99),
    ],
)
def test_mask_alphas(mode, alpha, expected):
    net = make_net(6, 2, n_steps=3, entmax_mode=mode, entmax_alpha=alpha)
    alphas = net.mask_alphas()
    assert len(alphas) == 3
    assert all(isinstance(a, float) for a in alphas)
    assert alphas == pytest.approx([expected] * 3, abs=1e-5)


def toy_problem(n: int = 256, n_features: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    X = make_X(n, n_features, seed=1)
    y = ((X[:, 0] + X[:, 1] > 0).long() + (X[:, 2] > 0.5).long()).clamp_max(1)
    return X, y


def train_steps(net: TabNet, X, y, n_steps: int, lr: float = 0.03) -> list[float]:
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    losses = []
    net.train()
    for _ in range(n_steps):
        optimizer.zero_grad()
        scores, M_loss = net(X)
        loss = F.cross_entropy(scores, y) + 1e-3 * M_loss.mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_adaptive_alpha_is_learned_per_step():
    net = make_net(6, 2, n_steps=3, entmax_mode="adaptive", entmax_alpha=1.5)
    params = {id(p) for p in net.parameters()}
    raws = [att.adaptive.alpha_raw for att in net.attentive_transformers]
    assert all(isinstance(raw, nn.Parameter) for raw in raws)
    assert all(id(raw) in params for raw in raws)
    assert len({id(raw) for raw in raws}) == 3
    before = net.mask_alphas()
    X, y = toy_problem()
    train_steps(net, X, y, 8, lr=0.05)
    after = net.mask_alphas()
    assert all(abs(a - b) > 1e-4 for a, b in zip(before, after))
    assert all(1 < a < 2 for a in after)
    assert len(set(after)) == 3  # each step has its own alpha


def test_constant_alpha_is_not_learned():
    net = make_net(6, 2, n_steps=2, entmax_mode="constant", entmax_alpha=1.3)
    assert all(att.adaptive is None for att in net.attentive_transformers)
    X, y = toy_problem()
    train_steps(net, X, y, 3)
    assert net.mask_alphas() == [1.3, 1.3]


# --------------------------------------------------------------------------- explain


def test_embedding_layout_keeps_columns_in_place():
    net = make_net(5, 2, **CATS)
    assert net.post_embedding_dim == 5 - 2 + 3 + 2
    X = make_X(10, 5, cats=CATS)
    post = net.embed(X)
    assert post.shape == (10, 8)
    # layout: x0 | emb(x1) x3 | x2 | emb(x3) x2 | x4
    torch.testing.assert_close(post[:, 0], X[:, 0])
    torch.testing.assert_close(post[:, 1:4], net.embeddings[0](X[:, 1].long()))
    torch.testing.assert_close(post[:, 4], X[:, 2])
    torch.testing.assert_close(post[:, 5:7], net.embeddings[1](X[:, 3].long()))
    torch.testing.assert_close(post[:, 7], X[:, 4])


def test_single_int_embedding_width():
    net = make_net(5, 2, cat_idxs=[0, 4], cat_dims=[3, 3], cat_emb_dims=4)
    assert net.post_embedding_dim == 3 + 4 + 4
    assert [emb.embedding_dim for emb in net.embeddings] == [4, 4]


@pytest.mark.parametrize("mode", ["sparsemax", "constant"])
def test_explain_maps_back_to_original_columns(mode):
    net = make_net(5, 2, n_steps=3, entmax_mode=mode, entmax_alpha=1.2, **CATS).eval()
    X = make_X(40, 5, cats=CATS)
    group = torch.tensor([0, 1, 1, 1, 2, 3, 3, 4])
    decisions = []
    handles = [
        ft.register_forward_hook(lambda m, args, out: decisions.append(out[:, : net.n_d]))
        for ft in net.feature_transformers
    ]
    records = capture_masks(net, X)
    for handle in handles:
        handle.remove()
    M_explain, masks = net.explain(X)
    assert M_explain.shape == (40, 5)
    assert sorted(masks) == [0, 1, 2]
    expected_explain = torch.zeros(40, 5)
    for step, record in enumerate(records):
        expected = torch.zeros(40, 5).index_add_(1, group, record["M"])
        assert masks[step].shape == (40, 5)
        torch.testing.assert_close(masks[step], expected)
        # a column is exactly 0 where all its post-embedding features are
        all_zero = torch.zeros(40, 5, dtype=torch.bool)
        for col in range(5):
            all_zero[:, col] = (record["M"][:, group == col] == 0).all(-1)
        assert torch.equal(masks[step] == 0, all_zero)
        importance = F.relu(decisions[step]).sum(-1, keepdim=True)
        expected_explain += expected * importance
    torch.testing.assert_close(M_explain, expected_explain)
    assert (M_explain >= 0).all()
    if mode == "sparsemax":
        assert any((M == 0).any() for M in masks.values())


@pytest.mark.parametrize("value", [-1.0, 4.0, 1.5, float("nan")])
def test_bad_categorical_codes_raise(value):
    net = make_net(5, 2, **CATS)
    X = make_X(10, 5, cats=CATS)
    X[3, 1] = value
    with pytest.raises(ValueError, match="categorical columns"):
        net(X)


def test_wrong_input_width_raises():
    with pytest.raises(ValueError, match="n_samples, 5"):
        make_net(5, 2)(torch.randn(4, 6))


# --------------------------------------------------------------------------- ghost batch norm


def test_ghost_batch_norm_normalises_each_chunk():
    bn = GhostBatchNorm(3, virtual_batch_size=8, momentum=0.1)
    X = torch.cat([torch.randn(8, 3) + 10, torch.randn(8, 3) * 5 - 3, torch.randn(5, 3)])
    out = bn(X)
    for rows in (slice(0, 8), slice(8, 16), slice(16, 21)):
        expected = F.batch_norm(X[rows], None, None, training=True, eps=bn.eps)
        torch.testing.assert_close(out[rows], expected)
        torch.testing.assert_close(out[rows].mean(0), torch.zeros(3), atol=1e-5, rtol=0)
    # one normalisation of the whole batch would not centre the chunks
    whole = F.batch_norm(X, None, None, training=True)
    assert whole[:8].mean(0).abs().min() > 0.5


def test_ghost_batch_norm_affine_parameters():
    bn = GhostBatchNorm(2, virtual_batch_size=4)
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([2.0, 3.0]))
        bn.bias.copy_(torch.tensor([-1.0, 1.0]))
    X = torch.randn(10, 2)
    plain = F.batch_norm(X[:4], None, None, training=True, eps=bn.eps)
    torch.testing.assert_close(bn(X)[:4], plain * bn.weight + bn.bias)


def _chunk_by_chunk(ref, X, size):
    """An independent ghost batch norm: the BatchNorm1d ``ref`` fed each chunk in turn."""
    chunks = list(X.split(size))
    single = None
    if len(chunks) > 1 and chunks[-1].shape[0] == 1:
        chunks.pop()
        whole = F.batch_norm(X, None, None, training=True, eps=ref.eps)
        single = whole[-1:] * ref.weight + ref.bias
    outs = [ref(chunk) for chunk in chunks] + ([single] if single is not None else [])
    return torch.cat(outs)


@pytest.mark.parametrize(
    "n, size",
    [(11, 4), (8, 4), (9, 4), (16, 4), (17, 4), (21, 4), (23, 4), (40, 4), (41, 4), (64, 8)],
)
@pytest.mark.parametrize("split_max", [4, 0], ids=["cpu", "fused"])
def test_ghost_batch_norm_matches_batch_norm_chunk_by_chunk(n, size, split_max):
    # on a CPU up to four chunks go through batch norm one by one, more through the fused
    # call; split_max=0 takes the fused call at every count, as on a GPU
    torch.manual_seed(n)
    bn = GhostBatchNorm(3, virtual_batch_size=size, momentum=0.3, split_max_chunks=split_max)
    bn = bn.double()
    ref = nn.BatchNorm1d(3, momentum=0.3, dtype=torch.float64)
    with torch.no_grad():
        for module in (bn, ref):
            module.weight.copy_(torch.tensor([2.0, 0.5, -1.0]))
            module.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    for _ in range(2):  # the second pass starts from moved running statistics
        X = (torch.randn(n, 3, dtype=torch.float64) * 3 + 1).requires_grad_()
        X_ref = X.detach().clone().requires_grad_()
        out, expected = bn(X), _chunk_by_chunk(ref, X_ref, size)
        torch.testing.assert_close(out, expected)
        torch.testing.assert_close(bn.running_mean, ref.running_mean)
        torch.testing.assert_close(bn.running_var, ref.running_var)
    grad = torch.randn(n, 3, dtype=torch.float64)
    (out * grad).sum().backward()
    (expected * grad).sum().backward()
    torch.testing.assert_close(X.grad, X_ref.grad)
    torch.testing.assert_close(bn.weight.grad, ref.weight.grad)


def test_ghost_batch_norm_eval_uses_running_stats():
    bn = GhostBatchNorm(3, virtual_batch_size=4, momentum=0.3)
    for _ in range(5):
        bn(torch.randn(13, 3) * 2 + 1)
    bn.eval()
    X = torch.randn(7, 3)
    mean, var = bn.running_mean.clone(), bn.running_var.clone()
    expected = (X - mean) / torch.sqrt(var + bn.eps)
    torch.testing.assert_close(bn(X), expected)
    assert torch.equal(bn.running_mean, mean)
    torch.testing.assert_close(bn(X[:1]), expected[:1])


def test_ghost_batch_norm_single_row_chunk_uses_whole_batch():
    bn = GhostBatchNorm(2, virtual_batch_size=4)
    X = torch.randn(9, 2)
    out = bn(X)
    whole = F.batch_norm(X, None, None, training=True, eps=bn.eps)
    torch.testing.assert_close(out[8], whole[8])
    torch.testing.assert_close(out[:4], F.batch_norm(X[:4], None, None, training=True))
    # the single row takes no part in the running statistics: two updates, chunk by chunk
    torch.testing.assert_close(
        bn.running_mean, 0.98 * 0.02 * X[:4].mean(0) + 0.02 * X[4:8].mean(0)
    )


def test_ghost_batch_norm_single_row_batch_uses_running_stats():
    bn = GhostBatchNorm(2, virtual_batch_size=4)
    bn(torch.randn(16, 2) + 3)
    mean, var = bn.running_mean.clone(), bn.running_var.clone()
    x = torch.randn(1, 2, requires_grad=True)
    out = bn(x)
    out.sum().backward()
    torch.testing.assert_close(out, (x - mean) / torch.sqrt(var + bn.eps))
    assert torch.equal(bn.running_mean, mean)
    assert torch.equal(bn.running_var, var)


def test_ghost_batch_norm_matches_batch_norm_when_one_chunk():
    bn = GhostBatchNorm(4, virtual_batch_size=128, momentum=0.1)
    ref = nn.BatchNorm1d(4, momentum=0.1)
    X = torch.randn(50, 4)
    torch.testing.assert_close(bn(X), ref(X))
    torch.testing.assert_close(bn.running_mean, ref.running_mean)
    torch.testing.assert_close(bn.running_var, ref.running_var)


# --------------------------------------------------------------------------- training


@pytest.mark.parametrize("mode", ENTMAX_MODES)
def test_one_row_batch_in_training(mode):
    net = make_net(5, 2, entmax_mode=mode, virtual_batch_size=4, **CATS).train()
    for n in (1, 5, 9):  # one row; a one-row last chunk
        scores, M_loss = net(make_X(n, 5, cats=CATS))
        (scores.sum() + M_loss.sum()).backward()
        assert torch.isfinite(scores).all()


@pytest.mark.parametrize("mode", ENTMAX_MODES)
def test_training_reduces_loss(mode):
    net = make_net(6, 2, entmax_mode=mode, entmax_alpha=1.3, virtual_batch_size=64)
    X, y = toy_problem()
    losses = train_steps(net, X, y, 30)
    assert losses[-1] < 0.7 * losses[0]
    net.eval()
    with torch.no_grad():
        accuracy = (net(X)[0].argmax(-1) == y).float().mean()
    assert accuracy > 0.8


@pytest.mark.parametrize("mode", ENTMAX_MODES)
def test_eval_is_deterministic_and_leaves_state(mode):
    net = make_net(5, 3, entmax_mode=mode, **CATS)
    net(make_X(40, 5, cats=CATS))  # move the running statistics away from their start
    net.eval()
    state = {k: v.clone() for k, v in net.state_dict().items()}
    X = make_X(30, 5, seed=3, cats=CATS)
    first, second = net(X), net(X)
    assert torch.equal(first[0], second[0])
    assert torch.equal(first[1], second[1])
    # rows are independent in eval mode
    torch.testing.assert_close(net(X[:7])[0], first[0][:7])
    for key, value in net.state_dict().items():
        assert torch.equal(value, state[key]), key


def test_state_dict_round_trip():
    kwargs = {"entmax_mode": "adaptive", "entmax_alpha": 1.4, **CATS}
    net = make_net(5, 2, **kwargs)
    X, y = toy_problem(64, 5)
    X[:, 1] = X[:, 1].abs().floor().clamp_max(3)
    X[:, 3] = X[:, 3].abs().floor().clamp_max(5)
    train_steps(net, X, y, 3)
    clone = make_net(5, 2, seed=1, **kwargs)
    clone.load_state_dict(net.state_dict())
    net.eval()
    clone.eval()
    assert clone.mask_alphas() == net.mask_alphas()
    torch.testing.assert_close(clone(X)[0], net(X)[0])


@pytest.mark.parametrize("train", [True, False])
def test_gradcheck_float64(train):
    net = make_net(3, 2, n_steps=2, n_d=2, n_a=2, entmax_mode="entmax15", virtual_batch_size=4)
    net = net.double().train(train)
    X = make_X(6, 3).double().requires_grad_()
    assert torch.autograd.gradcheck(lambda x: net(x)[0], (X,), eps=1e-6, atol=1e-5)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n_features": 0}, "n_features"),
        ({"n_outputs": 0}, "n_outputs"),
        ({"n_d": 0}, "n_d"),
        ({"n_a": 2.5}, "n_a"),
        ({"n_steps": 0}, "n_steps"),
        ({"n_steps": True}, "n_steps"),
        ({"gamma": 0.5}, "gamma"),
        ({"gamma": float("inf")}, "gamma"),
        ({"n_independent": -1}, "n_independent"),
        ({"n_shared": -1}, "n_shared"),
        ({"n_shared": 0, "n_independent": 0}, "n_independent \\+ n_shared"),
        ({"virtual_batch_size": 1}, "virtual_batch_size"),
        ({"momentum": 1.5}, "momentum"),
        ({"entmax_mode": "softmax"}, "entmax_mode.*sparsemax.*entmax15.*constant.*adaptive"),
        ({"entmax_alpha": 2.5}, "entmax_alpha"),
        ({"entmax_alpha": 0.9, "entmax_mode": "constant"}, "entmax_alpha"),
        ({"entmax_alpha": float("nan")}, "entmax_alpha"),
        ({"cat_idxs": [1], "cat_dims": []}, "cat_dims.*length of cat_idxs"),
        ({"cat_idxs": [9], "cat_dims": [3]}, "cat_idxs"),
        ({"cat_idxs": [1, 1], "cat_dims": [3, 3]}, "cat_idxs"),
        ({"cat_idxs": [1], "cat_dims": [0]}, "cat_dims"),
        ({"cat_idxs": [1], "cat_dims": [3], "cat_emb_dims": [2, 2]}, "cat_emb_dims"),
        ({"cat_idxs": [1], "cat_dims": [3], "cat_emb_dims": 0}, "cat_emb_dims"),
    ],
)
def test_invalid_arguments(kwargs, name):
    args = {"n_features": 4, "n_outputs": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        TabNet(**args)


def test_attentive_transformer_validates_mode():
    with pytest.raises(ValueError, match="entmax_mode"):
        AttentiveTransformer(4, 4, entmax_mode="bisect")


def test_classifier_net_train_sets_every_submodule():
    net = TabNetClassifierNet(n_features=5, n_outputs=3, entmax_mode="adaptive")
    calls = []

    class Custom(nn.Module):
        def train(self, mode=True):
            calls.append(mode)
            return super().train(mode)

    net.tabnet.extra = Custom()
    assert net.eval() is net
    assert not any(module.training for module in net.modules())
    assert net.train() is net
    assert all(module.training for module in net.modules())
    assert calls == [False, True]
    with pytest.raises(ValueError, match="boolean"):
        net.train("yes")
