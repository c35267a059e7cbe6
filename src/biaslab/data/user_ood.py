"""Inputs a user's model was not made for (an out-of-distribution set), read like the data.

``biaslab compare DATA --ood FILE`` asks whether each candidate can flag inputs it must not be
trusted on (Day 5: OOD detection). The OOD set is an NPZ holding ``x`` (and ``mask`` for sets)
of the same kind and example shape as DATA; labels are not needed (a ``y`` is ignored). It is
read by the same reader as DATA (:func:`~biaslab.data.user_arrays.read_arrays`: pixels scaled to
[0, 1], padding zeroed, every value finite), so both go through the same preparation.

At least ten inputs, of ``like``'s kind and example shape (:func:`load_ood_inputs` ->
:class:`OODInputs`); anything else is one line, and the NPZ is checked from its headers against the
free memory before it is read, as the data's is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from biaslab.data.user_arrays import load_npz_arrays, read_arrays
from biaslab.data.user_data import UserData
from biaslab.data.user_formats import listed, where
from biaslab.errors import ConfigError, DataFormatError

__all__ = ["MIN_OOD_ROWS", "OODInputs", "load_ood_inputs"]

MIN_OOD_ROWS = 10  # fewer OOD inputs give an AUROC too coarse to read (steps of 1/10 or more)


@dataclass(frozen=True)
class OODInputs:
    """Out-of-distribution inputs, as the data's inputs are held.

    Shapes (M inputs):
        x: (M, *input_shape) float32, the data's example shape; mask: (M, S) bool for sets and
        padded sequences, else None.
    """

    x: np.ndarray
    mask: np.ndarray | None
    source: str
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.x)


def load_ood_inputs(path: str | os.PathLike, like: UserData) -> OODInputs:
    """Read the OOD inputs at ``path`` as ``like``'s kind, checking they fit its example shape.

    Raises:
        ConfigError: not an .npz file, or data a comparison cannot flag OOD inputs of (graphs,
            molecules).
        DataFormatError: not an .npz archive, arrays larger than the free memory
            (:func:`~biaslab.data.user_arrays.load_npz_arrays`), no ``x``, another example shape
            than ``like``'s, fewer than :data:`MIN_OOD_ROWS` inputs, or values :func:`read_arrays`
            refuses (text, NaN, inf, no values per input).
    """
    path = Path(path)
    if like.x is None:
        raise ConfigError(
            f"OOD inputs are compared for tables, images, sequences and sets, not {like.kind} data"
        )
    if not path.is_file() or path.suffix.lower() != ".npz":
        raise ConfigError(f"the OOD set must be an .npz file of x (and mask for sets), not {where(path)}")
    arrays = load_npz_arrays(path)
    if "x" not in arrays:
        found = listed(sorted(arrays))
        raise DataFormatError(f"{where(path)} has no array x (it holds {found}): save the OOD inputs as x")
    arrays["y"] = np.zeros(len(arrays["x"]), dtype=np.int64)  # unlabelled: the reader wants a y
    loaded = read_arrays(arrays, like.kind, path)
    if loaded.x.shape[1:] != like.x.shape[1:]:
        shape = lambda x: "×".join(map(str, x.shape[1:]))  # noqa: E731
        raise DataFormatError(
            f"{where(path)} holds {like.kind} examples of {shape(loaded.x)}; the data's are {shape(like.x)}"
        )
    if len(loaded.x) < MIN_OOD_ROWS:
        raise DataFormatError(
            f"{where(path)} has {len(loaded.x)} inputs; an OOD set needs at least {MIN_OOD_ROWS}"
        )
    notes = tuple(n for n in loaded.notes if not n.startswith("kind "))
    return OODInputs(loaded.x, loaded.mask, os.fspath(path), notes)
