"""Splitting molecules without looking at the test set.

Two splits (Wu et al. 2018, MoleculeNet):

- **random**: a seeded permutation cut at fixed sizes (QM9's customary 110,000 / 10,000 / rest).
  Test molecules are new draws from the same distribution as the training ones.
- **scaffold**: molecules are grouped by their Bemis–Murcko scaffold and whole groups go to one
  split, so every test molecule has a ring system no training molecule has: a distribution shift
  towards new chemistry. Groups larger than half the test split go to training first (they
  cannot fit elsewhere); the others are shuffled by the seed and fill train, then validation,
  then test (Chemprop's "balanced" scaffold split).

Targets are standardised by the comparison protocol, from the training rows only
(:func:`biaslab.comparison.preparation.trained_targets`): statistics of the whole data set (as
torch-geometric's QM9 example computes them) carry information about the test targets into
training.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biaslab.errors import ConfigError

__all__ = ["MoleculeSplit", "random_split", "scaffold_split"]


@dataclass(frozen=True, eq=False)
class MoleculeSplit:
    """Row indices of the training, validation and test molecules (disjoint, each sorted)."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray

    def sizes(self) -> tuple[int, int, int]:
        return len(self.train), len(self.val), len(self.test)

    def subsample_train(self, n: int, seed: int) -> MoleculeSplit:
        """The same validation and test rows with ``n`` training rows drawn by ``seed``, nested:
        the first n of one seeded permutation, so a smaller training set is part of a larger one."""
        if not 1 <= n <= len(self.train):
            raise ConfigError(f"training-set size {n}: must be in 1..{len(self.train)}")
        order = np.random.default_rng(seed).permutation(len(self.train))
        return MoleculeSplit(np.sort(self.train[order[:n]]), self.val, self.test)

    def subsample(self, val: int | None = None, test: int | None = None, seed: int = 0) -> MoleculeSplit:
        """The same training rows with at most ``val`` validation and ``test`` test rows, drawn at
        random by ``seed`` (QM9's rows are ordered by size: a prefix would be biased)."""
        rng = np.random.default_rng(seed)

        def draw(rows: np.ndarray, n: int | None) -> np.ndarray:
            return rows if n is None or n >= len(rows) else np.sort(rng.choice(rows, n, replace=False))

        return MoleculeSplit(self.train, draw(self.val, val), draw(self.test, test))


def random_split(n: int, n_train: int, n_val: int, seed: int) -> MoleculeSplit:
    """A seeded random split: ``n_train`` training rows, ``n_val`` validation rows, the rest test.

    Raises:
        ConfigError: the sizes leave no test molecule.
    """
    if n_train < 1 or n_val < 0 or n_train + n_val >= n:
        raise ConfigError(f"n_train={n_train} + n_val={n_val} must leave test molecules of the {n}")
    order = np.random.default_rng(seed).permutation(n)
    cut = (n_train, n_train + n_val)
    return MoleculeSplit(*(np.sort(part) for part in np.split(order, cut)))


def scaffold_split(
    scaffold: np.ndarray, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1), seed: int = 0
) -> MoleculeSplit:
    """Whole scaffold groups per split, balanced as Chemprop's (see the module docstring).

    Args:
        scaffold: (N,) a scaffold id per molecule (any hashable values; equal = same scaffold).
        fractions: training, validation and test shares (default 0.8, 0.1, 0.1; they sum to 1).
        seed: shuffles the groups that are not larger than half the test split.
    """
    if len(fractions) != 3 or min(fractions) < 0 or not np.isclose(sum(fractions), 1.0):
        raise ConfigError(f"fractions={fractions}: three non-negative shares summing to 1")
    n = len(scaffold)
    _, group = np.unique(np.asarray(scaffold), return_inverse=True)
    members = [np.flatnonzero(group == g) for g in range(group.max() + 1)] if n else []
    capacity = (fractions[0] * n, fractions[1] * n)
    big = [m for m in members if len(m) > fractions[2] * n / 2]
    small = [m for m in members if len(m) <= fractions[2] * n / 2]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(small))
    big.sort(key=len, reverse=True)
    parts: list[list[np.ndarray]] = [[], [], []]
    filled = [0, 0, 0]
    for m in [*big, *(small[k] for k in order)]:
        k = 0 if filled[0] + len(m) <= capacity[0] else 1 if filled[1] + len(m) <= capacity[1] else 2
        parts[k].append(m)
        filled[k] += len(m)
    return MoleculeSplit(*(np.sort(np.concatenate(p)) if p else np.empty(0, dtype=np.int64) for p in parts))
