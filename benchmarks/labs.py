"""Benchmark: every lab's run time, this checkout against an older commit, in alternation.

    python benchmarks/labs.py [--profile quick|default] [--only NAME ...] [--runs N]
                              [--against REV] [--threads N] [--json out.json] [--markdown out.md]

Each run is ``biaslab run NAME`` as a user types it (``--quick`` for the quick profile), a fresh
process writing into a temporary folder, timed from start to exit (the wall clock a student
waits, imports and the report included). With ``--against REV`` the same lab also runs from a
git worktree of REV (its ``src`` first on ``PYTHONPATH``, the same Python and packages), the two
sides alternating run by run so that a change in the machine's load falls on both; a lab that
one side does not have is timed on the other alone. Each side's ``--runs`` times (default 3) give
the median and the spread (min-max); the ratio is old median / new median.

Printed per lab, then a summary: the total of the medians, and the labs over the budget of the
profile (quick: 10 s, default: 300 s; the workshop's own budgets are 2 min and 40 min). A run that
fails is reported with its exit status and not timed. The load average is printed with the figures
and a busy machine is warned of: on 2 cores, another job halves what is measured. Figures are of
this machine and this run; nothing here asserts a time. ``--markdown`` writes the same figures as
the README's table (median and min-max per side, the ratio), headed by the machine, the date, the
load and the commits, so that the README's figures are this script's output, not copied by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from biaslab.hardware import busy_warning
from biaslab.registry import workshop_order

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = {"quick": 10.0, "default": 300.0}


def command(lab: str, profile: str, out: Path, threads: str) -> list[str]:
    """``biaslab run`` through the package's own entry point, so that PYTHONPATH picks the side."""
    call = "from biaslab.cli import entry; entry()"
    args = ["run", lab, "--out", str(out), "--threads", threads, "--no-progress"]
    return [sys.executable, "-c", call, *args, *(["--quick"] if profile == "quick" else [])]


