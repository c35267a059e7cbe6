"""What reads the package and the runs without running anything: ``biaslab list``, ``show``,
``config``, ``report`` and ``notebooks``."""

from __future__ import annotations

from pathlib import Path

from biaslab.cli.usage import UsageError
from biaslab.formatting import printable, shell_quote


def cmd_list() -> None:
    from biaslab.registry import DAY_TITLES, catalog

    entries = catalog()  # read from the sources: no lab (and no torch) is imported
    width = max(len(e.name) for e in entries)
    day = None
    for entry in entries:
        if entry.day != day:
            print(("\n" if day is not None else "") + DAY_TITLES.get(entry.day, f"Day {entry.day}"))
            day = entry.day
        print(f"  {entry.name:<{width}}  {entry.summary}")


def cmd_show(run_dir: str) -> None:
    from biaslab.report.text import run_text

    print(printable(run_text(run_dir), keep="\n"))


def cmd_config(name: str) -> None:
    from biaslab.registry import PROFILES, configs

    found = configs(name)  # imports the lab
    cfgs = found.configs
    w = max(len(k) for k in cfgs["default"])
    print(f"{'key':<{w}}  " + "  ".join(f"{p:>12}" for p in PROFILES))
    for k in cfgs["default"]:
        if k not in found.unused:
            print(f"{k:<{w}}  " + "  ".join(f"{cfgs[p][k]!s:>12}" for p in PROFILES))
    for k, why in found.unused.items():
        print(f"({k} is not used: {why})")


def cmd_report(runs_dir: str) -> None:
    from biaslab.registry import workshop_order
    from biaslab.report.html import render_index
    from biaslab.runs import find_runs

    folder = Path(runs_dir)
    try:
        empty = folder.is_dir() and not find_runs(folder)
    except OSError:  # a name too long, a folder that cannot be read: render_index says which
        empty = False
    if empty:  # no index of nothing in a folder of other things
        raise UsageError(f"{printable(str(folder))} holds no biaslab runs: there is nothing to index")
    print(printable(render_index(folder, order=workshop_order())))


def cmd_notebooks(folder: str, force: bool) -> None:
    from biaslab.notebooks import copy_notebooks

    paths = copy_notebooks(folder, force=force)
    for path in paths:
        print(printable(path))
    print(f"open them with: jupyter lab {shell_quote(paths[0].parent)}")
