"""Tests for biaslab.evaluate.intrinsic_dimension: the estimate against a brute-force evaluation of
Levina & Bickel's formula, on manifolds of known dimension, and its invariance under rotations,
translations and scalings of the data."""

import numpy as np
import pytest

from biaslab.evaluate.intrinsic_dimension import intrinsic_dimension, local_inverse_dimensions


def brute_force(x, k):
    """Every pairwise distance, each row's k smallest (itself excluded), the formula term by term."""
    distances = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))  # (n, n)
    np.fill_diagonal(distances, np.inf)
    inverse = []
    for row in distances:
        t = np.sort(row)[:k]
        inverse.append(sum(np.log(t[k - 1] / t[j]) for j in range(k - 1)) / (k - 1))
    return np.array(inverse), 1 / np.mean(inverse)


@pytest.mark.parametrize("k", [2, 5, 12])
def test_equals_the_formula_evaluated_term_by_term(k):
    x = np.random.default_rng(k).normal(size=(150, 7))
    inverse, estimate = brute_force(x, k)
    np.testing.assert_allclose(local_inverse_dimensions(x, k), inverse, rtol=1e-10)
    assert intrinsic_dimension(x, k) == pytest.approx(estimate, rel=1e-10)


@pytest.mark.parametrize("dimension", [1, 2, 4, 8])
def test_a_flat_manifold_of_known_dimension_inside_a_larger_space(dimension):
    """Uniform points on a d-dimensional cube, turned into 40 dimensions by a random orthonormal
    map: the estimate is d within 15% (the cube's faces bias it slightly downwards)."""
    rng = np.random.default_rng(dimension)
    cube = rng.uniform(size=(3000, dimension))
    basis, _ = np.linalg.qr(rng.normal(size=(40, dimension)))  # (40, d), orthonormal columns
    assert intrinsic_dimension(cube @ basis.T, 20) == pytest.approx(dimension, rel=0.15)


def test_a_curved_manifold_a_circle_in_the_plane_is_one_dimensional():
    angle = np.random.default_rng(0).uniform(0, 2 * np.pi, 2000)
    circle = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    assert intrinsic_dimension(circle, 10) == pytest.approx(1.0, rel=0.1)


def test_invariant_under_rotation_translation_and_scaling():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 3)) @ rng.normal(size=(3, 12))  # a 3-D subspace of 12-D
    rotation, _ = np.linalg.qr(rng.normal(size=(12, 12)))
    moved = 3.7 * x @ rotation + rng.normal(size=12)
    assert intrinsic_dimension(moved, 10) == pytest.approx(intrinsic_dimension(x, 10), rel=1e-9)


def test_images_are_flattened_and_bad_input_is_refused():
    images = np.random.default_rng(2).uniform(size=(60, 4, 4))
    assert intrinsic_dimension(images, 5) == pytest.approx(intrinsic_dimension(images.reshape(60, 16), 5))
    with pytest.raises(ValueError, match="needs more than 5 points"):
        intrinsic_dimension(images[:5], 5)
    with pytest.raises(ValueError, match="neighbours must be an integer >= 2"):
        intrinsic_dimension(images, 1)
    with pytest.raises(ValueError, match="duplicate rows"):
        intrinsic_dimension(np.concatenate([images, images[:1]]), 5)
