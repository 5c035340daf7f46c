"""
Scoring sparse probabilities
============================

scikit-learn's :func:`~sklearn.metrics.log_loss` clips every probability to at least the
float64 epsilon, about ``2.2e-16``. A sparse model puts probability *exactly* 0 on classes
it rules out, so a test row whose true class was ruled out costs ``-log(2.2e-16)``, about
36 nats, where the true log loss is infinite. A handful of such rows dominate the mean,
and a search scored with ``"neg_log_loss"`` is pushed toward dense models.

:func:`sk_entmax.metrics.tsallis_loss` is a proper scoring rule that stays finite on exact
zeros (at ``alpha = 2`` it is half the Brier score; as ``alpha -> 1`` it tends to the log
loss). Here it chooses ``alpha`` of :class:`~sk_entmax.EntmaxClassifier` on the digits,
beside accuracy and the log loss, and the support of ``predict_proba`` is read as a
prediction set: how often it holds the true class (coverage) and how large it is.
Last, what calibration and soft voting do to the zeros.
"""

# %%
# The search
# ----------
import os

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_digits
from sklearn.ensemble import VotingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier
from sk_entmax.metrics import (
    make_coverage_scorer,
    make_tsallis_scorer,
    mean_support_size,
    support_coverage,
    tsallis_loss,
)

QUICK = os.environ.get("SK_ENTMAX_EXAMPLE_QUICK") == "1"  # the test suite's smoke run
torch.set_num_threads(1)  # tiny networks train fastest on one thread
epochs = {"max_epochs": 3} if QUICK else {}

X, y = load_digits(return_X_y=True)
if QUICK:
    X, y = X[:300], y[:300]
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, stratify=y, random_state=0
)


def support_size(estimator, X, y):
    """Mean number of classes with probability > 0 (a scorer that reports, not ranks)."""
    return mean_support_size(estimator.predict_proba(X))


alphas = [1.0, 1.25, 1.5, 2.0]
search = GridSearchCV(
    make_pipeline(StandardScaler(), EntmaxClassifier(random_state=0, **epochs)),
    {"entmaxclassifier__alpha": alphas},
    scoring={
        "tsallis": make_tsallis_scorer(alpha=1.5),
        "log loss": "neg_log_loss",
        "accuracy": "accuracy",
        "coverage": make_coverage_scorer(),
        "support size": support_size,
    },
    refit="tsallis",
    cv=3,
)
search.fit(X_train, y_train)
results = search.cv_results_
tsallis_cv = -np.asarray(results["mean_test_tsallis"])
log_loss_cv = -np.asarray(results["mean_test_log loss"])
coverage_cv = np.asarray(results["mean_test_coverage"])
size_cv = np.asarray(results["mean_test_support size"])
# a row outside the support is a row whose true class has p = 0: log_loss charges it 36 nats
ruled_out_cv = (1 - coverage_cv) * -np.log(np.finfo(np.float64).eps)

print(f"GridSearchCV over alpha, 3-fold cross-validation on {len(y_train)} digits:")
header = ["alpha", "accuracy", "log loss", "of it p = 0", "Tsallis (± sd)", "coverage", "size"]
widths = [6, 10, 10, 13, 18, 10, 7]
print("".join(f"{name:>{width}}" for name, width in zip(header, widths, strict=True)))
for i, alpha in enumerate(alphas):
    print(
        f"{alpha:>6}{results['mean_test_accuracy'][i]:>10.3f}{log_loss_cv[i]:>10.3f}"
        f"{ruled_out_cv[i]:>13.3f}{tsallis_cv[i]:>9.4f} ± {results['std_test_tsallis'][i]:.4f}"
        f"{coverage_cv[i]:>10.3f}{size_cv[i]:>7.2f}"
    )
by_log_loss = alphas[int(np.argmin(log_loss_cv))]
best = search.best_params_["entmaxclassifier__alpha"]
print(f"the log loss would pick alpha = {by_log_loss}; the Tsallis loss picks alpha = {best}")

