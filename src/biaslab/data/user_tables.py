"""Reading a user's tables: CSV (or TSV) and Parquet files, and CSVs of SMILES strings (molecules).

A table is checked against the free memory before it is read (a CSV from its size, each cell a
Python string; a Parquet file from its footer), then read as columns: the target (a row without
one dropped) and features, each numbers with missing cells, categories (text), or dropped (an ID,
a constant: :mod:`biaslab.data.table_columns`); a ``smiles`` column makes it
molecules, parsed by RDKit (rows that do not parse are dropped and counted). Every refusal is one
line naming the file, the column and the problem (:mod:`biaslab.data.user_formats`).
"""

from __future__ import annotations

import csv
import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from biaslab.data.molecules import GEOMETRY_COLUMNS, coordinates_in_smiles_order
from biaslab.data.table_columns import cell_text, read_column
from biaslab.data.user_formats import (
    GRAPH_EXTRA,
    KIND_FILES,
    MISSING_CELLS,
    Loaded,
    check_memory_for,
    listed,
    where,
)
from biaslab.errors import ConfigError, DataFormatError, DataMissingError
from biaslab.formatting import printable, quoted

__all__ = ["TableCells", "as_numbers", "did_you_mean", "read_cells", "read_table"]


@dataclass
class TableCells:
    """A table's columns as read (:func:`read_cells`): text (object arrays) from a CSV, typed
    arrays from Parquet."""

    names: list[str]
    columns: dict[str, np.ndarray]
    row_label: Callable[[int], str]  # row index -> "line 5" / "row 4", for messages


def read_table(path: Path, target: str | None, kind: str | None) -> Loaded:
    """A CSV / TSV / Parquet file as a table, or as molecules when a column is named ``smiles``.

    Args:
        path: the file (``.csv``, ``.tsv``, ``.parquet``, ``.pq``).
        target: the label column (required).
        kind: ``None`` (infer: ``molecule`` when a column is named ``smiles``, any case),
            ``"table"`` or ``"molecule"``.

    Returns:
        A table: x (N, F) float32 of the feature columns (NaN where missing; a category column
        as its codes, ``columns`` holding each column's schema); a molecule set: the SMILES
        RDKit can parse and their targets (the others dropped and counted in the notes).

    Raises:
        ConfigError: no target given, or not a column (the message lists the columns and the
            closest name); a kind a table cannot be.
        DataFormatError: an unreadable file, a ragged row, a duplicated column name, a column
            of dates, free text or numbers with stray text (naming a bad value), an infinite
            value, no target on any row, no usable feature.
        DataMissingError: Parquet without pyarrow, SMILES without RDKit.
    """
    table = read_cells(path)
    smiles_columns = [n for n in table.names if n.strip().lower() == "smiles"]
    if kind not in (None, "table", "molecule"):
        raise ConfigError(
            f"kind '{kind}' contradicts {where(path)}: a table file holds a table, or molecules in a "
            f"'smiles' column; {kind} data comes as {KIND_FILES[kind]}"
        )
    if kind == "molecule" and not smiles_columns:
        raise ConfigError(
            f"kind 'molecule' needs a column named 'smiles' in {where(path)}; {_columns(table)}"
        )
    if kind == "table" and smiles_columns:
        raise ConfigError(
            f"kind 'table' contradicts {where(path)}: column {quoted(smiles_columns[0])} holds SMILES "
            "(a molecule); leave kind out, or drop the column"
        )
    target = _target_column(table, target, path)
    if smiles_columns:
        return _molecules(table, smiles_columns, target, path)
    return _table(table, target, path)


def _columns(table: TableCells) -> str:
    return f"the columns are {listed(table.names)}"


def _target_column(table: TableCells, target: str | None, path: Path) -> str:
    if target is None:
        raise ConfigError(
            f"{where(path)} needs a target (--target COLUMN): name its label column; {_columns(table)}"
        )
    if target in table.names:
        return target
    hint = did_you_mean(target, table.names)
    raise ConfigError(f"{where(path)} has no column {quoted(target)}; {_columns(table)}{hint}")


