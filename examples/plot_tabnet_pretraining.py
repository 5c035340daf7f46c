"""
TabNet with few labels: self-supervised pretraining on the unlabelled rows
==========================================================================

:class:`~sk_entmax.TabNetPretrainer` learns a TabNet encoder from rows without labels: each
row hides a random fifth of its features, the encoder reads the rest through its entmax
masks, and a decoder reconstructs the hidden ones. A supervised
:class:`~sk_entmax.TabNetEntmaxClassifier` then starts from that encoder.

Here only 2% of the training rows keep their labels. The pretrainer is fitted once, on all
the training rows, and wrapped in ``sklearn.frozen.FrozenEstimator``, so that its weights
survive the ``clone`` that every scikit-learn search makes; the classifier is fitted with
and without it, over a few seeds (one seed decides nothing), on the same labelled rows.
"""

# %%
# Data: many rows, few labels
# ---------------------------
import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import train_test_split

from sk_entmax import TabNetEntmaxClassifier, TabNetPretrainer

QUICK = os.environ.get("SK_ENTMAX_EXAMPLE_QUICK") == "1"  # the test suite's smoke run

X, y = make_classification(
    n_samples=600 if QUICK else 5000,
    n_features=12,
    n_informative=4,
    n_redundant=6,  # columns that are mixtures of the informative ones: reconstructible
    random_state=0,
)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
labelled, _ = train_test_split(
    np.arange(len(y_train)), train_size=0.02, stratify=y_train, random_state=0
)
print(f"{len(X_train)} training rows, {len(labelled)} of them labelled")

# %%
# Pretrain once, on every training row
# ------------------------------------
pretrainer = TabNetPretrainer(max_epochs=3 if QUICK else 100, random_state=0).fit(X_train)
losses = pretrainer.net_.history[:, "train_loss"]
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(np.arange(1, len(losses) + 1), losses)
ax.set(xlabel="epoch", ylabel="reconstruction loss", title="Pretraining")
fig.tight_layout()

# %%
# Fine-tune on the labelled rows, from scratch and from the pretrained encoder
# ----------------------------------------------------------------------------
seeds = range(2 if QUICK else 5)
scores = {"from scratch": [], "pretrained": []}
for seed in seeds:
    for name, start in (("from scratch", None), ("pretrained", FrozenEstimator(pretrainer))):
        clf = TabNetEntmaxClassifier(
            pretrainer=start, max_epochs=3 if QUICK else 100, random_state=seed
        )
        clf.fit(X_train[labelled], y_train[labelled])
        scores[name].append(clf.score(X_test, y_test))
gain = np.subtract(scores["pretrained"], scores["from scratch"])
se = gain.std(ddof=1) / np.sqrt(len(gain))
for name, values in scores.items():
    print(f"{name:13s} test accuracy {np.mean(values):.3f}")
print(f"gain of pretraining: {gain.mean():+.3f} +- {2 * se:.3f} (2 paired SE)")

fig, ax = plt.subplots(figsize=(5, 3.5))
for seed in seeds:
    ax.plot([0, 1], [scores["from scratch"][seed], scores["pretrained"][seed]], "o-", alpha=0.6)
ax.set(
    xticks=[0, 1],
    xticklabels=list(scores),
    ylabel="test accuracy",
    title=f"{len(labelled)} labels, one line per seed",
)
fig.tight_layout()
plt.show()
