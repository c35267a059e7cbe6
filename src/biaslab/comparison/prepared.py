"""A user's data as the comparison protocol prepared it, for arrays: tables, images, sequences
and sets (graphs and molecules: :class:`~biaslab.comparison.graph_data.PreparedGraphs`, the same
interface).

Every prepared data set hands the training and reading of a candidate
(:mod:`biaslab.comparison.fitting`) the same four things, so that one ``fit_torch`` and one output
loop serve every kind:

* ``trainer_batches(split, takes_mask)``: the tensors the Trainer iterates (arrays:
  ``(x, mask, y)`` or ``(x, y)``; graphs: ``(positions, y)``);
* ``batch_step(step)``: the protocol's step, as the batches need it (graphs: each batch's rows
  collated into one disjoint graph first);
* ``input_chunks(split, takes_mask)``: the split's inputs, ``EVAL_BATCH`` examples at a time, as
  the model is called on them;
* ``tensors(split)``, ``rows``, ``targets``, ``to_unit``: what the scores read.

:class:`Scaling` is what was fitted on the training rows that new inputs are read through (a
saved comparison keeps it to predict new rows).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from biaslab.comparison.preparation import standardized
from biaslab.data.splits import Splits
from biaslab.train.config import EVAL_BATCH

__all__ = ["Inputs", "Prepared", "PreparedData", "Scaling", "in_unit", "tensor_chunks"]


@dataclass(frozen=True, eq=False)
class PreparedData:
    """What every prepared data set holds, whatever its inputs: arrays (:class:`Prepared`) or
    graphs (:class:`~biaslab.comparison.graph_data.PreparedGraphs`), each a view that also hands
    the trainer its ``trainer_batches``, ``batch_step`` and ``input_chunks``.

    Shapes (n_s rows in split s):
        input_shape: one example's shape as the candidates read it (graphs: (F,), the node
            features); n_outputs: classes (classify) or 1 (regress).
        rows: split -> (n_s,) positions of its rows in the user's data.
        targets: split -> (n_s,) targets as given: class indices, or values in the target's unit.

    Each view also holds ``y_mean`` and ``y_std``, the training targets' mean and standard
    deviation (regress), else None.
    """

    kind: str
    task: str
    input_shape: tuple[int, ...]
    n_outputs: int
    rows: dict[str, np.ndarray]
    targets: dict[str, np.ndarray]

    @property
    def n_train(self) -> int:
        return len(self.rows["train"])

    def to_unit(self, values) -> np.ndarray:
        """Standardized regression outputs back in the target's unit: ``values · y_std + y_mean``."""
        return in_unit(values, self.y_mean, self.y_std)


def in_unit(values, y_mean: float, y_std: float) -> np.ndarray:
    """Standardized regression outputs back in the target's unit: ``values · y_std + y_mean``."""
    return np.asarray(values, dtype=np.float64) * y_std + y_mean


@dataclass(frozen=True, eq=False)
class Scaling:
    """What :func:`~biaslab.comparison.protocol.prepare` fitted on the training rows that new
    inputs are read through: a raw table's encoding, the features' means and deviations, a
    regression target's (what a saved comparison keeps to predict new rows).

    Shapes:
        x_mean, x_std: (C,) per image channel, (F,) per column or feature otherwise.
    """

    kind: str
    x_mean: np.ndarray
    x_std: np.ndarray
    encoding: Any = None
    y_mean: float | None = None
    y_std: float | None = None

    def standardize(self, x: np.ndarray, mask: np.ndarray | None = None) -> Inputs:
        """New inputs of the data's kind and example shape encoded (a raw table) and scaled by
        the training rows' statistics, exactly as the data were prepared.

        Shapes:
            x (M, *example shape as read), mask (M, S) or None -> :class:`Inputs`.
        """
        raw = None
        if self.encoding is not None:
            raw = np.asarray(x, dtype=np.float64)
            x = self.encoding.transform(raw)
        scaled = standardized(x, mask, self.x_mean, self.x_std, self.kind)
        mask_t = None if mask is None else torch.from_numpy(mask.astype(bool))
        return Inputs(torch.from_numpy(scaled), mask_t, raw)

    def to_unit(self, values) -> np.ndarray:
        """Standardized regression outputs in the target's unit (:func:`in_unit`)."""
        return in_unit(values, self.y_mean, self.y_std)