def did_you_mean(name: str, names: list[str]) -> str:
    """``; did you mean 'Size'?`` naming the column of ``names`` closest to ``name`` (the same
    name in another case or spacing first, else difflib's closest), or "" when none is close."""
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    folded = [n for n in names if n.strip().lower() == name.strip().lower()]
    guess = folded or close
    return f"; did you mean {quoted(guess[0])}?" if guess else ""


def read_cells(path: Path) -> TableCells:
    """A CSV / TSV / Parquet file's columns, untyped, as :func:`read_table` reads them first
    (checked against the free memory, one DataFormatError line for an unreadable file, a ragged
    row or a duplicated column name); the extension decides the format."""
    return _read_parquet(path) if path.suffix.lower() in (".parquet", ".pq") else _read_csv(path)


CSV_BYTES_PER_BYTE = 12  # a cell's text as a Python str in a list: ~50 bytes of overhead per ~5 of text


def _read_csv(path: Path) -> TableCells:
    """A CSV (comma, semicolon or tab separated: the header's most frequent of the three) or a
    TSV file as text columns; ``row_label`` names the line a row ends on. Each cell becomes a
    Python string (about ``CSV_BYTES_PER_BYTE`` bytes of memory per byte of text): a file whose
    cells would not fit in the free memory is refused before it is read."""
    try:
        check_memory_for(
            f"reading {where(path)} as text cells", CSV_BYTES_PER_BYTE * path.stat().st_size,
            "keep the columns you need, or save it as Parquet",
        )  # fmt: skip
        with open(path, newline="", encoding="utf-8-sig") as handle:
            header_line = handle.readline()
            handle.seek(0)
            if path.suffix.lower() == ".tsv":
                delimiter = "\t"
            else:
                delimiter = max(",;\t", key=header_line.count)  # ties keep the comma
            reader = csv.reader(handle, delimiter=delimiter)
            header = next(reader, None)
            rows, lines = [], []
            for row in reader:
                if not any(cell.strip() for cell in row):
                    continue  # blank lines
                if len(row) != len(header):
                    raise DataFormatError(
                        f"{where(path)} line {reader.line_num} has {len(row)} fields; "
                        f"the header has {len(header)}"
                    )
                rows.append(row)
                lines.append(reader.line_num)
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            f"{where(path)} is not UTF-8 text (byte {exc.start}); save it as UTF-8 CSV"
        ) from None
    except (OSError, csv.Error) as exc:
        raise DataFormatError(f"{where(path)} cannot be read as CSV: {printable(exc)}") from None
    if not header:
        raise DataFormatError(f"{where(path)} is empty; a table needs a header row and data rows")
    names = [name.strip() for name in header]
    _no_duplicates(names, path)
    cells = np.array(rows, dtype=object).reshape(len(rows), len(names))
    columns = {name: cells[:, j] for j, name in enumerate(names)}
    return TableCells(names, columns, lambda i: f"line {lines[i]}")


