"""Whether a column holds signal a model misses: a score test on the model's residuals.

A column selection (``sk_entmax.nn.tabnet_selection``) measures what a column is worth to
the model *as it is*: the rise of the held-out loss when the column is hidden. A column the
model has not learned to read yet is worth nothing by that measure, however much the label
depends on it (on a wide table with a rare class, four of the six informative
columns were dropped before the network had learned them, and the fit then predicted one
class for every row).

This test asks the other question: does the label still depend on the column *given the
model's scores*? Its evidence is the gradient of each row's loss with respect to the
scores (for a probability model, the predicted probabilities minus the label: the
residual). Where the model misses what a column says, the residual's mean moves with the
column. The column is described by a few centred functions of it, ``H``:

- a continuous column: its normal scores (the normal quantile of its rank) and their
  squares, so that monotone and U-shaped dependences show (a sine or an absolute value
  shows through one of the two);
- a categorical column: an indicator per level (the levels with fewer than
  ``MIN_LEVEL_ROWS`` rows share one, or join the largest level when they are fewer than
  that together);
- missing values (NaN): an indicator of their own, when there are ``MIN_LEVEL_ROWS``.

A handful of rows, whatever their residuals, so cannot decide on their own.

The residuals are whitened across the outputs (their covariance's pseudo-inverse, so that a
binary classifier's two mirrored outputs count once), and the statistic, the sum over the
whitened outputs ``r`` of ``s_r' (H'H)^+ s_r`` with ``s_r = H' r``, is close to a chi-squared
with ``rank(H)`` times the outputs' rank degrees of freedom when the residual does not depend
on the column. The selection asks what a column says *beyond the columns the model keeps
reading* (``given``): the column's functions are first made orthogonal to theirs (a
remainder below ``_RANK_TOL`` of the column's own size counts as nothing). A model still
learning a kept column leaves a residual that every column correlated with it follows
(on a short fit of breast_cancer's correlated measurements, tested alone, nearly
every column looked needed and the certified share fell from 0.70 to 0.42); partialled
out, such a column says nothing more, while one the label depends on of its own still does.

A column the model does not read cannot have been overfitted, so the test is as valid for a
dropped column as for a kept one; on rows the model trained on, a kept column's residual
dependence can only be shrunk by fitting (the test then keeps less, not more), so the
selection runs it on the fit's rows, training rows included.

Pure torch; no sklearn.
"""

from __future__ import annotations

import torch

__all__ = ["MIN_LEVEL_ROWS", "residual_pvalues"]

#: a categorical level with fewer rows shares one indicator with the other small levels
#: (and the missing values need as many for an indicator)
MIN_LEVEL_ROWS = 20
#: eigenvalues below this share of the largest count as 0 (a rank-deficient covariance)
_RANK_TOL = 1e-9


def _features(values: torch.Tensor, categorical: bool) -> torch.Tensor:
    """The centred functions ``H`` (n_rows, d) that describe one column (see the module)."""
    missing = torch.isnan(values)
    present = ~missing
    n = values.shape[0]
    columns: list[torch.Tensor] = []
    if present.any():
        x = values[present]
        if categorical:
            levels, codes = torch.unique(x, return_inverse=True)
            counts = torch.bincount(codes, minlength=levels.numel())
            small = counts < MIN_LEVEL_ROWS
            if int(counts[small].sum()) < MIN_LEVEL_ROWS:  # too few to judge even pooled:
                small_to = int(torch.argmax(counts))  # they join the largest level
            else:
                small_to = int(torch.nonzero(small)[0])  # they share the first small one's
            codes = torch.where(small[codes], small_to, codes)
            inner = torch.zeros(x.shape[0], levels.numel(), dtype=torch.float64)
            inner[torch.arange(x.shape[0]), codes] = 1.0
            inner = inner[:, inner.sum(0) > 0]
        else:
            # ties share their mean rank, so a column of few values gets few distinct scores
            order = torch.argsort(x, stable=True)
            ranks = torch.empty(x.shape[0], dtype=torch.float64)
            ranks[order] = torch.arange(1, x.shape[0] + 1, dtype=torch.float64)
            _, inverse = torch.unique(x, return_inverse=True)
            sums = torch.zeros(int(inverse.max()) + 1, dtype=torch.float64)
            counts = torch.zeros_like(sums)
            sums.index_add_(0, inverse, ranks)
            counts.index_add_(0, inverse, torch.ones_like(ranks))
            scores = torch.special.ndtri((sums / counts)[inverse] / (x.shape[0] + 1))
            inner = torch.stack([scores, scores * scores], 1)
        # a missing value takes the present values' mean: it adds nothing but through its
        # own indicator (below)
        full = inner.mean(0, keepdim=True).expand(n, -1).clone()
        full[present] = inner
        columns.append(full)
    if int(missing.sum()) >= MIN_LEVEL_ROWS:
        columns.append(missing.double()[:, None])
    H = torch.cat(columns, 1) if columns else torch.zeros(n, 0, dtype=torch.float64)
    return H - H.mean(0, keepdim=True)


