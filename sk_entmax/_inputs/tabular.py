"""Tables as they come, for a network: categorical columns as codes, gaps in numbers kept.

A DataFrame's text, category and boolean columns (or the columns ``categorical_features``
names) become ordinal codes for the network to embed (0: unknown or missing); numeric
columns become float32 with NaN where a value is missing, and the columns with gaps at fit
are recorded (``missing_features_``) with the value that fills a gap. The estimator keeps the
fitted encoding as its own attributes, so that it is cloned, pickled and saved with it.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
from sklearn.preprocessing import OrdinalEncoder
from sklearn.utils.validation import check_array, check_consistent_length, validate_data

from sk_entmax._engine.training import TrainingPlan
from sk_entmax._inputs.numeric import _numeric_hint

__all__ = [
    "TabularInputMixin",
    "categorical_encoder",
    "encoder_with_categories",
    "same_categories",
]

#: how the categorical columns are encoded: code -1 for a category unseen at fit or a missing
#: value (the network sees it as the reserved code 0), float32 codes
_ENCODER_SETTINGS: dict[str, Any] = {
    "handle_unknown": "use_encoded_value",
    "unknown_value": -1,
    "encoded_missing_value": -1,
    "dtype": np.float32,
}


def categorical_encoder(**settings: Any) -> OrdinalEncoder:
    """The (unfitted) encoder of the categorical columns; ``settings`` override the
    defaults (``dtype``, for a model saved with float64 codes)."""
    return OrdinalEncoder(**{**_ENCODER_SETTINGS, **settings})


def encoder_with_categories(categories: list, **settings: Any) -> OrdinalEncoder:
    """A fitted encoder whose categories are exactly ``categories``, one array per column,
    each sorted and unique as fit leaves them: the seam through which
    :func:`sk_entmax.persistence.load` rebuilds a saved model's encoder.

    Raises
    ------
    ValueError
        When a column has no category, or its categories are not sorted and unique.
    """
    longest = max((len(c) for c in categories), default=0)
    if not longest:
        raise ValueError("a categorical column has no category")
    data = np.empty((longest, len(categories)), dtype=object)
    for j, column in enumerate(categories):
        data[:, j] = np.resize(np.asarray(column, dtype=object), longest)
    encoder = categorical_encoder(**settings).fit(data)  # fitting sorts and dedups
    for saved, got in zip(categories, encoder.categories_, strict=True):
        if not same_categories(np.asarray(saved, dtype=object), np.asarray(got, dtype=object)):
            raise ValueError("the categories of a column are not sorted and unique")
    encoder.categories_ = [np.asarray(c) for c in categories]
    return encoder


def same_categories(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays of categories are equal, NaN equal to NaN."""
    if len(a) != len(b):
        return False
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        nan_x = isinstance(x, float) and x != x
        nan_y = isinstance(y, float) and y != y
        if nan_x != nan_y or (not nan_x and x != y):
            return False
    return True


def _is_categorical_dtype(dtype: Any) -> bool:
    import pandas as pd

    return (
        isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
    )


def _column_name(index: int, names: np.ndarray | None) -> str:
    return repr(str(names[index])) if names is not None else str(index)


def _numeric_values(
    X: np.ndarray, numeric: np.ndarray, names: np.ndarray | None, owner: str
) -> np.ndarray:
    """The numeric columns as float32, every kind of missing value (None, NaN, pd.NA) made
    NaN; an infinite value (or one beyond float32's range) raises, naming its column and
    the estimator ``owner``."""
    import pandas as pd

    values = X if numeric is None else X[:, numeric]
    if values.dtype == object:
        values = values.copy()
        values[pd.isna(values)] = np.nan
    with np.errstate(over="ignore"):
        values = np.asarray(values, dtype=np.float32)
    infinite = np.isinf(values)
    if infinite.any():
        j = int(np.flatnonzero(infinite.any(axis=0))[0])
        rows = np.flatnonzero(infinite[:, j])
        column = j if numeric is None else int(numeric[j])
        raise ValueError(
            f"Input X contains infinity (or a value beyond float32's range, about 3.4e38) in "
            f"numeric column {_column_name(column, names)}: {len(rows)} value(s), the first "
            f"in row {rows[0]}. {owner} needs finite numbers; missing values "
            "(NaN, None, pd.NA) are fine, they get a learned missing indicator"
        )
    return values