def timed_run(lab: str, profile: str, src: Path, threads: str) -> tuple[float | None, int]:
    """Seconds of one run of ``lab`` with ``src`` first on the path, and its exit status."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        done = subprocess.run(
            command(lab, profile, Path(folder) / "run", threads),
            env=env,
            capture_output=True,
            text=True,
            cwd=folder,
        )
        seconds = time.perf_counter() - start
    if done.returncode:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        print(f"  {lab}: exit {done.returncode}: {tail[0][:200]}", file=sys.stderr)
        return None, done.returncode
    return seconds, 0


def labs_of(src: Path) -> list[str]:
    """The labs a side registers, in workshop order (the workshop itself left out)."""
    code = "from biaslab.registry import workshop_order; print('\\n'.join(workshop_order()))"
    env = {**os.environ, "PYTHONPATH": str(src)}
    names = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return [n for n in names.stdout.split() if n != "workshop"]


def spread(times: list[float]) -> dict:
    return {"median": statistics.median(times), "min": min(times), "max": max(times), "runs": times}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=("quick", "default"), default="quick")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these labs only (default every lab)")
    parser.add_argument("--runs", type=int, default=3, help="runs per lab and side (default 3)")
    parser.add_argument("--against", metavar="REV", help="also time this commit's labs, alternating")
    parser.add_argument("--threads", default="2", help="--threads of every run (default 2)")
    parser.add_argument("--json", metavar="PATH", help="write every time to this file")
    parser.add_argument("--markdown", metavar="PATH", help="write the README's table to this file")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    sides = {"new": ROOT / "src"}
    with tempfile.TemporaryDirectory() as worktrees:
        if args.against:
            old = Path(worktrees) / "old"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.against],
                check=True,
                capture_output=True,
            )
            sides["old"] = old / "src"
        try:
            return measure(args, sides)
        finally:
            if args.against:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False
                )


def measure(args, sides: dict[str, Path]) -> int:
    registered = {side: labs_of(src) for side, src in sides.items()}
    order = [n for n in workshop_order() if n != "workshop"]
    order += [n for names in registered.values() for n in names if n not in order]
    labs = [n for n in order if not args.only or n in args.only]
    unknown = sorted(set(args.only or ()) - set(order))
    if unknown:
        print(f"labs.py: no lab named {', '.join(unknown)}", file=sys.stderr)
        return 2
    load = os.getloadavg()[0]
    print(
        f"{args.profile} profile, {args.runs} run(s) per lab and side, --threads {args.threads}, "
        f"load average {load:.2f}"
    )
    warning = busy_warning()
    if warning:
        print(f"warning: {warning}")
    results, budget = {}, BUDGET_S[args.profile]
    for lab in labs:
        times: dict[str, list[float]] = {side: [] for side in sides if lab in registered[side]}
        for _ in range(args.runs):
            for side in times:  # alternating: old, new, old, new, ...
                seconds, _ = timed_run(lab, args.profile, sides[side], args.threads)
                if seconds is not None:
                    times[side].append(seconds)
        results[lab] = {side: spread(t) for side, t in times.items() if t}
        row = results[lab]
        shown = ", ".join(
            f"{side} {s['median']:.1f} s ({s['min']:.1f}-{s['max']:.1f})" for side, s in row.items()
        )
        ratio = f", ratio {row['old']['median'] / row['new']['median']:.2f}" if len(row) == 2 else ""
        over = "  OVER BUDGET" if "new" in row and row["new"]["median"] > budget else ""
        print(f"{lab:28s} {shown}{ratio}{over}", flush=True)
    for side in sides:
        medians = [r[side]["median"] for r in results.values() if side in r]
        print(f"total of the medians, {side}: {sum(medians):.1f} s over {len(medians)} labs")
    over = [lab for lab, r in results.items() if "new" in r and r["new"]["median"] > budget]
    print(f"over the {budget:g} s budget: {', '.join(over) if over else 'none'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"profile": args.profile, "labs": results}, indent=1))
    if args.markdown:
        Path(args.markdown).write_text(markdown(args, results, load))
    return 0


def revision(rev: str) -> str:
    git = ["git", "-C", str(ROOT), "rev-parse", "--short", rev]
    done = subprocess.run(git, capture_output=True, text=True)
    return done.stdout.strip() or rev


def markdown(args, results: dict, load: float) -> str:
    """The figures as the README shows them: a heading line, then one row per lab."""
    cell = lambda s: f"{s['median']:.1f} ({s['min']:.1f}-{s['max']:.1f})" if s else "(new)"  # noqa: E731
    heading = (f"`--{args.profile}`" if args.profile == "quick" else "default profile") + (
        f", {time.strftime('%Y-%m-%d')}, this machine ({os.cpu_count()} cores, "
        f"load average {load:.2f} at the start), {args.runs} run(s) per side in alternation, "
        f"--threads {args.threads}: seconds, median (min-max), "
        + (f"at {revision(args.against)} (before) and " if args.against else "")
        + f"at {revision('HEAD')} (after)"
        + (", and the ratio before / after." if args.against else ".")
    )
    head = "| lab | before (s) | after (s) | ratio |\n|---|---|---|---|"
    if not args.against:
        head = "| lab | s |\n|---|---|"
    rows = []
    for lab, row in results.items():
        new, old = row.get("new"), row.get("old")
        if args.against:
            ratio = f"{old['median'] / new['median']:.2f}" if old and new else ""
            rows.append(f"| `{lab}` | {cell(old)} | {cell(new) if new else 'failed'} | {ratio} |")
        else:
            rows.append(f"| `{lab}` | {cell(new) if new else 'failed'} |")
    totals = "; ".join(
        f"{side}: {sum(r[side]['median'] for r in results.values() if side in r):.1f} s"
        for side in ("old", "new")
        if any(side in r for r in results.values())
    )
    return f"{heading}\n\n{head}\n" + "\n".join(rows) + f"\n\nTotal of the medians, {totals}.\n"


if __name__ == "__main__":
    raise SystemExit(main())