def _whiten(gradient: torch.Tensor) -> torch.Tensor:
    """The centred residuals times their covariance's inverse square root, over its range
    (columns of unit variance, uncorrelated; as many as the covariance's rank)."""
    g = gradient.detach().double().cpu()
    if g.dim() == 1:
        g = g[:, None]
    g = g - g.mean(0, keepdim=True)
    values, vectors = torch.linalg.eigh(g.T @ g / g.shape[0])
    keep = values > _RANK_TOL * values.max().clamp_min(1e-300)
    return g @ vectors[:, keep] / values[keep].sqrt()


def _given_basis(given: torch.Tensor | None, categorical: list[bool]) -> torch.Tensor | None:
    """An orthonormal basis of the functions of the ``given`` columns (``_features`` of
    each, centred), or None without any."""
    if given is None or given.shape[1] == 0:
        return None
    given = given.detach().double().cpu()
    F = torch.cat([_features(given[:, j], categorical[j]) for j in range(given.shape[1])], 1)
    if F.shape[1] == 0:
        return None
    Q, R = torch.linalg.qr(F)
    diagonal = R.diagonal().abs()
    return Q[:, diagonal > _RANK_TOL * diagonal.max().clamp_min(1e-300)]


def residual_pvalues(
    values: torch.Tensor,
    gradient: torch.Tensor,
    categorical: list[bool],
    given: torch.Tensor | None = None,
    given_categorical: list[bool] | None = None,
) -> torch.Tensor:
    """Per column, the p-value of the hypothesis that the residual does not depend on it.

    Parameters
    ----------
    values : torch.Tensor of shape (n_rows, n_columns)
        The columns' values on the test rows (categorical ones as codes; NaN is missing).
    gradient : torch.Tensor of shape (n_rows,) or (n_rows, n_outputs)
        Each row's gradient of its loss with respect to the model's scores.
    categorical : list of bool
        Per column, whether its values are category codes.
    given : torch.Tensor of shape (n_rows, n_given), optional
        Columns the model keeps reading: each tested column's functions are first made
        orthogonal to theirs, so that a column is flagged for what it says *beyond* them.
        (A model still learning a kept column leaves a residual that every column
        correlated with it follows; partialled out, such a column says nothing more.)
    given_categorical : list of bool, optional
        Per given column, whether its values are category codes (default: none).

    Returns
    -------
    torch.Tensor of shape (n_columns,), float64
        1 for a column that takes one value on the rows, or when the residual is constant.
    """
    values = values.detach().double().cpu()
    out = torch.ones(values.shape[1], dtype=torch.float64)
    white = _whiten(gradient)
    if white.shape[1] == 0:
        return out
    if given is not None and given_categorical is None:
        given_categorical = [False] * given.shape[1]
    basis = _given_basis(given, given_categorical or [])
    for j in range(values.shape[1]):
        H = _features(values[:, j], categorical[j])
        if H.shape[1] == 0:
            continue
        # what is left of the column beyond the given ones counts only when it is more
        # than rounding: its eigenvalues are measured against the column's own size
        tol = _RANK_TOL * float((H * H).sum())
        if basis is not None:
            H = H - basis @ (basis.T @ H)
        gram = H.T @ H
        rank = int(torch.linalg.matrix_rank(gram, atol=tol, rtol=_RANK_TOL, hermitian=True))
        if rank == 0:
            continue
        s = H.T @ white  # (d, r)
        inverse = torch.linalg.pinv(gram, atol=tol, rtol=_RANK_TOL, hermitian=True)
        stat = (s * (inverse @ s)).sum()
        df = torch.tensor(rank * white.shape[1] / 2.0, dtype=torch.float64)
        out[j] = torch.special.gammaincc(df, stat / 2.0)
    return out
