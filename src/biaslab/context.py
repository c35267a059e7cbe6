"""What a lab writes against: :class:`RunContext`, its config, seed and run folder, its fits
(``seed_for``, ``init_model``, ``training``, ``tasks``) and its results (``metric``, ``claim``,
``table``, ``figure``, ``save_file``).

The context is built whole by the runner (:mod:`biaslab.runner`): the device, the CPU threads,
the executor of ``ctx.tasks`` and the loggers are given at construction, never set afterwards.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from biaslab import registry
from biaslab.exact_claims import figure_claim, slip_claim
from biaslab.fileio import atomic_write, atomic_write_bytes
from biaslab.formatting import printable, tell
from biaslab.results import Claim, lab_file, verdict_of
from biaslab.runs import RunDir
from biaslab.scale.context import FitContext, TagLogger
from biaslab.scale.executors import SerialExecutor
from biaslab.scale.tasks import Study, TaskSpec

__all__ = ["RunContext"]


class RunContext(FitContext):
    """What an experiment receives: its config, seed and the places to put its results; its fits
    by name (``seed_for``, ``init_model``, ``training``: :class:`~biaslab.scale.context.FitContext`)
    and, for a study of independent fits, ``tasks``."""

    def __init__(
        self,
        experiment: registry.Experiment,
        cfg,
        seed: int,
        profile: str,
        run: RunDir,
        progress: bool | str | None,
        echo: TextIO | None = None,
        *,
        device: str = "cpu",
        threads: int | None = None,
        executor=None,
        loggers: Sequence[str] = (),
    ):
        super().__init__(experiment.name, cfg, seed, profile, device, progress, run.checkpoints_dir)
        self.experiment = experiment
        self.run = run
        self.metrics: dict[str, Any] = {}
        self.timings: dict[str, float] = {}
        self.claims: list[Claim] = []
        self.figures: list[dict[str, str]] = []
        self.tables: list[dict[str, Any]] = []
        self._echo = echo
        self.threads = threads  # the CPU threads each fit computes on (None: torch's setting)
        self.executor = SerialExecutor() if executor is None else executor  # who runs ctx.tasks
        self.loggers = tuple(loggers)  # where records go besides metrics.jsonl (--log)
        self.labs_order: list[str] | None = None  # the report's order of sub-runs: the lab's to set

    @property
    def run_dir(self) -> Path:
        return self.run.path

    def logger(self, tag: str):
        return TagLogger(self.run.metrics, tag)

    def tasks(
        self, fn: Callable[..., Any] | Mapping[Callable[..., Any], Sequence], keys: Sequence = ()
    ) -> dict:
        """Run ``fn(task, *key)`` for every key as a task of this run's executor; its results by key.

        ``fn`` is a module-level function (a worker imports it by name) that fits and measures
        one thing with ``task`` (a :class:`~biaslab.scale.context.TaskContext`: ``cfg``,
        ``seed_for``, ``init_model``, ``training``, ``device``, ``quick``) and returns plain data.
        A key is a tuple of names and numbers (a single value is a key of one). Tasks of several
        functions run together as ``ctx.tasks({fn: keys, other_fn: other_keys})`` (every key
        distinct). Each result is saved as ``tasks/<fn>/<key>.json``, and a resumed run reads
        the finished ones back; :mod:`biaslab.scale.tasks` says what fixes a task's numbers.
        """
        jobs = fn if isinstance(fn, Mapping) else {fn: keys}
        given = [(f, key) for f, ks in jobs.items() for key in ks]
        pairs = [(f, key if isinstance(key, tuple) else (key,)) for f, key in given]
        specs = [
            TaskSpec(f, key, self.experiment.name, self.cfg, self.seed, self.profile, self.device,
                     self.threads or 1, self._task_progress(), str(self.run.path), socket.gethostname())
            for f, key in pairs
        ]  # fmt: skip
        say = None if self.progress is False or self.executor.name == "serial" else tell
        study = Study(self.run, self.executor, say)
        try:
            results = study.run_all(specs)
        finally:
            self._trained += study.trained
        return {key: results[spec.key] for (_, key), spec in zip(given, specs, strict=True)}  # keys as given

    def _task_progress(self):
        """What a task's trainings show: as asked in this process; lines at most in a worker
        (bars of several processes would overwrite each other)."""
        if self.executor.name == "serial":
            return self.progress
        return "lines" if self.progress == "lines" else False

    # -- what the run reports ------------------------------------------------------------------
    def metric(self, **values: Any) -> None:
        """Record results that the run's seed fixes (never a wall-clock time: see timing)."""
        self.metrics.update(values)

    def timing(self, **seconds: float) -> None:
        """Record wall-clock measurements, in seconds: machine-dependent, so kept apart from the
        metrics (results.json's ``timings``) and outside the determinism contract."""
        self.timings.update({name: round(float(value), 3) for name, value in seconds.items()})

    def echo(self, line: str) -> None:
        """Print a line of progress where the caller asked for it (the CLI: stdout)."""
        if self._echo is not None:
            self._echo.write(printable(line) + "\n")
            self._echo.flush()

    def claim(
        self,
        claim: str,
        *,
        expected: str,
        measured: Any,
        passed: bool | None,
        source: str,
        kind: str,
        printed: str | None = None,
        checked_in_quick: bool = True,
        timing: bool = False,
    ) -> None:
        """Record a claim of the documents beside the measured value.

        ``source`` names where the claim stands (a document's short name and place, "biaslab's
        target" for a threshold no document prints, or a paper with its year: see
        :mod:`biaslab.documents`); ``kind`` is ``"finding"`` (an outcome of training, sampling or
        data that could have gone the other way) or ``"check"`` (an identity or a property by
        construction, failing only through a bug); ``printed`` quotes, exactly as printed, what
        the first document named prints, where the claim says it prints a figure.
        ``checked_in_quick=False`` marks claims the tiny ``--quick`` data cannot be expected to
        meet (e.g. an accuracy target): in that profile the value is shown but not judged.
        ``timing=True`` marks a claim about wall-clock time: judged on the budget ``expected``
        states, flagged as machine-dependent in the report, and outside what a seed fixes.
        """
        self.claims.append(
            Claim.judged(
                claim, expected=expected, measured=measured, passed=passed, source=source,
                kind=kind, printed=printed, quick=self.quick, checked_in_quick=checked_in_quick,
                timing=timing,
            )
        )  # fmt: skip

    def claim_exact(self, claim: str, **settled: Any) -> str:
        """A printed figure that an exact computation settles, which may find it wrong: the
        arguments of :func:`biaslab.exact_claims.figure_claim` (``notes``, ``measured``,
        ``exact``, ``computation``, ``tolerance``, ``source``, ``printed``, ``shown``).

        Refused (ValueError, a bug in the lab) when this run has trained a model, or when
        ``exact()`` gives a different value under other random seeds: a figure that comes out
        of training or sampling cannot prove a document wrong. Returns the verdict key.
        """
        return self._settled(figure_claim, claim, settled)

    def claim_slip(self, claim: str, **settled: Any) -> str:
        """A printed formula or label that an exact computation shows to be a slip: the
        arguments of :func:`biaslab.exact_claims.slip_claim` (``printed``, ``correct``,
        ``measured``, ``exact``, ``printed_gives``, ``tolerance``, ``computation``, ``source``).
        Refused like :meth:`claim_exact`. Returns the verdict key."""
        return self._settled(slip_claim, claim, settled)

    def _settled(self, make: Callable[..., Claim], claim: str, arguments: dict) -> str:
        if self._trained:
            raise ValueError(
                f"claim {claim!r}: an exact verdict is refused in a run that trains "
                f"({', '.join(self._trained)}); use ctx.claim"
            )
        record = make(claim, **arguments)
        self.claims.append(record)
        return verdict_of(record.as_dict())

    def table(
        self,
        title: str,
        columns: list[str],
        rows: list[list[Any]],
        timing_columns: Sequence[str] = (),
        lead: bool = False,
    ) -> None:
        """A table of results; ``timing_columns`` names the columns holding wall-clock times,
        which the report flags as machine-dependent and which no seed fixes (``reproducible``).
        ``lead=True``: part of the run's answer, shown first in the report ("The answer")."""
        unknown = set(timing_columns) - set(columns)
        if unknown:
            raise ValueError(f"timing_columns {sorted(unknown)} are not among the columns {list(columns)}")
        table = {"title": title, "columns": list(columns), "rows": rows, **({"lead": True} if lead else {})}
        if timing_columns:
            table["timing_columns"] = list(timing_columns)
        self.tables.append(table)

    def save_file(self, relative: str, data: bytes) -> Path:
        """Write ``data`` atomically to ``relative``, a path inside the run folder (a lab's own
        files, such as compare's saved models under ``models/``)."""
        return atomic_write_bytes(self.run.path / lab_file(relative), data)

    def figure(self, name: str, fig, caption: str = "", lead: bool = False) -> Path:
        """Save a matplotlib figure as figures/<name>.png and close it; ``lead=True``: part of
        the run's answer, shown first in the report."""
        import matplotlib.pyplot as plt

        path = self.run.figures_dir / f"{name}.png"
        atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=100))
        plt.close(fig)
        record = {"file": f"{path.parent.name}/{path.name}", "caption": caption}
        self.figures.append({**record, "lead": True} if lead else record)
        return path
