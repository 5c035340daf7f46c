"""TabNetEntmaxClassifier: TabNet whose feature masks are sparsemax, entmax15 or alpha-entmax."""

from __future__ import annotations

from typing import Any, ClassVar

from sk_entmax._attributes import Attribute
from sk_entmax._classifier import FITTED_ATTRIBUTES, BaseEntmaxClassifier, check_outputs
from sk_entmax._parameters import (
    ALPHA,
    CLASSIFIER_CONSTRAINTS,
    SHARED_CONSTRAINTS,
    TABNET_CONSTRAINTS,
)
from sk_entmax._saved_state import ModelState
from sk_entmax._tabnet.from_pretrained import PRETRAINED_CONSTRAINTS, PretrainedStartMixin
from sk_entmax._tabnet.shared import TABNET_FITTED, TABNET_FROM_NETWORK, TabNetEstimatorMixin
from sk_entmax.entmax.constraints import Constraint
from sk_entmax.nn.tabnet_design import FIRST_MASK_WARMUP
from sk_entmax.nn.tabnet_nets import TabNetClassifierNet

__all__ = ["TabNetEntmaxClassifier"]


class TabNetEntmaxClassifier(PretrainedStartMixin, TabNetEstimatorMixin, BaseEntmaxClassifier):
    """TabNet (Arik & Pfister, 2019) with entmax feature masks and an entmax output.

    At each of ``n_steps`` decision steps an attentive transformer picks the features to look
    at with a sparse mask; ``entmax_mode`` chooses the mask mapping: exact sparsemax, exact
    1.5-entmax, alpha-entmax at a constant ``entmax_alpha``, or an alpha learned with the
    network (one per step). The masks hold exact zeros, so :meth:`explain` and
    ``feature_importances_`` say which features each prediction did not use at all.

    Missing values need no imputing by hand. A numeric column that holds missing values
    (NaN, None or ``pd.NA``) at fit gets a missing indicator: the network sees the value,
    with each gap filled by the column's training mean, and beside it a 0/1 feature saying
    whether it was missing, which it learns to use like any other feature. The value and its
    indicator are masked and attributed together, as one column. A categorical column's
    missing values take its "unknown" code. Missing values at predict time in a numeric
    column that had none at fit are filled with its training mean, with a warning per column
    (the model learned nothing about gaps there). Infinite values raise, naming the column;
    so does a missing label in ``y`` (``fit`` drops no rows).

    Parameters
    ----------
    n_d : int, default=8
        Width of the decision part of each step.
    n_a : int, default=8
        Width of the attention part of each step.
    n_steps : int, default=3
        Number of decision steps.
    gamma : float, default=1.3
        Feature reuse relaxation (>= 1): 1 lets a feature be used at one step only.
    n_independent : int, default=2
        Step-specific GLU layers per feature transformer.
    n_shared : int, default=2
        GLU layers shared by all the steps.
    lambda_sparse : float or "auto", default="auto"
        Weight of the mask-entropy regulariser (>= 0). "auto" is the paper's 1e-3, in both
        designs (with ``faithful_masks`` the regulariser is the entropy of the steps' mean
        mask, 0 when every step reads the same one feature), and with ``faithful_masks``
        1e-2 once the warm-up that chooses the columns has ended (the masks then shed per
        row what the row does not need). A number is the weight throughout.
    momentum : float, default=0.02
        Momentum of the batch norms' running statistics, in [0, 1].
    virtual_batch_size : int or "auto", default="auto"
        Rows per ghost batch norm chunk; "auto" is ``min(128, batch_size)`` on a CPU, and on
        a GPU a sixteenth of the batch, at least 128 rows (1,024 for a batch of 16,384). A
        value above the batch size is clipped to it, with a warning.
    entmax_mode : {"sparsemax", "entmax15", "constant", "adaptive"}, default="sparsemax"
        The mask mapping: exact sparsemax (alpha 2), exact 1.5-entmax, alpha-entmax at
        ``entmax_alpha`` ("constant"; 1 is softmax), or one alpha per step learned with the
        network, each kept in (1, 2) ("adaptive"). What it changes depends on
        ``faithful_masks``. With False (the paper's design) it maps every step's attention
        scores as they are, so it sets how sparse the masks are: sparsemax gives the most
        zeros, an alpha nearer 1 fewer, softmax none. With True (the default) it changes
        less. In a supervised fit the first step's mask is uniform over the columns the
        warm-up chose for it in every mode (in "adaptive" mode the first step's alpha never
        moves), and the columns are kept and chosen by the same rule in every mode (a
        :class:`TabNetPretrainer`, which has no loss to choose columns by, sharpens a
        learned first mask instead, scaled to drop a feature at the same gap in every
        mode). The later steps' scores are multiplied by ``1 / (alpha - 1)``, so that every
        mode but softmax drops a feature at about the score gap where sparsemax does. The
        mode then changes how a later step shares its weight among the features it keeps
        (1.5-entmax may give two features 0.7 and 0.3 where sparsemax gives one all of it),
        hence which features each row's later steps read (the per-row certificate),
        ``explain``, ``feature_importances_`` and the fit itself ("constant" at
        ``entmax_alpha=1.5`` is "entmax15"; softmax's later masks have no zeros, so its
        certificate is the dropped columns). For masks whose sparsity the mode sets
        directly, fit with ``faithful_masks=False``.
    entmax_alpha : float, default=1.5
        In [1, 2]: the alpha of "constant" mode (1 is softmax), the starting alpha of
        "adaptive" mode (clipped into [1.01, 1.99]); the other modes ignore it.
    faithful_masks : bool, default=True
        Make zero masks a proof of non-use: the first step's mask is learned and
        input-independent (not computed from every feature, as in the paper), and each step
        reads only its masked features. A row's prediction then depends only on the
        features in the union of its step masks, and :meth:`never_read` lists the others.
        A warm-up (two thirds of the fit's planned steps, at most ``mask_warmup``; no epoch
        of it counts towards ``patience``) chooses what the model reads, on a fifth of the
        training rows that it holds out of training until it ends: from 30% of it on, each
        step also measures how much the held-out loss rises when a column is occluded, and
        columns whose contribution fits in 3% of the loss, in all, are dropped
        (``sk_entmax.nn.tabnet_selection``; this costs about three extra forward passes per
        warm-up step), unless the residual (the gradient of each row's loss with respect to
        the scores) still depends on them: then the model has not yet learned what they
        say, and they stay; at the warm-up's end a dropped column the residual depends on
        comes back (``sk_entmax.nn.tabnet_residual``). From 40% of it the first step is
        narrowed (a growing share of the rows at a time, over a fifth of the warm-up, so
        that the network learns to read the others later) to the columns the typical row
        needs (the median row's loss rise at least half the largest); the later steps'
        masks, computed from what the row has read so far, choose per row among the other
        kept columns, so each row's certificate is its own: the dropped columns and the kept
        ones its masks never picked. The later masks' scores are scaled to give each mode
        about sparsemax's zeros (see ``entmax_mode``) and the regulariser is the entropy of
        the steps' mean mask (see :class:`~sk_entmax.nn.TabNet`). False is the
        paper's design (and pytorch-tabnet's): the first step reads every feature, so a
        feature whose mask is 0 at every step can still change the prediction and no zero
        proves anything; its fits are faster (no probes).
    mask_warmup : int, default=600
        With ``faithful_masks``: the most training steps the warm-up takes (at least 1);
        a fit that plans fewer than one and a half times as many steps warms up over two
        thirds of them. A shorter warm-up chooses the columns sooner, on less training;
        ``partial_fit`` takes the whole of it. Unused without ``faithful_masks``.
    alpha : float, default=1.5
        The alpha of the output mapping, as in :class:`EntmaxClassifier` (1 softmax with
        cross-entropy, 1.5 entmax15, 2 sparsemax); ``predict_proba`` applies it.
    categorical_features : list of str or int, array of bool, or None, default=None
        Columns to embed. ``None`` takes the DataFrame columns of dtype category, object or
        string. A category unseen at fit (or missing) maps to a reserved "unknown" code;
        unseen ones with a warning per column, giving their count.
    cat_emb_dim : int, default=1
        Embedding width of every categorical column.
    pretrainer : TabNetPretrainer, FrozenEstimator or None, default=None
        Start the network's encoder from a :class:`TabNetPretrainer`'s (self-supervised
        pretraining, which helps when labels are few): a fitted one wrapped in
        ``sklearn.frozen.FrozenEstimator`` is used as it is, through any ``clone`` (as in
        ``GridSearchCV``); an unfitted one is fitted on the ``X`` of each ``fit`` first
        (with this estimator's ``random_state`` when its own is None). The columns'
        encoding and the encoder's weights are the pretrainer's, so ``n_d``, ``n_a``,
        ``n_steps``, ``n_independent``, ``n_shared``, ``entmax_mode``, ``faithful_masks``,
        ``cat_emb_dim`` and ``categorical_features`` must equal its own; the output layer
        starts afresh. None trains from scratch.
    clip_value : float or None, default=1.0
        Clip the gradient norm of each step to this value (``None``: no clipping). TabNet's
        training loss spikes without it, and a fixed epoch budget can end on a spike.
    lr : float, default=0.02
        Adam learning rate.
    max_epochs : int, default=100
        Maximum number of passes over the training data.
    batch_size : int or "auto", default="auto"
        Mini-batch size. "auto" scales with the data and the device: ``n_samples / 8``
        rounded down to a power of two, so that every epoch takes several optimizer steps,
        within [16, 1024] on a CPU and [16, 16384] on a GPU (where a step costs about the
        same for a few rows as for thousands).
        An int above the number of training rows is clipped to it, with a warning; the last,
        smaller batch is always used (never dropped).
    early_stopping : bool or "auto", default="auto"
        Hold out ``validation_fraction`` of the data and stop when its loss has not improved
        for ``patience`` epochs, restoring the best weights. When False, training stops once
        the training loss stops improving for ``patience`` epochs. ``"auto"``, as
        HistGradientBoosting's: on when the fit has more than 10,000 rows. With
        ``faithful_masks``, no epoch of the first mask's warm-up counts towards
        ``patience`` on either loss, so the held-out loss cannot end a fit while the masks
        still sharpen.
    validation_fraction : float, default=0.1
        Share of the training data held out for early stopping.
    patience : int, default=20
        Patience, in epochs, of the stopping rule. The epoch loss of a small data set with
        small batches is noisy, and a short patience stops before the loss has settled (at
        10, fits on scikit-learn's wine data stopped after 18-30 epochs).
    class_weight : dict, "balanced" or None, default=None
        Weights per class, multiplied into ``sample_weight``; "balanced" uses
        ``n_samples / (n_classes * count)``. Not available for multi-label targets.
    n_jobs : int or None, default=None
        Worker threads of predicting and explaining, which spread fixed blocks of rows over
        them, each block on one torch thread; it never changes the model or a prediction.
        Training runs on one torch thread at every ``n_jobs``: on TabNet's batches that is
        the fastest measured, and a core kept busy by another process cannot stall it (see
        the user guide's page on threads). So the same data and ``random_state`` give the
        same model, bit for bit, at every ``n_jobs``, idle or busy. None picks by the size
        of the task and the cores alone, never by the machine's load; -1 uses every core; a
        positive int that many threads, capped at the cores with a UserWarning.
    device : str, default="cpu"
        "cpu", "cuda", "cuda:N", "mps" (Apple GPUs, where torch has them) or "auto" (CUDA
        when available).
    random_state : int, RandomState instance or None, default=None
        Seeds initialisation, shuffling and the validation split, each through a generator
        of its own: torch's global generator is never seeded, read or drawn from.
    verbose : int, default=0
        0 is silent; 1 shows a progress bar over the epochs on standard error (tqdm: the
        time left, at most, and the losses); 2 prints one plain line per epoch instead, for
        a log file: the epoch, the training and validation losses, the best so far, seconds
        per epoch and at most how long is left.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels (label indices for multi-label targets).
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
        indicator: their names (as in ``feature_names_in_``) where X had column names,
        else their indices; empty when the training data had no gaps in numeric columns.
    multilabel_ : bool
        Whether the target was a multi-label indicator matrix.
    support_temperature_ : float
        Multi-label targets only: the temperature of the scores that makes the predicted
        label sets as large as the true ones on the training rows (see ``predict``).
    net_ : skorch.NeuralNet
        The trained skorch net; ``net_.module_.tabnet`` is the :class:`~sk_entmax.nn.TabNet`.
    n_iter_ : int
        Number of epochs run.
    alpha_ : float
        The alpha of the output mapping.
    mask_alpha_ : ndarray of shape (n_steps,)
        The alpha of each step's mask mapping after fit (learned in "adaptive" mode).
    feature_importances_ : ndarray of shape (n_features_in_,)
        Non-negative, summing to 1: the share of the training data's ``explain`` attribution
        per original column. Usable by ``SelectFromModel``.
    restored_features_ : ndarray of shape (n_restored,)
        Only when the check at the end of a faithful fit's column selection put columns
        back (the loss on the rows the fit held out rose while the selection ran): the
        indices of the columns it put back. If the loss had not risen before the first
        step began to narrow, the drops did not cost the model and the narrowing did: these
        are the columns the first step had left to the later steps, which it reads again,
        and the dropped columns stay certified never read. Else they are every column the
        selection had left out, which every step may read again: nothing is then
        certified never read.
    selection_losses_ : ndarray of shape (2,)
        With ``restored_features_``: the held-out rows' mean loss when the selection began
        and when it ended.
    needed_features_ : ndarray of shape (n_needed,)
        Only when a faithful fit's column selection ran: the indices of the columns it kept
        because the model's loss still depended on them (the score test of
        ``sk_entmax.nn.tabnet_residual`` on up to 4,096 of the fit's rows, at a
        family-wise level of 1%). A drop would have taken them while their signal was not
        yet learned, or they came back at the end of the warm-up after one. Empty when the
        test kept none.

    Notes
    -----
    Multi-label targets are handled as in :class:`EntmaxClassifier`: a sparse distribution
    over labels trained against ``y / |y|``, rows without labels weighted 0.

    A missing indicator widens its column to two post-embedding features, as an embedding
    of width 2 does; ``explain``, the masks and ``feature_importances_`` sum them back, so
    they always have one entry per original column.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sk_entmax import TabNetEntmaxClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = TabNetEntmaxClassifier(max_epochs=5, random_state=0).fit(X, y)
    >>> clf.feature_importances_.shape, round(float(clf.feature_importances_.sum()), 6)
    ((4,), 1.0)
    >>> M_explain, masks = clf.explain(X[:5])
    >>> M_explain.shape, sorted(masks), masks[0].shape
    ((5, 4), [0, 1, 2], (5, 4))
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
        alpha=1.5,
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
        class_weight=None,
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
        self.alpha = alpha
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
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    #: the fitted attributes :mod:`sk_entmax.persistence` stores: a classifier's and TabNet's
    _fitted_schema: ClassVar[dict[str, Attribute]] = {**FITTED_ATTRIBUTES, **TABNET_FITTED}
    #: what :mod:`sk_entmax.persistence` stores besides: the network, the classes checked
    #: against its outputs, and the pretrainer (a nested entry; a file written before it
    #: existed means None)
    _saved_state: ClassVar[ModelState] = ModelState(
        TabNetClassifierNet,
        check=check_outputs,
        estimator_parameters=("pretrainer",),
        added_parameters={"pretrainer": None, "mask_warmup": FIRST_MASK_WARMUP},
        from_network=TABNET_FROM_NETWORK,
    )

    _constraints: ClassVar[dict[str, Constraint]] = {
        **SHARED_CONSTRAINTS,
        "alpha": ALPHA,
        **TABNET_CONSTRAINTS,
        **PRETRAINED_CONSTRAINTS,
        **CLASSIFIER_CONSTRAINTS,
    }

    def _module(
        self,
        params: dict[str, Any],
        n_features: int,
        n_outputs: int,
        batch_size: int,
        steps: int | None = None,
    ):
        return TabNetClassifierNet, {
            **self._regulariser(params),
            "alpha": params["alpha"],
            **self._tabnet_arguments(params, n_features, n_outputs, batch_size, steps),
        }
