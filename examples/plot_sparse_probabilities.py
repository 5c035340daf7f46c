"""
Softmax, sparsemax and 1.5-entmax on the same data
==================================================

Three linear classifiers on the handwritten digits: multinomial logistic regression
(softmax), :class:`~sk_entmax.SparsemaxClassifier` and :class:`~sk_entmax.EntmaxClassifier`
at ``alpha=1.5``. They are equally accurate; what differs is the shape of
``predict_proba``. Softmax gives each of the ten digits some probability on every image;
sparsemax and entmax put *exact* zeros on the digits an image is clearly not, so each row
names a short list of candidates.
"""

# %%
# Fit the three models
# --------------------
import os
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier
from sk_entmax.report import plot_probabilities, plot_support_sizes

QUICK = os.environ.get("SK_ENTMAX_EXAMPLE_QUICK") == "1"  # the test suite's smoke run
torch.set_num_threads(1)  # tiny networks train fastest on one thread

X, y = load_digits(return_X_y=True)
if QUICK:
    X, y = X[:400], y[:400]
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, stratify=y, random_state=0
)
epochs = {"max_epochs": 5} if QUICK else {}
models = {
    "softmax (LogisticRegression)": LogisticRegression(max_iter=2000),
    "SparsemaxClassifier": SparsemaxClassifier(random_state=0, **epochs),
    "EntmaxClassifier, alpha 1.5": EntmaxClassifier(alpha=1.5, random_state=0, **epochs),
}
print(f"{'model':<30}{'accuracy':>9}{'exact zeros':>13}{'mean support':>14}{'fit':>8}")
for name, model in models.items():
    models[name] = model = make_pipeline(StandardScaler(), model)
    start = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    proba = model.predict_proba(X_test)
    accuracy = model.score(X_test, y_test)
    zeros = (proba == 0).mean()
    support = (proba > 0).sum(axis=1).mean()
    print(f"{name:<30}{accuracy:>9.3f}{zeros:>13.1%}{support:>14.2f}{seconds:>7.1f}s")

# %%
# The same test images, three kinds of rows
# -----------------------------------------
# White cells are exactly zero. Softmax leaves small, nonzero mass on every digit (written
# in as ``1e-04`` and the like); the sparse models drop the implausible digits altogether,
# and keep two or three candidates only where the image is ambiguous.
rows = np.arange(12)
fig, axes = plt.subplots(1, 3, figsize=(15, 5.2), sharey=True, layout="constrained")
for ax, (name, model) in zip(axes, models.items(), strict=True):
    plot_probabilities(model, X_test, rows, ax=ax)
    ax.set_title(name)
fig.suptitle("predict_proba on 12 test digits (white: exactly 0)")

# %%
# How many digits does each image keep?
# -------------------------------------
# The support size is the number of classes with nonzero probability. Softmax always keeps
# all ten; the sparse models mostly keep one, sometimes a handful.
fig, axes = plt.subplots(1, 3, figsize=(15, 3.6), layout="constrained")
for ax, (name, model) in zip(axes, models.items(), strict=True):
    plot_support_sizes(model, X_test, ax=ax)
    ax.set_title(f"{name}\n{ax.get_title(loc='left')}", loc="left")
plt.show()
