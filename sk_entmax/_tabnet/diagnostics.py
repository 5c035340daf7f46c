"""Whether a fitted TabNet collapsed: it reads at most one column, or (a classifier) predicts
one class for every row.

One job: find these two signs on some rows and say them in words. ``fit`` warns with them
on its training rows (:func:`warn_if_collapsed`, called once training is over); the
interpretability report (:mod:`sk_entmax.report`) shows them on the rows it reports on
(:meth:`Collapse.of_rows`). A column counts as read when its importance on the rows is above
0 and, in a model fitted with ``faithful_masks=True``, some row's prediction reads it (it is
not certified never read on every row).

Only numpy is imported here; torch is imported by the fit-time check, which runs the
fitted network.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Collapse", "needed_note", "restored_note", "warn_if_collapsed", "warn_if_restored"]


@dataclass(frozen=True)
class Collapse:
    """What some rows show of a collapsed fit.

    Attributes
    ----------
    feature_names : list of str
        One name per feature, in the columns' order.
    n_rows : int
        The rows looked at.
    read : list of int
        The positions of the features read on those rows: importance above 0 and, with
        ``certified``, not never read on every row.
    certified : bool
        Whether ``never_read`` certified the features outside ``read`` (a model fitted with
        ``faithful_masks=True``); False when only their importance is 0.
    one_class : str or None
        The one class predicted for every row (as ``repr`` writes it), when the model has
        several; None when the rows get several classes, for a regressor or a multi-label
        target, or when nothing was predicted.
    n_classes : int
        The classes the model was fitted on (0 for a regressor).
    """

    feature_names: list[str]
    n_rows: int
    read: list[int]
    certified: bool
    one_class: str | None = None
    n_classes: int = 0

    @classmethod
    def of_rows(
        cls,
        feature_names: list[str],
        n_rows: int,
        importances: np.ndarray,
        ever_read: np.ndarray | None = None,
        predicted: np.ndarray | None = None,
        n_classes: int = 0,
    ) -> Collapse:
        """The collapse signs of some rows, from what was computed on them.

        Parameters
        ----------
        feature_names : list of str
            One name per feature.
        n_rows : int
            The rows looked at.
        importances : ndarray of shape (n_features,)
            Each feature's share of the attributions on the rows (or ``feature_importances_``).
        ever_read : ndarray of bool of shape (n_features,), default=None
            Whether some row reads the feature (``~never_read(X).all(axis=0)``), for a model
            fitted with ``faithful_masks=True``; None for the paper's design, whose zeros
            certify nothing.
        predicted : ndarray of shape (n_rows,), default=None
            The labels ``predict`` gives the rows (a single-label classifier); None for a
            regressor or a multi-label target.
        n_classes : int, default=0
            The classes the model was fitted on, with ``predicted``.

        Returns
        -------
        Collapse
            What the rows show; :meth:`messages` words it.
        """
        read = np.asarray(importances) > 0
        if ever_read is not None:
            read &= np.asarray(ever_read, dtype=bool)
        one_class = None
        if predicted is not None and len(predicted) and n_classes > 1:
            seen = np.unique(np.asarray(predicted))
            if len(seen) == 1:
                one_class = repr(seen[0].item() if hasattr(seen[0], "item") else seen[0])
        return cls(
            feature_names=list(feature_names),
            n_rows=int(n_rows),
            read=np.flatnonzero(read).tolist(),
            certified=ever_read is not None,
            one_class=one_class,
            n_classes=int(n_classes),
        )

    @property
    def one_column(self) -> bool:
        """Whether at most one feature is read, of a table with several."""
        return len(self.feature_names) > 1 and len(self.read) <= 1

    def notes(
        self,
        owner: str,
        rows: str,
        name: Callable[[str], str] = repr,
        *,
        faithful: bool = True,
        off: str = "faithful_masks=False",
        epochs: str = "more max_epochs",
        balanced: str | None = "class_weight='balanced'",
    ) -> list[tuple[str, str]]:
        """The signs in words: a headline and a message for each (none when the fit did
        not collapse).

        Parameters
        ----------
        owner : str
            Who reads and predicts: ``"TabNetEntmaxClassifier's fit"``, ``"This model"``.
        rows : str
            The rows looked at: ``"the 500 training rows"``.
        name : callable, default=repr
            Writes a feature name (quoted and escaped by default).
        faithful : bool, default=True
            Whether the model was fitted with ``faithful_masks=True`` (the advice differs).
        off : str, default="faithful_masks=False"
            How to fit the paper's design, which keeps every column (the command line's
            ``--no-faithful-masks``).
        epochs : str, default="more max_epochs"
            How to train longer.
        balanced : str or None, default="class_weight='balanced'"
            How to weight the classes by their counts; None where it cannot be asked for.

        Returns
        -------
        list of (str, str)
            At most two (headline, message) pairs: the columns read, the one class predicted.
        """
        said = []
        d = len(self.feature_names)
        others = (
            "is provably never read by any of their predictions (never_read)"
            if self.certified
            else "has importance exactly 0 on them"
        )
        advice = (
            f"If other columns carry signal, refit with {off}, which keeps every column in "
            f"the model (its zero masks certify nothing), or with {epochs}."
            if faithful
            else f"If other columns carry signal, refit with {epochs} or a lower lambda_sparse."
        )
        if self.one_column and self.read:
            column = name(self.feature_names[self.read[0]])
            said.append(
                (
                    f"It reads one column of {d}.",
                    f"{owner} reads one column of {d}, {column}, on {rows}: every other "
                    f"feature {others}, so the predictions depend on {column} alone. {advice}",
                )
            )
        elif self.one_column:
            said.append(
                (
                    f"It reads none of its {d} columns.",
                    f"{owner} reads none of the {d} columns on {rows}: every feature "
                    f"{others}, so every row gets the same prediction. {advice}",
                )
            )
        if self.one_class is not None:
            tries = [f"{balanced} if the classes are imbalanced"] if balanced else []
            tries += [f"{off}, which keeps every column"] if faithful else []
            tries += [f"{epochs} if the fit was short"]
            said.append(
                (
                    "It predicts one class.",
                    f"{owner} predicts one class, {self.one_class}, for every one of {rows}, "
                    f"of the {self.n_classes} classes it was fitted on: no other class is ever "
                    "predicted there, and the accuracy is that class's share. Try: "
                    + "; ".join(tries)
                    + ".",
                )
            )
        return said

    def messages(
        self,
        owner: str,
        rows: str,
        name: Callable[[str], str] = repr,
        *,
        faithful: bool = True,
        off: str = "faithful_masks=False",
        epochs: str = "more max_epochs",
        balanced: str | None = "class_weight='balanced'",
    ) -> list[str]:
        """The messages of :meth:`notes`, without their headlines (same parameters).

        Parameters
        ----------
        owner, rows, name, faithful, off, epochs, balanced
            As for :meth:`notes`.

        Returns
        -------
        list of str
            At most two messages: the columns read, the one class predicted.
        """
        notes = self.notes(
            owner, rows, name, faithful=faithful, off=off, epochs=epochs, balanced=balanced
        )
        return [text for _, text in notes]


#: the package's folder: frames whose file lies under it are not the user's
_PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")


def _user_stacklevel() -> int:
    """``stacklevel`` for a ``warnings.warn`` in the function that calls this one: the first
    frame outside the package (the user's call of ``fit``)."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def restored_note(
    estimator: Any, names: Sequence[str] | None = None, name: Callable[[str], str] = repr
) -> tuple[str, str] | None:
    """What to say when the check at the end of a faithful fit's column selection put
    columns back (the estimator has ``restored_features_``): (headline, message); None
    otherwise.

    Parameters
    ----------
    estimator : TabNetEntmaxClassifier or TabNetEntmaxRegressor
        Fitted.
    names : sequence of str, default=None
        One name per feature; default ``feature_names_in_``, else ``x0``, ``x1``, ...
    name : callable, default=repr
        How a column's name is written.
    """
    restored = getattr(estimator, "restored_features_", None)
    if restored is None:
        return None
    d = int(estimator.n_features_in_)
    names = _names_of(estimator, names)
    first, latest = (float(v) for v in estimator.selection_losses_)
    dropped = estimator.net_.module_.tabnet.dropped_columns()
    if not dropped:
        return (
            "Every column was kept.",
            f"{type(estimator).__name__}'s column selection raised the loss on the training "
            f"rows it held out while it ran (from {first:.4g} to {latest:.4g}), so the fit "
            f"put back the {len(restored)} of {d} columns it had left out "
            f"({_listed(restored, names, name)}) and trained on with every column: the model "
            "keeps what they carry, and no feature is certified never read (as with "
            "faithful_masks=False).",
        )
    return (
        "The first step reads every kept column.",
        f"{type(estimator).__name__}'s column selection raised the loss on the training rows "
        f"it held out while its first step narrowed (from {first:.4g} to {latest:.4g}; the "
        f"columns it dropped had not raised it), so the fit put {_columns(len(restored))} "
        f"that step had left to the later steps ({_listed(restored, names, name)}) back "
        f"into it and trained on: every row reads them, and only the dropped "
        f"{_columns(len(dropped))} ({_listed(dropped, names, name)}) "
        f"{'is' if len(dropped) == 1 else 'are'} certified never read, for every row alike.",
    )


