"""The learning-curve classifier on synthetic curves of each shape."""

import itertools
import math

import numpy as np
import pytest

from biaslab.evaluate import SHAPES, classify_curve

CHANCE = math.log(10)
EPOCHS = np.arange(1, 21)


def curves(shape, seed=0):
    """A (train, val) pair with the textbook look of ``shape`` plus a little noise."""
    rng = np.random.default_rng(seed)
    noise = lambda: 1 + 0.01 * rng.standard_normal(len(EPOCHS))
    if shape == "healthy":
        train = 0.1 + 2.0 * np.exp(-EPOCHS / 3)
        val = 0.2 + 2.0 * np.exp(-EPOCHS / 3)
    elif shape == "overfitting":
        train = 2.0 * np.exp(-EPOCHS / 3)
        val = 0.4 + 2.0 * np.exp(-EPOCHS / 3) + 0.03 * np.maximum(EPOCHS - 6, 0)
    elif shape == "underfitting":
        train = 2.3 - 0.05 * EPOCHS
        val = 2.3 - 0.048 * EPOCHS
    else:  # diverging: the loss climbs away
        train = 2.0 * np.exp(0.3 * EPOCHS)
        val = 2.2 * np.exp(0.3 * EPOCHS)
    return train * noise(), val * noise()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(5))
def test_each_textbook_shape_is_recognised(shape, seed):
    train, val = curves(shape, seed)
    reading = classify_curve(train, val, chance_loss=CHANCE)
    assert reading.shape == shape, reading.reason


def test_non_finite_loss_is_diverging():
    assert classify_curve([2.3, 1.5, float("nan")], [2.3, 1.6]).shape == "diverging"
    assert classify_curve([2.3, float("inf")], [2.3, 2.0]).shape == "diverging"


def test_early_blow_up_counts_as_diverging_even_if_it_settles():
    # Adam at too high a rate: one huge epoch, then stuck near the uninformed loss.
    train = [80.0, 3.0, 2.3, 2.25, 2.2]
    assert classify_curve(train, [4.0, 2.4, 2.4, 2.4, 2.4], chance_loss=CHANCE).shape == "diverging"


def test_without_chance_loss_the_first_value_is_the_reference():
    train = [2.0, 2.5, 3.0]  # ends above its start
    assert classify_curve(train, [2.0, 2.6, 3.1]).shape == "diverging"


def test_small_validation_rise_is_still_healthy():
    train = [1.0, 0.6, 0.4, 0.3, 0.25]
    val = [1.0, 0.7, 0.55, 0.5, 0.52]  # 4% above its minimum: noise, not overfitting
    assert classify_curve(train, val, chance_loss=CHANCE).shape == "healthy"


def test_empty_curve_is_an_error():
    with pytest.raises(ValueError):
        classify_curve([], [])


def brute_force_window(lrs, losses, target):
    """Every run of neighbouring rates, kept when all of them reach the target: the longest, in
    grid steps of log10."""
    step = (np.log10(lrs[-1]) - np.log10(lrs[0])) / (len(lrs) - 1)
    longest = 0
    for i in range(len(lrs)):
        for j in range(i, len(lrs)):
            if all(loss <= target for loss in losses[i : j + 1]):
                longest = max(longest, j - i + 1)
    return longest * step


@pytest.mark.parametrize("seed", range(15))
def test_window_decades_equals_the_longest_run_by_brute_force(seed):
    from biaslab.evaluate.curves import window_decades

    rng = np.random.default_rng(seed)
    lrs = np.logspace(-5, 0, int(rng.integers(2, 22)))
    losses = rng.uniform(0, 1, len(lrs))
    losses[rng.uniform(size=len(lrs)) < 0.1] = np.nan  # a diverged training
    assert window_decades(lrs, losses, 0.5) == pytest.approx(brute_force_window(lrs, losses, 0.5))


def test_window_decades_on_a_known_sweep_and_its_bad_inputs():
    from biaslab.evaluate.curves import evenly_logspaced, window_decades

    lrs = [1e-4, 1e-3, 1e-2, 1e-1, 1.0]  # one decade per step
    assert window_decades(lrs, [0.9, 0.2, 0.1, 0.25, np.nan], 0.3) == pytest.approx(3.0)
    assert window_decades(lrs, [0.9] * 5, 0.3) == 0.0
    rounded = tuple(float(f"{v:.3g}") for v in np.logspace(-5, 0, 21))  # printed to three digits
    assert evenly_logspaced(rounded) and not evenly_logspaced([1e-3, 1e-2, 1.0])
    with pytest.raises(ValueError, match="evenly on a log axis"):
        window_decades([1e-3, 1e-2, 1.0], [0.1, 0.1, 0.1], 0.3)
    with pytest.raises(ValueError, match="one length"):
        window_decades(lrs, [0.1], 0.3)


def test_size_needed_is_the_first_size_within_the_tolerance_of_the_best():
    from biaslab.evaluate.curves import size_needed

    sizes, errors = [2, 4, 8, 16, 32], [1.0, 0.5, 0.24, 0.21, 0.2]
    assert size_needed(sizes, errors, 0.25) == 8  # 0.24 <= 1.25 x 0.2 < 0.5
    assert size_needed(sizes, errors, 0.0) == 32
    assert size_needed(sizes, errors, 10.0) == 2
    assert size_needed(sizes, [0.2, 0.5, 0.2, 0.3, 0.4], 0.0) == 2  # the first of equal bests
    for s, e in itertools.product([sizes], [errors]):  # against the definition, term by term
        best = min(e)
        assert size_needed(s, e, 0.3) == next(x for x, v in zip(s, e) if v <= 1.3 * best)
    with pytest.raises(ValueError, match="increasing"):
        size_needed([4, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive finite"):
        size_needed([2, 4], [1.0, np.nan])
