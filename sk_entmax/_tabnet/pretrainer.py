"""TabNetPretrainer: self-supervised TabNet pretraining, as a scikit-learn transformer."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import _num_samples, check_is_fitted

from sk_entmax._attributes import Attribute
from sk_entmax._base import ESTIMATOR_FITTED, BaseEntmaxEstimator
from sk_entmax._parameters import SHARED_CONSTRAINTS, TABNET_CONSTRAINTS
from sk_entmax._saved_state import ModelState
from sk_entmax._tabnet.estimator import TabNetEntmaxClassifier
from sk_entmax._tabnet.shared import (
    TABNET_FITTED,
    TABNET_FROM_NETWORK,
    TabNetEstimatorMixin,
    parameter_entries,
)
from sk_entmax.entmax.constraints import Constraint
from sk_entmax.nn.tabnet_design import FIRST_MASK_WARMUP
from sk_entmax.nn.tabnet_pretraining import DECODER_ARGUMENTS, TabNetPretrainingNet

__all__ = ["TabNetPretrainer"]

#: the classifier's parameters the pretrainer has, documented there: the network's, then
#: (after the pretrainer's own) the training's
_NETWORK = (
    "n_d",
    "n_a",
    "n_steps",
    "gamma",
    "n_independent",
    "n_shared",
    "lambda_sparse",
    "momentum",
    "virtual_batch_size",
    "entmax_mode",
    "entmax_alpha",
    "faithful_masks",
    "mask_warmup",
    "categorical_features",
    "cat_emb_dim",
)
_TRAINING = (
    "clip_value",
    "lr",
    "max_epochs",
    "batch_size",
    "early_stopping",
    "validation_fraction",
    "patience",
    "n_jobs",
    "device",
    "random_state",
    "verbose",
)


class TabNetPretrainer(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, TabNetEstimatorMixin, BaseEntmaxEstimator
):
    __doc__ = f"""Self-supervised TabNet pretraining (Arik & Pfister, 2021, section 4).

    Learns a TabNet encoder from rows without labels: each training row hides a random
    share ``pretraining_ratio`` of its features, the encoder reads the rest through its
    entmax masks (hidden features get prior 0, so no mask attends to them), and a decoder
    reconstructs the hidden ones: standardized values for numeric columns (squared error),
    codes for categorical ones (cross-entropy). Rows may have missing values: a missing
    cell is never a reconstruction target, and the encoder sees it as missing (the column's
    fill value and its learned missing indicator), as the supervised estimators do.

    Use it

    - to start a supervised TabNet from its encoder: pass it as the ``pretrainer`` of
      :class:`TabNetEntmaxClassifier` or :class:`TabNetEntmaxRegressor`. To keep the
      weights of a pretrainer fitted once (on unlabelled rows, say) through
      ``GridSearchCV`` and every ``clone``, wrap it in ``sklearn.frozen.FrozenEstimator``;
      an unfitted one is fitted on the ``X`` of each supervised fit;
    - as a transformer: :meth:`transform` gives the learned representation (``n_d``
      columns, the sum of the decision steps' outputs), for a Pipeline.

    The mask parameters, :meth:`explain` and ``feature_importances_`` are those of the
    encoder. Training stops as the supervised estimators' does (on the reconstruction loss).
    With ``faithful_masks=True`` the pretrainer has no targets to choose columns by: its
    first mask is learned by gradient and sharpened over the warm-up, and a supervised
    estimator that starts from it keeps every column and chooses which to read afresh, on
    its own loss, over its own warm-up.

    Parameters
    ----------
{parameter_entries(TabNetEntmaxClassifier.__doc__, keep=_NETWORK)}
    pretraining_ratio : float, default=0.2
        In (0, 1): the probability that a feature is hidden in a training row (the
        features of one original column, an embedding or a value and its missing indicator,
        are hidden together).
    n_shared_decoder : int, default=1
        GLU layers whose weights the decoder's steps share.
    n_independent_decoder : int, default=1
        GLU layers of each decoder step alone.
{parameter_entries(TabNetEntmaxClassifier.__doc__, keep=_TRAINING)}

    Attributes
    ----------
    n_features_in_ : int
        Number of columns seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, defined only when ``X`` has string column names.
    categorical_features_ : ndarray of int
        Indices of the embedded (categorical) columns.
    categories_ : list of ndarray
        The categories seen at fit, per categorical column (code 0 is "unknown").
    missing_features_ : ndarray of str or of int
        The numeric columns that held missing values at fit, each with a learned missing
        indicator (names where X had column names, else indices).
    net_ : skorch.NeuralNet
        The trained skorch net; ``net_.module_`` is the
        :class:`~sk_entmax.nn.TabNetPretrainingNet`.
    n_iter_ : int
        Number of epochs run.
    mask_alpha_ : ndarray of shape (n_steps,)
        The alpha of each step's mask mapping after fit.
    feature_importances_ : ndarray of shape (n_features_in_,)
        The share of the encoder's ``explain`` attribution per original column on the
        training rows.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.frozen import FrozenEstimator
    >>> from sk_entmax import TabNetEntmaxClassifier, TabNetPretrainer
    >>> X, y = load_iris(return_X_y=True)
    >>> pretrainer = TabNetPretrainer(max_epochs=3, random_state=0).fit(X)
    >>> pretrainer.transform(X[:2]).shape
    (2, 8)
    >>> clf = TabNetEntmaxClassifier(
    ...     pretrainer=FrozenEstimator(pretrainer), max_epochs=3, random_state=0
    ... ).fit(X[::5], y[::5])
    >>> clf.predict_proba(X[:1]).shape
    (1, 3)
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
        pretraining_ratio=0.2,
        n_shared_decoder=1,
        n_independent_decoder=1,
        clip_value=1.0,
        lr=0.02,
        max_epochs=100,
        batch_size="auto",
        early_stopping=False,
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
        self.pretraining_ratio = pretraining_ratio
        self.n_shared_decoder = n_shared_decoder
        self.n_independent_decoder = n_independent_decoder
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

    _constraints: ClassVar[dict[str, Constraint]] = {
        **SHARED_CONSTRAINTS,
        **TABNET_CONSTRAINTS,
        **DECODER_ARGUMENTS,
    }

    #: the fitted attributes :mod:`sk_entmax.persistence` stores: an estimator's and TabNet's
    _fitted_schema: ClassVar[dict[str, Attribute]] = {**ESTIMATOR_FITTED, **TABNET_FITTED}
    #: what it stores besides: the network, and the reconstruction targets' scales and the
    #: missing cells' fill values, which are the network's arguments
    _saved_state: ClassVar[ModelState] = ModelState(
        TabNetPretrainingNet,
        added_parameters={"mask_warmup": FIRST_MASK_WARMUP},
        from_network={
            **TABNET_FROM_NETWORK,
            "_reconstruction_mean": "target_mean",
            "_reconstruction_scale": "target_scale",
        },
    )

    # ------------------------------------------------------------------ fit

    def fit(self, X, y=None):
        """Pretrain the encoder on the rows of ``X``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Training rows (no labels needed); missing values allowed.
        y : None
            Ignored.

        Returns
        -------
        self
            The fitted pretrainer.
        """
        return super().fit(X, None)

    def _validate_fit_data(self, X, y, plan, params):
        # the table hook validates a target beside X: a placeholder of X's length
        X, _ = self._validate_table(X, np.zeros(_num_samples(X)))
        return X, None

    def _fit_targets(self, X, y, sample_weight, params):
        # the target is the row itself; the loss standardizes each continuous column by its
        # training mean (of the observed values: the fill value of a gap) and its standard
        # deviation
        continuous = np.setdiff1d(np.arange(X.shape[1]), self.categorical_features_)
        values = X[:, continuous].astype(np.float64)
        observed = ~np.isnan(values)
        counts = np.maximum(observed.sum(axis=0), 1)
        mean = np.asarray(self._missing_fill)[continuous]
        var = np.where(observed, (values - mean) ** 2, 0.0).sum(axis=0) / counts
        scale = np.sqrt(var)
        self._reconstruction_mean = [float(v) for v in mean]
        self._reconstruction_scale = [float(s) if s > 1e-12 else 1.0 for s in scale]
        return X.astype(np.float32, copy=False), np.ones(len(X), dtype=np.float32)

    #: no targets to measure a column's worth by: a faithful pretrainer's first mask is
    #: learned (see :func:`~sk_entmax._tabnet.design.mask_design`)
    _selects_columns = False

    def _n_outputs(self) -> int:
        return self.n_features_in_

    def _outputs_key(self) -> Any:
        return "reconstruction"

    def _module(
        self,
        params: dict[str, Any],
        n_features: int,
        n_outputs: int,
        batch_size: int,
        steps: int | None = None,
    ):
        return TabNetPretrainingNet, {
            "lambda_sparse": self._lambda_sparse(params),
            "pretraining_ratio": params["pretraining_ratio"],
            "n_shared_decoder": params["n_shared_decoder"],
            "n_independent_decoder": params["n_independent_decoder"],
            "target_mean": self._reconstruction_mean,
            "target_scale": self._reconstruction_scale,
            "mask_seed": self._seed(params),
            **self._tabnet_arguments(params, n_features, 1, batch_size, steps),
        }

    # ------------------------------------------------------------------ use

    def _encoder_state(self) -> dict[str, torch.Tensor]:
        """A copy of the trained encoder's weights (its unused output layer left out), for
        a supervised estimator to start from."""
        check_is_fitted(self)
        state = self.net_.module_.tabnet.state_dict()
        return {
            key: value.detach().clone()
            for key, value in state.items()
            if not key.startswith("final_mapping.")
        }

    def transform(self, X):
        """The learned representation of the rows of ``X``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows with the columns seen at fit; missing values allowed.

        Returns
        -------
        ndarray of shape (n_samples, n_d)
            The sum over the decision steps of their outputs (after ReLU), as the
            supervised network's output layer reads it.
        """
        check_is_fitted(self)
        return self._blockwise(
            X, lambda module, rows: module.representation(rows), self._n_features_out
        )

    @property
    def _n_features_out(self) -> int:
        return self.net_.module_.tabnet.n_d

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        return tags