def _read_parquet(path: Path) -> TableCells:
    """A Parquet file's columns (pyarrow: optional, imported here)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataMissingError(
            f"reading Parquet ({where(path)}) needs pyarrow: pip install pyarrow (or save the table as CSV)"
        ) from None
    try:
        meta = pq.ParquetFile(path).metadata  # the footer only: sizes before any column is read
        unpacked = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        check_memory_for(f"reading {where(path)}", 3 * unpacked)  # Arrow's columns, then NumPy's copies
        data = pq.read_table(path)
    except DataFormatError:
        raise
    except Exception as exc:  # pyarrow's errors have no common base below Exception
        reason = " ".join(str(exc).split())
        raise DataFormatError(f"{where(path)} cannot be read as Parquet: {printable(reason)}") from None
    names = [str(n) for n in data.column_names]
    _no_duplicates(names, path)
    columns = {name: np.asarray(data.column(j).to_numpy()) for j, name in enumerate(names)}
    return TableCells(names, columns, lambda i: f"row {i + 1}")


def _no_duplicates(names: list[str], path: Path) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise DataFormatError(f"{where(path)}: column {quoted(name)} appears twice in the header")
        seen.add(name)


def as_numbers(values: np.ndarray) -> tuple[np.ndarray, int | None]:
    """A column as :func:`read_table` reads numbers: float64 (NaN where missing: empty, "NA",
    ...), and the index of its first cell that is not a number (None when every cell is one)."""
    return _as_numbers(values)


def _as_numbers(values: np.ndarray) -> tuple[np.ndarray, int | None]:
    """A column as float64 (missing cells NaN), or the index of its first non-numeric cell."""
    if values.dtype.kind in "biuf":
        return values.astype(np.float64), None
    out = np.empty(len(values), dtype=np.float64)
    for i, cell in enumerate(values):
        if cell is None or (isinstance(cell, float) and np.isnan(cell)):
            out[i] = np.nan
            continue
        if isinstance(cell, (bool, np.bool_)) or not isinstance(cell, (str, int, float, np.number)):
            return out, i
        text = cell.strip() if isinstance(cell, str) else cell
        if isinstance(text, str) and text.lower() in MISSING_CELLS:
            out[i] = np.nan
            continue
        try:
            out[i] = float(text)
        except ValueError:
            return out, i
    return out, None


def _target_values(table: TableCells, target: str, path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The target as numbers when every cell is one, else as stripped text; and which rows
    hold one (a row whose target is missing is dropped: there is nothing to learn from it)."""
    raw = table.columns[target]
    numbers, bad = _as_numbers(raw)
    if bad is None:
        infinite = np.flatnonzero(np.isinf(numbers))
        if len(infinite):
            raise DataFormatError(
                f"{where(path)}: target column {quoted(target)} holds an infinite value on "
                f"{table.row_label(int(infinite[0]))}; fix or drop that row"
            )
        return numbers, ~np.isnan(numbers)
    text = np.array([cell_text(c) for c in raw], dtype=object)
    return text, np.array([c is not None for c in text], dtype=bool)


def _table(table: TableCells, target: str, path: Path) -> Loaded:
    """Every column but the target as features (:func:`~biaslab.data.table_columns.read_column`:
    numbers with missing cells, categories, IDs and constants dropped), the rows without a
    target dropped."""
    features = [n for n in table.names if n != target]
    if not features:
        raise DataFormatError(
            f"{where(path)} has no column besides the target {quoted(target)}; a table needs features"
        )
    y, present = _target_values(table, target, path)
    if not present.any():
        raise DataFormatError(f"{where(path)}: target column {quoted(target)} is empty on every row")
    kept, dropped = [], []
    for name in features:
        numbers, first_text = _as_numbers(table.columns[name])
        try:
            column = read_column(name, table.columns[name], numbers, first_text, table.row_label)
        except ValueError as exc:
            raise DataFormatError(f"{where(path)}: column {quoted(name)} {exc}") from None
        (kept if column.values is not None else dropped).append(column)
    if not kept:
        raise DataFormatError(
            f"{where(path)}: no column can be a feature ({listed([c.schema.name for c in dropped])}: "
            "IDs or constants); a table needs features"
        )
    x = np.empty((len(y), len(kept)), dtype=np.float32)
    for j, column in enumerate(kept):
        with np.errstate(over="ignore"):  # beyond float32 becomes inf, refused below
            x[:, j] = column.values
        beyond = np.flatnonzero(np.isinf(x[:, j]))  # past float32's range (finite in float64)
        if len(beyond):
            raise DataFormatError(
                f"{where(path)}: column {quoted(column.schema.name)} holds a value beyond float32's range "
                f"(about ±3.4e38) on {table.row_label(int(beyond[0]))}; rescale the column"
            )
    categorical = [c.schema.name for c in kept if c.schema.kind == "categories"]
    notes = [
        f"kind table: {len(kept)} feature columns besides the target"
        + (f", {len(categorical)} of them categories (text): {listed(categorical)}" if categorical else "")
        + ", none named 'smiles'"
    ]
    missing = int(np.isnan(x).sum())
    if missing:
        columns = [c.schema.name for j, c in enumerate(kept) if np.isnan(x[:, j]).any()]
        notes.append(f"{missing:,} missing cells in columns {listed(columns)}: kept as missing values")
    for column in dropped:
        notes.append(f"column {quoted(column.schema.name)} dropped: {column.dropped}")
    if not present.all():
        first = table.row_label(int(np.flatnonzero(~present)[0]))
        notes.append(f"dropped {int((~present).sum()):,} rows whose target is missing (first on {first})")
    schema = tuple(c.schema for c in kept)
    return Loaded("table", x[present], y[present], tuple(s.name for s in schema), notes=notes, columns=schema)


