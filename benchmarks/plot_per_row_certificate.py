"""The picture of the TabNet user guide: two rows of a switch family that read different
features, with what ``never_read`` certifies for each.

Run from the repository root (about half a minute)::

    PYTHONPATH=. python3 benchmarks/plot_per_row_certificate.py doc/_static/per_row_certificate.png

It fits the default :class:`~sk_entmax.TabNetEntmaxClassifier` on 3,000 rows of the
``switch`` family of ``benchmarks/families.py`` (feature 0's sign chooses whether the label
reads features 1-3 or 4-6; 7-11 are noise), takes the first test row of each branch, and
draws each step's mask over the features, the features each row reads, and its certificate.
The draw and seed are the benchmark's seed 1 (``make_family(..., 101)``,
``random_state=1``); ``doc/benchmarks/bench_tabnet_faithful.md`` has every seed's figures.
"""

from __future__ import annotations

import sys
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from families import make_family

from sk_entmax import TabNetEntmaxClassifier


def main(path: str) -> int:
    warnings.filterwarnings("ignore")
    X, y, truth = make_family("switch", 6000, 101)
    clf = TabNetEntmaxClassifier(random_state=1).fit(X[:3000], y[:3000])
    X_test, truth_test = X[3000:], truth[3000:]
    rows = [int(np.argmax(X_test[:, 0] > 0)), int(np.argmax(X_test[:, 0] <= 0))]
    _, masks = clf.explain(X_test[rows])
    never = clf.never_read(X_test[rows])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2), sharey=True)
    features = np.arange(X.shape[1])
    for ax, i, row in zip(axes, range(2), rows, strict=True):
        bottom = np.zeros(X.shape[1])
        for step, mask in masks.items():
            ax.bar(features, mask[i], bottom=bottom, label=f"step {step + 1}")
            bottom += mask[i]
        for j in features:
            ax.text(j, -0.12, "·" if never[i, j] else "R", ha="center", color="k")
        true = truth_test[row].nonzero()[0].tolist()
        branch = "x0 > 0: reads 1-3" if X_test[row, 0] > 0 else "x0 <= 0: reads 4-6"
        ax.set_title(f"test row {row} ({branch}); true features {true}", fontsize=9)
        ax.set_xticks(features)
        ax.set_xlabel("feature (R: read, ·: certified never read)")
        ax.set_ylim(-0.2, max(1.05, bottom.max() + 0.05))
    axes[0].set_ylabel("mask weight, stacked over the steps")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    for i, row in enumerate(rows):
        print(f"row {row}: reads {np.nonzero(~never[i])[0].tolist()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "per_row_certificate.png"))
