"""The split and the statistics a comparison fits on its training rows only (Day 5: nothing
of the validation or test rows may leak into a choice): shared by the arrays' preparation
(:func:`biaslab.comparison.protocol.prepare`) and the graphs'
(:func:`biaslab.comparison.graph_data.prepare_graphs`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from biaslab.data.user_formats import listed
from biaslab.errors import ConfigError

if TYPE_CHECKING:
    from biaslab.data.user_data import UserData

__all__ = [
    "CONSTANT",
    "SPLITS",
    "feature_axis",
    "feature_stats",
    "given_targets",
    "split_rows",
    "standardized",
    "trained_targets",
]

SPLITS = ("train", "val", "test")
CONSTANT = 1e-12  # a feature whose training spread is below this is constant: it is only centred


def split_rows(data: UserData, val: float, test: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Row positions per split, shuffled. To classify, each class is split on its own (every class
    in every split); a class with fewer than 3 rows is one ConfigError naming the first few such classes."""
    if data.task == "classify":
        counts = np.bincount(data.y, minlength=data.n_classes)
        few = [f"{data.classes[c]!r} ({n} rows)" for c, n in enumerate(counts) if n < 3]
        if few:
            raise ConfigError(
                f"too few rows of class {listed(few, shown=str)}: a stratified split needs 3 per class "
                "(one each for training, validation and test); add rows or drop the class"
            )
        groups = [np.flatnonzero(data.y == c) for c in range(data.n_classes)]
    else:
        groups = [np.arange(len(data.y))]
    parts: dict[str, list[np.ndarray]] = {name: [] for name in SPLITS}
    for group in groups:
        group, n = rng.permutation(group), len(group)
        n_test = min(max(1, math.floor(test * n + 0.5)), n - 2)
        n_val = min(max(1, math.floor(val * n + 0.5)), n - 1 - n_test)
        parts["test"].append(group[:n_test])
        parts["val"].append(group[n_test : n_test + n_val])
        parts["train"].append(group[n_test + n_val :])
    return {name: rng.permutation(np.concatenate(p)) for name, p in parts.items()}


def trained_targets(
    y: np.ndarray, task: str, train: np.ndarray
) -> tuple[np.ndarray, float | None, float | None]:
    """Every target as the models train on it: class indices, or values standardized by the
    training rows' mean and standard deviation (returned with them; None to classify).

    Shapes:
        y (N,), train (n,) -> (N,) int64 or float32.
    """
    if task == "classify":
        return y.astype(np.int64), None, None
    train_y = y[train].astype(np.float64)
    y_mean, y_std = float(train_y.mean()), float(train_y.std())
    if not y_std > 0:
        raise ConfigError(f"the target is constant ({y_mean:g}) on the training rows: nothing to predict")
    return ((y.astype(np.float64) - y_mean) / y_std).astype(np.float32), y_mean, y_std


def feature_stats(x: np.ndarray, mask: np.ndarray | None, axis: int, rows: np.ndarray):
    """Mean and std per feature (along ``axis``) over the training ``rows``, masked entries left
    out; a constant feature's std is 1 (it is centred only).

    Shapes:
        x (N, ...), mask (N, S) or None, rows (n,) -> mean (F,), std (F,) in float64.
    """
    values = np.moveaxis(x[rows].astype(np.float64), axis, -1)
    values = values.reshape(-1, values.shape[-1])  # (entries, F)
    if mask is not None:
        values = values[mask[rows].reshape(-1)]  # the real elements only
    mean, std = values.mean(axis=0), values.std(axis=0)
    return mean, np.where(std > CONSTANT, std, 1.0)


def feature_axis(kind: str, ndim: int) -> int:
    """The axis of an example batch's features: the channels (1) of images, the last otherwise
    (a table's columns, a sequence's or a set's per-step / per-element features)."""
    return 1 if kind == "image" else ndim - 1


def given_targets(y: np.ndarray, task: str, rows: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each split's targets as the user gave them: class indices, or float64 values in the
    target's unit (what validation and test errors are read in)."""
    return {name: y[r] if task == "classify" else y[r].astype(np.float64) for name, r in rows.items()}


def standardized(x: np.ndarray, mask: np.ndarray | None, mean: np.ndarray, std: np.ndarray, kind: str):
    """``(x − mean) / std`` per feature: per channel (axis 1) for images, along the last axis
    otherwise; padding (``mask`` False) zero again after.

    Shapes:
        x (N, ...), mask (N, S) or None, mean and std (F,) -> (N, ...) float32.
    """
    axis = feature_axis(kind, x.ndim)
    shape = [1] * x.ndim
    shape[axis] = -1
    out = ((x - mean.reshape(shape)) / std.reshape(shape)).astype(np.float32)
    if mask is not None:
        out[~mask.astype(bool)] = 0.0  # padding stays zero
    return out
