"""Which metrics a lab's tables already show, so that the report shows each number once.

A lab records its numbers as metrics (results.json's ``metrics``: what the index averages over
seeds and ``biaslab.load`` returns) and often lays the same numbers out as a table for people to
read (``ood``: the AUROC of every detector on every set, beside AUPR and FPR). Both stay in
results.json, which scripts read; the *report* leaves out of its Metrics block every metric a
table already shows and says where to find it. Dropping the table instead would lose what only
it holds (AUPR, FPR), and dropping the metric from results.json would take it from the index and
from every script that reads it.

The rule: a metric is shown by a table when one of the table's cells

- shows the metric's number: printed alike (:func:`~biaslab.formatting.format_value`, 4
  significant digits), or the metric rounded to the cell's decimals where it has two or more
  (a table of 3 decimals shows 0.99929 as 0.999),
- sits in a column whose header's words all occur in the metric's key, and
- sits in a row that names the metric best among the rows of that column: the row whose
  naming cells share words with the key most often (at least once). A row's naming cells are
  its leading cells up to its first number ("animal-mnist", "MSP"), or its first cell where
  that is a number (an angle of 45, a budget ε of 0.1).

Words are lowercase runs of letters and runs of digits: ``auroc_animal-mnist_msp`` holds
``auroc``, ``animal``, ``mnist`` and ``msp``, so the cell 0.7401 of the column "AUROC" in the
row "animal-mnist, MSP" (two names shared) shows it, while a metric ``aupr_animal-mnist_energy``
is looked for in the row "animal-mnist, energy" only; ``mlp_accuracy_45deg`` is the column "MLP"
of the row whose angle is 45. All three together: a value alone matches by chance (a count of
0), a header alone matches every row, a row alone every column.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from biaslab.checks import is_number
from biaslab.formatting import format_value

__all__ = ["shown_in_tables", "words"]

_WORD = re.compile(r"[a-z]+|[0-9]+")


def words(text) -> set[str]:
    """The lowercase runs of letters, and the runs of digits, in ``text``: ``"lr0.1"`` holds
    ``lr``, ``0`` and ``1``."""
    return set(_WORD.findall(str(text).lower()))


def _agrees(value: float, cell: int | float) -> bool:
    """Whether ``cell`` shows ``value``: printed alike, or ``value`` rounded to the cell's
    decimals when it has two or more (a table of 3 decimals shows 0.99929 as 0.999)."""
    if format_value(value) == format_value(cell):
        return True
    digits = repr(cell).partition(".")[2] if isinstance(cell, float) else ""
    return len(digits) >= 2 and digits.isdigit() and round(value, len(digits)) == cell


def _row_names(row: list) -> list[set[str]]:
    """The words of the cells that name a row: its leading cells up to its first number, or its
    first cell where that is a number (an angle, a budget ε)."""
    leading = []
    for value in row:
        if is_number(value):
            break
        leading.append(words(format_value(value)))
    return leading or ([words(format_value(row[0]))] if row else [])


def _printed_cells(table: dict) -> list[tuple[set[str], int | float, list[set[str]]]]:
    """Every number ``table`` prints: (its column header's words, the number, the words of each
    cell naming its row)."""
    headers = [words(c) for c in table.get("columns") or []]
    cells = []
    for row in table.get("rows") or []:
        if not isinstance(row, (list, tuple)):
            continue
        names = _row_names(list(row))
        cells += [(header, value, names) for value, header in zip(row, headers) if is_number(value)]
    return cells


def shown_in_tables(metrics: dict, tables: Iterable[dict]) -> dict[str, int]:
    """The metrics that a table shows, each with the position of the first such table.

    Args:
        metrics: results.json's ``metrics`` (key -> value); only numbers can be shown by a table.
        tables: results.json's ``tables`` (dicts with ``columns`` and ``rows``).

    Returns:
        ``{key: table position}`` for every metric shown (see the module's rule).
    """
    printed = [_printed_cells(t) if isinstance(t, dict) else [] for t in tables]
    shown: dict[str, int] = {}
    for key, value in metrics.items():
        if not is_number(value):
            continue
        named = words(key)
        for position, cells in enumerate(printed):
            # the cells of a column the key names, each with how many of its row's names the key shares
            scored = [
                (sum(1 for n in names if n & named), number)
                for header, number, names in cells
                if header and header <= named
            ]
            best = max((score for score, _ in scored), default=0)
            if best and any(score == best and _agrees(value, number) for score, number in scored):
                shown[key] = position
                break
    return shown
