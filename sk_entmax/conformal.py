"""Split-conformal prediction sets that are the support of a sparse mapping.

Campos, Calem, Sklaviadis, Figueiredo and Martins ("Sparse Activations as Conformal
Predictors", AISTATS 2025) observe that the support of alpha-entmax at a temperature ``T``
is a conformal prediction set. With scores ``z`` (``decision_function``) and
``delta = 1 / (alpha - 1)``, alpha-entmax is ``p_j = [(alpha - 1) z_j - tau]_+^delta``, and a
label ``y`` lies in the support of ``entmax_alpha(z / T)`` if and only if

.. math::

    s(x, y) = \\Big(\\sum_j (z_j - z_y)_+^{\\delta}\\Big)^{1/\\delta} < \\frac{T}{\\alpha - 1},

the delta-"norm" of the positive gaps between ``y`` and the labels ranked above it (for
sparsemax, ``alpha = 2``, the plain sum of the gaps). ``s`` is the non-conformity score:
split-conformal calibration on ``n`` held-out rows takes ``q_hat``, the
``ceil((n + 1)(1 - eps))``-th smallest calibration score (``eps = 1 - confidence_level``), and
the prediction set ``{y : s(x, y) <= q_hat}`` is the support of ``entmax_alpha(z / T)`` with
``T = (alpha - 1) q_hat``, taken a hair above (see "Ties" below).

Guarantee
---------
If the calibration rows and the test row are exchangeable (for instance i.i.d.), the set
covers the true label with probability at least ``1 - eps`` (and, for continuous scores, at
most ``1 - eps + 1 / (n + 1)``), over the draw of the calibration rows and of the test row.
This is *marginal* coverage: it holds on average over ``x``, not for each ``x``
(conditional coverage is not attainable in general). With ``class_conditional=True`` a
quantile is taken per class on the calibration rows of that class (Mondrian conformal
prediction), and the guarantee holds within each class: ``P(y in set | y = c) >= 1 - eps``
for each class ``c``.

Multi-label estimators. For an estimator fitted on a multi-label indicator target, a
calibration row's score is the largest score of its true labels (0 for a row without
labels), and the set ``{y : s(x, y) <= q_hat}`` then holds *every* true label of a row with
probability at least ``1 - eps``: ``P(Y subset of set) >= 1 - eps``, a guarantee on the
recall of the whole label set (a row without labels is always covered). There is no
per-class version (``class_conditional=True`` is refused).

Ties
----
The rule is "``y`` in the set iff ``s(x, y) <= q_hat``" (a score equal to ``q_hat`` is in).
The stored temperature is ``T = (alpha - 1) * nextafter(q_hat, inf)``, so that in exact
arithmetic the support of ``entmax_alpha(z / T)`` is that very set. Floating-point rounding
in the mapping could still disagree for a score within a few ulps of ``q_hat`` (an exact
tie, e.g. duplicated rows), so :meth:`~sk_entmax.SparseConformalClassifier.predict_proba` makes the
agreement exact by construction: labels outside the set are masked (score ``-inf``, which in
exact arithmetic changes nothing) and a label inside it whose probability rounds to 0 gets
the smallest positive normal float64. The nonzeros of ``predict_proba`` are therefore
exactly ``predict_set``.

Calibration without a held-out split (``cv=K``)
-----------------------------------------------
With ``cv=K``, :meth:`~sk_entmax.SparseConformalClassifier.fit` alone calibrates: the rows
are split in ``K`` folds (stratified for single-label targets), a clone of the estimator is
fitted on each ``K - 1`` folds, and each row is scored by the clone that did not see it
(its out-of-fold score). The quantile is taken on these ``n`` out-of-fold scores, and the
final model, the one whose ``decision_function`` gives the sets and probabilities, is a
clone fitted on all rows: every row serves the model and the calibration. This is the
"cross-conformal" use of out-of-fold scores with the full-data model (the rule a
cross-conformal library applies when it aggregates the folds' scores by their mean). It is
not a finite-sample guarantee: Barber, Candes, Ramdas and Tibshirani ("Predictive inference
with the jackknife+", Annals of Statistics 2021) prove ``1 - 2 eps`` for rules that keep
the ``K`` fold models; here, since each fold model saw fewer rows than the final one, its
out-of-fold scores tend to be larger than the final model's scores on new rows, and the
sets, if anything, over-cover. The user guide measures it over 200 random splits.

Exact coverage (``randomized=True``)
------------------------------------
Split-conformal sets cover at least ``1 - eps`` and up to ``1 - eps + 1 / (n + 1)``, and
much more when scores tie, as they do when most sets are one label (every top label scores
0). A randomized set breaks the ties with one uniform draw ``u`` per row: label ``y`` is in
the set iff ``#{i : s_i > s(x, y)} + u (1 + #{i : s_i = s(x, y)}) > eps (n + 1)`` (see
``sk_entmax._conformal_maths.randomized_sets``), so the true label is missed with
probability exactly ``eps`` under exchangeability. Each set is ``{y : s(x, y) <= t}`` for a
threshold ``t`` of its row, the support of ``entmax_alpha(z / T_row)`` at a per-row
temperature, and a subset of the conservative set; it may be empty (the model abstains on
that row: its probabilities are then all 0). The draws come from ``random_state`` through a
seed drawn at calibration (``randomization_seed_``), so
:meth:`~sk_entmax.SparseConformalClassifier.predict_set` and
:meth:`~sk_entmax.SparseConformalClassifier.predict_proba` agree on the same rows, call
after call.

Recall risk for multi-label sets (``risk="recall"``)
----------------------------------------------------
Instead of holding *every* true label with probability ``1 - eps``, a set may be asked to
miss, in expectation, at most a share ``eps`` of a row's true labels (its false negative
rate). Conformal risk control (Angelopoulos, Bates, Fisch, Lei and Schuster, "Conformal
Risk Control", ICLR 2024) takes the smallest threshold ``lam`` whose calibration mean
loss, inflated as ``n / (n + 1) R + 1 / (n + 1)``, is at most ``eps`` (see
``sk_entmax._conformal_maths.recall_thresholds``); the set ``{y : s(x, y) <= lam}`` is
the support of the sparse label distribution at the temperature ``(alpha - 1) lam``, and
:math:`E[\\#\\{y \\in Y \\setminus C(x)\\} / |Y|] \\le \\varepsilon` (0 for a row
without labels).

This module holds the estimator; the maths live in ``sk_entmax._conformal_maths``, the checks
of what the wrapper is given in ``sk_entmax._conformal_inputs``, its calibration steps in
``sk_entmax._conformal_calibration`` and what a file stores of it in
``sk_entmax._conformal_state``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state, get_tags
from sklearn.utils.validation import check_is_fitted

from sk_entmax._conformal_calibration import (
    label_set_calibration,
    out_of_fold_decision,
    single_label_calibration,
)
from sk_entmax._conformal_inputs import (
    check_columns,
    check_level,
    check_prefitted,
    check_target,
    checked_parameters,
    default_estimator,
    final_step,
    resolve_alpha,
    two_columns,
)
from sk_entmax._conformal_maths import (
    calibrated_proba,
    conformal_quantile,
    drawn_sets,
    level_sets,
    level_temperatures,
    nonconformity_scores,
    row_temperatures,
)
from sk_entmax._conformal_state import CALIBRATED_ATTRIBUTES, CONFORMAL_STATE, FITTED_ATTRIBUTES
from sk_entmax._saved_state import WrapperState

__all__ = ["SparseConformalClassifier", "conformal_quantile", "nonconformity_scores"]


nonconformity_scores.__module__ = conformal_quantile.__module__ = __name__  # shown at this path


class SparseConformalClassifier(ClassifierMixin, BaseEstimator):
    """Split-conformal prediction sets as the support of a calibrated sparse mapping.

    Fit the classifier on training data (:meth:`fit`), calibrate on held-out data
    (:meth:`conformalize`), then :meth:`predict_set` gives prediction sets with coverage at
    least ``confidence_level`` (marginally, under exchangeability; see the module
    docstring), and :meth:`predict_proba` gives the sparse probabilities
    ``entmax_alpha(z / T)`` whose nonzeros are exactly those sets. With ``cv=K``,
    :meth:`fit` alone calibrates, on out-of-fold scores, and no row is held out.

    Parameters
    ----------
    estimator : classifier, default=None
        A scikit-learn classifier with ``decision_function`` (a :class:`~sklearn.pipeline.
        Pipeline` ending in one too); ``None`` means ``SparsemaxClassifier()``.
    confidence_level : float or list of float, default=0.9
        The target coverage ``1 - eps``, in (0, 1). With a list, :meth:`predict_set` returns
        one set per level (a third axis); :meth:`predict_proba` uses the first level.
    prefit : bool, default=False
        Whether ``estimator`` is already fitted: it is then used as is (not cloned), and
        :meth:`conformalize` may be called without :meth:`fit`.
    mapping_alpha : "auto" or float, default="auto"
        The entmax alpha of the calibrated mapping, a float > 1 (2 is sparsemax, 1.5 the
        1.5-entmax; the score and temperature derivation holds for any alpha > 1). "auto"
        takes the estimator's own output alpha (``alpha_`` of the sk_entmax classifiers,
        learned or not) and 2 (sparsemax) for any other classifier, and for a softmax
        one (``alpha_ = 1``, whose output is never sparse).
    class_conditional : bool, default=False
        Calibrate one quantile per class on the calibration rows of that class (Mondrian):
        label ``y`` is in the set iff ``s(x, y) <= q_hat[y]``, and coverage holds within
        each class. The set is then not always the top of a ranking; :meth:`predict_proba`
        is the mapping restricted to the set (see its docstring).
    cv : int or None, default=None
        None: split conformal, calibrated by :meth:`conformalize` on held-out rows. An int
        ``K >= 2``: :meth:`fit` fits ``K`` clones on ``K - 1`` folds each (stratified,
        shuffled by ``random_state``), calibrates on every row's out-of-fold score, then
        fits the final model on all rows (cross-conformal; see the module docstring).
        Needs ``prefit=False``, and every class in every fold's training rows.
    randomized : bool, default=False
        Randomized sets, whose coverage is ``confidence_level`` exactly rather than at
        least (see the module docstring); a set may then be empty, and each row has its
        own temperature. Not with ``risk="recall"``.
    risk : None or "recall", default=None
        None: each set holds the true label (for a multi-label estimator, every true
        label) with probability at least ``confidence_level``. "recall" (multi-label
        estimators only): the expected share of a row's true labels outside its set is at
        most ``1 - confidence_level`` (conformal risk control).
    random_state : None, int or numpy.random.RandomState, default=None
        Shuffles the folds of ``cv`` and draws ``randomization_seed_`` for
        ``randomized=True``; an int makes both reproducible.

    Attributes
    ----------
    estimator_ : classifier
        The fitted estimator (``estimator`` itself with ``prefit=True``).
    classes_ : ndarray of shape (n_classes,)
        The class labels, the columns of every output.
    mapping_alpha_ : float
        The alpha of the calibrated mapping.
    confidence_levels_ : ndarray of shape (n_levels,)
        The levels, as floats.
    conformity_scores_ : ndarray of shape (n_conformalize,)
        The non-conformity scores of the calibration rows' true labels.
    conformity_classes_ : ndarray of shape (n_conformalize,)
        The index in ``classes_`` of each calibration row's label (int64; -1 for the rows
        of a multi-label estimator, which hold sets of labels): with the scores, what every
        quantile is computed from, so that :func:`~sk_entmax.persistence.load` recomputes
        them all. With ``risk="recall"``, ``conformity_scores_`` and this hold one entry
        per (calibration row, true label) pair: its score and its label.
    conformity_rows_ : ndarray of shape (n_pairs,)
        Only with ``risk="recall"``: the calibration row (in ``range(n_conformalize)``) of
        each pair.
    randomization_seed_ : int
        Only with ``randomized=True``: the seed of the uniform draws, one per row of each
        :meth:`predict_set` call (the ``i``-th row of any call gets the ``i``-th draw).
    n_conformalize_samples_ : ndarray of shape (n_classes,) or int
        The number of calibration rows (per class with ``class_conditional=True``).
    quantiles_ : ndarray of shape (n_levels, n_classes)
        ``q_hat`` per level and label (all columns equal unless ``class_conditional``);
        ``inf`` where there were too few calibration rows. With ``risk="recall"``, the
        risk-controlling threshold ``lam``; with ``randomized=True``, the conservative
        quantile, which bounds every row's threshold.
    temperatures_ : ndarray of shape (n_levels,)
        ``(alpha - 1) * nextafter(max_y q_hat[level, y], inf)``.
    temperature_ : float
        ``temperatures_[0]``, the temperature of :meth:`predict_proba` (with
        ``randomized=True``, the largest of the per-row temperatures).

    Notes
    -----
    In a :class:`~sklearn.pipeline.Pipeline`, either wrap the whole pipeline
    (``SparseConformalClassifier(make_pipeline(scaler, clf))``, the simplest: ``fit``,
    ``conformalize`` and ``predict_set`` take raw ``X``), or make this estimator the last
    step; the pipeline then has no ``conformalize`` or ``predict_set``, so call
    ``pipe[-1].conformalize(pipe[:-1].transform(X_cal), y_cal)`` after ``pipe.fit``, and
    ``pipe[-1].predict_set(pipe[:-1].transform(X))``; ``pipe.predict_proba`` and
    ``pipe.predict`` work directly.

    :func:`sk_entmax.persistence.save` stores a fitted wrapper around one of this package's
    estimators, or around a Pipeline ending in one (not around another library's
    classifier: use joblib for those, on files you trust), with its calibration;
    :func:`~sk_entmax.persistence.load` recomputes that calibration from the stored scores
    and rows' classes, and refuses a file where it differs. It cannot tell scores of real
    held-out rows from invented ones: trust a loaded calibration as far as you trust the
    file's source, or conformalize again.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.model_selection import train_test_split
    >>> from sk_entmax import SparsemaxClassifier
    >>> from sk_entmax.conformal import SparseConformalClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> X_fit, X_cal, y_fit, y_cal = train_test_split(X, y, test_size=0.5, random_state=0)
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> model = make_pipeline(StandardScaler(), SparsemaxClassifier(random_state=0))
    >>> clf = SparseConformalClassifier(model, confidence_level=0.9)
    >>> clf = clf.fit(X_fit, y_fit).conformalize(X_cal, y_cal)
    >>> sets = clf.predict_set(X[:3])
    >>> bool(((clf.predict_proba(X[:3]) > 0) == sets).all())
    True
    """

    #: what a model file stores of the wrapper (its parameters and fitted attributes beside
    #: its model, and their checks), read by :mod:`sk_entmax.persistence`
    _saved_state: ClassVar[WrapperState] = CONFORMAL_STATE
    _fitted_attributes = FITTED_ATTRIBUTES  # set by fit
    _calibrated_attributes = CALIBRATED_ATTRIBUTES  # set by conformalize

    def __init__(
        self,
        estimator: Any = None,
        *,
        confidence_level: float | list[float] = 0.9,
        prefit: bool = False,
        mapping_alpha: str | float = "auto",
        class_conditional: bool = False,
        cv: int | None = None,
        randomized: bool = False,
        risk: str | None = None,
        random_state: Any = None,
    ) -> None:
        self.estimator = estimator
        self.confidence_level = confidence_level
        self.prefit = prefit
        self.mapping_alpha = mapping_alpha
        self.class_conditional = class_conditional
        self.cv = cv
        self.randomized = randomized
        self.risk = risk
        self.random_state = random_state

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # sparse X is accepted exactly when the wrapped estimator accepts it (an invalid
        # estimator keeps the default; fit then raises the parameter error)
        try:
            tags.input_tags.sparse = get_tags(default_estimator(self.estimator)).input_tags.sparse
        except (AttributeError, TypeError):
            pass
        return tags

    def _multilabel(self) -> bool:
        return bool(getattr(final_step(self.estimator_), "multilabel_", False))

    def _forget_conformalization(self) -> None:
        for name in self._calibrated_attributes:
            self.__dict__.pop(name, None)

    @contextlib.contextmanager
    def _kept_on_failure(self) -> Iterator[None]:
        """The fitted state as it was when the block fails: a failed ``fit`` or
        ``conformalize`` (bad labels, NaN, mismatched lengths, ...) keeps the previous
        model and calibration."""
        before = dict(self.__dict__)
        try:
            yield
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    # ------------------------------------------------------------------ fit

    def fit(self, X: ArrayLike, y: ArrayLike, **fit_params: Any) -> SparseConformalClassifier:
        """Fit a clone of ``estimator`` (or take it as is with ``prefit=True``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels (binary or multi-class), or a multi-label indicator matrix.
        **fit_params : dict
            Passed to the estimator's ``fit`` (with ``cv``, to each fold's fit, those of
            one value per row, such as ``sample_weight``, cut to the fold's rows).

        Returns
        -------
        self : SparseConformalClassifier
            Fitted, not yet conformalized. When ``fit`` raises, the wrapper keeps the model
            and calibration it had.
        """
        params = checked_parameters(self, type(self).__name__)  # what the call reads
        if params["prefit"]:
            estimator = default_estimator(params["estimator"])
            check_prefitted(estimator)
        else:
            check_target(y)
            if params["cv"] is not None:
                return self._cross_fit(X, y, params, fit_params)
            estimator = clone(default_estimator(params["estimator"])).fit(X, y, **fit_params)
        with self._kept_on_failure():
            self._set_estimator(estimator, params["mapping_alpha"])
            self._forget_conformalization()
        return self

    def _cross_fit(
        self, X: ArrayLike, y: ArrayLike, params: dict[str, Any], fit_params: dict[str, Any]
    ) -> SparseConformalClassifier:
        """``fit`` with ``cv=K``: the out-of-fold decision scores of ``K`` clones, the
        final clone on all rows, and the calibration on the out-of-fold scores."""
        base = default_estimator(params["estimator"])
        estimator, decision, y = out_of_fold_decision(
            base, X, y, params["cv"], params["random_state"], fit_params
        )
        with self._kept_on_failure():
            self._set_estimator(estimator, params["mapping_alpha"])
            self._forget_conformalization()
            check_columns(decision, len(self.classes_))
            self._calibrate_decision(decision, y, params)
        return self

    def _set_estimator(self, estimator: Any, mapping_alpha: float | str) -> None:
        self.estimator_ = estimator
        self.classes_ = np.asarray(estimator.classes_)
        self.mapping_alpha_ = resolve_alpha(estimator, mapping_alpha)
        if hasattr(estimator, "n_features_in_"):
            self.n_features_in_ = estimator.n_features_in_

    def _decision(self, X: ArrayLike) -> np.ndarray:
        decision = two_columns(self.estimator_.decision_function(X))
        return check_columns(decision, len(self.classes_))

    # ------------------------------------------------------------------ conformalize

    def conformalize(
        self, X_conformalize: ArrayLike, y_conformalize: ArrayLike
    ) -> SparseConformalClassifier:
        """Calibrate the quantile(s) and temperature(s) on held-out data.

        Parameters
        ----------
        X_conformalize : array-like of shape (n_samples, n_features)
            Calibration data, not used to fit the estimator.
        y_conformalize : array-like of shape (n_samples,)
            Their labels, each one of ``classes_``.

        Returns
        -------
        self : SparseConformalClassifier
            With ``quantiles_``, ``temperatures_`` and ``temperature_`` set. When
            ``conformalize`` raises (labels unknown to the model, NaN, mismatched lengths,
            ...), the wrapper keeps the calibration it had.

        Warns
        -----
        UserWarning
            When there are fewer calibration rows (of a class, with ``class_conditional``)
            than a level needs, ``ceil((n + 1) * level) > n``: that quantile is ``inf`` and
            every label is in the set.
        """
        params = checked_parameters(self, type(self).__name__)  # what the call reads
        with self._kept_on_failure():
            return self._conformalize(X_conformalize, y_conformalize, params)

    def _conformalize(
        self, X_conformalize: ArrayLike, y_conformalize: ArrayLike, params: dict[str, Any]
    ) -> SparseConformalClassifier:
        """:meth:`conformalize` with its parameters checked; sets the calibration only once
        it is computed (the caller restores the old state on failure)."""
        if not hasattr(self, "estimator_"):
            if not params["prefit"]:
                raise NotFittedError(
                    "This SparseConformalClassifier is not fitted yet: call fit before "
                    "conformalize (or pass a fitted estimator with prefit=True)."
                )
            estimator = default_estimator(params["estimator"])
            check_prefitted(estimator)
            self._set_estimator(estimator, params["mapping_alpha"])
        return self._calibrate_decision(self._decision(X_conformalize), y_conformalize, params)

    def _calibrate_decision(
        self, decision: np.ndarray, y: ArrayLike, params: dict[str, Any]
    ) -> SparseConformalClassifier:
        """The calibration from the decision scores of the calibration rows (held out, or
        out-of-fold) and their labels."""
        levels = np.asarray(params["confidence_level"], dtype=np.float64)
        modes = {"class_conditional": params["class_conditional"], "risk": params["risk"]}
        rows = None
        if self._multilabel():
            scores, codes, counts, quantiles, rows = label_set_calibration(
                decision, y, len(self.classes_), self.mapping_alpha_, levels, **modes
            )
        else:
            scores, codes, counts, quantiles = single_label_calibration(
                decision, y, self.classes_, self._delta(), levels, **modes
            )
        self._store_calibration(levels, scores, codes, counts, quantiles, params)
        if rows is not None:  # the recall risk: each (row, true label) pair's row
            self.conformity_rows_ = rows.astype(np.int64)
        return self

    def _store_calibration(
        self,
        levels: np.ndarray,
        true_scores: np.ndarray,
        codes: np.ndarray,
        counts: Any,
        quantiles: np.ndarray,
        params: dict[str, Any],
    ) -> SparseConformalClassifier:
        """Set the calibration's fitted attributes, the temperatures from the quantiles."""
        self._forget_conformalization()
        self.confidence_levels_ = levels
        self.conformity_scores_ = true_scores
        self.conformity_classes_ = np.asarray(codes, dtype=np.int64)
        self.n_conformalize_samples_ = counts
        self.quantiles_ = quantiles
        self.temperatures_ = level_temperatures(quantiles, self.mapping_alpha_)
        self.temperature_ = float(self.temperatures_[0])
        if params["randomized"]:
            seed = check_random_state(params["random_state"]).randint(0, 2**31 - 1)
            self.randomization_seed_ = int(seed)
        return self

    # ------------------------------------------------------------------ predict

    def _check_conformalized(self) -> None:
        check_is_fitted(self, "estimator_")
        if not hasattr(self, "quantiles_"):
            raise NotFittedError(
                "This SparseConformalClassifier is not conformalized yet: call conformalize "
                "on held-out data before predict_set or predict_proba."
            )

    def predict_set(self, X: ArrayLike) -> np.ndarray:
        """Conformal prediction sets: label ``y`` in the set iff ``s(x, y) <= q_hat``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        sets : ndarray of bool, shape (n_samples, n_classes) or (n_samples, n_classes, n_levels)
            Columns in ``classes_`` order; the third axis only when ``confidence_level`` is
            a list.
        """
        self._check_conformalized()
        sets = self._sets(self._decision(X))
        _, many = check_level(self.confidence_level)
        return sets if many else sets[:, :, 0]

    def _sets(self, decision: np.ndarray, n_levels: int | None = None) -> np.ndarray:
        """The sets of the first ``n_levels`` levels (all when None), (n_samples, n_classes,
        n_levels): randomized when calibrated so."""
        z = np.asarray(decision, dtype=np.float64)
        if hasattr(self, "randomization_seed_"):
            return self._randomized_sets(nonconformity_scores(z, self.mapping_alpha_), n_levels)
        quantiles = self.quantiles_[:n_levels]
        return level_sets(z, self.mapping_alpha_, self._delta(), quantiles, self.class_conditional)

    def _randomized_sets(self, scores: np.ndarray, n_levels: int | None) -> np.ndarray:
        """The randomized sets of the first ``n_levels`` levels, from every label's score."""
        return drawn_sets(
            scores,
            self.conformity_scores_,
            self.conformity_classes_,
            self.confidence_levels_[:n_levels],
            self.randomization_seed_,
            self.class_conditional,
        )

    def _delta(self) -> float:
        return 1.0 / (self.mapping_alpha_ - 1.0)

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Calibrated sparse probabilities ``entmax_alpha(z / T)``, nonzero exactly on the set.

        ``z`` is the estimator's ``decision_function`` and ``T = temperature_`` (the first
        level when ``confidence_level`` is a list). Labels outside :meth:`predict_set` are
        masked before the mapping, which in exact arithmetic changes nothing for the
        marginal method, and gives the mapping restricted to the set for
        ``class_conditional=True`` (whose sets need not be the top of a ranking; with ``T``
        the largest class temperature every label of the set stays in the support). A label
        of the set whose probability rounds to 0 (a score within ulps of ``q_hat``) gets the
        smallest positive normal float64, so the support is exactly the set.

        With ``randomized=True``, each row has its own temperature, ``(alpha - 1)`` times
        (a hair above) the largest score in its set, and a row whose set is empty has
        probabilities all 0.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Rows sum to 1; columns in ``classes_`` order.
        """
        self._check_conformalized()
        decision = self._decision(X)
        if hasattr(self, "randomization_seed_"):  # each row at the temperature of its set
            scores = nonconformity_scores(decision, self.mapping_alpha_)
            sets = self._randomized_sets(scores, n_levels=1)[:, :, 0]
            temperature = row_temperatures(scores, sets, self.mapping_alpha_)
            return calibrated_proba(decision, sets, temperature, self.mapping_alpha_)
        sets = self._sets(decision, n_levels=1)[:, :, 0]  # the first level's only
        return calibrated_proba(decision, sets, self.temperature_, self.mapping_alpha_)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """The label of largest decision score (that of :meth:`predict_proba` too).

        For a multi-label estimator, the label set: once conformalized, the support of
        :meth:`predict_proba` on every row (the first level's :meth:`predict_set`), as an
        indicator matrix; before, the estimator's own prediction.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        labels : ndarray of shape (n_samples,) or (n_samples, n_labels)
            Original class labels, or for a multi-label estimator an indicator matrix.
        """
        check_is_fitted(self, "estimator_")
        if self._multilabel():
            if not hasattr(self, "quantiles_"):  # not conformalized: the estimator's sets
                return self.estimator_.predict(X)
            dtype = getattr(self.estimator_, "_y_dtype", np.int64)
            return (self.predict_proba(X) > 0).astype(dtype)
        return self.classes_[np.argmax(self._decision(X), axis=1)]
