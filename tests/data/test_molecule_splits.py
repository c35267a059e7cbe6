"""Molecule splits: sizes, disjointness, scaffold separation, and target normalisation without leakage."""

import numpy as np
import pytest

from biaslab.data.molecule_splits import random_split, scaffold_split
from biaslab.errors import ConfigError


def test_random_split_sizes_disjoint_and_seeded():
    split = random_split(1000, 800, 100, seed=3)
    assert split.sizes() == (800, 100, 100)
    together = np.concatenate([split.train, split.val, split.test])
    assert sorted(together.tolist()) == list(range(1000))
    again = random_split(1000, 800, 100, seed=3)
    assert all((a == b).all() for a, b in zip((split.train, split.val), (again.train, again.val)))
    assert (random_split(1000, 800, 100, seed=4).train != split.train).any()
    with pytest.raises(ConfigError, match="must leave test molecules"):
        random_split(1000, 900, 100, seed=0)


def test_training_subsets_are_nested_and_keep_val_and_test():
    split = random_split(1000, 800, 100, seed=0)
    small, large = split.subsample_train(50, seed=1), split.subsample_train(400, seed=1)
    assert set(small.train) <= set(large.train) <= set(split.train)
    assert (small.test == split.test).all() and (small.val == split.val).all()
    with pytest.raises(ConfigError, match="1..800"):
        split.subsample_train(801, seed=1)


def test_scaffold_split_keeps_each_scaffold_in_one_split():
    rng = np.random.default_rng(0)
    scaffold = rng.zipf(1.6, size=3000) % 400  # a few large groups and many small ones
    split = scaffold_split(scaffold, (0.8, 0.1, 0.1), seed=0)
    parts = [set(scaffold[p].tolist()) for p in (split.train, split.val, split.test)]
    assert not parts[0] & parts[1] and not parts[0] & parts[2] and not parts[1] & parts[2]
    assert (
        sum(split.sizes()) == 3000 and len(set(np.concatenate([split.train, split.val, split.test]))) == 3000
    )
    train, val, test = split.sizes()
    assert train <= 2400 and val <= 300 and abs(test - 300) < 150
    # The largest group (acyclic molecules in QM9) is in training.
    biggest = np.bincount(scaffold).argmax()
    assert biggest in parts[0]
    assert (scaffold_split(scaffold, seed=1).test != split.test).any()


def test_scaffold_split_checks_fractions():
    with pytest.raises(ConfigError, match="summing to 1"):
        scaffold_split(np.zeros(10), (0.8, 0.1, 0.2))


def test_subsample_draws_evaluation_rows_at_random():
    split = random_split(1000, 800, 100, seed=0)
    small = split.subsample(val=30, test=40, seed=2)
    assert small.sizes() == (800, 30, 40)
    assert set(small.val) <= set(split.val) and set(small.test) <= set(split.test)
    assert (small.test != split.test[:40]).any()  # not a prefix
    assert split.subsample(val=None, test=500).sizes() == (800, 100, 100)
