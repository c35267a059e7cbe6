"""The whole workshop: the labs of the chosen days in order, each in its own run directory, with
one HTML index (:func:`biaslab.sequence.run_in_order` runs them)."""

from __future__ import annotations

from dataclasses import dataclass

from biaslab.config import check_range
from biaslab.errors import ConfigError
from biaslab.formatting import format_duration
from biaslab.registry import DAY_TITLES, all_experiments, catalog, experiment
from biaslab.sequence import run_in_order


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


LAB_BUDGET_MINUTES = 15  # the longest a lab's default profile may take on a laptop's CPU


def _labs(days) -> list:
    return [e for e in all_experiments() if e.day in days]


def _data_of_labs(cfg: WorkshopConfig) -> list[str]:
    """Every data set the chosen days' labs need: checked before the first lab starts."""
    return sorted({name for e in _labs(cfg.days) for name in e.required_data(e.config())})


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {"labs": "Labs run", "index": "Index page of the labs"}


@experiment(
    name="workshop",
    words=WORDS,
    day=0,
    config=WorkshopConfig,
    requires=_data_of_labs,
    title="The five-day workshop",
    summary="every lab in order, one run directory each, and one HTML index",
)
def run(ctx) -> None:
    names = [e.name for e in _labs(ctx.cfg.days)]
    times = run_in_order(ctx, names, title=f"biaslab workshop ({ctx.profile} profile, seed {ctx.seed})")
    slowest = max(times, key=times.get)
    on_cpu = str(ctx.device) == "cpu"
    ctx.claim(
        f"Every lab runs on a CPU in under {LAB_BUDGET_MINUTES} minutes",
        source="workshop book, Appendix A; biaslab's target (each lab, its default profile, on this machine)",
        printed="every lab can run on CPU in under 15 minutes",
        kind="finding",
        expected=f"the budget: each lab's default run here at most {LAB_BUDGET_MINUTES} minutes, all in "
        "one run",
        measured=f"the slowest, {slowest}, took {format_duration(times[slowest])}; all {len(times)} labs "
        f"{format_duration(sum(times.values()))}"
        + ("" if on_cpu else f" (on {ctx.device}: not a CPU, not judged)"),
        passed=max(times.values()) <= 60 * LAB_BUDGET_MINUTES if on_cpu else None,
        timing=True,
        checked_in_quick=False,
    )
