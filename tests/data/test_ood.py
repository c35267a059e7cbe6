"""Tests for biaslab.data.ood: pickled arrays (more in test_pickled_array.py), Animal-MNIST, Fashion-MNIST,
synthetic sets."""

import gzip
import importlib.util
import os
import pickle

import numpy as np
import pytest

from biaslab.data import ood
from biaslab.data.mnist import write_idx
from biaslab.data.ood import (
    check_animal_mnist,
    count_duplicates,
    gaussian_noise,
    images_to_tensor,
    inverted,
    load_animal_mnist,
    load_fashion_mnist,
    ood_sets,
    read_pickled_array,
    uniform_noise,
)
from biaslab.errors import BiaslabError, DataFormatError, DataMissingError

ANIMAL_DUPLICATES = 284  # measured on animal_data_version_3.gz of animal-mnist 0.4 (284 pairs)


def write_gz_pickle(path, obj, protocol=4):
    path.write_bytes(gzip.compress(pickle.dumps(obj, protocol=protocol)))
    return path


class Malicious:
    """Unpickling it runs ``call(*args)``: what a hostile data file would do."""

    def __init__(self, call, args):
        self.call, self.args = call, args

    def __reduce__(self):
        return self.call, self.args


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    """BIASLAB_DATA points at an empty tmp folder; returns it."""
    monkeypatch.setenv("BIASLAB_DATA", str(tmp_path / "cache"))
    return tmp_path / "cache"


# ----------------------------------------------------------------------------- pickled arrays


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_legitimate_pickled_array_loads(tmp_path, protocol):
    path = write_gz_pickle(tmp_path / "ok.gz", np.zeros((3, 28, 28), np.uint8), protocol)
    array = read_pickled_array(path)
    assert array.shape == (3, 28, 28) and array.dtype == np.uint8 and not array.any()
    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps(np.arange(5, dtype=np.int16), protocol=protocol))
    np.testing.assert_array_equal(read_pickled_array(plain), np.arange(5, dtype=np.int16))


@pytest.mark.parametrize(
    "payload, refused",
    [
        (lambda s: Malicious(os.system, (f"touch {s}",)), "system"),
        (lambda s: Malicious(eval, (f"open({str(s)!r}, 'w').close()",)), "builtins.eval"),
        # an array first, then the attack: refused all the same
        (lambda s: (np.zeros(2, np.uint8), Malicious(eval, (f"open({str(s)!r}, 'w')",))), "builtins.eval"),
    ],
)
def test_malicious_pickle_refused_and_not_executed(tmp_path, payload, refused):
    sentinel = tmp_path / "sentinel"
    path = write_gz_pickle(tmp_path / "evil.gz", payload(sentinel))
    with pytest.raises(DataFormatError, match=rf"refused the global \S*{refused}") as info:
        read_pickled_array(path)
    assert "\n" not in str(info.value)
    assert not sentinel.exists()


@pytest.mark.parametrize(
    "obj, match",
    [
        ([1, 2, 3], "the opcode EMPTY_LIST"),
        (np.array([1, None], dtype=object), "the opcode EMPTY_LIST"),  # an object array's items are a list
        (np.array(["a"]), "the dtype 'U1'"),
    ],
)
def test_non_arrays_refused(tmp_path, obj, match):
    with pytest.raises(DataFormatError, match=match):
        read_pickled_array(write_gz_pickle(tmp_path / "x.gz", obj))


