"""The learning-curve classifier on synthetic curves of each shape."""

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
