"""
Multi-label targets: sparse label distributions and their supports
==================================================================

Given a multi-label target (an indicator matrix, one column per label), the entmax
classifiers learn a *distribution over labels* and "no label": the Fenchel-Young loss is
taken against the label proportions ``y / |y|``, and a row without labels against the "no
label" output, so such rows are learned too. After training, a temperature
(``support_temperature_``) is fitted so that the rows predicted to have labels get, on
average, as many as the training rows that have labels. ``predict_proba`` holds exact
zeros (its rows sum to 1 minus the probability of "no label"), and ``predict`` returns the
support, the labels with nonzero probability, or no label where "no label" is the most
probable output: the number of labels varies from row to row with no threshold to pick.

This is not one-vs-rest: a row's probabilities share one unit of mass between its labels.
Below, :class:`~sk_entmax.SparsemaxClassifier` and ``EntmaxClassifier()`` (alpha 1.5) are
compared with one logistic regression per label on synthetic data.

``benchmarks/bench_multilabel.py`` (``PYTHONPATH=. python3 benchmarks/bench_multilabel.py``)
compares them over 10 seeds on five synthetic sets and three real ones (yeast, a Stack
Overflow survey, solar flares). Micro-F1, ± 2 SE, and the paired difference against
one-vs-rest logistic regression:

============= ============== ============== ============================== ===============
data          Sparsemax      Entmax 1.5     one-vs-rest LogisticRegression Sparsemax - OvR
============= ============== ============== ============================== ===============
syn-n1        0.830 ± 0.008  0.829 ± 0.007  0.777 ± 0.009                  +0.053 ± 0.007
syn-n2-unl    0.605 ± 0.007  0.604 ± 0.007  0.521 ± 0.006                  +0.084 ± 0.009
syn-n4        0.494 ± 0.005  0.495 ± 0.004  0.326 ± 0.003                  +0.168 ± 0.006
yeast         0.627 ± 0.006  0.621 ± 0.006  0.626 ± 0.005                  +0.001 ± 0.003
stackoverflow 0.513 ± 0.003  0.513 ± 0.003  0.491 ± 0.005                  +0.022 ± 0.003
============= ============== ============== ============================== ===============
"""

# %%
# Data and models
# ---------------
import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_multilabel_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier
from sk_entmax.report import plot_class_support

QUICK = os.environ.get("SK_ENTMAX_EXAMPLE_QUICK") == "1"  # the test suite's smoke run

X, Y = make_multilabel_classification(
    n_samples=1000, n_features=20, n_classes=5, allow_unlabeled=False, random_state=0
)
X_train, X_test, Y_train, Y_test = train_test_split(X, Y, test_size=0.25, random_state=0)
epochs = {"max_epochs": 5} if QUICK else {}
models = {
    "one-vs-rest LogisticRegression": OneVsRestClassifier(LogisticRegression()),
    "SparsemaxClassifier": SparsemaxClassifier(random_state=0, **epochs),
    "EntmaxClassifier, alpha 1.5": EntmaxClassifier(random_state=0, **epochs),
}
print(f"true labels per test row: {Y_test.sum(axis=1).mean():.2f}\n")
print(f"{'model':<32}{'micro-F1':>9}{'labels predicted per row':>26}")
predictions = {}
for name, model in models.items():
    models[name] = model = make_pipeline(StandardScaler(), model).fit(X_train, Y_train)
    predictions[name] = P = model.predict(X_test)
    f1 = f1_score(Y_test, P, average="micro")
    print(f"{name:<32}{f1:>9.3f}{P.sum(axis=1).mean():>26.2f}")

# %%
# A few label distributions
# -------------------------
# Each row is one test sample. Colour is the predicted probability of the sparse model
# (white: exactly 0, so the label is not predicted); a black frame marks the true labels.
# The distribution spreads its mass over the labels it keeps, more or less evenly.
rows = np.arange(10)
fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), layout="constrained")
for ax, name in zip(axes, ["SparsemaxClassifier", "EntmaxClassifier, alpha 1.5"], strict=True):
    proba = models[name].predict_proba(X_test[rows])
    cmap = plt.get_cmap("Blues").with_extremes(bad="white")
    image = ax.imshow(np.ma.masked_equal(proba, 0), cmap=cmap, vmin=0, vmax=1, aspect="auto")
    for i, j in zip(*np.nonzero(Y_test[rows]), strict=True):
        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=2, ec="black"))
    for (i, j), p in np.ndenumerate(proba):
        text = "0" if p == 0 else f"{p:.2f}" if p >= 0.005 else f"{p:.0e}"
        color = "white" if p > 0.6 else "#999999" if p == 0 else "black"
        ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color)
    ax.set_xticks(range(Y.shape[1]), [f"label {k}" for k in range(Y.shape[1])])
    ax.set_yticks(rows)
    ax.set_ylabel("test row")
    ax.set_title(name, loc="left")
fig.colorbar(image, ax=axes, label="predicted probability (white: exactly 0)", shrink=0.8)
fig.suptitle("Sparse label distributions; black frames: the true labels", x=0.01, ha="left")

# %%
# How many labels per row
# -----------------------
# The support size (labels predicted) against the true number of labels. One-vs-rest
# thresholds each label at 0.5 on its own and predicts fewer labels than there are; the
# sparse distributions, at their fitted support temperature, predict about as many as
# there are.
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained")
sizes = np.arange(0, Y.shape[1] + 1)
width = 0.2
series = {"true labels": Y_test, **predictions}
for k, (name, P) in enumerate(series.items()):
    counts = np.bincount(P.sum(axis=1).astype(int), minlength=len(sizes))
    axes[0].bar(sizes + (k - 1.5) * width, counts, width=width, label=name)
axes[0].set_xticks(sizes)
axes[0].set_xlabel("labels per test row")
axes[0].set_ylabel("rows")
axes[0].set_ylim(0, axes[0].get_ylim()[1] * 1.35)
axes[0].legend(fontsize=8, ncol=2, loc="upper center")
axes[0].set_title("Label counts: true and predicted", loc="left")
plot_class_support(models["SparsemaxClassifier"], X_test, ax=axes[1])
axes[1].set_title("SparsemaxClassifier: which labels get mass", loc="left")
plt.show()
