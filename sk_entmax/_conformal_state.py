"""The saved state of :class:`~sk_entmax.conformal.SparseConformalClassifier`: what a model
file stores of the wrapper around its model (:data:`CONFORMAL_STATE`, which the class
declares as its ``_saved_state``), and the checks of the stored calibration against the
model and the calibration maths (every quantile and temperature recomputed where it can
be).

:mod:`sk_entmax.persistence` interprets the declaration and knows the wrapper by nothing
else. :mod:`sk_entmax.conformal` imports this module, never the other way round: the
checks read the wrapper's parameters through :mod:`sk_entmax._conformal_inputs`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np

from sk_entmax._attributes import Invalid
from sk_entmax._conformal_inputs import check_level, checked_parameters, final_step
from sk_entmax._conformal_maths import _rank, calibrate, level_temperatures, recall_thresholds
from sk_entmax._saved_state import WrapperState

__all__ = ["CALIBRATED_ATTRIBUTES", "CONFORMAL_STATE", "FITTED_ATTRIBUTES"]

#: the fitted attributes a file stores besides ``estimator_``: those ``fit`` sets, and
#: those ``conformalize`` sets (stored all or none)
FITTED_ATTRIBUTES = ("classes_", "mapping_alpha_", "n_features_in_")
CALIBRATED_ATTRIBUTES = (
    "confidence_levels_",
    "conformity_scores_",
    "conformity_classes_",
    "n_conformalize_samples_",
    "quantiles_",
    "temperatures_",
    "temperature_",
    "conformity_rows_",
    "randomization_seed_",
)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_conformal(
    params: dict[str, Any],
    kind: str,
    fitted: dict[str, Any],
    model_class: type,
    inner: Mapping[str, Any],
) -> dict[str, Any]:
    """The wrapper's stored parameters and fitted attributes (decoded), against the model
    it wraps (its class, its fitted attributes) and the calibration maths; the fitted
    attributes to set (a calibration that cannot be recomputed is dropped, with a
    warning)."""
    from sk_entmax._linear import SparsemaxClassifier

    try:  # each value against its constraint, as fit checks it
        checked_parameters(SimpleNamespace(estimator=None, **params), "SparseConformalClassifier")
    except (TypeError, ValueError) as error:
        raise Invalid(str(error)) from None
    if (kind == "fitted") != bool(params["prefit"]):
        raise Invalid(f"the conformal estimator entry {kind!r} contradicts prefit")
    if kind == "default" and model_class is not SparsemaxClassifier:
        raise Invalid(
            f"estimator=None wraps a {SparsemaxClassifier.__name__}, not a {model_class.__name__}"
        )

    def fail(name: str, why: str) -> None:
        raise Invalid(f"conformal fitted attribute {name}: {why}")

    classes = fitted.get("classes_")
    if not (
        isinstance(classes, np.ndarray)
        and classes.dtype == inner["classes_"].dtype
        and np.array_equal(classes, inner["classes_"])
    ):
        fail("classes_", "missing, or not the model's classes_")
    if ("n_features_in_" in fitted) != ("n_features_in_" in inner) or fitted.get(
        "n_features_in_"
    ) != inner.get("n_features_in_"):
        fail("n_features_in_", "not the model's n_features_in_")
    alpha = fitted.get("mapping_alpha_")
    want = params["mapping_alpha"]
    if want == "auto":  # the model's alpha; sparsemax for a softmax model
        want = inner["alpha_"] if float(inner["alpha_"]) > 1.0 else 2.0
    if not (isinstance(alpha, float) and math.isfinite(alpha) and alpha > 1.0):
        fail("mapping_alpha_", f"a finite float > 1 is expected, got {alpha!r}")
    if alpha != float(want):
        fail("mapping_alpha_", f"{alpha!r} is not the alpha of mapping_alpha={want!r}")
    calibrated_names = CALIBRATED_ATTRIBUTES
    calibrated = [k for k in calibrated_names if k in fitted]
    # conformity_classes_ may be missing in a file saved before it was stored; the last
    # two belong to risk="recall" and randomized=True
    optional = ("conformity_classes_", "conformity_rows_", "randomization_seed_")
    required = [k for k in calibrated_names if k not in optional]
    if calibrated and not set(required) <= set(calibrated):
        missing = sorted(set(required) - set(calibrated))
        raise Invalid(f"the conformal entry is half calibrated: it lacks {missing}")
    if calibrated:
        multilabel = bool(inner.get("multilabel_", False))
        _check_modes(fitted, params, multilabel, fail)
        if params["risk"] == "recall":
            _check_recall(fitted, params, len(classes), alpha, fail)
        else:
            _check_calibration(fitted, params, len(classes), alpha, multilabel, fail)
        if params["class_conditional"] and "conformity_classes_" not in fitted:
            # saved before the rows' classes were: its per-class quantiles cannot be
            # recomputed, so they are not used
            fitted = {k: v for k, v in fitted.items() if k not in calibrated}
            warnings.warn(
                "this SparseConformalClassifier's class-conditional calibration was saved "
                "before sk_entmax stored the calibration rows' classes, so load cannot "
                "recompute its per-class quantiles, nor tell them from edited ones: it is "
                "loaded fitted but not conformalized. Call conformalize on your held-out "
                "rows (and save it again) to use its prediction sets",
                UserWarning,
                stacklevel=5,
            )
    return fitted


def _levels_and_scores(
    fitted: dict[str, Any], params: dict[str, Any], fail: Callable
) -> tuple[np.ndarray, np.ndarray]:
    """The stored levels and conformity scores, once the levels are those of
    ``confidence_level`` and the scores a 1-d float64 array of finite scores >= 0 (else
    ``fail``)."""
    levels = fitted["confidence_levels_"]
    want_levels, _ = check_level(params["confidence_level"])
    if not (isinstance(levels, np.ndarray) and np.array_equal(levels, want_levels)):
        fail("confidence_levels_", "not the levels of confidence_level")
    scores = fitted["conformity_scores_"]
    if not (
        isinstance(scores, np.ndarray)
        and scores.dtype == np.float64
        and scores.ndim == 1
        and np.isfinite(scores).all()
        and (scores >= 0).all()
    ):
        fail("conformity_scores_", "a 1-d float64 array of finite scores >= 0 is expected")
    return levels, scores


def _stored_quantiles(
    fitted: dict[str, Any], n_levels: int, n_classes: int, fail: Callable
) -> np.ndarray:
    """The stored ``quantiles_``, once a float64 array of shape ``(n_levels, n_classes)``
    (else ``fail``)."""
    quantiles = fitted["quantiles_"]
    if not (
        isinstance(quantiles, np.ndarray)
        and quantiles.dtype == np.float64
        and quantiles.shape == (n_levels, n_classes)
    ):
        fail("quantiles_", f"a float64 array of shape ({n_levels}, {n_classes}) is expected")
    return quantiles


def _check_calibration(
    fitted: dict[str, Any],
    params: dict[str, Any],
    n_classes: int,
    alpha: float,
    multilabel: bool,
    fail: Callable,
) -> None:
    """The calibration attributes: the levels are the parameter's, the counts those of the
    stored scores, and every quantile and temperature what conformalize computes from the
    stored scores (and rows' classes): each recomputed here, in ``O(n log n + n_levels)``."""
    levels, scores = _levels_and_scores(fitted, params, fail)
    n = scores.size
    class_conditional = bool(params["class_conditional"])
    counts = _checked_counts(fitted["n_conformalize_samples_"], n, n_classes, class_conditional)
    if counts is None:
        fail(
            "n_conformalize_samples_",
            f"not the number of stored scores ({n}"
            + (f", split among the {n_classes} classes)" if class_conditional else ")"),
        )
    codes = fitted.get("conformity_classes_")
    if codes is not None:
        if not (
            isinstance(codes, np.ndarray)
            and codes.dtype.kind in "iu"
            and codes.shape == (n,)
            and (
                (codes == -1).all()
                if multilabel
                else bool(((codes >= 0) & (codes < n_classes)).all())
            )
        ):
            fail(
                "conformity_classes_",
                f"one class index per stored score is expected (of {n} scores, in "
                f"range({n_classes})" + ("; -1 for a multi-label model)" if multilabel else ")"),
            )
        codes = codes.astype(np.int64)
        if class_conditional and np.bincount(codes, minlength=n_classes).tolist() != counts:
            fail("n_conformalize_samples_", "not the stored rows per class")
    quantiles = _stored_quantiles(fitted, len(levels), n_classes, fail)
    if codes is not None or not class_conditional:
        # every quantile recomputed, as conformalize computes it
        groups = np.zeros(n, dtype=np.int64) if codes is None or multilabel else codes
        want, _ = calibrate(
            scores, groups, n_classes, levels, class_conditional=class_conditional, warn=False
        )
        wrong = np.argwhere(quantiles != want)
        if wrong.size:
            i, c = wrong[0].tolist()
            fail(
                "quantiles_",
                f"entry [{i}, {c}] is {quantiles[i, c]!r}, but the level's quantile of the "
                f"stored scores is {want[i, c]!r}",
            )
    else:
        _check_old_class_quantiles(quantiles, levels, scores, counts, fail)
    temperatures = level_temperatures(quantiles, alpha)
    stored = fitted["temperatures_"]
    if not (isinstance(stored, np.ndarray) and np.array_equal(stored, temperatures)):
        fail("temperatures_", "not (alpha - 1) * q_hat per level, as conformalize computes")
    if fitted["temperature_"] != float(temperatures[0]):
        fail("temperature_", "not temperatures_[0]")


def _check_modes(
    fitted: dict[str, Any], params: dict[str, Any], multilabel: bool, fail: Callable
) -> None:
    """The attributes of the modes: ``randomization_seed_`` an int exactly when
    ``randomized``, ``conformity_rows_`` and a multi-label model exactly when
    ``risk="recall"``."""
    seed = fitted.get("randomization_seed_")
    if params["randomized"] != (seed is not None):
        fail("randomization_seed_", "stored exactly when randomized=True")
    if seed is not None and not (_is_int(seed) and 0 <= seed < 2**31):
        fail("randomization_seed_", f"an int in [0, 2**31) is expected, got {seed!r}")
    recall = params["risk"] == "recall"
    if recall != ("conformity_rows_" in fitted):
        fail("conformity_rows_", "stored exactly when risk='recall'")
    if recall and not multilabel:
        fail("conformity_rows_", "risk='recall' calibrates a multi-label model only")


def _check_recall(
    fitted: dict[str, Any], params: dict[str, Any], n_classes: int, alpha: float, fail: Callable
) -> None:
    """A recall-risk calibration: one score, label and row per (row, true label) pair, no
    pair twice, and every threshold and temperature what conformalize computes from them."""
    levels, scores = _levels_and_scores(fitted, params, fail)
    n_rows = fitted["n_conformalize_samples_"]
    if not (_is_int(n_rows) and 0 <= n_rows < 2**53):
        fail("n_conformalize_samples_", "the number of calibration rows, an int, is expected")
    pairs = [fitted.get("conformity_classes_"), fitted["conformity_rows_"]]
    for name, values, bound in zip(
        ("conformity_classes_", "conformity_rows_"), pairs, (n_classes, n_rows), strict=True
    ):
        if not (
            isinstance(values, np.ndarray)
            and values.dtype.kind in "iu"
            and values.shape == scores.shape
            and bool(((values >= 0) & (values < bound)).all())
        ):
            fail(name, f"one index in range({bound}) per stored score is expected")
    labels, rows = (v.astype(np.int64) for v in pairs)
    if np.unique(rows * n_classes + labels).size != rows.size:
        fail("conformity_rows_", "a (row, label) pair is stored twice")
    quantiles = _stored_quantiles(fitted, len(levels), n_classes, fail)
    want = recall_thresholds(scores, rows, n_rows, levels)
    wrong = np.argwhere(quantiles != want[:, np.newaxis])
    if wrong.size:
        i, c = wrong[0].tolist()
        fail(
            "quantiles_",
            f"entry [{i}, {c}] is {quantiles[i, c]!r}, but the level's recall threshold of "
            f"the stored scores is {want[i]!r}",
        )
    temperatures = level_temperatures(quantiles, alpha)
    stored = fitted["temperatures_"]
    if not (isinstance(stored, np.ndarray) and np.array_equal(stored, temperatures)):
        fail("temperatures_", "not (alpha - 1) * lam per level, as conformalize computes")
    if fitted["temperature_"] != float(temperatures[0]):
        fail("temperature_", "not temperatures_[0]")


def pipeline_facts(pipeline: Any) -> dict[str, Any]:
    """What :func:`check_conformal` reads of the model, for a wrapper around a Pipeline:
    its ``classes_`` and ``n_features_in_`` (if it has one), and of its final step the
    alpha ``mapping_alpha="auto"`` takes (that of this package's classifiers, 2 for any
    other) and whether it is multi-label."""
    from sk_entmax._classifier import BaseEntmaxClassifier

    final = final_step(pipeline)
    alpha = float(final.alpha_) if isinstance(final, BaseEntmaxClassifier) else 2.0
    facts: dict[str, Any] = {
        "classes_": np.asarray(pipeline.classes_),
        "alpha_": alpha,
        "multilabel_": bool(getattr(final, "multilabel_", False)),
    }
    if hasattr(pipeline, "n_features_in_"):
        facts["n_features_in_"] = pipeline.n_features_in_
    return facts


def _checked_counts(
    counts: Any, n: int, n_classes: int, class_conditional: bool
) -> list[int] | None:
    """The stored calibration counts as Python ints (one per class, or the one total), or
    None unless each is an int from 0 to the ``n`` stored scores and they sum to ``n``:
    checked before any arithmetic, in Python ints, which cannot wrap."""
    if not class_conditional:
        return [counts] if _is_int(counts) and counts == n else None
    if not (
        isinstance(counts, np.ndarray)
        and counts.dtype.kind in "iu"
        and counts.shape == (n_classes,)
    ):
        return None
    values = [int(v) for v in counts.tolist()]
    if not all(0 <= v <= n for v in values) or sum(values) != n:
        return None
    return values


def _check_old_class_quantiles(
    quantiles: np.ndarray,
    levels: np.ndarray,
    scores: np.ndarray,
    counts: list[int],
    fail: Callable,
) -> None:
    """A class-conditional calibration from a file that predates ``conformity_classes_``:
    the rows' classes are not stored, so each class's quantile can only be checked to be
    one of the scores, and inf exactly when that class had too few rows for the level
    (such a file is refused if not; if so, its calibration is dropped at load)."""
    finite = quantiles[np.isfinite(quantiles)]
    if not np.isin(finite, scores).all():
        fail("quantiles_", "an entry is not one of the stored scores")
    for i, level in enumerate(levels.tolist()):
        for c, q in enumerate(quantiles[i].tolist()):
            short = _rank(counts[c], level) > counts[c]
            if (q == math.inf) != short or q == -math.inf:
                fail("quantiles_", f"entry [{i}, {c}] is not a quantile of the scores")


#: the declaration :mod:`sk_entmax.persistence` reads, ``SparseConformalClassifier._saved_state``
CONFORMAL_STATE = WrapperState(
    key="conformal",
    model="estimator_",
    parameter="estimator",
    fitted=(*FITTED_ATTRIBUTES, *CALIBRATED_ATTRIBUTES),
    check=check_conformal,
    # files written before issue 62 hold none of these: split conformal, not randomized
    added_parameters={"cv": None, "randomized": False, "risk": None, "random_state": None},
    facts=pipeline_facts,
)
