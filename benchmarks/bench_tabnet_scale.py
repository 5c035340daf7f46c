"""TabNetEntmaxClassifier against pytorch-tabnet 4.1 at scale: time per epoch, time to the best
validation score.

Run from the repository root (``pytorch-tabnet`` is needed by this benchmark only)::

    python3 -m pip install pytorch-tabnet==4.1.0
    PYTHONPATH=. python3 benchmarks/bench_tabnet_scale.py                 # 20k, 200k, 1M rows
    PYTHONPATH=. python3 benchmarks/bench_tabnet_scale.py --sizes 20000 --seeds 3
    PYTHONPATH=. python3 benchmarks/bench_tabnet_scale.py --quick         # checks the script

``--sizes`` sets the training rows, ``--seeds N`` runs seeds 0..N-1 of both libraries per
size, ``--max-epochs`` caps the epochs of both (default: 100, the default of both, at up to
50,000 rows; 20 at 200,000; 5 at 1,000,000, so that a run ends within the hour),
``--threads`` sets torch's threads for both (default: none set, torch's default, as a user
has it; ours then picks its own count per fit, as it does for a user), ``--device`` runs both
on a GPU (``cuda``), and ``--json PATH`` writes every fit's figures. ``--quick`` is 2,000
rows, 2 seeds and 3 epochs: it checks the script, its figures mean nothing.

The data: ``make_classification(n_features=20, n_informative=8, random_state=0)`` with the
training rows plus a test set of a fifth of them (at most 50,000), scaled by a
``StandardScaler`` fitted on the training rows. Both libraries train with early stopping on
the same footing: 10% of the training rows held out (stratified, ``random_state=seed``),
patience 20 (ours' default), the same epoch cap. Everything else is each library's default:

- ours ``TabNetEntmaxClassifier(early_stopping=True, random_state=s, max_epochs=E)``; its
  held-out rows are its own ``validation_fraction=0.1`` split, its best epoch the one of the
  lowest validation loss, whose weights it restores;
- pytorch-tabnet ``TabNetClassifier(seed=s, verbose=0)``, ``fit(X, y, eval_set=[held-out
  rows], max_epochs=E, patience=20)``; its best epoch is the one of the best validation
  metric (its default: AUC for two classes), whose weights it restores.

Figures per size and library, medians over the seeds: "epoch s", the median wall time of an
epoch (skorch's ``dur`` for ours, a callback around each pytorch-tabnet epoch, validation
included on both sides); "best epoch", the epoch (from 1) whose weights each keeps; "to best
s", the summed wall time of the epochs up to and including it; "fit s", the whole ``fit``
(its set-up, the epochs, and what follows them: restoring the best weights, and for ours the
feature importances); "test acc", the mean test accuracy. The ratios are ours over
pytorch-tabnet's, the median over the seeds of the per-seed ratios, where the two are fitted
one after the other in the same process (the order alternates with the seed). Goal of issue
14: "epoch" and "to best" ratios at most 1, on CPU and on CUDA.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
import warnings
from dataclasses import asdict, dataclass

import numpy as np
import torch

# the script's folder is on sys.path when it runs: the epoch timer is the shared one that
# bench_tabnet.py times pytorch-tabnet with too
from helpers import EpochTimer
from pytorch_tabnet.tab_model import TabNetClassifier
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sk_entmax import TabNetEntmaxClassifier

OURS = "ours"
REFERENCE = "pytorch-tabnet"
PATIENCE = 20
VALIDATION = 0.1
SIZES = (20_000, 200_000, 1_000_000)


def default_epochs(n_rows: int) -> int:
    """The epoch cap at ``n_rows`` rows when ``--max-epochs`` is not given."""
    if n_rows <= 50_000:
        return 100
    return 20 if n_rows <= 200_000 else 5


@dataclass
class Fit:
    """One library's fit at one size and seed."""

    library: str
    rows: int
    seed: int
    epochs: int
    epoch_seconds: float
    best_epoch: int
    to_best_seconds: float
    fit_seconds: float
    test_accuracy: float
    durations: list[float]  # every epoch's wall time, in order


