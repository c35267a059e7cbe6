"""Running an experiment: config, seed, run directory, results, report, completion marker.

``biaslab.run(name, ...)`` and ``biaslab run NAME`` both land in :func:`run_request`, which
carries out a request checked whole by :mod:`biaslab.request` (nothing is checked here). The order of
writes is what makes an interrupted run safe: config.json first, then metrics and checkpoints
while the experiment works, then results.json, report.html and, only if all of that
succeeded, ``COMPLETE``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from biaslab.caches import clear_run_caches
from biaslab.config import to_dict
from biaslab.context import RunContext
from biaslab.errors import BiaslabError, ClusterLostError, StorageError
from biaslab.fileio import write_traceback
from biaslab.formatting import printable
from biaslab.hardware import few_idle_cores_notice, make_deterministic, restart_load_window, use_threads
from biaslab.loggers import make_sinks
from biaslab.records import every_record, words_to_json
from biaslab.report.display import Result
from biaslab.report.text import claim_lines
from biaslab.request import RUN_OPTIONS, Plan, RunRequest, check
from biaslab.runs import TIMINGS, TRACEBACK, RunDir
from biaslab.scale.executors import make_executor
from biaslab.train.seed import seed_everything

__all__ = ["RUN_OPTIONS", "print_summary", "run", "run_request"]


def run(
    name: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    profile: str | None = None,
    seed: int | None = None,
    out: str | os.PathLike | None = None,
    resume: str | os.PathLike | None = None,
    runs_dir: str | os.PathLike = "runs",
    threads: int | str | None = None,
    device: str | None = None,
    log: str | Sequence[str] | None = None,
    progress: bool | str | None = None,
    executor: str | None = None,
    workers: int | None = None,
    address: str | None = None,
    command: str | None = None,
    echo: TextIO | None = None,
) -> Result:
    """Run experiment ``name`` and return its :class:`~biaslab.report.display.Result` (``biaslab.run``).

    Config keys and run options are apart: ``biaslab.run("xor", {"epochs": 20}, seed=3)``.

    Args:
        name: a registered experiment (``biaslab list``); optional with ``resume``.
        overrides: config values by key (``biaslab config NAME`` lists them), e.g.
            ``{"epochs": 3, "lr": 0.01}``; text is parsed as by ``--set``. A run option given
            here (``{"seed": 3}``) is refused, naming the option.
        profile: ``"quick"`` (a smoke test), ``"default"`` (a laptop CPU; the default) or
            ``"full"``.
        seed: fixes every random choice of the run; an integer in 0..2**64 - 1 (default 0).
        out: the run directory, new or empty; default ``<runs_dir>/<name>-<YYYYmmdd-HHMMSS>-<seed>``.
        resume: an unfinished run directory to continue (its config, profile, seed, thread count,
            device, loggers and folder are reused: ``overrides``, ``profile``, ``seed``, ``out``,
            ``threads``, ``device`` and ``log`` are refused with it).
        runs_dir: parent of new run directories (default ``runs``).
        threads: CPU threads for torch and NumPy, for each of the lab's fits: a number,
            ``"auto"`` (the cores idle now) or None (default: every core; with ``executor="local"``
            the cores divided between the workers; on Ray 1). Recorded in config.json; a resume
            reuses it, since a seed fixes a run bit for bit for a given thread count and precision.
        device: where models, data, training and sampling run: ``"auto"`` (the default: CUDA,
            else Apple's MPS, else the CPU), ``"cpu"``, ``"cuda"`` or ``"mps"``; a device this
            machine lacks is refused. Recorded in config.json; a resume reuses it. What a seed
            fixes on each device: ``biaslab.hardware``.
        log: where the metrics go besides metrics.jsonl: ``"csv"`` (metrics.csv), ``"tensorboard"``
            (event files under tensorboard/; ``pip install 'biaslab[tensorboard]'``), ``"mlflow"``
            (a local MLflow store in mlruns/; ``pip install 'biaslab[mlflow]'``), a list or a
            comma-separated string of them. Recorded in config.json; a resume reuses them.
        progress: ``True`` progress bars, ``"lines"`` one line per epoch of each training (for
            a log file), ``False`` nothing; default None: bars on a terminal only.
        executor: who runs a lab's independent fits (``ctx.tasks``): ``"serial"`` (the default:
            one after the other, here), ``"local"`` (``workers`` processes on this machine) or
            ``"ray"`` (an existing Ray cluster at ``address``; ``pip install "biaslab[ray]"``).
            The results are the same bits whichever runs them, for a given ``threads``. A resume
            may choose another (default: the one recorded).
        workers: processes for ``executor="local"`` (default: the cores divided by ``threads``);
            on Ray, at most this many tasks at once.
        address: the Ray cluster's ``HOST:PORT`` (default: ``RAY_ADDRESS``, else this machine's).
        command: the command line recorded in config.json (default: the equivalent CLI call).
        echo: a stream for progress lines (the workshop prints one per lab); default silent.

    Raises:
        BiaslabError: bad input (name, seed, profile, override, data, a run directory in use,
            a full disk...), with the command line's one-line message. Input is checked before
            anything is written: a refused run leaves nothing on disk, and a refused resume
            leaves the folder as it was.
        KeyboardInterrupt: interrupted; ``run_dir`` on the exception names the run to resume
            (None when no run directory was written yet).
        Exception: a bug; its traceback is saved as ``traceback.txt`` in the run directory,
            whose path the exception carries as ``details_path``.
    """
    request = RunRequest(
        name, overrides, profile, seed, out, resume, runs_dir, threads, device, log, progress,
        executor, workers, address, command, echo,
    )  # fmt: skip
    return run_request(request)


def run_request(request: RunRequest) -> Result:
    """Carry out ``request`` (see :func:`run`): checked whole first (:func:`biaslab.request.check`),
    then the run directory made or locked, the experiment run, the run folder finished."""
    rundir: RunDir | None = None
    try:
        plan = check(request)  # nothing is written before every field is proven
        # Joined once the experiment has run; a refused request returns at once without
        # waiting (the daemon thread then just finishes its imports, or dies with the process).
        warming = _warm_up_imports()
        if plan.resume is not None:
            rundir = RunDir.open(plan.resume, plan.saved)  # locked from here on
            if rundir.is_complete:
                rundir.release()
                return Result(rundir.path, rundir.read_results())
        else:
            rundir = RunDir.create(plan.experiment.name, plan.seed, out=plan.out, runs_dir=plan.runs_dir)
        return _started(rundir, plan, warming)
    except KeyboardInterrupt as exc:
        exc.run_dir = rundir.path if rundir is not None and rundir.is_run else None
        raise


def _started(rundir: RunDir, plan: Plan, warming: threading.Thread) -> Result:
    """The run in its locked directory: config.json (a new run), the experiment, and what a
    failure leaves (a run that wrote nothing worth resuming is removed; a bug's traceback)."""
    machine = plan.machine
    rundir.metrics.sinks = make_sinks(plan.log, rundir.path)
    resumed = plan.resume is not None
    refused = False  # a resume refused after taking the lock leaves the lock file as it was
    try:
        if not resumed:
            rundir.write_config(
                plan.experiment.name,
                plan.profile,
                plan.seed,
                to_dict(plan.config),
                plan.command,
                log=plan.log,
                inputs=plan.inputs,
                threads=machine.threads,
                device=machine.device,
                executor=machine.executor_record,
            )
        try:
            with use_threads(machine.threads):
                return _execute(plan, rundir, warming)
        finally:
            warming.join()  # the imports are done before a run returns
    except BiaslabError as exc:
        refused = resumed
        kept = not rundir.discard_if_unused()  # failed before writing anything worth resuming
        if isinstance(exc, (StorageError, ClusterLostError)) and kept and rundir.is_run:
            exc.resume = rundir.path
        raise
    except Exception as exc:  # a bug: keep its traceback beside the run it broke
        if getattr(exc, "details_path", None) is None:  # a workshop's lab may have saved it
            try:
                exc.details_path = write_traceback(exc, rundir.path / TRACEBACK)
            except (OSError, BiaslabError):
                pass
        raise
    finally:
        try:  # an attempt that failed still leaves its loggers in step with metrics.jsonl
            rundir.metrics.close_sinks()  # (after a success they are closed already: nothing to do)
        except Exception:  # best effort: never hide the failure that ended the attempt
            pass
        rundir.release(restore=refused)
        restart_load_window()  # the next run's notice reads the load between the two


def _warm_up_imports() -> threading.Thread:
    """Start importing, on a background thread, what a run pays for on first use: torch._dynamo
    (1.2-2 s here: every torch.optim optimizer imports it, in ``add_param_group``, ``zero_grad``
    and ``step``; no public option avoids it) and matplotlib (the first figure, ~0.75 s). They
    overlap checking the request, checking the data and writing the run directory; the runner
    waits for them before the experiment starts (so nothing a lab times runs beside them).
    Imports consume no random numbers: a run's results stay the same."""

    def work() -> None:
        try:
            import torch._dynamo  # noqa: F401

            from biaslab.report.plots import pyplot

            pyplot()
        except Exception:  # the main thread imports them again and reports any failure
            pass

    thread = threading.Thread(target=work, name="biaslab-warm-imports", daemon=True)
    thread.start()
    return thread


def _execute(plan: Plan, rundir: RunDir, warming: threading.Thread | None = None) -> Result:
    """Run the experiment in a written, locked run directory; results, report, then COMPLETE."""
    exp, machine = plan.experiment, plan.machine
    seed_everything(plan.seed)
    make_deterministic(machine.device)
    executor = make_executor(
        machine.executor, machine.workers, machine.address, machine.threads, machine.device
    )
    ctx = RunContext(
        exp, plan.config, plan.seed, plan.profile, rundir, plan.progress, plan.echo,
        device=machine.device, threads=machine.threads, executor=executor, loggers=plan.log,
    )  # fmt: skip
    executor.start((exp.fn.__module__,))  # local workers import the lab while it reads its data
    if warming is not None:
        # The background imports end before the experiment starts: while a thread imports it
        # holds the interpreter lock and a core, and a timed loop runs slower (attention
        # timings came out up to 100x too long at small sizes). So no lab can time anything
        # while they run, whether or not it remembers to wait.
        warming.join()
    if machine.device == "cpu":
        notice = few_idle_cores_notice(machine.threads)
        if notice is not None:
            print(notice, file=sys.stderr)
    start = time.perf_counter()
    clear_run_caches()  # what an earlier run in this process read is read anew
    try:
        exp.fn(ctx)
    finally:
        ctx.executor.close()
        clear_run_caches()
    results = {
        "experiment": exp.name,
        "title": exp.title,
        "day": exp.day,
        "summary": exp.summary,
        "profile": plan.profile,
        "seed": plan.seed,
        "elapsed_s": round(time.perf_counter() - start, 3),
        "metrics": ctx.metrics,
        "records": ctx.records,
        "words": words_to_json(exp.words),
        TIMINGS: ctx.timings,
        "claims": [c.as_dict() for c in ctx.claims],
        "figures": ctx.figures,
        "tables": ctx.tables,
    }
    # metrics.csv, results.csv and the event files complete before COMPLETE
    rundir.metrics.close_sinks(results=every_record(ctx.metrics, ctx.records))
    rundir.write_results(results)
    from biaslab.report.html import render_report

    render_report(rundir.path, complete=True, order=ctx.labs_order)
    rundir.mark_complete()
    return Result(rundir.path, results)


def print_summary(result: Result, stream: TextIO | None = None) -> None:
    """One line per claim, the tally, then where the report is (default stream: stdout)."""
    stream = sys.stdout if stream is None else stream  # looked up now: it may be redirected
    for line in claim_lines(result.claims):
        stream.write(printable(line) + "\n")
    run = RunDir(result.run_dir)
    stream.write(f"report: {printable(run.report_path)}\n")
    if run.index_path.exists():
        stream.write(f"index:  {printable(run.index_path)}\n")
