"""Benchmark: the five workshop notebooks executed top to bottom in a Jupyter kernel.

    python benchmarks/notebooks.py [--profile quick] [--only Day4 ...] [--steps-only] [--solved]
                                   [--keep DIR] [--json out.json]

Each notebook runs in a fresh ``python3`` kernel (nbclient), in its own temporary folder, with
``BIASLAB_PROFILE`` set; a cell that raises (a failed claim included) fails the notebook, and the
error's last lines are printed before the next notebook starts. Prints each notebook's wall-clock
seconds and its three slowest cells, then one line
``summary: Day1 = A s; ...; total = T s (budget 300 s in quick)`` and warns when the load
average shows a busy machine (absolute figures then mean little).

``--steps-only`` leaves out the cell that runs the day's registered experiments
(``lab.run_day()``): the notebook's own steps and their claims, which in the default profile take
minutes, apart from the experiments, whose default runs are measured by ``biaslab run``.
``--solved`` fills every question and coding cell with its folded solution first
(:func:`biaslab.notebooks.solutions.solve`): the day as a student who writes everything runs it,
the heaviest case (Day 2's SGD loop, once right, trains Step 4's MLP again). Without it the stubs
stay as they are, as a student who writes nothing runs the day.
``--keep DIR`` writes each executed notebook, outputs included, into DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from biaslab.hardware import busy_warning
from biaslab.notebooks import NOTEBOOKS, notebook_path
from biaslab.notebooks.lab import PROFILE_VARIABLE
from biaslab.notebooks.solutions import solve

BUDGET_S = 300  # the budget for all five in the quick profile


RUN_DAY = "lab.run_day()"


def execute(
    name: str, steps_only: bool = False, keep: str | None = None, solved: bool = False
) -> tuple[float, list, str]:
    """Seconds to run notebook ``name``, (seconds, index, first line) of every code cell, and the
    error's last lines ("" when every cell ran)."""
    notebook = nbformat.read(notebook_path(name), as_version=4)
    if solved:
        solve(notebook)
    if steps_only:
        notebook.cells = [c for c in notebook.cells if RUN_DAY not in c.source]
    cells, clock = [], {}

    def started(cell, cell_index, **_):
        clock["cell"] = time.perf_counter()

    def executed(cell, cell_index, **_):
        first = cell.source.splitlines()[0] if cell.source else ""
        cells.append((time.perf_counter() - clock["cell"], cell_index, first[:60]))

    error = ""
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        try:
            NotebookClient(
                notebook, timeout=3600, kernel_name="python3", resources={"metadata": {"path": folder}},
                on_cell_execute=started, on_cell_executed=executed,
            ).execute()  # fmt: skip
        except CellExecutionError as failure:
            error = "\n".join(str(failure).strip().splitlines()[-6:])
        seconds = time.perf_counter() - start
    if keep:
        os.makedirs(keep, exist_ok=True)
        nbformat.write(notebook, os.path.join(keep, name))
    return seconds, cells, error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="quick", choices=("quick", "default"))
    parser.add_argument("--only", nargs="+", metavar="DAY", help="these notebooks only, e.g. Day1 Day4")
    parser.add_argument("--steps-only", action="store_true", help="leave out the day's experiments cell")
    parser.add_argument("--solved", action="store_true", help="answer and fill in every solution first")
    parser.add_argument("--keep", metavar="DIR", help="write the executed notebooks into DIR")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    names = [n for n in NOTEBOOKS if not args.only or n.split("_")[0] in args.only]
    if not names:
        parser.error(
            f"--only {' '.join(args.only)}: choose among {', '.join(n.split('_')[0] for n in NOTEBOOKS)}"
        )
    os.environ[PROFILE_VARIABLE] = args.profile
    warning = busy_warning()
    if warning:
        print(warning)
    figures, failed = {}, []
    for name in names:
        seconds, cells, error = execute(name, args.steps_only, args.keep, args.solved)
        figures[name.split("_")[0]] = round(seconds, 1)
        slowest = ", ".join(f"cell {i} {s:.1f} s ({line})" for s, i, line in sorted(cells, reverse=True)[:3])
        print(f"{name:45s} {seconds:6.1f} s; slowest: {slowest}", flush=True)
        if error:
            failed.append(name.split("_")[0])
            print(f"  FAILED:\n{error}", flush=True)
    total = sum(figures.values())
    budget = (
        f" (budget {BUDGET_S} s in quick)" if args.profile == "quick" and len(names) == len(NOTEBOOKS) else ""
    )
    each = "; ".join(f"{k} = {v} s" for k, v in figures.items())
    scope = " (steps only)" if args.steps_only else ""
    scope += " (solved)" if args.solved else ""
    print(f"summary{scope}: {each}; total = {total:.1f} s{budget}; failed: {', '.join(failed) or 'none'}")
    if args.json:
        with open(args.json, "w") as handle:
            record = {"profile": args.profile, "steps_only": args.steps_only, "solved": args.solved}
            record["seconds"] = figures
            json.dump({**record, "total": total, "failed": failed}, handle, indent=1)
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
