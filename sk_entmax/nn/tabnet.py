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

What a zero proves depends on where the first mask comes from, which the network's
``mask_design`` says (:mod:`sk_entmax.nn.tabnet_design`): in the paper's design the first
step reads every feature, so a zero proves nothing; in a faithful design a row's prediction
provably depends on X only through the features of its step masks, and
:meth:`TabNet.never_read` gives that certificate.

Batch normalisation is *ghost* batch normalisation (Hoffer et al., 2017): in training the
statistics are those of virtual batches of ``virtual_batch_size`` rows, see
:class:`GhostBatchNorm`.

This module holds the network; its building blocks are in :mod:`sk_entmax.nn.tabnet_blocks`
(importable from here too) and the embedding of its input columns, missing indicators
included, in :mod:`sk_entmax.nn.tabnet_embedding`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from sk_entmax.entmax.algorithms import Case, case_for
from sk_entmax.entmax.constraints import Integer, check
from sk_entmax.entmax.tracing import called_as
from sk_entmax.nn.tabnet_blocks import (
    ARGUMENTS,
    ENTMAX_MODES,
    AttentiveTransformer,
    FeatureTransformer,
    GhostBatchNorm,
    GLULayer,
)
from sk_entmax.nn.tabnet_design import FIRST_MASK_SHARPNESS, MaskDesign
from sk_entmax.nn.tabnet_embedding import ColumnEmbedding
from sk_entmax.nn.tabnet_selection import DROPPED_LOGIT, LATER_LOGIT, ColumnSelection

__all__ = [
    "ENTMAX_MODES",
    "AttentiveTransformer",
    "FeatureTransformer",
    "GLULayer",
    "GhostBatchNorm",
    "MaskDesign",
    "TabNet",
]


# Added inside the log of the mask entropy, so that zeros of a sparse mask contribute 0.
_ENTROPY_EPS = 1e-15


def _sparsity_scale(alpha: float | torch.Tensor) -> float | torch.Tensor:
    """``1 / (alpha - 1)``: scores multiplied by it give alpha-entmax the zeros sparsemax
    gives the scores (a feature drops out when its score is a fixed gap below the others',
    whatever alpha); 1 for softmax (alpha = 1), which has no zeros to keep."""
    if isinstance(alpha, torch.Tensor):
        alpha = alpha.detach()
    return 1.0 if case_for(float(alpha)) is Case.SOFTMAX else 1.0 / (alpha - 1.0)


# --------------------------------------------------------------------------- TabNet


