"""The conformal entry of a header: a :class:`~sk_entmax.conformal.SparseConformalClassifier`
stored around the model, its parameters and calibration checked against the model and the
calibration maths.

Which fitted attributes the wrapper has is its own declaration
(``SparseConformalClassifier._fitted_attributes``, and ``_calibrated_attributes``, set by
``conformalize``, all or none), and its parameters are its ``get_params`` names but
``estimator``; this module holds how a file stores them and how each value is checked.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from sk_entmax.persistence._classes import _estimator_classes
from sk_entmax.persistence._codec import _PLAIN, _decode, _encode, _is_int
from sk_entmax.persistence._errors import _Invalid, _Unserializable
from sk_entmax.persistence._header import _check_keys

#: what a file stores of a SparseConformalClassifier's ``estimator`` parameter: None (the
#: default SparsemaxClassifier), the fitted model itself (``prefit=True``), or an unfitted
#: estimator, restored as a clone of the fitted one (the parameters it was fitted with)
_CONFORMAL_ESTIMATOR = ("default", "fitted", "template")
_CONFORMAL_KEYS = {"params", "estimator", "fitted"}


def _declared() -> tuple[tuple[str, ...], tuple[str, ...], set[str]]:
    """The wrapper's fitted attributes (after fit; after conformalize) and the parameters a
    file stores (all but ``estimator``), as SparseConformalClassifier declares them."""
    from sk_entmax.conformal import SparseConformalClassifier as cls

    params = set(cls().get_params(deep=False)) - {"estimator"}
    return cls._fitted_attributes, cls._calibrated_attributes, params


def _conformal_entry(wrapper: Any) -> tuple[dict[str, Any], Any]:
    """The header entry of a fitted SparseConformalClassifier, and the model it wraps."""
    check_is_fitted(wrapper, "estimator_")
    inner = wrapper.estimator_
    classes = _estimator_classes()
    if classes.get(type(inner).__name__, (None,))[0] is not type(inner):
        raise TypeError(
            "save stores a SparseConformalClassifier around a fitted "
            f"{', '.join(classes)}; this one wraps a {type(inner).__name__}. Use pickle or "
            "joblib for it, where the file's source is trusted"
        )
    params = wrapper.get_params(deep=False)
    if params["estimator"] is None:
        kind = "default"
    elif params["estimator"] is inner:
        kind = "fitted"
    else:
        kind = "template"
    after_fit, calibrated, _ = _declared()
    fitted = {}
    for key, value in vars(wrapper).items():
        if key == "estimator_" or not key.endswith("_") or key.startswith("_"):
            continue
        if key not in after_fit + calibrated:
            raise TypeError(
                f"cannot save SparseConformalClassifier: its attribute {key} is not one of "
                "the fitted attributes load accepts; delete it before saving"
            )
        fitted[key] = value
    try:
        entry = {
            "params": {
                k: _encode(v, f"parameter {k}") for k, v in params.items() if k != "estimator"
            },
            "estimator": kind,
            "fitted": {k: _encode(v, f"fitted attribute {k}") for k, v in fitted.items()},
        }
    except _Unserializable as error:
        raise TypeError(
            f"cannot save SparseConformalClassifier safely: {error} cannot be stored as data"
        ) from None
    return entry, inner


@dataclass(frozen=True)
class _Conformal:
    """A checked conformal entry: what :func:`load` wraps around the loaded model."""

    params: dict[str, Any]
    kind: str
    fitted: dict[str, Any]

    def around(self, inner: Any) -> Any:
        from sklearn.base import clone

        from sk_entmax.conformal import SparseConformalClassifier

        estimator = {"default": None, "fitted": inner}.get(self.kind)
        if self.kind == "template":  # an unfitted estimator with the fitted one's parameters
            estimator = clone(inner)
        wrapper = SparseConformalClassifier(estimator, **self.params)
        wrapper.estimator_ = inner
        for key, value in self.fitted.items():
            setattr(wrapper, key, value)
        return wrapper


def _check_conformal(entry: Any, inner_name: str, inner: Mapping[str, Any]) -> _Conformal | None:
    """The conformal entry of a header, every value checked against the model it wraps and
    the calibration maths (the quantiles and temperatures recomputed where they can be)."""
    if entry is None:
        return None
    from sk_entmax.conformal import (
        SparseConformalClassifier,
    )

    after_fit, calibrated_names, conformal_params = _declared()
    if not isinstance(entry, dict):
        raise _Invalid("the conformal entry is not an object")
    _check_keys(entry, _CONFORMAL_KEYS, "the conformal entry")
    raw = entry["params"]
    if not isinstance(raw, dict) or set(raw) != conformal_params:
        raise _Invalid(f"the conformal parameters must be exactly {sorted(conformal_params)}")
    params = {k: _decode(v, f"conformal parameter {k}") for k, v in raw.items()}
    for key, value in params.items():
        plain = (*_PLAIN, np.floating)
        if not (
            isinstance(value, plain)
            or (isinstance(value, list) and all(isinstance(v, plain) for v in value))
        ):
            raise _Invalid(f"conformal parameter {key}: {type(value).__name__} is not a value")
    try:  # each value against its constraint, as fit checks it
        SparseConformalClassifier(None, **params)._validate_params_here()
    except (TypeError, ValueError) as error:
        raise _Invalid(str(error)) from None
    kind = entry["estimator"]
    if kind not in _CONFORMAL_ESTIMATOR:
        raise _Invalid(
            f"the conformal estimator entry {kind!r} is not one of {list(_CONFORMAL_ESTIMATOR)}"
        )
    if (kind == "fitted") != bool(params["prefit"]):
        raise _Invalid(f"the conformal estimator entry {kind!r} contradicts prefit")
    if kind == "default" and inner_name != "SparsemaxClassifier":
        raise _Invalid(f"estimator=None wraps a SparsemaxClassifier, not a {inner_name}")
    raw = entry["fitted"]
    if not isinstance(raw, dict):
        raise _Invalid("the conformal fitted attributes are not an object")
    unknown = sorted(set(raw) - set(after_fit + calibrated_names))
    if unknown:
        raise _Invalid(f"unknown conformal fitted attribute {unknown[0]!r}")
    fitted = {k: _decode(v, f"conformal fitted attribute {k}") for k, v in raw.items()}

    def fail(name: str, why: str) -> None:
        raise _Invalid(f"conformal fitted attribute {name}: {why}")

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
    want = inner["alpha_"] if params["mapping_alpha"] == "auto" else params["mapping_alpha"]
    if not (isinstance(alpha, float) and math.isfinite(alpha) and alpha > 1.0):
        fail("mapping_alpha_", f"a finite float > 1 is expected, got {alpha!r}")
    if alpha != float(want):
        fail("mapping_alpha_", f"{alpha!r} is not the alpha of mapping_alpha={want!r}")
    calibrated = [k for k in calibrated_names if k in fitted]
    # conformity_classes_ may be missing in a file saved before it was stored
    required = [k for k in calibrated_names if k != "conformity_classes_"]
    if calibrated and not set(required) <= set(calibrated):
        missing = sorted(set(required) - set(calibrated))
        raise _Invalid(f"the conformal entry is half calibrated: it lacks {missing}")
    if calibrated:
        multilabel = bool(inner.get("multilabel_", False))
        _check_calibration(fitted, params, len(classes), alpha, multilabel, fail)
        if params["class_conditional"] and "conformity_classes_" not in fitted:
            # saved before the rows' classes were: its per-class quantiles cannot be
            # recomputed, so they are not used
            for key in calibrated:
                del fitted[key]
            warnings.warn(
                "this SparseConformalClassifier's class-conditional calibration was saved "
                "before sk_entmax stored the calibration rows' classes, so load cannot "
                "recompute its per-class quantiles, nor tell them from edited ones: it is "
                "loaded fitted but not conformalized. Call conformalize on your held-out "
                "rows (and save it again) to use its prediction sets",
                UserWarning,
                stacklevel=4,
            )
    return _Conformal(params, kind, fitted)


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
    from sk_entmax.conformal import _check_level, calibrate, level_temperatures

    levels = fitted["confidence_levels_"]
    want_levels, _ = _check_level(params["confidence_level"])
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
    quantiles = fitted["quantiles_"]
    if not (
        isinstance(quantiles, np.ndarray)
        and quantiles.dtype == np.float64
        and quantiles.shape == (len(levels), n_classes)
    ):
        fail("quantiles_", f"a float64 array of shape ({len(levels)}, {n_classes}) is expected")
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
    from sk_entmax.conformal import _rank

    finite = quantiles[np.isfinite(quantiles)]
    if not np.isin(finite, scores).all():
        fail("quantiles_", "an entry is not one of the stored scores")
    for i, level in enumerate(levels.tolist()):
        for c, q in enumerate(quantiles[i].tolist()):
            short = _rank(counts[c], level) > counts[c]
            if (q == math.inf) != short or q == -math.inf:
                fail("quantiles_", f"entry [{i}, {c}] is not a quantile of the scores")
