"""New rows to predict, read exactly as the training data were: :func:`read_new_rows` -> :class:`NewRows`.

``biaslab predict RUN_DIR NEWDATA`` feeds a saved model inputs it has never seen. They go through
the training readers themselves (:mod:`~biaslab.data.user_tables`, :mod:`~biaslab.data.user_arrays`,
:mod:`~biaslab.data.user_images`) and are checked against the training data's :class:`InputSchema`
(saved with the run as JSON): the training file, read again as new rows, gives the training x bit
for bit. The rules, per kind:

- table (a CSV / TSV / Parquet file, a pandas DataFrame, an .npz or array of x (M, F)): columns
  matched by name, in any order, others (the target, an ID) ignored and noted; numbers read as the
  training table's were; categories coded by the training ``ColumnSchema``, a text the training
  rows never held read as missing (counted in a note); a missing cell refused when the training
  table had none. An array's columns are taken by position, a category column as its codes.
- image (a folder of PNG / JPEG images, subfolders searched too; one image file; an .npz or array
  of x): the training's height × width; files converted to its channels (noted), arrays must have
  them; an image file's pixels (0..255) divided by 255, an array's scaled by the training's rule
  (``pixel_range``) and refused if they leave [0, 1].
- sequence, set (an .npz, array or dict of x (M, T, F), and mask): the training's T and F; a set
  may have fewer elements (padded with zeros, masked out, noted); a set without a mask is full.

- graph (an .npz edge list of edge_index, node_graph and x, a dict of those arrays, or a .pt list
  of torch-geometric Data): read by the training's graph readers without labels; the training's
  number of node features.
- molecule (a table or DataFrame with a ``smiles`` column, or a list of SMILES): each must parse.

Every refusal is one line naming the file (or "the given array"), the column or array and what to
do: a DataFormatError for data that do not fit, a ConfigError for a source the model's kind cannot
come as. An .npz's ``y`` (labels) is ignored.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from biaslab.data.input_schema import InputSchema
from biaslab.data.user_arrays import channels_first, load_npz_arrays, read_arrays, scale_pixels
from biaslab.data.user_data import NOUNS
from biaslab.data.user_formats import check_finite, listed, numeric_array, where
from biaslab.data.user_images import IMAGE_SUFFIXES, read_image_files
from biaslab.data.user_tables import TableCells, as_numbers, did_you_mean, read_cells
from biaslab.errors import ConfigError, DataFormatError
from biaslab.formatting import quoted

__all__ = ["InputSchema", "NewRows", "read_new_rows"]  # InputSchema: data.input_schema's

SOURCES = {  # what new inputs of each kind may come as, for messages
    "table": "a CSV / TSV / Parquet table, a pandas DataFrame, or an .npz or array of x (M, F)",
    "image": "a folder of images, an image file, or an .npz or array of x (M, C, H, W)",
    "sequence": "an .npz or array of x (M, T, F), and mask for padded sequences",
    "set": "an .npz or array of x (M, S, F), and mask for padded sets",
    "graph": "an .npz (or a dict) of edge_index (2, E), node_graph (N,) and x (N, F), or a .pt list of "
    "torch-geometric Data",
    "molecule": "a CSV / TSV / Parquet table or a DataFrame with a 'smiles' column, or a list of SMILES",
}
TABLE_SUFFIXES = (".csv", ".tsv", ".parquet", ".pq")
PIXEL_SLACK = 1e-6  # scaled pixels may leave [0, 1] by this much (float rounding)


@dataclass(frozen=True)
class NewRows:
    """New inputs, read as the training inputs were.

    Shapes (M rows):
        x: (M, *example_shape) float32 (a table's: NaN where missing, category codes per
            ``ColumnSchema.codes``; an image's: pixels scaled to [0, 1] by the training's rule).
        mask: (M, S) bool for sets and padded sequences (True: a real element), else None.
        ids: per row: a table's row number (1-based), an image file's path relative to the
            folder, an array's index (0-based).
        notes: what was done, one sentence each (columns ignored, unseen categories, conversions).
        smiles: molecules: M SMILES, each parsed by RDKit (``x`` is then None); else None.
        graphs: graphs: M torch-geometric ``Data`` (x (n_i, F) float32, edge_index (2, E_i)
            int64), as the training graphs were read (``x`` is then None); else None.
    """

    x: np.ndarray | None
    mask: np.ndarray | None
    ids: tuple[str, ...]
    source: str
    notes: tuple[str, ...] = ()
    smiles: tuple[str, ...] | None = None
    graphs: tuple | None = None

    def __len__(self) -> int:
        return len(self.ids)


def read_new_rows(source, schema: InputSchema) -> NewRows:
    """Read new inputs as the training data of ``schema`` were read, and check they fit it.

    Args:
        source: a path (str or PathLike) to a CSV / TSV / Parquet table, an ``.npz`` (``x``, and
            ``mask`` for sets), a folder of PNG / JPEG images (subfolders searched too) or one
            image file; a pandas DataFrame (tables); a numpy array (``x``); a dict of arrays
            (``{"x": ..., "mask": ...}``).
        schema: the training inputs' schema (:meth:`InputSchema.of`).

    Returns:
        The rows; ``notes`` says what was ignored, converted or read as missing.

    Raises:
        ConfigError: a source the model's kind cannot come as, no such path.
        DataFormatError: one line naming the file and the column or array: a training column
            missing, text in a numbers column, a missing cell the model cannot take, an infinite
            value, no rows, another example shape, pixel values outside the training's range.
        DataMissingError: pyarrow for Parquet, Pillow for images.
    """
    if schema.kind not in SOURCES:
        raise ConfigError(f"predicting new {schema.kind} data is not supported")
    if schema.kind == "molecule":
        return _molecule_rows(source)
    if schema.kind == "graph":
        return _graph_rows(source, schema)
    pandas = sys.modules.get("pandas")  # imported by the caller when source is a DataFrame
    if pandas is not None and isinstance(source, pandas.DataFrame):
        _expect(schema, "table", "the given DataFrame", "a table")
        return _table_rows(_frame_cells(source), schema, "the given DataFrame")
    if isinstance(source, np.ndarray):
        return _array_rows({"x": source}, schema, "the given array")
    if isinstance(source, Mapping):
        return _array_rows({str(k): np.asarray(v) for k, v in source.items()}, schema, "the given arrays")
    if not isinstance(source, (str, os.PathLike)):
        raise ConfigError(
            f"new rows come as a path, a pandas DataFrame, a numpy array or a dict of arrays, "
            f"not {type(source).__name__}"
        )
    path = Path(source)
    suffix = path.suffix.lower()
    if path.is_dir() or (path.is_file() and suffix in IMAGE_SUFFIXES):
        _expect(schema, "image", path, "a folder (of images)" if path.is_dir() else "an image")
        return _image_rows(path, schema)
    if not path.is_file():
        raise ConfigError(f"no file or folder at {where(path)}")
    if suffix in TABLE_SUFFIXES:
        _expect(schema, "table", path, "a table")
        return _table_rows(read_cells(path), schema, path)
    if suffix == ".npz":
        return _array_rows(load_npz_arrays(path), schema, path)
    raise DataFormatError(
        f"{where(path)}: unknown file type {quoted(suffix or path.name)}; new {NOUNS[schema.kind]} come as "
        f"{SOURCES[schema.kind]}"
    )


def _expect(schema: InputSchema, kind: str, name, what: str) -> None:
    if schema.kind != kind:
        raise ConfigError(
            f"{where(name)} is {what}; the model was trained on {schema.kind} data: give "
            + SOURCES[schema.kind]
        )


# --------------------------------------------------------------------------- tables


def _frame_cells(frame) -> TableCells:
    """A pandas DataFrame's columns as a Parquet file's are read (missing values as None)."""
    names = [str(c) for c in frame.columns]
    twice = [n for i, n in enumerate(names) if n in names[:i]]
    if twice:
        raise DataFormatError(f"the given DataFrame: column {quoted(twice[0])} appears twice")
    columns = {}
    for name, (_, series) in zip(names, frame.items()):
        values = series.to_numpy()
        if values.dtype.kind not in "biuf":
            values = series.astype(object).where(series.notna(), None).to_numpy(dtype=object)
        columns[name] = values
    return TableCells(names, columns, lambda i: f"row {i + 1}")


def _table_rows(table: TableCells, schema: InputSchema, name, first: int = 1) -> NewRows:
    """A table's feature columns, by name, read by the training columns' schemas; the rows'
    ids count from ``first``."""
    for column in schema.columns:
        if column.name not in table.columns:
            raise DataFormatError(
                f"{where(name)} has no column {quoted(column.name)}, a feature the model was trained on; "
                f"the columns are {listed(table.names)}{did_you_mean(column.name, table.names)}"
            )
    rows = len(table.columns[table.names[0]]) if table.names else 0
    if rows == 0:
        raise DataFormatError(f"{where(name)} has no rows; nothing to predict")
    x = np.empty((rows, len(schema.columns)), dtype=np.float32)
    notes = []
    for j, column in enumerate(schema.columns):
        cells, at = table.columns[column.name], f"{where(name)}: column {quoted(column.name)}"
        if column.kind == "categories":
            values, unseen = column.codes(cells)
            if unseen:
                notes.append(
                    f"column {quoted(column.name)}: {unseen} rows hold a category the training rows never "
                    "held (read as missing)"
                )
        else:
            values, text = as_numbers(cells)
            if text is not None:
                raise DataFormatError(
                    f"{at} holds {quoted(cells[text])} on {table.row_label(text)}; the model reads the "
                    "column as numbers: fix that cell, or leave it empty"
                )
        with np.errstate(over="ignore"):  # beyond float32 becomes inf, refused below
            x[:, j] = values
        infinite, missing = np.flatnonzero(np.isinf(x[:, j])), np.flatnonzero(np.isnan(x[:, j]))
        if len(infinite):
            raise DataFormatError(
                f"{at} holds an infinite value (or one beyond float32's range) on "
                f"{table.row_label(int(infinite[0]))}; replace it, or leave the cell empty"
            )
        if len(missing) and not schema.missing_allowed:
            more = f" ({len(missing):,} rows in all)" if len(missing) > 1 else ""
            raise DataFormatError(
                f"{at} is missing on {table.row_label(int(missing[0]))}{more}; the model was trained on a "
                "table without missing cells: fill them, or drop those rows"
            )
    extra = [n for n in table.names if n not in {c.name for c in schema.columns}]
    if extra:
        notes.append(f"columns not read (not features of the model): {listed(extra)}")
    return NewRows(x, None, tuple(str(i + first) for i in range(rows)), os.fspath(name), tuple(notes))


# --------------------------------------------------------------------------- arrays


def _array_rows(arrays: dict[str, np.ndarray], schema: InputSchema, name) -> NewRows:
    """The arrays of an NPZ, or given in memory, as the training arrays were read."""
    if "x" not in arrays:
        raise DataFormatError(
            f"{where(name)} has no array x (it holds {listed(sorted(arrays))}); save the new inputs as x"
        )
    padded = schema.kind in ("sequence", "set")
    ignored = sorted(set(arrays) - {"x", *(("mask",) if padded else ())})
    notes = [f"arrays not read: {listed(ignored)}"] if ignored else []
    x, mask = numeric_array(np.asarray(arrays["x"]), "x", name), arrays.get("mask") if padded else None
    shape = "×".join(map(str, x.shape))
    if x.ndim not in {"table": (2,), "image": (3, 4)}.get(schema.kind, (2, 3)):
        expected = ", ".join(map(str, schema.example_shape))
        raise DataFormatError(
            f"{where(name)}: x is {shape}; the model takes {NOUNS[schema.kind]} as x of (M, {expected})"
        )
    if len(x) == 0:
        raise DataFormatError(f"{where(name)}: x is {shape}, no examples; nothing to predict")
    if schema.kind == "table":
        rows = _table_rows(_array_cells(x, schema, name), schema, name, first=0)
        return replace(rows, notes=(*notes, *rows.notes))
    if schema.kind == "image":
        x = _scaled(_image_array(x, schema, name), schema, name)
    else:
        x, mask = _padded_array(x, mask, schema, name, notes)
    return NewRows(x, mask, tuple(str(i) for i in range(len(x))), os.fspath(name), tuple(notes))


def _array_cells(x: np.ndarray, schema: InputSchema, name) -> TableCells:
    """(M, F) numbers as a table's cells, columns by position (a category column's codes as its texts)."""
    if x.shape[1] != len(schema.columns):
        raise DataFormatError(
            f"{where(name)}: x has {x.shape[1]} columns; the model was trained on {len(schema.columns)} "
            f"({listed(schema.feature_names)}), in that order"
        )
    columns = {}
    for j, column in enumerate(schema.columns):
        values = x[:, j]
        if column.kind == "categories":
            known = np.isin(values, np.arange(len(column.categories)))
            bad = np.flatnonzero(~known & ~np.isnan(values))
            if len(bad):
                raise DataFormatError(
                    f"{where(name)}: column {quoted(column.name)} holds {values[bad[0]]:g} on x[{bad[0]}], "
                    f"not a code of its categories (0..{len(column.categories) - 1}: "
                    f"{listed(column.categories)})"
                )
            values = np.array([column.categories[int(v)] if k else None for v, k in zip(values, known)])
        columns[column.name] = values
    return TableCells(list(columns), columns, lambda i: f"x[{i}]")


def _padded_array(x: np.ndarray, mask, schema: InputSchema, name, notes: list[str]):
    """Sequences (M, T, F) or sets (M, S, F) read as :func:`read_arrays` reads them (padding
    zeroed, every real value finite); a set of fewer elements padded to the training's S."""
    kind, (length, features) = schema.kind, schema.example_shape
    if mask is not None and not schema.masked:
        raise DataFormatError(
            f"{where(name)} holds a mask; the model was trained on sequences without padding: give "
            f"sequences of {length} steps and no mask"
        )
    arrays = {"x": x, "y": np.zeros(len(x), dtype=np.int64), **({"mask": mask} if mask is not None else {})}
    loaded = read_arrays(arrays, kind, name)
    x, mask = loaded.x, loaded.mask
    notes.extend(n for n in loaded.notes if not n.startswith("kind "))
    noun = "step" if kind == "sequence" else "element"
    if x.shape[2] != features:
        raise DataFormatError(
            f"{where(name)}: x has {x.shape[2]} features per {noun}; the model was trained on {features}"
        )
    if x.shape[1] > length or (kind == "sequence" and x.shape[1] != length):
        most = "" if kind == "sequence" else "at most "
        raise DataFormatError(
            f"{where(name)}: x holds {kind}s of {x.shape[1]} {noun}s; the model was trained on {most}"
            f"{length}: {'pad or cut them' if kind == 'sequence' else 'subsample them'} to {length}"
        )
    if x.shape[1] < length:
        short = x.shape[1]
        x = np.concatenate([x, np.zeros((len(x), length - short, features), np.float32)], axis=1)
        mask = np.concatenate([mask, np.zeros((len(x), length - short), bool)], axis=1)
        notes.append(f"sets of {short} elements padded to the training's {length} (zeros, masked out)")
    if schema.masked and mask is None:
        mask = np.ones(x.shape[:2], dtype=bool)
        notes.append("no mask: every step is real")
    return x, mask


