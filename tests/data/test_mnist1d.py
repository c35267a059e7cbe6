"""Tests for biaslab.data.mnist1d: the package's generator, cached, with the global RNGs restored."""

import random

import numpy as np
import pytest
import torch

from biaslab.config import ConfigError
from biaslab.data import mnist1d
from biaslab.errors import DataFormatError, DataMissingError


def test_published_sizes_balanced_labels_and_standardized_signals():
    data = mnist1d.load_mnist1d()
    assert data["x_train"].shape == (4000, 40) and data["x_test"].shape == (1000, 40)
    assert data["x_train"].dtype == np.float32 and data["y_train"].dtype == np.int64
    counts = np.bincount(np.concatenate([data["y_train"], data["y_test"]]), minlength=10)
    assert counts.tolist() == [500] * 10  # 5,000 signals, 500 per digit template
    everything = np.concatenate([data["x_train"], data["x_test"]])
    assert abs(everything.mean()) < 1e-5 and everything.std() == pytest.approx(1.0, abs=1e-4)


def test_shuffled_variant_is_one_fixed_permutation_of_the_positions():
    plain, shuffled = mnist1d.load_mnist1d(), mnist1d.load_mnist1d(shuffle=True)
    np.testing.assert_array_equal(plain["y_train"], shuffled["y_train"])
    # each shuffled position is exactly one plain position: same information, no order
    where = [
        int(np.flatnonzero((plain["x_train"] == shuffled["x_train"][:, [j]]).all(axis=0))[0])
        for j in range(mnist1d.LENGTH)
    ]
    assert sorted(where) == list(range(mnist1d.LENGTH)) and where != list(range(mnist1d.LENGTH))
    np.testing.assert_array_equal(shuffled["x_test"], plain["x_test"][:, where])


def test_generation_restores_the_global_generators(tmp_path):
    np.random.seed(123)
    random.seed(123)
    expected_numpy, expected_python = np.random.random(), random.random()
    np.random.seed(123)
    random.seed(123)
    mnist1d.load_mnist1d(num_samples=50, seed=7, cache_dir=tmp_path)  # generated: reseeds with 7
    assert np.random.random() == expected_numpy and random.random() == expected_python


def test_cache_is_written_once_and_reused(tmp_path, monkeypatch):
    first = mnist1d.load_mnist1d(num_samples=50, seed=3, cache_dir=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["mnist1d-50-3.npz"]
    monkeypatch.setattr(mnist1d, "_generate", lambda *a: pytest.fail("regenerated despite the cache"))
    again = mnist1d.load_mnist1d(num_samples=50, seed=3, cache_dir=tmp_path)
    for key, value in first.items():
        np.testing.assert_array_equal(again[key], value)


def test_corrupt_cache_is_one_line(tmp_path):
    (tmp_path / "mnist1d-50-3.npz").write_bytes(b"not an archive")
    with pytest.raises(DataFormatError, match="delete it"):
        mnist1d.load_mnist1d(num_samples=50, seed=3, cache_dir=tmp_path)


def test_missing_package_without_a_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASLAB_DATA", str(tmp_path))
    monkeypatch.setattr(mnist1d, "_package_installed", lambda: False)
    with pytest.raises(DataMissingError, match="pip install mnist1d"):
        mnist1d.check_available()
    with pytest.raises(DataMissingError, match="pip install mnist1d"):
        mnist1d.load_mnist1d()


def test_splits_disjoint_deterministic_and_nested():
    a = mnist1d.mnist1d_splits(n_val=400, seed=1)
    b = mnist1d.mnist1d_splits(n_val=400, seed=1)
    small = mnist1d.mnist1d_splits(n_val=400, seed=1, n_train=100)
    assert a.x_train.shape == (3600, 40) and a.x_val.shape == (400, 40) and a.x_test.shape == (1000, 40)
    assert set(a.train_index.tolist()).isdisjoint(a.val_index.tolist())
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_val, b.y_val)
    np.testing.assert_array_equal(small.val_index, a.val_index)
    assert set(small.train_index.tolist()) <= set(a.train_index.tolist()) and len(small.x_train) == 100


@pytest.mark.parametrize("kwargs", [{"n_val": 0}, {"n_val": 4000}, {"n_val": 500, "n_train": 3501}])
def test_sizes_are_checked_with_their_reason(kwargs):
    with pytest.raises(ConfigError, match="training signals"):
        mnist1d.Mnist1dSizes(**kwargs)
    assert mnist1d.Mnist1dSizes(n_val=500).training_set()[0] == 3500
