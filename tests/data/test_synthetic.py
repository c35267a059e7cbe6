"""Tests for biaslab.data.synthetic."""

import numpy as np
import pytest

from biaslab.data import noisy_polynomial, polynomial_features, spiral, two_spirals, xor
from biaslab.errors import BiaslabError


@pytest.mark.parametrize("make", [xor, two_spirals])
def test_classification_shapes_and_dtypes(make):
    X, y = make(n=101, seed=3)
    assert X.shape == (101, 2) and X.dtype == np.float32
    assert y.shape == (101,) and y.dtype == np.int64
    assert set(np.unique(y)) <= {0, 1}


@pytest.mark.parametrize("make", [xor, two_spirals, noisy_polynomial])
def test_determinism_by_seed(make):
    a, b, c = make(seed=7), make(seed=7), make(seed=8)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])


def test_xor_labels_follow_sign_rule_without_noise():
    X, y = xor(n=200, noise=0.0, seed=0)
    assert set(map(tuple, np.abs(X).tolist())) == {(1.0, 1.0)}
    np.testing.assert_array_equal(y, (np.sign(X[:, 0]) != np.sign(X[:, 1])).astype(np.int64))
    assert np.bincount(y).tolist() == [100, 100]


def test_xor_with_noise_mostly_follows_sign_rule():
    X, y = xor(n=1000, noise=0.1, seed=1)
    agree = np.mean(y == (np.sign(X[:, 0]) != np.sign(X[:, 1])))
    assert agree > 0.99


@pytest.mark.parametrize("n", [400, 401, 2])
def test_spirals_balanced(n):
    _, y = two_spirals(n=n, seed=0)
    counts = np.bincount(y, minlength=2)
    assert abs(counts[0] - counts[1]) <= 1 and counts.sum() == n


def test_spirals_classes_are_point_reflections_without_noise():
    X, y = two_spirals(n=400, noise=0.0, seed=0)
    assert np.all(np.linalg.norm(X, axis=1) <= 1.0 + 1e-6)
    # Reflect class 1 through the origin: it must lie on class 0's curve r = angle / (2*pi*turns).
    reflected = -X[y == 1].astype(np.float64)
    r = np.linalg.norm(reflected, axis=1)
    phase = np.mod(np.arctan2(reflected[:, 1], reflected[:, 0]) - r * 3 * np.pi, 2 * np.pi)
    assert np.all(np.minimum(phase, 2 * np.pi - phase) < 1e-4)


def test_spiral_lies_on_its_curve_and_reproduces_from_its_seed():
    X = spiral(n=500, noise=0.0, turns=1.5, seed=3)
    assert X.shape == (500, 2) and X.dtype == np.float32
    r = np.linalg.norm(X.astype(np.float64), axis=1)
    assert np.all(r <= 1 + 1e-6)
    phase = np.mod(np.arctan2(X[:, 1], X[:, 0]) - r * 3 * np.pi, 2 * np.pi)  # angle = 2π·turns·r
    assert np.all(np.minimum(phase, 2 * np.pi - phase) < 1e-4)
    assert np.array_equal(spiral(50, seed=1), spiral(50, seed=1))
    noisy = spiral(20_000, noise=0.05, seed=2)
    assert np.std(noisy - spiral(20_000, noise=0.0, seed=2)) == pytest.approx(0.05, rel=0.05)


def test_noisy_polynomial_shapes_and_noise_free_values():
    x, y = noisy_polynomial(n=30, coefficients=(1.0, 2.0, 3.0), noise=0.0, x_range=(0, 2), seed=0)
    assert x.shape == (30, 1) and x.dtype == np.float32
    assert y.shape == (30,) and y.dtype == np.float32
    assert x.min() >= 0 and x.max() <= 2
    expected = 1 + 2 * x[:, 0].astype(np.float64) + 3 * x[:, 0].astype(np.float64) ** 2
    np.testing.assert_allclose(y, expected, rtol=1e-5)


def test_polynomial_features():
    feats = polynomial_features(np.array([[2.0], [3.0]]), 3)
    np.testing.assert_array_equal(feats, [[1, 2, 4, 8], [1, 3, 9, 27]])
    assert polynomial_features(np.array([1, 2]), 0).shape == (2, 1)
    assert polynomial_features(np.array([1, 2]), 2).dtype == np.float64
    assert polynomial_features(np.zeros(3, dtype=np.float32), 2).dtype == np.float32


@pytest.mark.parametrize(
    "call",
    [
        lambda: xor(n=0),
        lambda: xor(noise=-1),
        lambda: two_spirals(turns=0),
        lambda: noisy_polynomial(x_range=(1, 0)),
        lambda: polynomial_features(np.zeros((3, 2)), 2),
        lambda: polynomial_features(np.zeros(3), -1),
    ],
)
def test_bad_arguments_raise(call):
    with pytest.raises(BiaslabError):
        call()


def test_the_teacher_is_fixed_by_its_seed_and_the_data_by_theirs():
    import numpy as np

    from biaslab.data.synthetic import teacher_regression

    x, y = teacher_regression(50, seed=1, teacher_seed=7, inputs=4, hidden=3)
    teacher = np.random.default_rng(7)
    w, v = teacher.normal(size=(3, 4)), teacher.normal(size=3)
    by_hand = [
        sum(v[j] * np.tanh(w[j] @ row / 2.0) for j in range(3)) / np.sqrt(3) for row in x.astype(float)
    ]
    np.testing.assert_allclose(y, by_hand, rtol=1e-5, atol=1e-6)
    x2, _ = teacher_regression(50, seed=2, teacher_seed=7, inputs=4, hidden=3)
    assert not np.allclose(x, x2) and x.shape == (50, 4) and y.dtype == np.float32


def test_repeated_measurements_leak_through_a_split_by_measurement():
    """Each subject's measurements share its class and lie close together, so a 1-nearest-
    neighbour model looks far better on a split by measurement than on new subjects."""
    from sklearn.model_selection import GroupShuffleSplit, ShuffleSplit
    from sklearn.neighbors import KNeighborsClassifier

    from biaslab.data.synthetic import repeated_measurements

    x, y, groups = repeated_measurements(subjects=60, per_subject=8, seed=1)
    assert x.shape == (480, 10) and x.dtype == np.float32 and y.dtype == groups.dtype == np.int64
    assert all(len(set(y[groups == s])) == 1 for s in range(60)) and y.sum() == 240
    np.testing.assert_array_equal(repeated_measurements(subjects=60, per_subject=8, seed=1)[0], x)
    scores = {}
    splits = {
        "by measurement": ShuffleSplit(n_splits=1, test_size=0.25, random_state=0).split(x),
        "by subject": GroupShuffleSplit(n_splits=1, test_size=0.25, random_state=0).split(x, y, groups),
    }
    for name, split in splits.items():
        train, test = next(split)
        scores[name] = KNeighborsClassifier(1).fit(x[train], y[train]).score(x[test], y[test])
    assert scores["by measurement"] > 0.95 and scores["by subject"] < 0.75, scores
    with pytest.raises(BiaslabError, match="n must be an integer >= 2"):
        repeated_measurements(subjects=1)
