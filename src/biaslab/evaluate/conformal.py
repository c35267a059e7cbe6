"""Split-conformal prediction intervals: how sure a regression is, with a coverage that holds
whatever the model.

A point prediction says nothing of its error. Split conformal prediction (Vovk, Gammerman &
Shafer 2005; Lei, G'Sell, Rinaldo, Tibshirani & Wasserman 2018, "Distribution-free predictive
inference for regression") turns any fitted regressor into intervals with a stated coverage,
using rows the model was not fitted on (a comparison's validation rows):

1. the conformity scores: the absolute residuals on the n calibration rows,
   ``r_i = |y_i − ŷ(x_i)|``;
2. their ``k``-th smallest value ``q``, with ``k = ⌈(n + 1)·coverage⌉`` (Lei et al. 2018,
   Algorithm 2); when ``k > n`` no finite interval has the coverage, and ``q`` is infinite;
3. the interval of a new row: ``ŷ(x) ± q``.

If the calibration and new rows are exchangeable, a new row's target lies in its interval with
probability at least ``coverage`` (and below ``coverage + 1/(n + 1)``), averaged over the
calibration set: a marginal guarantee, not one per row. The intervals all have one width, 2q.

Sign convention: ``fit(y_true, y_pred)`` in scikit-learn's order, targets and predictions in the
target's unit. Equal to MAPIE's ``SplitConformalRegressor`` with the absolute conformity score
(tested).

:class:`SplitConformal` (``coverage=0.9``; ``fit``, ``quantile_``, ``predict_interval``) and
:func:`coverage_and_width`. ``comparison.protocol.fit_candidate`` fits it on a regression's
validation residuals.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["SplitConformal", "coverage_and_width"]


class SplitConformal:
    """Split-conformal intervals from calibration residuals.

    Args:
        coverage: the share of new targets the intervals should hold, in (0, 1) (default 0.9).

    Attributes (after :meth:`fit`):
        quantile_: q, the half-width of every interval (``inf`` when the calibration rows are too
            few for the coverage: n < 1/(1 − coverage) − 1).
        n_calibration_: n, the calibration rows.

    Shapes:
        fit(y_true (n,), y_pred (n,)); predict_interval(y_pred (M,)) -> ((M,), (M,)).
    """

    def __init__(self, coverage: float = 0.9):
        self.coverage = coverage

    def fit(self, y_true, y_pred) -> SplitConformal:
        """The conformity scores' ``⌈(n + 1)·coverage⌉``-th smallest value (steps 1-2)."""
        if not 0 < self.coverage < 1:
            raise ValueError(f"coverage must lie in (0, 1), not {self.coverage!r}")
        scores = np.abs(np.asarray(y_true, dtype=np.float64) - np.asarray(y_pred, dtype=np.float64))
        if scores.ndim != 1 or len(scores) == 0:
            raise ValueError(f"need one residual per calibration row, (n,) with n >= 1; got {scores.shape}")
        n = len(scores)
        k = math.ceil((n + 1) * self.coverage)
        self.quantile_ = float(np.sort(scores)[k - 1]) if k <= n else math.inf
        self.n_calibration_ = n
        return self

    def predict_interval(self, y_pred) -> tuple[np.ndarray, np.ndarray]:
        """``(ŷ − q, ŷ + q)`` for each prediction (step 3)."""
        y_pred = np.asarray(y_pred, dtype=np.float64)
        return y_pred - self.quantile_, y_pred + self.quantile_


def coverage_and_width(y_true, low, high) -> tuple[float, float]:
    """The share of targets inside their interval (bounds included) and the intervals' mean width.

    Shapes:
        y_true, low, high: (M,).
    """
    y_true, low, high = (np.asarray(a, dtype=np.float64) for a in (y_true, low, high))
    inside = (low <= y_true) & (y_true <= high)
    return float(inside.mean()), float(np.mean(high - low))
