"""Self-supervised TabNet pretraining: reconstruct hidden features through the same masks.

Arik & Pfister (2021), section 4: each training row hides a random subset of its features
(each original column independently, with probability ``pretraining_ratio``); the TabNet
encoder reads the row with those features set to 0 (after its batch norm: their mean) and
a prior of 0 on them, so that no step's mask attends to them; a decoder maps each step's
decision output through a feature transformer of its own, sums them, and a linear layer
predicts the hidden features. The loss is the reconstruction error of the hidden features
only:

- a numeric column: the squared error of its value standardized by the training mean and
  standard deviation (so that predicting the mean costs 1 per column, whatever its units);
- a categorical column: the cross-entropy of its category code.

A missing cell (NaN in a numeric column, code 0, "unknown or missing", in a categorical one)
is never a reconstruction target; in the input it is what the encoder always sees, the
column's fill value and, where the column has one, its missing indicator set. The columns
of one original feature (an embedding, a value and its missing indicator) are hidden
together. Each row's loss is the mean over its hidden, observed features (0 for a row with
none), plus ``lambda_sparse`` times the masks' entropy, as in supervised training.

The trained encoder (:attr:`TabNetPretrainingNet.tabnet`, without its unused output layer)
is the starting point of a supervised TabNet of the same shape; :meth:`representation` is
the learned representation of a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from sk_entmax.entmax.constraints import Integer, Real, check, invalid
from sk_entmax.nn._tensor_spec import REAL, Argument, Extent, StateSpec, name_forms
from sk_entmax.nn.tabnet import TabNet
from sk_entmax.nn.tabnet_blocks import FeatureTransformer
from sk_entmax.nn.tabnet_nets import _TABNET_ARGUMENTS, _TABNET_NAMES, _TabNetTask

__all__ = ["DECODER_ARGUMENTS", "TabNetPretrainingNet"]

#: the pretraining arguments and what each may be, stated once (the pretrainer estimator's
#: parameters of the same names are these constraints)
DECODER_ARGUMENTS = {
    "pretraining_ratio": Real(0.0, 1.0, low_open=True, high_open=True),
    "n_shared_decoder": Integer(0),
    "n_independent_decoder": Integer(0),
}

_OWNER = "TabNetPretrainingNet"


class TabNetPretrainingNet(_TabNetTask):
    """A TabNet encoder and a decoder that reconstructs randomly hidden features.

    ``forward`` hides features at random (in training mode from a generator seeded by
    ``mask_seed``, drawn from anew at each call; in evaluation mode the same hidden features
    at every call, for a validation loss that epochs can compare) and returns the
    reconstruction; :meth:`loss` is the per-row reconstruction error of the hidden features
    (see the module docstring). torch's global random generator is not used.

    Parameters
    ----------
    lambda_sparse : float, default=1e-3
        Weight of the mask-entropy regulariser.
    pretraining_ratio : float, default=0.2
        In (0, 1): the probability that a feature is hidden in a training row.
    n_shared_decoder : int, default=1
        GLU layers whose weights the decoder's steps share.
    n_independent_decoder : int, default=1
        GLU layers of each decoder step alone.
    target_mean, target_scale : sequence of float or None, default=None
        Per continuous column (in column order), the mean and the standard deviation that
        standardize its reconstruction target; None is 0 and 1.
    mask_seed : int, default=0
        Seed of the generator that draws the hidden features.
    **tabnet_params
        Passed to :class:`~sk_entmax.nn.TabNet` (``n_features`` included; ``n_outputs``
        defaults to 1, its output layer is not used).

    Attributes
    ----------
    tabnet : TabNet
        The encoder.
    decoder_shared : torch.nn.ModuleList of torch.nn.Linear
        The linear layers the decoder's steps share.
    decoder_steps : torch.nn.ModuleList of FeatureTransformer
        One per decision step, ``n_d -> n_d``.
    reconstruction : torch.nn.Linear
        ``n_d ->`` one output per continuous column, then the logits of each categorical
        column's codes.

    Examples
    --------
    >>> import torch
    >>> from sk_entmax.nn import TabNetPretrainingNet
    >>> net = TabNetPretrainingNet(n_features=4, n_steps=2, cat_idxs=[3], cat_dims=[5])
    >>> X = torch.randn(32, 4)
    >>> X[:, 3] = torch.randint(0, 5, (32,)).float()
    >>> output = net(X)
    >>> output[0].shape, net.loss(output, X).shape, net.representation(X).shape
    (torch.Size([32, 8]), torch.Size([32]), torch.Size([32, 8]))
    """

    #: for :mod:`sk_entmax.persistence`: a TabNet's tensors and arguments (as
    #: :attr:`TabNetClassifierNet.state_spec`'s), the decoder's, and the pretraining ones
    state_spec: ClassVar[StateSpec] = StateSpec(
        names=_TABNET_NAMES
        | name_forms(
            "decoder_shared.<i>.weight",
            "decoder_steps.<i>.layers.<i>.fc.weight",
            "decoder_steps.<i>.layers.<i>.bn.(weight|bias|running_mean|running_var)",
            "reconstruction.(weight|bias)",
        ),
        arguments={
            **_TABNET_ARGUMENTS,
            "pretraining_ratio": REAL,
            "n_shared_decoder": Argument("int", Extent("decoder_shared.<i>.weight")),
            # each decoder step's GLU layers, shared and independent: a batch norm each
            "n_independent_decoder": Argument(
                "int", Extent("decoder_steps.0.layers.<i>.bn.weight")
            ),
            # one per continuous column: at most the reconstruction's outputs
            "target_mean": Argument("reals or None", length=Extent("reconstruction.weight", 0)),
            "target_scale": Argument("reals or None", length=Extent("reconstruction.weight", 0)),
            "mask_seed": Argument("int"),
        },
    )

    def __init__(
        self,
        lambda_sparse: float = 1e-3,
        pretraining_ratio: float = 0.2,
        n_shared_decoder: int = 1,
        n_independent_decoder: int = 1,
        target_mean: Sequence[float] | None = None,
        target_scale: Sequence[float] | None = None,
        mask_seed: int = 0,
        **tabnet_params,
    ) -> None:
        tabnet_params.setdefault("n_outputs", 1)
        super().__init__(lambda_sparse, **tabnet_params)
        self.pretraining_ratio = check(
            "pretraining_ratio",
            pretraining_ratio,
            DECODER_ARGUMENTS["pretraining_ratio"],
            _OWNER,
        )
        n_shared = check(
            "n_shared_decoder", n_shared_decoder, DECODER_ARGUMENTS["n_shared_decoder"], _OWNER
        )
        n_independent = check(
            "n_independent_decoder",
            n_independent_decoder,
            DECODER_ARGUMENTS["n_independent_decoder"],
            _OWNER,
        )
        if n_shared + n_independent < 1:
            must = "at least 1 when n_shared_decoder is 0 (a decoder step needs a GLU layer)"
            raise invalid("n_independent_decoder", _OWNER, must, n_independent_decoder)
        self.mask_seed = check("mask_seed", mask_seed, Integer(0), _OWNER)
        tabnet: TabNet = self.tabnet
        n_d = tabnet.n_d
        ghost = {
            "virtual_batch_size": tabnet_params.get("virtual_batch_size", 128),
            "momentum": tabnet_params.get("momentum", 0.02),
        }
        self.decoder_shared = nn.ModuleList(
            nn.Linear(n_d, 2 * n_d, bias=False) for _ in range(n_shared)
        )
        self.decoder_steps = nn.ModuleList(
            FeatureTransformer(n_d, n_d, self.decoder_shared, n_independent, **ghost)
            for _ in range(tabnet.n_steps)
        )
        n_continuous = tabnet.n_features - len(tabnet.cat_idxs)
        self.reconstruction = nn.Linear(n_d, n_continuous + sum(tabnet.cat_dims))
        # on the CPU, checked there: also when the network is built on the meta device
        # (sk_entmax.persistence checks a file's network that way)
        cpu = torch.device("cpu")
        mean = (
            torch.zeros(n_continuous, device=cpu)
            if target_mean is None
            else torch.tensor(target_mean, device=cpu)
        )
        scale = (
            torch.ones(n_continuous, device=cpu)
            if target_scale is None
            else torch.tensor(target_scale, device=cpu)
        )
        for name, value in (("target_mean", mean), ("target_scale", scale)):
            if value.shape != (n_continuous,) or not bool(torch.isfinite(value).all()):
                must = f"None or {n_continuous} finite numbers (one per continuous column)"
                raise invalid(name, _OWNER, must, value.tolist())
        if not bool((scale > 0).all()):
            raise invalid("target_scale", _OWNER, "positive numbers", scale.tolist())
        self.register_buffer("_target_mean", mean.to(torch.get_default_dtype()), persistent=False)
        self.register_buffer(
            "_target_scale", scale.to(torch.get_default_dtype()), persistent=False
        )
        self._generators: dict[torch.device, torch.Generator] = {}

    # ------------------------------------------------------------------ hiding features

    def _hidden(self, X: torch.Tensor) -> torch.Tensor:
        """Per row, the original columns hidden at this call (bool, ``X``'s shape)."""
        if self.training:
            device = X.device
            if device not in self._generators:
                self._generators[device] = torch.Generator(device=device).manual_seed(
                    self.mask_seed
                )
            generator = self._generators[device]
        else:  # the same hidden features at every evaluation call
            generator = torch.Generator(device=X.device).manual_seed(self.mask_seed + 1)
        draws = torch.rand(X.shape, generator=generator, device=X.device, dtype=X.dtype)
        return draws < self.pretraining_ratio

    def _decode(self, decisions: list[torch.Tensor]) -> torch.Tensor:
        total = 0
        for step, d in zip(self.decoder_steps, decisions, strict=True):
            total = total + step(d)
        return self.reconstruction(total)

    def forward(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The reconstruction of randomly hidden features.

        Parameters
        ----------
        X : torch.Tensor of shape (n_samples, n_features)
            Float features (NaN where missing); categorical columns hold their codes.

        Returns
        -------
        reconstruction : torch.Tensor of shape (n_samples, n_continuous + sum(cat_dims))
            The standardized values of the continuous columns, then the logits of each
            categorical column's codes.
        M_loss : torch.Tensor of shape (n_samples,)
            The masks' mean entropy per row, as :meth:`TabNet.forward` gives it.
        hidden : torch.Tensor of bool, shape (n_samples, n_features)
            The columns hidden from each row.
        """
        tabnet: TabNet = self.tabnet
        hidden = self._hidden(X)
        keep = (~hidden).to(X.dtype)[:, tabnet._group]
        decisions, entropy = tabnet._decisions(X, keep)
        return self._decode(decisions), entropy, hidden

    def loss(
        self, output: tuple[torch.Tensor, torch.Tensor, torch.Tensor], target: torch.Tensor
    ) -> torch.Tensor:
        """Per-row loss: the reconstruction error plus the weighted mask entropy.

        The reconstruction error of a row is the mean over its hidden, observed features
        (0 when it has none).

        Parameters
        ----------
        output : tuple of torch.Tensor
            What :meth:`forward` returned.
        target : torch.Tensor of shape (n_samples, n_features)
            The rows ``forward`` read (NaN where missing, codes in categorical columns).

        Returns
        -------
        torch.Tensor of shape (n_samples,)
            The loss of each row.
        """
        reconstruction, entropy, hidden = output
        tabnet: TabNet = self.tabnet
        target = target.to(reconstruction.dtype)
        continuous = tabnet._continuous
        n_continuous = continuous.numel()
        total = reconstruction.new_zeros(target.shape[0])
        count = reconstruction.new_zeros(target.shape[0])
        if n_continuous:
            values = target[:, continuous]
            scored = hidden[:, continuous] & ~torch.isnan(values)
            z = (torch.where(scored, values, self._target_mean) - self._target_mean) / (
                self._target_scale
            )
            error = (reconstruction[:, :n_continuous] - z).pow(2)
            total = total + torch.where(scored, error, 0.0).sum(1)
            count = count + scored.sum(1)
        start = n_continuous
        for idx, dim in zip(tabnet.cat_idxs, tabnet.cat_dims, strict=True):
            codes = target[:, idx].long()
            scored = hidden[:, idx] & (codes > 0)  # code 0: unknown or missing
            ce = F.cross_entropy(reconstruction[:, start : start + dim], codes, reduction="none")
            total = total + torch.where(scored, ce, 0.0)
            count = count + scored
            start += dim
        return total / count.clamp_min(1) + self.lambda_sparse * entropy

    def representation(self, X: torch.Tensor) -> torch.Tensor:
        """The learned representation: the sum over steps of the decision outputs.

        Parameters
        ----------
        X : torch.Tensor of shape (n_samples, n_features)
            Float features; nothing is hidden.

        Returns
        -------
        torch.Tensor of shape (n_samples, n_d)
            The representation of each row.
        """
        return sum(d for _, d in self.tabnet._steps(X))
