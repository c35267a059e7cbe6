"""Tests for biaslab.data.splits: generated splits are independent draws of the configured sizes."""

from dataclasses import dataclass

import numpy as np
import pytest
import torch

from biaslab.config import ConfigError
from biaslab.data.splits import GeneratedSizes, Splits


def test_generate_draws_each_split_with_its_own_seed():
    sizes = GeneratedSizes(n_train=5, n_val=3, n_test=2)
    seeds = {"train": 1, "val": 2, "test": 3}

    def draw(n, seed):
        gen = torch.Generator().manual_seed(seed)
        return torch.rand(n, 4, generator=gen), torch.full((n,), seed)

    splits = sizes.generate(draw, seeds.__getitem__)
    assert [len(splits.x_train), len(splits.x_val), len(splits.x_test)] == [5, 3, 2]
    assert splits.y_val.tolist() == [2, 2, 2] and splits.y_test.tolist() == [3, 3]
    assert torch.equal(splits.x_train, draw(5, 1)[0])
    assert sizes.training_set() == (5, "n_train=5")


def test_sizes_are_checked_and_a_batch_must_fit():
    from biaslab.config import apply_overrides, check_batch_fits
    from biaslab.train.config import TrainConfig

    @dataclass(frozen=True)
    class LabConfig:  # made of parts: its data sizes and its training
        data: GeneratedSizes = GeneratedSizes()
        train: TrainConfig = TrainConfig()

        def __post_init__(self):
            check_batch_fits(self)

    with pytest.raises(ConfigError, match="n_val"):
        GeneratedSizes(n_val=0)
    with pytest.raises(ConfigError, match="n_val=0"):
        apply_overrides(LabConfig(), {"n_val": 0})
    with pytest.raises(ConfigError, match="n_train=100"):
        apply_overrides(LabConfig(), {"n_train": 100, "batch_size": 128})
    assert apply_overrides(LabConfig(), {"n_train": 128, "batch_size": 128}).data.n_train == 128


@pytest.mark.parametrize("as_numpy", [False, True])
def test_train_subset_keeps_the_rows_and_repeats_them_cyclically(as_numpy):
    x, y = torch.arange(20.0).reshape(10, 2), torch.arange(10) % 3
    splits = Splits(x, y, x[:2], y[:2], x[:3], y[:3], train_index=np.arange(100, 110))
    splits = splits.numpy() if as_numpy else splits
    sub = splits.train_subset([7, 2, 5])
    assert np.asarray(sub.y_train).tolist() == [1, 2, 2] and sub.train_index.tolist() == [107, 102, 105]
    assert np.asarray(sub.x_train).tolist() == [[14, 15], [4, 5], [10, 11]]
    long = splits.train_subset([7, 2, 5], repeat_to=8)
    assert long.train_index.tolist() == [107, 102, 105] * 2 + [107, 102]
    assert np.asarray(long.x_train).tolist() == np.asarray(sub.x_train)[[0, 1, 2, 0, 1, 2, 0, 1]].tolist()
    assert long.x_val is splits.x_val and long.x_test is splits.x_test  # untouched
    with pytest.raises(ValueError, match="smaller than the 3 rows"):
        splits.train_subset([7, 2, 5], repeat_to=2)
    with pytest.raises(ValueError, match="non-empty"):
        splits.train_subset([])
