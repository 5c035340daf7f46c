"""The ``python -m sk_entmax demo`` job: exact zeros, side by side (about 20 s on an idle
2-core machine).

It needs no network and no files: the data is scikit-learn's bundled wine set (178 wines,
13 chemical measurements, 3 cultivars). It fits a softmax baseline, SparsemaxClassifier,
EntmaxClassifier and TabNetEntmaxClassifier on the same split, prints a table of accuracy,
exact zeros, support size and fit time, a few probability rows, and writes a feature-mask
report (HTML) for the TabNet model.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import torch

from sk_entmax._engine.lbfgs import Lbfgs
from sk_entmax.cli._printing import _printable, _warning_notes
from sk_entmax.entmax import entmax15, sparsemax

__all__ = ["default_report_path", "run_demo"]


def default_report_path() -> Path:
    """Where the demo writes its report unless told otherwise: a new folder of its own.

    Each call creates a fresh folder in the system's temp folder with
    :func:`tempfile.mkdtemp`, readable and writable by the current user only, and returns
    the report's path inside it. A fixed path there would let another user of a shared
    machine create it first, as a link to one of your files, for the demo to overwrite.

    Returns
    -------
    pathlib.Path
        ``<new folder>/wine_tabnet_report.html`` (the file does not exist yet).
    """
    return Path(tempfile.mkdtemp(prefix="sk_entmax_demo_")) / "wine_tabnet_report.html"


def _fmt(p: float) -> str:
    """A probability in at most 5 characters; an exact 0 prints as a bare "0"."""
    if p == 0:
        return "0"
    if p == 1:
        return "1"
    if p < 0.0005:
        return f"{p:.0e}"
    return f"{p:.3f}"


class _Progress:
    """Prints ``label ...`` then the elapsed time; on a terminal a ticker keeps it moving."""

    def __init__(self, label: str, out: TextIO, *, bar: bool = False) -> None:
        self.label, self.out, self.bar = label, out, bar
        # a model that shows its own progress bar (on standard error) gets no ticker
        self.tty = hasattr(out, "isatty") and out.isatty() and not bar
        self.done = threading.Event()
        self.note = ""

    def _tick(self) -> None:
        while not self.done.wait(0.5):
            elapsed = time.perf_counter() - self.start
            self.out.write(f"\r  {self.label} ... {elapsed:.0f} s")
            self.out.flush()

    def __enter__(self) -> _Progress:
        self.start = time.perf_counter()
        self.out.write(f"  {self.label} ..." + ("\n" if self.bar else ""))
        self.out.flush()
        if self.tty:
            self.thread = threading.Thread(target=self._tick, daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start
        self.done.set()
        if self.tty:
            self.thread.join()
            self.out.write(f"\r  {self.label} ...")
        elif self.bar:
            self.out.write(f"  {self.label} ...")
        note = f", {self.note}" if self.note else ""
        self.out.write(f" {self.seconds:.1f} s{note}\n")
        self.out.flush()


@dataclass
class _Result:
    name: str
    model: Any
    seconds: float
    proba: np.ndarray
    accuracy: float


def _mappings(out: TextIO) -> None:
    x = torch.tensor([-2.0, 0.0, 0.5])
    row = "  ".join

    def show(p: torch.Tensor) -> str:
        return row(f"{_fmt(v):>6}" for v in p.tolist())

    print("Scores [-2, 0, 0.5] turned into probabilities:", file=out)
    print(f"  softmax    {show(torch.softmax(x, 0))}   never exactly 0", file=out)
    print(f"  entmax15   {show(entmax15(x, dim=0))}   an exact zero", file=out)
    print(f"  sparsemax  {show(sparsemax(x, dim=0))}   an exact zero", file=out)


def _models(quick: bool, progress: bool = False) -> list[tuple[str, Any, bool]]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sk_entmax import EntmaxClassifier, SparsemaxClassifier, TabNetEntmaxClassifier

    tabnet: dict[str, Any] = {"max_epochs": 3} if quick else {}
    if progress:  # its fit is the long one: a progress bar with the time left
        tabnet["verbose"] = 1
    return [
        (
            "softmax: LogisticRegression",
            make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
            False,
        ),
        (
            "SparsemaxClassifier",
            make_pipeline(StandardScaler(), SparsemaxClassifier(random_state=0)),
            False,
        ),
        (
            "EntmaxClassifier (alpha 1.5)",
            make_pipeline(StandardScaler(), EntmaxClassifier(random_state=0)),
            False,
        ),
        (
            "TabNetEntmaxClassifier",
            TabNetEntmaxClassifier(entmax_mode="sparsemax", random_state=0, **tabnet),
            True,
        ),
    ]


def _unit(model: Any) -> str:
    """What ``n_iter_`` counts: L-BFGS iterations or epochs."""
    lbfgs = isinstance(model.net_.optimizer_, Lbfgs)
    return "L-BFGS iterations" if lbfgs else "epochs"


def _pick_rows(sparse_proba: np.ndarray, n: int = 5) -> list[int]:
    """A few test rows, some with one class left and some with several."""
    support = (sparse_proba > 0).sum(axis=1)
    single = np.flatnonzero(support == 1)[:2].tolist()
    several = np.flatnonzero(support > 1)[: n - len(single)].tolist()
    rows = sorted(single + several)
    extra = [i for i in range(len(support)) if i not in rows]
    return sorted(rows + extra[: n - len(rows)])


def run_demo(
    out_path: str | Path | None = None,
    *,
    quick: bool = False,
    out: TextIO | None = None,
    progress: bool = True,
) -> Path | None:
    """Fit four classifiers on the wine data, print how sparse they are, write a report.

    Parameters
    ----------
    out_path : str or path-like, default=None
        Where to write the TabNet feature-mask report (HTML); None is
        :func:`default_report_path`, a new private folder. A symbolic link is refused.
    quick : bool, default=False
        Train for a handful of epochs only (a smoke test; the numbers mean little).
    out : file-like, default=None
        Where to print (standard output when None).
    progress : bool, default=True
        Show the TabNet fit's progress bar with the time left (``verbose=1``, on standard
        error); the other models take a second or two.

    Returns
    -------
    pathlib.Path or None
        The report written, or None when matplotlib is missing (the demo says so and
        carries on).

    Raises
    ------
    ValueError
        If ``out_path`` is a symbolic link.
    OSError
        If the report cannot be written there.
    """
    out = sys.stdout if out is None else out
    # the estimators pick their torch threads themselves (their n_jobs parameter)
    return _run(out_path, quick, out, progress)


def _run(
    out_path: str | Path | None, quick: bool, out: TextIO, progress: bool = True
) -> Path | None:
    begin = time.perf_counter()
    # torch imports its compiler stack the first time an optimizer is built (seconds): pay
    # for it at start-up, so that the first model's fit time measures training only
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    print("sk_entmax demo: probabilities with exact zeros\n", file=out)
    _mappings(out)

    X, X_train, X_test, y_train, y_test = _wine(quick, out)
    results = _fit_models(_models(quick, progress), X_train, y_train, X_test, y_test, out)
    _print_table(results, X_test, out)
    tabnet = results[-1].model
    _print_masks(tabnet, X, X_test, out)
    _print_probabilities(results, X_test, y_test, out)

    path = _report(tabnet, X_test, y_test, out_path, out)
    print(f"\nDone in {time.perf_counter() - begin:.0f} s.", file=out)
    return path


def _wine(quick: bool, out: TextIO) -> tuple[Any, Any, Any, Any, Any]:
    """The wine data and its stratified 75/25 split, described in a line or two."""
    from sklearn.datasets import load_wine
    from sklearn.model_selection import train_test_split

    data = load_wine(as_frame=True)
    X = data.frame[data.feature_names]
    y = data.target_names[data.target.to_numpy()]
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=0
    )
    print(
        f"\nThe wine data bundled with scikit-learn: {len(X)} wines, {X.shape[1]} chemical "
        f"measurements, 3 cultivars.\nTraining on {len(X_train)} wines, testing on "
        f"{len(X_test)}{' (quick mode: a few epochs only)' if quick else ''}:",
        file=out,
    )
    return X, X_train, X_test, y_train, y_test


def _fit_models(
    models: list[tuple[str, Any, bool]],
    X_train: Any,
    y_train: Any,
    X_test: Any,
    y_test: Any,
    out: TextIO,
) -> list[_Result]:
    """Fit each model with a progress line, and score it on the test rows."""
    results = []
    for i, (name, model, is_tabnet) in enumerate(models, start=1):
        final = model if is_tabnet else model[-1]
        bar = getattr(final, "verbose", 0) == 1 and is_tabnet
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with _Progress(f"[{i}/{len(models)}] {name:<28}", out, bar=bar) as progress:
                model.fit(X_train, y_train)
                final = model if is_tabnet else model[-1]
                if hasattr(final, "net_"):
                    progress.note = f"{final.n_iter_} {_unit(final)}"
        for note in _warning_notes(caught):  # one line of ours each, not a raw warning
            print(f"      {_printable(note)}", file=out)
        proba = model.predict_proba(X_test)
        accuracy = float(np.mean(model.classes_[proba.argmax(axis=1)] == y_test))
        results.append(_Result(name, model, progress.seconds, proba, accuracy))
    return results


def _print_table(results: list[_Result], X_test: Any, out: TextIO) -> None:
    """Accuracy, exact zeros, mean support and fit time of each model, one row each."""
    print(f"\nOn the {len(X_test)} test wines:", file=out)
    header = f"  {'model':<30}{'accuracy':>9}{'exact zeros':>13}{'mean support':>14}"
    header += f"{'fit time':>10}"
    print(header, file=out)
    print("  " + "-" * (len(header) - 2), file=out)
    for r in results:
        zeros = float((r.proba == 0).mean())
        support = float((r.proba > 0).sum(axis=1).mean())
        print(
            f"  {r.name:<30}{r.accuracy:>9.3f}{zeros:>13.1%}{support:>11.2f} of 3"
            f"{r.seconds:>8.1f} s",
            file=out,
        )
    print(
        "  (exact zeros: share of predict_proba entries that are exactly 0; mean support: "
        "classes\n  with probability > 0 per wine)",
        file=out,
    )


def _print_masks(tabnet: Any, X: Any, X_test: Any, out: TextIO) -> None:
    """How many measurements TabNet's feature masks read per decision step, on average."""
    _, masks = tabnet.explain(X_test)
    used = np.mean([(m > 0).sum(axis=1).mean() for m in masks.values()])
    mask_zeros = np.mean([(m == 0).mean() for m in masks.values()])
    print(
        f"  TabNet's feature masks: each decision step reads {used:.1f} of {X.shape[1]} "
        f"measurements\n  per wine on average ({mask_zeros:.0%} of mask entries exactly 0).",
        file=out,
    )
    if tabnet.net_.module_.tabnet.faithful_masks:  # the default: zeros are a certificate
        never = np.asarray(tabnet.never_read(X_test), dtype=bool)
        print(
            f"  Never read, provably: {never.mean():.0%} of the (wine, measurement) pairs; "
            "their values\n  cannot change these predictions (faithful masks).",
            file=out,
        )


