"""What the TabNet classifier and regressor share: the network's arguments, the training
plan, TabNet's fitted attributes and the data they take."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import torch
from sklearn.utils.class_weight import compute_sample_weight

from sk_entmax._attributes import (
    Attribute,
    Invalid,
    array,
    categories,
    encoder,
    matching_network,
    missing_features,
)
from sk_entmax._engine.training import ADAM, TrainingPlan
from sk_entmax._inputs.tabular import TabularInputMixin
from sk_entmax._tabnet.design import mask_design
from sk_entmax._tabnet.diagnostics import warn_if_collapsed, warn_if_restored
from sk_entmax._tabnet.explain import MaskExplanationMixin
from sk_entmax._tabnet.sizing import TabNetSizingMixin
from sk_entmax.entmax.constraints import invalid
from sk_entmax.nn.tabnet_selection import (
    HELD_OUT_MIN,
    HELD_OUT_SHARE,
    RESIDUAL_ROWS,
    HeldOutRows,
)

__all__ = [
    "LAMBDA_SPARSE",
    "SETTLED_LAMBDA_SPARSE",
    "TABNET_FITTED",
    "TABNET_FROM_NETWORK",
    "TabNetEstimatorMixin",
    "attribute_entries",
    "held_out_rows",
    "parameter_entries",
]

#: ``lambda_sparse="auto"``: the weight of the regulariser, by ``faithful_masks``; the
#: paper's (and pytorch-tabnet's) 1e-3 for its mean step entropy, and 1e-3 for the faithful
#: design's entropy of the mean mask too since its masks choose per row (issue 57: 0.01,
#: issue 46's weight, made the later steps read too little for the signal on some data)
LAMBDA_SPARSE = {False: 1e-3, True: 1e-3}
#: ``lambda_sparse="auto"`` with ``faithful_masks``: the weight once the warm-up has ended
#: (issue 57: the columns are chosen and learned by then, and a later step's rest lets a
#: row read less; at 1e-3 the later steps still read a feature of the other branch of a
#: switch on many rows)
SETTLED_LAMBDA_SPARSE = 1e-2


def parameter_entries(doc: str, drop: tuple[str, ...] = (), keep: tuple[str, ...] = ()) -> str:
    """The "Parameters" entries of the numpydoc docstring ``doc``, but those named in
    ``drop`` (or only those named in ``keep``): the TabNet parameters are documented once,
    where :class:`~sk_entmax.TabNetEntmaxClassifier` states them."""
    section = doc.split("    Parameters\n    ----------\n", 1)[1].split("\n    Attributes\n", 1)[0]
    entries = re.split(r"\n(?=    \w+ : )", section.rstrip("\n"))
    names = [e.split(" : ", 1)[0].strip() for e in entries]
    return "\n".join(
        e for e, n in zip(entries, names, strict=True) if n not in drop and (not keep or n in keep)
    )


def column_indices() -> Attribute:
    """Distinct indices of the network's original columns (``restored_features_``,
    ``needed_features_``; optional)."""
    indices = array("iu", (None,), low=0, unique=True)

    def check(value, sizes, fitted):
        value = indices.check(value, sizes, fitted)
        if value.size and int(value.max()) >= sizes["n_features"]:
            raise Invalid(f"it holds an index beyond the network's {sizes['n_features']} columns")
        return value

    return Attribute(check, required=False)


def attribute_entries(doc: str, keep: tuple[str, ...]) -> str:
    """The "Attributes" entries of the numpydoc docstring ``doc`` named in ``keep``, in
    its order: attributes every TabNet estimator has are documented once, where
    :class:`~sk_entmax.TabNetEntmaxClassifier` states them."""
    section = doc.split("    Attributes\n    ----------\n", 1)[1]
    section = re.split(r"\n\n    [A-Z]\w+\n    -+\n", section, maxsplit=1)[0]
    entries = re.split(r"\n(?=    \w+ : )", section.rstrip("\n"))
    return "\n".join(e for e in entries if e.split(" : ", 1)[0].strip() in keep)


#: the fitted attributes of a TabNet estimator beyond its task's, as
#: :mod:`sk_entmax.persistence` stores them (shapes and ``equals`` name arguments of the
#: network)
TABNET_FITTED: dict[str, Attribute] = {
    "categorical_features_": array("iu", (None,), equals="cat_idxs"),
    "categories_": categories(),
    "_encoder": encoder(),
    "missing_features_": missing_features(),
    # in [1, 2], and the alphas of the stored network's masks
    "mask_alpha_": matching_network(
        array("f", ("n_steps",), low=1.0, high=2.0),
        lambda net: net.tabnet.mask_alphas(),
        "mask alphas ",
    ),
    "feature_importances_": array("f", ("n_features",), low=0.0, total=1.0),
    # only when the selection's check put columns back (issue 57)
    "restored_features_": column_indices(),
    "selection_losses_": array("f", (2,), low=0.0, required=False),
    # only when the selection ran: the columns its residual test kept (issue 57)
    "needed_features_": column_indices(),
}

#: the private attributes of a fitted TabNet estimator that are arguments of its network,
#: set from them on load (the fill values of missing cells: a supervised TabNet started
#: from a loaded pretrainer takes them)
TABNET_FROM_NETWORK = {"_missing_fill": "missing_fill"}


def held_out_rows(y_enc: np.ndarray, share: float, seed: int) -> np.ndarray:
    """The sorted indices of ``share`` of the rows, drawn with ``seed``; for a target of
    class codes (one per row), ``share`` of each class's rows (rounded down), so that a rare
    class keeps its training rows.

    Parameters
    ----------
    y_enc : numpy.ndarray
        The encoded training target.
    share : float
        In (0, 1).
    seed : int
        Seeds the draw.
    """
    rng = np.random.default_rng(seed)
    n = y_enc.shape[0]
    if y_enc.ndim == 1 and np.issubdtype(y_enc.dtype, np.integer):
        groups = [np.flatnonzero(y_enc == c) for c in np.unique(y_enc)]
    else:
        groups = [np.arange(n)]
    held = [rng.choice(g, int(share * g.size), replace=False) for g in groups]
    return np.sort(np.concatenate(held)).astype(np.intp)


class TabNetEstimatorMixin(MaskExplanationMixin, TabNetSizingMixin, TabularInputMixin):
    """TabNet's part of an estimator, for any task: placed before the task's base
    (:class:`~sk_entmax._classifier.BaseEntmaxClassifier` or
    :class:`~sk_entmax._regressor.BaseEntmaxRegressor`), which supplies the target and the
    loss. The task's ``_module`` adds its own arguments to :meth:`_tabnet_arguments`."""

    #: whether the task chooses its columns on its loss (see
    #: :func:`~sk_entmax._tabnet.design.mask_design`); a pretrainer has no task loss
    _selects_columns = True

    def _cross_check(self, params: dict[str, Any]) -> None:
        if params["n_independent"] + params["n_shared"] < 1:
            raise invalid(
                "n_independent",
                type(self).__name__,
                "at least 1 when n_shared is 0 (a feature transformer needs a GLU layer)",
                params["n_independent"],
            )

    def _plan(self, params: dict[str, Any]) -> TrainingPlan:
        return TrainingPlan(
            solver=ADAM,
            lr=params["lr"],
            max_epochs=params["max_epochs"],
            patience=params["patience"],
            gradient_clip=params["clip_value"],
        )

    def _stream_plan(self, params: dict[str, Any]) -> TrainingPlan:
        """One epoch of Adam on a partial_fit chunk, at ``lr`` with ``clip_value``; a chunk
        does not start from a pretrainer (``fit`` does)."""
        if params.get("pretrainer") is not None:
            raise ValueError(
                "partial_fit trains from the current weights (or from scratch on the first "
                "call), not from a pretrainer: fit with pretrainer=..., then partial_fit, or "
                "set pretrainer=None"
            )
        return TrainingPlan(solver=ADAM, lr=params["lr"], gradient_clip=params["clip_value"])

    def _lambda_sparse(self, params: dict[str, Any]) -> float:
        """The weight of the regulariser: ``lambda_sparse``, or its "auto" value."""
        if params["lambda_sparse"] == "auto":
            return LAMBDA_SPARSE[mask_design(params, None).faithful]
        return params["lambda_sparse"]

    def _regulariser(self, params: dict[str, Any]) -> dict[str, float | None]:
        """The regulariser's weights a supervised task's module takes: ``lambda_sparse``
        and, for "auto" with ``faithful_masks``, ``SETTLED_LAMBDA_SPARSE`` once the
        warm-up has ended (else None: the same weight throughout)."""
        auto = params["lambda_sparse"] == "auto" and mask_design(params, None).faithful
        return {
            "lambda_sparse": self._lambda_sparse(params),
            "settled_lambda_sparse": SETTLED_LAMBDA_SPARSE if auto else None,
        }

    def _tabnet_arguments(
        self,
        params: dict[str, Any],
        n_features: int,
        n_outputs: int,
        batch_size: int,
        steps: int | None = None,
    ) -> dict[str, Any]:
        """The arguments of :class:`~sk_entmax.nn.TabNet` the checked ``params`` give, for
        a fit of ``steps`` optimizer steps (None: open-ended), which sets the warm-up."""
        cats = self.categorical_features_
        return {
            "n_features": n_features,
            "n_outputs": n_outputs,
            "n_d": params["n_d"],
            "n_a": params["n_a"],
            "n_steps": params["n_steps"],
            "gamma": params["gamma"],
            "n_independent": params["n_independent"],
            "n_shared": params["n_shared"],
            "virtual_batch_size": self._virtual_batch_size(params, batch_size),
            "momentum": params["momentum"],
            "entmax_mode": params["entmax_mode"],
            "entmax_alpha": params["entmax_alpha"],
            "mask_design": mask_design(params, steps, self._selects_columns),
            "cat_idxs": cats.tolist(),
            "cat_dims": [len(c) + 1 for c in self.categories_],
            "cat_emb_dims": params["cat_emb_dim"],
            "missing_idxs": self._missing_features().tolist(),
            "missing_fill": self._missing_fill,
        }

    def _fit_targets(self, X, y, sample_weight, params):
        """The task's target and weights; a faithful fit's weights are 0 on the rows it
        holds out of training while its column selection runs (see :meth:`_hand_held_out`)."""
        y_enc, weight = super()._fit_targets(X, y, sample_weight, params)
        self.__dict__.pop("_held_out", None)
        if not mask_design(params, None).faithful:
            return y_enc, weight
        held = held_out_rows(y_enc, HELD_OUT_SHARE, self._seed(params))
        if held.size == 0:  # nothing to hold out: the residual test only
            self.__dict__["_held_out"] = (None, None, weight, X, y_enc)
            return y_enc, weight
        weight = np.array(weight, copy=True)
        given = weight[held].copy()
        weight[held] = 0
        self.__dict__["_held_out"] = (held, given, weight, X, y_enc)
        return y_enc, weight

    def _hand_held_out(self, module: torch.nn.Module, params: dict[str, Any]) -> None:
        """Give the network the rows :meth:`_fit_targets` held out, for its selection's
        probes: measured on rows the network has not trained on, a column it overfits
        does not look needed. When the warm-up ends the network gives them back: their
        weights are restored in place, in the array the training batches are cut from.
        Also give it up to ``RESIDUAL_ROWS`` of all the fit's rows for its residual test
        (:meth:`~sk_entmax.nn.TabNet.test_residuals_on`), held out or not. Fewer than
        ``HELD_OUT_MIN`` held-out rows are too few to rank columns on: the probes then run
        on the batch, and the rows serve the selection's check only (``HeldOutRows.probed``
        False)."""
        stash = self.__dict__.pop("_held_out", None)
        if stash is None:
            return
        held, given, weight, X, y_enc = stash

        def give_back() -> None:
            if held is not None:
                weight[held] = given

        tabnet = module.tabnet
        if not tabnet.design.selecting:
            give_back()
            return
        dtype = tabnet.first_mask_logits.dtype
        n = y_enc.shape[0]
        tested = np.arange(n)
        if n > RESIDUAL_ROWS:
            tested = np.sort(
                np.random.default_rng(self._seed(params)).choice(n, RESIDUAL_ROWS, False)
            )
        tabnet.test_residuals_on(
            torch.as_tensor(np.asarray(X[tested]), dtype=dtype), torch.as_tensor(y_enc[tested])
        )
        if held is None:
            return
        rows = torch.as_tensor(np.asarray(X[held]), dtype=dtype)
        y_held = y_enc[held]
        balance = np.ones(held.size)
        if y_held.ndim == 1 and np.issubdtype(y_held.dtype, np.integer):  # classes weigh alike
            balance = compute_sample_weight("balanced", y_held)
        tabnet.hold_out(
            HeldOutRows(
                rows,
                torch.as_tensor(y_held),
                give_back,
                torch.as_tensor(balance, dtype=dtype),
                held.size >= HELD_OUT_MIN,  # fewer are too few to rank columns on
            )
        )

    def _after_fit(self, X: np.ndarray) -> None:
        tabnet = self.net_.module_.tabnet
        tabnet.release_held_out()  # a fit that ended in its warm-up
        check = tabnet.selection_check
        if check is not None:
            self.restored_features_ = np.array(check.restored, dtype=np.intp)
            self.selection_losses_ = np.array([check.first_loss, check.latest_loss])
        else:  # nothing of an earlier fit's check stays
            self.__dict__.pop("restored_features_", None)
            self.__dict__.pop("selection_losses_", None)
        if tabnet.selection is not None:
            needed = tabnet.selection.kept | set(tabnet.selection_readmitted)
            self.needed_features_ = np.array(sorted(needed), dtype=np.intp)
        else:
            self.__dict__.pop("needed_features_", None)
        super()._after_fit(X)
        self.mask_alpha_ = np.array(tabnet.mask_alphas())
        self.feature_importances_ = self._importances(X)
        warn_if_restored(self)  # the selection's check put columns back: issue 57
        warn_if_collapsed(self, X)  # reads one column, predicts one class: issue 57

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # missing values get a learned indicator
        return tags
