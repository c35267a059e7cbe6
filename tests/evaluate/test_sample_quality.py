"""Tests for biaslab.evaluate.sample_quality: MMD against scikit-learn's RBF kernel, W1 against
scipy, nearest distances against scikit-learn's NearestNeighbors, and both distances' behaviour
on equal and shifted distributions."""

import numpy as np
import pytest
from scipy.stats import wasserstein_distance
from sklearn.metrics.pairwise import euclidean_distances, rbf_kernel
from sklearn.neighbors import NearestNeighbors

from biaslab.evaluate import sample_quality
from biaslab.evaluate.sample_quality import (
    mean_distance,
    median_bandwidth,
    mmd,
    nearest_distances,
    sliced_wasserstein,
    wasserstein_1d,
)


def draws(seed, n=300, shift=0.0, d=2):
    return np.random.default_rng(seed).normal(size=(n, d)) + shift


@pytest.mark.parametrize("seed", range(4))
def test_mmd_equals_the_unbiased_estimate_from_sklearn_kernels(seed):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(40, 3)), rng.normal(0.5, size=(55, 3))
    h = float(np.median(euclidean_distances(np.r_[x, y])[np.triu_indices(95, k=1)]))
    assert median_bandwidth(x, y) == pytest.approx(h, rel=1e-12)
    gamma = 1 / (2 * h * h)
    kxx, kyy, kxy = rbf_kernel(x, gamma=gamma), rbf_kernel(y, gamma=gamma), rbf_kernel(x, y, gamma=gamma)
    expected = (kxx.sum() - 40) / (40 * 39) + (kyy.sum() - 55) / (55 * 54) - 2 * kxy.mean()
    assert mmd(x, y) == pytest.approx(expected, abs=1e-12)
    assert mmd(x, y, bandwidth=0.7) == pytest.approx(
        (rbf_kernel(x, gamma=1 / 0.98).sum() - 40) / 1560
        + (rbf_kernel(y, gamma=1 / 0.98).sum() - 55) / 2970
        - 2 * rbf_kernel(x, y, gamma=1 / 0.98).mean(),
        abs=1e-12,
    )


@pytest.mark.parametrize("seed", range(4))
def test_wasserstein_1d_equals_scipy(seed):
    rng = np.random.default_rng(seed)
    u, v = rng.normal(size=rng.integers(2, 50)), rng.exponential(size=rng.integers(2, 50))
    assert wasserstein_1d(u, v) == pytest.approx(wasserstein_distance(u, v), abs=1e-12)


def test_sliced_wasserstein_is_the_mean_over_directions_and_sees_a_shift():
    x, y = draws(0), draws(1, shift=np.array([1.0, 0.0]))
    theta = np.random.default_rng(3).normal(size=(50, 2))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)
    expected = np.mean([wasserstein_distance(x @ t, y @ t) for t in theta])
    assert sliced_wasserstein(x, y, projections=50, seed=3) == pytest.approx(expected, abs=1e-12)
    # A unit shift along one axis moves a random direction's projection by |cos| on average: 2/π.
    assert sliced_wasserstein(x, y, projections=500) == pytest.approx(2 / np.pi, abs=0.12)


def test_both_distances_separate_a_shifted_sample_from_a_fresh_one():
    same, shifted = draws(1), draws(2, shift=0.5)
    floor_mmd, floor_sw = mmd(draws(0), same), sliced_wasserstein(draws(0), same)
    assert abs(floor_mmd) < 0.01 and mmd(draws(0), shifted) > 10 * max(floor_mmd, 0.003)
    assert sliced_wasserstein(draws(0), shifted) > 2 * floor_sw


@pytest.mark.parametrize(("seed", "block"), [(0, 1 << 22), (1, 1 << 22), (2, 7), (3, 1)])
def test_nearest_distances_equal_sklearn_nearest_neighbors(seed, block, monkeypatch):
    monkeypatch.setattr(sample_quality, "BLOCK_ENTRIES", block)  # small: many blocks, down to 1 row
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 6))
    x, reference = (
        rng.normal(size=(int(rng.integers(1, 80)), d)),
        rng.normal(size=(int(rng.integers(1, 90)), d)),
    )
    expected = NearestNeighbors(n_neighbors=1, algorithm="brute").fit(reference).kneighbors(x)[0][:, 0]
    np.testing.assert_allclose(nearest_distances(x, reference), expected, rtol=1e-12, atol=1e-14)


def test_a_copied_point_is_at_distance_zero_and_tensors_are_read():
    torch = pytest.importorskip("torch")
    reference = draws(0, n=50) * 1e3  # large norms: the expanded form alone would leave ~1e-5
    x = np.concatenate([reference[[3, 17]], reference[[5]] + [0.0, 1e-9]])
    np.testing.assert_array_equal(nearest_distances(torch.from_numpy(x), reference)[:2], 0.0)
    assert nearest_distances(x, reference)[2] == pytest.approx(1e-9, abs=1e-12)  # ulp of 1e3: 1e-13


def test_mean_distance_averages_over_the_reference_sets_with_the_options_passed_on():
    x, references = draws(0), [draws(1), draws(2), draws(3)]
    each = [sliced_wasserstein(x, r, projections=20, seed=5) for r in references]
    assert mean_distance(sliced_wasserstein, x, references, projections=20, seed=5) == pytest.approx(
        np.mean(each), abs=1e-15
    )
    assert mean_distance(mmd, x, references[:1]) == mmd(x, references[0])
    with pytest.raises(ValueError, match="at least one"):
        mean_distance(mmd, x, [])


def test_bad_inputs():
    with pytest.raises(ValueError, match="dimensions"):
        mmd(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="N >= 2"):
        sliced_wasserstein(np.zeros((1, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="bandwidth"):
        mmd(draws(0), draws(1), bandwidth=0.0)
    with pytest.raises(ValueError, match="share D >= 1 columns"):
        nearest_distances(np.zeros((3, 2)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="reference needs at least 1 entry"):
        nearest_distances(np.zeros((3, 2)), np.zeros((0, 2)))


def test_classifier_scores_by_hand():
    from scipy.stats import entropy

    from biaslab.evaluate.sample_quality import classifier_scores

    probs = np.array([[0.95, 0.05, 0.0], [0.2, 0.8, 0.0], [0.0, 0.05, 0.95], [0.92, 0.08, 0.0]])
    scores = classifier_scores(probs)
    assert scores["confident"] == 0.75 and scores["histogram"] == [2, 1, 1] and scores["classes"] == 3
    assert scores["entropy"] == pytest.approx(entropy([2, 1, 1]))
    collapsed = classifier_scores(np.tile([[0.0, 1.0, 0.0]], (5, 1)))
    assert collapsed["entropy"] == 0.0 and collapsed["classes"] == 1 and collapsed["confident"] == 1.0
    assert classifier_scores(probs, threshold=0.99)["confident"] == 0.0