def test_corrupt_pickle_files(tmp_path):
    (tmp_path / "bad.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(DataFormatError, match="cannot read pickle file"):
        read_pickled_array(tmp_path / "bad.gz")
    (tmp_path / "cut.pkl").write_bytes(pickle.dumps(np.zeros(100, np.uint8))[:50])
    with pytest.raises(DataFormatError, match="not a valid pickle"):
        read_pickled_array(tmp_path / "cut.pkl")


# ----------------------------------------------------------------------------- Animal-MNIST


def test_count_duplicates():
    images = np.zeros((6, 28, 28), np.uint8)
    images[1, 0, 0] = images[2, 5, 5] = images[3, 5, 5] = 1  # 0, 4, 5 equal; 2 and 3 equal
    assert count_duplicates(images) == 3
    assert count_duplicates(images[:2]) == 0
    assert count_duplicates(images[:0]) == 0


def test_cache_written_once_and_reused(tmp_path, cache_env, monkeypatch):
    images = np.random.default_rng(0).integers(0, 256, (7, 28, 28), dtype=np.uint8)
    source = write_gz_pickle(tmp_path / "animals.gz", images)
    np.testing.assert_array_equal(load_animal_mnist(source=source), images)
    cache = cache_env / ood.ANIMAL_CACHE_NAME
    stamp = cache.stat().st_mtime_ns

    def fail(path):
        raise AssertionError("the source was read again")

    monkeypatch.setattr(ood, "read_pickled_array", fail)
    np.testing.assert_array_equal(load_animal_mnist(source=source), images)
    np.testing.assert_array_equal(load_animal_mnist(), images)  # the default takes any cache
    assert cache.stat().st_mtime_ns == stamp
    check_animal_mnist()  # the cache suffices


def test_cache_from_another_source_is_rebuilt(tmp_path, cache_env):
    first = write_gz_pickle(tmp_path / "a.gz", np.zeros((2, 28, 28), np.uint8))
    second = write_gz_pickle(tmp_path / "b.gz", np.full((3, 28, 28), 9, np.uint8))
    load_animal_mnist(source=first)
    assert load_animal_mnist(source=second).shape == (3, 28, 28)


def test_wrong_shape_refused(tmp_path, cache_env):
    source = write_gz_pickle(tmp_path / "a.gz", np.zeros((2, 28, 27), np.uint8))
    with pytest.raises(DataFormatError, match=r"expected uint8 \(N, 28, 28\)"):
        load_animal_mnist(source=source)
    assert not (cache_env / ood.ANIMAL_CACHE_NAME).exists()


def test_missing_package_message(cache_env, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "animal_mnist" else real(name, *a)
    )
    for call in (check_animal_mnist, load_animal_mnist):
        with pytest.raises(DataMissingError) as info:
            call()
        assert str(info.value) == (
            "Animal-MNIST is missing: run `biaslab data fetch animal-mnist` "
            "(or pip install --no-deps animal-mnist==0.4)"
        )


@pytest.mark.skipif(importlib.util.find_spec("animal_mnist") is None, reason="animal-mnist not installed")
def test_real_animal_mnist(cache_env):
    images = load_animal_mnist()
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    assert count_duplicates(images) == ANIMAL_DUPLICATES
    assert images.max() == 255 and np.median(images[:, 0, :]) == 0  # white outlines on black
    np.testing.assert_array_equal(load_animal_mnist(), images)  # now from the cache


# ----------------------------------------------------------------------------- Fashion-MNIST


@pytest.mark.parametrize("name", ["t10k-images-idx3-ubyte", "t10k-images-idx3-ubyte.gz"])
def test_fashion_mnist_idx_round_trip(tmp_path, name):
    images = np.random.default_rng(1).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    write_idx(tmp_path / name, images)
    np.testing.assert_array_equal(load_fashion_mnist(tmp_path), images)


def test_fashion_mnist_missing_and_malformed(tmp_path):
    with pytest.raises(
        DataMissingError, match=r"lacks t10k-images-idx3-ubyte \(or t10k-images-idx3-ubyte\.gz\)"
    ):
        load_fashion_mnist(tmp_path)
    write_idx(tmp_path / "t10k-images-idx3-ubyte", np.zeros((2, 28, 28), np.float32))
    with pytest.raises(DataFormatError, match="expected uint8"):
        load_fashion_mnist(tmp_path)


# ----------------------------------------------------------------------------- synthetic sets


@pytest.mark.parametrize("make", [gaussian_noise, uniform_noise])
def test_noise_deterministic_in_range(make):
    images = make(50, 3)
    assert images.shape == (50, 28, 28) and images.dtype == np.uint8
    np.testing.assert_array_equal(images, make(50, 3))
    assert not np.array_equal(images, make(50, 4))
    assert images.min() == 0 and images.max() == 255  # both ends reached (clipped / endpoint)


def test_noise_statistics():
    gauss = gaussian_noise(200, 0).astype(np.float64) / 255
    assert abs(np.median(gauss) - 0.5) < 0.01
    assert abs(np.mean(uniform_noise(200, 0)) - 127.5) < 1


def test_inverted_and_tensor():
    images = np.array([[[0, 255] + [7] * 26] * 28], np.uint8)
    flipped = inverted(images)
    assert flipped[0, 0, 0] == 255 and flipped[0, 0, 1] == 0 and flipped[0, 0, 2] == 248
    assert images[0, 0, 0] == 0  # the input is untouched
    tensor = images_to_tensor(flipped)
    assert tensor.shape == (1, 784) and tensor.dtype.is_floating_point
    assert float(tensor.min()) == 0.0 and float(tensor.max()) == 1.0
    assert images_to_tensor(flipped, flatten=False).shape == (1, 1, 28, 28)
    with pytest.raises(DataFormatError, match="expected uint8"):
        inverted(images.astype(np.float32))


def test_ood_sets(tmp_path, cache_env):
    animals = np.random.default_rng(2).integers(0, 256, (30, 28, 28), dtype=np.uint8)
    load_animal_mnist(source=write_gz_pickle(tmp_path / "animals.gz", animals))  # the cache ood_sets reads
    digits = np.random.default_rng(3).integers(0, 256, (40, 28, 28), dtype=np.uint8)
    sets = ood_sets(digits, 10, seed=5)
    assert list(sets) == ["animal-mnist", "gaussian-noise", "uniform-noise", "inverted-mnist"]
    assert all(s.shape == (10, 28, 28) and s.dtype == np.uint8 for s in sets.values())
    np.testing.assert_array_equal(sets["animal-mnist"], animals[:10])
    np.testing.assert_array_equal(sets["inverted-mnist"], 255 - digits[:10])
    again = ood_sets(digits, 10, seed=5)
    assert all(np.array_equal(sets[k], again[k]) for k in sets)
    assert not np.array_equal(sets["gaussian-noise"], ood_sets(digits, 10, seed=6)["gaussian-noise"])

    fashion = tmp_path / "fashion"
    write_idx(fashion / "t10k-images-idx3-ubyte.gz", np.full((12, 28, 28), 3, np.uint8))
    with_fashion = ood_sets(digits, 12, seed=5, fashion_folder=fashion)
    assert list(with_fashion)[-1] == "fashion-mnist" and with_fashion["fashion-mnist"].shape == (12, 28, 28)
    with pytest.raises(BiaslabError, match=r"n must be in 1\.\.12 \(fashion-mnist has 12 images\), got 13"):
        ood_sets(digits, 13, seed=5, fashion_folder=fashion)
    with pytest.raises(BiaslabError, match=r"n must be in 1\.\.30"):
        ood_sets(digits, 0, seed=5)
