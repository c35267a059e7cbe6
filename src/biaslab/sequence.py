"""Labs run in order inside one run: each in its own run directory, with one HTML index.

``run_in_order(ctx, names)`` is what a run of several labs does (the workshop is one: its days'
labs in the catalogue's order). Each lab is a full run of its own in ``<run>/labs/<name>/``
with the parent's profile, seed, threads, device and loggers; a resumed parent finishes the
unfinished lab and reloads the finished ones (their time is the one they took when they ran).
As each lab finishes one line is printed (name, time, claims); a table sums them up at the end,
and ``index.html`` links every lab's report.

The tally of the labs' claims is recorded and ``ctx.labs_order`` set, the order the report lists
the labs in. The workshop lab is the labs of its days handed to :func:`run_in_order`: neither
the registry nor the runner knows it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from biaslab.formatting import format_duration
from biaslab.registry import get, workshop_order
from biaslab.report.html import render_index
from biaslab.runner import run
from biaslab.runs import RunDir, Tally, tally

COLUMNS = [
    "day",
    "lab",
    "findings held",
    "findings failed",
    "checks held",
    "checks failed",
    "slips",
    "not checked",
]


def run_in_order(ctx, names: Sequence[str], title: str) -> dict[str, float]:
    """Run the labs ``names`` in order as sub-runs of ``ctx``'s run; record their claims' tally
    (metrics), their times (timings), a table and the index titled ``title``. Returns each
    lab's seconds."""
    rows, total, times = [], Tally(), {}
    width = max(map(len, names), default=0)  # the names in one column
    ctx.echo(f"{ctx.experiment.name}: {len(names)} labs, {ctx.profile} profile, seed {ctx.seed}")
    for name in names:
        lab = RunDir(ctx.run.labs_dir / name)
        start = time.perf_counter()
        finished_before = lab.is_complete  # a resumed run reloads it: its time is its own
        if lab.is_run:  # resuming: finish or reuse the lab (it keeps its own options)
            result = run(resume=lab.path, progress=ctx.progress)
        else:
            result = run(
                name,
                profile=ctx.profile,
                seed=ctx.seed,
                out=lab.path,
                progress=ctx.progress,
                threads=ctx.threads,
                device=ctx.device,
                log=ctx.loggers,
            )
        seconds = time.perf_counter() - start
        if finished_before:  # the time it took when it ran, not the time to reload it
            seconds = float(result.results.get("elapsed_s", seconds))
        counts = tally(result.claims)
        total += counts
        rows.append(
            [
                get(name).day,
                name,
                f"{counts.findings.passed} of {counts.findings.total}",
                counts.findings.failed,
                f"{counts.checks.passed} of {counts.checks.total}",
                counts.checks.failed,
                counts.slips,
                counts.unjudged,
            ]
        )
        ctx.timing(**{name: seconds})
        times[name] = seconds
        ctx.echo(f"  {name:<{width}} {format_duration(seconds):>12}   claims {counts.short()}")
    ctx.metric(
        labs=len(names),
        findings=total.findings.total,
        findings_passed=total.findings.passed,
        findings_failed=total.findings.failed,
        checks=total.checks.total,
        checks_passed=total.checks.passed,
        checks_failed=total.checks.failed,
        claims_unjudged=total.unjudged,
        slips=total.slips,
    )
    ctx.table(f"Labs of this {ctx.experiment.name} run", COLUMNS, rows)
    for line in _text_table(COLUMNS, rows):
        ctx.echo(line)
    ctx.echo(f"{ctx.experiment.name}: {total.describe()}")
    ctx.labs_order = workshop_order()  # the report's table of labs, as the index: the catalogue's order
    index = render_index(ctx.run.labs_dir, out=ctx.run.index_path, order=ctx.labs_order, title=title)
    ctx.metric(index=str(index.relative_to(ctx.run_dir)))
    return times


def _text_table(columns: list[str], rows: list[list]) -> list[str]:
    """The summary as plain-text lines, columns as wide as their widest cell."""
    cells = [columns] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = []
    for n, row in enumerate(cells):
        aligned = (c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        lines.append("  " + "  ".join(aligned))
        if n == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    return lines
