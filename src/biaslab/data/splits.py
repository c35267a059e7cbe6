"""Train / validation / test splits: the one container every lab passes to the recipes.

A :class:`Splits` holds the train / val / test inputs and targets, as NumPy (:meth:`Splits.numpy`)
or torch (:meth:`Splits.torch`); :meth:`Splits.train_subset` cuts the training set to a learning
curve's subset, repeated to an equal epoch length. :class:`GeneratedSizes` is the data part of a
lab whose data a generator draws (``n_train``, ``n_val``, ``n_test``; ``generate(draw, seed_for)``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

SPLIT_NAMES = ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test")


@dataclass(frozen=True, eq=False)
class Splits:
    """Train / validation / test inputs and targets (torch tensors or NumPy arrays).

    Shapes:
        x_*: (N, ...) inputs, e.g. MNIST float32 (N, 784) flattened or (N, 1, 28, 28);
        y_*: (N,) int64 labels (or any targets).
        train_index, val_index: positions of the rows in the original training set (NumPy), when
        the splits were carved from one.
    """

    x_train: Any
    y_train: Any
    x_val: Any
    y_val: Any
    x_test: Any
    y_test: Any
    train_index: np.ndarray | None = None
    val_index: np.ndarray | None = None

    def numpy(self) -> Splits:
        """The same splits as NumPy arrays (no copy for CPU tensors), for ``biaslab.scratch``."""
        return replace(self, **{name: np.asarray(getattr(self, name)) for name in SPLIT_NAMES})

    def torch(self) -> Splits:
        """The same splits as torch tensors (no copy for NumPy arrays)."""
        import torch

        return replace(self, **{name: torch.as_tensor(getattr(self, name)) for name in SPLIT_NAMES})

    def train_subset(self, rows, repeat_to: int | None = None) -> Splits:
        """The same splits with the training set cut to ``rows`` (positions in it), repeated
        cyclically to ``repeat_to`` examples when given: an epoch over the subset then takes as
        many steps as one over ``repeat_to`` examples (learning curves at an equal step budget).
        Validation and test are untouched; ``train_index`` follows the rows.

        Shapes:
            rows: (n,) integer positions -> ``x_train`` (repeat_to or n, ...).
        """
        rows = np.asarray(rows, dtype=np.int64)
        if rows.ndim != 1 or len(rows) == 0:
            raise ValueError(f"rows must be a non-empty 1-D array of positions, got shape {rows.shape}")
        if repeat_to is not None:
            if repeat_to < len(rows):
                raise ValueError(f"repeat_to={repeat_to} is smaller than the {len(rows)} rows kept")
            rows = rows[np.arange(repeat_to) % len(rows)]  # (repeat_to,): rows, rows, ..., cut
        index = None if self.train_index is None else self.train_index[rows]
        return replace(self, x_train=self.x_train[rows], y_train=self.y_train[rows], train_index=index)

    def replace(self, **changes: Any) -> Splits:
        """A copy with some splits replaced, e.g. ``splits.replace(y_train=noisy_labels)``."""
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"Splits has no field(s) {', '.join(sorted(unknown))}")
        return replace(self, **changes)


@dataclass(frozen=True)
class GeneratedSizes:
    """The data part of a lab config whose data a generator draws: how many examples per split.

    Args:
        n_train, n_val, n_test: examples drawn for each split (defaults 5,000 / 1,000 / 2,000).

    A lab's config holds it as ``data: GeneratedSizes = GeneratedSizes(n_train=...)``;
    :meth:`generate` draws the three splits with independent seeds.
    """

    n_train: int = 5000
    n_val: int = 1000
    n_test: int = 2000

    def __post_init__(self):
        from biaslab.config import check_range

        for key in ("n_train", "n_val", "n_test"):
            check_range(self, key, 1, 10_000_000, "examples the generator draws for the split")

    def training_set(self) -> tuple[int, str]:
        """The number of training examples and the key that sets it (for ``check_batch_fits``)."""
        return self.n_train, f"n_train={self.n_train}"

    def generate(self, draw, seed_for) -> Splits:
        """``Splits`` from ``draw(n, seed) -> (x, y)`` called once per split with
        ``seed_for(split_name)``: the splits are independent draws of the same task."""
        sizes = {"train": self.n_train, "val": self.n_val, "test": self.n_test}
        (x_train, y_train), (x_val, y_val), (x_test, y_test) = (
            draw(n, seed_for(s)) for s, n in sizes.items()
        )
        return Splits(x_train, y_train, x_val, y_val, x_test, y_test)
