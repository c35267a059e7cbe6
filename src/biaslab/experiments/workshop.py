"""The whole workshop: every lab in order, each in its own run directory, with one HTML index.

As each lab finishes it prints one line (name, time, claims); a table sums them up at the end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from biaslab.config import check_range
from biaslab.errors import ConfigError
from biaslab.formatting import format_duration
from biaslab.registry import DAY_TITLES, all_experiments, catalog, experiment, workshop_order
from biaslab.report.html import render_index
from biaslab.runner import run as run_experiment
from biaslab.runs import RunDir, Tally, tally


@dataclass(frozen=True)
class WorkshopConfig:
    days: tuple[int, ...] = (1, 2, 3, 4, 5)  # which workshop days to run

    def __post_init__(self):
        # Day 0 is the workshop itself, which would run itself again.
        check_range(self, "days", 1, max(DAY_TITLES), "the workshop's days; 0 is the workshop itself")
        with_labs = sorted({e.day for e in catalog() if e.day})  # read from the sources: no lab imported
        if not set(self.days) & set(with_labs):
            raise ConfigError(
                f"days={','.join(map(str, self.days))}: no lab belongs to these days "
                f"(labs exist for days {', '.join(map(str, with_labs))})"
            )


def _labs(days) -> list:
    return [e for e in all_experiments() if e.day in days]


def _data_of_labs(cfg: WorkshopConfig) -> list[str]:
    """Every data set the chosen days' labs need: checked before the first lab starts."""
    return sorted({name for e in _labs(cfg.days) for name in e.required_data(e.config())})


@experiment(
    name="workshop",
    day=0,
    config=WorkshopConfig,
    requires=_data_of_labs,
    title="The five-day workshop",
    summary="every lab in order, one run directory each, and one HTML index",
)
def run(ctx) -> None:
    labs = _labs(ctx.cfg.days)
    rows, total = [], Tally()
    ctx.echo(f"workshop: {len(labs)} labs, {ctx.profile} profile, seed {ctx.seed}")
    for exp in labs:
        lab = RunDir(ctx.run.labs_dir / exp.name)
        start = time.perf_counter()
        finished_before = lab.is_complete  # a resumed workshop reloads it: its time is its own
        if lab.is_run:  # resuming the workshop: finish or reuse the lab
            result = run_experiment(resume=lab.path, progress=ctx.progress)  # keeps its loggers
        else:
            result = run_experiment(
                exp.name,
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
                exp.day,
                exp.name,
                counts.passed,
                counts.failed,
                counts.notes_wrong,
                counts.unjudged,
            ]
        )
        ctx.timing(**{exp.name: seconds})
        ctx.echo(f"  {exp.name:<16} {format_duration(seconds):>12}   claims {counts.short()}")
    ctx.metric(
        labs=len(labs),
        claims_passed=total.passed,
        claims_checked=total.judged,
        claims_failed=total.failed,
        claims_notes_wrong=total.notes_wrong,
    )
    columns = ["day", "lab", "passed", "failed", "notes wrong", "not checked"]
    ctx.table("Labs of this workshop run", columns, rows)
    _echo_table(ctx, columns, rows)
    ctx.echo(f"workshop: {total.describe()}")
    index = render_index(
        ctx.run.labs_dir,
        out=ctx.run.index_path,
        order=workshop_order(),
        title=f"biaslab workshop ({ctx.profile} profile, seed {ctx.seed})",
    )
    ctx.metric(index=str(index.relative_to(ctx.run_dir)))


def _echo_table(ctx, columns: list[str], rows: list[list]) -> None:
    """The summary as a plain-text table, columns as wide as their widest cell."""
    cells = [columns] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    for n, row in enumerate(cells):
        ctx.echo(
            "  " + "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        )
        if n == 0:
            ctx.echo("  " + "  ".join("-" * w for w in widths))
