"""How :class:`~sk_entmax.nn.tabnet.TabNet` turns its input columns into features.

Categorical columns are embedded, missing values (NaN) of continuous columns are filled, and
the columns named in ``missing_idxs`` get a missing-indicator feature beside them; the masks
act on the resulting *post-embedding* features and are summed back per original column.
:class:`ColumnEmbedding` holds this, the checks of its arguments included; ``TabNet`` builds
on it.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch
from torch import nn

from sk_entmax.entmax.constraints import Integer, Real, check, invalid
from sk_entmax.entmax.tracing import owner_of

__all__ = ["ColumnEmbedding"]


# the class whose parameters these are, named in their errors (unless built within
# ``called_as``, e.g. by TabNet naming itself)
_OWNER = "ColumnEmbedding"


class ColumnEmbedding(nn.Module):
    """The input columns of :class:`~sk_entmax.nn.tabnet.TabNet` as post-embedding features.

    The base class of ``TabNet``, not a module of its own: ``TabNet.__init__`` sets
    ``n_features`` and then calls :meth:`_init_embedding`, which checks the column arguments
    and puts the embeddings and the layout buffers on the network itself (so the state-dict
    keys are the network's ``embeddings.<i>.weight``). :meth:`embed` maps the input columns
    to the post-embedding features, :meth:`_to_columns` sums those back per column. The
    arguments are those of ``TabNet``.

    Categorical columns are embedded: column ``cat_idxs[i]`` holds integer codes (as floats)
    in ``[0, cat_dims[i])`` and is replaced, in place, by ``cat_emb_dims[i]`` embedding
    features. Code 0 is reserved by the caller for unknown or unseen categories; it is
    embedded like any other code. The masks act on these *post-embedding* features, and
    :meth:`~sk_entmax.nn.tabnet.TabNet.explain` sums them back per original column.

    Missing values: a continuous column may hold NaN. Each NaN is replaced by that column's
    ``missing_fill`` value (0 by default; the estimator passes the training mean, which the
    first batch norm maps to about 0). A column listed in ``missing_idxs`` also gets a second
    feature beside it, its missing indicator (1 where the value was NaN, else 0), so the
    network can learn what a missing value means there; the value and its indicator are one
    group, masked and explained together as that column. A NaN in a column not listed is
    filled only, as if the value were average.

    Attributes
    ----------
    post_embedding_dim : int
        Number of features after the embeddings, the width of the masks.
    embeddings : torch.nn.ModuleList of torch.nn.Embedding
        One per categorical column, in the order of ``cat_idxs``.
    """

    def _init_embedding(
        self,
        cat_idxs: Sequence[int],
        cat_dims: Sequence[int],
        cat_emb_dims: int | Sequence[int],
        missing_idxs: Sequence[int],
        missing_fill: Sequence[float] | None,
    ) -> None:
        """Check the column arguments; build the post-embedding layout and the embeddings."""
        cat_idxs, cat_dims, emb_dims = self._check_categorical(cat_idxs, cat_dims, cat_emb_dims)
        self.cat_idxs, self.cat_dims, self.cat_emb_dims = cat_idxs, cat_dims, emb_dims
        self.missing_idxs, fill = self._check_missing(missing_idxs, missing_fill)

        if torch.empty(0).is_meta:
            layout = self._layout_shapes(fill)
        else:
            layout = self._layout(fill)
        for name, buffer in layout.items():
            self.register_buffer(name, buffer, persistent=False)
        self.embeddings = nn.ModuleList(
            nn.Embedding(n, d) for n, d in zip(cat_dims, emb_dims, strict=True)
        )

    def _widths(self) -> list[int]:
        """Each column's number of post-embedding features: its embedding's width for a
        categorical column, 2 for a column with a missing indicator (its value, then the
        indicator), else 1."""
        widths = [1] * self.n_features
        for idx, dim in zip(self.cat_idxs, self.cat_emb_dims, strict=True):
            widths[idx] = dim
        for idx in self.missing_idxs:
            widths[idx] = 2
        return widths

    def _layout(self, fill: torch.Tensor) -> dict[str, torch.Tensor]:
        """The post-embedding layout's buffers; sets ``post_embedding_dim``.

        Each column in its original place, a categorical column widened to its embedding, a
        column with a missing indicator to its value and the indicator. ``_group`` maps each
        post-embedding feature to its column; ``_order`` puts [continuous columns,
        indicators, embedding 0, embedding 1, ...] in that layout.
        """
        n_features, cat_idxs, emb_dims = self.n_features, self.cat_idxs, self.cat_emb_dims
        widths = self._widths()
        self.post_embedding_dim = sum(widths)
        group = torch.repeat_interleave(torch.arange(n_features), torch.tensor(widths))
        is_cat = torch.zeros(n_features, dtype=torch.bool)
        is_cat[list(cat_idxs)] = True
        continuous = torch.nonzero(~is_cat).flatten()
        missing = torch.tensor(self.missing_idxs, dtype=torch.long)
        concat_group = torch.cat(
            [
                continuous,
                missing,
                *(torch.full((d,), i) for i, d in zip(cat_idxs, emb_dims, strict=True)),
            ]
        )
        return {
            "_group": group,
            "_continuous": continuous,
            "_order": torch.argsort(concat_group, stable=True),
            "_missing_idxs": missing,
            # float, so that .to(dtype) moves it with the weights; not saved (an argument)
            "_fill": fill[continuous],
            "_cat_idxs": torch.tensor(cat_idxs, dtype=torch.long),
            "_cat_dims": torch.tensor(self.cat_dims, dtype=torch.long),
        }

    def _layout_shapes(self, fill: torch.Tensor) -> dict[str, torch.Tensor]:
        """The buffers of :meth:`_layout` with their shapes and dtypes only, on the meta
        device; sets ``post_embedding_dim``.

        For a network built on the meta device (the skeleton :func:`sk_entmax.persistence.load`
        checks a file against, shapes only): no work per column, whatever ``n_features`` a
        file says, and no layout operations, which would load torch's Python meta kernels.
        """
        n_cat, n_missing = len(self.cat_idxs), len(self.missing_idxs)
        n_continuous = self.n_features - n_cat
        self.post_embedding_dim = n_continuous + n_missing + sum(self.cat_emb_dims)
        long = {"dtype": torch.long, "device": "meta"}
        return {
            "_group": torch.empty(self.post_embedding_dim, **long),
            "_continuous": torch.empty(n_continuous, **long),
            "_order": torch.empty(self.post_embedding_dim, **long),
            "_missing_idxs": torch.empty(n_missing, **long),
            "_fill": torch.empty(n_continuous, dtype=fill.dtype, device="meta"),
            "_cat_idxs": torch.empty(n_cat, **long),
            "_cat_dims": torch.empty(n_cat, **long),
        }

    def _check_categorical(
        self,
        cat_idxs: Sequence[int],
        cat_dims: Sequence[int],
        cat_emb_dims: int | Sequence[int],
    ) -> tuple[list[int], list[int], list[int]]:
        cat_idxs, cat_dims = list(cat_idxs), list(cat_dims)
        if len(cat_idxs) != len(cat_dims):
            must = f"a sequence of the length of cat_idxs ({len(cat_idxs)})"
            raise invalid("cat_dims", owner_of(_OWNER), must, cat_dims)
        cat_idxs = self._check_columns("cat_idxs", cat_idxs)
        cat_dims = [
            check(f"cat_dims[{i}]", dim, Integer(1), owner_of(_OWNER))
            for i, dim in enumerate(cat_dims)
        ]
        if isinstance(cat_emb_dims, numbers.Integral) and not isinstance(cat_emb_dims, bool):
            emb_dims = [cat_emb_dims] * len(cat_idxs)
        else:
            emb_dims = list(cat_emb_dims)
            if len(emb_dims) != len(cat_idxs):
                must = f"an integer or a sequence of the length of cat_idxs ({len(cat_idxs)})"
                raise invalid("cat_emb_dims", owner_of(_OWNER), must, cat_emb_dims)
        emb_dims = [
            check(f"cat_emb_dims[{i}]", dim, Integer(1), owner_of(_OWNER))
            for i, dim in enumerate(emb_dims)
        ]
        return cat_idxs, cat_dims, emb_dims

    def _check_columns(self, name: str, idxs: list[int]) -> list[int]:
        """``idxs`` as distinct column indices, in ``[0, n_features)``."""
        column = Integer(0, self.n_features - 1)
        idxs = [check(f"{name}[{i}]", idx, column, owner_of(_OWNER)) for i, idx in enumerate(idxs)]
        if len(set(idxs)) != len(idxs):
            raise invalid(
                name, owner_of(_OWNER), "distinct column indices (no column repeated)", idxs
            )
        return idxs

    def _check_missing(
        self, missing_idxs: Sequence[int], missing_fill: Sequence[float] | None
    ) -> tuple[list[int], torch.Tensor]:
        missing_idxs = self._check_columns("missing_idxs", list(missing_idxs))
        both = sorted(set(missing_idxs) & set(self.cat_idxs))
        if both:
            must = (
                f"continuous columns only ({both} are categorical: a categorical column's "
                "missing values take its code 0)"
            )
            raise invalid("missing_idxs", owner_of(_OWNER), must, missing_idxs)
        if missing_fill is None:
            return missing_idxs, torch.zeros(self.n_features)
        values = list(missing_fill)
        if len(values) != self.n_features:
            must = f"None or {self.n_features} finite numbers (one per column)"
            raise invalid("missing_fill", owner_of(_OWNER), must, missing_fill)
        values = [
            check(f"missing_fill[{i}]", v, Real(note="finite"), owner_of(_OWNER))
            for i, v in enumerate(values)
        ]
        return missing_idxs, torch.tensor(values, dtype=torch.get_default_dtype())

    def embed(self, X: torch.Tensor) -> torch.Tensor:
        """The post-embedding features, of shape (n_samples, post_embedding_dim)."""
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(
                f"X must have shape (n_samples, {self.n_features}); got {tuple(X.shape)}"
            )
        continuous = X[:, self._continuous] if self.cat_idxs else X
        # missing values (NaN) take the column's fill value; the indicators say where
        continuous = torch.where(torch.isnan(continuous), self._fill, continuous)
        if not self.cat_idxs and not self.missing_idxs:
            return continuous
        pieces = [continuous]
        if self.missing_idxs:
            pieces.append(torch.isnan(X[:, self._missing_idxs]).to(X.dtype))
        if not self.cat_idxs:
            return torch.cat(pieces, dim=1)[:, self._order]
        codes = X[:, self._cat_idxs]
        if (
            not torch.equal(codes, codes.round())
            or ((codes < 0) | (codes >= self._cat_dims)).any()
        ):
            raise ValueError(
                f"categorical columns {self.cat_idxs} must hold integer codes in "
                f"[0, cat_dims) = [0, {self.cat_dims})"
            )
        codes = codes.long()
        pieces += [emb(codes[:, i]).to(X.dtype) for i, emb in enumerate(self.embeddings)]
        return torch.cat(pieces, dim=1)[:, self._order]

    def _to_columns(self, M: torch.Tensor) -> torch.Tensor:
        """Sum post-embedding features back per original column (zeros stay exact zeros)."""
        if self.post_embedding_dim == self.n_features:  # every column one feature, in place
            return M
        out = M.new_zeros(M.shape[0], self.n_features)
        return out.index_add_(1, self._group, M)
