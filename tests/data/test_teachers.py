"""Tests for biaslab.data.teachers: the teacher is a ReLU network of its width exactly (torch's MLP
with the same weights computes it), its weights follow the stated distribution, and the bump."""

from itertools import pairwise

import numpy as np
import pytest
import torch

from biaslab.data.teachers import bump, relu_network, relu_teacher, teacher_data
from biaslab.nn import MLP


def test_the_teacher_has_unit_directions_signs_and_zero_biases():
    (w1, b1), (w2, b2) = relu_teacher(inputs=5, width=7, seed=3)
    assert w1.shape == (7, 5) and b1.shape == (7,) and w2.shape == (1, 7) and b2.shape == (1,)
    assert all(a.dtype == np.float32 for a in (w1, b1, w2, b2))
    np.testing.assert_allclose(np.linalg.norm(w1, axis=1), 1.0, rtol=1e-6)
    assert set(np.unique(w2)) <= {-1.0, 1.0}
    assert not b1.any() and not b2.any()


def test_the_seed_fixes_the_teacher_and_another_seed_changes_it():
    first, again, other = (relu_teacher(4, 6, seed) for seed in (1, 1, 2))
    for (w, b), (w_again, b_again) in zip(first, again):
        np.testing.assert_array_equal(w, w_again)
        np.testing.assert_array_equal(b, b_again)
    assert not np.array_equal(first[0][0], other[0][0])


def test_the_directions_are_uniform_on_the_sphere():
    """Many teachers' first directions: their mean is 0 and each coordinate's variance is 1/d."""
    directions = np.stack([relu_teacher(3, 1, seed)[0][0][0] for seed in range(4000)])  # (4000, 3)
    np.testing.assert_allclose(directions.mean(0), 0.0, atol=0.05)
    np.testing.assert_allclose(directions.var(0), 1 / 3, atol=0.03)


@pytest.mark.parametrize("sizes", [(3, 8, 1), (2, 5, 4, 3), (1, 1, 1, 1, 1)])
def test_relu_network_is_torchs_mlp_with_the_same_weights(sizes):
    rng = np.random.default_rng(0)
    layers = [
        (rng.normal(size=(n_out, n_in)).astype(np.float32), rng.normal(size=n_out).astype(np.float32))
        for n_in, n_out in pairwise(sizes)
    ]
    x = rng.normal(size=(50, sizes[0])).astype(np.float32)
    with torch.no_grad():
        reference = MLP.from_numpy(layers)(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(relu_network(layers, x), reference, rtol=1e-5, atol=1e-5)


def test_a_student_of_the_teachers_width_with_its_weights_copied_in_has_loss_zero_to_rounding():
    layers = relu_teacher(inputs=8, width=8, seed=0)
    x, y = teacher_data(layers, n=1000, seed=1)
    assert x.shape == (1000, 8) and y.shape == (1000, 1) and x.dtype == y.dtype == np.float32
    with torch.no_grad():
        student = MLP.from_numpy(layers)(torch.from_numpy(x)).numpy()
    assert np.mean((student - y) ** 2) / np.var(y) < 1e-12
    np.testing.assert_array_equal(teacher_data(layers, 1000, seed=1)[0], x)  # the seed fixes the draw


def test_the_teacher_is_a_sum_of_signed_relus():
    layers = relu_teacher(inputs=4, width=3, seed=5)
    (w, _), (a, _) = layers
    x = np.random.default_rng(2).normal(size=(20, 4))
    expected = sum(a[0, i] * np.maximum(x @ w[i].astype(np.float64), 0) for i in range(3))
    np.testing.assert_allclose(relu_network(layers, x)[:, 0], expected, rtol=1e-12, atol=1e-12)


def test_the_bump_is_a_gaussian_without_its_constant():
    x = np.linspace(-1, 1, 11)
    np.testing.assert_allclose(bump(x, 0.3), np.exp(-(x**2) / 0.18))
    assert bump(np.float32([0.5]), 0.3).dtype == np.float32
    assert bump(np.zeros(1), 2.0)[0] == 1.0


@pytest.mark.parametrize(
    "call, needle",
    [
        (lambda: relu_teacher(0, 3, 0), "inputs=0"),
        (lambda: relu_teacher(3, 2.5, 0), "width=2.5"),
        (lambda: teacher_data(relu_teacher(2, 2, 0), 0, 1), "n=0"),
        (lambda: bump(np.zeros(3), 0.0), "width=0.0"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(call, needle):
    with pytest.raises(ValueError, match=needle):
        call()
