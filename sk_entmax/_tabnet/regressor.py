"""TabNetEntmaxRegressor: TabNet with entmax feature masks for a numeric target."""

from __future__ import annotations

from typing import Any, ClassVar

from sk_entmax._attributes import Attribute
from sk_entmax._parameters import SHARED_CONSTRAINTS, TABNET_CONSTRAINTS
from sk_entmax._regressor import FITTED_ATTRIBUTES, BaseEntmaxRegressor
from sk_entmax._saved_state import ModelState
from sk_entmax._tabnet.estimator import TabNetEntmaxClassifier
from sk_entmax._tabnet.from_pretrained import PRETRAINED_CONSTRAINTS, PretrainedStartMixin
from sk_entmax._tabnet.shared import (
    TABNET_FITTED,
    TABNET_FROM_NETWORK,
    TabNetEstimatorMixin,
    attribute_entries,
    parameter_entries,
)
from sk_entmax.entmax.constraints import Constraint
from sk_entmax.nn.tabnet_design import FIRST_MASK_WARMUP
from sk_entmax.nn.tabnet_nets import TabNetRegressorNet

__all__ = ["TabNetEntmaxRegressor"]


#: the fitted attributes of the column selection, documented where the classifier states them
_SELECTION_ATTRIBUTES = ("restored_features_", "selection_losses_", "needed_features_")


class TabNetEntmaxRegressor(PretrainedStartMixin, TabNetEstimatorMixin, BaseEntmaxRegressor):
    __doc__ = f"""TabNet (Arik & Pfister, 2019) with entmax feature masks, for a numeric target.

    The network, its masks, :meth:`explain`, ``feature_importances_``, categorical columns
    and missing values are those of :class:`TabNetEntmaxClassifier`; the output is linear,
    one column per target, and the loss is the mean squared error over the targets
    (weighted by ``sample_weight``), plus ``lambda_sparse`` times the masks' entropy. The
    network learns the target standardized column by column (mean 0, standard deviation 1
    over the training rows); :meth:`predict` returns it on its own scale. ``score`` is R²,
    as for every scikit-learn regressor. Without ``early_stopping``, training stops once the
    training loss has not improved for ``patience`` epochs; with it (by default, ``"auto"``:
    on more than 10,000 rows), once the loss on the held-out ``validation_fraction`` (rows
    drawn at random) has not, restoring the best weights.

    Parameters
    ----------
{parameter_entries(TabNetEntmaxClassifier.__doc__, drop=("alpha", "class_weight"))}

    Attributes
    ----------
    n_features_in_ : int
        Number of columns seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, defined only when ``X`` has string column names.
    n_outputs_ : int
        Number of targets (columns of ``y``; 1 for a 1-d ``y``).
    categorical_features_ : ndarray of int
        Indices of the embedded (categorical) columns.
    categories_ : list of ndarray
        The categories seen at fit, per categorical column (code 0 is "unknown").
    missing_features_ : ndarray of str or of int
        The numeric columns that held missing values at fit, each with a learned missing
        indicator (names where X had column names, else indices).
    net_ : skorch.NeuralNet
        The trained skorch net; ``net_.module_.tabnet`` is the :class:`~sk_entmax.nn.TabNet`.
    n_iter_ : int
        Number of epochs run.
    mask_alpha_ : ndarray of shape (n_steps,)
        The alpha of each step's mask mapping after fit (learned in "adaptive" mode).
    feature_importances_ : ndarray of shape (n_features_in_,)
        Non-negative, summing to 1: the share of the training data's ``explain`` attribution
        per original column.
{attribute_entries(TabNetEntmaxClassifier.__doc__, _SELECTION_ATTRIBUTES)}

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sk_entmax import TabNetEntmaxRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = TabNetEntmaxRegressor(max_epochs=5, random_state=0).fit(X, y)
    >>> reg.predict(X[:3]).shape, reg.feature_importances_.shape
    ((3,), (10,))
    >>> M_explain, masks = reg.explain(X[:3])
    >>> M_explain.shape, sorted(masks)
    ((3, 10), [0, 1, 2])
    """

    def __init__(
        self,
        *,
        n_d=8,
        n_a=8,
        n_steps=3,
        gamma=1.3,
        n_independent=2,
        n_shared=2,
        lambda_sparse="auto",
        momentum=0.02,
        virtual_batch_size="auto",
        entmax_mode="sparsemax",
        entmax_alpha=1.5,
        faithful_masks=True,
        mask_warmup=FIRST_MASK_WARMUP,
        categorical_features=None,
        cat_emb_dim=1,
        pretrainer=None,
        clip_value=1.0,
        lr=0.02,
        max_epochs=100,
        batch_size="auto",
        early_stopping="auto",
        validation_fraction=0.1,
        patience=20,
        n_jobs=None,
        device="cpu",
        random_state=None,
        verbose=0,
    ):
        self.n_d = n_d
        self.n_a = n_a
        self.n_steps = n_steps
        self.gamma = gamma
        self.n_independent = n_independent
        self.n_shared = n_shared
        self.lambda_sparse = lambda_sparse
        self.momentum = momentum
        self.virtual_batch_size = virtual_batch_size
        self.entmax_mode = entmax_mode
        self.entmax_alpha = entmax_alpha
        self.faithful_masks = faithful_masks
        self.mask_warmup = mask_warmup
        self.categorical_features = categorical_features
        self.cat_emb_dim = cat_emb_dim
        self.pretrainer = pretrainer
        self.clip_value = clip_value
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.n_jobs = n_jobs
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    #: the fitted attributes :mod:`sk_entmax.persistence` stores: a regressor's and TabNet's
    _fitted_schema: ClassVar[dict[str, Attribute]] = {**FITTED_ATTRIBUTES, **TABNET_FITTED}
    #: what :mod:`sk_entmax.persistence` stores besides: the network and the pretrainer (as
    #: :class:`TabNetEntmaxClassifier`'s)
    _saved_state: ClassVar[ModelState] = ModelState(
        TabNetRegressorNet,
        estimator_parameters=("pretrainer",),
        added_parameters={"pretrainer": None, "mask_warmup": FIRST_MASK_WARMUP},
        from_network=TABNET_FROM_NETWORK,
    )

    _constraints: ClassVar[dict[str, Constraint]] = {
        **SHARED_CONSTRAINTS,
        **TABNET_CONSTRAINTS,
        **PRETRAINED_CONSTRAINTS,
    }

    def _module(
        self,
        params: dict[str, Any],
        n_features: int,
        n_outputs: int,
        batch_size: int,
        steps: int | None = None,
    ):
        return TabNetRegressorNet, {
            **self._regulariser(params),
            **self._tabnet_arguments(params, n_features, n_outputs, batch_size, steps),
        }
