"""Running an experiment: config, seed, run directory, results, report, completion marker.

``biaslab.run(name, ...)`` and ``biaslab run NAME`` both land in :func:`run`. The order of
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
from pathlib import Path
from typing import Any, TextIO

from biaslab import registry
from biaslab.caches import clear_run_caches
from biaslab.config import check_seed, field_types, flat_values, from_dict, to_dict
from biaslab.context import RunContext
from biaslab.data.availability import require_data
from biaslab.errors import BiaslabError, CheckpointError, ClusterLostError, ConfigError, StorageError
from biaslab.fileio import write_traceback
from biaslab.formatting import printable, shell_quote
from biaslab.hardware import make_deterministic, resolve_device, resolve_threads, use_threads
from biaslab.inputs import changed_input, input_digests
from biaslab.loggers import check_loggers, make_sinks
from biaslab.report.display import Result
from biaslab.report.text import claim_lines
from biaslab.runs import CONFIG, TIMINGS, TRACEBACK, RunDir
from biaslab.scale.executors import check_executor, make_executor, task_threads
from biaslab.train.callbacks import PROGRESS_MODES
from biaslab.train.seed import seed_everything

# Run options: how a run is made, never what it computes, so never a config key. Each with the
# command line's spelling (None: an argument of biaslab.run only), for the message that refuses
# one given as a config key.
RUN_OPTIONS = {
    "name": "biaslab run NAME",
    "profile": "--quick / --full",
    "seed": "--seed",
    "out": "--out",
    "resume": "--resume",
    "runs_dir": "--runs-dir",
    "threads": "--threads",
    "device": "--device",
    "log": "--log",
    "progress": "--no-progress",
    "executor": "--executor",
    "workers": "--workers",
    "address": "--address",
    "command": None,
    "echo": None,
}


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
    overrides = _checked_overrides(overrides)
    _check_arguments(name, out=out, resume=resume, runs_dir=runs_dir, progress=progress)
    rundir: RunDir | None = None
    try:
        if resume is not None:
            kept = {"profile": profile, "seed": seed, "out": out, "threads": threads, "device": device}
            given = [key for key, value in {**kept, "log": log}.items() if value is not None]
            if given:
                raise BiaslabError(
                    f"{'/'.join(given)} cannot be combined with resume (the run keeps its profile, "
                    "seed, folder, thread count, device and loggers)"
                )
            saved = RunDir.inspect(resume)  # read only: nothing is written before it is proven
            exp, cfg, profile, seed, threads, device = _resumed(Path(resume), saved, name, overrides)
            changed_input(saved, cfg, Path(resume) / CONFIG)  # before a finished run is even reloaded
            executor, workers, address = _resumed_executor(saved, executor, workers, address)
            try:
                log = check_loggers(saved.get("log"))
            except BiaslabError as exc:
                raise CheckpointError(f"{Path(resume) / CONFIG}: {exc}") from None
            require_data(exp.required_data(cfg))
            # Joined once the experiment has run; a refused request returns at once without
            # waiting (the daemon thread then just finishes its imports, or dies with the process).
            warming = _warm_up_imports()
            rundir = RunDir.open(resume, saved)  # locked from here on
            if rundir.is_complete:
                rundir.release()
                return Result(rundir.path, rundir.read_results())
        else:
            profile = "default" if profile is None else profile
            seed = 0 if seed is None else seed
            exp, cfg = _checked_request(name, profile, seed, overrides)
            executor = "serial" if executor is None else executor
            check_executor(executor, workers, address)
            threads = task_threads(executor, None if threads is None else resolve_threads(threads), workers)
            device = resolve_device(device)
            _check_precision(cfg, device)
            log = check_loggers(log)
            warming = _warm_up_imports()
            rundir = RunDir.create(exp.name, seed, out=out, runs_dir=runs_dir)  # locked
        machine = {"threads": threads, "device": device,
                   "executor": {"name": executor, "workers": workers, "address": address}}  # fmt: skip
        return _started(rundir, resume is not None, exp, cfg, seed, profile, machine, log, command,
                        overrides, progress, echo, warming)  # fmt: skip
    except KeyboardInterrupt as exc:
        exc.run_dir = rundir.path if rundir is not None and rundir.is_run else None
        raise


def _started(
    rundir, resumed, exp, cfg, seed, profile, machine, log, command, overrides, progress, echo, warming
):
    """The run in its locked directory: config.json (a new run), the experiment, and what a
    failure leaves (a run that wrote nothing worth resuming is removed; a bug's traceback)."""
    rundir.sinks = make_sinks(log, rundir.path)
    refused = False  # a resume refused after taking the lock leaves the lock file as it was
    try:
        if not resumed:
            rundir.write_config(
                exp.name,
                profile,
                seed,
                to_dict(cfg),
                command or _python_command(exp.name, profile, seed, overrides),
                log=log,
                inputs=input_digests(cfg),
                **machine,
            )
        try:
            with use_threads(machine["threads"]):
                return _execute(exp, cfg, seed, profile, rundir, progress, echo, machine, warming, log)
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
            rundir.close_sinks()  # (after a success they are closed already: nothing to do)
        except Exception:  # best effort: never hide the failure that ended the attempt
            pass
        rundir.release(restore=refused)


def _checked_overrides(overrides) -> dict[str, Any]:
    """``overrides`` as a dict of config keys; a run option given as one is refused, naming the
    option to use (``--set seed=3`` -> ``--seed``)."""
    if overrides is None:
        return {}
    if not isinstance(overrides, Mapping):
        raise BiaslabError(
            f"overrides must be a mapping of config keys to values (e.g. {{'epochs': 3}}), not {overrides!r}"
        )
    for key in overrides:
        if not isinstance(key, str):
            raise BiaslabError(f"config keys are text, not {key!r}")
        if key in RUN_OPTIONS:
            flag = RUN_OPTIONS[key]
            use = f"pass {key}=... to biaslab.run"
            use = f"give it as {flag} (or {use})" if flag else use
            raise BiaslabError(f"'{key}' is a run option, not a config key: {use}")
    return dict(overrides)


def _check_arguments(name, *, out, resume, runs_dir, progress) -> None:
    """The Python API's arguments checked as the command line checks them (one-line errors)."""
    if name is not None and not isinstance(name, str):
        raise BiaslabError(f"the experiment name must be a string, not {name!r} (see 'biaslab list')")
    for key, value, optional in (("out", out, True), ("resume", resume, True), ("runs_dir", runs_dir, False)):
        if value is None and optional:
            continue
        if isinstance(value, bytes) or not isinstance(value, (str, os.PathLike)):
            raise BiaslabError(f"{key} must be a folder's path (a string), not {value!r}")
        if not os.fspath(value).strip():
            flag = "--" + key.replace("_", "-")
            raise BiaslabError(f"{flag} is empty (an unset shell variable?); name a folder or omit {flag}")
    if progress not in PROGRESS_MODES:
        raise BiaslabError(f"progress must be True, False, None or 'lines', not {progress!r}")


def _checked_request(name: Any, profile: Any, seed: Any, overrides: dict[str, Any]):
    """The experiment and its config for a new run; every input checked before anything is
    written (a ConfigError or BiaslabError with the command line's message)."""
    if name is None:
        raise BiaslabError("name an experiment to run (see 'biaslab list')")
    if not isinstance(profile, str):
        raise BiaslabError(f"profile must be one of {', '.join(registry.PROFILES)}, not {profile!r}")
    check_seed(seed)
    exp = registry.get(name)
    cfg = exp.make_config(profile, overrides)
    require_data(exp.required_data(cfg))
    return exp, cfg


def _resumed(path: Path, saved: dict, name: str | None, overrides: dict[str, Any]):
    """Experiment, config, profile, seed and thread count of the run whose config.json
    (``saved``, proven a run's by ``RunDir.inspect``) is in ``path``, checked for ``--resume``
    as strictly as a new run's: nothing has been written yet."""
    config = path / CONFIG
    if not isinstance(saved["experiment"], str) or not isinstance(saved["config"], dict):
        raise CheckpointError(
            f"{config}: 'experiment' must be a string and 'config' an object; cannot resume"
        )
    if saved["profile"] not in registry.PROFILES:
        choices = ", ".join(registry.PROFILES)
        raise CheckpointError(f"{config}: profile {saved['profile']!r} is not one of {choices}")
    try:
        check_seed(saved["seed"])
    except ConfigError as exc:
        raise CheckpointError(f"{config}: {exc}; cannot resume") from None
    if name is not None and name != saved["experiment"]:
        raise CheckpointError(f"{path} is a run of '{saved['experiment']}', not '{name}'")
    if overrides:
        raise BiaslabError("--set cannot be combined with --resume (the run keeps its config)")
    try:
        exp = registry.get(saved["experiment"])
    except BiaslabError as exc:
        raise CheckpointError(f"{config}: {exc}; cannot resume") from None
    lacking = sorted(set(field_types(exp.config)) - set(saved["config"]))
    if lacking:
        raise CheckpointError(
            f"{config} lacks config key(s) {', '.join(lacking)}: resuming would mix two configs; "
            "start a new run"
        )
    try:
        cfg = from_dict(exp.config, saved["config"])
    except ConfigError as exc:
        raise CheckpointError(f"{config}: {exc}; cannot resume: start a new run") from None
    try:
        threads = resolve_threads(saved.get("threads"))
        recorded = saved.get("device", "cpu")  # runs before 0.3 ran on the CPU
        if recorded == "auto":
            raise ConfigError("device='auto' (a run records the device it resolved to)")
        device = resolve_device(recorded)
        _check_precision(cfg, device)
    except ConfigError as exc:
        raise CheckpointError(f"{config}: {exc}; cannot resume") from None
    return exp, cfg, saved["profile"], saved["seed"], threads, device


def _resumed_executor(saved: dict, executor, workers, address):
    """The executor of a resumed run: the one given, else the one config.json records (serial
    for a run that records none); checked like a new run's."""
    if executor is None:
        recorded = saved.get("executor") if isinstance(saved.get("executor"), dict) else {}
        executor = recorded.get("name", "serial")
        workers = workers if workers is not None else recorded.get("workers")
        address = address if address is not None else recorded.get("address")
    check_executor(executor, workers, address)
    return executor, workers, address


def _check_precision(cfg, device: str) -> None:
    """A config's ``precision`` (where it has one) must run on ``device``: one line if not."""
    precision = flat_values(cfg).get("precision")  # its own, or its training part's
    if precision is not None:
        from biaslab.train.config import autocast_dtype

        autocast_dtype(precision, device)


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


def _execute(
    exp, cfg, seed: int, profile: str, rundir: RunDir, progress, echo, machine: dict, warming=None, log=()
) -> Result:
    """Run the experiment in a written, locked run directory; results, report, then COMPLETE."""
    seed_everything(seed)
    make_deterministic(machine["device"])
    chosen, threads, device = machine["executor"], machine["threads"], machine["device"]
    executor = make_executor(chosen["name"], chosen["workers"], chosen["address"], threads, device)
    ctx = RunContext(
        exp, cfg, seed, profile, rundir, progress, echo,
        device=device, threads=threads, executor=executor, loggers=log,
    )  # fmt: skip
    executor.start((exp.fn.__module__,))  # local workers import the lab while it reads its data
    if warming is not None:
        # The background imports end before the experiment starts: while a thread imports it
        # holds the interpreter lock and a core, and a timed loop runs slower (attention
        # timings came out up to 100x too long at small sizes). So no lab can time anything
        # while they run, whether or not it remembers to wait.
        warming.join()
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
        "profile": profile,
        "seed": seed,
        "elapsed_s": round(time.perf_counter() - start, 3),
        "metrics": ctx.metrics,
        TIMINGS: ctx.timings,
        "claims": [c.as_dict() for c in ctx.claims],
        "figures": ctx.figures,
        "tables": ctx.tables,
    }
    rundir.close_sinks()  # metrics.csv and the event files complete before COMPLETE
    rundir.write_results(results)
    from biaslab.report.html import render_report

    render_report(rundir.path, complete=True, order=ctx.labs_order)
    rundir.mark_complete()
    return Result(rundir.path, results)


def _python_command(name: str, profile: str, seed: int, overrides: dict) -> str:
    sets = "".join(f" --set {shell_quote(f'{k}={v}')}" for k, v in overrides.items())
    flag = "" if profile == "default" else f" --{profile}"
    return f"biaslab run {shell_quote(name)}{flag} --seed {seed}{sets}"


def print_summary(result: Result, stream: TextIO | None = None) -> None:
    """One line per claim, the tally, then where the report is (default stream: stdout)."""
    stream = sys.stdout if stream is None else stream  # looked up now: it may be redirected
    for line in claim_lines(result.claims):
        stream.write(printable(line) + "\n")
    run = RunDir(result.run_dir)
    stream.write(f"report: {printable(run.report_path)}\n")
    if run.index_path.exists():
        stream.write(f"index:  {printable(run.index_path)}\n")
