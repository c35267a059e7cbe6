"""A scientist's own data, loaded into one typed, checked object: :func:`load_user_data` -> :class:`UserData`.

What ``biaslab compare DATA`` reads. One call reads a file or folder, infers its *kind* (which
architectures' priors can fit it) and its *task*, encodes the labels and refuses bad data in one
line. Nothing is trained here.

    file                                     kind
    .csv / .tsv / .parquet (+ --target)      table; molecule when a column is named ``smiles``
    .npz with x, y (and mask)                table, image, sequence or set, by x's shape
    .npz with edge_index, node_graph, x, y   graph
    .pt: a list of torch-geometric Data      graph
    a folder of class subfolders of images   image

The kind rules (``user_arrays.array_kind`` for arrays) and the task rule (:func:`infer_task`) are
written in the notes of every load, with the argument that overrides them. Pillow, RDKit,
pyarrow and torch-geometric are imported only by the reader that needs them.

The task rule: whole numbers with at most ``MAX_CLASSES`` (50) values are classified, other numbers
regressed; at least ``min_rows`` (20) examples. Bad data is one line naming the file and the
column or array (a DataFormatError; a ConfigError for an argument that does not fit). Hostile files
are refused before anything is allocated: an NPZ is read from its ``.npy`` headers first (a lone
``.npy``, members that are not ``.npy``, pickles, or declared sizes beyond 90% of the free memory
are refused: ``user_formats.check_memory_for``), a ``.pt`` zip's declared sizes are checked before
``torch.load(weights_only=True)``, images from their headers before decoding. Every list of the
user's names in a message or a note is capped (``user_formats.listed``: 5, and "N more").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

import numpy as np

from biaslab.checks import is_integer
from biaslab.data.user_arrays import read_arrays, read_npz
from biaslab.data.user_formats import Loaded, where
from biaslab.data.user_graphs import read_graph_list
from biaslab.data.user_images import read_image_folder
from biaslab.data.user_tables import read_table
from biaslab.errors import ConfigError, DataFormatError
from biaslab.formatting import quoted

__all__ = [
    "KINDS",
    "MAX_CLASSES",
    "MIN_ROWS",
    "SUFFIXES",
    "TASKS",
    "Kind",
    "Task",
    "UserData",
    "arrays_as_user_data",
    "infer_task",
    "load_user_data",
]

Kind = Literal["table", "image", "sequence", "set", "graph", "molecule"]
Task = Literal["classify", "regress"]
KINDS: tuple[str, ...] = get_args(Kind)
TASKS: tuple[str, ...] = get_args(Task)
MAX_CLASSES = 50  # task=None: an integer-like target with at most this many values is classified
MIN_ROWS = 20  # the smallest training size a comparison uses
SUFFIXES = (".csv", ".tsv", ".parquet", ".pq", ".npz", ".pt")
NOUNS = {
    "table": "rows",
    "image": "images",
    "sequence": "sequences",
    "set": "sets",
    "graph": "graphs",
    "molecule": "molecules",
}


@dataclass(frozen=True, eq=False)
class UserData:
    """A user's data set, one kind, checked: every input finite (a table's may be missing), at
    least two classes.

    Shapes (N examples):
        x: table (N, F) float32; image (N, C, H, W) float32 in [0, 1] (C = 1 grayscale, 3 RGB,
            4 RGBA from arrays; standardizing is left to the model, on training rows);
            sequence (N, T, F) float32; set (N, S, F) float32, padding zeroed; None for graph
            and molecule.
        y: (N,) int64 class indices 0..K-1 for ``classify``, float32 for ``regress``.
        classes: the K original labels in the order of their index (sorted: numbers by value,
            text alphabetically; an integer-like number as an ``int``); () for ``regress``.
        feature_names: table: the columns of x; sequence, set, graph: ``x0``, ``x1``, ... per
            feature (per node feature for graphs); () for image and molecule.
        mask: (N, S) bool for a set (True: a real element) or a padded sequence; else None.
        smiles: molecule: N SMILES strings RDKit can parse; else None.
        positions: molecule: N coordinate arrays (n_heavy_atoms_i, 3) in ångström, a row per
            atom of the SMILES, read from a SMILES CSV's columns Elements and XYZ_Ang (qm9pack's
            layout) for the 3-D models; else None.
        graphs: graph: N torch-geometric ``Data`` (x (n_i, F) float32, edge_index (2, E_i)
            int64, y (1,) the encoded label, as ``y``); else None.
        columns: table: each feature column's
            :class:`~biaslab.data.table_columns.ColumnSchema` (numbers, or categories whose codes
            x holds), aligned with ``feature_names``; a table's x may hold NaN (a missing cell);
            () for other kinds.
        pixel_range: image: (low, high), the rule the pixels took to [0, 1], x = (x_given - low)
            / (high - low) (:func:`~biaslab.data.user_arrays.to_unit_range`: (0, 1) kept, (0, 255)
            divided, else the data set's minimum and maximum), so new images can be read alike;
            None for other kinds.
        source: the path read.
        notes: what was inferred or done, one sentence each (kind, task, dropped rows, resizing).
    """

    kind: Kind
    task: Task
    x: np.ndarray | None
    y: np.ndarray
    classes: tuple = ()
    feature_names: tuple[str, ...] = ()
    mask: np.ndarray | None = None
    smiles: tuple[str, ...] | None = None
    positions: tuple[np.ndarray, ...] | None = None
    graphs: list | None = None
    source: str = ""
    notes: tuple[str, ...] = ()
    columns: tuple = ()
    pixel_range: tuple[float, float] | None = None

    def __len__(self) -> int:
        return len(self.y)

    @property
    def n_classes(self) -> int:
        """K for ``classify``, 0 for ``regress``."""
        return len(self.classes)

    @property
    def categorical(self) -> np.ndarray:
        """(F,) bool: which of a table's columns are categories (codes in x); all False otherwise."""
        width = 0 if self.x is None or self.x.ndim != 2 else self.x.shape[1]
        flags = [c.kind == "categories" for c in self.columns]
        return np.array(flags if len(flags) == width else [False] * width, dtype=bool)

    @property
    def is_raw_table(self) -> bool:
        """A table with categories or missing cells: the candidates need it encoded."""
        return self.kind == "table" and (bool(self.categorical.any()) or bool(np.isnan(self.x).any()))

    @property
    def n_outputs(self) -> int:
        """What a model of this data outputs per example: K class scores, or 1 value."""
        return self.n_classes if self.task == "classify" else 1

    def summary(self) -> str:
        """One line: kind, size, task (e.g. ``image: 120 images of 1×28×28, classify into 3 classes``)."""
        if self.kind == "table":
            shape = f" × {self.x.shape[1]} features"
        else:
            shape = f" of {'×'.join(map(str, self.x.shape[1:]))}" if self.x is not None else ""
        task = f"classify into {self.n_classes} classes" if self.task == "classify" else "regress"
        return f"{self.kind}: {len(self)} {NOUNS[self.kind]}{shape}, {task}"


def load_user_data(
    path: str | os.PathLike,
    *,
    target: str | None = None,
    task: str | None = None,
    kind: str | None = None,
    image_size: tuple[int, int] | None = None,
    min_rows: int = MIN_ROWS,
) -> UserData:
    """Read a user's data set into a checked :class:`UserData`.

    Args:
        path: a file (``SUFFIXES``) or a folder of class subfolders of images.
        target: the label column of a table or SMILES CSV (required there; unused otherwise).
        task: ``classify``, ``regress`` or None (inferred: :func:`infer_task`).
        kind: one of ``KINDS`` or None (inferred from the file and, for arrays, x's shape); a
            kind the data cannot be is refused.
        image_size: (H, W): resize every image of a folder to it (bilinear); without it, images
            of different sizes are refused.
        min_rows: the fewest examples accepted (after unparsable SMILES are dropped).

    Returns:
        The data set; ``notes`` says how kind and task were chosen and what was dropped or changed.

    Raises:
        ConfigError: a bad argument (an unknown kind or task, no such path, no or an unknown
            target column, a kind that contradicts the data, a bad ``image_size``).
        DataFormatError: bad data, one line naming the file and the column or array: an unknown
            extension, a table column of dates or free text, inf, a single class, too few examples, mixed
            image sizes, no parsable SMILES, ...
        DataMissingError: the optional library a format needs (pyarrow, Pillow, RDKit,
            torch-geometric), naming its pip command.
    """
    _check_arguments(kind, task, image_size, min_rows)
    path = Path(path)
    return _checked(_read(path, target, kind, image_size), path, target, task, min_rows)


def arrays_as_user_data(
    arrays: Mapping[str, np.ndarray],
    name: str,
    *,
    task: str | None = None,
    kind: str | None = None,
    min_rows: int = MIN_ROWS,
) -> UserData:
    """Arrays in memory (``x``, ``y`` and a set's ``mask``) read and checked as an NPZ holding
    them is by :func:`load_user_data`; messages and ``source`` name them ``name``."""
    _check_arguments(kind, task, None, min_rows)
    return _checked(read_arrays(dict(arrays), kind, Path(name)), Path(name), None, task, min_rows)


def _checked(loaded: Loaded, path: Path, target: str | None, task: str | None, min_rows: int) -> UserData:
    """What a reader loaded, with its task chosen, its labels encoded and its size checked."""
    notes = loaded.notes
    if target is not None and loaded.kind not in ("table", "molecule"):
        notes.append(f"target {quoted(target)} not used: {loaded.kind} data holds its labels itself")
    chosen_task, why = infer_task(loaded.y, task)
    notes.append(f"task {chosen_task}: {why}")
    y, classes = _encode(loaded.y, chosen_task, path)
    if len(y) < min_rows:
        raise DataFormatError(
            f"{where(path)} has {len(y)} {NOUNS[loaded.kind]}; needs at least {min_rows} "
            "(the smallest training size)"
        )
    graphs = loaded.graphs
    if graphs is not None:
        import torch

        for graph, label in zip(graphs, y, strict=True):
            graph.y = torch.tensor(
                [label.item()], dtype=torch.long if chosen_task == "classify" else torch.float32
            )
    return UserData(
        kind=loaded.kind,
        task=chosen_task,
        x=loaded.x,
        y=y,
        classes=classes,
        feature_names=loaded.feature_names,
        mask=loaded.mask,
        smiles=loaded.smiles,
        positions=loaded.positions,
        graphs=graphs,
        source=os.fspath(path),
        notes=tuple(notes),
        columns=loaded.columns,
        pixel_range=loaded.pixel_range,
    )


def _check_arguments(kind, task, image_size, min_rows) -> None:
    if kind is not None and kind not in KINDS:
        raise ConfigError(f"unknown kind {quoted(kind)}; choose one of {', '.join(KINDS)}")
    if task is not None and task not in TASKS:
        raise ConfigError(f"unknown task {quoted(task)}; choose one of {', '.join(TASKS)}")
    if image_size is not None:
        pair = tuple(image_size) if isinstance(image_size, (tuple, list)) else ()
        if len(pair) != 2 or not all(is_integer(v) and v > 0 for v in pair):
            raise ConfigError(f"image_size must be two positive integers (H, W), not {quoted(image_size)}")
    if not is_integer(min_rows) or min_rows < 1:
        raise ConfigError(f"min_rows must be a positive integer, not {quoted(min_rows)}")


def _read(path: Path, target: str | None, kind: str | None, image_size) -> Loaded:
    """The reader the path's type calls for."""
    if path.is_dir():
        size = (int(image_size[0]), int(image_size[1])) if image_size is not None else None
        return read_image_folder(path, kind, size)
    if not path.is_file():
        raise ConfigError(f"no file or folder at {where(path)}")
    suffix = path.suffix.lower()
    if image_size is not None:
        raise ConfigError(f"image_size resizes the images of a folder; {where(path)} is a file")
    if suffix in (".csv", ".tsv", ".parquet", ".pq"):
        return read_table(path, target, kind)
    if suffix == ".npz":
        return read_npz(path, kind)
    if suffix == ".pt":
        return read_graph_list(path, kind)
    hint = "; save x and y together: numpy.savez(path, x=x, y=y)" if suffix == ".npy" else ""
    raise DataFormatError(
        f"{where(path)}: unknown file type {quoted(suffix or path.name)}; supported: {', '.join(SUFFIXES)} "
        f"or a folder of class subfolders of images{hint}"
    )


def infer_task(y: np.ndarray, task: str | None) -> tuple[str, str]:
    """The task and why, as the notes say it.

    The rule, when ``task`` is None: text or booleans are classified; numbers are classified
    when every value is a whole number and there are at most ``MAX_CLASSES`` distinct ones,
    and regressed otherwise.

    Raises:
        DataFormatError: ``regress`` of a text target.
    """
    text = y.dtype == object
    if task is not None:
        if task == "regress" and text:
            raise DataFormatError(
                f"task regress needs a numeric target; it holds text such as {quoted(y[0])}"
            )
        return task, "as given"
    if text or y.dtype == bool:
        return "classify", f"the target holds {'text' if text else 'booleans'}"
    distinct = np.unique(y)
    whole = bool(np.all(distinct == np.round(distinct)))
    if whole and len(distinct) <= MAX_CLASSES:
        return (
            "classify",
            f"the target holds {len(distinct)} distinct whole numbers (<= {MAX_CLASSES}; "
            "pass task='regress' to regress)",
        )
    reason = (
        "has fractional values" if not whole else f"has {len(distinct)} distinct values (> {MAX_CLASSES})"
    )
    return "regress", f"the target {reason} (pass task='classify' to classify)"


def _encode(y: np.ndarray, task: str, path: Path) -> tuple[np.ndarray, tuple]:
    """Class indices and the original labels in order (``classify``), or float32 values."""
    if task == "regress":
        values = y.astype(np.float32)
        if not np.isfinite(values).all():
            raise DataFormatError(f"{where(path)}: the target holds NaN or infinite values (float32)")
        if values.size and values.min() == values.max():
            raise DataFormatError(
                f"{where(path)}: the target is constant ({values[0]:g}); nothing to regress"
            )
        return values, ()
    if y.dtype != object:
        y = y.astype(np.float64)
        if not np.isfinite(y).all():
            raise DataFormatError(f"{where(path)}: the target holds NaN or infinite values")
    classes, index = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        only = quoted(_label(classes[0])) if len(classes) else "none"
        raise DataFormatError(
            f"{where(path)}: the target has a single class ({only}); classification needs two or more"
        )
    return index.astype(np.int64), tuple(_label(c) for c in classes)


def _label(value):
    """A class label as plain Python: text stays text, a whole number becomes an ``int``."""
    if isinstance(value, str):
        return value
    value = float(value)
    return int(value) if value == round(value) else value
