"""The notebooks' own solutions, put in place of the student's blanks.

A notebook asks two kinds of things of the student, each followed by its solution folded in a
``<details>`` cell whose ```` ```python ```` block is the answer:

- a *question*: a code cell that opens with ``name = None  # what to write`` and checks it with
  ``lab.check("...", name, expected=...)`` (every exercise's ``answer_k``, and questions inside
  the steps such as Day 4's matching exercise);
- a *coding cell*: a cell tagged ``stub`` whose functions raise ``NotImplementedError("write
  ...")``, then the cell that checks them with ``lab.check_code``, then the solution.

:func:`solve` writes every solution in (in memory) and returns, for each checking cell, the names
its checks will print; each must then say "correct". The notebook tests execute every day so
solved, and ``benchmarks/notebooks.py --solved`` times it: the heaviest run a day can take (a
student's SGD loop, once right, trains Step 4's MLP again).
"""

from __future__ import annotations

import re

__all__ = ["SOLUTION_CLOSE", "SOLUTION_OPEN", "coding_cells", "questions", "solution_code", "solve"]

SOLUTION_OPEN = "<details><summary>Solution</summary>\n\n"  # folds in Jupyter, Colab and GitHub
SOLUTION_CLOSE = "\n\n</details>"  # the blank lines let the markdown inside render

_BLANK = re.compile(r"(\w+) = None  # ")  # a question's answer variable, left for the student
_CHECK = re.compile(r'lab\.check\(\s*"([^"]+)"')
_CODE_CHECK = re.compile(r'lab\.check_code\(\s*"([^"]+)"')


def solution_code(solution) -> str:
    """The Python of a solution cell: its ```python block, stripped ("" when it has none)."""
    found = re.search(r"```python\n(.*?)```", solution.source, re.DOTALL)
    return found.group(1).strip() if found else ""


def questions(notebook) -> list[tuple]:
    """Each question of ``notebook``: (its answer variable, its answer cell, the solution after it)."""
    cells = notebook.cells
    return [
        (_BLANK.match(cell.source).group(1), cell, cells[i + 1])
        for i, cell in enumerate(cells[:-1])
        if cell.cell_type == "code" and _BLANK.match(cell.source) and _CHECK.search(cell.source)
        if cells[i + 1].source.startswith(SOLUTION_OPEN)
    ]


def coding_cells(notebook) -> list[tuple]:
    """Each coding cell of ``notebook``: (its stub, tagged "stub"; its check; its folded solution)."""
    cells = notebook.cells
    return [
        (cell, cells[i + 1], cells[i + 2])
        for i, cell in enumerate(cells)
        if "stub" in cell.metadata.get("tags", [])
    ]


def solve(notebook) -> dict[str, list[str]]:
    """Answer every question and fill every stub of ``notebook`` (in memory) with its solution;
    returns {checking cell id: the names its checks print}, each of which must then say "correct"."""
    checks: dict[str, list[str]] = {}
    for variable, answer, solution in questions(notebook):
        answer.source = answer.source.replace(f"{variable} = None", solution_code(solution), 1)
        checks[answer.id] = _CHECK.findall(answer.source)
    for stub, check, solution in coding_cells(notebook):
        stub.source = solution_code(solution)
        checks[check.id] = _CODE_CHECK.findall(check.source)
    return checks
