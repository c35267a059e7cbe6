"""Split-conformal intervals (src/biaslab/evaluate/conformal.py) against MAPIE and their coverage."""

import math

import numpy as np
import pytest

from biaslab.evaluate.conformal import SplitConformal, coverage_and_width


@pytest.mark.parametrize(("n", "coverage"), [(50, 0.9), (199, 0.9), (37, 0.8), (1000, 0.95)])
def test_the_intervals_equal_mapies_split_conformal_intervals(n, coverage):
    mapie = pytest.importorskip("mapie.regression")
    from sklearn.base import BaseEstimator, RegressorMixin

    rng = np.random.default_rng(n)
    predictions = rng.normal(size=n + 300)
    y = predictions + rng.standard_t(3, size=n + 300)  # heavy tails: the quantile matters
    calibration, new = np.arange(n), np.arange(n, n + 300)

    class Prefit(RegressorMixin, BaseEstimator):
        """A fitted 'regressor' whose predictions are given (x: row numbers)."""

        def __init__(self, predictions=None):
            self.predictions = predictions
            self.fitted_ = True

        def fit(self, x, y):  # MAPIE requires one; prefit: never called
            return self

        def predict(self, x):
            return self.predictions[np.asarray(x, dtype=np.int64).ravel()]

    reference = mapie.SplitConformalRegressor(Prefit(predictions), confidence_level=coverage, prefit=True)
    reference.conformalize(calibration[:, None], y[calibration])
    _, bounds = reference.predict_interval(new[:, None])  # (M, 2, 1)
    ours = SplitConformal(coverage).fit(y[calibration], predictions[calibration])
    low, high = ours.predict_interval(predictions[new])
    np.testing.assert_allclose(low, bounds[:, 0, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(high, bounds[:, 1, 0], rtol=0, atol=1e-12)


def test_the_quantile_is_the_kth_smallest_residual():
    residuals = np.arange(1.0, 20.0)  # 19 rows: k = ceil(20 * 0.9) = 18
    fitted = SplitConformal(0.9).fit(residuals, np.zeros(19))
    assert fitted.quantile_ == 18.0 and fitted.n_calibration_ == 19
    too_few = SplitConformal(0.9).fit([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])  # k = 4 > 3
    assert too_few.quantile_ == math.inf
    with pytest.raises(ValueError, match="coverage"):
        SplitConformal(1.0).fit([1.0], [0.0])


def test_coverage_holds_on_exchangeable_rows():
    """Over 400 draws of 100 calibration and 100 new rows, the mean coverage lies in
    [0.9, 0.9 + 1/101] up to the draws' noise (the guarantee is marginal)."""
    rng = np.random.default_rng(0)
    covered = []
    for _ in range(400):
        y_cal, y_new = rng.exponential(size=100), rng.exponential(size=100)  # predictions: 0
        low, high = SplitConformal(0.9).fit(y_cal, np.zeros(100)).predict_interval(np.zeros(100))
        covered.append(coverage_and_width(y_new, low, high)[0])
    mean, se = np.mean(covered), np.std(covered) / np.sqrt(len(covered))
    assert 0.9 - 3 * se <= mean <= 0.9 + 1 / 101 + 3 * se


def test_coverage_and_width_count_the_bounds_inside():
    assert coverage_and_width([1.0, 2.0, 5.0], [0.0, 2.0, 0.0], [1.0, 3.0, 4.0]) == (2 / 3, 2.0)
