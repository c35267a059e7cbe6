"""Tests for biaslab.evaluate.scaling: exact power laws come back exactly; noise lowers R²."""

import numpy as np
import pytest

from biaslab.evaluate.scaling import fit_power_law


@pytest.mark.parametrize("exponent, prefactor", [(2.0, 3e-9), (1.0, 5.0), (-0.5, 2.0), (3.2, 1e-3)])
def test_an_exact_power_law_is_recovered(exponent, prefactor):
    x = np.array([16, 32, 64, 128, 256, 512])
    law = fit_power_law(x, prefactor * x**exponent)
    assert law.exponent == pytest.approx(exponent, abs=1e-9)
    assert law.prefactor == pytest.approx(prefactor, rel=1e-7)
    assert law.r_squared == pytest.approx(1.0)
    np.testing.assert_allclose(law(x), prefactor * x**exponent, rtol=1e-7)


def test_a_lower_order_term_biases_the_small_x_end_only():
    x = np.array([2.0**k for k in range(2, 21)])
    y = x**2 + 1e4 * x  # quadratic at large x, linear at small x
    assert fit_power_law(x[:3], y[:3]).exponent < 1.2
    assert fit_power_law(x[-3:], y[-3:]).exponent == pytest.approx(2.0, abs=0.05)


def test_noise_lowers_r_squared_and_matches_numpy_polyfit():
    rng = np.random.default_rng(0)
    x = np.linspace(1, 100, 30)
    y = 2 * x**1.5 * np.exp(rng.normal(0, 0.3, 30))
    law = fit_power_law(x, y)
    slope, _ = np.polyfit(np.log(x), np.log(y), 1)
    assert law.exponent == pytest.approx(slope) and 0.5 < law.r_squared < 1.0


@pytest.mark.parametrize("x, y", [([1, 2], [1, 0]), ([3, 3], [1, 2]), ([1, 2, 3], [1, 2])])
def test_bad_measurements_are_refused(x, y):
    with pytest.raises(ValueError):
        fit_power_law(x, y)
