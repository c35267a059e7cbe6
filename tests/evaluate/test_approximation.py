"""Tests for biaslab.evaluate.approximation: the pool-adjacent-violators fit is scikit-learn's
isotonic regression, the best monotone fit takes the better direction, and sign changes are
counted as a direct loop over the steps counts them."""

from itertools import pairwise

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from biaslab.evaluate.approximation import best_monotone_fit, is_monotone, monotone_fit, sign_changes


def sklearn_fit(values: np.ndarray, increasing: bool) -> np.ndarray:
    return IsotonicRegression(increasing=increasing).fit_transform(np.arange(len(values)), values)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("increasing", [True, False])
def test_monotone_fit_is_sklearns_isotonic_regression(seed, increasing):
    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(size=200).cumsum() + np.sin(np.arange(200) / 7), 1)  # ties included
    fit = monotone_fit(values, increasing)
    np.testing.assert_allclose(fit, sklearn_fit(values, increasing), rtol=1e-12, atol=1e-12)
    assert np.all(np.diff(fit) >= 0) if increasing else np.all(np.diff(fit) <= 0)


def test_a_monotone_sequence_is_its_own_fit_and_one_value_is_too():
    values = np.array([0.0, 0.0, 1.0, 2.5, 2.5, 7.0])
    np.testing.assert_array_equal(monotone_fit(values), values)
    np.testing.assert_array_equal(monotone_fit(values[::-1], increasing=False), values[::-1])
    np.testing.assert_array_equal(monotone_fit([3.0]), [3.0])


@pytest.mark.parametrize("seed", range(4))
def test_the_best_monotone_fit_is_the_better_direction(seed):
    rng = np.random.default_rng(seed)
    x = np.linspace(-1, 1, 301)
    values = np.exp(-((x - rng.uniform(-0.5, 0.5)) ** 2) / 0.1) + 0.05 * rng.normal(size=x.size)
    best = best_monotone_fit(values)
    errors = {up: np.mean((sklearn_fit(values, up) - values) ** 2) for up in (True, False)}
    assert best.increasing == (errors[True] <= errors[False])
    assert best.mse == pytest.approx(min(errors.values()), rel=1e-12)
    np.testing.assert_allclose(best.values, sklearn_fit(values, best.increasing), atol=1e-12)


def test_no_monotone_sequence_beats_the_floor():
    """The floor of a bump against many random monotone sequences of either direction."""
    x = np.linspace(-1, 1, 101)
    values = np.exp(-(x**2) / 0.125)
    floor = best_monotone_fit(values).mse
    rng = np.random.default_rng(0)
    for _ in range(200):
        candidate = np.sort(rng.uniform(0, 1, size=x.size))
        candidate = candidate if rng.random() < 0.5 else candidate[::-1]
        assert np.mean((candidate - values) ** 2) >= floor


def reference_sign_changes(values) -> int:
    """The count written as a loop: the last non-zero step's sign, and each non-zero step against it."""
    changes, last = 0, 0
    for a, b in pairwise(values):
        step = int(b > a) - int(b < a)
        if step:
            changes += last != 0 and step != last
            last = step
    return changes


@pytest.mark.parametrize(
    "values, expected",
    [
        ([0, 1, 2, 3], 0),
        ([3, 3, 3], 0),
        ([0, 1, 1, 1, 2], 0),  # flat steps are monotone both ways
        ([0, 1, 0], 1),
        ([0, 1, 1, 1, 0], 1),  # a flat top is one change, not three
        ([0, 1, 0, 1, 0], 3),
        ([5.0], 0),
    ],
)
def test_sign_changes_of_small_sequences(values, expected):
    assert sign_changes(values) == expected == reference_sign_changes(values)
    assert is_monotone(values) == (expected == 0)


@pytest.mark.parametrize("seed", range(5))
def test_sign_changes_equal_a_direct_count(seed):
    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(size=300), 0)  # many exact ties
    assert sign_changes(values) == reference_sign_changes(list(values))


def test_a_sine_over_two_periods_changes_direction_four_times():
    x = np.linspace(0, 4 * np.pi, 1001)
    assert sign_changes(np.sin(x + 0.1)) == 4


@pytest.mark.parametrize("bad", [np.zeros((3, 2)), np.array([0.0, np.nan]), np.array([])])
def test_bad_sequences_are_refused(bad):
    with pytest.raises(ValueError, match="finite sequence"):
        sign_changes(bad)
    with pytest.raises(ValueError, match="finite sequence"):
        best_monotone_fit(bad)
