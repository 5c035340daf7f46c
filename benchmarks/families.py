"""Synthetic families built to break a column selection, each with a per-row ground truth.

Not a benchmark itself: ``bench_tabnet_faithful.py`` imports it (``from families import
...``). Every family draws standard normal features and a binary label from a logit that
depends on a few of them; :func:`make_family` returns the features, the labels and, per
row, which features the label depends on (``truth``, a boolean matrix), so that a
certificate's true positive and false discovery rates can be measured against it.

- ``product``: the logit is a product of two features (neither matters alone; the best
  possible AUC is about 0.70, and the signal about a tenth of the loss);
- ``parity``: the sign of a product of three features (no pair matters alone);
- ``switch``: one feature's sign chooses which of two groups of three features the logit
  reads (a row's true features are the switch and its group);
- ``switch2``: the same with two groups of two features and a wider table;
- ``weak``: a logit of one strong feature and a weak pair whose share of the loss is about a
  tenth (11%);
- ``additive``: a smooth additive logit over four features (sines and squares);
- ``wide_rare``: 80 features, six of them informative, and a positive class of about 5%.

The constants below are the families' definitions, chosen before any model was fitted on
them; nothing in sk_entmax was tuned to them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FAMILIES", "Family", "make_family"]


@dataclass(frozen=True)
class Family:
    """One family: its width and the logit of a row, with the row's true features."""

    name: str
    n_features: int

    def logit(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The logit of each row and, per row, the features it depends on."""
        truth = np.zeros(X.shape, dtype=bool)
        name = self.name
        if name == "product":
            truth[:, :2] = True
            return X[:, 0] * X[:, 1], truth
        if name == "parity":
            truth[:, :3] = True
            return 3.0 * np.tanh(2.0 * X[:, 0] * X[:, 1] * X[:, 2]), truth
        if name in ("switch", "switch2"):
            size = 3 if name == "switch" else 2
            on = X[:, 0] > 0
            first = X[:, 1 : 1 + size].sum(axis=1)
            second = X[:, 1 + size : 1 + 2 * size].sum(axis=1)
            truth[:, 0] = True
            truth[on, 1 : 1 + size] = True
            truth[~on, 1 + size : 1 + 2 * size] = True
            return 2.0 * np.where(on, first, -second), truth
        if name == "weak":
            truth[:, :3] = True
            return 2.5 * X[:, 0] + 0.6 * (X[:, 1] + X[:, 2]), truth
        if name == "additive":
            truth[:, :4] = True
            return (
                1.5 * np.sin(2.0 * X[:, 0])
                + (X[:, 1] ** 2 - 1.0)
                + np.abs(X[:, 2]) * 1.5
                - 1.2
                + 0.8 * X[:, 3]
            ), truth
        if name == "wide_rare":
            truth[:, :6] = True
            return X[:, :6] @ np.array([1.2, -1.0, 0.9, 0.8, -0.8, 0.7]) - 4.2, truth
        raise ValueError(f"unknown family {name!r}")


#: the families, by name
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("product", 11),
        Family("parity", 10),
        Family("switch", 12),
        Family("switch2", 20),
        Family("weak", 12),
        Family("additive", 12),
        Family("wide_rare", 80),
    )
}


def make_family(name: str, n_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, binary labels and per-row true features of ``n_rows`` rows of a family.

    Parameters
    ----------
    name : str
        A key of :data:`FAMILIES`.
    n_rows : int
        Rows to draw.
    seed : int
        Seeds the features and the labels' noise.

    Returns
    -------
    X : ndarray of shape (n_rows, n_features), float32
    y : ndarray of shape (n_rows,), int
    truth : ndarray of bool, shape (n_rows, n_features)
        Per row, the features the label's probability depends on.
    """
    family = FAMILIES[name]
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, family.n_features))
    logit, truth = family.logit(X)
    y = (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    return X.astype(np.float32), y, truth
