"""MNIST-1D: ten 1-D templates, randomly padded, translated, scaled, sheared and noised.

Source: the PyPI package ``mnist1d`` (Greydanus 2020), which generates the data set from its ten
templates with ``make_dataset(get_dataset_args())``: 4,000 training and 1,000 test signals of
length 40, the published benchmark. biaslab calls only that generator (never ``get_dataset``,
which tries the network and pickles into the working directory), and caches the arrays in
``<data_dir()>/mnist1d-<samples>-<seed>[-shuffled].npz``. ``make_dataset`` reseeds NumPy's and
Python's global generators; both are restored afterwards, so a run's other draws stay its own.

The *shuffled* variant applies one fixed random permutation to the 40 positions of every signal:
the same information, without spatial order. A model with a locality prior (a CNN, a GRU reading
in order) loses its advantage there; an MLP, which ignores order, does not.
"""

from __future__ import annotations

import importlib.util
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from biaslab.config import check_range
from biaslab.data.splits import Splits
from biaslab.data.store import atomic_save_npz, data_dir, load_npz
from biaslab.errors import BiaslabError, DataFormatError, DataMissingError

__all__ = [
    "LENGTH",
    "Mnist1dSizes",
    "check_available",
    "load_mnist1d",
    "mnist1d_splits",
    "mnist1d_splits_for",
]

LENGTH = 40  # samples per signal (the package's final_seq_length)
PUBLISHED_SAMPLES, PUBLISHED_SEED = 5000, 42  # get_dataset_args(): the published data set
TRAIN_SIGNALS = 4000  # the published train split (train_split 0.8 of 5,000)
PIP_HINT = "pip install mnist1d==0.0.2.post1"


def _cache_path(folder: Path, num_samples: int, seed: int, shuffle: bool) -> Path:
    return folder / f"mnist1d-{num_samples}-{seed}{'-shuffled' if shuffle else ''}.npz"


def check_available() -> None:
    """Raise a one-line DataMissingError unless MNIST-1D can be loaded: both published variants
    are cached, or the ``mnist1d`` generator is installed."""
    folder = data_dir()
    cached = all(_cache_path(folder, PUBLISHED_SAMPLES, PUBLISHED_SEED, s).is_file() for s in (False, True))
    if not cached and not _package_installed():
        raise DataMissingError(f"MNIST-1D needs the package mnist1d: {PIP_HINT}")


def _package_installed() -> bool:
    try:
        return importlib.util.find_spec("mnist1d") is not None
    except (ImportError, ValueError):
        return False


def _generate(num_samples: int, seed: int, shuffle: bool) -> dict[str, np.ndarray]:
    """Run the package's generator with the global generators saved and restored."""
    if not _package_installed():
        raise DataMissingError(f"MNIST-1D needs the package mnist1d: {PIP_HINT}")
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    args.num_samples, args.seed, args.shuffle_seq = num_samples, seed, shuffle
    numpy_state, python_state = np.random.get_state(), random.getstate()
    try:
        data = make_dataset(args)
    finally:
        np.random.set_state(numpy_state)
        random.setstate(python_state)
    return {
        "x_train": np.asarray(data["x"], dtype=np.float32),
        "y_train": np.asarray(data["y"], dtype=np.int64),
        "x_test": np.asarray(data["x_test"], dtype=np.float32),
        "y_test": np.asarray(data["y_test"], dtype=np.int64),
    }


def load_mnist1d(
    shuffle: bool = False, num_samples: int = PUBLISHED_SAMPLES, seed: int = PUBLISHED_SEED, cache_dir=None
) -> dict[str, np.ndarray]:
    """The MNIST-1D arrays, generated once and cached.

    Args:
        shuffle: the spatially shuffled variant (one fixed permutation of the 40 positions).
        num_samples: signals in all (default 5,000: 4,000 train and 1,000 test, as published).
        seed: the generator's seed (default 42, the published data set).
        cache_dir: folder of the cache file; default :func:`data_dir`.

    Returns:
        ``x_train`` (0.8·num_samples, 40) float32, ``y_train`` int64, ``x_test``, ``y_test``.

    Raises:
        DataMissingError: no cache and the ``mnist1d`` package is not installed.
        DataFormatError: the cache is corrupt (delete it and it is rebuilt).
    """
    if num_samples < 10:
        raise BiaslabError(f"MNIST-1D needs at least 10 samples (one per class), got {num_samples}")
    folder = data_dir() if cache_dir is None else Path(cache_dir).expanduser()
    cache = _cache_path(folder, num_samples, seed, shuffle)
    if cache.is_file():
        arrays = load_npz(cache)
        _validate(arrays, str(cache))
        return arrays
    arrays = _generate(num_samples, seed, shuffle)  # ~5 s: the package's generator, in Python
    atomic_save_npz(cache, compress=False, **arrays)
    return arrays