#: the most a numeric column's squared deviations from its mean may sum to over the rows of
#: one batch: half of float32's largest number, so that no batch norm's variance (the sum
#: over a batch around the batch's mean, which is at most this) overflows to infinity
_MAX_SQUARED_SPREAD = float(np.finfo(np.float32).max) / 2
#: the largest batch ``batch_size="auto"`` gives (on a GPU; 1024 on a CPU)
_LARGEST_AUTO_BATCH = 16384


def _check_spread(
    values: np.ndarray, numeric: np.ndarray | None, names: Any, batch_rows: int
) -> None:
    """Refuse, naming it, a numeric column (of the training rows, float32) whose squared
    deviations from its mean, summed over the ``batch_rows`` largest (the worst batch),
    exceed :data:`_MAX_SQUARED_SPREAD` (a column of values around 1e19: the first batch
    norm's variance would be infinite, and the column then silently ignored)."""
    n = values.shape[0]
    if not values.size:
        return
    with np.errstate(invalid="ignore", over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column of missing values only
        wide = values.astype(np.float64)
        squares = np.nan_to_num((wide - np.nanmean(wide, axis=0)) ** 2, nan=0.0)
        if batch_rows < n:
            squares = np.partition(squares, n - batch_rows, axis=0)[n - batch_rows :]
        spread = squares.sum(axis=0)
    too_wide = np.flatnonzero(spread > _MAX_SQUARED_SPREAD)
    if too_wide.size:
        j = int(too_wide[0])
        column = j if numeric is None else int(numeric[j])
        top = float(np.nanmax(np.abs(wide[:, j])))
        raise ValueError(
            f"numeric column {_column_name(column, names)} spreads too widely for float32 "
            f"(values up to {top:.3g} in magnitude; its squared deviations from its mean, "
            f"over a batch of {batch_rows} rows, sum to up to {spread[j]:.3g}, beyond "
            f"{_MAX_SQUARED_SPREAD:.3g}): the network's batch normalization would compute an "
            "infinite variance and ignore the column. Rescale it first (StandardScaler, or "
            "a logarithm)"
        )


def _check_labels_present(y: Any) -> None:
    """Refuse a target with missing labels (NaN, None, pd.NA), naming how many and where:
    fit drops no rows on its own."""
    import pandas as pd

    if y is None or hasattr(y, "toarray"):  # no target, or a sparse indicator matrix
        return
    try:
        missing = np.asarray(pd.isna(np.asarray(y)))
    except (TypeError, ValueError):  # not array-like: validate_data says why
        return
    if missing.ndim == 0 or not missing.any():
        return
    rows = np.flatnonzero(missing.reshape(len(missing), -1).any(axis=1))
    raise ValueError(
        f"Input y contains NaN (a missing label: NaN, None or pd.NA) in {len(rows)} of "
        f"{len(missing)} rows, the first in row {rows[0]}; every training row needs a label "
        "and fit drops none. Remove those rows first, e.g. keep = y.notna(); "
        "X, y = X[keep], y[keep]"
    )


def _categorical_values(X: np.ndarray, cats: np.ndarray) -> np.ndarray:
    """The categorical columns as objects, every kind of missing value (None, NaN, pd.NA)
    made NaN, which the encoder maps to the reserved "unknown" code."""
    import pandas as pd

    values = np.asarray(X[:, cats], dtype=object)
    values[pd.isna(values)] = np.nan
    return values


#: a column of text whose values are numbers in at least this share of its non-missing rows is
#: probably a numeric column with a few stray entries ("?", "n/a")
_NUMERIC_SHARE = 0.9
#: a categorical column with a distinct value in at least this share of its non-missing rows
#: (and at least _ID_MIN_ROWS of them) is probably an identifier
_ID_SHARE = 0.9
_ID_MIN_ROWS = 20


def _warn_dirty_columns(
    values: np.ndarray, cats: np.ndarray, names: np.ndarray | None, detected: bool
) -> None:
    """Warn, once per column and naming it, about categorical columns that are probably
    not categories: one mostly of numbers (``detected``: its dtype made it categorical), one
    with a distinct value in almost every row (an identifier). ``values``: the categorical
    columns as :func:`_categorical_values` gives them."""
    import pandas as pd

    for j in range(values.shape[1]):
        column = _column_name(int(cats[j]), names)
        present = values[:, j][~pd.isna(values[:, j])]
        if not present.size:
            continue
        if detected:
            parsed = pd.to_numeric(pd.Series(present, dtype=object), errors="coerce")
            numbers = parsed.notna().to_numpy()
            share = numbers.mean()
            if share >= _NUMERIC_SHARE:
                stray = list(dict.fromkeys(present[~numbers].tolist()))[:3]
                what = (
                    f"the others ({', '.join(map(repr, stray))}) made it a column of text"
                    if stray
                    else "its dtype made it a column of text"
                )
                warnings.warn(
                    f"categorical column {column}: {share:.1%} of its values are numbers; "
                    f"{what}, so it is embedded as {len(pd.unique(present))} categories and "
                    "its order is lost. If it is numeric, convert it first (e.g. "
                    "pd.to_numeric(X[column], errors='coerce'), which makes the others "
                    "missing values)",
                    UserWarning,
                    stacklevel=4,
                )
                continue
        distinct = len(pd.unique(present))
        if present.size >= _ID_MIN_ROWS and distinct >= _ID_SHARE * present.size:
            warnings.warn(
                f"categorical column {column}: {distinct} distinct values in {present.size} "
                f"rows ({distinct / present.size:.0%}): an identifier? Nearly every value "
                "is its own category, learned from one row and 'unknown' in new data; "
                "drop the column, or leave it out of categorical_features",
                UserWarning,
                stacklevel=4,
            )


def _warn_unseen(
    values: np.ndarray, codes: np.ndarray, cats: np.ndarray, names: np.ndarray | None
) -> None:
    """Warn, once per categorical column, about values the encoder did not see at fit (a
    new category, a number in a column of text, ...): they get the "unknown" code, as a
    missing value does, and the model has learned nothing about them."""
    import pandas as pd

    unseen = codes == -1
    if not unseen.any():
        return
    unseen &= ~pd.isna(values)
    for j in np.flatnonzero(unseen.any(axis=0)):
        rows = np.flatnonzero(unseen[:, j])
        column = _column_name(int(cats[j]), names)
        most = (
            f" In {len(rows)} of {len(values)} rows, most of them: the model learned nothing "
            "from this column for those rows (an identifier, or a column that changed?)"
            if 2 * len(rows) > len(values)
            else ""
        )
        warnings.warn(
            f"categorical column {column}: {len(rows)} value(s) not seen at fit (the "
            f"first: {values[rows[0], j]!r}) are encoded as the 'unknown' category, like a "
            f"missing value.{most}",
            UserWarning,
            stacklevel=2,
        )


def _warn_missing_unseen(
    values: np.ndarray, numeric: np.ndarray, indicated: np.ndarray, names: np.ndarray | None
) -> None:
    """Warn, once per numeric column, about missing values in a column that had none at fit:
    the network fills them with the column's training mean, and has no missing indicator
    (nothing learned) for them."""
    missing = np.isnan(values)
    if not missing.any():
        return
    for j in np.flatnonzero(missing.any(axis=0)):
        column = int(numeric[j])
        if column in indicated:
            continue
        warnings.warn(
            f"numeric column {_column_name(column, names)}: {int(missing[:, j].sum())} "
            "missing value(s), where the training data had none; they are filled with the "
            "column's training mean (the model learned no missing indicator for it)",
            UserWarning,
            stacklevel=2,
        )


#: what TabNet advises for text in a column it reads as numbers (a plain array's)
_TEXT_ADVICE = (
    "embeds the text and categorical columns of a pandas DataFrame (dtype object, string or "
    "category); in a plain array every column must be numeric: pass X as a DataFrame whose "
    "text columns have such a dtype (e.g. pd.DataFrame(X).astype({0: 'category'})), or "
    "encode the text first (e.g. OrdinalEncoder)"
)


class TabularInputMixin:
    """The data hooks of an estimator that takes tables with categorical and missing values
    (``_validate_fit_data``, ``_validate_predict_data``); needs a ``categorical_features``
    parameter."""

    def _categorical_indices(self, X: Any) -> np.ndarray:
        columns = getattr(X, "columns", None)
        n_features = X.shape[1]
        spec = self.categorical_features
        if spec is None:
            if columns is None:
                return np.array([], dtype=int)
            return np.array(
                [i for i, dtype in enumerate(X.dtypes) if _is_categorical_dtype(dtype)],
                dtype=int,
            )
        spec = np.asarray(spec)
        if spec.dtype == bool:
            if spec.shape != (n_features,):
                raise ValueError(
                    f"categorical_features as a mask needs {n_features} entries, "
                    f"got {spec.shape[0]}"
                )
            return np.flatnonzero(spec)
        indices = []
        for item in spec.tolist():
            if isinstance(item, str):
                if columns is None or item not in list(columns):
                    raise ValueError(
                        f"categorical_features names column {item!r}, which is not a "
                        "column of X (column names need a DataFrame)"
                    )
                indices.append(list(columns).index(item))
            elif isinstance(item, numbers.Integral) and -n_features <= item < n_features:
                indices.append(int(item) % n_features)
            else:
                raise ValueError(
                    f"categorical_features entry {item!r} is neither a column name nor a "
                    f"column index in [0, {n_features})"
                )
        return np.unique(np.array(indices, dtype=int))

    def _encode(self, X: np.ndarray, fitting: bool = False) -> np.ndarray:
        """Numeric columns to float32 (NaN where missing), categorical columns to codes
        (0 = unknown or missing). At fit, also records which numeric columns hold missing
        values (``missing_features_``) and the value that fills a gap in each column."""
        cats = self.categorical_features_
        names = getattr(self, "feature_names_in_", None)
        numeric = np.setdiff1d(np.arange(X.shape[1]), cats)
        if not cats.size:
            # all numeric: float32 input is used as it is, anything else converted once
            out = _numeric_values(X, None, names, type(self).__name__)
            values = out
        else:
            out = np.empty(X.shape, dtype=np.float32)
            values = (
                _numeric_values(X, numeric, names, type(self).__name__) if numeric.size else None
            )
            if numeric.size:
                out[:, numeric] = values
            categorical = _categorical_values(X, cats)
            codes = self._encoder.transform(categorical)
            _warn_unseen(categorical, codes, cats, names)
            out[:, cats] = codes + 1  # -1 (unknown or missing) becomes the reserved 0
        if fitting:
            if values is not None:
                size = getattr(self, "batch_size", None)
                whole = isinstance(size, numbers.Integral) and not isinstance(size, bool)
                rows = int(size) if whole and size > 0 else _LARGEST_AUTO_BATCH
                _check_spread(values, None if not cats.size else numeric, names, rows)
            self._fit_missing(values, numeric, X.shape[1])
        elif values is not None and numeric.size:
            _warn_missing_unseen(values, numeric, self._missing_features(), names)
        return out

    def _fit_missing(self, values: np.ndarray | None, numeric: np.ndarray, n: int) -> None:
        fill = np.zeros(n)
        missing = np.array([], dtype=int)
        if values is not None and numeric.size and len(values):
            # the training mean of each numeric column, of its observed values where it has
            # gaps (0 when it has nothing else); column by column, without a copy of X
            gaps = np.isnan(values)
            has_gaps = gaps.any(axis=0)
            means = values.sum(axis=0, dtype=np.float64) / len(values)
            for j in np.flatnonzero(has_gaps):
                observed = values[~gaps[:, j], j]
                means[j] = observed.mean(dtype=np.float64) if observed.size else 0.0
            fill[numeric] = means
            missing = numeric[has_gaps]
        names = getattr(self, "feature_names_in_", None)
        # by name where X had column names (as feature_names_in_ holds them), else by index
        self.missing_features_ = names[missing] if names is not None else missing.astype(np.int64)
        self._missing_fill = [float(v) for v in fill]

    def _missing_features(self) -> np.ndarray:
        """The indices of the columns with a missing indicator (``missing_features_`` holds
        their names where X had column names); none for a model saved before missing
        indicators existed."""
        features = getattr(self, "missing_features_", None)
        if features is None:
            return np.array([], dtype=np.int64)
        if features.dtype.kind in "iu":
            return features.astype(np.int64)
        position = {name: i for i, name in enumerate(self.feature_names_in_)}
        return np.array([position[name] for name in features], dtype=np.int64)

    def _validate_fit_data(self, X, y, plan: TrainingPlan, params: dict[str, Any]):
        return self._validate_table(X, y)

    def _validate_table(self, X, y, encoding: Any = None):
        """Validate the training table; fit the encoding of its columns, or take that of
        ``encoding``, a fitted estimator with this mixin that saw the same columns (the
        missing indicators and categories it learned are kept; the columns must match)."""
        # DataFrame dtypes are read before validate_data turns X into an array; anything
        # that is not 2-d is left for validate_data to reject with its usual message
        cats = (
            self._categorical_indices(X)
            if encoding is None and getattr(X, "ndim", 0) == 2
            else None
        )
        _check_labels_present(y)
        X, y = validate_data(self, X, y, dtype=None, ensure_all_finite=False, multi_output=True)
        if encoding is not None:
            self._adopt_encoding(encoding)
            with _numeric_hint(self, _TEXT_ADVICE):
                return self._encode(X), y
        if cats is None:
            cats = self._categorical_indices(X)
        self.categorical_features_ = cats
        if cats.size:
            values = _categorical_values(X, cats)
            detected = self.categorical_features is None  # by dtype, not named by the user
            _warn_dirty_columns(values, cats, getattr(self, "feature_names_in_", None), detected)
            self._encoder = categorical_encoder().fit(values)
            self.categories_ = list(self._encoder.categories_)
        else:
            self._encoder = None
            self.categories_ = []
        with _numeric_hint(self, _TEXT_ADVICE):
            return self._encode(X, fitting=True), y

    def _adopt_encoding(self, source: Any) -> None:
        """Take the fitted column encoding of ``source`` (after ``validate_data`` has set
        this estimator's ``n_features_in_`` and ``feature_names_in_``); a ValueError when the
        columns differ."""
        where = f"{type(self).__name__} and its {type(source).__name__}"
        if self.n_features_in_ != source.n_features_in_:
            raise ValueError(
                f"X has {self.n_features_in_} features, but the {type(source).__name__} was "
                f"fitted on {source.n_features_in_}: {where} need the same columns"
            )
        names = getattr(self, "feature_names_in_", None)
        source_names = getattr(source, "feature_names_in_", None)
        if (names is None) != (source_names is None) or (
            names is not None and list(names) != list(source_names)
        ):
            raise ValueError(
                f"the column names of X differ from those the {type(source).__name__} was "
                f"fitted on: {where} need the same columns, in the same order"
            )
        self.categorical_features_ = source.categorical_features_
        self._encoder = source._encoder
        self.categories_ = list(source.categories_)
        self.missing_features_ = source.missing_features_
        self._missing_fill = list(source._missing_fill)

    def _validate_stream_data(self, X, y, first: bool):
        """Validate a ``partial_fit`` chunk: the first fits the columns' encoding (as fit
        does), later ones are encoded with it (as ``predict`` does: unseen categories and
        gaps in columns that had none warn); returns the encoded features and the target."""
        if first:
            return self._validate_table(X, y)
        _check_labels_present(y)
        X = self._validate_predict_data(X)
        y = check_array(y, ensure_2d=False, dtype=None, input_name="y")
        check_consistent_length(X, y)
        return X, y

    def _validate_predict_data(self, X):
        X = validate_data(self, X, dtype=None, ensure_all_finite=False, reset=False)
        with _numeric_hint(self, _TEXT_ADVICE):
            return self._encode(X)
