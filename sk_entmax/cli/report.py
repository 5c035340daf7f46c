"""The ``python -m sk_entmax report`` command: fit a model on the user's CSV file and write
an HTML report on the held-out rows."""

from __future__ import annotations

import argparse
import re
import time
import warnings
from pathlib import Path
from typing import Any

from sk_entmax.cli._csv import _read_table
from sk_entmax.cli._errors import UsageError, _first_line
from sk_entmax.cli._notes import _data_notes, _infinite_to_missing
from sk_entmax.cli._printing import (
    _name,
    _print_outcome,
    _print_regression_outcome,
    _say,
    _warning_notes,
)
from sk_entmax.cli._task import _many_small_classes_note, _why_regression


def _check_task_options(args: argparse.Namespace, why: str) -> None:
    """Refuse, for a regression target, the options that only mean something for class
    labels; ``why`` says why the target is a regression target."""
    if args.model != "tabnet":
        raise UsageError(
            f"--model {args.model} is a linear classifier, for class labels, and only --model "
            f"tabnet regresses; {why}: leave out --model (or give --model tabnet)"
        )
    if args.confidence is not None:
        raise UsageError(
            "--confidence gives conformal prediction sets of class labels, for "
            f"classification only; {why}: leave out --confidence"
        )


def _report(args: argparse.Namespace) -> None:
    if args.faithful_masks is not None and args.model != "tabnet":
        flag = "--faithful-masks" if args.faithful_masks else "--no-faithful-masks"
        raise UsageError(
            f"{flag} is for --model tabnet (the feature masks of a TabNet); "
            f"{args.model} has no feature masks"
        )
    if args.task == "regression":  # refused before any reading
        _check_task_options(args, "--task regression asks for a regressor")
    _require_matplotlib()
    table = _read_table(args.data, args.target, args.task)
    target = table.target  # the column's name as in the file
    regression = table.task == "regression"
    if regression and args.task == "auto":
        _check_task_options(
            args,
            f"column {target!r} holds {_why_regression(table.y)}: a regression target "
            "(--task auto)",
        )
    X, infinite = _infinite_to_missing(table.X)
    y = table.y
    clf = _estimator(
        args.model,
        X,
        args.max_epochs,
        args.random_state,
        faithful_masks=args.faithful_masks is not False,
        task=table.task,
        progress=not args.no_progress,
    )
    X_train, X_test, y_train, y_test, stratified = _split(
        X, y, args.random_state, by_class=not regression
    )
    notes = _data_notes(table, X_train, X_test, args.model, infinite, stratified, target)
    if regression:
        how = (
            f"(--task auto: {_why_regression(y)})"
            if args.task == "auto"
            else "(--task regression)"
        )
        notes.insert(0, ("task", f"regression on {target!r} {how}"))
    else:
        notes += _many_small_classes_note(y, target, args.task)
    if target != args.target:
        notes.insert(
            0,
            (
                "target column",
                f"{target!r}, the one column named {args.target!r} once leading and trailing "
                "spaces are set aside",
            ),
        )
    X_fit, y_fit = X_train, y_train
    if args.confidence is not None:
        X_fit, X_cal, y_fit, y_cal, cal_stratified = _split(
            X_train, y_train, args.random_state, test_size=0.2
        )
        split = "stratified by class" if cal_stratified else "not stratified"
        notes.append(
            (
                "calibration rows",
                f"{len(X_cal)} of the {len(X_train)} training rows (20%, {split}) calibrate "
                f"the conformal sets; the model is fitted on the other {len(X_fit)}",
            )
        )
    for label, text in notes:
        _say(f"{label}: {text}")
    name = type(clf[-1] if hasattr(clf, "steps") else clf).__name__
    fit_said = _fit(clf, name, X_fit, y_fit, X, y, target, regression=regression)
    proba, predicted, said = _predict_held_out(clf, X_test, regression=regression)
    conformal = None
    if args.confidence is not None:
        conformal, cal_said = _conformalize(clf, args.confidence, X_cal, y_cal, X_test, y_test)
        said = [*said, *cal_said]
    said = list(dict.fromkeys([*fit_said, *said]))
    notes += [("note", message) for message in said]
    path, intervals, never = _write_report(
        clf, name, X_test, y_test, notes, said, target, args, conformal
    )
    if regression:
        _print_regression_outcome(clf, predicted, X_test, y_test, intervals, path, never)
    else:
        _print_outcome(proba, predicted, X_test, y_test, intervals, path, conformal, never)


