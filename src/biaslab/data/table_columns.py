"""What each feature column of a user's table is: numbers, categories, or a column to drop.

A scientist's table has empty cells and text columns (``small`` / ``medium`` / ``large``). Each
feature column is read as one of:

    numbers      every cell a number or missing (empty, NaN, "NA", ...): float64, NaN where missing
    categories   text: each distinct text a category, coded 0..K-1 in sorted order, NaN where
                 missing (scikit-learn's ``HistGradientBoosting`` reads the codes natively; the
                 other candidates one-hot encode them, :mod:`biaslab.comparison.table_encoding`)
    dropped      an ID (text unique on every row, or the row numbers pandas writes as an unnamed
                 first column) or a constant (one value, or none): nothing to learn from; said in
                 the notes
    refused      dates, free text (more than ``MAX_CATEGORIES`` distinct texts), a column of
                 numbers with a few stray texts, or an infinite value: one line saying what to do

The codes follow a :class:`ColumnSchema`, which new rows (``biaslab predict``) are read against:
a text the training rows never held reads as missing, as scikit-learn's trees read an unknown
category.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

from biaslab.data.user_formats import MISSING_CELLS
from biaslab.formatting import quoted

__all__ = ["MAX_CATEGORIES", "Column", "ColumnSchema", "cell_text", "read_column"]

MAX_CATEGORIES = 100  # more distinct texts than this is free text, not categories
MOSTLY_NUMBERS = 0.9  # a text column whose cells are at least this share numbers has stray text
_DATE = re.compile(r"^(\d{4}-\d{1,2}-\d{1,2}([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?|\d{1,2}/\d{1,2}/\d{2,4})$")


@dataclass(frozen=True)
class ColumnSchema:
    """How one feature column is read: ``numbers``, or ``categories`` with their texts in code
    order (``categories[k]`` is coded ``k``)."""

    name: str
    kind: Literal["numbers", "categories"]
    categories: tuple[str, ...] = ()

    def codes(self, cells: np.ndarray) -> tuple[np.ndarray, int]:
        """Text cells as this schema's codes (float64, NaN for missing) and how many held a text
        the schema does not know (read as missing)."""
        index = {text: k for k, text in enumerate(self.categories)}
        out = np.full(len(cells), np.nan)
        unseen = 0
        for i, cell in enumerate(_texts(cells)):
            if cell is not None:
                code = index.get(cell)
                unseen += code is None
                out[i] = np.nan if code is None else code
        return out, unseen


@dataclass(frozen=True)
class Column:
    """One feature column as read: its values (float64, NaN where missing) and schema, or why
    it was dropped (``values`` None)."""

    schema: ColumnSchema
    values: np.ndarray | None
    dropped: str = ""


def read_column(
    name: str, cells: np.ndarray, numbers: np.ndarray, first_text: int | None, row_label
) -> Column:
    """What feature column ``name`` is (see the module's table).

    Args:
        cells: the column as read (text from a CSV, typed values from Parquet).
        numbers: the cells as float64 up to ``first_text`` (``user_tables._as_numbers``).
        first_text: the first cell that is not a number (None: every cell is one or missing).
        row_label: row index -> "line 5", for messages.

    Returns:
        A :class:`Column`; ``dropped`` says why, in the words of the notes.

    Raises:
        ValueError: a column that cannot be read as features, with the message's words after
            "column 'name' " (the reader adds the file).
    """
    if first_text is None:
        infinite = np.flatnonzero(np.isinf(numbers))
        if len(infinite):
            where = row_label(int(infinite[0]))
            raise ValueError(f"holds an infinite value on {where}; replace it, or leave the cell empty")
        return _numbers_or_dropped(name, numbers)
    texts = _texts(cells)
    present = [t for t in texts if t is not None]
    numeric = sum(_is_number(t) for t in present)
    if numeric >= MOSTLY_NUMBERS * len(present):
        raise ValueError(
            f"is not numeric: mostly numbers, but {row_label(first_text)} holds "
            f"{quoted(cells[first_text])}; fix that cell, leave it empty (read as missing), or drop the "
            "column"
        )
    dates = sum(bool(_DATE.match(t)) for t in present)
    if dates >= MOSTLY_NUMBERS * len(present):
        raise ValueError(
            f"holds dates (such as {quoted(present[0])}); biaslab does not read dates: turn them into "
            "numbers (days since a start, the month, the day of the week) or drop the column"
        )
    distinct = sorted(set(present))
    if len(distinct) == len(texts) and not any(any(c.isspace() for c in t) for t in distinct):
        return _dropped(name, "categories", "an ID (a different text on every row)")
    if len(distinct) > MAX_CATEGORIES:
        raise ValueError(
            f"holds free text or too many categories ({len(distinct):,} distinct texts, more than "
            f"{MAX_CATEGORIES}); turn it into numbers or a few categories, or drop the column"
        )
    schema = ColumnSchema(name, "categories", tuple(distinct))
    if len(distinct) <= 1 and len(present) == len(texts):
        return _dropped(name, "categories", "constant (one value on every row)")
    values, _ = schema.codes(cells)
    return Column(schema, values)


def _numbers_or_dropped(name: str, numbers: np.ndarray) -> Column:
    present = numbers[~np.isnan(numbers)]
    if len(np.unique(present)) <= 1:
        return _dropped(name, "numbers", "constant (one value, or none)")
    row_numbers = np.arange(len(numbers))
    unnamed = name == "" or re.fullmatch(r"Unnamed: \d+", name) is not None
    if unnamed and any(np.array_equal(numbers, row_numbers + start) for start in (0, 1)):
        return _dropped(name, "numbers", "the row numbers (an unnamed column counting the rows)")
    return Column(ColumnSchema(name, "numbers"), numbers)


def _dropped(name: str, kind: str, why: str) -> Column:
    return Column(ColumnSchema(name, kind), None, why)


def cell_text(cell) -> str | None:
    """A cell as stripped text, None where missing (None, NaN, or a text of ``MISSING_CELLS``)."""
    if cell is None or (isinstance(cell, float) and np.isnan(cell)):
        return None
    text = str(cell).strip()
    return None if text.lower() in MISSING_CELLS else text


def _texts(cells: np.ndarray) -> list[str | None]:
    """Each cell as stripped text, None where missing."""
    return [cell_text(cell) for cell in cells]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
