"""partial_fit against fit: how much one call learns, and where a stream ends.

Run from the repository root::

    python3 benchmarks/bench_partial_fit.py [--seeds 5]

Two measurements, each over ``--seeds`` seeds (mean, and the standard error of the paired
differences where two models are compared):

- **One call on wine:** standardized ``load_wine``, one ``partial_fit`` call over all 178
  rows, training accuracy, for ``EntmaxClassifier``, ``SparsemaxClassifier`` and
  ``SGDClassifier(loss="log_loss")`` (scikit-learn's reference for the semantics).
- **A stream against the full-batch fit:** ``bench_linear_scale.py``'s set
  (``make_classification(n_samples=266,667, n_features=20, n_informative=10, n_classes=5,
  random_state=0)``, 25% held out, standardized), the 200,000 training rows streamed as 10
  chunks of 20,000 (one ``partial_fit`` call each, in order), against ``fit`` on all of them;
  test accuracy of both and their difference.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_wine, make_classification
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier


def _mean_se(values: list[float]) -> str:
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0
    return f"{mean:.4f} +- {se:.4f}"


def one_call(seeds: int) -> None:
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    classes = np.unique(y)
    models = {
        "EntmaxClassifier": lambda s: EntmaxClassifier(random_state=s),
        "SparsemaxClassifier": lambda s: SparsemaxClassifier(random_state=s),
        "SGDClassifier(log_loss)": lambda s: SGDClassifier(loss="log_loss", random_state=s),
    }
    print("one partial_fit call on standardized wine (178 rows): training accuracy")
    for name, make in models.items():
        scores, times = [], []
        for seed in range(seeds):
            start = time.perf_counter()
            clf = make(seed).partial_fit(X, y, classes=classes)
            times.append(time.perf_counter() - start)
            scores.append(clf.score(X, y))
        print(f"  {name:<24} {_mean_se(scores)}  ({statistics.median(times):.3f} s per call)")


def stream(seeds: int, chunks: int = 10, size: int = 20_000) -> None:
    n = chunks * size * 4 // 3 + 1
    X, y = make_classification(
        n_samples=n, n_features=20, n_informative=10, n_classes=5, random_state=0
    )
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    X_train, y_train = X_train[: chunks * size], y_train[: chunks * size]
    classes = np.unique(y_train)
    print(f"\n{chunks} chunks of {size} rows against fit on all {chunks * size}: test accuracy")
    for make in (EntmaxClassifier, SparsemaxClassifier):
        streamed, full, gaps = [], [], []
        for seed in range(seeds):
            clf = make(random_state=seed)
            for start in range(0, chunks * size, size):
                clf.partial_fit(
                    X_train[start : start + size], y_train[start : start + size], classes=classes
                )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = make(random_state=seed).fit(X_train, y_train)
            streamed.append(clf.score(X_test, y_test))
            full.append(ref.score(X_test, y_test))
            gaps.append(streamed[-1] - full[-1])
        print(
            f"  {make.__name__:<20} stream {_mean_se(streamed)}  fit {_mean_se(full)}  "
            f"stream - fit {_mean_se(gaps)}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args(argv)
    one_call(args.seeds)
    stream(args.seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