def needed_note(
    estimator: Any, names: Sequence[str] | None = None, name: Callable[[str], str] = repr
) -> str | None:
    """What to say when a faithful fit's column selection kept columns because the model's
    loss still depended on them (the estimator's ``needed_features_`` is not empty); None
    otherwise (no selection ran, or its residual test kept none).

    Parameters
    ----------
    estimator : TabNetEntmaxClassifier or TabNetEntmaxRegressor
        Fitted.
    names : sequence of str, default=None
        One name per feature; default ``feature_names_in_``, else ``x0``, ``x1``, ...
    name : callable, default=repr
        How a column's name is written.
    """
    needed = getattr(estimator, "needed_features_", None)
    if needed is None or not len(needed):
        return None
    names = _names_of(estimator, names)
    columns = [int(c) for c in needed]
    return (
        f"{type(estimator).__name__}'s column selection kept {_columns(len(columns))} "
        f"({_listed(columns, names, name)}) because the model's loss on the fit's rows still "
        "depended on them (a score test of each row's loss gradient, at a family-wise level "
        "of 1%): a drop would have left out signal the model had not yet learned. "
        f"{'It stays' if len(columns) == 1 else 'They stay'} open to the model, so "
        f"{'it is' if len(columns) == 1 else 'they are'} certified never read only for the "
        "rows whose masks leave them out."
    )


