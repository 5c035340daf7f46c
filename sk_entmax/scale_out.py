"""Training and predicting on data larger than memory: Dask collections block by block, and
networks data-parallel over processes.

:func:`fit_blocks` trains an estimator that has ``partial_fit``
(:class:`~sk_entmax.SparsemaxClassifier`, :class:`~sk_entmax.EntmaxClassifier`,
:class:`~sk_entmax.TabNetEntmaxClassifier`) on a ``dask.array`` or
``dask.dataframe`` whose blocks of rows are computed one after another and handed to
``partial_fit``, so that only one block is in memory at a time; :func:`predict_blocks`
maps a fitted estimator's ``predict``, ``predict_proba`` or ``decision_function`` over the
blocks lazily. These are what ``dask_ml.wrappers.Incremental`` and ``ParallelPostFit`` do,
and those work with these estimators too (checked with dask-ml 2025.1.0 and scikit-learn
1.9.1): ``partial_fit`` decays its own step with the stream, so plain passes of either
settle near the in-memory fit. ``fit_blocks`` needs Dask alone, where dask-ml brings numba,
llvmlite, dask-glm and sparse.

:func:`data_parallel` makes the fits inside it one data-parallel fit over a
``torch.distributed`` process group (``torchrun --nproc_per_node 2 script.py``): each process
fits the same estimator on its own shard of the rows, and the gradients of every step, the
batch norms' statistics and the losses are averaged over the processes, so every process
ends with the same model, and rank 0 can ``save`` it. The mini-batch estimators (TabNet,
``solver="adam"``) train this way, and so does each ``partial_fit`` call made inside it (a
call outside it trains on its process's rows alone).

Dask is imported when a function is called: the ``dask`` extra installs it
(``pip install -e ".[dask]"`` in a clone).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from sk_entmax._engine.distributed import data_parallel
from sk_entmax.entmax.constraints import Boolean, Integer, Options, check, invalid

__all__ = ["data_parallel", "fit_blocks", "predict_blocks"]

_METHODS = ("predict", "predict_proba", "decision_function")


def _blocks(data: Any, name: str) -> list:
    """The delayed blocks of rows of a Dask array (one column block) or data frame."""
    if not hasattr(data, "to_delayed"):
        raise invalid(name, "fit_blocks", "a dask.array or dask.dataframe collection", data)
    if hasattr(data, "divisions"):  # a data frame or series: one block per partition
        return list(data.to_delayed())
    if data.ndim == 2 and data.numblocks[1] != 1:
        data = data.rechunk({1: -1})  # a block of rows holds every column
    delayed = data.to_delayed()
    return list(delayed[:, 0] if data.ndim == 2 else delayed)


def fit_blocks(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    classes: Any = None,
    sample_weight: Any = None,
    passes: int = 1,
    shuffle: bool = True,
    random_state: int | None = 0,
) -> Any:
    """Train ``estimator`` by ``partial_fit`` on the blocks of rows of Dask collections.

    Each pass computes the blocks one at a time (``X``'s and ``y``'s blocks of the same rows
    together), and calls ``estimator.partial_fit`` on each, so the fitting process holds one
    block (and the estimator) at a time, however large ``X`` is.

    Parameters
    ----------
    estimator : estimator with ``partial_fit``
        E.g. :class:`~sk_entmax.SparsemaxClassifier`, :class:`~sk_entmax.EntmaxClassifier`
        or :class:`~sk_entmax.TabNetEntmaxClassifier`;
        trained in place (continued if already fitted, as ``partial_fit`` does).
    X : dask.array.Array of shape (n_samples, n_features) or dask.dataframe.DataFrame
        The training data; its blocks of rows (partitions of a data frame) are the units
        handed to ``partial_fit``.
    y : dask.array.Array of shape (n_samples,) or dask.dataframe.Series
        The labels, in blocks of the same rows as ``X``.
    classes : array-like, default=None
        Every label of the data; needed unless the estimator is already fitted. None reads
        them from ``y`` (one pass over ``y`` alone); a multi-label ``y`` (an indicator
        matrix) needs none.
    sample_weight : dask.array.Array of shape (n_samples,) or dask.dataframe.Series, default=None
        Per-row weights, in blocks of the same rows as ``X``, handed to ``partial_fit``
        with each block.
    passes : int, default=1
        Passes over the data. There is no schedule here: ``partial_fit`` decays its step
        with the stream itself (see the estimators' ``partial_fit``), so passes here end
        as plain passes in a loop or through dask-ml's ``Incremental`` do.
    shuffle : bool, default=True
        Visit the blocks in a random order in each pass (drawn from ``random_state``);
        False takes them in order.
    random_state : int or None, default=0
        Seeds the order of the blocks.

    Returns
    -------
    estimator
        The trained estimator.

    Raises
    ------
    ValueError
        If ``y`` or ``sample_weight`` do not have ``X``'s blocks of rows: checked before any
        training where the sizes are known (Dask arrays' chunks, data frames' known
        divisions), else at the block that differs.

    Notes
    -----
    A call that fails at any block (a mismatch, a ``partial_fit`` error such as a NaN
    there, a failed compute) leaves ``estimator`` as it was before the call: the blocks
    already trained are not kept. A Ctrl-C (``KeyboardInterrupt``) keeps them.

    A TabNet estimator learns its categories and which columns have missing values from
    the first block it trains on (the first of a shuffled order, with ``shuffle=True``):
    a category first seen in a later block is read as unknown, as at predict. Give that
    first block every category (or fit the encoding on a sample, and pass the columns
    already encoded).
    """
    import dask

    passes = check("passes", passes, Integer(1), "fit_blocks")
    shuffle = check("shuffle", shuffle, Boolean(), "fit_blocks")
    if not hasattr(estimator, "partial_fit"):
        raise invalid("estimator", "fit_blocks", "an estimator with partial_fit", estimator)
    X_blocks, y_blocks = _blocks(X, "X"), _blocks(y, "y")
    w_blocks = (
        [None] * len(X_blocks)
        if sample_weight is None
        else _blocks(sample_weight, "sample_weight")
    )
    for name, blocks in (("y", y_blocks), ("sample_weight", w_blocks)):
        if len(blocks) != len(X_blocks):
            raise ValueError(
                f"X has {len(X_blocks)} blocks of rows and {name} {len(blocks)}: give them the "
                f"same blocks of rows (e.g. {name}.rechunk(X.chunks[0]))"
            )
    _check_same_rows(X, {"y": y, "sample_weight": sample_weight})
    multilabel = getattr(y, "ndim", 1) == 2
    if classes is None and not multilabel and not hasattr(estimator, "classes_"):
        import dask.array as da

        labels = y.unique() if hasattr(y, "divisions") else da.unique(y)  # block by block
        classes = np.unique(np.asarray(dask.compute(labels)[0]))
    rng = np.random.default_rng(random_state)
    before = copy.deepcopy(vars(estimator))  # a failure at any block leaves it as it was
    try:
        for _ in range(passes):
            order = rng.permutation(len(X_blocks)) if shuffle else np.arange(len(X_blocks))
            for i in order:
                X_block, y_block, w_block = dask.compute(X_blocks[i], y_blocks[i], w_blocks[i])
                for name, block in (("y", y_block), ("sample_weight", w_block)):
                    if block is not None and len(block) != len(X_block):
                        raise ValueError(
                            f"block {i} has {len(X_block)} rows of X and {len(block)} of "
                            f"{name}: give them the same blocks of rows"
                        )
                if len(X_block) == 0:
                    continue
                extra = {} if w_block is None else {"sample_weight": w_block}
                if not hasattr(estimator, "classes_"):
                    extra["classes"] = classes
                estimator.partial_fit(X_block, y_block, **extra)
    except Exception:
        vars(estimator).clear()
        vars(estimator).update(before)
        raise
    return estimator


def _check_same_rows(X: Any, others: dict[str, Any]) -> None:
    """Refuse, before any training, ``others`` (y, sample_weight) whose blocks of rows are
    not ``X``'s, where their sizes are known (a Dask array's chunks, a data frame's known
    divisions): a mismatch found at block k would come after k blocks were trained."""
    for name, data in others.items():
        if data is None:
            continue
        if hasattr(X, "chunks") and hasattr(data, "chunks"):
            rows, theirs = tuple(X.chunks[0]), tuple(data.chunks[0])
            known = not any(np.isnan(n) for n in (*rows, *theirs))
            if known and rows != theirs:
                raise ValueError(
                    f"X's blocks of rows have {rows} rows and {name}'s {theirs}: give them "
                    f"the same blocks of rows (e.g. {name}.rechunk(X.chunks[0])); nothing "
                    "was trained"
                )
        elif getattr(X, "known_divisions", False) and getattr(data, "known_divisions", False):
            if tuple(X.divisions) != tuple(data.divisions):
                raise ValueError(
                    f"X's partitions and {name}'s have different divisions: give them the "
                    "same partitions of rows; nothing was trained"
                )


def predict_blocks(estimator: Any, X: Any, method: str = "predict") -> Any:
    """Map ``estimator``'s ``method`` over the blocks of rows of ``X``, lazily.

    Parameters
    ----------
    estimator : fitted estimator
        Any fitted estimator of this package (or of scikit-learn).
    X : dask.array.Array of shape (n_samples, n_features) or dask.dataframe.DataFrame
        The rows to predict.
    method : {"predict", "predict_proba", "decision_function"}, default="predict"
        The method to map over the blocks.

    Returns
    -------
    dask.array.Array
        One block of output per block of ``X``'s rows: shape (n_samples,) for ``predict``
        (of a single-label target), (n_samples, n_outputs) otherwise. Nothing is computed
        until it is asked for (``.compute()``, ``.to_zarr``, ...).
    """
    import dask
    import dask.array as da

    method = check("method", method, Options(_METHODS), "predict_blocks")
    if not hasattr(estimator, method):
        raise invalid(
            "method", "predict_blocks", f"a method of {type(estimator).__name__}", method
        )
    function = getattr(estimator, method)
    frame = hasattr(X, "divisions")
    if not frame and (not isinstance(X, da.Array) or X.ndim != 2):
        raise invalid("X", "predict_blocks", "a 2-d dask.array or a dask.dataframe", X)
    if not frame and X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    if not frame and any(np.isnan(n) for n in X.chunks[0]):
        raise ValueError(
            "predict_blocks: X's blocks of rows have unknown sizes; call "
            "X.compute_chunk_sizes() first"
        )
    lengths = [int(n) for n in (X.map_partitions(len).compute() if frame else X.chunks[0])]
    # the output's width and dtype, from a prediction of the first row of the first block
    # that has rows (or of a row of zeros where none has)
    probe = np.asarray(function(_first_row(X, lengths, frame)))
    width = probe.shape[1:]

    def apply(block: Any) -> np.ndarray:
        if len(block) == 0:  # an empty partition or block: no call, an empty output
            return np.empty((0, *width), dtype=probe.dtype)
        return np.asarray(function(block))

    if frame:  # a data frame: each partition as it is (column names kept)
        blocks = [
            da.from_delayed(dask.delayed(apply)(part), shape=(n, *width), dtype=probe.dtype)
            for part, n in zip(X.to_delayed(), lengths, strict=True)
            if n
        ]
        return da.concatenate(blocks) if blocks else da.zeros((0, *width), dtype=probe.dtype)
    if probe.ndim == 1:
        return X.map_blocks(apply, drop_axis=1, dtype=probe.dtype)
    return X.map_blocks(apply, chunks=(X.chunks[0], width), dtype=probe.dtype)


def _first_row(X: Any, lengths: list[int], frame: bool) -> Any:
    """The first row of the first block of ``X`` that has rows, computed; where no block
    has any, a row of zeros (NaN in a data frame's columns that are not numeric)."""
    import pandas as pd

    first = next((i for i, n in enumerate(lengths) if n), None)
    if first is not None:
        if frame:
            return X.get_partition(first).head(1, npartitions=1)
        start = sum(lengths[:first])
        return X[start : start + 1].compute()
    if not frame:
        return np.zeros((1, X.shape[1]), dtype=X.dtype)
    row = pd.DataFrame(X._meta).reindex([0])
    numeric = row.select_dtypes("number").columns
    row[numeric] = 0
    return row