class TabNet(ColumnSelection, ColumnEmbedding):
    """TabNet: attentive, sequential feature selection for tabular data.

    Implements Arik & Pfister (2019), "TabNet: Attentive Interpretable Tabular Learning",
    with the mask mapping chosen by ``entmax_mode`` (see the module docstring). The forward
    pass returns the scores and the sparsity regulariser; the estimator adds
    ``lambda_sparse * M_loss`` (per row) to its per-row loss.

    Categorical columns are embedded, NaNs in continuous columns filled, and the columns of
    ``missing_idxs`` given a missing indicator beside them, as the base class
    :class:`~sk_entmax.nn.tabnet_embedding.ColumnEmbedding` describes; the masks act on these
    *post-embedding* features, and :meth:`explain` sums them back per original column.

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
    mask_design : MaskDesign, mapping or None, default=None
        What a zero in the masks proves: a :class:`~sk_entmax.nn.tabnet_design.MaskDesign`
        (whether the first mask is faithful, its warm-up, the selection's budget, the first
        step's share and the later steps' rests; see the module docstring), the mapping of
        its fields (as a model file stores it), or None for the paper's design. The
        estimators build theirs from their ``faithful_masks``. With a ``budget`` the network
        needs the task's loss to choose its columns: its module calls
        :meth:`record_selection`.

    Attributes
    ----------
    initial_bn : torch.nn.BatchNorm1d
        Normalises the post-embedding features (with running statistics on a one-row batch).
    shared : torch.nn.ModuleList of torch.nn.Linear
        The linear layers shared by all the feature transformers.
    design : MaskDesign
        The mask design (``mask_design`` as a :class:`MaskDesign`).
    initial_splitter : FeatureTransformer or None
        Computes the attention features of the first step (None in a faithful design).
    first_mask_logits : torch.nn.Parameter or None
        In a faithful design: the first step's mask is the mask mapping of these
        (post-embedding width; zeros at the start, a uniform mask), scaled by
        :meth:`first_mask_scale` with a warm-up.
    first_mask_step : torch.Tensor or None
        In a faithful design with a warm-up: a buffer counting the training
        steps taken (forward passes in training mode with gradients on), which sets how far
        the first mask has sharpened; saved with the weights.
    rest_logits : torch.nn.Parameter or None
        With the design's ``step_rest`` and a warm-up: each later step's rest logit
        (``n_steps - 1`` of them, zeros at the start).
    selection : BackwardElimination or None
        With the design's ``budget``, while the warm-up runs in this process: the elimination's
        statistics (not saved; a fit resumed from a file mid-warm-up starts them afresh).
    selection_reduce : callable or None
        Set by a data-parallel fit: maps a tensor of this process's probe losses to their
        mean over the processes, so that every process drops the same columns.
    selection_processes : int
        Set with ``selection_reduce``: the number of processes (1 otherwise), which turns
        the means back into sums for the check's paired test.
    feature_transformers : torch.nn.ModuleList of FeatureTransformer
        One per decision step.
    attentive_transformers : torch.nn.ModuleList of AttentiveTransformer
        One per decision step. In a faithful design the first one contributes only its
        mask mapping (and its learned alpha in ``"adaptive"`` mode); its linear layer and
        batch norm are kept, unused, so that every configuration has the same layout.
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
        mask_design: MaskDesign | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        # TabNet checks what it uses itself; what it passes on, the block that uses it checks:
        # n_independent the FeatureTransformer, virtual_batch_size and momentum the
        # GhostBatchNorm (momentum also goes to initial_bn, built in the same call),
        # entmax_mode and entmax_alpha the AttentiveTransformer
        self.n_features = check("n_features", n_features, Integer(1), "TabNet")
        self.n_outputs = check("n_outputs", n_outputs, Integer(1), "TabNet")
        self.n_d = check("n_d", n_d, ARGUMENTS["n_d"], "TabNet")
        self.n_a = check("n_a", n_a, ARGUMENTS["n_a"], "TabNet")
        self.n_steps = check("n_steps", n_steps, ARGUMENTS["n_steps"], "TabNet")
        self.gamma = check("gamma", gamma, ARGUMENTS["gamma"], "TabNet")
        self.n_independent = n_independent
        self.n_shared = check("n_shared", n_shared, ARGUMENTS["n_shared"], "TabNet")
        self.entmax_mode = entmax_mode
        self.entmax_alpha = entmax_alpha
        self.design = MaskDesign.of(mask_design)
        self._init_selection()
        # the blocks' checks of what TabNet passes on name TabNet, the class the user built
        with called_as("TabNet"):
            self._init_embedding(cat_idxs, cat_dims, cat_emb_dims, missing_idxs, missing_fill)
            self._init_layers(n_independent, self.n_shared, virtual_batch_size, momentum)

    def _init_layers(
        self, n_independent: int, n_shared: int, virtual_batch_size: int, momentum: float
    ) -> None:
        """The batch norm, the transformers and the output layer, on the post-embedding width."""
        n_d, n_a, n_steps, n_outputs = self.n_d, self.n_a, self.n_steps, self.n_outputs
        entmax_mode, entmax_alpha = self.entmax_mode, self.entmax_alpha
        width = self.post_embedding_dim
        hidden = n_d + n_a
        self.initial_bn = nn.BatchNorm1d(width, momentum=momentum)
        self.shared = nn.ModuleList(
            nn.Linear(width if i == 0 else hidden, 2 * hidden, bias=False) for i in range(n_shared)
        )
        ghost = {"virtual_batch_size": virtual_batch_size, "momentum": momentum}
        self.initial_splitter = None
        self.first_mask_logits = None
        step = None
        if self.design.faithful:
            self.first_mask_logits = nn.Parameter(torch.zeros(width, device=None))
            if self.design.sharpened:
                step = torch.zeros((), device=None)
        else:
            self.initial_splitter = FeatureTransformer(
                width, hidden, self.shared, n_independent, **ghost
            )
        self.register_buffer("first_mask_step", step)
        # one logit per later step for its rest (see the design's ``step_rest``)
        rest = self.design.rests
        self.rest_logits = nn.Parameter(torch.zeros(n_steps - 1)) if rest else None
        self.feature_transformers = nn.ModuleList(
            FeatureTransformer(width, hidden, self.shared, n_independent, **ghost)
            for _ in range(n_steps)
        )
        self.attentive_transformers = nn.ModuleList(
            AttentiveTransformer(n_a, width, entmax_mode, entmax_alpha, **ghost)
            for _ in range(n_steps)
        )
        self.final_mapping = nn.Linear(n_d, n_outputs)

    # ------------------------------------------------------------------ forward pieces

    @property
    def faithful_masks(self) -> bool:
        """Whether the design is faithful (``design.faithful``; read-only)."""
        return self.design.faithful

    @property
    def first_mask_warmup(self) -> int | None:
        """The design's warm-up (``design.warmup``; read-only)."""
        return self.design.warmup

    @property
    def selection_budget(self) -> float | None:
        """The design's selection budget (``design.budget``; read-only)."""
        return self.design.budget

    @property
    def settling(self) -> bool:
        """Whether the faithful design's first-mask warm-up still runs.

        The masks still sharpen, so the training loss is not yet the one the fit minimises;
        the estimators' stopping rule counts no epoch while this is True. With
        ``selection_reduce`` it implements the module protocol that
        ``sk_entmax.nn.protocols`` declares for the training engine.
        """
        design = self.design
        return design.sharpened and float(self.first_mask_step) < design.warmup

    def first_mask_scale(self) -> float:
        """The factor of the first mask's logits with a warm-up (1 without one).

        ``k * (d - 1)**(1 - alpha) / (alpha - 1)``, with ``d`` the post-embedding width (at
        least 2; 1 for one feature) and ``alpha`` the first mapping's ``start_alpha``: from
        a uniform mask, a feature whose logit is ``1 / k`` below the others' drops out
        exactly there, in every mode and at every width (unscaled, that gap is
        ``(d - 1)**(1 - alpha) / (alpha - 1)``: ``1 / (d - 1)`` for sparsemax,
        ``2 / sqrt(d - 1)`` for 1.5-entmax, wider as alpha nears 1, so an unscaled mask fell
        sparse at random in sparsemax mode and stayed dense in the others). The sharpness
        ``k`` grows from 1 to ``FIRST_MASK_SHARPNESS`` (30) over the design's ``warmup``
        training steps: the logits learn which features matter while the mask is still
        dense (their gradient is mostly noise at first, and an early zero has no gradient to
        come back with), then the mask sharpens onto those.

        Returns
        -------
        float
            The factor; 1 without a faithful design's warm-up.
        """
        if not self.design.sharpened:
            return 1.0
        done = min(1.0, float(self.first_mask_step) / self.design.warmup)
        k = 1.0 + (FIRST_MASK_SHARPNESS - 1.0) * done
        alpha = self.attentive_transformers[0].start_alpha
        if case_for(alpha) is Case.SOFTMAX:  # no zeros to place
            return k
        others = max(self.post_embedding_dim - 1, 1)
        return k * others ** (1.0 - alpha) / (alpha - 1.0)

    def _initial_bn(self, X: torch.Tensor) -> torch.Tensor:
        if self.training and X.shape[0] < 2:
            # One row has no batch statistics: normalise as in evaluation, update nothing.
            bn = self.initial_bn
            return F.batch_norm(
                X, bn.running_mean, bn.running_var, bn.weight, bn.bias, False, 0.0, bn.eps
            )
        return self.initial_bn(X)

    def _steps(
        self,
        X: torch.Tensor,
        keep: torch.Tensor | None = None,
        narrowed: torch.Tensor | None = None,
    ):
        """Run the decision steps; yields ``(mask, decision)`` per step (post-embedding).

        ``keep`` (pretraining): a 0/1 tensor of the post-embedding shape; the features where
        it is 0 are hidden, set to 0 after the batch norm (their mean) and given prior 0, so
        that no mask attends to them (the first faithful mask included). ``narrowed`` (a
        training step while the first step narrows, :meth:`_narrow`): a bool tensor of that
        shape, True where a row's first step no longer reads a feature.
        """
        X = self._initial_bn(self.embed(X))
        if keep is None:
            prior = torch.ones_like(X)
        else:
            X = X * keep
            prior = keep.to(X.dtype)
        design = self.design
        a = None if design.faithful else self.initial_splitter(X)[:, self.n_d :]
        tied = self._tied_indicators()
        for step, (attentive, transformer) in enumerate(
            zip(self.attentive_transformers, self.feature_transformers, strict=True)
        ):
            if a is None:  # faithful: the first mask reads no input
                if design.selecting:
                    # uniform over the columns the first step reads (logit 0); LATER_LOGIT: kept
                    # for the later steps only, DROPPED_LOGIT: read by no step. A probe's hidden
                    # columns are 0 in X (their mean) and in the later steps' prior
                    logits = self.first_mask_logits.detach().expand_as(X)
                    if narrowed is not None:
                        logits = logits.masked_fill(narrowed, LATER_LOGIT)
                else:
                    logits = (self.first_mask_logits * self.first_mask_scale()).expand_as(X)
                    logits = logits if keep is None else logits * prior
                if tied is not None:  # no mask attends to an indicator on its own
                    logits = logits.index_fill(-1, tied[1], DROPPED_LOGIT)
                M = attentive.mapping(logits, start=design.sharpened)
                kept = logits > DROPPED_LOGIT / 2
                out = transformer(self._read(M, X, tied))
            else:
                if design.sharpened:
                    scores = attentive.scores(a, prior) * _sparsity_scale(attentive.alpha)
                    if design.selecting:  # no later step reads a dropped column
                        scores = scores - 1e6 * (~kept).to(scores.dtype)
                    M = self._later_mask(attentive, scores, step)
                else:
                    M = attentive(a, prior)
                out = transformer(self._read(M, X, tied) if design.faithful else M * X)
            prior = prior * (self.gamma - M)
            yield M, F.relu(out[:, : self.n_d])
            a = out[:, self.n_d :]

    def _later_mask(
        self, attentive: AttentiveTransformer, scores: torch.Tensor, step: int
    ) -> torch.Tensor:
        """A later step's mask from its scores: with ``step_rest``, mapped with the step's
        rest logit as one more entry, which is then cut off (the share the step reads of
        nothing)."""
        if self.rest_logits is None:
            return attentive.mapping(scores)
        rest = self.rest_logits[step - 1].to(scores.dtype).expand(scores.shape[0], 1)
        return attentive.mapping(torch.cat([scores, rest], -1))[:, :-1]

    def _tied_indicators(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The value and the missing-indicator feature of each column with an indicator,
        in the design that selects columns; None otherwise (or with no indicator).

        There no mask attends to an indicator: it is read with its value's weight
        (:meth:`_read`). An indicator of rare gaps is constant in almost every ghost batch,
        so a step that read it alone gave a constant in training (each virtual batch
        normalised to the batch norm's bias) but not in evaluation, where the running
        statistics of such near-constant channels amplify the gap between the two; one
        fit of 70 (penguins, entmax15 mode) parked its last step there and predicted one
        class in evaluation. Read with its value, the indicator is never a step's only input.
        """
        if not self.design.selecting or not self.missing_idxs:
            return None
        # positions from the layout's widths (constants, so the network exports as it is)
        widths = self._widths()
        starts = [0]
        for width in widths[:-1]:
            starts.append(starts[-1] + width)
        value = [starts[idx] for idx in self.missing_idxs]  # the value comes first
        device = self.first_mask_logits.device
        value = torch.tensor(value, dtype=torch.long, device=device)
        return value, value + 1

    @staticmethod
    def _read(
        M: torch.Tensor, X: torch.Tensor, tied: tuple[torch.Tensor, torch.Tensor] | None
    ) -> torch.Tensor:
        """What a faithful step reads: ``M * X`` with the unmasked entries exactly 0, each
        tied indicator (see :meth:`_tied_indicators`) weighted like its value."""
        if tied is not None:
            value, indicator = tied
            M = M.index_copy(-1, indicator, M.index_select(-1, value))
        return M * torch.where(M > 0, X, 0.0)

    def _decisions(
        self, X: torch.Tensor, keep: torch.Tensor | None = None
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Each step's decision output (after ReLU) and, per row, the regulariser (see
        :meth:`forward`); ``keep`` as in :meth:`_steps`. A training step (training mode,
        gradients on) moves the faithful design's first-mask warm-up on by one."""
        narrowed = None
        sharpened = self.design.sharpened
        if sharpened and self.training and torch.is_grad_enabled():
            with torch.no_grad():
                self.first_mask_step += 1
                if self._narrowing is not None:
                    narrowed = self._narrow(X.shape[0], X.device)
                if self.held_out is not None and not self.settling:
                    self._check_selection()
                    self.release_held_out()
                if not self.settling:
                    self.residual_rows = None
                if self.design.selecting and keep is None:
                    self._probe = self._run_probes(X)
        decisions = []
        entropy = 0
        total = 0
        for M, d in self._steps(X, keep, narrowed):
            decisions.append(d)
            if sharpened:
                total = total + M
            else:
                entropy = entropy + (-M * torch.log(M + _ENTROPY_EPS)).sum(-1)
        if sharpened:
            mean = total / self.n_steps
            return decisions, (-mean * torch.log(mean + _ENTROPY_EPS)).sum(-1)
        return decisions, entropy / self.n_steps

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
            0 for one-hot masks, ``log(d)`` for uniform ones. In a faithful design with a
            warm-up, the entropy of the mean of the steps' masks instead,
            whose support is the features the row reads: 0 when every step reads the same
            one feature. Per row, so that the estimator weights it like the rest of the loss;
            its mean is the usual regulariser.
        """
        decisions, entropy = self._decisions(X)
        return self.final_mapping(sum(decisions)), entropy

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
            The mask of each step, ``{0: ..., 1: ..., ...}``; each row sums to 1 (to at
            most 1 at a later step with ``step_rest``: the rest is read of nothing), and
            the sparse modes keep their exact zeros.
        """
        M_explain = 0
        masks = {}
        for step, (M, d) in enumerate(self._steps(X)):
            M_cols = self._to_columns(M)
            masks[step] = M_cols
            M_explain = M_explain + M_cols * d.sum(-1, keepdim=True)
        return M_explain, masks

    def never_read(self, X: torch.Tensor) -> torch.Tensor:
        """Per row, the original columns whose mask is 0 at every step: with
        a faithful design, features the row's scores provably do not depend on.

        Parameters
        ----------
        X : torch.Tensor of shape (n_samples, n_features)
            Float features; categorical columns hold their integer codes.

        Returns
        -------
        torch.Tensor of bool, shape (n_samples, n_features)
            True where every column of the feature has mask 0 at every step. All False
            in the paper's design: the first step reads every feature, so no zero is a
            proof there.
        """
        used = None
        for M, _ in self._steps(X):
            M_cols = self._to_columns(M)
            used = M_cols if used is None else used + M_cols
        if not self.design.faithful:
            return torch.zeros_like(used, dtype=torch.bool)
        return used == 0

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