def load(n_rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    n_test = min(n_rows // 5, 50_000)
    X, y = make_classification(
        n_samples=n_rows + n_test, n_features=20, n_informative=8, random_state=0
    )
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=n_test, stratify=y, random_state=0
    )
    scaler = StandardScaler().fit(X_train)
    return (
        scaler.transform(X_train).astype(np.float32),
        scaler.transform(X_test).astype(np.float32),
        y_train,
        y_test,
    )


def fit_ours(data, seed: int, epochs: int, device: str) -> Fit:
    X, X_test, y, y_test = data
    model = TabNetEntmaxClassifier(
        early_stopping=True,
        validation_fraction=VALIDATION,
        patience=PATIENCE,
        max_epochs=epochs,
        random_state=seed,
        device=device,
    )
    start = time.perf_counter()
    model.fit(X, y)
    elapsed = time.perf_counter() - start
    history = model.net_.history
    durations = list(history[:, "dur"])
    best = max(i for i, row in enumerate(history) if row.get("valid_loss_best"))
    return Fit(
        OURS,
        len(X),
        seed,
        len(durations),
        statistics.median(durations),
        best + 1,
        sum(durations[: best + 1]),
        elapsed,
        float(np.mean(model.predict(X_test) == y_test)),
        durations,
    )


def fit_reference(data, seed: int, epochs: int, device: str) -> Fit:
    X, X_test, y, y_test = data
    X_fit, X_valid, y_fit, y_valid = train_test_split(
        X, y, test_size=VALIDATION, stratify=y, random_state=seed
    )
    model = TabNetClassifier(seed=seed, verbose=0, device_name=device)
    clock = EpochTimer()
    start = time.perf_counter()
    # its "Stop training because ..." line goes to stderr, not into the table
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore", UserWarning)  # "best weights from epoch ..." and such
        model.fit(
            X_fit,
            y_fit,
            eval_set=[(X_valid, y_valid)],
            max_epochs=epochs,
            patience=PATIENCE,
            callbacks=[clock],
        )
    elapsed = time.perf_counter() - start
    best = int(model.best_epoch)
    return Fit(
        REFERENCE,
        len(X),
        seed,
        len(clock.durations),
        statistics.median(clock.durations),
        best + 1,
        sum(clock.durations[: best + 1]),
        elapsed,
        float(np.mean(model.predict(X_test) == y_test)),
        list(clock.durations),
    )


FITS = {OURS: fit_ours, REFERENCE: fit_reference}


def run(sizes: list[int], seeds: int, max_epochs: int | None, device: str) -> list[Fit]:
    warm = load(2000)
    for fit in FITS.values():  # first-call costs (lazy imports, allocators) are not timed
        fit(warm, 0, 1, device)
    fits = []
    for n_rows in sizes:
        data = load(n_rows)
        epochs = max_epochs or default_epochs(n_rows)
        for seed in range(seeds):
            names = list(FITS) if seed % 2 == 0 else list(FITS)[::-1]
            for name in names:
                fit = FITS[name](data, seed, epochs, device)
                fits.append(fit)
                print(
                    f"  {n_rows} rows, seed {seed}, {name}: {fit.epochs} epochs, "
                    f"{fit.epoch_seconds:.2f} s/epoch, best {fit.best_epoch}, "
                    f"to best {fit.to_best_seconds:.1f} s, acc {fit.test_accuracy:.4f}",
                    file=sys.stderr,
                    flush=True,
                )
    return fits


def _ratio(fits: list[Fit], field: str) -> float:
    """Median over the seeds of ours over the reference's."""
    ours = {f.seed: getattr(f, field) for f in fits if f.library == OURS}
    ref = {f.seed: getattr(f, field) for f in fits if f.library == REFERENCE}
    return statistics.median(ours[s] / ref[s] for s in ours)


def table_lines(fits: list[Fit]) -> list[str]:
    head = (
        f"{'rows':>9}{'library':>16}{'cap':>5}{'epochs':>8}{'epoch s':>9}{'best epoch':>12}"
        f"{'to best s':>11}{'fit s':>9}{'test acc':>10}{'epoch ratio':>13}{'to-best ratio':>15}"
    )
    lines = [head, "-" * len(head)]
    for n_rows in dict.fromkeys(f.rows for f in fits):
        at = [f for f in fits if f.rows == n_rows]
        cap = max(f.epochs for f in at)
        for name in FITS:
            mine = [f for f in at if f.library == name]
            line = (
                f"{n_rows:>9}{name:>16}{cap:>5}"
                f"{statistics.median(f.epochs for f in mine):>8.0f}"
                f"{statistics.median(f.epoch_seconds for f in mine):>9.2f}"
                f"{statistics.median(f.best_epoch for f in mine):>12.0f}"
                f"{statistics.median(f.to_best_seconds for f in mine):>11.1f}"
                f"{statistics.median(f.fit_seconds for f in mine):>9.1f}"
                f"{np.mean([f.test_accuracy for f in mine]):>10.4f}"
            )
            if name == OURS:
                line += f"{_ratio(at, 'epoch_seconds'):>13.2f}"
                line += f"{_ratio(at, 'to_best_seconds'):>15.2f}"
            lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="train rows")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per size (default 3)")
    parser.add_argument("--max-epochs", type=int, default=None, help="epoch cap of both")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: as is)")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--quick", action="store_true", help="checks the script only")
    parser.add_argument("--json", default=None, help="write every fit's figures to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.seeds = [2000], min(args.seeds, 2)
        args.max_epochs = args.max_epochs or 3
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    start = time.perf_counter()
    fits = run(args.sizes, args.seeds, args.max_epochs, args.device)
    print(
        f"\ntorch {torch.__version__}, {torch.get_num_threads()} thread(s) at the start, "
        f"device {args.device}, {args.seeds} seed(s), patience {PATIENCE}, "
        f"{VALIDATION:.0%} held out{'; QUICK: the figures mean nothing' if args.quick else ''}"
    )
    print("\n".join(table_lines(fits)))
    print(f"total {time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"args": vars(args), "fits": [asdict(f) for f in fits]}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