# %%
# What the log loss does to exact zeros
# -------------------------------------
# Sparsemax (alpha = 2) on the test digits: the clipped log loss charges each row whose
# true class got probability exactly 0 about 36 nats. The Tsallis loss at alpha 1.5 charges
# such a row ``(2 + sum_k p_k**1.5) / 1.5``, between 4/3 and 2, about what it charges a
# confident mistake that kept the true class in the support.
sparsemax = make_pipeline(StandardScaler(), SparsemaxClassifier(random_state=0, **epochs))
proba = sparsemax.fit(X_train, y_train).predict_proba(X_test)
p_true = proba[np.arange(len(y_test)), np.searchsorted(sparsemax.classes_, y_test)]
ruled_out = p_true == 0
eps = np.finfo(proba.dtype).eps
clipped = -np.log(np.clip(p_true, eps, 1 - eps))
print(f"\nSparsemaxClassifier on the {len(y_test)} test digits:")
share = clipped[ruled_out].sum() / len(y_test)
print(
    f"  log loss {log_loss(y_test, proba):.3f}, of which {share:.3f} comes from the "
    f"{ruled_out.sum()} rows whose true class has probability exactly 0"
)
print(f"  (each clipped to {-np.log(eps):.0f} nats); unclipped, the log loss is inf")
print(
    f"  Tsallis loss (alpha 1.5) {tsallis_loss(y_test, proba):.4f}; coverage "
    f"{support_coverage(y_test, proba):.3f} with {mean_support_size(proba):.2f} classes per row"
)

# %%
# Calibration and soft voting
# ---------------------------
# Sigmoid calibration maps every score through a logistic function, so no probability is
# 0 afterwards; averaging with a dense model (soft voting) does the same. Isotonic
# calibration is a step function that can reach 0, and soft voting among sparse models
# keeps the zeros they share.
entmax = make_pipeline(StandardScaler(), EntmaxClassifier(random_state=0, **epochs))
logistic = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
models = {
    "EntmaxClassifier (alpha 1.5)": entmax,
    "CalibratedClassifierCV, sigmoid": CalibratedClassifierCV(entmax, method="sigmoid", cv=3),
    "CalibratedClassifierCV, isotonic": CalibratedClassifierCV(entmax, method="isotonic", cv=3),
    "soft vote with LogisticRegression": VotingClassifier(
        [("entmax", entmax), ("logistic", logistic)], voting="soft"
    ),
    "soft vote with SparsemaxClassifier": VotingClassifier(
        [("entmax", entmax), ("sparsemax", sparsemax)], voting="soft"
    ),
}
print(f"\n{'model':<36}{'accuracy':>9}{'zeros':>8}{'coverage':>10}{'size':>7}{'Tsallis':>9}")
points = {}
for name, model in models.items():
    proba = model.fit(X_train, y_train).predict_proba(X_test)
    points[name] = (mean_support_size(proba), support_coverage(y_test, proba))
    print(
        f"{name:<36}{model.score(X_test, y_test):>9.3f}{(proba == 0).mean():>8.1%}"
        f"{points[name][1]:>10.3f}{points[name][0]:>7.2f}{tsallis_loss(y_test, proba):>9.4f}"
    )

# %%
# The losses against alpha, and coverage against support size
# -------------------------------------------------------------
# Left: the cross-validated log loss jumps wherever a fold has a few clipped rows, and the
# sparser the model, the more such rows; the Tsallis loss moves with the quality of the
# probabilities instead, on the same scale for every alpha. Right: each alpha's support as a
# prediction set, from softmax (every class, always covered) to sparsemax (short sets that
# now and then miss the true class); the calibrated and voted models on the test digits
# beside them.
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
left.plot(alphas, log_loss_cv, marker="o", color="#c0703b", label="log loss (clipped)")
left.set_xlabel("alpha (1 softmax, 1.5 entmax, 2 sparsemax)")
left.set_ylabel("cross-validated log loss", color="#c0703b")
left.set_xticks(alphas)
twin = left.twinx()
twin.plot(alphas, tsallis_cv, marker="s", color="#3b6ea5", label="Tsallis loss, alpha 1.5")
twin.set_ylabel("cross-validated Tsallis loss (alpha 1.5)", color="#3b6ea5")
twin.set_ylim(0, 1.5 * tsallis_cv.max())
left.set_title("log loss and Tsallis loss against alpha", loc="left")

right.plot(size_cv, coverage_cv, marker="o", color="#3b6ea5", label="alpha (cross-validated)")
for alpha, size, coverage in zip(alphas, size_cv, coverage_cv, strict=True):
    right.annotate(f"{alpha}", (size, coverage), textcoords="offset points", xytext=(5, -12))
# hollow and large, filled and small: models at the same point stay visible
styles = iter(
    [("v", 50, True), ("D", 130, False), ("^", 50, True), ("P", 50, True), ("*", 90, False)]
)
for name, (size, coverage) in points.items():
    marker, area, filled = next(styles)
    color = f"C{len(right.collections)}"
    face = color if filled else "none"
    right.scatter(
        size, coverage, marker=marker, s=area, c=face, edgecolors=color, label=f"{name} (test)"
    )
right.set_xlim(0.5, 11)
right.set_xlabel("mean support size (classes with p > 0)")
right.set_ylabel("coverage (true class has p > 0)")
right.set_title("coverage against support size", loc="left")
right.legend(fontsize="small", loc="lower right")
plt.show()
