"""Issue 57, point 5 below 320 rows: the default TabNet against ``faithful_masks=False`` on
small tables, where too few rows are held out to rank columns on.

Run from the repository root::

    PYTHONPATH=. python3 benchmarks/bench_tabnet_small_tables.py --seeds 5 --json small.json

Six tables of 112 to 300 training rows, one stratified 75/25 split each (``random_state=0``):
scikit-learn's iris and wine, 400 rows of breast_cancer, and 400 rows of three of
``families.py``'s families (switch, product, additive; draw seed 0). Each seed fits the
default :class:`~sk_entmax.TabNetEntmaxClassifier` and ``faithful_masks=False`` at the
defaults (one thread), and records the test accuracy and AUC (one-vs-rest, macro, for more
than two classes), the share of (row, feature) test pairs ``never_read`` certifies, and
whether the selection's check put columns back (``restored_features_``). Printed per table:
the means, and default - False paired over the seeds, mean ± 2 SE. ``--max-epochs`` caps
both designs' epochs (a short fit); ``--json`` keeps every fit's figures and resumes a
stopped run; ``--model default`` or ``--model false`` fits one design only (to compare two
commits' defaults, run each commit's with its own ``--json`` and read them with ``--merge
A.json B.json``).

The figures are on ``doc/benchmarks/bench_tabnet_faithful.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from collections.abc import Iterator

import numpy as np
import pandas as pd
import torch
from families import make_family
from helpers import auc, paired_2se
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.model_selection import train_test_split

from sk_entmax import TabNetEntmaxClassifier

MODELS = ("default", "false")


def tables() -> Iterator[tuple[str, pd.DataFrame, np.ndarray]]:
    """Each table's name, features and labels."""
    for name, loader in (("iris", load_iris), ("wine", load_wine)):
        X, y = loader(return_X_y=True, as_frame=True)
        yield name, X, y.to_numpy()
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X, _, y, _ = train_test_split(X, y.to_numpy(), train_size=400, stratify=y, random_state=0)
    yield "cancer400", X, y
    for family in ("switch", "product", "additive"):
        X, y, _ = make_family(family, 400, seed=0)
        yield f"{family}400", pd.DataFrame(X), y


def fit(name: str, X, y, model: str, seed: int, max_epochs: int | None = None) -> dict:
    """One fit's figures on the table's test rows."""
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=0
    )
    params = {} if max_epochs is None else {"max_epochs": max_epochs}
    clf = TabNetEntmaxClassifier(
        random_state=seed, n_jobs=1, faithful_masks=model == "default", **params
    )
    clf.fit(X_train, y_train)
    proba = clf.predict_proba(X_test)
    predicted = clf.classes_[proba.argmax(1)]
    return {
        "set": name,
        "model": model,
        "seed": seed,
        "accuracy": float(np.mean(predicted == y_test)),
        "auc": auc(y_test, proba, clf.classes_),
        "certified": float(clf.never_read(X_test).mean()) if model == "default" else 0.0,
        "check": hasattr(clf, "restored_features_"),
    }


def summary(results: list[dict]) -> None:
    """Print the means per table and model, and default - False paired over the seeds."""
    by = {(r["set"], r["model"], r["seed"]): r for r in results}
    for name in dict.fromkeys(r["set"] for r in results):
        line = f"{name:12s}"
        for model in MODELS:
            rows = [r for (s, m, _), r in by.items() if s == name and m == model]
            if rows:
                line += (
                    f" | {model}: accuracy {np.mean([r['accuracy'] for r in rows]):.3f}"
                    f" AUC {np.mean([r['auc'] for r in rows]):.4f}"
                )
                if model == "default":
                    line += (
                        f" certified {np.mean([r['certified'] for r in rows]):.2f}"
                        f" check fired {sum(r['check'] for r in rows)}/{len(rows)}"
                    )
        seeds = sorted(
            k for (s, m, k) in by if s == name and m == "default" and (s, "false", k) in by
        )
        for metric in ("accuracy", "auc") if len(seeds) > 1 else ():
            mean, se2 = paired_2se(
                [by[name, "default", k][metric] for k in seeds],
                [by[name, "false", k][metric] for k in seeds],
            )
            line += f" | default - False {metric} {mean:+.4f} ± {se2:.4f}"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--model", choices=MODELS, nargs="+", default=list(MODELS))
    parser.add_argument("--max-epochs", type=int, help="both designs' max_epochs")
    parser.add_argument("--json", help="keep every fit's figures here (and resume from it)")
    parser.add_argument("--merge", nargs="+", help="print these runs' --json files only")
    args = parser.parse_args()
    if args.merge:
        summary([r for path in args.merge for r in json.load(open(path))])
        return
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    results = json.load(open(args.json)) if args.json and os.path.exists(args.json) else []
    done = {(r["set"], r["model"], r["seed"]) for r in results}
    for name, X, y in tables():
        for model in args.model:
            for seed in range(args.seeds):
                if (name, model, seed) not in done:
                    results.append(fit(name, X, y, model, seed, args.max_epochs))
                    if args.json:
                        with open(args.json, "w") as f:
                            json.dump(results, f)
    summary(results)


if __name__ == "__main__":
    main()
