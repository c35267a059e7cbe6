"""Iterative Bayesian unfolding against D'Agostini's formulas written out loop by loop, its fixed
points (an ideal detector; noise-free data converging to R⁻¹ n), and the response matrix."""

import numpy as np
import pytest

from biaslab.physics.unfolding import iterative_bayesian_unfolding, response_matrix


def dagostini_by_hand(n, R, prior, iterations):
    """eqs. 4-5 of D'Agostini (1995), one cause and one effect at a time."""
    M, T = R.shape
    mu = list(prior)
    for _ in range(iterations):
        new = []
        for j in range(T):
            efficiency = sum(R[i][j] for i in range(M))
            total = 0.0
            for i in range(M):
                denominator = sum(R[i][other] * mu[other] for other in range(T))
                total += R[i][j] * mu[j] / denominator * n[i]
            new.append(total / efficiency)
        mu = new
    return np.array(mu)


def random_response(rng, m, t, efficiency=0.9):
    R = rng.random((m, t)) + 0.05
    return R / R.sum(axis=0) * efficiency


def test_equals_the_formulas_written_by_hand():
    rng = np.random.default_rng(0)
    R = random_response(rng, 6, 4)
    n = rng.integers(5, 200, 6).astype(float)
    prior = rng.random(4) * 100 + 1
    for k in (0, 1, 3, 7):
        np.testing.assert_allclose(
            iterative_bayesian_unfolding(n, R, prior, k), dagostini_by_hand(n, R, prior, k), rtol=1e-12
        )


def test_an_ideal_detector_gives_back_the_measurement_in_one_iteration():
    n = np.array([10.0, 0.0, 35.0, 7.0])
    np.testing.assert_allclose(iterative_bayesian_unfolding(n, np.eye(4), iterations=1), n)


def test_noise_free_data_converge_to_the_truth_and_counts_are_kept():
    truth = np.array([120.0, 300.0, 80.0, 40.0, 200.0])
    R = 0.6 * np.eye(5) + 0.1 * (np.eye(5, k=1) + np.eye(5, k=-1)) + 0.02  # a smearing, full efficiency
    R = R / R.sum(axis=0)
    n = R @ truth
    few, many = (iterative_bayesian_unfolding(n, R, iterations=k) for k in (2, 5000))
    assert np.abs(few - truth).max() > 1.0  # still near the flat prior
    np.testing.assert_allclose(many, truth, rtol=1e-4)  # the maximum-likelihood solution, R⁻¹ n
    for k in (1, 4, 20):  # efficiency 1: every iteration keeps the measured total
        assert iterative_bayesian_unfolding(n, R, iterations=k).sum() == pytest.approx(n.sum())


def test_the_response_matrix_counts_migrations_and_losses():
    true = np.array([0.5, 0.5, 0.5, 0.5, 1.5, 1.5, 2.5, 9.0])
    measured = np.array([0.4, 1.2, 7.0, np.nan, 1.6, 0.9, 2.2, 2.2])  # 7.0 and NaN: lost; 9.0: no true bin
    R = response_matrix(true, measured, np.array([0, 1, 2, 3.0]), np.array([0, 1, 2, 3.0]))
    expected = np.array([[0.25, 0.5, 0.0], [0.25, 0.5, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(R, expected)
    np.testing.assert_allclose(R.sum(axis=0), [0.5, 1.0, 1.0])  # the efficiencies


def test_a_gaussian_smearing_is_estimated_within_its_sampling_error():
    from math import erf, sqrt

    rng = np.random.default_rng(2)
    x = rng.uniform(0, 4, 200_000)
    y = x + rng.normal(0, 0.5, len(x))
    edges = np.arange(0, 5.0)
    R = response_matrix(x, y, edges, edges)

    def phi(z):
        return 0.5 * (1 + erf(z / sqrt(2)))

    def exact(i, j):  # P(y in bin i | x uniform in bin j), by a fine average over x
        xs = np.linspace(j, j + 1, 2001)[:-1] + 0.00025
        return np.mean([phi((i + 1 - v) / 0.5) - phi((i - v) / 0.5) for v in xs])

    expected = np.array([[exact(i, j) for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(R, expected, atol=0.006)  # 50,000 events a column: σ ≤ 0.0023


def test_bad_input_is_one_clear_error():
    R = np.eye(3)
    with pytest.raises(ValueError, match="do not match"):
        iterative_bayesian_unfolding(np.ones(4), R)
    with pytest.raises(ValueError, match="efficiency"):
        iterative_bayesian_unfolding(np.ones(3), np.diag([1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match="positive"):
        iterative_bayesian_unfolding(np.ones(3), R, prior=np.array([1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match="paired"):
        response_matrix(np.ones(3), np.ones(4), np.arange(3.0), np.arange(3.0))


def test_the_binned_distance_is_scipys_wasserstein_on_the_bin_centres():
    from scipy.stats import wasserstein_distance

    from biaslab.physics.unfolding import binned_wasserstein

    rng = np.random.default_rng(3)
    edges = np.linspace(0, 10, 21)
    a, b = rng.integers(0, 50, 20).astype(float), rng.integers(0, 50, 20).astype(float)
    centres = (edges[:-1] + edges[1:]) / 2
    assert binned_wasserstein(a, b, edges) == pytest.approx(
        wasserstein_distance(centres, centres, a, b), rel=1e-12
    )
    assert binned_wasserstein(a, 3 * a, edges) == pytest.approx(0.0, abs=1e-15)  # shapes, not totals


def test_the_spectrum_and_the_smearing_have_their_stated_moments():
    from biaslab.physics.unfolding import gaussian_smearing, spectrum

    x = spectrum(200_000, seed=4, slope=2.0, peak_fraction=0.0, upper=50.0)
    assert x.min() >= 0 and x.mean() == pytest.approx(2.0, rel=0.01)  # an exponential of mean 2
    peaked = spectrum(200_000, seed=5, peak_fraction=1.0, peak=4.0, width=0.4)
    assert peaked.mean() == pytest.approx(4.0, abs=0.01) and peaked.std() == pytest.approx(0.4, rel=0.01)
    at_five = np.full(200_000, 5.0)
    y = gaussian_smearing(at_five, seed=6, floor=0.3, relative=0.1)
    assert (y - at_five).std() == pytest.approx(0.8, rel=0.01)  # 0.3 + 0.1 · 5
    assert np.array_equal(spectrum(100, seed=7), spectrum(100, seed=7))


def test_a_resampled_simulation_follows_the_unfolded_spectrum_and_keeps_its_pairs():
    from biaslab.physics.unfolding import resampled_to, spectrum

    edges = np.linspace(0, 10, 21)
    simulated = spectrum(100_000, seed=8, slope=2.4, peak_fraction=0.1)
    target = spectrum(50_000, seed=9, slope=2.0, peak_fraction=0.2)
    rows = resampled_to(simulated, target, edges, seed=10)
    assert rows.shape == simulated.shape and rows.min() >= 0 and rows.max() < len(simulated)
    drawn = np.histogram(simulated[rows], edges)[0] / len(rows)
    wanted = np.histogram(target, edges)[0] / len(target)
    assert np.abs(drawn - wanted).max() < 0.01  # the target's shares, to sampling error
    assert np.array_equal(rows, resampled_to(simulated, target, edges, seed=10))
