"""Running an experiment: config, seed, run directory, results, report, completion marker.

``biaslab.run(name, ...)`` and ``biaslab run NAME`` both land in :func:`run`. The order of
writes is what makes an interrupted run safe: config.json first, then metrics and checkpoints
while the experiment works, then results.json, report.html and — only if all of that
succeeded — ``COMPLETE``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biaslab import registry
from biaslab.config import from_dict, to_dict
from biaslab.data.availability import require_data
from biaslab.data.store import atomic_write
from biaslab.errors import BiaslabError, CheckpointError
from biaslab.runs import RunDir
from biaslab.train.seed import derive_seed, seed_everything

_RUN_KEYS = ("profile", "seed", "out", "resume", "runs_dir", "progress", "command")


@dataclass
class Claim:
    """A quantitative claim from the lecture notes beside the value this run measured."""

    claim: str
    expected: str
    measured: Any
    passed: bool | None
    source: str = ""


class _MetricsLogger:
    """The trainer's logger for one tagged training inside a run."""

    def __init__(self, run: RunDir, tag: str):
        self.run, self.tag = run, tag

    def log(self, record: dict) -> None:
        self.run.log({**record, "tag": self.tag})

    def rewind(self, step: int) -> None:
        self.run.rewind_metrics(self.tag, step)


class RunContext:
    """What an experiment receives: its config, seed and the places to put its results."""

    def __init__(self, experiment: registry.Experiment, cfg, seed: int, profile: str,
                 run: RunDir, progress: bool | None):
        self.experiment = experiment
        self.cfg = cfg
        self.seed = seed
        self.profile = profile
        self.run = run
        self.progress = progress
        self.metrics: dict[str, Any] = {}
        self.claims: list[Claim] = []
        self.figures: list[dict[str, str]] = []
        self.tables: list[dict[str, Any]] = []

    @property
    def run_dir(self) -> Path:
        return self.run.path

    @property
    def quick(self) -> bool:
        return self.profile == "quick"

    def seed_for(self, *names: str) -> int:
        """A seed for a named part of the experiment (stable, independent of call order)."""
        return derive_seed(self.seed, self.experiment.name, *names)

    def trainer_kwargs(self, tag: str) -> dict[str, Any]:
        """Checkpoint path, fingerprint, logger and progress setting for a Trainer called ``tag``."""
        fingerprint = f"{self.experiment.name}|{self.seed}|{to_dict(self.cfg)}"
        return {"checkpoint": self.run.checkpoints_dir / f"{tag}.pt", "fingerprint": fingerprint,
                "logger": _MetricsLogger(self.run, tag), "tag": tag, "progress": self.progress,
                "seed": self.seed_for(tag)}

    def log(self, **record: Any) -> None:
        self.run.log(record)

    def metric(self, **values: Any) -> None:
        self.metrics.update(values)

    def claim(self, claim: str, *, expected: str, measured: Any, passed: bool | None,
              source: str = "", checked_in_quick: bool = True) -> None:
        """Record a claim from the notes beside the measured value.

        ``checked_in_quick=False`` marks claims the tiny ``--quick`` data cannot be expected to
        meet (e.g. an accuracy target): in that profile the value is shown but not judged.
        """
        if self.quick and not checked_in_quick:
            passed, expected = None, f"{expected} (not judged in --quick)"
        self.claims.append(Claim(claim, expected, measured,
                                 None if passed is None else bool(passed), source))

    def table(self, title: str, columns: list[str], rows: list[list[Any]]) -> None:
        self.tables.append({"title": title, "columns": list(columns), "rows": rows})

    def figure(self, name: str, fig, caption: str = "") -> Path:
        """Save a matplotlib figure as figures/<name>.png and close it."""
        import matplotlib.pyplot as plt

        path = self.run.figures_dir / f"{name}.png"
        atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=100))
        plt.close(fig)
        self.figures.append({"file": f"figures/{name}.png", "caption": caption})
        return path


@dataclass
class Result:
    """What a finished run produced; ``results`` is results.json as a dict."""

    run_dir: Path
    results: dict = field(default_factory=dict)

    @property
    def metrics(self) -> dict:
        return self.results.get("metrics", {})

    @property
    def claims(self) -> list[dict]:
        return self.results.get("claims", [])

    @property
    def passed(self) -> bool:
        """True when no checked claim failed."""
        return all(c.get("passed") is not False for c in self.claims)


