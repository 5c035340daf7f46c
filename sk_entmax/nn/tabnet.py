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

What a zero proves depends on where the first mask comes from:

``faithful_masks=False`` (the paper's design, and pytorch-tabnet's)
    the first step's attention features come from a feature transformer that reads *every*
    feature, so every later mask depends on every feature: a feature whose mask is 0 at
    every step still moves the masks, and through them the prediction. A zero says only
    that the step did not multiply the feature into its decision.
``faithful_masks=True``
    the first step's mask is a learned, input-independent distribution over the features
    (``mapping(first_mask_logits)``), and each step reads ``M * X`` with the unmasked entries
    set to exactly 0 (``where(M > 0, X, 0)``, so not even an infinite or NaN value gets
    through). Each later mask is computed from the previous step's output, which read only
    masked features. So a row's prediction depends on X only through the features in the
    union of its step masks: changing a feature whose mask is 0 at every step cannot change
    that row's scores, bit for bit (in evaluation mode, where every operation is per row).
    The columns of one original feature (an embedding, a missing indicator) are certified
    together: the feature is unread when all of its columns are. :meth:`TabNet.never_read`
    gives that certificate.

    How much of a table it covers depends on how sparse the masks are. The first mask's
    logits get little signal early on (the masked values go through batch norms), so they
    drift at the optimizer's step size; mapped as they are (issue 29's design,
    ``first_mask_warmup=None``), that drift zeroed features at random in sparsemax mode
    (whose zero threshold from a uniform mask is ``1 / (d - 1)``: a stalled fit when the
    informative ones went) and none in entmax15 and adaptive mode (thresholds ``2 /
    sqrt(d - 1)`` and wider), which then certified nothing. With a ``first_mask_warmup``
    (issue 46's design, which the estimators build), the first mask's logits are scaled so
    that a gap of ``1 / k`` drops a feature in every mode (:meth:`TabNet.first_mask_scale`),
    ``k`` growing from 1 to ``FIRST_MASK_SHARPNESS`` (30) over the warm-up: the mask stays
    dense while its logits learn which features matter, then sharpens onto them. The later
    masks' scores are multiplied by ``1 / (alpha - 1)``, which gives alpha-entmax
    sparsemax's zeros, and the regulariser is the entropy of the steps' mean mask, whose
    support is the features the row reads. Every zero is still an exact zero of the
    mapping: nothing is cut afterwards.

    The first mask's gradient says little about which features matter: its values scale
    inputs that batch norms then normalise: on titanic, with the later masks reading only
    the first mask's columns, the sharpened mask settled on ``passengerClass`` or ``age``
    instead of ``sex`` in 1 of 6 to 5 of 10 seeds (by variant). With a
    ``selection_budget`` (the estimators' faithful design) the columns are chosen on the
    loss instead: during the warm-up, the training steps also measure how much the task's
    loss rises when a column is occluded, and drop, one at a time or as a group tested
    together, the columns whose contribution fits in a share of the loss
    (``sk_entmax.nn.tabnet_selection``). The first mask is uniform over the columns
    kept and every later step's mask is restricted to them, so every row's certificate is
    every dropped column (a column dropped is one the whole model never reads).

    With a ``first_step_share`` (the estimators' design since issue 57) the certificate
    is per row: from 40% of the warm-up on the first step is narrowed to the columns the
    typical row needs (by the median row's loss rise when a column is occluded), a
    growing share of the rows at a time so that the network learns to read the others
    later, and the later steps choose per row, from what the row has read so far, among
    the other kept columns. A column that
    only some rows need (a feature of one branch of a switch) is then read by those rows
    only, and certified for the others. The elimination's budget is small (3% of the
    loss), so a weak or joint signal stays in the model: the per-row masks, not the drops,
    give most of the certificate. With ``step_rest`` each later step may also read
    nothing (its *rest*), so a row whose needs the earlier steps met reads no more.

Batch normalisation is *ghost* batch normalisation (Hoffer et al., 2017): in training the
statistics are those of virtual batches of ``virtual_batch_size`` rows, see
:class:`GhostBatchNorm`.

This module holds the network; its building blocks are in :mod:`sk_entmax.nn.tabnet_blocks`
(importable from here too) and the embedding of its input columns, missing indicators
included, in :mod:`sk_entmax.nn.tabnet_embedding`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from sk_entmax.entmax.constraints import AnyOf, Boolean, Integer, Options, Real, check
from sk_entmax.entmax.tracing import called_as
from sk_entmax.nn.tabnet_blocks import (
    ARGUMENTS,
    ENTMAX_MODES,
    AttentiveTransformer,
    FeatureTransformer,
    GhostBatchNorm,
    GLULayer,
)
from sk_entmax.nn.tabnet_embedding import ColumnEmbedding
from sk_entmax.nn.tabnet_residual import residual_pvalues
from sk_entmax.nn.tabnet_selection import (
    FIRST_STEP_AT,
    FIRST_STEP_RAMP,
    PROBE_ROWS,
    RESIDUAL_LEVEL,
    SAMPLES,
    SELECTION_START,
    BackwardElimination,
    HeldOutRows,
    SelectionCheck,
)

__all__ = [
    "ENTMAX_MODES",
    "AttentiveTransformer",
    "FeatureTransformer",
    "GLULayer",
    "GhostBatchNorm",
    "TabNet",
]


# Added inside the log of the mask entropy, so that zeros of a sparse mask contribute 0.
_ENTROPY_EPS = 1e-15

#: the scale the first mask's logits reach at the end of the warm-up, in units where a gap
#: of 1 drops a feature from a uniform mask (see :meth:`TabNet.first_mask_scale`)
FIRST_MASK_SHARPNESS = 30.0
#: the most training steps the estimators' faithful TabNets take to choose the columns they
#: read (their warm-up); a shorter fit's is ``WARMUP_SHARE`` of its planned steps
FIRST_MASK_WARMUP = 600
#: the share of a fit's planned steps its warm-up takes, at most ``FIRST_MASK_WARMUP``
WARMUP_SHARE = 2 / 3
#: ``first_mask_warmup``: None (issue 29's faithful design) or a number of training steps
_WARMUP = AnyOf(Options((None,)), Integer(1))
#: ``selection_budget``: None (the learned first mask) or a share of the training loss
_BUDGET = AnyOf(Options((None,)), Real(0.0, 1.0, low_open=True))
#: the logit of a column the elimination dropped: the mask mapping gives it exactly 0
_DROPPED = -1e6
#: the logit of a column kept for the later steps that the first step does not read
_LATER = -1e3
#: ``first_step_share``: None (the first step reads every kept column) or a share
_FIRST_STEP = AnyOf(Options((None,)), Real(0.0, 1.0, low_open=True))


def first_mask_warmup(steps: int | None) -> int:
    """The estimators' ``first_mask_warmup`` for a fit of ``steps`` training steps.

    ``WARMUP_SHARE`` (two thirds) of the planned steps, at most ``FIRST_MASK_WARMUP``
    (600), so that a short fit chooses its columns too and then trains on them; an
    open-ended fit (``steps`` None: a ``partial_fit`` net) takes ``FIRST_MASK_WARMUP``.

    Parameters
    ----------
    steps : int or None
        The optimizer steps the fit plans (``max_epochs`` times the batches of an epoch).

    Returns
    -------
    int
        At least 1.
    """
    if steps is None:
        return FIRST_MASK_WARMUP
    return max(1, min(FIRST_MASK_WARMUP, math.ceil(WARMUP_SHARE * steps)))


def _sparsity_scale(alpha: float | torch.Tensor) -> float | torch.Tensor:
    """``1 / (alpha - 1)``: scores multiplied by it give alpha-entmax the zeros sparsemax
    gives the scores (a feature drops out when its score is a fixed gap below the others',
    whatever alpha); 1 for softmax (alpha = 1), which has no zeros to keep."""
    if isinstance(alpha, torch.Tensor):
        alpha = alpha.detach()
    return 1.0 / (alpha - 1.0) if float(alpha) > 1.0 else 1.0


# --------------------------------------------------------------------------- TabNet


class TabNet(ColumnEmbedding):
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
    faithful_masks : bool, default=False
        Start from a learned, input-independent first mask instead of the paper's
        ``initial_splitter``, so that a zero in every step's mask proves the feature was not
        read (see the module docstring).
    first_mask_warmup : int or None, default=None
        With ``faithful_masks``: None is issue 29's design (the first mask is the mapping of
        its logits, the regulariser the mean of the steps' mask entropies), which files
        saved before issue 46 hold. A number of training steps (at least 1) is the design
        whose zeros cover most of the table (issue 46; the estimators use
        ``FIRST_MASK_WARMUP`` (600)): every mask's scores are scaled so that each mode has
        sparsemax's zeros (:meth:`first_mask_scale`), the first mask sharpens over that many
        training steps (at its start alpha in ``"adaptive"`` mode), and the regulariser is
        the entropy of the steps' mean mask, which is 0 only when every step reads the same
        one feature. Unused without ``faithful_masks``.
    selection_budget : float or None, default=None
        With ``faithful_masks`` and a ``first_mask_warmup``: None is the design above
        (the first mask learned by gradient, then sharpened), which files saved before it
        hold. A share of the training loss, in (0, 1] (the estimators use
        ``SELECTION_BUDGET``, 0.03), chooses instead which columns the network reads by
        backward elimination during the warm-up (``sk_entmax.nn.tabnet_selection``):
        from ``SELECTION_START`` of the warm-up on, the training step also measures how
        much the loss rises when a column is occluded, and drops columns whose measured
        contribution fits in what remains of that share of the loss. The first mask is
        uniform over the columns kept, and every later step's mask is restricted to them,
        so each row's certificate holds every dropped column. The network needs the task's
        loss for this: its module calls :meth:`record_selection`. Unused otherwise.
    first_step_share : float or None, default=None
        With a ``selection_budget``: None keeps the first step on every kept column (issue
        46's design, which files saved before issue 57 hold), so a row's certificate is
        the dropped columns. A share in (0, 1] (the estimators use ``FIRST_STEP_SHARE``,
        0.5) makes the certificate per row: once ``FIRST_STEP_AT`` (40%) of the warm-up has
        passed, the first step is narrowed, over ``FIRST_STEP_RAMP`` (20%) of it and a
        growing share of the training rows at a time, to the kept columns whose typical
        rise (the median row's loss rise when the column is occluded) is at least that
        share of the largest (those the typical row needs; the elimination never drops
        them afterwards), and the later steps' masks, computed from what the row has read
        so far, choose per row among the other kept columns.
        A row then reads the first step's columns and its own later choices, and
        :meth:`never_read` certifies the rest. Unused otherwise.
    step_rest : bool, default=False
        In issue 46's design (``faithful_masks`` and a ``first_mask_warmup``): each later
        step's mask mapping also takes a learned logit of its own, its *rest*, as one
        more entry, which is cut off after the mapping: a step whose rest takes all of the
        mass reads nothing, and a row's mask sums to at most 1. Without it every step
        reads something, so a row whose needs the earlier steps have met still read a
        column at its last step (issue 57: on the switch families, often a feature of
        the other branch). False in files saved before it; ignored outside that design.

    Attributes
    ----------
    initial_bn : torch.nn.BatchNorm1d
        Normalises the post-embedding features (with running statistics on a one-row batch).
    shared : torch.nn.ModuleList of torch.nn.Linear
        The linear layers shared by all the feature transformers.
    initial_splitter : FeatureTransformer or None
        Computes the attention features of the first step (None with ``faithful_masks``).
    first_mask_logits : torch.nn.Parameter or None
        With ``faithful_masks``: the first step's mask is the mask mapping of these
        (post-embedding width; zeros at the start, a uniform mask), scaled by
        :meth:`first_mask_scale` with a ``first_mask_warmup``.
    first_mask_step : torch.Tensor or None
        With ``faithful_masks`` and a ``first_mask_warmup``: a buffer counting the training
        steps taken (forward passes in training mode with gradients on), which sets how far
        the first mask has sharpened; saved with the weights.
    rest_logits : torch.nn.Parameter or None
        With ``step_rest`` in issue 46's design: each later step's rest logit (``n_steps -
        1`` of them, zeros at the start).
    selection : BackwardElimination or None
        With a ``selection_budget``, while the warm-up runs in this process: the elimination's
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
        One per decision step. With ``faithful_masks`` the first one contributes only its
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
        faithful_masks: bool = False,
        first_mask_warmup: int | None = None,
        selection_budget: float | None = None,
        first_step_share: float | None = None,
        step_rest: bool = False,
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
        self.faithful_masks = check(
            "faithful_masks", faithful_masks, ARGUMENTS["faithful_masks"], "TabNet"
        )
        self.first_mask_warmup = check("first_mask_warmup", first_mask_warmup, _WARMUP, "TabNet")
        self.selection_budget = check("selection_budget", selection_budget, _BUDGET, "TabNet")
        self.first_step_share = check("first_step_share", first_step_share, _FIRST_STEP, "TabNet")
        self.step_rest = check("step_rest", step_rest, Boolean(), "TabNet")
        self.selection: BackwardElimination | None = None
        self.selection_reduce = None
        self.selection_processes = 1
        self._probe = None
        #: the rows the probes run on while the fit holds them out (``hold_out``)
        self.held_out: HeldOutRows | None = None
        #: set when the check at the end of the warm-up put columns back (see
        #: :meth:`_check_selection`)
        self.selection_check: SelectionCheck | None = None
        #: the dropped columns the end of the warm-up brought back (see :meth:`_readmit`)
        self.selection_readmitted: tuple[int, ...] = ()
        #: the rows the residual test runs on until the warm-up ends (``test_residuals_on``)
        self.residual_rows: tuple[torch.Tensor, torch.Tensor] | None = None
        #: while the first step narrows: the step it began, the features it leaves and
        #: the generator of the rows narrowed at each step
        self._narrowing: tuple[float, torch.Tensor, torch.Generator] | None = None
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
        if self.faithful_masks:
            self.first_mask_logits = nn.Parameter(torch.zeros(width, device=None))
            if self.first_mask_warmup is not None:
                step = torch.zeros((), device=None)
        else:
            self.initial_splitter = FeatureTransformer(
                width, hidden, self.shared, n_independent, **ghost
            )
        self.register_buffer("first_mask_step", step)
        # one logit per later step for its rest (see ``step_rest``), in issue 46's design
        rest = self.step_rest and self._sharpened
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
    def _sharpened(self) -> bool:
        """Issue 46's faithful design (see ``first_mask_warmup``)."""
        return self.faithful_masks and self.first_mask_warmup is not None

    @property
    def _selecting(self) -> bool:
        """Issue 46's design with its columns chosen by backward elimination."""
        return self._sharpened and self.selection_budget is not None

    @property
    def settling(self) -> bool:
        """Whether issue 46's first-mask warm-up still runs.

        The masks still sharpen, so the training loss is not yet the one the fit minimises;
        the estimators' stopping rule counts no epoch while this is True.
        """
        return self._sharpened and float(self.first_mask_step) < self.first_mask_warmup

    def first_mask_scale(self) -> float:
        """The factor of the first mask's logits in issue 46's design (1 in issue 29's).

        ``k * (d - 1)**(1 - alpha) / (alpha - 1)``, with ``d`` the post-embedding width (at
        least 2; 1 for one feature) and ``alpha`` the first mapping's ``start_alpha``: from
        a uniform mask, a feature whose logit is ``1 / k`` below the others' drops out
        exactly there, in every mode and at every width (unscaled, that gap is
        ``(d - 1)**(1 - alpha) / (alpha - 1)``: ``1 / (d - 1)`` for sparsemax,
        ``2 / sqrt(d - 1)`` for 1.5-entmax, wider as alpha nears 1, so an unscaled mask fell
        sparse at random in sparsemax mode and stayed dense in the others). The sharpness
        ``k`` grows from 1 to ``FIRST_MASK_SHARPNESS`` (30) over the ``first_mask_warmup``
        training steps: the logits learn which features matter while the mask is still
        dense (their gradient is mostly noise at first, and an early zero has no gradient to
        come back with), then the mask sharpens onto those.

        Returns
        -------
        float
            The factor; 1 without ``faithful_masks`` or ``first_mask_warmup``.
        """
        if not self._sharpened:
            return 1.0
        done = min(1.0, float(self.first_mask_step) / self.first_mask_warmup)
        k = 1.0 + (FIRST_MASK_SHARPNESS - 1.0) * done
        alpha = self.attentive_transformers[0].start_alpha
        if alpha <= 1.0:  # softmax: no zeros to place
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
        a = None if self.faithful_masks else self.initial_splitter(X)[:, self.n_d :]
        tied = self._tied_indicators()
        for step, (attentive, transformer) in enumerate(
            zip(self.attentive_transformers, self.feature_transformers, strict=True)
        ):
            if a is None:  # faithful: the first mask reads no input
                if self._selecting:
                    # uniform over the columns the first step reads (logit 0); _LATER: kept
                    # for the later steps only, _DROPPED: read by no step. A probe's hidden
                    # columns are 0 in X (their mean) and in the later steps' prior
                    logits = self.first_mask_logits.detach().expand_as(X)
                    if narrowed is not None:
                        logits = logits.masked_fill(narrowed, _LATER)
                else:
                    logits = (self.first_mask_logits * self.first_mask_scale()).expand_as(X)
                    logits = logits if keep is None else logits * prior
                if tied is not None:  # no mask attends to an indicator on its own
                    logits = logits.index_fill(-1, tied[1], _DROPPED)
                M = attentive.mapping(logits, start=self._sharpened)
                kept = logits > _DROPPED / 2
                out = transformer(self._read(M, X, tied))
            else:
                if self._sharpened:
                    scores = attentive.scores(a, prior) * _sparsity_scale(attentive.alpha)
                    if self._selecting:  # no later step reads a dropped column
                        scores = scores - 1e6 * (~kept).to(scores.dtype)
                    M = self._later_mask(attentive, scores, step)
                else:
                    M = attentive(a, prior)
                out = transformer(self._read(M, X, tied) if self.faithful_masks else M * X)
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
        if not self._selecting or not self.missing_idxs:
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
        gradients on) moves issue 46's first-mask warm-up on by one."""
        narrowed = None
        if self._sharpened and self.training and torch.is_grad_enabled():
            with torch.no_grad():
                self.first_mask_step += 1
                if self._narrowing is not None:
                    narrowed = self._narrow(X.shape[0], X.device)
                if self.held_out is not None and not self.settling:
                    self._check_selection()
                    self.release_held_out()
                if not self.settling:
                    self.residual_rows = None
                if self._selecting and keep is None:
                    self._probe = self._run_probes(X)
        decisions = []
        entropy = 0
        total = 0
        for M, d in self._steps(X, keep, narrowed):
            decisions.append(d)
            if self._sharpened:
                total = total + M
            else:
                entropy = entropy + (-M * torch.log(M + _ENTROPY_EPS)).sum(-1)
        if self._sharpened:
            mean = total / self.n_steps
            return decisions, (-mean * torch.log(mean + _ENTROPY_EPS)).sum(-1)
        return decisions, entropy / self.n_steps

    # ------------------------------------------------------------------ column selection

    def _columns_of(self) -> torch.Tensor:
        """The original column of each post-embedding feature."""
        if self.post_embedding_dim == self.n_features:
            return torch.arange(self.n_features, device=self.first_mask_logits.device)
        return self._group

    def _run_probes(self, X: torch.Tensor):
        """The outputs of this training step's occlusions (``sk_entmax.nn.tabnet_selection``), run
        before the step's own forward pass; None outside the elimination's window.

        Run in training mode, as the step is (its batch statistics); the running statistics
        the probes would update are put back, so the model trains as if they never ran.
        With held-out rows (:meth:`hold_out`) they run on the next of those instead of the
        batch, and the loss with nothing occluded is measured at every step of the window,
        probe or not (the selection's check compares its first and last values).
        """
        step = float(self.first_mask_step)
        if not SELECTION_START * self.first_mask_warmup <= step < self.first_mask_warmup:
            return None
        if self.selection is None:
            self.selection = BackwardElimination(self.n_features, self.selection_budget)
        probes = self.selection.probes()
        last = step + 1 >= self.first_mask_warmup  # the dropped columns' last test
        probed = self.held_out is not None and self.held_out.probed
        # held-out rows too few to probe on serve the check only: measured over the first
        # steps, as probed rows are
        checked = self.held_out is not None and not probed and self.selection.first_steps()
        if not (probes or probed or checked or (last and self.residual_rows)):
            return None
        held = None  # the held-out rows' targets and weights, for record_selection
        if probed:  # on held-out rows, the base loss even with no probe
            rows, target, weight, idx = self.held_out.next_rows()
            X = rows.to(X.device)
            held = (target.to(X.device), weight.to(X.device), idx)
        else:
            X = X[:PROBE_ROWS]
        saved = [(b, b.clone()) for b in self.buffers() if b is not self.first_mask_step]
        try:
            base = self._scores(X)
            outputs = []
            for probe in probes:
                keep = torch.ones(X.shape[0], self.post_embedding_dim, device=X.device)
                keep[:, self._hit(list(probe.columns))] = 0
                outputs.append((probe, self._scores(X, keep)))
            check = None  # the checked rows' scores, targets, weights and indices
            if checked:
                rows, target, weight, idx = self.held_out.next_rows()
                device = X.device
                check = (self._scores(rows.to(device)), target.to(device), weight.to(device), idx)
        finally:
            for buffer, value in saved:
                buffer.copy_(value)
        return base, outputs, held, check

    def _scores(self, X: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        return self.final_mapping(sum(d for _, d in self._steps(X, keep)))

    def record_selection(self, target: torch.Tensor, loss) -> None:
        """Give this training step's probes their losses; drop what the elimination decides.

        A no-op when the step ran no probes. The module of a task calls it from its loss,
        where the targets are.

        Parameters
        ----------
        target : torch.Tensor
            The batch's targets (the probes ran on its first ``PROBE_ROWS`` rows).
        loss : callable
            ``loss(scores, target)``: the task's per-row loss, without the regulariser.
        """
        probe, self._probe = self._probe, None
        if probe is None:
            return
        base, outputs, held, check = probe
        weight = idx = None
        if held is not None:  # the probes ran on held-out rows
            target, weight, idx = held
        target = target[: base.shape[0]]

        def mean(rows: torch.Tensor) -> torch.Tensor:
            return rows.mean() if weight is None else (rows * weight).sum() / weight.sum()

        with torch.no_grad():
            rows = loss(base, target)
            values = [mean(rows)]
            singles = []  # the single probes' typical rises: the median row's
            for probe, scores in outputs:
                occluded = loss(scores, target)
                values.append(mean(occluded))
                if probe.kind == "single":
                    singles.append((occluded - rows).median())
            values = torch.stack(values + singles).to(torch.float64)
            if self.selection_reduce is not None:  # several processes: their means
                values = self.selection_reduce(values)
            values = values.tolist()
            probes = [p for p, _ in outputs]
            losses = list(zip(probes, values[1 : 1 + len(probes)], strict=True))
            columns = [p.columns[0] for p in probes if p.kind == "single"]
            typical = dict(zip(columns, values[1 + len(probes) :], strict=True))
            needed = None
            if self.residual_rows is not None:

                def needed(columns: list[int]) -> set[int]:
                    return self._signal_left(columns, loss)

            held_rows = None  # this process's rows, for the check
            if idx is not None:
                held_rows = (idx, rows.tolist(), weight.tolist())
            elif check is not None:
                scores, checked, checked_weight, checked_idx = check
                checked_loss = loss(scores, checked).tolist()
                held_rows = (checked_idx, checked_loss, checked_weight.tolist())
            dropped = self.selection.record(values[0], losses, typical, needed, held_rows)
            if dropped:
                self.first_mask_logits[self._hit(dropped)] = _DROPPED
            if self.held_out is not None and self._remeasuring():
                self.selection.remeasured(self._first_rows_now(loss))
            self._choose_first_step()
            if float(self.first_mask_step) + 1 >= self.first_mask_warmup:
                self.selection.ending()  # before anything comes back
                self._readmit(loss)

    def _remeasuring(self) -> bool:
        """Whether this step measures the selection's first held-out rows again, for its
        check: over the ``SAMPLES`` steps before the first step may begin to narrow (and
        until it does), and over the warm-up's last ``SAMPLES`` steps."""
        step, warmup = float(self.first_mask_step), self.first_mask_warmup
        if step + 1 + SAMPLES > warmup:
            return True
        return (
            self.first_step_share is not None
            and not self.selection.narrowed
            and step + SAMPLES >= FIRST_STEP_AT * warmup
        )

    def _first_rows_now(self, loss) -> dict[int, float]:
        """The loss now of each held-out row the selection's first steps ran on, measured
        as the probes were (training mode, in the same sets of rows, the running
        statistics left as they were). It runs after the training step's forward, whose
        graph holds the batch norms' buffers: the pass updates copies of them, swapped in
        and out, so the originals are never written."""
        rows: dict[int, list[float]] = {}
        swapped = [
            (module._buffers, name, buffer)
            for module in self.modules()
            for name, buffer in module._buffers.items()
            if buffer is not None and buffer is not self.first_mask_step
        ]
        device = self.first_mask_logits.device
        for buffers, name, buffer in swapped:
            buffers[name] = buffer.clone()
        try:
            with torch.no_grad():
                for idx in self.selection.first_chunks():
                    X, target, _ = self.held_out.rows_at(idx)
                    values = loss(self._scores(X.to(device)), target.to(device)).tolist()
                    for row, value in zip(idx, values, strict=True):
                        rows.setdefault(row, []).append(value)
        finally:
            for buffers, name, buffer in swapped:
                buffers[name] = buffer
        return {row: sum(v) / len(v) for row, v in rows.items()}

    def _total(self, sums: list[float]) -> list[float]:
        """This process's sums for the selection's check, added over every process."""
        if self.selection_reduce is None:
            return sums
        values = torch.tensor(sums, dtype=torch.float64, device=self.first_mask_logits.device)
        return (self.selection_reduce(values) * self.selection_processes).tolist()

    def _signal_left(self, columns: list[int], loss) -> set[int]:
        """Which of the original ``columns`` the residual still depends on, beyond the
        other columns some step reads (``sk_entmax.nn.tabnet_residual``, at
        ``RESIDUAL_LEVEL`` over the columns, on the rows of :meth:`test_residuals_on`):
        signal the model misses, whether it has not learned the column yet or no longer
        reads it. Empty without rows to test on."""
        if self.residual_rows is None or not columns:
            return set()
        device = self.first_mask_logits.device
        X, target = (t.to(device) for t in self.residual_rows)
        # in evaluation mode (the running statistics, left as they are): this runs after
        # the training step's forward, whose graph holds the batch norms' buffers
        training = self.training
        self.train(False)
        try:
            scores = self._scores(X).detach()
        finally:
            self.train(training)
        with torch.enable_grad():
            scores.requires_grad_(True)
            (gradient,) = torch.autograd.grad(loss(scores, target).sum(), scores)
        categorical = set(self.cat_idxs)
        read = [c for c in self._read_columns() if c not in columns]
        p = residual_pvalues(
            X[:, columns],
            gradient,
            [c in categorical for c in columns],
            X[:, read],
            [c in categorical for c in read],
        )
        if self.selection_reduce is not None:  # several processes: one decision for all
            p = self.selection_reduce(p.to(device)).cpu()
        return {
            c
            for c, value in zip(columns, p.tolist(), strict=True)
            if value * len(columns) < RESIDUAL_LEVEL
        }

    def _read_columns(self) -> list[int]:
        """The original columns some step may read (not dropped)."""
        kept = self.first_mask_logits > _DROPPED / 2
        return sorted(set(self._columns_of()[kept].tolist()))

    def _readmit(self, loss) -> None:
        """At the warm-up's last step: the dropped columns the residual still depends on
        (:meth:`_signal_left`) come back, for the later steps (for every step
        when the first one is not narrowed), and ``selection_readmitted`` names them. A
        column dropped while the network had not yet learned it looks worthless to the
        elimination's occlusions; the residual shows what the model misses without it."""
        back = sorted(self._signal_left(self.dropped_columns(), loss))
        if back:
            value = _LATER if self.first_step_share is not None else 0.0
            with torch.no_grad():
                self.first_mask_logits[self._hit(back)] = value
        self.selection_readmitted = tuple(back)

    def _hit(self, columns: list[int]) -> torch.Tensor:
        """Which post-embedding features belong to the original ``columns``."""
        every = self._columns_of()
        return torch.isin(every, torch.tensor(columns, device=every.device))

    def _choose_first_step(self) -> None:
        """Once ``FIRST_STEP_AT`` of the warm-up has passed, start to narrow the first step
        onto the kept columns whose typical rise is at least ``first_step_share`` of the
        largest (:meth:`BackwardElimination.leading`; once a fit, and the elimination then
        never drops them): the others leave
        it a growing share of the rows at a time (:meth:`_narrow`) and stay open to the
        later steps, whose masks, computed from what the row has read so far, choose per
        row among them."""
        selection = self.selection
        if self.first_step_share is None or selection.protected or self._narrowing is not None:
            return
        if float(self.first_mask_step) < FIRST_STEP_AT * self.first_mask_warmup:
            return
        chosen = selection.leading(self.first_step_share)
        if chosen is None:
            return
        later = (self.first_mask_logits > _DROPPED / 2) & ~self._hit(chosen)
        # the rows narrowed at each step come from a generator of their own, seeded by the
        # step: the global one is also drawn from by the thread that prepares the batches,
        # so draws from it here would depend on timing
        rows = torch.Generator().manual_seed(int(self.first_mask_step))
        self._narrowing = (float(self.first_mask_step), later, rows)
        selection.narrowing()

    def _narrow(self, n_rows: int, device: torch.device) -> torch.Tensor | None:
        """One training step of the first step's narrowing: which features each of the
        step's ``n_rows`` rows no longer reads at its first step.

        Over ``FIRST_STEP_RAMP`` of the warm-up a growing share of the batch's rows, drawn
        at random at every step and reaching all of them at the end, reads only the first
        step's own columns there; then the other kept columns take ``_LATER`` for good.
        The network so learns to read them at its later steps while the other rows still
        train it as it was. (Narrowed at once, the held-out loss rose by half for a
        while, which set off the check; faded out of the mask instead, the network scaled
        up its weights to read them through ever smaller mask entries, and the last step to
        0 was as sharp a shock.)"""
        start, later, generator = self._narrowing
        later = later & (self.first_mask_logits > _DROPPED / 2)  # not dropped since
        done = (float(self.first_mask_step) - start) / max(
            FIRST_STEP_RAMP * self.first_mask_warmup, 1.0
        )
        if done >= 1.0:
            self.first_mask_logits[later] = _LATER
            self._narrowing = None
            return None
        rows = torch.rand(n_rows, generator=generator) < done
        return rows.to(device)[:, None] & later.to(device)

    def _check_selection(self) -> None:
        """At the end of the warm-up, on the held-out rows: if the loss rose since the
        selection began (:meth:`BackwardElimination.loss_rise`), what the selection left
        out was needed. If it had not risen before the first step began to narrow
        (:meth:`BackwardElimination.drops_cost`), the narrowing is what cost: the first
        step reads every kept column again and the dropped columns stay out. Else every
        column goes back to every step (the first step reads them all, as before the
        selection). ``selection_check`` keeps the two losses and the columns put back."""
        selection = self.selection
        rise = None if selection is None else selection.loss_rise(self._total)
        if rise is None:
            return
        logits = self.first_mask_logits
        later = (logits > _DROPPED / 2) & (logits != 0)
        first_step_only = bool(later.any()) and not selection.drops_cost(self._total)
        with torch.no_grad():
            out = later if first_step_only else logits != 0
            back = sorted(set(self._columns_of()[out].tolist()))
            logits[out] = 0.0
        self._narrowing = None
        self.selection_check = SelectionCheck(rise[0], rise[1], tuple(back), first_step_only)

    def dropped_columns(self) -> list[int]:
        """The original columns no step reads: those the selection dropped.

        Returns
        -------
        list of int
            Sorted; empty without a ``selection_budget`` or before any drop.
        """
        if not self._selecting:
            return []
        dropped = self.first_mask_logits < _DROPPED / 2
        columns = set(self._columns_of()[dropped].tolist())
        # a column is dropped when all of its features are (they go together)
        return sorted(columns - set(self._read_columns()))

    def hold_out(self, rows: HeldOutRows) -> None:
        """Run the selection's probes on rows the fit holds out of training.

        The rows stay out until the warm-up ends; then :meth:`release_held_out` gives them
        back.

        Parameters
        ----------
        rows : HeldOutRows
            The held-out rows and what gives them back to training.
        """
        self.held_out = rows

    def release_held_out(self) -> None:
        """Give the held-out rows back to training (once) and forget them.

        A no-op without any. Called when the warm-up ends, and by the estimator after its
        fit (a fit that ends during the warm-up).
        """
        rows, self.held_out = self.held_out, None
        self.residual_rows = None
        if rows is not None:
            rows.give_back()

    def test_residuals_on(self, X: torch.Tensor, y: torch.Tensor) -> None:
        """Give the rows the residual test runs on, until the warm-up ends.

        The test keeps, or brings back, a column the model still misses
        (``sk_entmax.nn.tabnet_residual``). Rows the network trains on are fair evidence
        here, unlike for the probes: a column it does not read cannot have been
        overfitted, and on a column it reads, fitting only shrinks the residual's
        dependence (the test then keeps less, not more); they give the test the power
        that a rare class's few held-out rows lack.

        Parameters
        ----------
        X, y : torch.Tensor
            Features (as the network takes them) and targets (as its loss takes them).
        """
        self.residual_rows = (X, y)

    def start_selection(self) -> None:
        """Start the column selection afresh: every column kept, the warm-up at step 0.

        For a network that starts from a pretrained encoder's weights; a no-op without a
        ``selection_budget``.
        """
        if not self._selecting:
            return
        with torch.no_grad():
            self.first_mask_logits.zero_()
            self.first_mask_step.zero_()
            if self.rest_logits is not None:
                self.rest_logits.zero_()
        self.selection = None
        self.selection_readmitted = ()
        self._narrowing = None

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
            0 for one-hot masks, ``log(d)`` for uniform ones. In issue 46's faithful design
            (a ``first_mask_warmup``), the entropy of the mean of the steps' masks instead,
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
        ``faithful_masks``, features the row's scores provably do not depend on.

        Parameters
        ----------
        X : torch.Tensor of shape (n_samples, n_features)
            Float features; categorical columns hold their integer codes.

        Returns
        -------
        torch.Tensor of bool, shape (n_samples, n_features)
            True where every column of the feature has mask 0 at every step. All False
            without ``faithful_masks``: the first step reads every feature, so no zero is a
            proof there.
        """
        used = None
        for M, _ in self._steps(X):
            M_cols = self._to_columns(M)
            used = M_cols if used is None else used + M_cols
        if not self.faithful_masks:
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
