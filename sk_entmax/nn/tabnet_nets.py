"""The TabNet networks of each task: classifier, regressor, and their saved-state tables.

:class:`TabNetClassifierNet` and :class:`TabNetRegressorNet` hold a
:class:`~sk_entmax.nn.tabnet.TabNet`, the weight of its sparsity regulariser and the task's
per-row loss (and, for the classifier, the output mapping of
:class:`~sk_entmax.nn.head.EntmaxHead`); ``state_spec`` says for
:mod:`sk_entmax.persistence` what their tensors may be called and which stored tensors
bound each argument of the network.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from sk_entmax.nn._tensor_spec import (
    BOOL,
    MAX_INT,
    REAL,
    STR,
    Argument,
    Extent,
    StateSpec,
    name_forms,
)
from sk_entmax.nn.head import EntmaxHead
from sk_entmax.nn.tabnet import TabNet
from sk_entmax.nn.tabnet_design import saved_design

__all__ = ["TabNetClassifierNet", "TabNetRegressorNet"]


# name forms and extents of TabNetClassifierNet.state_spec: a batch norm's tensors, the
# post-embedding width (the input of the initial batch norm), the categorical embeddings
_BN = "(weight|bias|running_mean|running_var)"
_WIDTH = Extent("tabnet.initial_bn.weight", axis=0)
_EMBEDDINGS = Extent("tabnet.embeddings.<i>.weight")


#: the names the tensors of a TabNet module can have, and the stored tensors that bound each
#: argument of :class:`TabNet` (a new argument must be added here)
_TABNET_NAMES = name_forms(
    f"tabnet.initial_bn.({_BN[1:-1]}|num_batches_tracked)",
    "tabnet.shared.<i>.weight",
    "tabnet.(initial_splitter|feature_transformers.<i>).layers.<i>.fc.weight",
    f"tabnet.(initial_splitter|feature_transformers.<i>).layers.<i>.bn.{_BN}",
    "tabnet.attentive_transformers.<i>.fc.weight",
    f"tabnet.attentive_transformers.<i>.bn.{_BN}",
    "tabnet.attentive_transformers.<i>.adaptive.alpha_raw",
    "tabnet.first_mask_logits",
    "tabnet.rest_logits",
    "tabnet.first_mask_step",
    "tabnet.embeddings.<i>.weight",
    "tabnet.final_mapping.(weight|bias)",
)
_TABNET_ARGUMENTS = {
    "lambda_sparse": REAL,
    "n_features": Argument("int", _WIDTH),
    "n_outputs": Argument("int", Extent("tabnet.final_mapping.weight", axis=0)),
    "n_d": Argument("int", Extent("tabnet.final_mapping.weight", axis=1)),
    "n_a": Argument("int", Extent("tabnet.attentive_transformers.<i>.fc.weight", 1)),
    "n_steps": Argument("int", Extent("tabnet.attentive_transformers.<i>.fc.weight")),
    "gamma": REAL,
    # the shared and independent GLU layers: a batch norm each
    "n_independent": Argument("int", Extent("tabnet.feature_transformers.0.layers.<i>.bn.weight")),
    "n_shared": Argument("int", Extent("tabnet.shared.<i>.weight")),
    "virtual_batch_size": Argument("int"),  # sizes no tensor
    "momentum": REAL,
    "entmax_mode": STR,
    "entmax_alpha": REAL,
    "cat_idxs": Argument("ints", _WIDTH, length=_EMBEDDINGS),
    "cat_dims": Argument(
        "ints", Extent("tabnet.embeddings.<i>.weight", axis=0), length=_EMBEDDINGS
    ),
    "cat_emb_dims": Argument(
        "int or ints",
        Extent("tabnet.embeddings.<i>.weight", axis=1, absent=MAX_INT),
        length=_EMBEDDINGS,
    ),
    "missing_idxs": Argument("ints", _WIDTH, length=_WIDTH),
    "missing_fill": Argument("reals or None", length=_WIDTH),
    "mask_design": Argument("fields or None"),
    # the design's flat arguments in files saved before it was one value (see
    # sk_entmax.nn.tabnet_design.saved_design)
    "faithful_masks": BOOL,
    "first_mask_warmup": Argument("real or None"),
    "selection_budget": Argument("real or None"),
    "first_step_share": Argument("real or None"),
    "step_rest": BOOL,
}
#: the arguments of a supervised task's module: TabNet's and the regulariser's weight after
#: the warm-up
_TASK_ARGUMENTS = {**_TABNET_ARGUMENTS, "settled_lambda_sparse": Argument("real or None")}


class _TabNetTask(nn.Module):
    """What the TabNet module of any task holds: the network, the weights of its sparsity
    regulariser, and a flat ``train``. A task adds its per-row loss (and, for a
    classifier, its output mapping).

    ``settled_lambda_sparse`` (None: ``lambda_sparse`` throughout) is the regulariser's
    weight once the faithful design's warm-up has ended (:attr:`TabNet.settling`): the
    columns are chosen by then and the network has learned what it reads, so a stronger
    pull towards fewer reads per row now takes what a row does not need rather than a
    signal not yet learned."""

    def __init__(
        self,
        lambda_sparse: float = 1e-3,
        settled_lambda_sparse: float | None = None,
        **tabnet_params,
    ) -> None:
        super().__init__()
        self.lambda_sparse = float(lambda_sparse)
        self.settled_lambda_sparse = (
            None if settled_lambda_sparse is None else float(settled_lambda_sparse)
        )
        saved = saved_design(tabnet_params)
        if saved is not None:  # a file saved before the design was one value
            if tabnet_params.get("mask_design") is not None:
                raise TypeError("give the mask design as mask_design only")
            tabnet_params["mask_design"] = saved
        self.tabnet = TabNet(**tabnet_params)

    def sparsity_weight(self) -> float:
        """The regulariser's weight at this training step.

        Returns
        -------
        float
            ``settled_lambda_sparse`` once the faithful design's warm-up has ended (if
            given), else ``lambda_sparse``.
        """
        settled = self.settled_lambda_sparse
        if settled is None or not self.tabnet.design.sharpened or self.tabnet.settling:
            return self.lambda_sparse
        return settled

    def train(self, mode: bool = True) -> _TabNetTask:
        """Set training (or evaluation) mode on this module and all its submodules.

        What :meth:`torch.nn.Module.train` sets, in one flat pass over the submodules rather
        than a recursive call per submodule: skorch calls it before every training step, and
        TabNet has dozens of submodules. A submodule that overrides ``train`` still has its
        own method called. The flag is set through ``nn.Module.__setattr__`` (as
        ``nn.Module.train`` sets it), and only where it changes: skorch asks for the mode
        the module is already in at every step but the first of a phase.
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            if module is not self and type(module).train is not nn.Module.train:
                module.train(mode)
            elif module.training is not mode:
                module.training = mode
        return self

    @property
    def settling(self) -> bool:
        """Whether the network's objective still changes by design (read-only).

        :attr:`TabNet.settling`: the network, which also has ``selection_reduce``, is the
        module that speaks to the training engine (``sk_entmax.nn.protocols``).
        """
        return self.tabnet.settling

    def forward(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(scores, M_loss)``."""
        return self.tabnet(X)

    def data_loss(self, scores: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The task's per-row loss of the scores, without the regulariser.

        A task with targets defines it (the pretraining network, which has none, defines
        its own ``loss`` instead).

        Parameters
        ----------
        scores : torch.Tensor of shape (n_samples, n_outputs)
            The network's output.
        target : torch.Tensor
            The targets of those rows.

        Returns
        -------
        torch.Tensor of shape (n_samples,)
            The loss of each row.
        """
        raise NotImplementedError

    def loss(self, output: tuple[torch.Tensor, torch.Tensor], target: torch.Tensor):
        """Per-row loss: :meth:`data_loss` plus the weighted mask entropy.

        The entropy's weight is :meth:`sparsity_weight`.

        In training, it also gives the network's column selection (if any ran this step)
        the losses of its probes (:meth:`TabNet.record_selection`).
        """
        scores, mask_entropy = output
        self.tabnet.record_selection(target, self.data_loss)
        return self.data_loss(scores, target) + self.sparsity_weight() * mask_entropy


class TabNetClassifierNet(_TabNetTask):
    """TabNet scores with an entmax output and the sparsity regulariser in its loss.

    The module a TabNet classifier trains: ``forward`` returns ``(scores, M_loss)`` and
    :meth:`loss` adds ``lambda_sparse * M_loss`` (per row) to the per-row Fenchel-Young loss
    of the output mapping, which :meth:`proba` applies at prediction.

    Parameters
    ----------
    lambda_sparse : float, default=1e-3
        Weight of the mask-entropy regulariser.
    alpha : float, default=1.5
        The alpha of the output mapping (1 softmax, 1.5 entmax15, 2 sparsemax).
    settled_lambda_sparse : float or None, default=None
        The regulariser's weight once the faithful design's warm-up has ended (None:
        ``lambda_sparse`` throughout).
    **tabnet_params
        Passed to :class:`TabNet` (``n_features`` and ``n_outputs`` included).

    Attributes
    ----------
    tabnet : TabNet
        The network.
    head : sk_entmax.nn.head.EntmaxHead
        The output mapping.
    """

    #: for :mod:`sk_entmax.persistence`: the names its tensors can have, and which stored
    #: tensors bound each argument, its own and :class:`TabNet`'s
    state_spec: ClassVar[StateSpec] = StateSpec(
        names=_TABNET_NAMES, arguments={"alpha": REAL, **_TASK_ARGUMENTS}
    )

    def __init__(
        self,
        lambda_sparse: float = 1e-3,
        alpha: float = 1.5,
        settled_lambda_sparse: float | None = None,
        **tabnet_params,
    ) -> None:
        super().__init__(lambda_sparse, settled_lambda_sparse, **tabnet_params)
        self.head = EntmaxHead(alpha)

    @property
    def alpha(self) -> float | torch.Tensor:
        """The alpha of the output mapping."""
        return self.head.alpha

    def data_loss(self, scores: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Per-row Fenchel-Young loss of the scores (of the output mapping).

        Parameters
        ----------
        scores : torch.Tensor of shape (n_samples, n_outputs)
            The network's output.
        target : torch.Tensor
            The targets of those rows.

        Returns
        -------
        torch.Tensor of shape (n_samples,)
            The loss of each row.
        """
        return self.head.loss(scores, target)

    def proba(self, scores: torch.Tensor) -> torch.Tensor:
        """The probabilities of the output mapping."""
        return self.head.proba(scores)


class TabNetRegressorNet(_TabNetTask):
    """TabNet with a linear output and the squared error as its loss.

    The module a TabNet regressor trains: ``forward`` returns ``(predictions, M_loss)``, one
    column per target, and :meth:`loss` is the per-row mean over the targets of the squared
    error, plus ``lambda_sparse * M_loss``.

    Parameters
    ----------
    lambda_sparse : float, default=1e-3
        Weight of the mask-entropy regulariser.
    settled_lambda_sparse : float or None, default=None
        The regulariser's weight once the faithful design's warm-up has ended (None:
        ``lambda_sparse`` throughout).
    **tabnet_params
        Passed to :class:`TabNet` (``n_features`` and ``n_outputs``, the number of targets,
        included).

    Attributes
    ----------
    tabnet : TabNet
        The network.
    """

    #: for :mod:`sk_entmax.persistence`, as :attr:`TabNetClassifierNet.state_spec`
    state_spec: ClassVar[StateSpec] = StateSpec(names=_TABNET_NAMES, arguments=_TASK_ARGUMENTS)

    def data_loss(self, scores: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Per-row mean squared error over the targets.

        Parameters
        ----------
        scores : torch.Tensor of shape (n_samples, n_outputs)
            The network's output.
        target : torch.Tensor
            The targets of those rows.

        Returns
        -------
        torch.Tensor of shape (n_samples,)
            The loss of each row.
        """
        target = target.to(scores.dtype).reshape(scores.shape)
        return (scores - target).pow(2).mean(dim=1)
