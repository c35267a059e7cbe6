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


def brute_force_frontier(compute, loss):
    """A point is on the frontier when every point costing no more has a higher loss, or the same
    loss and a later place among the equally cheap (one of equal points kept)."""
    kept = []
    for i in range(len(compute)):
        rivals = [j for j in range(len(compute)) if j != i and compute[j] <= compute[i]]
        beaten = [
            loss[j] < loss[i] or (loss[j] == loss[i] and (compute[j], j) < (compute[i], i)) for j in rivals
        ]
        if not any(beaten):
            kept.append(i)
    return sorted(kept, key=lambda i: compute[i])


@pytest.mark.parametrize("seed", range(20))
def test_compute_frontier_equals_the_brute_force_definition(seed):
    from biaslab.evaluate.scaling import compute_frontier

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    compute = rng.integers(1, 12, n).astype(float)  # ties in compute
    loss = rng.integers(1, 8, n) / 4  # and ties in loss
    assert list(compute_frontier(compute, loss)) == brute_force_frontier(compute, loss)


def test_compute_frontier_of_learning_curves_is_their_lower_envelope():
    from biaslab.evaluate.scaling import compute_frontier

    small = [(1, 1.0), (2, 0.7), (4, 0.6), (8, 0.58)]  # a small model: fast at first, then stuck
    large = [(4, 0.9), (8, 0.5), (16, 0.3)]  # a large one: slow at first, better later
    compute, loss = zip(*(small + large))
    assert [(compute[i], loss[i]) for i in compute_frontier(compute, loss)] == [
        (1, 1.0),
        (2, 0.7),
        (4, 0.6),
        (8, 0.5),
        (16, 0.3),
    ]
    with pytest.raises(ValueError, match="equal length"):
        compute_frontier([1, 2], [1.0])
    with pytest.raises(ValueError, match="finite"):
        compute_frontier([1, np.nan], [1.0, 2.0])