# --------------------------------------------------------------------------- images


def _image_array(x: np.ndarray, schema: InputSchema, name) -> np.ndarray:
    """(M, H, W), (M, H, W, C) or (M, C, H, W) as (M, C, H, W), of the training's size and channels."""
    channels, height, width = schema.example_shape
    x = channels_first(x, name)
    if x.shape[2:] != (height, width):
        raise DataFormatError(
            f"{where(name)}: images are {x.shape[2]}×{x.shape[3]}; the model was trained on "
            f"{height}×{width} images (height×width): resize them"
        )
    if x.shape[1] != channels:
        raise DataFormatError(
            f"{where(name)}: images have {x.shape[1]} channels; the model was trained on images of "
            f"{channels}: convert them"
        )
    return x


def _image_rows(path: Path, schema: InputSchema) -> NewRows:
    """The images of a folder (and its subfolders, hidden entries skipped; sorted by path) or
    one image file, decoded as the training images were (Pillow)."""
    root = path if path.is_dir() else path.parent
    found = path.rglob("*") if path.is_dir() else [path]
    files = [p for p in found if not any(part.startswith(".") for part in p.relative_to(root).parts)]
    files.sort(key=lambda p: p.relative_to(root).parts)  # a folder's files, as the training reader's
    images = [p for p in files if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES]
    if not images:
        raise DataFormatError(
            f"{where(path)} holds no images ({', '.join(IMAGE_SUFFIXES)}), in it or its subfolders"
        )
    notes = []
    skipped = sum(p.is_file() for p in files) - len(images)
    if skipped:
        notes.append(f"passed over {skipped} files that are not {'/'.join(IMAGE_SUFFIXES)} images")
    channels, height, width = schema.example_shape
    x = read_image_files(images, root, channels, (height, width), notes)
    ids = tuple("/".join(p.relative_to(root).parts) for p in images)
    # A decoded image file is 0..255, which the training reader divides by 255 (whatever the
    # training images' own rule: arrays already in [0, 1] are that scale too).
    return NewRows(scale_pixels(x, (0.0, 255.0)), None, ids, os.fspath(path), tuple(notes))