# --------------------------------------------------------------------------- molecules


def _molecules(table: TableCells, smiles_columns: list[str], target: str, path: Path) -> Loaded:
    """The rows whose SMILES RDKit parses (the others counted in the notes and dropped)."""
    if len(smiles_columns) > 1:
        raise DataFormatError(
            f"{where(path)} has {len(smiles_columns)} SMILES columns ({listed(smiles_columns)}); keep one"
        )
    (column,) = smiles_columns
    if column == target:
        raise ConfigError(
            f"the target {quoted(target)} is the SMILES column of {where(path)}; name the label column"
        )
    from biaslab.data.molecules import parse_smiles

    _require_rdkit(path)
    y, present = _target_values(table, target, path)
    if not present.all():
        raise DataFormatError(
            f"{where(path)}: target column {quoted(target)} has {int((~present).sum())} missing values, "
            f"first on {table.row_label(int(np.flatnonzero(~present)[0]))}; fill or drop those rows"
        )
    smiles = [("" if s is None else str(s)).strip() for s in table.columns[column]]
    good = np.array([bool(s) and _parses(parse_smiles, s) for s in smiles], dtype=bool)
    bad = np.flatnonzero(~good)
    if len(bad) == len(smiles):
        raise DataFormatError(
            f"{where(path)}: none of the {len(smiles)} SMILES in column {quoted(column)} can be parsed "
            f"by RDKit (first: {quoted(smiles[0])} on {table.row_label(0)})"
        )
    notes = [f"molecules: the SMILES of column {quoted(column)}"]
    if len(bad):
        notes.append(
            f"dropped {len(bad)} of {len(smiles)} rows whose SMILES RDKit cannot parse "
            f"(first: {quoted(smiles[bad[0]])} on {table.row_label(int(bad[0]))})"
        )
    positions = None
    if all(name in table.names for name in GEOMETRY_COLUMNS):
        positions = _geometries(table, smiles, good, path, notes)  # drops the rows that do not match
    read = {column, target, *(GEOMETRY_COLUMNS if positions is not None else ())}
    ignored = [n for n in table.names if n not in read]
    if ignored:
        notes.append(f"columns not read for molecules: {listed(ignored)}")
    kept = tuple(s for s, ok in zip(smiles, good, strict=True) if ok)
    return Loaded("molecule", None, y[good], smiles=kept, positions=positions, notes=notes)


def _geometries(table: TableCells, smiles: list[str], good: np.ndarray, path: Path, notes: list[str]):
    """Each parsed molecule's heavy-atom coordinates from the columns Elements and XYZ_Ang
    (:func:`~biaslab.data.molecules.coordinates_in_smiles_order`); a molecule whose geometry is
    not its SMILES' graph is dropped (``good`` set False) and counted, as the QM9 benchmark does."""
    rows = np.flatnonzero(good)
    cells = [
        [("" if v is None else str(v)) for v in (table.columns[c][k] for c in GEOMETRY_COLUMNS)] for k in rows
    ]
    labels = [f"{where(path)} {table.row_label(int(k))}" for k in rows]
    found = coordinates_in_smiles_order([smiles[k] for k in rows], cells, labels)
    mismatched = [int(k) for k, pos in zip(rows, found) if pos is None]
    good[mismatched] = False
    if len(mismatched) == len(rows):
        raise DataFormatError(f"{where(path)}: no molecule's geometry (Elements, XYZ_Ang) matches its SMILES")
    notes.append("coordinates: columns Elements and XYZ_Ang, each heavy atom matched to its SMILES atom")
    if mismatched:
        notes.append(
            f"dropped {len(mismatched)} molecules whose geometry's bonds are not their SMILES' "
            f"(first on {table.row_label(mismatched[0])})"
        )
    return tuple(pos for pos in found if pos is not None)


def _parses(parse, smiles: str) -> bool:
    mol = parse(smiles)
    return mol is not None and mol.GetNumAtoms() > 0


def _require_rdkit(path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("rdkit") is None:
        raise DataMissingError(f"reading the SMILES of {where(path)} needs RDKit: {GRAPH_EXTRA}")
