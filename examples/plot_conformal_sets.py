"""
Conformal prediction sets from a sparse mapping
===============================================

The nonzeros of a sparsemax ``predict_proba`` form a set of candidate labels, but nothing
says how often that set misses the true label. :class:`~sk_entmax.SparseConformalClassifier`
calibrates the temperature of the mapping on held-out data (split conformal prediction), so
that the support of ``sparsemax(z / T)`` covers the true label with a stated probability:
at least ``confidence_level`` on average over test rows, provided the calibration and test
rows are exchangeable (for instance drawn i.i.d. from the same distribution).

Here a :class:`~sk_entmax.SparsemaxClassifier` is fitted on one part of the handwritten
digits, calibrated on a second part, and its sets are checked on a third.
"""

# %%
# Fit, then calibrate on held-out rows
# ------------------------------------
import os

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_entmax import SparseConformalClassifier, SparsemaxClassifier
from sk_entmax.metrics import mean_support_size, support_coverage

QUICK = os.environ.get("SK_ENTMAX_EXAMPLE_QUICK") == "1"  # the test suite's smoke run
torch.set_num_threads(1)  # tiny networks train fastest on one thread

X, y = load_digits(return_X_y=True)
X_train, X_rest, y_train, y_rest = train_test_split(
    X, y, train_size=0.4, stratify=y, random_state=0
)
X_cal, X_test, y_cal, y_test = train_test_split(
    X_rest, y_rest, train_size=0.5, stratify=y_rest, random_state=0
)
epochs = {"max_epochs": 5} if QUICK else {}
model = make_pipeline(StandardScaler(), SparsemaxClassifier(random_state=0, **epochs))
levels = [0.8, 0.85, 0.9, 0.95, 0.99]
clf = SparseConformalClassifier(model, confidence_level=levels)
clf.fit(X_train, y_train).conformalize(X_cal, y_cal)
sets = clf.predict_set(X_test)  # shape (n_test, 10 digits, 5 levels)
coverage = support_coverage(y_test, sets)
sizes = mean_support_size(sets)

print(f"{len(y_train)} training, {len(y_cal)} calibration, {len(y_test)} test rows")
print(f"{'confidence level':>17}{'coverage':>10}{'mean set size':>15}")
for level, cov, size in zip(levels, coverage, sizes, strict=True):
    print(f"{level:>17.2f}{cov:>10.3f}{size:>15.2f}")

# %%
# The raw support has no stated error rate
# ----------------------------------------
# The uncalibrated model's own ``predict_proba`` is sparse too, but its support is whatever
# the training left it: it rules out the true digit on some test rows, at a rate nobody
# chose and nothing bounds (another regularization or another training run moves it). The
# calibrated sets trade size for a coverage fixed in advance.
raw = clf.estimator_.predict_proba(X_test)
missed = int((raw[np.arange(len(y_test)), np.searchsorted(clf.classes_, y_test)] == 0).sum())
print(
    f"raw predict_proba support: coverage {support_coverage(y_test, raw):.3f}, "
    f"mean size {mean_support_size(raw):.2f}; it rules out the true digit on {missed} of "
    f"{len(y_test)} test rows (no stated error rate)"
)
at_90 = levels.index(0.9)
print(
    f"conformal sets at 0.9: coverage {coverage[at_90]:.3f}, "
    f"mean size {sizes[at_90]:.2f} (guaranteed >= 0.9 on average)"
)
# the calibrated predict_proba (first level) is nonzero exactly on the set
assert np.array_equal(clf.predict_proba(X_test) > 0, sets[:, :, 0])

# %%
# Coverage against the target, and the set sizes at 0.9
# -----------------------------------------------------
# On the left, each point is the empirical coverage on the test rows; it should lie on or
# above the diagonal, up to the sampling noise of a finite test set. A set always holds the
# top-scored digit, so coverage never falls below the accuracy: at the levels below it the
# sets are single labels and over-cover (the guarantee is a lower bound). On the right, most
# digits get a set of one label, and the ambiguous ones two or more.
fig, (ax_cov, ax_size) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
ax_cov.plot(levels, coverage, "o-", label="conformal sets")
ax_cov.axhline(
    support_coverage(y_test, raw), color="tab:red", ls="--", label="raw predict_proba support"
)
ax_cov.plot([0.78, 1.0], [0.78, 1.0], color="gray", lw=1, label="target")
ax_cov.set(xlabel="confidence level", ylabel="test coverage", title="Coverage")
ax_cov.legend(loc="lower right")

size_90 = sets[:, :, at_90].sum(axis=1)
bins = np.arange(1, size_90.max() + 2) - 0.5
ax_size.hist(size_90, bins=bins, rwidth=0.8)
ax_size.set(
    xlabel="set size (labels)",
    ylabel="test rows",
    title=f"Set sizes at 0.9 (mean {size_90.mean():.2f})",
)
plt.show()