def _names_of(estimator: Any, names: Sequence[str] | None) -> Sequence[str]:
    """``names``, else the estimator's ``feature_names_in_``, else ``x0``, ``x1``, ..."""
    if names is not None:
        return names
    d = int(estimator.n_features_in_)
    return list(getattr(estimator, "feature_names_in_", [f"x{i}" for i in range(d)]))


def _columns(n: int) -> str:
    return f"{n} column" if n == 1 else f"{n} columns"


def _listed(columns: Sequence[int], names: Sequence[str], name: Callable[[str], str]) -> str:
    """The names of up to 8 columns, then how many more."""
    shown = ", ".join(name(str(names[i])) for i in columns[:8])
    return shown + (f" and {len(columns) - 8} more" if len(columns) > 8 else "")


def warn_if_restored(estimator: Any) -> None:
    """Warn (a UserWarning) when the check at the end of a faithful fit's column selection
    put columns back (see :func:`restored_note`).

    Parameters
    ----------
    estimator : TabNetEntmaxClassifier or TabNetEntmaxRegressor
        Just fitted.

    Warns
    -----
    UserWarning
        Naming the columns put back and the two held-out losses.
    """
    note = restored_note(estimator)
    if note is not None:
        warnings.warn(note[1], UserWarning, stacklevel=_user_stacklevel())


def warn_if_collapsed(estimator: Any, X: np.ndarray) -> None:
    """Warn (a UserWarning per sign) when a fitted TabNet collapsed on its training rows.

    One pass of the fitted network over the (encoded) training rows ``X``, block by block:
    the features each row never reads (with ``faithful_masks=True``) and, for a single-label
    classifier, its predictions; ``feature_importances_`` is the fit's own. A ``partial_fit``
    chunk is not checked: a stream's first chunks read little by design, and the pass would
    add to every chunk. In a data-parallel fit each process checks its own rows against the
    importances of all of them.

    Parameters
    ----------
    estimator : TabNetEntmaxClassifier, TabNetEntmaxRegressor or TabNetPretrainer
        Just fitted: ``net_`` and ``feature_importances_`` are set (only a classifier has
        classes to predict).
    X : ndarray of shape (n_samples, n_features)
        The training rows, encoded as the network takes them.

    Warns
    -----
    UserWarning
        When the fit reads at most one of several columns (naming it), or predicts one
        class for every training row while it was fitted on several (naming the class).
    """
    if "_weight_seen_" in vars(estimator):  # set by partial_fit only, before this call
        return
    import torch

    faithful = bool(estimator.net_.module_.tabnet.faithful_masks)
    classes = getattr(estimator, "classes_", None)
    classify = classes is not None and not getattr(estimator, "multilabel_", False)
    n_classes = 0 if classes is None else len(classes)

    def block(module: torch.nn.Module, rows: torch.Tensor) -> tuple[Any, Any]:
        with torch.no_grad():
            ever = (~module.tabnet.never_read(rows)).any(dim=0).cpu().numpy() if faithful else None
            if not classify:
                return ever, None
            output = module(X=rows)
            scores = output[0] if isinstance(output, tuple) else output
            proba = module.proba(scores)[:, :n_classes]
            return ever, np.bincount(proba.argmax(dim=1).cpu().numpy(), minlength=n_classes)

    blocks = estimator._tabnet_blocks(X, block, 1)
    if not blocks:
        return
    ever_read = np.any([b[0] for b in blocks], axis=0) if faithful else None
    predicted = None
    if classify:
        counts = np.sum([b[1] for b in blocks], axis=0)
        predicted = np.repeat(np.asarray(classes), counts)
    names = getattr(estimator, "feature_names_in_", None)
    names = [str(n) for n in names] if names is not None else None
    collapse = Collapse.of_rows(
        names or [str(j) for j in range(X.shape[1])],
        X.shape[0],
        estimator.feature_importances_,
        ever_read,
        predicted,
        n_classes if classify else 0,
    )

    def column(text: str) -> str:
        return f"column {text!r}" if names is not None else f"column {text}"

    owner = f"{type(estimator).__name__}'s fit"
    rows = f"the {X.shape[0]} training rows"
    for message in collapse.messages(owner, rows, column, faithful=faithful):
        warnings.warn(message, UserWarning, stacklevel=_user_stacklevel())
