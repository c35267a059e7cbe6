"""The pair energy against scipy's distances and a loop over the pairs; the Morse well's closed
form; the energy's E(3) and permutation invariance; seeded clusters that keep their distance."""

import math

import numpy as np
import pytest
import torch
from scipy.spatial.distance import pdist

from biaslab.evaluate.symmetry import random_isometry, random_permutation
from biaslab.physics.particles import Morse, pair_distances, pair_energy, random_clusters


def test_the_morse_well_is_minus_depth_at_its_distance_and_zero_far_away():
    morse = Morse(depth=2.5, width=1.3, distance=1.1)
    r = torch.tensor([1.1, 1e3], dtype=torch.float64)
    torch.testing.assert_close(morse(r), torch.tensor([-2.5, 0.0], dtype=torch.float64), rtol=0, atol=1e-12)
    r = torch.tensor([0.9], dtype=torch.float64, requires_grad=True)  # the force vanishes only at r_0
    (force,) = torch.autograd.grad(morse(r).sum(), r)
    expected = 2 * 2.5 * 1.3 * (1 - math.exp(-1.3 * (0.9 - 1.1))) * math.exp(-1.3 * (0.9 - 1.1))
    assert force.item() == pytest.approx(expected, rel=1e-12)


def test_the_pair_energy_equals_a_loop_over_scipys_distances():
    points = random_clusters(5, 7, seed=1)
    morse = Morse()
    for b in range(5):
        distances = pdist(points[b].numpy())  # i < j, row by row: torch.triu_indices's order
        np.testing.assert_allclose(pair_distances(points)[b].numpy(), distances, rtol=1e-12)
        by_hand = sum(1.0 * ((1 - math.exp(-2.0 * (r - 1.0))) ** 2 - 1) for r in distances)
        assert pair_energy(points, morse)[b].item() == pytest.approx(by_hand, rel=1e-12)


def test_the_energy_is_invariant_under_isometries_and_permutations():
    points = random_clusters(8, 6, seed=2)
    energy = pair_energy(points)
    for det in (1, -1):
        moved = random_isometry(3, 3, det=det)(points)
        torch.testing.assert_close(pair_energy(moved), energy, rtol=1e-12, atol=1e-12)
    shuffled = points[:, random_permutation(6, 4)]
    torch.testing.assert_close(pair_energy(shuffled), energy, rtol=1e-12, atol=1e-12)


def test_clusters_are_seeded_and_keep_the_minimum_distance():
    a, b = (
        random_clusters(300, 6, seed=5, min_distance=0.8),
        random_clusters(300, 6, seed=5, min_distance=0.8),
    )
    assert a.shape == (300, 6, 3) and a.dtype == torch.float64
    assert torch.equal(a, b) and not torch.equal(a, random_clusters(300, 6, seed=6, min_distance=0.8))
    assert pair_distances(a).min() >= 0.8


def test_impossible_clusters_and_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="raise spread"):
        random_clusters(10, 30, seed=0, spread=0.1, min_distance=1.0)
    with pytest.raises(ValueError, match=r"\(B, n, D\)"):
        pair_distances(torch.zeros(4, 3))
