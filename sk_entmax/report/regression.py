"""What the report shows of a regressor's predictions: predicted against true values, with
R² and RMSE, one panel per target (a multi-output regressor gets one per column of ``y``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._common import _as_text

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

#: at most this many targets get a panel of their own (their scores are all given)
MAX_PANELS = 12
_COLUMNS = 4


@dataclass(frozen=True)
class _Fit:
    """How well the predictions on some rows match their true values, per target."""

    names: list[str]  # one per target (column of y)
    y_true: np.ndarray  # (n_rows, n_targets)
    y_pred: np.ndarray  # (n_rows, n_targets)

    @property
    def n_targets(self) -> int:
        return self.y_true.shape[1]

    @property
    def rmse(self) -> np.ndarray:
        return np.sqrt(np.mean((self.y_pred - self.y_true) ** 2, axis=0))

    @property
    def r2(self) -> np.ndarray:
        """R² per target, as scikit-learn's ``r2_score`` computes it; NaN where the true
        values are constant (R² is then undefined)."""
        residual = np.sum((self.y_true - self.y_pred) ** 2, axis=0)
        total = np.sum((self.y_true - self.y_true.mean(axis=0)) ** 2, axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(total > 0, 1.0 - residual / np.where(total > 0, total, 1.0), np.nan)

    def r2_text(self, j: int) -> str:
        value = float(self.r2[j])
        return f"{value:.3f}" if np.isfinite(value) else "undefined (constant true values)"

    def mean_r2_text(self) -> str:
        """R² averaged over the targets, as the regressor's ``score`` (a single target: its
        R²), with each target's when there are several."""
        if self.n_targets == 1:
            return self.r2_text(0)
        finite = self.r2[np.isfinite(self.r2)]
        mean = f"{finite.mean():.3f}" if finite.size else "undefined"
        each = ", ".join(f"{n} {self.r2_text(j)}" for j, n in enumerate(self.names))
        return f"{mean} (mean over {self.n_targets} targets: {each})"

    def rmse_text(self) -> str:
        if self.n_targets == 1:
            return f"{self.rmse[0]:.4g}"
        return ", ".join(f"{n} {v:.4g}" for n, v in zip(self.names, self.rmse, strict=True))

    def caption(self, j: int) -> str:
        """``R² 0.512, RMSE 1.23 (true values' standard deviation: 2.05)``."""
        spread = float(np.std(self.y_true[:, j]))
        scores = f"R² {self.r2_text(j)}, RMSE {self.rmse[j]:.4g}"
        return f"{scores} (true values' standard deviation: {spread:.4g})"


def _target_names(y: Any, n_targets: int) -> list[str]:
    """The names of the targets: the columns of a DataFrame ``y``, the name of a Series,
    else ``target`` (one) or ``y[0]``, ``y[1]``, ... (several)."""
    columns = getattr(y, "columns", None)
    if columns is not None and len(columns) == n_targets:
        return [str(c) for c in columns]
    name = getattr(y, "name", None)
    if n_targets == 1 and name is not None:
        return [str(name)]
    return ["target"] if n_targets == 1 else [f"y[{j}]" for j in range(n_targets)]


def _fit_of(est: Any, y_pred: Any, y: Any, owner: str) -> _Fit:
    """The predictions ``y_pred`` against the true values ``y``, both as 2-d float arrays;
    a ``y`` that does not match them (rows, targets, numbers) is a ValueError."""
    pred = np.asarray(y_pred, dtype=np.float64)
    pred = pred.reshape(len(pred), -1)
    try:
        true = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{owner}: y must hold the numeric true values of a regressor's target"
        ) from None
    true = true.reshape(len(true), -1) if true.ndim else true.reshape(1, 1)
    if true.shape != pred.shape:
        raise ValueError(
            f"{owner}: y has shape {np.shape(y)}, but {type(est).__name__} predicts "
            f"{pred.shape[1]} target(s) for {pred.shape[0]} rows"
        )
    if not np.isfinite(true).all():
        raise ValueError(f"{owner}: y holds NaN or infinite values")
    return _Fit(_target_names(y, pred.shape[1]), true, pred)


def _draw_predicted_vs_true(fit: _Fit) -> Figure:
    """One scatter panel per target (the first MAX_PANELS): prediction against true value,
    the line y = x dashed, R² and RMSE in the panel's title."""
    from matplotlib.figure import Figure

    n = min(fit.n_targets, MAX_PANELS)
    columns = min(n, _COLUMNS)
    rows = -(-n // columns)
    fig = Figure(figsize=(0.5 + 4.0 * columns, 0.4 + 3.8 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, columns, squeeze=False)).ravel()
    names = _as_text(fit.names)
    for j, ax in enumerate(axes):
        if j >= n:
            ax.set_visible(False)
            continue
        true, pred = fit.y_true[:, j], fit.y_pred[:, j]
        low = float(min(true.min(), pred.min()))
        high = float(max(true.max(), pred.max()))
        pad = 0.05 * (high - low) or 0.5
        ax.plot([low - pad, high + pad], [low - pad, high + pad], "--", color="#888", lw=1)
        ax.scatter(true, pred, s=14, alpha=0.7, color="#3b6ea5", edgecolors="none")
        ax.set_xlim(low - pad, high + pad)
        ax.set_ylim(low - pad, high + pad)
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlabel(f"true {names[j]}")
        ax.set_ylabel(f"predicted {names[j]}")
        ax.set_title(f"R² {fit.r2_text(j)}, RMSE {fit.rmse[j]:.3g}", fontsize=9)
    return fig