def _estimator(
    model: str,
    X: Any,
    max_epochs: int | None,
    random_state: int,
    *,
    faithful_masks: bool = True,
    task: str = "classification",
    progress: bool = False,
):
    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier

    kwargs: dict[str, Any] = {"random_state": random_state}
    if max_epochs is not None:
        kwargs["max_epochs"] = max_epochs
    # TabNet's fit is the long one: a progress bar with the time left (verbose=1)
    tabnet = {**kwargs, "faithful_masks": faithful_masks, "verbose": int(progress)}
    if task == "regression":  # _check_task_options let only --model tabnet through
        from sk_entmax import TabNetEntmaxRegressor

        return TabNetEntmaxRegressor(**tabnet)
    if model == "tabnet":
        return TabNetEntmaxClassifier(**tabnet)
    numeric = make_column_selector(dtype_include=["number", "bool"])
    other = make_column_selector(dtype_exclude=["number", "bool"])
    preprocess = make_column_transformer(
        (make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
        (
            make_pipeline(
                SimpleImputer(strategy="most_frequent"),
                OneHotEncoder(handle_unknown="ignore", sparse_output=False),
            ),
            other,
        ),
        verbose_feature_names_out=False,
    )
    cls = SparsemaxClassifier if model == "sparsemax" else EntmaxClassifier
    return make_pipeline(preprocess, cls(**kwargs))


def _require_matplotlib() -> None:
    """Refuse the report command, before any reading or fitting, when matplotlib is missing."""
    from sk_entmax.report import _MISSING_MATPLOTLIB

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(_MISSING_MATPLOTLIB) from None


def _split(
    X: Any, y: Any, random_state: int, test_size: float = 0.25, *, by_class: bool = True
) -> tuple[Any, Any, Any, Any, bool]:
    """75% of the rows for training, 25% held out (``test_size``), stratified by class where
    every class has two rows and there are few classes (never when not ``by_class``: a
    regression target); the last item says whether it was stratified."""
    from sklearn.model_selection import train_test_split

    counts = y.value_counts()
    few = counts.min() >= 2 and len(counts) <= test_size * len(y)
    stratify = y if by_class and few else None
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_size, stratify=stratify, random_state=random_state
    )
    return X_train, X_test, y_train, y_test, stratify is not None


def _say_needed(clf: Any) -> None:
    """``note: ...`` naming the columns a TabNet's column selection kept because the model
    still needed them (``needed_features_``; nothing for other models), as the report's
    page says it."""
    from sk_entmax._tabnet.diagnostics import needed_note

    estimator = clf[-1] if hasattr(clf, "steps") else clf
    note = needed_note(estimator, name=_name)
    if note is not None:
        _say(f"note: {note}")


def _fit(
    clf: Any,
    name: str,
    X_train: Any,
    y_train: Any,
    X: Any,
    y: Any,
    target: str,
    *,
    regression: bool = False,
) -> list[str]:
    """Fit ``clf`` on the training rows, saying so and how long it took; a ValueError from
    the fit is the data's fault, a UsageError. Returns the distinct UserWarning messages of
    the fit (a column of numbers with stray text, an identifier column), each printed once
    as a note."""
    if regression:
        spread = f"{y.nunique()} distinct values, {y.min():.4g} to {y.max():.4g}"
        what = f"regression on {target!r}: {spread}"
    else:
        what = f"{y.nunique()} classes in {target!r}"
    bar = getattr(clf, "verbose", 0) == 1  # its progress bar goes to standard error
    _say(
        f"fitting {name} on {len(X_train)} rows x {X.shape[1]} columns ({what}) ...",
        end="\n" if bar else "",
        flush=True,
    )
    from sklearn.exceptions import ConvergenceWarning

    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            warnings.simplefilter("always", ConvergenceWarning)
            clf.fit(X_train, y_train)
    except ValueError as exc:
        if not bar:
            print()
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else "ValueError"
        raise UsageError(f"fitting failed: {message}") from None
    seconds = f"{time.perf_counter() - start:.1f} s"
    print(f"fitted in {seconds}" if bar else f" {seconds}")
    # every warning of the fit becomes one line of ours (a ConvergenceWarning too, without
    # a site-packages path); the UserWarnings' messages also go into the report
    for note in _warning_notes(caught):
        _say(note)
    _say_needed(clf)
    return list(dict.fromkeys(str(w.message) for w in caught if w.category is UserWarning))