@dataclass(frozen=True, eq=False)
class Prepared(PreparedData):
    """A user's data split and scaled for fitting, with what was fitted on the training rows.

    Shapes (n_s rows in split s):
        splits: :class:`~biaslab.data.splits.Splits` of torch tensors: ``x_*`` (n_s,
            *input_shape) float32, standardized; ``y_*`` (n_s,) int64 class indices, or float32
            targets standardized by ``y_mean`` and ``y_std``.
        rows: split -> (n_s,) positions of its rows in the user's data.
        targets: split -> (n_s,) targets as given: class indices, or values in the target's unit.
        masks: split -> (n_s, S) bool (True: a real element) for sets and padded sequences; else
            None.
        x_mean, x_std: the training rows' per-feature statistics: (C,) per channel for images,
            (F,) per column or feature otherwise (masked entries left out); a constant
            feature's std is 1.
        y_mean, y_std: the training targets' mean and standard deviation (regress), else None.
        encoding: a raw table's :class:`~biaslab.comparison.table_encoding.TableEncoding`,
            fitted on the training rows (``input_shape`` is then its width); else None.
        native: a raw table's rows as read, split -> (n_s, F) float64 (NaN where missing,
            category codes), for estimators that read them natively; else None.
    """

    splits: Splits
    x_mean: np.ndarray
    x_std: np.ndarray
    y_mean: float | None = None
    y_std: float | None = None
    masks: dict[str, torch.Tensor] | None = None
    seed: int = 0
    encoding: Any = None
    native: dict[str, np.ndarray] | None = None

    @property
    def categorical(self) -> np.ndarray | None:
        """(F,) bool, which of a raw table's columns are categories (its encoding's); else None."""
        return None if self.encoding is None else np.asarray(self.encoding.categorical, dtype=bool)

    def tensors(self, split: str) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """``(x, mask or None, y)`` of ``split`` ("train", "val" or "test")."""
        mask = None if self.masks is None else self.masks[split]
        return getattr(self.splits, f"x_{split}"), mask, getattr(self.splits, f"y_{split}")

    def trainer_batches(self, split: str, takes_mask: bool) -> tuple[torch.Tensor, ...]:
        """What the Trainer iterates for ``split``: ``(x, mask, y)`` for a model that takes a
        mask, else ``(x, y)``."""
        x, mask, y = self.tensors(split)
        return (x, mask, y) if takes_mask else (x, y)

    def batch_step(self, step):
        """The protocol's step as these batches need it: as it is (arrays)."""
        return step

    def input_chunks(self, split: str, takes_mask: bool) -> Iterator[tuple[torch.Tensor, ...]]:
        """``split``'s inputs as the model is called on them, ``EVAL_BATCH`` rows at a time."""
        x, mask, _ = self.tensors(split)
        return tensor_chunks(x, mask if takes_mask else None)

    @property
    def scaling(self) -> Scaling:
        """What was fitted on the training rows to read new inputs (:class:`Scaling`)."""
        return Scaling(self.kind, self.x_mean, self.x_std, self.encoding, self.y_mean, self.y_std)

    def standardize(self, x: np.ndarray, mask: np.ndarray | None = None) -> Inputs:
        """New inputs (an OOD set) read as the data were: :meth:`Scaling.standardize`.

        Shapes:
            x (M, *example shape as read), mask (M, S) or None -> :class:`Inputs`.
        """
        return self.scaling.standardize(x, mask)

    def train_subset(self, rows, repeat_to: int | None = None) -> Prepared:
        """The same preparation with the training set cut to ``rows`` (positions in it), repeated
        cyclically to ``repeat_to`` rows when given (:meth:`Splits.train_subset`); validation,
        test and every statistic stay as they are.

        Shapes:
            rows: (n,) -> a training set of (repeat_to or n) rows.
        """
        rows = np.asarray(rows, dtype=np.int64)
        if repeat_to is not None:
            rows = rows[np.arange(max(repeat_to, len(rows))) % len(rows)]
        masks = None if self.masks is None else {**self.masks, "train": self.masks["train"][rows]}
        native = None if self.native is None else {**self.native, "train": self.native["train"][rows]}
        return replace(
            self,
            splits=self.splits.train_subset(rows),
            rows={**self.rows, "train": self.rows["train"][rows]},
            targets={**self.targets, "train": self.targets["train"][rows]},
            masks=masks,
            native=native,
        )


@dataclass(frozen=True)
class Inputs:
    """New rows as the candidates read them (:meth:`Prepared.standardize`; new molecules:
    :func:`~biaslab.comparison.graph_data.molecule_inputs`).

    Shapes (M rows):
        x: (M, *input_shape) float32, encoded and standardized (None for molecules); mask: (M,
        S) bool or None; raw: a raw table's rows as read, (M, F) float64, for estimators that
        read them natively; else None.
        graphs: molecules: their graphs (a ``GraphStore`` of M graphs, node features
        standardized as the training graphs'), or None; tables: molecules: ``"fingerprint"`` ->
        (M, 2048) float32 Morgan bits; else None.
    """

    x: torch.Tensor | None = None
    mask: torch.Tensor | None = None
    raw: np.ndarray | None = None
    graphs: Any = None
    tables: dict[str, torch.Tensor] | None = None


def tensor_chunks(x: torch.Tensor, mask: torch.Tensor | None = None) -> Iterator[tuple[torch.Tensor, ...]]:
    """``(x,)`` or ``(x, mask)``, ``EVAL_BATCH`` rows at a time: what a model is called on.

    Shapes:
        x (N, *input_shape), mask (N, S) or None -> chunks of at most EVAL_BATCH rows.
    """
    for i in range(0, len(x), EVAL_BATCH):
        yield (x[i : i + EVAL_BATCH],) if mask is None else (x[i : i + EVAL_BATCH], mask[i : i + EVAL_BATCH])