def run(name: str | None = None, *, profile: str = "default", seed: int = 0,
        out: str | Path | None = None, resume: str | Path | None = None,
        runs_dir: str | Path = "runs", progress: bool | None = None,
        command: str | None = None, **overrides: Any) -> Result:
    """Run experiment ``name`` and return its :class:`Result`.

    Args:
        name: a registered experiment (``biaslab list``); optional with ``resume``.
        profile: ``"quick"`` (CI smoke test), ``"default"`` (laptop CPU) or ``"full"``.
        seed: fixes every random choice of the run.
        out: the run directory; default ``<runs_dir>/<name>-<YYYYmmdd-HHMMSS>-<seed>``.
        resume: an unfinished run directory to continue (its config and seed are reused).
        runs_dir: parent of new run directories (default ``runs``).
        progress: progress bars (default: only on a terminal).
        **overrides: config values, e.g. ``epochs=3`` (strings are parsed as by ``--set``).
    """
    if resume is not None:
        rundir = RunDir.open(resume)
        saved = rundir.read_config()
        missing = [k for k in ("experiment", "profile", "seed", "config")
                   if not isinstance(saved, dict) or k not in saved]
        if missing or not isinstance(saved["config"], dict):
            raise CheckpointError(f"{rundir.config_path} is not a biaslab run config (missing or "
                                  f"bad: {', '.join(missing or ['config'])}); cannot resume")
        if name is not None and name != saved.get("experiment"):
            raise CheckpointError(f"{resume} is a run of '{saved.get('experiment')}', not '{name}'")
        exp = registry.get(saved["experiment"])
        if overrides:
            raise BiaslabError("--set cannot be combined with --resume (the run keeps its config)")
        if rundir.is_complete:
            return Result(rundir.path, _read_results(rundir))
        cfg = from_dict(exp.config, saved["config"])
        profile, seed = saved["profile"], saved["seed"]
    else:
        if name is None:
            raise BiaslabError("name an experiment to run (see 'biaslab list')")
        exp = registry.get(name)
        cfg = exp.make_config(profile, overrides)
        require_data(exp.requires)
        rundir = RunDir.create(exp.name, seed, out=out, runs_dir=runs_dir)
        rundir.write_config(exp.name, profile, seed, to_dict(cfg),
                            command or _python_command(exp.name, profile, seed, overrides))

    seed_everything(seed)
    ctx = RunContext(exp, cfg, seed, profile, rundir, progress)
    start = time.perf_counter()
    try:
        exp.fn(ctx)
    except BiaslabError:
        rundir.discard_if_unused()  # failed before writing anything worth resuming
        raise
    results = {
        "experiment": exp.name, "title": exp.title, "day": exp.day, "summary": exp.summary,
        "profile": profile, "seed": seed, "elapsed_s": round(time.perf_counter() - start, 3),
        "metrics": ctx.metrics, "claims": [vars(c) for c in ctx.claims],
        "figures": ctx.figures, "tables": ctx.tables,
    }
    rundir.write_results(results)
    from biaslab.report.html import render_report

    render_report(rundir.path, complete=True)
    rundir.mark_complete()
    return Result(rundir.path, results)


def _read_results(rundir: RunDir) -> dict:
    from biaslab.runs import read_json

    return read_json(rundir.results_path)


def _python_command(name: str, profile: str, seed: int, overrides: dict) -> str:
    sets = "".join(f" --set {k}={v}" for k, v in overrides.items())
    flag = "" if profile == "default" else f" --{profile}"
    return f"biaslab run {name}{flag} --seed {seed}{sets}"


def verdict_word(passed) -> str:
    """PASS / FAIL for a judged claim, ---- for one not judged (or malformed)."""
    return {True: "PASS", False: "FAIL"}.get(passed, "----")


def print_summary(result: Result, stream=None) -> None:
    """One line per claim, then where the report is (on ``stream``, default sys.stdout)."""
    from biaslab.report.html import format_value

    stream = sys.stdout if stream is None else stream  # looked up now: it may be redirected

    for c in result.claims:
        stream.write(f"  [{verdict_word(c.get('passed'))}] {c['claim']}: measured {format_value(c['measured'])} "
                     f"(expected {c['expected']})\n")
    stream.write(f"report: {result.run_dir / 'report.html'}\n")
    if (result.run_dir / "index.html").exists():
        stream.write(f"index:  {result.run_dir / 'index.html'}\n")
