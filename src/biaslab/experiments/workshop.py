"""The whole workshop: every lab in order, each in its own run directory, with one HTML index."""

from __future__ import annotations

from dataclasses import dataclass

from biaslab.registry import all_experiments, experiment


@dataclass(frozen=True)
class WorkshopConfig:
    days: tuple[int, ...] = (1, 2, 3, 4, 5)  # which workshop days to run


@experiment(name="workshop", day=0, config=WorkshopConfig, title="The five-day workshop",
            summary="every lab in order, one run directory each, and one HTML index")
def run(ctx) -> None:
    from biaslab.report.html import render_index
    from biaslab.runner import run as run_experiment

    labs = [e for e in all_experiments() if e.day in ctx.cfg.days]
    passed, checked = 0, 0
    for exp in labs:
        lab_dir = ctx.run_dir / "labs" / exp.name
        if (lab_dir / "config.json").exists():  # resuming the workshop: finish or reuse the lab
            result = run_experiment(resume=lab_dir, progress=ctx.progress)
        else:
            result = run_experiment(exp.name, profile=ctx.profile, seed=ctx.seed, out=lab_dir,
                                    progress=ctx.progress)
        ok = sum(c["passed"] is True for c in result.claims)
        n = sum(c["passed"] is not None for c in result.claims)
        passed, checked = passed + ok, checked + n
    ctx.metric(labs=len(labs), claims_passed=passed, claims_checked=checked)
    index = render_index(ctx.run_dir / "labs", out=ctx.run_dir / "index.html",
                         title=f"biaslab workshop ({ctx.profile} profile, seed {ctx.seed})")
    ctx.metric(index=str(index.relative_to(ctx.run_dir)))
