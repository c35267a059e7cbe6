"""Which of a table's columns a fitted candidate reads: permutation importance on the test rows.

Breiman's (2001) permutation importance, as scikit-learn's ``permutation_importance`` computes
it: shuffle one column of the test rows (as the user gave them: missing cells and categories
included), predict again, and record how much the score drops (accuracy, or MAE to regress,
written so that a rise in error is a positive drop); ``repeats`` shuffles per column. A column
the model ignores drops nothing; one it relies on drops much. It measures the fitted model's use
of a column, not the column's causal role, and correlated columns share their importance.

Any candidate works: the shuffled rows go through the same preparation as new rows
(:meth:`~biaslab.comparison.prepared.Prepared.standardize`: encoding, scaling) and the fitted
model's outputs (:meth:`~biaslab.comparison.fitting.Fitted.outputs_of`).

``compare`` shows the recommended table model's importance, column by column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from biaslab.comparison.fitting import Fitted
    from biaslab.comparison.prepared import Prepared

__all__ = ["REPEATS", "permutation_importance"]

REPEATS = 5  # shuffles per column (scikit-learn's default)


class _Frozen:
    """A fitted candidate as scikit-learn's function takes an estimator (one with ``fit``); the
    scorer reads the candidate itself, which is never fitted again."""

    def __init__(self, fitted: Fitted):
        self.fitted = fitted

    def fit(self, *_):
        raise TypeError("a fitted candidate is read here, never fitted again")


def permutation_importance(
    fitted: Fitted, prepared: Prepared, x_test: np.ndarray, names, seed: int, repeats: int = REPEATS
) -> dict:
    """The drop in the test score when each column of ``x_test`` is shuffled.

    Args:
        fitted: a candidate fitted on ``prepared`` (torch or scikit-learn, raw or encoded).
        x_test: the test rows as read, (n, F) (``UserData.x[prepared.rows["test"]]``).
        names: the F column names.
        seed: fixes the shuffles.

    Returns:
        ``{"names": [...], "mean": [...], "std": [...]}``: per column, the mean and standard
        deviation over ``repeats`` shuffles of the score's drop (accuracy points as a fraction,
        or the MAE's rise in the target's unit), plain lists.
    """
    from sklearn.inspection import permutation_importance as shuffled_drop

    y_test = prepared.targets["test"]

    def score(frozen: _Frozen, x, y) -> float:
        out = frozen.fitted.outputs_of(prepared.standardize(np.asarray(x)))
        if prepared.task == "classify":
            return float(np.mean(out.argmax(axis=1) == y))
        return -float(np.mean(np.abs(prepared.to_unit(out) - y)))

    found = shuffled_drop(
        _Frozen(fitted), np.asarray(x_test), y_test, scoring=score, n_repeats=repeats, random_state=seed
    )
    return {
        "names": [str(n) for n in names],
        "mean": [float(v) for v in found.importances_mean],
        "std": [float(v) for v in found.importances_std],
    }
