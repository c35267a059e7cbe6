"""Benchmark: the five workshop notebooks executed top to bottom in a Jupyter kernel.

    python benchmarks/notebooks.py [--profile quick] [--json out.json]

Each notebook runs in a fresh ``python3`` kernel (nbclient), in its own temporary folder, with
``BIASLAB_PROFILE`` set; a cell that raises (a failed claim included) fails the notebook. Prints
each notebook's wall-clock seconds and its three slowest cells, then one line
``summary: Day1 = A s; ...; total = T s (budget 300 s in quick)`` and warns when the load
average shows a busy machine (absolute figures then mean little).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import nbformat
from nbclient import NotebookClient

from biaslab.hardware import busy_warning
from biaslab.notebooks import NOTEBOOKS, notebook_path
from biaslab.notebooks.lab import PROFILE_VARIABLE

BUDGET_S = 300  # the budget for all five in the quick profile


def execute(name: str) -> tuple[float, list[tuple[float, int, str]]]:
    """Seconds to run notebook ``name``, and (seconds, index, first line) of every code cell."""
    notebook = nbformat.read(notebook_path(name), as_version=4)
    cells, clock = [], {}

    def started(cell, cell_index, **_):
        clock["cell"] = time.perf_counter()

    def executed(cell, cell_index, **_):
        first = cell.source.splitlines()[0] if cell.source else ""
        cells.append((time.perf_counter() - clock["cell"], cell_index, first[:60]))

    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        NotebookClient(
            notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": folder}},
            on_cell_execute=started, on_cell_executed=executed,
        ).execute()  # fmt: skip
        return time.perf_counter() - start, cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="quick", choices=("quick", "default"))
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    os.environ[PROFILE_VARIABLE] = args.profile
    warning = busy_warning()
    if warning:
        print(warning)
    figures = {}
    for name in NOTEBOOKS:
        seconds, cells = execute(name)
        figures[name.split("_")[0]] = round(seconds, 1)
        slowest = ", ".join(f"cell {i} {s:.1f} s ({line})" for s, i, line in sorted(cells, reverse=True)[:3])
        print(f"{name:45s} {seconds:6.1f} s; slowest: {slowest}", flush=True)
    total = sum(figures.values())
    budget = f" (budget {BUDGET_S} s in quick)" if args.profile == "quick" else ""
    each = "; ".join(f"{k} = {v} s" for k, v in figures.items())
    print(f"summary: {each}; total = {total:.1f} s{budget}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"profile": args.profile, "seconds": figures, "total": total}, handle, indent=1)


if __name__ == "__main__":
    main()
