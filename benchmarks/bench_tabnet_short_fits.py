"""Issue 57, point 4: does a short faithful TabNet fit certify, and at what accuracy?

Run from the repository root::

    PYTHONPATH=. python3 benchmarks/bench_tabnet_short_fits.py --seeds 5 --mode sparsemax

Fits the default :class:`~sk_entmax.TabNetEntmaxClassifier` and ``faithful_masks=False``
for 15 epochs on 426 training rows of scikit-learn's breast_cancer (its first 12 columns,
plus a text column and a column with 10% gaps, so that the encoder and the missing
indicators take part), seed by seed, and prints per seed: both accuracies on the 143 test
rows, the share of (row, feature) test pairs ``never_read`` certifies, and the share of
rows whose ``predict_proba`` moved when the certified features took another row's values
(0 if the certificate holds); then the paired accuracy difference, mean ± 2 SE over the
seeds, and the mean certified share.

The figures are on ``doc/benchmarks/bench_tabnet_faithful.md``.
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np
import pandas as pd
import torch
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from sk_entmax import TabNetEntmaxClassifier


def table() -> tuple[pd.DataFrame, pd.DataFrame, pd.Series, pd.Series]:
    """The split: breast_cancer's first 12 columns, a text column, 10% gaps in one."""
    data = load_breast_cancer(as_frame=True)
    X = data.data.iloc[:, :12].copy()
    first = X.iloc[:, 0]
    X["kind"] = pd.Series(np.where(first > first.median(), "large", "small")).astype(object)
    X.iloc[np.random.default_rng(0).random(len(X)) < 0.1, 2] = np.nan
    return train_test_split(X, data.target, test_size=0.25, random_state=0, stratify=data.target)


def moved(model: TabNetEntmaxClassifier, X: pd.DataFrame, never: np.ndarray) -> float:
    """The share of rows whose probabilities move when their certified features take the
    next row's values."""
    donors = (np.arange(len(X)) + 1) % len(X)
    changed = X.copy()
    for j, column in enumerate(X.columns):
        other = X[column].iloc[donors].set_axis(X.index)
        changed[column] = X[column].mask(pd.Series(never[:, j], index=X.index), other)
    return float(np.any(model.predict_proba(changed) != model.predict_proba(X), axis=1).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--mode", default="sparsemax", help="entmax_mode of both designs")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    X_train, X_test, y_train, y_test = table()
    diffs, certified = [], []
    for seed in range(args.seeds):
        scores = {}
        for faithful in (True, False):
            model = TabNetEntmaxClassifier(
                random_state=seed, max_epochs=15, faithful_masks=faithful, entmax_mode=args.mode
            ).fit(X_train, y_train)
            scores[faithful] = float((model.predict(X_test) == y_test).mean())
            if faithful:
                never = model.never_read(X_test)
                certified.append(float(never.mean()))
                shift = moved(model, X_test, never)
        diffs.append(scores[True] - scores[False])
        print(
            f"seed {seed}: default {scores[True]:.3f}, faithful_masks=False {scores[False]:.3f},"
            f" certified {certified[-1]:.2f}, rows moved {shift:.3f}",
            flush=True,
        )
    d = np.array(diffs)
    two_se = 2 * d.std(ddof=1) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    print(
        f"{args.mode}: default - faithful_masks=False {d.mean():+.3f} ± {two_se:.3f}"
        f" (2 paired SE); certified {np.mean(certified):.2f} on average"
    )


if __name__ == "__main__":
    main()