def _validate(arrays: dict[str, np.ndarray], where: str) -> None:
    keys = ("x_train", "y_train", "x_test", "y_test")
    if any(k not in arrays for k in keys):
        raise DataFormatError(f"{where} lacks some of {', '.join(keys)}; delete it so it is rebuilt")
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        shaped = x.ndim == 2 and x.shape[1] == LENGTH and y.shape == (len(x),)
        if not shaped or y.min(initial=0) < 0 or y.max(initial=0) > 9:
            raise DataFormatError(f"{where} holds malformed {split} arrays; delete it so it is rebuilt")


def mnist1d_splits(
    n_val: int = 500, seed: int = 0, shuffle: bool = False, n_train: int | None = None
) -> Splits:
    """MNIST-1D as train / validation / test tensors.

    The validation set is carved from the 4,000 training signals by a seeded permutation; the
    test set is the package's 1,000 test signals, touched only for the final evaluation.

    Args:
        n_val: validation signals taken from the training set (default 500).
        seed: seed of the permutation that picks them.
        shuffle: the spatially shuffled variant.
        n_train: keep only this many of the remaining training signals (default all).

    Returns:
        A :class:`Splits`: x float32 (N, 40) (already centred and scaled by the generator),
        y int64 (N,).

    Raises:
        BiaslabError: a size is out of range.
    """
    data = load_mnist1d(shuffle=shuffle)
    n_total = len(data["x_train"])
    if not 0 <= n_val < n_total:
        raise BiaslabError(f"n_val must be in 0..{n_total - 1}, got {n_val}")
    if n_train is not None and not 0 < n_train <= n_total - n_val:
        raise BiaslabError(f"n_train must be in 1..{n_total - n_val} (after n_val), got {n_train}")
    order = np.random.default_rng(seed).permutation(n_total)
    val_index = np.sort(order[:n_val])
    train_index = np.sort(order[n_val:] if n_train is None else order[n_val : n_val + n_train])
    x, y = torch.from_numpy(data["x_train"]), torch.from_numpy(data["y_train"])
    return Splits(
        x_train=x[train_index],
        y_train=y[train_index],
        x_val=x[val_index],
        y_val=y[val_index],
        x_test=torch.from_numpy(data["x_test"]),
        y_test=torch.from_numpy(data["y_test"]),
        train_index=train_index,
        val_index=val_index,
    )


@dataclass(frozen=True)
class Mnist1dSizes:
    """How many MNIST-1D signals each split takes: a lab config's data part (``data: Mnist1dSizes``).

    Args:
        n_val: validation signals carved from the 4,000 training signals (default 500).
        n_train: training signals kept of the rest (default None: all of them).
    """

    n_val: int = 500
    n_train: int | None = None

    def __post_init__(self):
        check_range(
            self, "n_val", 1, TRAIN_SIGNALS - 1, f"{TRAIN_SIGNALS} training signals, 1 left to train on"
        )
        if self.n_train is not None:
            room = TRAIN_SIGNALS - self.n_val
            check_range(
                self, "n_train", 1, room, f"{TRAIN_SIGNALS} training signals minus n_val={self.n_val}"
            )

    def training_set(self) -> tuple[int, str]:
        """The number of training signals and the keys that set it (for ``check_batch_fits``)."""
        if self.n_train is not None:
            return self.n_train, f"n_train={self.n_train}"
        return TRAIN_SIGNALS - self.n_val, f"n_train=none: all {TRAIN_SIGNALS} signals but n_val={self.n_val}"


def mnist1d_splits_for(sizes: Mnist1dSizes, seed: int, *, shuffle: bool = False) -> Splits:
    """:func:`mnist1d_splits` with the sizes of a lab's config."""
    return mnist1d_splits(n_val=sizes.n_val, seed=seed, shuffle=shuffle, n_train=sizes.n_train)
