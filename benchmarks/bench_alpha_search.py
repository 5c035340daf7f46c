"""Why GridSearchCV over EntmaxClassifier's alpha picks 1.0, and what to search instead.

For each data set (iris, wine, breast_cancer, digits) and each seed (the shuffle of a
5-fold stratified split), every alpha of {1.0, 1.25, 1.5, 2.0} (and, at alpha = 1.5, every
C of {0.01, 0.1, 10}; C = 1 is the alpha row) is cross-validated in a pipeline StandardScaler ->
EntmaxClassifier (L-BFGS, deterministic): held-out accuracy, the Tsallis 1.5 loss, the mean
support size and the share of exact zeros of ``predict_proba``, each the mean over the
folds; the table is the mean over seeds. Then what GridSearchCV over alpha picks, per seed,
by accuracy, by the Tsallis 1.5 loss, and by the sparsest within one standard error of the
best accuracy (``sk_entmax.metrics.sparsest_within_one_se``).

Usage: ``python benchmarks/bench_alpha_search.py --seeds 3 --out results.json``
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier
from sk_entmax.metrics import mean_support_size, tsallis_loss

DATA = {
    "iris": load_iris,
    "wine": load_wine,
    "breast_cancer": load_breast_cancer,
    "digits": load_digits,
}
ALPHAS = (1.0, 1.25, 1.5, 2.0)
CS = (0.01, 0.1, 1.0, 10.0)


def _cv(X, y, seed, **params):
    rows = []
    folds = StratifiedKFold(5, shuffle=True, random_state=seed)
    for train, test in folds.split(X, y):
        model = make_pipeline(StandardScaler(), EntmaxClassifier(random_state=0, **params))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X[train], y[train])
        proba = model.predict_proba(X[test])
        rows.append(
            (
                float(np.mean(model.classes_[proba.argmax(1)] == y[test])),
                float(tsallis_loss(y[test], proba, alpha=1.5, labels=model.classes_)),
                float(mean_support_size(proba)),
                float(np.mean(proba == 0)),
            )
        )
    return np.mean(rows, axis=0).tolist()


def _picks(n_seeds: int) -> dict[str, dict[str, tuple[list[float], float, float]]]:
    """What GridSearchCV over alpha picks, per data set and rule, over the seeds: the alphas
    picked (one per seed) and the mean CV accuracy and support size of the picks."""
    from sklearn.model_selection import GridSearchCV

    from sk_entmax.metrics import (
        make_support_size_scorer,
        make_tsallis_scorer,
        sparsest_within_one_se,
    )

    scoring = {
        "accuracy": "accuracy",
        "tsallis": make_tsallis_scorer(alpha=1.5),
        "support_size": make_support_size_scorer(),
    }
    rules = {
        "accuracy": lambda r: int(np.argmax(r["mean_test_accuracy"])),
        "tsallis 1.5": lambda r: int(np.argmax(r["mean_test_tsallis"])),
        "sparsest within one SE": sparsest_within_one_se("accuracy", "support_size"),
    }
    out = {}
    for name, load in DATA.items():
        X, y = load(return_X_y=True)
        chosen: dict[str, list[tuple[float, float, float]]] = {rule: [] for rule in rules}
        for seed in range(n_seeds):
            search = GridSearchCV(
                make_pipeline(StandardScaler(), EntmaxClassifier(random_state=0)),
                {"entmaxclassifier__alpha": list(ALPHAS)},
                scoring=scoring,
                refit=False,
                cv=StratifiedKFold(5, shuffle=True, random_state=seed),
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results = search.fit(X, y).cv_results_
            for rule, pick in rules.items():
                i = pick(results)
                chosen[rule].append(
                    (
                        ALPHAS[i],
                        float(results["mean_test_accuracy"][i]),
                        -float(results["mean_test_support_size"][i]),
                    )
                )
        out[name] = {
            rule: (
                [c[0] for c in picks],
                float(np.mean([c[1] for c in picks])),
                float(np.mean([c[2] for c in picks])),
            )
            for rule, picks in chosen.items()
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    out = {}
    start = time.perf_counter()
    for name, load in DATA.items():
        X, y = load(return_X_y=True)
        grid = [("alpha", a, {"alpha": a}) for a in ALPHAS]
        # C=1 at alpha 1.5 is the alpha grid's 1.5 row: not fitted, nor printed, twice
        grid += [("C at alpha 1.5", c, {"alpha": 1.5, "C": c}) for c in CS if c != 1.0]
        for kind, value, params in grid:
            runs = [_cv(X, y, seed, **params) for seed in range(args.seeds)]
            out[f"{name}|{kind}|{value}"] = np.mean(runs, axis=0).tolist()
            acc, tsallis, size, zeros = out[f"{name}|{kind}|{value}"]
            print(
                f"{name:14s} {kind:15s} {value:<6g} accuracy {acc:.3f}  tsallis1.5 "
                f"{tsallis:.4f}  support {size:.2f}  zeros {zeros:.1%}",
                flush=True,
            )
    picks = _picks(args.seeds)
    out["picks"] = picks
    for name, rules in picks.items():
        for rule, (chosen, acc, size) in rules.items():
            print(
                f"{name:14s} picked by {rule:24s} alpha {chosen}  accuracy {acc:.3f}  "
                f"support {size:.2f}",
                flush=True,
            )
    print(f"{time.perf_counter() - start:.0f} s")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(out, handle, indent=1)


if __name__ == "__main__":
    main()
