"""What a lab writes against: :class:`RunContext`, its config, seed and run folder, its fits
(``seed_for``, ``init_model``, ``training``, ``tasks``) and its results (``metric``, ``claim``,
``table``, ``figure``, ``save_file``).

The context is built whole by the runner (:mod:`biaslab.runner`): the device, the CPU threads,
the executor of ``ctx.tasks`` and the loggers are given at construction, never set afterwards.

What a lab calls:

- ``ctx.cfg``, ``ctx.seed``, ``ctx.profile``, ``ctx.quick``: the resolved config and the run's
  settings; ``ctx.device`` (``"cpu"``, ``"cuda"``, ``"mps"``): the Trainer places models and
  batches there, a lab moves its own inputs (``x.to(ctx.device)``) and brings outputs back
  (``.cpu()``) before NumPy.
- ``ctx.seed_for(*names)``: a seed for a named part, stable and independent of call order;
  ``ctx.init_model(build, *names)``: ``build()`` with torch seeded for the names, so the initial
  weights are set by the tag; ``ctx.training(tag)``: a ``TrainSetup`` (checkpoint
  ``checkpoints/<tag>.pt``, metrics logger, seed, device) whose ``.trainer(model, config, ...)``
  builds a Trainer with checkpointing, logging, the time limit and progress as callbacks.
- ``ctx.tasks(fn, keys)``: a study's independent fits as keyed tasks of the run's executor
  (``--executor serial|local|ray``); ``fn(task, *key)`` is module-level, ``task`` a
  :class:`~biaslab.scale.context.TaskContext`, its result plain data saved under ``tasks/`` and
  read back on resume. Labs whose later steps need a trained model train in the driver.
- ``ctx.metric("accuracy", 0.9, model="cnn", split="test")``: a metric with its dimensions
  (:mod:`biaslab.records`; ``ctx.metric(key=value)``: by a flat key alone); ``ctx.table(...)``
  (``timing_columns=``: wall-clock columns, outside what the seed fixes; ``lead=True``: part of
  the answer that opens the report), ``ctx.figure(name, fig, caption)``; ``ctx.timing(**seconds)``:
  wall-clock times, kept apart in results.json's ``timings``.
- ``ctx.claim(...)``: a claim of the documents beside the measured value; one that fails keeps its
  verdict (a lab may add the claim that explains it beside it, never in its place);
  ``ctx.claim_exact`` / ``ctx.claim_slip``: a figure or formula the documents print, settled
  exactly.
- ``ctx.save_file(path, bytes)``: a lab's own file, atomically under ``models/`` (any other path
  is a ValueError); a task saves its own the same way and the driver writes them before its
  result file. ``ctx.echo(line)``: a progress line on the command line's stdout.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from biaslab import registry
from biaslab.better import Direction
from biaslab.exact_claims import figure_claim, slip_claim
from biaslab.fileio import atomic_write, atomic_write_bytes
from biaslab.formatting import printable, tell
from biaslab.records import record
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
        self.records: list[dict] = []  # the metrics recorded with their dimensions
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
    def metric(self, *measured: Any, better: Direction | None = None, key: str | None = None, **values: Any):
        """Record results that the run's seed fixes (never a wall-clock time: see timing).

        ``ctx.metric("accuracy", 0.878, model="penalty", n=5000, split="turned")``: one metric,
        its name and value, then its dimensions (text or numbers): a record in results.json's
        ``records`` and, under the key derived from them (``penalty_n5000_turned_accuracy``;
        ``key`` names another), in its ``metrics`` (:mod:`biaslab.records`). ``better``:
        ``"lower"`` or ``"higher"`` where the name does not say which way the value improves.
        ``ctx.metric(path_points=31)``: metrics by their flat keys alone.
        """
        if not measured:
            if better is not None or key is not None:
                raise ValueError(
                    "better and key describe one metric: ctx.metric(name, value, ..., better=...)"
                )
            self.metrics.update(values)
            return
        if len(measured) != 2:
            raise TypeError("ctx.metric(name, value, **dimensions) takes a name and a value")
        entry = record(*measured, values, better, key)
        self.records.append(entry)
        self.metrics[entry["key"]] = entry["value"]

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