def _predict_held_out(
    clf: Any, X_test: Any, *, regression: bool = False
) -> tuple[Any, Any, list[str]]:
    """The probabilities (None for a regressor) and predictions on the held-out rows, and
    the distinct UserWarning messages the model gave on them (each printed once as a note)."""
    # what the model says about the held-out rows (a gap in a column that had none in the
    # training rows, a category it never saw) goes into the report and on the terminal once
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        proba = None if regression else clf.predict_proba(X_test)
        predicted = clf.predict(X_test)
    said = list(dict.fromkeys(str(w.message) for w in caught if w.category is UserWarning))
    for message in said:
        _say(f"note: {message}")
    return proba, predicted, said


def _conformalize(
    clf: Any, confidence: float, X_cal: Any, y_cal: Any, X_test: Any, y_test: Any
) -> tuple[Any, list[str]]:
    """Calibrate a SparseConformalClassifier around the fitted ``clf`` on the calibration
    rows and sum up its sets on the held-out rows; also returns the distinct UserWarning
    messages (too few calibration rows, say), each printed once as a note."""
    from sk_entmax.conformal import SparseConformalClassifier
    from sk_entmax.report import conformal_sets

    wrapped = SparseConformalClassifier(clf, prefit=True, confidence_level=confidence)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            wrapped.conformalize(X_cal, y_cal)
        except ValueError as exc:
            raise UsageError(f"conformal calibration failed: {_first_line(exc)}") from None
        sets = conformal_sets(wrapped, X_test, y_test)
    said = list(dict.fromkeys(str(w.message) for w in caught if w.category is UserWarning))
    for message in said:
        _say(f"note: {message}")
    return sets, said


def _write_report(
    clf: Any,
    name: str,
    X_test: Any,
    y_test: Any,
    notes: list[tuple[str, str]],
    said: list[str],
    target: str,
    args: argparse.Namespace,
    conformal: Any = None,
) -> tuple[Path, Any, Any]:
    """Write the HTML report on the held-out rows (the warnings already said silenced);
    returns the path written and, for TabNet, the importance intervals and the features
    the predictions never read (else None, None).

    The report functions write a temporary file and rename it over ``--out``: a link put
    at ``--out`` after :func:`_check_out` (during the fit, say) is refused, never written
    through, and ends as a UsageError naming ``--out``."""
    from sk_entmax.report import feature_mask_report, probability_support_report

    title = f"{name} on {args.data.name}: {target}"
    write = feature_mask_report if args.model == "tabnet" else probability_support_report
    try:
        with warnings.catch_warnings():
            for message in said:
                warnings.filterwarnings("ignore", message=re.escape(message), category=UserWarning)
            if args.model == "tabnet":
                options = {"n_resamples": args.resamples, "random_state": args.random_state}
                path = write(
                    clf,
                    X_test,
                    args.out,
                    y=y_test,
                    title=title,
                    data=notes,
                    conformal=conformal,
                    **options,
                )
                intervals = _intervals(clf, X_test, args)
                never = _never_read_rows(clf, X_test)  # the rows the report lists
            else:
                path = write(
                    clf, X_test, args.out, y=y_test, title=title, data=notes, conformal=conformal
                )
                intervals = never = None
    except OSError as exc:  # the folder changed during the fit, say: a link planted there
        raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    return path, intervals, never


def _intervals(clf: Any, X: Any, args: argparse.Namespace) -> Any:
    """The importance intervals the report shows (same rows, resamples and seed), or None."""
    if not args.resamples:
        return None
    from sk_entmax.report import importance_intervals

    return importance_intervals(clf, X, n_resamples=args.resamples, random_state=args.random_state)


def _never_read_rows(clf: Any, X: Any) -> Any:
    """What the report shows of the features never read (same rows): a ``_NeverRead``."""
    from sk_entmax.report.masks import _never_read_rows

    return _never_read_rows(clf, X)
