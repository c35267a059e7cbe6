"""A raw table (missing cells, category codes) as the numbers a neural candidate can read.

Gradient-boosted trees read a raw table as it is: scikit-learn's ``HistGradientBoosting``
learns where a missing value goes at each split and splits categories natively
(``categorical_features``). A network, a linear model or nearest neighbours need every input a
finite number, so for them each column is encoded, with statistics fitted on the training rows
only (the protocol's rule 2; Day 5: nothing of the validation or test rows may leak):

    numbers      the training rows' median fills a missing cell, and a column that had missing
                 cells in training gains a 0/1 "was missing" column (scikit-learn's
                 ``SimpleImputer(strategy="median", add_indicator=True)``)
    categories   one 0/1 column per category seen in training (``OneHotEncoder``); a missing
                 cell is a category of its own where training had one, and a category training
                 never saw is all zeros (``handle_unknown="ignore"``)

built as one scikit-learn ``ColumnTransformer``. The protocol then standardizes the result like
any table (:func:`biaslab.comparison.preparation.standardized`).

:class:`TableEncoding` is fitted by ``protocol.prepare`` on the training rows of a raw table
(``UserData.is_raw_table``); ``Prepared.native`` keeps the raw rows for the trees
(``fitting.fit_sklearn``, ``Fitted.native``); new rows go through ``Prepared.standardize`` ->
``Inputs(x, mask, raw)`` and ``Fitted.outputs_of``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TableEncoding"]


class TableEncoding:
    """Encode a raw table's columns for the candidates that need finite numbers.

    Args:
        categorical: (F,) bool, which columns hold category codes (``UserData.categorical``).

    Attributes (after :meth:`fit`):
        transformer_: the fitted ``ColumnTransformer``.
        n_features_out_: the encoded width F'.
        feature_names_out_: F' names: a column's own, ``"<column> was missing"``, ``"<column> =
            <category>"``.

    Shapes:
        fit(x (n, F)); transform(x (N, F)) -> (N, F') float32, every value finite.
    """

    def __init__(self, categorical):
        self.categorical = categorical

    def fit(self, x: np.ndarray, names: tuple[str, ...] = (), categories: tuple = ()) -> TableEncoding:
        """Fit the imputation and the codes on the training rows ``x``.

        Args:
            names: the F column names (for ``feature_names_out_``); default ``x0``, ``x1``, ...
            categories: per categorical column, its texts in code order (for the names).
        """
        from sklearn.compose import ColumnTransformer
        from sklearn.impute import SimpleImputer
        from sklearn.preprocessing import OneHotEncoder

        flags = np.asarray(self.categorical, dtype=bool)
        numeric, coded = np.flatnonzero(~flags), np.flatnonzero(flags)
        parts = []
        if len(numeric):
            imputer = SimpleImputer(strategy="median", add_indicator=True, keep_empty_features=True)
            parts.append(("numbers", imputer, numeric))
        if len(coded):
            one_hot = OneHotEncoder(handle_unknown="ignore", sparse_output=False, dtype=np.float32)
            parts.append(("categories", one_hot, coded))
        rows = np.asarray(x, dtype=np.float64)
        self.transformer_ = ColumnTransformer(parts, sparse_threshold=0.0).fit(rows)
        self.n_features_out_ = int(self.transformer_.transform(rows[:1]).shape[1])
        names = names or tuple(f"x{j}" for j in range(len(flags)))
        self.feature_names_out_ = self._names(names, dict(zip(coded, categories, strict=False)))
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        """The encoded rows (see the module's table)."""
        return np.asarray(self.transformer_.transform(np.asarray(x, dtype=np.float64)), dtype=np.float32)

    def _names(self, names: tuple[str, ...], texts: dict) -> tuple[str, ...]:
        """The encoded columns' names, in the transformer's order (``texts``: a categorical
        column's index -> its categories' texts in code order)."""
        out: list[str] = []
        for label, step, columns in self.transformer_.transformers_:
            if label == "numbers":
                out += [names[j] for j in columns]
                if step.indicator_ is not None:
                    out += [f"{names[columns[k]]} was missing" for k in step.indicator_.features_]
            elif label == "categories":
                for j, seen in zip(columns, step.categories_, strict=True):
                    out += [f"{names[j]} = {_category(code, texts.get(j, ()))}" for code in seen]
        return tuple(out)


def _category(code: float, texts: tuple[str, ...]) -> str:
    """A category code's text (``missing`` for NaN; the code itself when no text is known)."""
    if np.isnan(code):
        return "missing"
    return texts[int(code)] if 0 <= int(code) < len(texts) else f"{code:g}"
