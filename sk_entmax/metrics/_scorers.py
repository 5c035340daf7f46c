"""The metrics as scikit-learn scorers, and the refit rule that picks the sparsest model
within one standard error of the best."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import make_scorer

from sk_entmax.entmax.constraints import invalid
from sk_entmax.metrics._inputs import _check_alpha
from sk_entmax.metrics._support import mean_support_size, support_coverage
from sk_entmax.metrics._tsallis import tsallis_loss


def make_tsallis_scorer(alpha: float = 1.5, *, labels: ArrayLike | None = None) -> Callable:
    """A scorer of the negated :func:`tsallis_loss`, for model selection.

    Built with :func:`sklearn.metrics.make_scorer` (``greater_is_better=False``,
    ``response_method="predict_proba"``): it calls the estimator's ``predict_proba`` and
    returns ``-tsallis_loss``, so greater is better, as ``"neg_log_loss"`` is, but the score
    stays finite when a true class gets probability exactly 0. Use it as ``scoring`` of
    :class:`~sklearn.model_selection.GridSearchCV`,
    :func:`~sklearn.model_selection.cross_validate` or
    :func:`~sklearn.inspection.permutation_importance`.

    Parameters
    ----------
    alpha : float, default=1.5
        The Tsallis index of the loss, at least 1 (1 is the unclipped log loss, 2 half the
        Brier score). It need not match the alpha of the models compared: one fixed alpha
        scores every candidate by the same proper rule.
    labels : array-like, default=None
        All class labels, for folds whose test part may lack a class.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, sample_weight=None)``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sk_entmax.metrics import make_tsallis_scorer, tsallis_loss
    >>> scorer = make_tsallis_scorer(alpha=1.5)
    >>> scorer
    make_scorer(tsallis_loss, greater_is_better=False, response_method='predict_proba', alpha=1.5)
    >>> X, y = load_iris(return_X_y=True)
    >>> model = LogisticRegression(max_iter=1000).fit(X, y)
    >>> bool(scorer(model, X, y) == -tsallis_loss(y, model.predict_proba(X)))
    True

    In a search: ``GridSearchCV(estimator, grid, scoring={"tsallis": scorer, "accuracy":
    "accuracy"}, refit="tsallis")``.
    """
    kwargs: dict[str, Any] = {"alpha": _check_alpha(alpha, "make_tsallis_scorer")}
    if labels is not None:
        kwargs["labels"] = labels
    return make_scorer(
        tsallis_loss, greater_is_better=False, response_method="predict_proba", **kwargs
    )


def make_coverage_scorer(*, labels: ArrayLike | None = None) -> Callable:
    """A scorer of :func:`support_coverage`, for model selection and reports.

    Built with :func:`sklearn.metrics.make_scorer` (``response_method="predict_proba"``,
    greater is better). Coverage alone rewards dense models (softmax covers every class),
    so score it beside a proper loss and the support size, not as the only criterion.

    Parameters
    ----------
    labels : array-like, default=None
        All class labels, for folds whose test part may lack a class.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, sample_weight=None)``.

    Examples
    --------
    >>> from sk_entmax.metrics import make_coverage_scorer
    >>> make_coverage_scorer()
    make_scorer(support_coverage, response_method='predict_proba')
    """
    kwargs: dict[str, Any] = {} if labels is None else {"labels": labels}
    return make_scorer(support_coverage, response_method="predict_proba", **kwargs)


def _support_size(y_true: ArrayLike, y_proba: ArrayLike, **kwargs: Any) -> float:
    """:func:`mean_support_size` with the scorer's signature (``y_true`` unused)."""
    return mean_support_size(y_proba, **kwargs)


def make_support_size_scorer() -> Callable:
    """A scorer of the negated :func:`mean_support_size`, to record in a search.

    Built with :func:`sklearn.metrics.make_scorer` (``greater_is_better=False``,
    ``response_method="predict_proba"``): greater is better, so the sparsest candidate
    scores highest. Support size alone rewards a model that keeps one class whatever the
    data, so do not select by it alone: record it beside accuracy (or a proper loss) and
    select with :func:`sparsest_within_one_se`.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, sample_weight=None)``: minus the mean number of classes
        with probability > 0 per row.

    Examples
    --------
    >>> from sk_entmax.metrics import make_support_size_scorer
    >>> make_support_size_scorer()
    make_scorer(_support_size, greater_is_better=False, response_method='predict_proba')
    """
    return make_scorer(_support_size, greater_is_better=False, response_method="predict_proba")


def sparsest_within_one_se(
    score: str = "accuracy", support: str = "support_size"
) -> Callable[[dict[str, Any]], int]:
    """A ``refit`` rule: the sparsest candidate within one standard error of the best.

    The one-standard-error rule (Hastie, Tibshirani & Friedman, *The Elements of
    Statistical Learning*, section 7.10): candidates whose mean cross-validated ``score``
    is at least the best mean minus the standard error of the best (its standard deviation
    over the folds over the square root of the number of folds) are taken as equally good,
    and among them the one with the smallest mean support size is chosen (ties: the first
    in the grid). Accuracy barely moves with alpha while the support size falls steeply,
    so this rule picks a sparse alpha where accuracy or a proper loss alone picks the
    densest (see the user guide's *Scoring* page for measurements).

    Parameters
    ----------
    score : str, default="accuracy"
        The name, in the search's ``scoring`` dict, of the score to stay near the best of
        (greater is better).
    support : str, default="support_size"
        The name, in the search's ``scoring`` dict, of :func:`make_support_size_scorer`.

    Returns
    -------
    refit : callable
        ``refit(cv_results) -> int``, the index of the chosen candidate: pass it as the
        ``refit`` of :class:`~sklearn.model_selection.GridSearchCV`.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sk_entmax import EntmaxClassifier
    >>> from sk_entmax.metrics import make_support_size_scorer, sparsest_within_one_se
    >>> X, y = load_wine(return_X_y=True)
    >>> search = GridSearchCV(
    ...     make_pipeline(StandardScaler(), EntmaxClassifier(random_state=0)),
    ...     {"entmaxclassifier__alpha": [1.0, 1.25, 1.5, 2.0]},
    ...     scoring={"accuracy": "accuracy", "support_size": make_support_size_scorer()},
    ...     refit=sparsest_within_one_se("accuracy", "support_size"),
    ... ).fit(X, y)
    >>> search.best_params_  # accuracy alone picks 1.0 (softmax, no zeros)
    {'entmaxclassifier__alpha': 2.0}
    """
    for name, value in (("score", score), ("support", support)):
        if not isinstance(value, str):
            raise invalid(name, "sparsest_within_one_se", "a str", value)

    def refit(cv_results: dict[str, Any]) -> int:
        for name in (score, support):
            if f"mean_test_{name}" not in cv_results:
                raise KeyError(
                    f"sparsest_within_one_se: the search has no score {name!r}; give it in "
                    f"scoring, e.g. scoring={{{score!r}: ..., {support!r}: "
                    "make_support_size_scorer()}"
                )
        means = np.asarray(cv_results[f"mean_test_{score}"], dtype=np.float64)
        stds = np.asarray(cv_results[f"std_test_{score}"], dtype=np.float64)
        n_splits = sum(1 for key in cv_results if re.fullmatch(rf"split\d+_test_{score}", key))
        best = int(np.nanargmax(means))
        bar = means[best] - stds[best] / np.sqrt(max(n_splits, 1))
        sizes = -np.asarray(cv_results[f"mean_test_{support}"], dtype=np.float64)
        near = np.flatnonzero(means >= bar)
        return int(near[np.argmin(sizes[near])])

    return refit
