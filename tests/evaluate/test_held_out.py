"""Tests for biaslab.evaluate.held_out: the resampled accuracy's spread is the hypergeometric one
(SciPy), and choosing the best of many equal models on one test set reports too much."""

import numpy as np
import pytest
from scipy.stats import hypergeom

from biaslab.evaluate.held_out import resampled_accuracy, sampling_std, selection_optimism


def population(p: float, n: int, seed: int) -> np.ndarray:
    correct = np.zeros(n, dtype=bool)
    correct[np.random.default_rng(seed).permutation(n)[: round(p * n)]] = True
    return correct


@pytest.mark.parametrize("size", [50, 500, 4000])
def test_the_spread_is_the_hypergeometric_one(size):
    correct = population(0.9, 5000, seed=0)
    expected = hypergeom(5000, int(correct.sum()), size).std() / size  # SciPy's count, as a share
    assert sampling_std(correct.mean(), size, 5000) == pytest.approx(expected, rel=1e-12)
    measured = resampled_accuracy(correct, size, draws=2000, seed=1)
    assert measured.std(ddof=1) == pytest.approx(expected, rel=0.1)  # 2,000 draws: within 10%
    assert measured.mean() == pytest.approx(0.9, abs=4 * expected / np.sqrt(2000))


def test_the_whole_population_has_no_spread_and_the_seed_fixes_the_draws():
    correct = population(0.8, 300, seed=2)
    assert np.all(resampled_accuracy(correct, 300, draws=5, seed=3) == correct.mean())
    assert sampling_std(0.8, 300, 300) == 0.0
    np.testing.assert_array_equal(
        resampled_accuracy(correct, 30, 7, seed=4), resampled_accuracy(correct, 30, 7, seed=4)
    )


def test_one_model_chosen_from_one_is_not_optimistic_on_average():
    correct = population(0.9, 20_000, seed=5)[None, :]  # (1, P)
    chosen = selection_optimism(correct, select=500, fresh=5000, draws=400, seed=6)
    assert (chosen.chosen == 0).all()
    assert abs(chosen.optimism.mean()) < 3 * sampling_std(0.9, 500, 20_000) / np.sqrt(400)


def test_the_best_of_many_equal_models_is_reported_too_high():
    """50 models of the same 90% accuracy, each wrong on its own examples: the one best on 500
    examples is no better on fresh ones, so its reported score is the maximum of 50 noisy ones."""
    correct = np.stack([population(0.9, 20_000, seed=s) for s in range(50)])  # (50, P)
    chosen = selection_optimism(correct, select=500, fresh=5000, draws=200, seed=7)
    sigma = sampling_std(0.9, 500, 20_000)
    assert chosen.optimism.mean() > 1.5 * sigma  # the expected maximum of 50 normals is 2.25 σ
    assert abs(chosen.fresh.mean() - 0.9) < 0.005  # what it is: no better than any other
    assert len(set(chosen.chosen.tolist())) > 10  # a different "best" each time


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: resampled_accuracy(np.ones((2, 3), bool), 2, 1, 0), r"\(P,\)"),
        (lambda: resampled_accuracy(np.ones(10, bool), 11, 1, 0), "size=11"),
        (lambda: resampled_accuracy(np.ones(10, bool), 2.5, 1, 0), "size=2.5"),
        (
            lambda: selection_optimism(np.ones((3, 10), bool), 6, 5, 1, 0),
            r"fresh=5: give a whole number in 1\.\.4",
        ),
        (lambda: sampling_std(1.5, 10, 100), "accuracy=1.5"),
    ],
)
def test_bad_input_is_one_clear_line(call, message):
    with pytest.raises(ValueError, match=message):
        call()
