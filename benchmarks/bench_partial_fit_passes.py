"""Plain partial_fit passes over blocks against the in-memory fit (issue 60.7).

A user of dask-ml's ``Incremental``, or of a plain loop, calls ``partial_fit`` block after
block, pass after pass, with no schedule of their own. This measures where that ends, on two
kinds of data (``_data``): the training rows cut into blocks of ``--block`` rows and passed
``--passes`` times in order, one ``partial_fit`` call per block; test accuracy (100,000
held-out rows) after each pass,
against ``fit`` on all the training rows (L-BFGS) and against
``SGDClassifier(loss="log_loss")`` streamed the same way (scikit-learn's reference).

    python benchmarks/bench_partial_fit_passes.py             # 15 blocks of 20,000, 3 passes
    python benchmarks/bench_partial_fit_passes.py --seeds 0 1 2

"sparsemax" and "entmax" are the estimators at their defaults (``average=True``: they
predict with the average of the stream's weights; the schedule is
``sk_entmax._stream.LINEAR_SCHEDULE``); "sparsemax-last" and "entmax-last" set
``average=False`` (the last iterate predicts); "sparsemax-blocks" is ``fit_blocks`` at the
defaults on the same blocks as a Dask array, one pass
per call (``passes=1, random_state=p`` for pass ``p``: the blocks in a shuffled order, no
schedule of its own). The last column is the seconds of the 45 calls (``--passes`` times
the blocks); the summary gives them per call. After the rows, a summary per data set: the
mean gap after the last pass over the seeds, each model against the first one named, as
the mean of the paired differences and its standard error (seed by seed, the same data).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import SGDClassifier
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier
from sk_entmax.scale_out import fit_blocks


def _data(kind: str, rows: int, seed: int):
    """``--rows`` training rows and 100,000 test rows of ``kind``: "rule", 100 standard
    normal columns and 20 classes from a fixed linear rule (``argmax(X @ W)``, as
    ``bench_scale_out.py``); "mixed", ``make_classification`` (20 columns, 10 informative,
    5 classes), standardized on the training rows; "binary", the same with 2 classes."""
    if kind == "rule":
        W = np.random.default_rng(1).standard_normal((100, 20))
        X = np.random.default_rng(seed).standard_normal((rows + 100_000, 100))
        y = np.argmax(X @ W, axis=1)
        return X[:rows], y[:rows], X[rows:], y[rows:]
    X, y = make_classification(
        n_samples=rows + 100_000,
        n_features=20,
        n_informative=10,
        n_classes=2 if kind == "binary" else 5,
        random_state=seed,
    )
    X_train, y_train, X_test, y_test = X[:rows], y[:rows], X[rows:], y[rows:]
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), y_train, scaler.transform(X_test), y_test


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--block", type=int, default=20_000)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument(
        "--data",
        choices=["rule", "mixed", "binary"],
        nargs="+",
        default=["binary", "mixed", "rule"],
    )
    parser.add_argument(
        "--models",
        nargs="+",
        choices=[
            "sparsemax",
            "sparsemax-last",
            "sparsemax-blocks",
            "entmax",
            "entmax-last",
            "sgd",
        ],
        default=["sparsemax", "sparsemax-last", "sparsemax-blocks", "entmax", "sgd"],
    )
    args = parser.parse_args()
    makers = {
        "sparsemax": lambda s: SparsemaxClassifier(random_state=s),
        "sparsemax-last": lambda s: SparsemaxClassifier(random_state=s, average=False),
        "sparsemax-blocks": lambda s: SparsemaxClassifier(random_state=s),
        "entmax": lambda s: EntmaxClassifier(random_state=s),
        "entmax-last": lambda s: EntmaxClassifier(random_state=s, average=False),
        "sgd": lambda s: SGDClassifier(loss="log_loss", random_state=s),
    }
    gaps: dict[tuple[str, str], dict[int, float]] = {}
    seconds_per_call: dict[tuple[str, str], list[float]] = {}
    print("data | seed | model | in memory | after each pass | gap after the last (points) | s")
    for kind, seed in [(k, s) for k in args.data for s in args.seeds]:
        X, y, X_test, y_test = _data(kind, args.rows, seed)
        classes = np.unique(y)
        starts = range(0, args.rows, args.block)
        if any(name.endswith("-blocks") for name in args.models):
            import dask.array as da

            X_dask = da.from_array(X, chunks=(args.block, X.shape[1]))
            y_dask = da.from_array(y, chunks=args.block)
        memories: dict[str, float] = {}
        for name in args.models:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # the in-memory fit does not depend on average: one per estimator class
                family = name.split("-")[0]
                if family not in memories:
                    memories[family] = makers[family](seed).fit(X, y).score(X_test, y_test)
                memory = memories[family]
                clf, scores = makers[name](seed), []
                start = time.perf_counter()
                for p in range(args.passes):
                    if name.endswith("-blocks"):
                        fit_blocks(clf, X_dask, y_dask, classes=classes, random_state=p)
                    else:
                        for i in starts:
                            clf.partial_fit(X[i : i + args.block], y[i : i + args.block], classes)
                    scores.append(clf.score(X_test, y_test))
                seconds = time.perf_counter() - start
                calls = len(starts) * args.passes
            seconds_per_call.setdefault((kind, name), []).append(seconds / calls)
            passes = ", ".join(f"{s:.4f}" for s in scores)
            gap = 100 * (memory - scores[-1])
            gaps.setdefault((kind, name), {})[seed] = gap
            print(
                f"{kind} | {seed} | {name} | {memory:.4f} | {passes} | {gap:+.2f} | {seconds:.0f}",
                flush=True,
            )
    _summary(gaps, seconds_per_call, args.data, args.models)


def _summary(gaps: dict, seconds_per_call: dict, kinds: list[str], models: list[str]) -> None:
    """Per data set and model, the mean gap over the seeds (and its standard error), the
    paired difference with the first model (mean and standard error over the seeds), and
    the median seconds per call."""
    print(
        "\ndata | model | seeds | mean gap (points) (SE) | minus the first model's, paired "
        "(SE) | s per call (median)"
    )
    first = models[0]
    for kind in kinds:
        for name in models:
            by_seed = gaps[(kind, name)]
            seeds = sorted(by_seed)
            mean = statistics.fmean(by_seed.values())
            spread = ""
            if len(seeds) > 1:
                spread = f" ({statistics.stdev(by_seed.values()) / math.sqrt(len(seeds)):.2f})"
            per_call = statistics.median(seconds_per_call[(kind, name)])
            paired = "-"
            if name != first and len(seeds) > 1:
                diffs = [by_seed[s] - gaps[(kind, first)][s] for s in seeds]
                se = statistics.stdev(diffs) / math.sqrt(len(diffs))
                paired = f"{statistics.fmean(diffs):+.2f} ({se:.2f})"
            print(
                f"{kind} | {name} | {len(seeds)} | {mean:+.2f}{spread} | {paired} | "
                f"{per_call:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
