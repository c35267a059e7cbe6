"""Tests for biaslab.evaluate.bias_variance: bias² + variance + noise = expected test MSE."""

import numpy as np
import pytest

from biaslab.evaluate.bias_variance import bias_variance, double_descent, polynomial_fit


def cubic(x):
    return x - 2 * x**2 + 0.5 * x**3


X_TEST = np.linspace(-0.9, 0.9, 25)


@pytest.mark.parametrize("degree", [1, 3, 9])
def test_the_terms_add_up_to_the_measured_expected_error(degree):
    bv = bias_variance(polynomial_fit(degree), cubic, 0.3, X_TEST, n_train=30, n_datasets=400, seed=degree)
    assert abs(bv.total - bv.expected_mse) <= 3 * bv.mc_error + 1e-3, (bv, bv.total)


def test_the_u_shape_bias_falls_variance_rises_with_the_degree():
    terms = {d: bias_variance(polynomial_fit(d), cubic, 0.3, X_TEST, 30, 300, seed=0) for d in (1, 3, 9)}
    assert terms[1].bias2 > 10 * terms[3].bias2  # a line cannot follow a cubic
    assert terms[3].bias2 < 1e-3  # the right degree has (almost) no bias
    assert terms[3].variance < terms[9].variance  # more freedom, more variance
    assert terms[3].total < terms[1].total and terms[3].total < terms[9].total  # the U


def test_a_noise_free_exact_model_has_no_bias_no_variance():
    bv = bias_variance(polynomial_fit(3), cubic, 0.0, X_TEST, 10, 20, seed=1)
    assert bv.bias2 < 1e-20 and bv.variance < 1e-20 and bv.expected_mse < 1e-20


def test_a_constant_learner_has_exactly_the_bias_of_its_constant():
    bv = bias_variance(lambda x, y, xt: np.zeros_like(xt), cubic, 0.2, X_TEST, 5, 10, seed=2)
    assert bv.variance == 0.0 and bv.bias2 == pytest.approx(np.mean(cubic(X_TEST) ** 2))
    assert bv.noise == pytest.approx(0.04)


def test_double_descent_peaks_at_the_interpolation_threshold_and_descends_again():
    error = double_descent([10, 25, 50, 100, 250, 1000], n_train=100, repeats=10, seed=0)
    assert max(error, key=error.get) == 100  # the peak: as many features as training points
    assert error[100] > 20 * error[25]
    assert error[1000] < error[250] < error[100]  # the second descent
    assert error[1000] < min(error[10], error[25], error[50])  # below the classical minimum


def test_bad_arguments():
    with pytest.raises(ValueError):
        bias_variance(polynomial_fit(1), cubic, 0.1, X_TEST, n_train=10, n_datasets=1)