def _scaled(x: np.ndarray, schema: InputSchema, name) -> np.ndarray:
    """Pixels by the training's rule (:func:`~biaslab.data.user_arrays.scale_pixels`), refused
    when they land outside [0, 1] (by more than ``PIXEL_SLACK``)."""
    check_finite(x, "x", name)
    low, high = schema.pixel_range or (0.0, 1.0)
    scaled = scale_pixels(x, (low, high))
    if scaled.min() < -PIXEL_SLACK or scaled.max() > 1 + PIXEL_SLACK:
        then = "" if (low, high) == (0.0, 1.0) else ", scaled to [0, 1]"
        raise DataFormatError(
            f"{where(name)}: pixel values run {float(np.min(x)):g}..{float(np.max(x)):g}; the model was "
            f"trained on pixel values in [{low:g}, {high:g}]{then}: give new images in that range"
        )
    return scaled


# --------------------------------------------------------------------------- molecules


def _molecule_rows(source) -> NewRows:
    """New molecules: the ``smiles`` column (any case) of a table or DataFrame, or a list of
    SMILES; each must parse (RDKit), or one line names the first that does not."""
    from biaslab.data.molecules import parse_smiles

    pandas = sys.modules.get("pandas")
    if isinstance(source, (list, tuple)):
        name, cells, label, first = "the given SMILES", list(source), (lambda i: f"item {i}"), 0
    else:
        if pandas is not None and isinstance(source, pandas.DataFrame):
            name, table = "the given DataFrame", _frame_cells(source)
        elif isinstance(source, (str, os.PathLike)) and Path(source).suffix.lower() in TABLE_SUFFIXES:
            if not Path(source).is_file():
                raise ConfigError(f"no file at {where(source)}")
            name, table = source, read_cells(Path(source))
        else:
            given = where(source) if isinstance(source, (str, os.PathLike)) else f"a {type(source).__name__}"
            raise ConfigError(f"{given} cannot hold molecules; give {SOURCES['molecule']}")
        found = [n for n in table.names if n.strip().lower() == "smiles"]
        if len(found) != 1:
            what = "no column named 'smiles'" if not found else f"{len(found)} SMILES columns"
            raise DataFormatError(f"{where(name)} has {what}; the columns are {listed(table.names)}")
        cells, label, first = list(table.columns[found[0]]), table.row_label, 1
    if not cells:
        raise DataFormatError(f"{where(name)} holds no molecules; nothing to predict")
    smiles = tuple(("" if s is None else str(s)).strip() for s in cells)
    for i, text in enumerate(smiles):
        if not text or parse_smiles(text) is None:
            raise DataFormatError(
                f"{where(name)}: {label(i)} holds {quoted(text) if text else 'no SMILES'}, which RDKit "
                "cannot parse; fix or drop that row"
            )
    ids = tuple(str(i + first) for i in range(len(smiles)))
    return NewRows(None, None, ids, str(name), smiles=smiles)


