"""The building blocks of :class:`~sk_entmax.nn.tabnet.TabNet`.

Ghost batch normalisation (:class:`GhostBatchNorm`), gated linear units
(:class:`GLULayer`) stacked into a :class:`FeatureTransformer`, and the
:class:`AttentiveTransformer` that makes each step's mask with the mapping ``entmax_mode``
picks (the modes are described in :mod:`sk_entmax.nn.tabnet`). The network itself is in
:mod:`sk_entmax.nn.tabnet`, the column embeddings in :mod:`sk_entmax.nn.tabnet_embedding`.

Each block checks the arguments it uses itself, with the constraints of
:mod:`sk_entmax.entmax.constraints`; ``TabNet`` passes them on unchecked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from sk_entmax.entmax import AdaptiveEntmax, entmax
from sk_entmax.entmax.constraints import (
    Integer,
    Satisfies,
    check,
    invalid,
)
from sk_entmax.entmax.tracing import owner_of
from sk_entmax.nn._tabnet_arguments import ARGUMENTS, ENTMAX_ALPHA, ENTMAX_MODES

__all__ = [
    "ARGUMENTS",
    "ENTMAX_ALPHA",
    "ENTMAX_MODES",
    "AttentiveTransformer",
    "FeatureTransformer",
    "GLULayer",
    "GhostBatchNorm",
]

# the range of an adaptive mask alpha, (1, _ADAPTIVE_ALPHA_MAX)
_ADAPTIVE_ALPHA_MAX = 2.0

_RESIDUAL_SCALE = math.sqrt(0.5)
# on a CPU, up to this many chunks, ghost batch norm calls batch norm per chunk (faster there:
# 117 us against 202 us forward and backward for 256 x 64 in two chunks, one thread);
# beyond, and on every other device (where each call is a kernel launch), one fused call
_GHOST_SPLIT_MAX_CHUNKS = 4


def _even(value: int) -> int:
    if value % 2:
        raise ValueError(value)
    return value


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
    moves them by ``momentum`` towards its mean and unbiased variance. The full chunks are
    normalised together by one fused batch norm over a transposed view, with the same result
    and running statistics (a last, shorter chunk by one more call); only on a CPU, where it
    is measured faster, a batch of at most four chunks is normalised chunk by chunk.

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
    split_max_chunks : int, default=4
        On a CPU, a training batch of at most this many chunks is normalised chunk by
        chunk, a larger one by the fused call (as on every other device); 0 takes the
        fused call at every count. The two give the same result; only the speed differs.
    device, dtype : optional
        Where and of what float dtype the parameters and buffers are made, as for the layers
        of :mod:`torch.nn` (None: the defaults). Like theirs, the factory calls pass them on
        explicitly, so that :func:`sk_entmax.persistence.load` can build the network's
        skeleton on the meta device (shapes only, no memory).

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
        split_max_chunks: int = _GHOST_SPLIT_MAX_CHUNKS,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.num_features = check(
            "num_features", num_features, Integer(1), owner_of("GhostBatchNorm")
        )
        self.virtual_batch_size = check(
            "virtual_batch_size",
            virtual_batch_size,
            ARGUMENTS["virtual_batch_size"],
            owner_of("GhostBatchNorm"),
        )
        self.momentum = check(
            "momentum", momentum, ARGUMENTS["momentum"], owner_of("GhostBatchNorm")
        )
        self.split_max_chunks = check(
            "split_max_chunks", split_max_chunks, Integer(0), owner_of("GhostBatchNorm")
        )
        self.eps = float(eps)
        factory = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.ones(self.num_features, **factory))
        self.bias = nn.Parameter(torch.zeros(self.num_features, **factory))
        self.register_buffer("running_mean", torch.zeros(self.num_features, **factory))
        self.register_buffer("running_var", torch.ones(self.num_features, **factory))

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
        if X.device.type == "cpu" and n_full + (rest > 0) <= self.split_max_chunks:
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
        check("fc.out_features", fc.out_features, Satisfies("even", _even), owner_of("GLULayer"))
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
        Number of further GLU layers of this transformer alone, at least 0; with no
        ``shared`` layers, at least 1.
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
        n_independent = check(
            "n_independent",
            n_independent,
            ARGUMENTS["n_independent"],
            owner_of("FeatureTransformer"),
        )
        if not shared and not n_independent:
            must = (
                "at least 1 when there are no shared layers: n_independent + n_shared must be "
                "at least 1 (a feature transformer needs a GLU layer)"
            )
            raise invalid("n_independent", owner_of("FeatureTransformer"), must, n_independent)
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
        The mapping onto the simplex (see :mod:`sk_entmax.nn.tabnet`).
    entmax_alpha : float, default=1.5
        The alpha of ``"constant"`` mode, in [1, 2], and the starting alpha of ``"adaptive"``
        mode (clipped into [1.01, 1.99] by :meth:`~sk_entmax.entmax.AdaptiveEntmax.start_alpha`).
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
        owner = owner_of("AttentiveTransformer")
        self.entmax_mode = check("entmax_mode", entmax_mode, ARGUMENTS["entmax_mode"], owner)
        self.entmax_alpha = check("entmax_alpha", entmax_alpha, ARGUMENTS["entmax_alpha"], owner)
        self.fc = nn.Linear(n_a, n_features, bias=False)
        self.bn = GhostBatchNorm(n_features, virtual_batch_size, momentum)
        self.adaptive = None
        if self.entmax_mode == "adaptive":
            start = AdaptiveEntmax.start_alpha(self.entmax_alpha, _ADAPTIVE_ALPHA_MAX)
            self.adaptive = AdaptiveEntmax(alpha=start, dim=-1, alpha_max=_ADAPTIVE_ALPHA_MAX)

    @property
    def alpha(self) -> float | torch.Tensor:
        """The alpha of the mapping: a number, or the learnable tensor in adaptive mode."""
        if self.adaptive is not None:
            return self.adaptive.alpha
        return self.start_alpha

    @property
    def start_alpha(self) -> float:
        """The alpha of the mapping as built: 2 (sparsemax), 1.5 (entmax15), ``entmax_alpha``
        in constant mode, and in adaptive mode the alpha its learning starts from."""
        if self.adaptive is not None:
            return AdaptiveEntmax.start_alpha(self.entmax_alpha, _ADAPTIVE_ALPHA_MAX)
        return {"sparsemax": 2.0, "entmax15": 1.5}.get(self.entmax_mode, self.entmax_alpha)

    def scores(self, a: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
        """The pre-activation ``GhostBatchNorm(fc(a)) * prior`` that the mapping turns into M."""
        return self.bn(self.fc(a)) * prior

    def mapping(self, Z: torch.Tensor, start: bool = False) -> torch.Tensor:
        """The mask mapping of ``entmax_mode`` along the last axis; ``start``: at
        :attr:`start_alpha` (in adaptive mode a fixed alpha, not the learned one)."""
        # through entmax, which a kernel registered for the alpha's case replaces
        # (sk_entmax.entmax.algorithms); the adaptive mode's alpha is a tensor
        n_iter = 50 if self.adaptive is None else self.adaptive.n_iter
        alpha = self.start_alpha if start else self.alpha
        return entmax(Z, alpha, dim=-1, n_iter=n_iter, training=self.training)

    def forward(self, a: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
        """The mask M, of shape (n_samples, n_features), each row on the simplex."""
        return self.mapping(self.scores(a, prior))

    def extra_repr(self) -> str:
        return f"entmax_mode={self.entmax_mode!r}, entmax_alpha={self.entmax_alpha}"
