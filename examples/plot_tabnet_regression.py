"""
TabNet for a numeric target: predictions, and the features each one read
========================================================================

:class:`~sk_entmax.TabNetEntmaxRegressor` is TabNet with entmax feature masks and a linear
output, trained with the mean squared error. Everything the classifier offers about its
masks carries over: ``explain`` gives per-row attributions with exact zeros and
``feature_importances_`` one share per column.

Friedman's first regression problem: ten uniform features, of which the first five enter
``y = 10 sin(pi x0 x1) + 20 (x2 - 0.5)^2 + 10 x3 + 5 x4 + noise`` and the other five do
not. A ridge regression and gradient-boosted trees beside it, on the same split.
"""

# %%
# Fit and score
# -------------
import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import train_test_split

from sk_entmax import TabNetEntmaxRegressor
from sk_entmax.report import plot_feature_importances

QUICK = os.environ.get("SK_ENTMAX_EXAMPLE_QUICK") == "1"  # the test suite's smoke run

X, y = make_friedman1(n_samples=400 if QUICK else 2000, n_features=10, noise=0.5, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)

models = {
    "TabNet (sparsemax masks)": TabNetEntmaxRegressor(
        max_epochs=5 if QUICK else 100, random_state=0
    ),
    "RidgeCV": RidgeCV(),
    "HistGradientBoosting": HistGradientBoostingRegressor(random_state=0),
}
for name, model in models.items():
    model.fit(X_train, y_train)
    print(f"{name:26s} test R^2 {model.score(X_test, y_test):.3f}")

# %%
# Predicted against true
# ----------------------
tabnet = models["TabNet (sparsemax masks)"]
predicted = tabnet.predict(X_test)
fig, ax = plt.subplots(figsize=(4.5, 4.5))
ax.scatter(y_test, predicted, s=8, alpha=0.6)
low, high = float(y.min()), float(y.max())
ax.plot([low, high], [low, high], color="grey", lw=1)
ax.set(xlabel="true y", ylabel="predicted", title="TabNet, test rows")
fig.tight_layout()

# %%
# What each prediction read
# -------------------------
# Each row of ``M_explain`` is that row's attribution over the ten features; its zeros are
# exact: no step's mask gave the feature any weight for that row. The importances should
# sit on the first five columns, the ones ``y`` depends on.
M_explain, masks = tabnet.explain(X_test)
print("share of (row, feature) attributions exactly 0:", round(float(np.mean(M_explain == 0)), 3))
print(
    "importance on the five informative columns:", round(tabnet.feature_importances_[:5].sum(), 3)
)
plot_feature_importances(tabnet, X_test, n_resamples=0 if QUICK else 200)
plt.show()
