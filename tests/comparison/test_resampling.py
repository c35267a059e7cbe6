"""Repeated validation splits (src/biaslab/comparison/resampling.py): the test rows kept, the
rest drawn anew per class, every statistic refitted, and the standard error of the scores."""

import math

import numpy as np
import pytest

from biaslab.comparison.judged import score_and_error
from biaslab.comparison.protocol import prepare
from biaslab.comparison.resampling import SMALL_DATA_ROWS, repeats_for, resplit
from tests.comparison.test_protocol import table


def test_a_resplit_keeps_the_test_rows_and_the_sizes_and_redraws_the_rest():
    data = table(n=200)
    first = prepare(data, seed=0)
    again = resplit(data, first, 1)
    assert np.array_equal(again.rows["test"], first.rows["test"])
    assert {k: len(v) for k, v in again.rows.items()} == {k: len(v) for k, v in first.rows.items()}
    every = np.sort(np.concatenate(list(again.rows.values())))
    assert np.array_equal(every, np.arange(len(data)))  # each row in exactly one split
    assert not np.array_equal(np.sort(again.rows["val"]), np.sort(first.rows["val"]))
    for c in range(data.n_classes):  # each class keeps its validation count
        assert np.sum(data.y[again.rows["val"]] == c) == np.sum(data.y[first.rows["val"]] == c)
    train = data.x[again.rows["train"]].astype(np.float64)
    np.testing.assert_allclose(again.x_mean, train.mean(axis=0))  # statistics of the new training rows
    assert np.array_equal(resplit(data, first, 1).rows["val"], again.rows["val"])  # seeded
    assert not np.array_equal(resplit(data, first, 2).rows["val"], again.rows["val"])


def test_the_standard_error_over_splits_or_from_the_validation_rows():
    vals = [{"accuracy": a} for a in (0.9, 0.92, 0.94)]
    mean, error = score_and_error("classify", vals, 100)
    assert mean == pytest.approx(0.92) and error == pytest.approx(0.02 / math.sqrt(3))
    mean, error = score_and_error("classify", [{"accuracy": 0.9}], 100)  # one split: binomial
    assert error == pytest.approx(math.sqrt(0.9 * 0.1 / 100))
    _, error = score_and_error("regress", [{"mae": 1.0, "rmse": 1.25}], 400)  # var |e| = RMSE² − MAE²
    assert error == pytest.approx(0.75 / 20)


def test_small_data_gets_five_splits_unless_asked():
    assert repeats_for(SMALL_DATA_ROWS - 1, "table") == 5 and repeats_for(SMALL_DATA_ROWS, "image") == 1
    assert repeats_for(100, "graph") == repeats_for(100, "molecule", asked=3) == 1
    assert repeats_for(100_000, "table", asked=3) == 3
