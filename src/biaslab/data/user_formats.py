"""What a user's data readers share: the checks (labels, numbers, finite values, memory) and the
one-line message helpers.

The readers (tables in :mod:`biaslab.data.user_tables`, arrays in :mod:`biaslab.data.user_arrays`,
images in :mod:`biaslab.data.user_images`, graphs in :mod:`biaslab.data.user_graphs`) return a
:class:`Loaded`: the inputs as read, the target still in the user's own values (numbers or text),
and the notes of what was done to them. :func:`biaslab.data.user_data.load_user_data`
then infers the task, encodes the labels and checks what every kind shares (the number of
examples, the classes).

Every refusal is one line (a :class:`~biaslab.errors.DataFormatError`, or a
:class:`~biaslab.errors.ConfigError` for an argument that does not fit the file) naming the
file, the column or array and the problem. Values shown in a message are quoted and escaped
(:func:`show`), so a cell holding a newline cannot split the line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from biaslab.config import short_of_memory
from biaslab.errors import DataFormatError
from biaslab.formatting import cut, printable, quoted

__all__ = [
    "MISSING_CELLS",
    "Loaded",
    "check_finite",
    "check_memory_for",
    "either",
    "label_array",
    "listed",
    "numeric_array",
    "reason",
    "size_text",
    "where",
]

# Cells a CSV may hold for "no value" (compared lower-case, after stripping spaces).
MISSING_CELLS = frozenset({"", "na", "nan", "n/a", "null", "none"})
GRAPH_EXTRA = "pip install 'biaslab[graph]'"
KIND_FILES = {  # where each kind that is not a table comes from, for messages
    "image": "an .npz (x, y) or a folder of class subfolders of images",
    "sequence": "an .npz (x, y)",
    "set": "an .npz (x, y, mask)",
    "graph": "a .pt list of torch-geometric Data or an .npz edge list",
}


@dataclass
class Loaded:
    """What a reader found, before the task is inferred and the labels encoded.

    Shapes (N examples):
        x: per kind as in :class:`~biaslab.data.user_data.UserData` (None for graphs and
        molecules); y: (N,) the target as read: numbers (float64, int or bool) or text (object);
        mask: (N, S) bool or None; smiles: N strings or None; positions: N (n_i, 3) coordinate
        arrays (molecules with a geometry) or None; graphs: N torch-geometric ``Data`` or None;
        pixel_range: images: (low, high), the rule their pixels took to [0, 1]
        (:func:`~biaslab.data.user_arrays.to_unit_range`), else None.
    """

    kind: str
    x: np.ndarray | None
    y: np.ndarray
    feature_names: tuple[str, ...] = ()
    mask: np.ndarray | None = None
    smiles: tuple[str, ...] | None = None
    positions: tuple[np.ndarray, ...] | None = None
    graphs: list | None = None
    notes: list[str] = field(default_factory=list)
    columns: tuple = ()  # a table's feature columns (ColumnSchema each), aligned with feature_names
    pixel_range: tuple[float, float] | None = None  # images: x_read = (x - low) / (high - low)


def listed(items, limit: int = 5, shown: Callable[[object], str] = quoted) -> str:
    """At most ``limit`` of ``items``, each as ``shown`` writes it (quoted and escaped by default),
    and how many more: ``'a', 'b', 'c', 'd', 'e' and 4,995 more``; ``nothing`` for none. A message
    that lists names the user chose (arrays, columns, folders) stays one short line however many."""
    items = list(items)
    if not items:
        return "nothing"
    head = ", ".join(shown(item) for item in items[:limit])
    rest = len(items) - min(len(items), limit)
    return f"{head} and {rest:,} more" if rest else head


def either(names) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    names = list(names)
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else "".join(names)


def where(path: str | os.PathLike) -> str:
    """The path as a message shows it (control characters escaped)."""
    return printable(os.fspath(path))


def reason(exc: BaseException, limit: int = 120) -> str:
    """What a library's exception says, as part of a line: one line, escaped, cut to ``limit``."""
    text = printable(" ".join(str(exc).split())) or type(exc).__name__
    return cut(text, limit)


def size_text(nbytes: float) -> str:
    """``512 B``, ``3.2 MiB``, ``2.18 TiB``; an absurd size stays one short word."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if nbytes < 1024:
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return f"{min(nbytes, 1e300):.3g} TiB"


def check_memory_for(what: str, nbytes: int, hint: str = "") -> None:
    """Refuse, in one DataFormatError line, reading what needs ``nbytes`` of memory when that is
    more than 90% of the memory free now (:func:`biaslab.config.short_of_memory`, the rule of
    :func:`biaslab.config.check_memory`, which names a config key); ``what`` starts the message,
    ``hint`` (what to do) ends it."""
    free = short_of_memory(nbytes)
    if free is not None:
        raise DataFormatError(
            f"{what} would need about {size_text(nbytes)} of memory, more than the {size_text(free)} "
            f"free on this machine{'; ' + hint if hint else ''}"
        )


# --------------------------------------------------------------------------- arrays


def label_array(y: np.ndarray, path: Path) -> np.ndarray:
    """``y`` flattened to (N,): numbers or text (one value per example)."""
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        shape = "×".join(map(str, y.shape))
        raise DataFormatError(f"{where(path)}: y is {shape}; expected one label per example, (N,)")
    if y.dtype.kind in "US":
        return np.array([str(v).strip() for v in y], dtype=object)
    if y.dtype.kind not in "biuf":
        raise DataFormatError(f"{where(path)}: y has dtype {y.dtype}; expected numbers or text")
    return y


def numeric_array(x: np.ndarray, name: str, path: Path) -> np.ndarray:
    """``x`` unchanged when it holds numbers (bool, int or float); text or objects are refused."""
    if x.dtype.kind not in "biuf":
        raise DataFormatError(f"{where(path)}: {name} has dtype {x.dtype}; inputs must be numbers")
    return x


def check_finite(values: np.ndarray, name: str, path: Path) -> None:
    """Refuse NaN or inf (counted) in an array of inputs."""
    with np.errstate(over="ignore"):
        bad = int(np.count_nonzero(~np.isfinite(values.astype(np.float32))))
    if bad:
        raise DataFormatError(
            f"{where(path)}: {name} holds {bad} NaN or infinite values (float32); fix or drop them"
        )
