"""TabNet (Arik & Pfister, 2019) with a choice of mask mapping.

TabNet processes a row in ``n_steps`` decision steps. At each step an *attentive transformer*
turns the previous step's attention features into a mask over the input features, the masked
input goes through a *feature transformer* (a stack of gated linear units), and the result is
split into a decision part, whose ReLU is summed over the steps into the output layer, and an
attention part that feeds the next step. A *prior* of how much each feature has been used so
far, ``prior <- prior * (gamma - M)``, discourages reusing the same features.

The paper's mask mapping is sparsemax; here ``entmax_mode`` picks it:

``"sparsemax"``
    exact sparsemax (alpha = 2);
``"entmax15"``
    exact 1.5-entmax;
``"constant"``
    alpha-entmax at a fixed ``entmax_alpha`` in [1, 2] (1 is softmax; 1.5 and 2 use the exact
    sort-based maps, other values bisection);
``"adaptive"``
    alpha-entmax whose alpha is learned, one alpha per decision step, each kept in (1, 2) by
    :class:`~sk_entmax.entmax.AdaptiveEntmax`.

Every mapping but softmax gives masks with exact zeros: features a step does not look at.

Batch normalisation is *ghost* batch normalisation (Hoffer et al., 2017): in training the
statistics are those of virtual batches of ``virtual_batch_size`` rows, see
:class:`GhostBatchNorm`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from sk_entmax.entmax import AdaptiveEntmax, entmax, entmax15, sparsemax
from sk_entmax.nn.head import EntmaxHead

__all__ = [
    "ENTMAX_MODES",
    "AttentiveTransformer",
    "FeatureTransformer",
    "GLULayer",
    "GhostBatchNorm",
    "TabNet",
    "TabNetClassifierNet",
]

ENTMAX_MODES = ("sparsemax", "entmax15", "constant", "adaptive")

# A learned alpha starts strictly inside (1, 2): AdaptiveEntmax's sigmoid map never reaches
# the ends, and starting right next to them would leave a vanishing gradient.
ADAPTIVE_ALPHA_START_RANGE = (1.01, 1.99)

# Added inside the log of the mask entropy, so that zeros of a sparse mask contribute 0.
_ENTROPY_EPS = 1e-15

_RESIDUAL_SCALE = math.sqrt(0.5)
# up to this many chunks, ghost batch norm calls batch norm per chunk; beyond, one fused call
_GHOST_SPLIT_MAX_CHUNKS = 4


# --------------------------------------------------------------------------- validation


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def _check_real(name: str, value: object, low: float, high: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not low <= value <= high  # also rejects NaN
    ):
        raise ValueError(f"{name} must be a number in [{low}, {high}], got {value!r}")
    return float(value)


# --------------------------------------------------------------------------- building blocks


class GhostBatchNorm(nn.Module):
    """Batch normalisation over virtual batches ("ghost" batch norm, Hoffer et al., 2017).

    In training, the rows are cut into consecutive chunks of ``virtual_batch_size`` rows (the
    last chunk may be smaller) and each chunk is normalised with its own mean and (biased)
    variance, which regularises like training with small batches while the batch itself can
    be large. In evaluation the running statistics are used, as in
    :class:`torch.nn.BatchNorm1d`.

    The running statistics are updated chunk by chunk, as a :class:`torch.nn.BatchNorm1d`
    that saw each chunk in turn (pytorch-tabnet's ghost batch norm does the same): each chunk
    moves them by ``momentum`` towards its mean and unbiased variance. A few chunks are each
    normalised by one batch-norm call; many full chunks are normalised together by one fused
    batch norm over a transposed view, with the same result and running statistics.

    Edge cases, by design:

    - a last chunk of a single row has no statistics of its own; it is normalised with the
      statistics of the whole batch and takes no part in the running statistics;
    - a whole batch of a single row (or none) is normalised with the running statistics, as
      in evaluation, and leaves them unchanged; so training never fails on a one-row batch.

    Parameters
    ----------
    num_features : int
        Number of features (columns).
    virtual_batch_size : int, default=128
        Rows per virtual batch, at least 2.
    momentum : float, default=0.02
        Weight of the new statistics in the running averages, in [0, 1].
    eps : float, default=1e-5
        Added to the variance before the square root.

    Attributes
    ----------
    weight, bias : torch.nn.Parameter of shape (num_features,)
        The affine transformation applied after normalising.
    running_mean, running_var : torch.Tensor of shape (num_features,)
        Buffers with the running statistics used in evaluation.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.nn.tabnet import GhostBatchNorm
    >>> bn = GhostBatchNorm(1, virtual_batch_size=2)
    >>> bn(torch.tensor([[0.0], [2.0], [10.0], [30.0]])).detach().flatten()
    tensor([-1.0000,  1.0000, -1.0000,  1.0000])
    """

    def __init__(
        self,
        num_features: int,
        virtual_batch_size: int = 128,
        momentum: float = 0.02,
        eps: float = 1e-5,
    ) -> None:
        super().__init__()
        self.num_features = _check_int("num_features", num_features, 1)
        self.virtual_batch_size = _check_int("virtual_batch_size", virtual_batch_size, 2)
        self.momentum = _check_real("momentum", momentum, 0.0, 1.0)
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def _eval_norm(self, X: torch.Tensor) -> torch.Tensor:
        return F.batch_norm(
            X, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps
        )

    def _train_norm(self, X: torch.Tensor) -> torch.Tensor:
        """Batch norm of one chunk of at least 2 rows, moving the running statistics."""
        return F.batch_norm(
            X,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            True,
            self.momentum,
            self.eps,
        )

    def _fused_norm(self, X: torch.Tensor, n_chunks: int) -> torch.Tensor:
        """Normalise ``n_chunks`` full chunks at once; running statistics as if in turn."""
        size, n_feat = self.virtual_batch_size, X.shape[1]
        # chunk c, feature f becomes column c * n_feat + f of a (size, n_chunks * n_feat)
        # view, so per-column statistics are per-chunk statistics
        cols = X.reshape(n_chunks, size, n_feat).transpose(0, 1).reshape(size, -1)
        out, mean, invstd = torch.native_batch_norm(
            cols, None, None, None, None, True, 0.0, self.eps
        )
        with torch.no_grad():
            # k updates in turn: r <- (1 - m)^k r + sum_c m (1 - m)^(k - 1 - c) s_c
            keep = (1.0 - self.momentum) ** n_chunks
            weights = self.momentum * (1.0 - self.momentum) ** torch.arange(
                n_chunks - 1, -1, -1, dtype=mean.dtype, device=mean.device
            )
            var = (invstd.pow(-2) - self.eps) * (size / (size - 1))
            for running, stat in ((self.running_mean, mean), (self.running_var, var)):
                update = weights @ stat.view(n_chunks, n_feat)
                running.mul_(keep).add_(update.to(running.dtype))
        out = out.reshape(size, n_chunks, n_feat).transpose(0, 1).reshape(X.shape)
        return torch.addcmul(self.bias, out, self.weight)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Normalise ``X`` of shape (n_samples, num_features)."""
        n = X.shape[0]
        if not self.training or n < 2:
            return self._eval_norm(X)
        size = self.virtual_batch_size
        if n <= size:
            return self._train_norm(X)
        n_full, rest = divmod(n, size)
        single = None
        if rest == 1:
            # a one-row last chunk: normalised with the statistics of the whole batch
            var, mean = torch.var_mean(X, dim=0, correction=0)
            single = (X[-1:] - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias
            X, rest = X[:-1], 0
        if n_full + (rest > 0) <= _GHOST_SPLIT_MAX_CHUNKS:
            parts = [self._train_norm(chunk) for chunk in X.split(size)]
        else:
            n_in_full = n_full * size
            parts = [self._fused_norm(X[:n_in_full] if rest else X, n_full)]
            if rest:
                parts.append(self._train_norm(X[n_in_full:]))
        if single is not None:
            parts.append(single)
        return torch.cat(parts) if len(parts) > 1 else parts[0]

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, virtual_batch_size={self.virtual_batch_size}, "
            f"momentum={self.momentum}, eps={self.eps}"
        )


class GLULayer(nn.Module):
    """A gated linear unit: ``Linear(in, 2 out, bias=False) -> GhostBatchNorm -> GLU``.

    Parameters
    ----------
    fc : torch.nn.Linear
        The linear layer, possibly shared with other ``GLULayer``s (its output width must be
        even); the batch norm is always this layer's own.
    virtual_batch_size : int, default=128
        See :class:`GhostBatchNorm`.
    momentum : float, default=0.02
        See :class:`GhostBatchNorm`.

    Attributes
    ----------
    fc : torch.nn.Linear
        The (maybe shared) linear layer.
    bn : GhostBatchNorm
        The layer's own ghost batch norm.
    """

    def __init__(
        self, fc: nn.Linear, virtual_batch_size: int = 128, momentum: float = 0.02
    ) -> None:
        super().__init__()
        if fc.out_features % 2:
            raise ValueError(f"fc must have an even out_features, got {fc.out_features}")
        self.fc = fc
        self.bn = GhostBatchNorm(fc.out_features, virtual_batch_size, momentum)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return F.glu(self.bn(self.fc(X)), dim=-1)


class FeatureTransformer(nn.Module):
    """Shared then step-specific GLU layers, with residual connections scaled by sqrt(1/2).

    Each layer's output is added to its input and scaled by ``sqrt(0.5)``, so the variance
    stays put, except for the very first layer when its input width differs from
    ``out_features`` (there is nothing of the right width to add).

    Parameters
    ----------
    in_features : int
        Input width.
    out_features : int
        Output width of every layer.
    shared : sequence of torch.nn.Linear
        Linear layers shared by all the feature transformers of a :class:`TabNet` (the first
        maps ``in_features`` to ``2 out_features``, the others ``out_features`` to
        ``2 out_features``); each transformer has its own batch norms for them.
    n_independent : int
        Number of further GLU layers of this transformer alone.
    virtual_batch_size : int, default=128
        See :class:`GhostBatchNorm`.
    momentum : float, default=0.02
        See :class:`GhostBatchNorm`.

    Attributes
    ----------
    layers : torch.nn.ModuleList of GLULayer
        The shared-weight layers followed by the independent ones.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        shared: Sequence[nn.Linear],
        n_independent: int,
        virtual_batch_size: int = 128,
        momentum: float = 0.02,
    ) -> None:
        super().__init__()
        if not shared and n_independent < 1:
            raise ValueError("a feature transformer needs at least one GLU layer")
        layers = [GLULayer(fc, virtual_batch_size, momentum) for fc in shared]
        width = out_features if shared else in_features
        for _ in range(n_independent):
            fc = nn.Linear(width, 2 * out_features, bias=False)
            layers.append(GLULayer(fc, virtual_batch_size, momentum))
            width = out_features
        self.layers = nn.ModuleList(layers)
        self.first_residual = in_features == out_features

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            if i == 0 and not self.first_residual:
                X = layer(X)
            else:
                X = (X + layer(X)) * _RESIDUAL_SCALE
        return X


class AttentiveTransformer(nn.Module):
    """The mask of one decision step: ``mapping(GhostBatchNorm(Linear(a)) * prior)``.

    Parameters
    ----------
    n_a : int
        Width of the attention features ``a`` coming from the previous step.
    n_features : int
        Number of (post-embedding) features to mask.
    entmax_mode : {"sparsemax", "entmax15", "constant", "adaptive"}, default="sparsemax"
        The mapping onto the simplex (see the module docstring).
    entmax_alpha : float, default=1.5
        The alpha of ``"constant"`` mode, and the starting alpha of ``"adaptive"`` mode
        (clipped into [1.01, 1.99]).
    virtual_batch_size : int, default=128
        See :class:`GhostBatchNorm`.
    momentum : float, default=0.02
        See :class:`GhostBatchNorm`.

    Attributes
    ----------
    fc : torch.nn.Linear
        ``n_a -> n_features``, no bias.
    bn : GhostBatchNorm
        Normalises the scores.
    adaptive : AdaptiveEntmax or None
        Holds this step's learned alpha in ``"adaptive"`` mode.
    """

    def __init__(
        self,
        n_a: int,
        n_features: int,
        entmax_mode: str = "sparsemax",
        entmax_alpha: float = 1.5,
        virtual_batch_size: int = 128,
        momentum: float = 0.02,
    ) -> None:
        super().__init__()
        if entmax_mode not in ENTMAX_MODES:
            raise ValueError(f"entmax_mode must be one of {ENTMAX_MODES}, got {entmax_mode!r}")
        self.entmax_mode = entmax_mode
        self.entmax_alpha = _check_real("entmax_alpha", entmax_alpha, 1.0, 2.0)
        self.fc = nn.Linear(n_a, n_features, bias=False)
        self.bn = GhostBatchNorm(n_features, virtual_batch_size, momentum)
        self.adaptive = None
        if entmax_mode == "adaptive":
            low, high = ADAPTIVE_ALPHA_START_RANGE
            start = min(max(self.entmax_alpha, low), high)
            self.adaptive = AdaptiveEntmax(alpha=start, dim=-1, alpha_max=2.0)

    @property
    def alpha(self) -> float | torch.Tensor:
        """The alpha of the mapping: a number, or the learnable tensor in adaptive mode."""
        if self.adaptive is not None:
            return self.adaptive.alpha
        return {"sparsemax": 2.0, "entmax15": 1.5}.get(self.entmax_mode, self.entmax_alpha)

    def scores(self, a: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
        """The pre-activation ``GhostBatchNorm(fc(a)) * prior`` that the mapping turns into M."""
        return self.bn(self.fc(a)) * prior

    def mapping(self, Z: torch.Tensor) -> torch.Tensor:
        """The mask mapping of ``entmax_mode`` along the last axis."""
        if self.entmax_mode == "sparsemax":
            return sparsemax(Z, dim=-1, training=self.training)
        if self.entmax_mode == "entmax15":
            return entmax15(Z, dim=-1, training=self.training)
        if self.adaptive is not None:
            return self.adaptive(Z)
        return entmax(Z, self.entmax_alpha, dim=-1, training=self.training)

    def forward(self, a: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
        """The mask M, of shape (n_samples, n_features), each row on the simplex."""
        return self.mapping(self.scores(a, prior))

    def extra_repr(self) -> str:
        return f"entmax_mode={self.entmax_mode!r}, entmax_alpha={self.entmax_alpha}"


# --------------------------------------------------------------------------- TabNet


class TabNet(nn.Module):
    """TabNet: attentive, sequential feature selection for tabular data.

    Implements Arik & Pfister (2019), "TabNet: Attentive Interpretable Tabular Learning",
    with the mask mapping chosen by ``entmax_mode`` (see the module docstring). The forward
    pass returns the scores and the sparsity regulariser; the estimator adds
    ``lambda_sparse * M_loss`` (per row) to its per-row loss.

    Categorical columns are embedded: column ``cat_idxs[i]`` holds integer codes (as floats)
    in ``[0, cat_dims[i])`` and is replaced, in place, by ``cat_emb_dims[i]`` embedding
    features. Code 0 is reserved by the caller for unknown or unseen categories; it is
    embedded like any other code. The masks act on these *post-embedding* features, and
    :meth:`explain` sums them back per original column.

    Missing values: a continuous column may hold NaN. Each NaN is replaced by that column's
    ``missing_fill`` value (0 by default; the estimator passes the training mean, which the
    first batch norm maps to about 0). A column listed in ``missing_idxs`` also gets a second
    feature beside it, its missing indicator (1 where the value was NaN, else 0), so the
    network can learn what a missing value means there; the value and its indicator are one
    group, masked and explained together as that column. A NaN in a column not listed is
    filled only, as if the value were average.

    Parameters
    ----------
    n_features : int
        Number of input columns.
    n_outputs : int
        Number of output scores (classes).
    n_d : int, default=8
        Width of the decision part of each step.
    n_a : int, default=8
        Width of the attention part of each step.
    n_steps : int, default=3
        Number of decision steps.
    gamma : float, default=1.3
        Feature reuse relaxation, at least 1: 1 lets each feature be used at one step only,
        larger values let steps share features.
    n_independent : int, default=2
        Step-specific GLU layers in each feature transformer.
    n_shared : int, default=2
        GLU layers whose linear weights all the feature transformers share.
    virtual_batch_size : int, default=128
        Rows per virtual batch of the ghost batch norms (at least 2).
    momentum : float, default=0.02
        Momentum of all the batch norms' running statistics, in [0, 1].
    entmax_mode : {"sparsemax", "entmax15", "constant", "adaptive"}, default="sparsemax"
        The mask mapping. ``"adaptive"`` learns one alpha per decision step, each an
        ``nn.Parameter`` of its step's :class:`~sk_entmax.entmax.AdaptiveEntmax`, in (1, 2).
    entmax_alpha : float, default=1.5
        In [1, 2]. The alpha of ``"constant"`` mode (1 is softmax), the starting alpha of
        ``"adaptive"`` mode (clipped into [1.01, 1.99]); unused by the other modes.
    cat_idxs : sequence of int, default=()
        Indices of the categorical columns.
    cat_dims : sequence of int, default=()
        Number of codes of each categorical column (code 0 included).
    cat_emb_dims : int or sequence of int, default=1
        Embedding width, one for all categorical columns or one per column.
    missing_idxs : sequence of int, default=()
        Continuous columns that get a missing indicator feature (see above).
    missing_fill : sequence of float or None, default=None
        One finite value per input column (``n_features`` of them; the entries of
        categorical columns are unused) that replaces a NaN in a continuous column; None is
        0 for every column.

    Attributes
    ----------
    post_embedding_dim : int
        Number of features after the embeddings, the width of the masks.
    embeddings : torch.nn.ModuleList of torch.nn.Embedding
        One per categorical column, in the order of ``cat_idxs``.
    initial_bn : torch.nn.BatchNorm1d
        Normalises the post-embedding features (with running statistics on a one-row batch).
    shared : torch.nn.ModuleList of torch.nn.Linear
        The linear layers shared by all the feature transformers.
    initial_splitter : FeatureTransformer
        Computes the attention features of the first step.
    feature_transformers : torch.nn.ModuleList of FeatureTransformer
        One per decision step.
    attentive_transformers : torch.nn.ModuleList of AttentiveTransformer
        One per decision step.
    final_mapping : torch.nn.Linear
        ``n_d -> n_outputs``.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.nn import TabNet
    >>> _ = torch.manual_seed(0)
    >>> net = TabNet(4, 3, n_steps=2, cat_idxs=[1], cat_dims=[5], cat_emb_dims=2)
    >>> X = torch.randn(16, 4)
    >>> X[:, 1] = torch.randint(0, 5, (16,)).float()
    >>> scores, M_loss = net(X)
    >>> scores.shape, M_loss.shape
    (torch.Size([16, 3]), torch.Size([16]))
    >>> M_explain, masks = net.explain(X)
    >>> M_explain.shape, sorted(masks), masks[0].shape
    (torch.Size([16, 4]), [0, 1], torch.Size([16, 4]))
    >>> net.mask_alphas()
    [2.0, 2.0]
    """

    def __init__(
        self,
        n_features: int,
        n_outputs: int,
        n_d: int = 8,
        n_a: int = 8,
        n_steps: int = 3,
        gamma: float = 1.3,
        n_independent: int = 2,
        n_shared: int = 2,
        virtual_batch_size: int = 128,
        momentum: float = 0.02,
        entmax_mode: str = "sparsemax",
        entmax_alpha: float = 1.5,
        cat_idxs: Sequence[int] = (),
        cat_dims: Sequence[int] = (),
        cat_emb_dims: int | Sequence[int] = 1,
        missing_idxs: Sequence[int] = (),
        missing_fill: Sequence[float] | None = None,
    ) -> None:
        super().__init__()
        self.n_features = _check_int("n_features", n_features, 1)
        self.n_outputs = _check_int("n_outputs", n_outputs, 1)
        self.n_d = _check_int("n_d", n_d, 1)
        self.n_a = _check_int("n_a", n_a, 1)
        self.n_steps = _check_int("n_steps", n_steps, 1)
        self.gamma = _check_real("gamma", gamma, 1.0, math.inf)
        if not math.isfinite(self.gamma):
            raise ValueError(f"gamma must be a finite number >= 1, got {gamma!r}")
        self.n_independent = _check_int("n_independent", n_independent, 0)
        self.n_shared = _check_int("n_shared", n_shared, 0)
        if n_independent + n_shared < 1:
            raise ValueError(
                "n_independent + n_shared must be at least 1, got "
                f"n_independent={n_independent} and n_shared={n_shared}"
            )
        _check_int("virtual_batch_size", virtual_batch_size, 2)
        momentum = _check_real("momentum", momentum, 0.0, 1.0)
        if entmax_mode not in ENTMAX_MODES:
            raise ValueError(f"entmax_mode must be one of {ENTMAX_MODES}, got {entmax_mode!r}")
        self.entmax_mode = entmax_mode
        self.entmax_alpha = _check_real("entmax_alpha", entmax_alpha, 1.0, 2.0)
        cat_idxs, cat_dims, emb_dims = self._check_categorical(cat_idxs, cat_dims, cat_emb_dims)
        self.cat_idxs, self.cat_dims, self.cat_emb_dims = cat_idxs, cat_dims, emb_dims
        self.missing_idxs, fill = self._check_missing(missing_idxs, missing_fill)

        # Post-embedding layout: each column in its original place, a categorical column
        # widened to its embedding, a column with a missing indicator to its value and the
        # indicator. ``_group`` maps each post-embedding feature to its column; ``_order``
        # puts [continuous columns, indicators, embedding 0, embedding 1, ...] in that layout.
        widths = [1] * n_features
        for idx, dim in zip(cat_idxs, emb_dims, strict=True):
            widths[idx] = dim
        for idx in self.missing_idxs:
            widths[idx] = 2
        self.post_embedding_dim = sum(widths)
        group = torch.repeat_interleave(torch.arange(n_features), torch.tensor(widths))
        is_cat = torch.zeros(n_features, dtype=torch.bool)
        is_cat[list(cat_idxs)] = True
        continuous = torch.nonzero(~is_cat).flatten()
        missing = torch.tensor(self.missing_idxs, dtype=torch.long)
        concat_group = torch.cat(
            [
                continuous,
                missing,
                *(torch.full((d,), i) for i, d in zip(cat_idxs, emb_dims, strict=True)),
            ]
        )
        order = torch.argsort(concat_group, stable=True)
        self.register_buffer("_group", group, persistent=False)
        self.register_buffer("_continuous", continuous, persistent=False)
        self.register_buffer("_order", order, persistent=False)
        self.register_buffer("_missing_idxs", missing, persistent=False)
        # float, so that .to(dtype) moves it with the weights; not saved (it is an argument)
        self.register_buffer("_fill", fill[continuous], persistent=False)
        self.register_buffer(
            "_cat_idxs", torch.tensor(cat_idxs, dtype=torch.long), persistent=False
        )
        self.register_buffer(
            "_cat_dims", torch.tensor(cat_dims, dtype=torch.long), persistent=False
        )
        self.embeddings = nn.ModuleList(
            nn.Embedding(n, d) for n, d in zip(cat_dims, emb_dims, strict=True)
        )

        width = self.post_embedding_dim
        hidden = n_d + n_a
        self.initial_bn = nn.BatchNorm1d(width, momentum=momentum)
        self.shared = nn.ModuleList(
            nn.Linear(width if i == 0 else hidden, 2 * hidden, bias=False) for i in range(n_shared)
        )
        ghost = {"virtual_batch_size": virtual_batch_size, "momentum": momentum}
        self.initial_splitter = FeatureTransformer(
            width, hidden, self.shared, n_independent, **ghost
        )
        self.feature_transformers = nn.ModuleList(
            FeatureTransformer(width, hidden, self.shared, n_independent, **ghost)
            for _ in range(n_steps)
        )
        self.attentive_transformers = nn.ModuleList(
            AttentiveTransformer(n_a, width, entmax_mode, self.entmax_alpha, **ghost)
            for _ in range(n_steps)
        )
        self.final_mapping = nn.Linear(n_d, n_outputs)

    def _check_categorical(
        self,
        cat_idxs: Sequence[int],
        cat_dims: Sequence[int],
        cat_emb_dims: int | Sequence[int],
    ) -> tuple[list[int], list[int], list[int]]:
        cat_idxs, cat_dims = list(cat_idxs), list(cat_dims)
        if len(cat_idxs) != len(cat_dims):
            raise ValueError(
                f"cat_idxs and cat_dims must have the same length, got {len(cat_idxs)} "
                f"and {len(cat_dims)}"
            )
        for idx in cat_idxs:
            if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < self.n_features:
                raise ValueError(
                    f"cat_idxs must hold column indices in [0, {self.n_features}), got {idx!r}"
                )
        if len(set(cat_idxs)) != len(cat_idxs):
            raise ValueError(f"cat_idxs must not repeat a column, got {cat_idxs}")
        for dim in cat_dims:
            _check_int("cat_dims entries", dim, 1)
        if isinstance(cat_emb_dims, int) and not isinstance(cat_emb_dims, bool):
            emb_dims = [cat_emb_dims] * len(cat_idxs)
        else:
            emb_dims = list(cat_emb_dims)
            if len(emb_dims) != len(cat_idxs):
                raise ValueError(
                    "cat_emb_dims must be an int or have the length of cat_idxs "
                    f"({len(cat_idxs)}), got {len(emb_dims)}"
                )
        for dim in emb_dims:
            _check_int("cat_emb_dims entries", dim, 1)
        return cat_idxs, cat_dims, emb_dims

    def _check_missing(
        self, missing_idxs: Sequence[int], missing_fill: Sequence[float] | None
    ) -> tuple[list[int], torch.Tensor]:
        missing_idxs = list(missing_idxs)
        for idx in missing_idxs:
            if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < self.n_features:
                raise ValueError(
                    f"missing_idxs must hold column indices in [0, {self.n_features}), got {idx!r}"
                )
        if len(set(missing_idxs)) != len(missing_idxs):
            raise ValueError(f"missing_idxs must not repeat a column, got {missing_idxs}")
        both = sorted(set(missing_idxs) & set(self.cat_idxs))
        if both:
            raise ValueError(
                f"missing_idxs must name continuous columns; {both} are categorical (a "
                "categorical column's missing values take its code 0)"
            )
        if missing_fill is None:
            return missing_idxs, torch.zeros(self.n_features)
        values = list(missing_fill)
        if len(values) != self.n_features or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in values
        ):
            raise ValueError(
                f"missing_fill must be None or {self.n_features} finite numbers (one per "
                f"column), got {missing_fill!r}"
            )
        return missing_idxs, torch.tensor(values, dtype=torch.get_default_dtype())

    # ------------------------------------------------------------------ forward pieces

    def embed(self, X: torch.Tensor) -> torch.Tensor:
        """The post-embedding features, of shape (n_samples, post_embedding_dim)."""
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(
                f"X must have shape (n_samples, {self.n_features}), got {tuple(X.shape)}"
            )
        continuous = X[:, self._continuous] if self.cat_idxs else X
        # missing values (NaN) take the column's fill value; the indicators say where
        continuous = torch.where(torch.isnan(continuous), self._fill, continuous)
        if not self.cat_idxs and not self.missing_idxs:
            return continuous
        pieces = [continuous]
        if self.missing_idxs:
            pieces.append(torch.isnan(X[:, self._missing_idxs]).to(X.dtype))
        if not self.cat_idxs:
            return torch.cat(pieces, dim=1)[:, self._order]
        codes = X[:, self._cat_idxs]
        if (
            not torch.equal(codes, codes.round())
            or ((codes < 0) | (codes >= self._cat_dims)).any()
        ):
            raise ValueError(
                f"categorical columns {self.cat_idxs} must hold integer codes in "
                f"[0, cat_dims) = [0, {self.cat_dims})"
            )
        codes = codes.long()
        pieces += [emb(codes[:, i]).to(X.dtype) for i, emb in enumerate(self.embeddings)]
        return torch.cat(pieces, dim=1)[:, self._order]

    def _initial_bn(self, X: torch.Tensor) -> torch.Tensor:
        if self.training and X.shape[0] < 2:
            # One row has no batch statistics: normalise as in evaluation, update nothing.
            bn = self.initial_bn
            return F.batch_norm(
                X, bn.running_mean, bn.running_var, bn.weight, bn.bias, False, 0.0, bn.eps
            )
        return self.initial_bn(X)

    def _steps(self, X: torch.Tensor):
        """Run the decision steps; yields ``(mask, decision)`` per step (post-embedding)."""
        X = self._initial_bn(self.embed(X))
        prior = torch.ones_like(X)
        a = self.initial_splitter(X)[:, self.n_d :]
        for attentive, transformer in zip(
            self.attentive_transformers, self.feature_transformers, strict=True
        ):
            M = attentive(a, prior)
            prior = prior * (self.gamma - M)
            out = transformer(M * X)
            yield M, F.relu(out[:, : self.n_d])
            a = out[:, self.n_d :]

    def forward(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores and the sparsity regulariser.

        Parameters
        ----------
        X : torch.Tensor of shape (n_samples, n_features)
            Float features; categorical columns hold their integer codes.

        Returns
        -------
        scores : torch.Tensor of shape (n_samples, n_outputs)
            The output of the final linear layer.
        M_loss : torch.Tensor of shape (n_samples,)
            Per row, the mean over steps of the mask entropy ``sum_j -M_j log(M_j + 1e-15)``:
            0 for one-hot masks, ``log(d)`` for uniform ones. Per row, so that the estimator
            weights it like the rest of the loss; its mean is the usual regulariser.
        """
        total = 0
        entropy = 0
        for M, d in self._steps(X):
            total = total + d
            entropy = entropy + (-M * torch.log(M + _ENTROPY_EPS)).sum(-1)
        return self.final_mapping(total), entropy / self.n_steps

    def _to_columns(self, M: torch.Tensor) -> torch.Tensor:
        """Sum post-embedding features back per original column (zeros stay exact zeros)."""
        if self.post_embedding_dim == self.n_features:  # every column one feature, in place
            return M
        out = M.new_zeros(M.shape[0], self.n_features)
        return out.index_add_(1, self._group, M)

    def explain(self, X: torch.Tensor) -> tuple[torch.Tensor, dict[int, torch.Tensor]]:
        """Feature attributions and the masks of each step, per original column.

        Runs in whatever mode the module is in; call ``eval()`` (and ``torch.no_grad()``)
        first for attributions of a trained model.

        Parameters
        ----------
        X : torch.Tensor of shape (n_samples, n_features)
            Float features; categorical columns hold their integer codes.

        Returns
        -------
        M_explain : torch.Tensor of shape (n_samples, n_features)
            ``sum_steps mask * sum(ReLU(decision))``: each step's mask weighted by how much
            that step contributes to the decision (Arik & Pfister, 2019, section 3).
        masks : dict of int to torch.Tensor of shape (n_samples, n_features)
            The mask of each step, ``{0: ..., 1: ..., ...}``; each row sums to 1, and the
            sparse modes keep their exact zeros.
        """
        M_explain = 0
        masks = {}
        for step, (M, d) in enumerate(self._steps(X)):
            M_cols = self._to_columns(M)
            masks[step] = M_cols
            M_explain = M_explain + M_cols * d.sum(-1, keepdim=True)
        return M_explain, masks

    def mask_alphas(self) -> list[float]:
        """The alpha of each step's mask mapping (learned ones in ``"adaptive"`` mode).

        Returns
        -------
        list of float
            2.0 for sparsemax, 1.5 for entmax15, ``entmax_alpha`` in constant mode.
        """
        alphas = []
        for attentive in self.attentive_transformers:
            alpha = attentive.alpha
            alphas.append(float(alpha.detach()) if isinstance(alpha, torch.Tensor) else alpha)
        return alphas


class TabNetClassifierNet(nn.Module):
    """TabNet scores with an entmax output and the sparsity regulariser in its loss.

    The module a TabNet estimator trains: ``forward`` returns ``(scores, M_loss)`` and
    :meth:`loss` adds ``lambda_sparse * M_loss`` (per row) to the per-row Fenchel-Young loss
    of the output mapping, which :meth:`proba` applies at prediction.

    Parameters
    ----------
    lambda_sparse : float, default=1e-3
        Weight of the mask-entropy regulariser.
    alpha : float, default=1.5
        The alpha of the output mapping (1 softmax, 1.5 entmax15, 2 sparsemax).
    **tabnet_params
        Passed to :class:`TabNet` (``n_features`` and ``n_outputs`` included).

    Attributes
    ----------
    tabnet : TabNet
        The network.
    head : sk_entmax.nn.head.EntmaxHead
        The output mapping.
    """

    def __init__(self, lambda_sparse: float = 1e-3, alpha: float = 1.5, **tabnet_params) -> None:
        super().__init__()
        self.lambda_sparse = float(lambda_sparse)
        self.tabnet = TabNet(**tabnet_params)
        self.head = EntmaxHead(alpha)

    @property
    def alpha(self) -> float | torch.Tensor:
        """The alpha of the output mapping."""
        return self.head.alpha

    def train(self, mode: bool = True) -> TabNetClassifierNet:
        """Set training (or evaluation) mode on this module and all its submodules.

        The same result as :meth:`torch.nn.Module.train`, in one flat pass over the
        submodules rather than a recursive call per submodule: skorch calls it before every
        training step, and TabNet has dozens of submodules. A submodule that overrides
        ``train`` still has its own method called.
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            if type(module).train is nn.Module.train or module is self:
                module.__dict__["training"] = mode
            else:
                module.train(mode)
        return self

    def forward(
        self, X: torch.Tensor, sample_weight: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(scores, M_loss)``; ``sample_weight`` is for the loss only."""
        return self.tabnet(X)

    def loss(self, output: tuple[torch.Tensor, torch.Tensor], target: torch.Tensor):
        """Per-row loss: Fenchel-Young loss of the scores plus the weighted mask entropy."""
        scores, mask_entropy = output
        return self.head.loss(scores, target) + self.lambda_sparse * mask_entropy

    def proba(self, scores: torch.Tensor) -> torch.Tensor:
        """The probabilities of the output mapping."""
        return self.head.proba(scores)
