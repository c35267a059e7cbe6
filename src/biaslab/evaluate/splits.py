"""Honest splits: stratified train / validation / test, and k-fold cross-validation.

Every choice (architecture, hyper-parameters, early stopping, calibration, thresholds) is made
on the validation data; the test split is touched once, after every choice, to report. A
*stratified* split keeps each class's share the same in every part, so a rare class is not
missing from a small validation set by bad luck.

:func:`stratified_split` -> :class:`SplitIndices`; :func:`k_fold` (stratified or not).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biaslab.checks import check_integer

__all__ = ["SplitIndices", "k_fold", "stratified_split"]


@dataclass(frozen=True)
class SplitIndices:
    """Positions of the examples in each part (sorted int64 arrays, disjoint, covering all)."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


def _labels(labels) -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim != 1 or len(y) == 0:
        raise ValueError(f"labels must be a non-empty 1-D array, got shape {y.shape}")
    return y


def stratified_split(labels, val: float = 0.1, test: float = 0.2, seed: int = 0) -> SplitIndices:
    """Split positions into train / validation / test with every class in the same proportions.

    Each class's positions are shuffled (``np.random.default_rng(seed)``) and cut at
    ``round(val·n_c)`` and ``round(test·n_c)``; train takes the rest. So each part's class shares
    equal the whole set's up to one example per class.

    Args:
        labels: (N,) class labels.
        val: fraction for validation (default 0.1).
        test: fraction for the test set (default 0.2).
        seed: seed of the shuffles.
    """
    y = _labels(labels)
    if not (0 <= val < 1 and 0 <= test < 1 and val + test < 1):
        raise ValueError(f"val={val} and test={test} must be fractions in [0, 1) summing below 1")
    rng = np.random.default_rng(seed)
    parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    for cls in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == cls))
        n_val, n_test = round(val * len(members)), round(test * len(members))
        parts["val"].append(members[:n_val])
        parts["test"].append(members[n_val : n_val + n_test])
        parts["train"].append(members[n_val + n_test :])
    return SplitIndices(**{k: np.sort(np.concatenate(v)).astype(np.int64) for k, v in parts.items()})


def k_fold(labels, k: int = 5, seed: int = 0, stratified: bool = True) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k`` (train, validation) position pairs: each example is in exactly one validation fold.

    With ``stratified`` each class is dealt round-robin over the folds after a seeded shuffle, so
    every fold holds each class's share up to one example (as scikit-learn's
    ``StratifiedKFold(shuffle=True)`` promises); without it the shuffled positions are cut into
    k nearly equal blocks.

    Args:
        labels: (N,) class labels (only their number matters when not stratified).
        k: number of folds (2 ≤ k ≤ N).
        seed: seed of the shuffle.
        stratified: keep class proportions in every fold (default True).
    """
    y = _labels(labels)
    k = check_integer(k, "k", 2, len(y))
    rng = np.random.default_rng(seed)
    fold_of = np.empty(len(y), dtype=np.int64)
    if stratified:
        offset = 0
        for cls in np.unique(y):
            members = rng.permutation(np.flatnonzero(y == cls))
            fold_of[members] = (np.arange(len(members)) + offset) % k  # deal round-robin
            offset += len(members)  # the next class starts where this one stopped
    else:
        fold_of[rng.permutation(len(y))] = np.arange(len(y)) * k // len(y)
    everything = np.arange(len(y))
    return [(everything[fold_of != f], everything[fold_of == f]) for f in range(k)]
