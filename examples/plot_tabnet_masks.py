"""
TabNet feature masks: the four ``entmax_mode`` values side by side
===================================================================

At each decision step, TabNet chooses the features it reads through a mask: a probability
distribution over the columns. :class:`~sk_entmax.TabNetEntmaxClassifier` computes that
mask with

- ``"sparsemax"``: the sparsest, as in the TabNet paper;
- ``"entmax15"``: 1.5-entmax, sparse but smoother;
- ``"constant"``: alpha-entmax at a fixed ``entmax_alpha`` (here 1.3, close to softmax);
- ``"adaptive"``: one alpha per step, learned with the network, each kept in (1, 2).

The same split of the wine data, four models; then the mask of the first step for the same
test wines, and each step's mask alpha. White cells are exact zeros: features the step does
not read for that wine at all.
"""

# %%
# Four masks, one data set
# ------------------------
import os
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split

from sk_entmax import TabNetEntmaxClassifier
from sk_entmax.report import plot_feature_importances, plot_mask_alpha

QUICK = os.environ.get("SK_ENTMAX_EXAMPLE_QUICK") == "1"  # the test suite's smoke run

data = load_wine(as_frame=True)
X, y = data.frame[data.feature_names], data.target_names[data.target.to_numpy()]
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, stratify=y, random_state=0
)
settings = {
    "sparsemax": {},
    "entmax15": {},
    "constant": {"entmax_alpha": 1.3},
    "adaptive": {"entmax_alpha": 1.5},
}
models = {}
print(f"{'entmax_mode':<13}{'accuracy':>9}{'mask zeros':>12}{'mask alpha per step':>24}{'fit':>7}")
for mode, extra in settings.items():
    clf = TabNetEntmaxClassifier(
        entmax_mode=mode,
        batch_size=32,
        lr=0.03,
        max_epochs=3 if QUICK else 40,
        patience=40,  # 40 epochs for every mode, so that they compare like for like
        random_state=0,
        **extra,
    )
    start = time.perf_counter()
    models[mode] = clf.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    _, masks = clf.explain(X_test)
    zeros = np.mean([(M == 0).mean() for M in masks.values()])
    alphas = " ".join(f"{a:.2f}" for a in clf.mask_alpha_)
    print(f"{mode:<13}{clf.score(X_test, y_test):>9.3f}{zeros:>12.0%}{alphas:>24}{seconds:>6.1f}s")

# %%
# The first step's mask for the same eight test wines
# ---------------------------------------------------
# Sparsemax reads one to three measurements per wine; 1.5-entmax reads more, and alpha 1.3,
# closer to softmax, more still, with little weight on most of them. The adaptive model
# sets its own sparsity, step by step.
rows = np.arange(8)
fig, axes = plt.subplots(1, 4, figsize=(15, 5.2), sharey=True, layout="constrained")
cmap = plt.get_cmap("viridis").with_extremes(bad="white")
for ax, (mode, clf) in zip(axes, models.items(), strict=True):
    _, masks = clf.explain(X_test.iloc[rows])
    M = masks[0].T  # features down, wines across
    image = ax.imshow(
        np.ma.masked_equal(M, 0),
        cmap=cmap,
        vmin=0,
        vmax=1,
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_xticks(np.arange(len(rows)), X_test.index[rows])
    ax.set_xticks(np.arange(len(rows) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(M.shape[0] + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="#d0d0d0", linewidth=0.6)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel("test wine")
    ax.set_title(f"{mode}\n{(M == 0).mean():.0%} exactly 0", fontsize=10)
axes[0].set_yticks(np.arange(X.shape[1]), X.columns)
fig.colorbar(image, ax=axes, label="mask weight (white: exactly 0)", shrink=0.8)
fig.suptitle("Step 1 feature masks by entmax_mode", x=0.01, ha="left")

# %%
# The mask alpha of each step
# ---------------------------
# Fixed at 2 (sparsemax), 1.5 (1.5-entmax) and 1.3 (constant); learned per step in adaptive
# mode, starting from ``entmax_alpha``.
fig, axes = plt.subplots(1, 4, figsize=(15, 3.4), sharey=True, layout="constrained")
for ax, clf in zip(axes, models.values(), strict=True):
    plot_mask_alpha(clf, ax=ax)

# %%
# Which measurements the adaptive model relies on
# -----------------------------------------------
# Feature importances on the test wines, from
# :func:`~sk_entmax.report.plot_feature_importances`. For the whole picture as one HTML
# page, see :func:`~sk_entmax.report.feature_mask_report`.
plot_feature_importances(models["adaptive"], X_test)
plt.show()