# --------------------------------------------------------------------------- graphs


def _graph_rows(source, schema: InputSchema) -> NewRows:
    """New graphs, read by the training's graph readers (:mod:`~biaslab.data.user_graphs`)
    without labels: each graph's node features must number the training's F."""
    from biaslab.data.user_graphs import read_edge_list, read_graph_list

    if isinstance(source, Mapping):
        name = "the given arrays"
        arrays = {str(k): np.asarray(v) for k, v in source.items()}
    elif isinstance(source, (str, os.PathLike)):
        name = Path(source)
        if not name.is_file():
            raise ConfigError(f"no file at {where(name)}")
        suffix = name.suffix.lower()
        if suffix not in (".npz", ".pt"):
            raise DataFormatError(f"{where(name)}: new graphs come as {SOURCES['graph']}")
        arrays = load_npz_arrays(name) if suffix == ".npz" else None
    else:
        raise ConfigError(f"new graphs come as {SOURCES['graph']}, not a {type(source).__name__}")
    if arrays is None:
        loaded = read_graph_list(name, "graph", labelled=False)
    elif "edge_index" not in arrays:
        raise DataFormatError(f"{where(name)} holds no edge_index; new graphs come as {SOURCES['graph']}")
    else:
        loaded = read_edge_list(arrays, name, labelled=False)
    (expected,) = schema.example_shape
    width = int(loaded.graphs[0].x.shape[1])
    if width != expected:
        raise DataFormatError(
            f"{where(name)}: the graphs' nodes have {width} features; the model was trained on {expected}"
        )
    ids = tuple(str(i) for i in range(len(loaded.graphs)))
    return NewRows(None, None, ids, str(name), graphs=tuple(loaded.graphs))
