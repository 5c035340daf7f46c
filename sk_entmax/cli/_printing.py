"""What the command line prints: user text escaped, column names quoted where need be, and
the lines that sum up a report on the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _printable(text: str) -> str:
    """``text`` with its characters that are not printable escaped (``\\x1b``, ``\\n``);
    ordinary unicode letters are kept."""
    from sk_entmax.report._common import _printable

    return _printable(text)


def _say(text: str, **kwargs: Any) -> None:
    """Print ``text`` with its characters that are not printable escaped: it may hold what
    the user's files hold (names, labels, paths, and the messages that quote them)."""
    print(_printable(text), **kwargs)


def _warning_notes(caught: list) -> list[str]:
    """The command line's own one-line note for each distinct warning a fit gave (recorded
    by ``warnings.catch_warnings(record=True)``), instead of the warning printed raw with
    the library's file and line. A ``ConvergenceWarning`` keeps its first sentence, what
    happened, not the advice to scale the features, which the command line already does."""
    from sklearn.exceptions import ConvergenceWarning

    notes = []
    for w in caught:
        message = str(w.message)
        if w.category is UserWarning:  # the package's own notes, said as they are
            notes.append(f"note: {message}")
            continue
        text = message.strip().splitlines()[0] if message.strip() else ""
        if issubclass(w.category, ConvergenceWarning):
            text = text.split(": the fit has not converged")[0].split(". ")[0]
            text = f"{text}: the fit has not converged; the model is used as it is"
        else:
            text = f"{w.category.__name__}: {text}"
        notes.append(f"note: {text}")
    return list(dict.fromkeys(notes))


def _name(name: Any) -> str:
    """A column name as printed: as it is when that reads unambiguously (not empty,
    printable, without leading or trailing spaces, not starting with a quote), otherwise as
    Python's ``repr`` writes it, quoted and escaped: ``' a'``, ``'\\x1b[31mred'``."""
    text = str(name)
    if text and text.isprintable() and text == text.strip() and text[0] not in "'\"":
        return text
    return repr(text)


def _print_outcome(
    proba: Any,
    predicted: Any,
    X_test: Any,
    y_test: Any,
    intervals: Any,
    path: Path,
    conformal: Any = None,
    never: Any = None,
) -> None:
    """The held-out accuracy and sparsity, the top importances and the features never read
    (TabNet), the conformal sets (with ``--confidence``), and the path the report was
    written to (as the report function returns it)."""
    accuracy = float((predicted == y_test.to_numpy()).mean())
    print(
        f"held-out accuracy {accuracy:.3f} on {len(X_test)} rows; "
        f"{(proba == 0).mean():.0%} of predict_proba entries exactly 0; "
        f"mean support {(proba > 0).sum(axis=1).mean():.2f} of {proba.shape[1]} classes"
    )
    _say_mask_lines(intervals, never, predicted, proba.shape[1])
    if conformal is not None:
        for line in conformal.lines():
            _say(line)
    _say(f"report written to {path}")


def _say_mask_lines(intervals: Any, never: Any, predicted: Any = None, n_classes: int = 0) -> None:
    """The top importances and the features never read (TabNet), for either task; then
    whether the fit collapsed on the held-out rows (it reads at most one column, or a
    classifier's ``predicted`` labels are one of its ``n_classes``)."""
    lines = []
    if intervals is not None:
        lines += _importance_lines(intervals)
    if never is not None:
        lines += _never_read_lines(never)
        lines += _collapse_lines(never, intervals, predicted, n_classes)
    for line in lines:
        _say(line)


def _collapse_lines(never: Any, intervals: Any, predicted: Any, n_classes: int) -> list[str]:
    """``warning: ...`` for each sign that the fit collapsed on the held-out rows, as the
    report's page shows it (:mod:`sk_entmax._tabnet.diagnostics`)."""
    from sk_entmax.report.masks import _collapse

    importances = None if intervals is None else intervals.importances
    collapse = _collapse(never, importances, predicted, n_classes)
    notes = collapse.notes(
        "this model",
        f"the {never.n_rows} held-out rows",
        _name,
        faithful=never.faithful,
        off="--no-faithful-masks",
        epochs="a larger --max-epochs",
        balanced=None,
    )
    return [f"warning: {text}" for _, text in notes]


def _print_regression_outcome(
    clf: Any,
    predicted: Any,
    X_test: Any,
    y_test: Any,
    intervals: Any,
    path: Path,
    never: Any = None,
) -> None:
    """A regressor's held-out R² and RMSE, the top importances, the features never read,
    and the path the report was written to."""
    from sk_entmax.report.regression import _fit_of

    fit = _fit_of(clf, predicted, y_test, "report")
    print(
        f"held-out R² {fit.r2_text(0)} and RMSE {fit.rmse[0]:.4g} on {len(X_test)} rows "
        f"(the true values' standard deviation there: {float(fit.y_true.std()):.4g})"
    )
    _say_mask_lines(intervals, never)
    _say(f"report written to {path}")


#: the features listed on the terminal (the report lists all of them)
_TERMINAL_FEATURES = 5


def _never_read_lines(never: Any) -> list[str]:
    """The share of (row, feature) pairs never read and, per row the report lists, the
    features its prediction never read (names as :func:`_name` prints them); for the
    paper's mask design, the note that zero masks prove nothing."""
    if not never.faithful:
        return [
            "never read: not available. "
            + never.not_proof(how="faithful masks (leave out --no-faithful-masks)")
        ]
    lines = [
        f"never read: {never.share_text()} over the {never.n_rows} held-out rows; with "
        "faithful masks these predictions provably did not depend on those features, "
        "whatever their values:"
    ]
    lines += [f"  row {label}: {text}" for label, text in never.row_lines(_name)]
    return lines


def _importance_lines(intervals: Any) -> list[str]:
    """The top features with their intervals, and whether the rows settle their ranking;
    the names as :func:`_name` prints them (escaped and quoted where need be)."""
    order = intervals.order()[:_TERMINAL_FEATURES]
    shown = {i: _name(intervals.feature_names[i]) for i in order}
    width = max(len(shown[i]) for i in order)
    lines = [
        f"feature importances on the {intervals.n_rows} held-out rows, "
        f"{100 * intervals.confidence:.0f}% interval over {intervals.n_resamples} bootstrap "
        f"resamples of them (top {len(order)} of {len(intervals.feature_names)}):"
    ]
    for i in order:
        lines.append(
            f"  {shown[i]:<{width}}  {100 * intervals.importances[i]:5.1f}% "
            f"({100 * intervals.low[i]:.1f}% to {100 * intervals.high[i]:.1f}%)"
        )
    lines.append(f"ranking: {intervals.verdict()}")
    return lines
