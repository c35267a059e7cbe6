"""Tests for biaslab.data.splits: generated splits are independent draws of the configured sizes."""

from dataclasses import dataclass

import pytest
import torch

from biaslab.config import ConfigError
from biaslab.data.splits import GeneratedSizes


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
    from biaslab.train import TrainConfig

    @dataclass(frozen=True)
    class LabConfig(TrainConfig, GeneratedSizes):
        pass

    with pytest.raises(ConfigError, match="n_val"):
        LabConfig(n_val=0)
    with pytest.raises(ConfigError, match="n_train=100"):
        LabConfig(n_train=100, batch_size=128)
    assert LabConfig(n_train=128, batch_size=128).n_train == 128
