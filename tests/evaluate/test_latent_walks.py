"""Tests for biaslab.evaluate.latent_walks: walks against a loop over pairs and steps, the two
measures on walks whose answer is known, and their symmetries."""

import numpy as np
import pytest
import torch

from biaslab.evaluate.latent_walks import jump_ratio, off_manifold_ratio, straight_walks


def test_straight_walks_equal_a_loop_over_pairs_and_steps():
    torch.manual_seed(0)
    decoder = torch.nn.Linear(3, 5)
    start, end = torch.randn(4, 3), torch.randn(4, 3)
    walks = straight_walks(decoder, start, end, 6)
    assert walks.shape == (4, 6, 5)
    for p in range(4):
        for s, t in enumerate(np.linspace(0, 1, 6)):
            with torch.no_grad():
                expected = decoder((1 - t) * start[p] + t * end[p])
            torch.testing.assert_close(walks[p, s], expected.float(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(walks[:, 0], decoder(start).detach())  # the ends are the codes' decodes
    torch.testing.assert_close(walks[:, -1], decoder(end).detach())
    with pytest.raises(ValueError, match="one shape"):
        straight_walks(decoder, start, end[:2], 6)
    with pytest.raises(ValueError, match="steps must be an integer >= 2"):
        straight_walks(decoder, start, end, 1)


def test_jump_ratio_is_one_for_an_even_walk_and_steps_minus_one_for_a_single_jump():
    even = np.linspace(0, 1, 9)[None, :, None] * np.ones((1, 1, 4))  # (1, 9, 4): equal steps
    jump = np.zeros((1, 9, 4))
    jump[0, 5:] = 1.0  # all the change between steps 4 and 5
    assert jump_ratio(even) == pytest.approx([1.0])
    assert jump_ratio(jump) == pytest.approx([8.0])
    with pytest.raises(ValueError, match="never change"):
        jump_ratio(np.zeros((1, 3, 2)))


def test_jump_ratio_is_unchanged_by_rotating_and_scaling_the_decodes_and_reversing_the_walk():
    rng = np.random.default_rng(0)
    walks = rng.normal(size=(5, 7, 6)).cumsum(axis=1)
    rotation, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    np.testing.assert_allclose(jump_ratio(2.5 * walks @ rotation), jump_ratio(walks))
    np.testing.assert_allclose(jump_ratio(walks[:, ::-1]), jump_ratio(walks))


def test_off_manifold_ratio_against_brute_force_nearest_neighbours():
    rng = np.random.default_rng(1)
    reference, walks = rng.normal(size=(50, 4)), rng.normal(size=(3, 5, 4))
    distances = np.linalg.norm(walks[:, :, None, :] - reference[None, None], axis=3).min(axis=2)  # (3, 5)
    expected = distances.max(axis=1) / ((distances[:, 0] + distances[:, -1]) / 2)
    np.testing.assert_allclose(off_manifold_ratio(walks, reference), expected, rtol=1e-12)


def test_a_walk_through_the_data_has_ratio_one_a_walk_through_a_hole_more():
    """Reference points on the unit circle: the chord between two of them leaves the circle,
    the arc (decoded as points on the circle) does not."""
    angle = np.linspace(0, 2 * np.pi, 2000, endpoint=False)
    circle = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    t = np.linspace(0, 1, 11)[:, None]
    a, b = np.array([1.0, 0.0]) * 1.01, np.array([-1.0, 0.0]) * 1.01  # just off the circle
    chord = ((1 - t) * a + t * b)[None]  # through the centre: distance 1 from the circle
    arc = 1.01 * np.stack([np.cos(np.pi * t[:, 0]), np.sin(np.pi * t[:, 0])], axis=1)[None]
    assert off_manifold_ratio(arc, circle)[0] == pytest.approx(1.0, rel=0.01)
    assert off_manifold_ratio(chord, circle)[0] == pytest.approx(1 / 0.01, rel=0.01)
    with pytest.raises(ValueError, match="reference rows have 3 values"):
        off_manifold_ratio(chord, np.zeros((5, 3)))


def test_nearest_distances_against_brute_force():
    from biaslab.evaluate.sample_quality import nearest_distances  # what off_manifold_ratio reads

    rng = np.random.default_rng(2)
    x, reference = rng.normal(size=(7, 5)), rng.normal(size=(40, 5))
    expected = np.linalg.norm(x[:, None] - reference[None], axis=2).min(axis=1)
    np.testing.assert_allclose(nearest_distances(x, reference), expected, rtol=1e-12)
    near = reference[:3] + 1e-7  # 1e-7 away: the search's |a|² + |b|² − 2a·b would read 0
    np.testing.assert_allclose(nearest_distances(near, reference), np.full(3, np.sqrt(5) * 1e-7), rtol=1e-6)


def test_gaussian_codes_have_the_codes_mean_and_covariance_and_a_seed_fixes_them():
    from biaslab.evaluate.latent_walks import gaussian_codes

    rng = np.random.default_rng(3)
    codes = rng.normal(size=(500, 3)) @ np.array([[2.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.5, 0.3]]) + 4.0
    drawn = gaussian_codes(codes, 200_000, seed=1)
    np.testing.assert_allclose(drawn.mean(0), codes.mean(0), atol=0.02)
    np.testing.assert_allclose(np.cov(drawn, rowvar=False), np.cov(codes, rowvar=False), rtol=0.02, atol=0.01)
    np.testing.assert_array_equal(gaussian_codes(codes, 5, seed=9), gaussian_codes(codes, 5, seed=9))
    assert gaussian_codes(codes[:, :1], 4, seed=0).shape == (4, 1)  # one latent dimension
    with pytest.raises(ValueError, match="N >= 2"):
        gaussian_codes(codes[:1], 4, seed=0)