def _print_probabilities(results: list[_Result], X_test: Any, y_test: Any, out: TextIO) -> None:
    """The probabilities of a few test wines under softmax, sparsemax and entmax 1.5."""
    rows = _pick_rows(results[1].proba)
    shown = results[:3]
    classes = [str(c) for c in results[0].model.classes_]
    cell = max(7, *(len(c) for c in classes)) + 1
    block = cell * len(classes) + 2
    print(
        f"\nPredicted probabilities of {len(rows)} test wines; "
        '"0" is an exact zero, not a rounded one:',
        file=out,
    )
    names = ["softmax", "sparsemax", "entmax 1.5"]
    true_width = max(6, *(len(str(v)) for v in y_test)) + 1
    lead = " " * (2 + 5 + 2 + true_width + 1)
    print(lead + "".join(f"{n:<{block}}" for n in names).rstrip(), file=out)
    print(
        f"  {'wine':>5}  {'true':<{true_width}}"
        + "".join(("".join(f"{c:>{cell}}" for c in classes) + "  ") for _ in shown).rstrip(),
        file=out,
    )
    for i in rows:
        cells = ["".join(f"{_fmt(p):>{cell}}" for p in r.proba[i]) + "  " for r in shown]
        line = f"  {X_test.index[i]:>5}  {y_test[i]:<{true_width}}" + "".join(cells)
        print(line.rstrip(), file=out)


def _report(tabnet, X_test, y_test, out_path, out: TextIO) -> Path | None:
    from sk_entmax.report import _MISSING_MATPLOTLIB, feature_mask_report

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"\nNo feature-mask report: {_MISSING_MATPLOTLIB}", file=out)
        return None
    target = Path(out_path) if out_path is not None else default_report_path()
    if target.is_symlink():
        raise ValueError(
            f"{target} is a symbolic link; the demo does not write through one (it would "
            "overwrite the link's target): remove it or choose another path"
        )
    print(file=out)
    with _Progress("Writing the TabNet feature-mask report", out):
        path = feature_mask_report(
            tabnet,
            X_test,
            target,
            y=y_test,
            title="sk_entmax demo: TabNet feature masks on the wine test set",
        )
    print(f"Feature-mask report: {path}\nOpen it in a browser: {path.as_uri()}", file=out)
    return path
