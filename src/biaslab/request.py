"""A run request: what a run is asked to be, checked in one place before anything is written.

``biaslab.run(...)`` and ``biaslab run ...`` both build a :class:`RunRequest` (experiment,
config overrides, profile, seed, folders, threads, device, loggers, executor). :func:`check`
proves every field and resolves what the machine decides (the thread count, ``device="auto"``)
or what a resumed run recorded, giving a :class:`Plan`: the experiment, its config and what the
run will record. The runner (:mod:`biaslab.runner`) carries out a plan and checks nothing.

A refused request raises one line (a :class:`~biaslab.errors.BiaslabError`). Messages that
name options are :class:`~biaslab.errors.OptionError`\\ s: ``biaslab.run`` reads them with its
argument names (``seed cannot be combined with resume``), the command line with its flags
(``--seed cannot be combined with --resume``; :data:`RUN_OPTIONS` holds both spellings).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from biaslab import registry
from biaslab.config import check_seed, field_types, from_dict
from biaslab.data.availability import require_data
from biaslab.errors import BiaslabError, CheckpointError, ConfigError, OptionError, literal
from biaslab.formatting import shell_quote
from biaslab.hardware import resolve_device, resolve_threads
from biaslab.inputs import changed_input, input_digests
from biaslab.loggers import check_loggers
from biaslab.runs import CONFIG, RunDir
from biaslab.scale.executors import check_executor, task_threads
from biaslab.train.callbacks import PROGRESS_MODES

__all__ = ["RUN_OPTIONS", "Machine", "Plan", "RunRequest", "check", "check_machine"]

# Run options: how a run is made, never what it computes, so never a config key. Each with the
# command line's spelling (None: an argument of biaslab.run only), for messages that name one.
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
# What a resumed run keeps from its config.json: given with resume, each is refused.
KEPT_BY_RESUME = ("profile", "seed", "out", "threads", "device", "log")


@dataclass(frozen=True)
class RunRequest:
    """What a run is asked to be, as given (see :func:`biaslab.runner.run` for each field)."""

    experiment: str | None = None
    overrides: Mapping[str, Any] | None = None
    profile: str | None = None
    seed: int | None = None
    out: str | os.PathLike | None = None
    resume: str | os.PathLike | None = None
    runs_dir: str | os.PathLike = "runs"
    threads: int | str | None = None
    device: str | None = None
    log: str | Sequence[str] | None = None
    progress: bool | str | None = None
    executor: str | None = None
    workers: int | None = None
    address: str | None = None
    command: str | None = None
    echo: TextIO | None = None


@dataclass(frozen=True)
class Machine:
    """Where and how a run computes: CPU threads per fit, device, the executor of its tasks."""

    threads: int | None
    device: str
    executor: str = "serial"
    workers: int | None = None
    address: str | None = None

    @property
    def executor_record(self) -> dict:
        """The executor as config.json records it (a resume may choose another)."""
        return {"name": self.executor, "workers": self.workers, "address": self.address}


@dataclass(frozen=True)
class Plan:
    """A request checked: the experiment, its config, and everything the run records."""

    experiment: registry.Experiment
    config: Any
    profile: str
    seed: int
    machine: Machine
    log: tuple[str, ...]
    command: str
    progress: bool | str | None = None
    echo: TextIO | None = None
    out: Path | None = None  # a new run's folder (None: one named under runs_dir)
    runs_dir: Path = Path("runs")
    resume: Path | None = None  # the unfinished run to go on with
    saved: dict | None = field(default=None, repr=False)  # its config.json, as inspected
    inputs: dict = field(default_factory=dict)  # a new run's input files, by their contents


def check(request: RunRequest) -> Plan:
    """Every field of ``request`` checked, nothing written: the :class:`Plan` of the run, or one
    line (:class:`~biaslab.errors.BiaslabError`) naming what to change."""
    overrides = _checked_overrides(request.overrides)
    _check_arguments(request)
    if request.resume is not None:
        return _resume_plan(request, overrides)
    if request.experiment is None:
        raise BiaslabError("name an experiment to run (see 'biaslab list')")
    profile = "default" if request.profile is None else request.profile
    if not isinstance(profile, str):
        raise BiaslabError(f"profile must be one of {', '.join(registry.PROFILES)}, not {profile!r}")
    exp = registry.get(request.experiment)
    cfg = exp.make_config(profile, overrides)
    seed = 0 if request.seed is None else request.seed
    check_seed(seed)
    require_data(exp.required_data(cfg))
    machine = check_machine(
        request.executor, request.workers, request.address, request.threads, request.device
    )
    from biaslab.train.config import check_precision  # torch: imported once a run is asked for

    check_precision(cfg, machine.device)
    log = check_loggers(request.log)
    inputs = input_digests(cfg)  # the files it reads, by their contents (a resume compares them)
    # The command line that makes the same run, recorded in config.json.
    sets = "".join(f" --set {shell_quote(f'{k}={v}')}" for k, v in overrides.items())
    flag = "" if profile == "default" else f" --{profile}"
    command = request.command or f"biaslab run {shell_quote(exp.name)}{flag} --seed {seed}{sets}"
    return Plan(
        exp, cfg, profile, seed, machine, log, command, request.progress, request.echo,
        None if request.out is None else Path(request.out), Path(request.runs_dir), inputs=inputs,
    )  # fmt: skip


def check_machine(executor: str | None, workers, address, threads, device) -> Machine:
    """The executor options, the thread count and the device of a new run (or sweep), resolved."""
    executor = "serial" if executor is None else executor
    check_executor(executor, workers, address)
    threads = task_threads(executor, None if threads is None else resolve_threads(threads), workers)
    return Machine(threads, resolve_device(device), executor, workers, address)


def _resume_plan(request: RunRequest, overrides: dict[str, Any]) -> Plan:
    """The plan of ``request.resume``'s run, from its config.json (read only: nothing is written
    before the folder is proven a run and every recorded field checked as strictly as a new
    run's)."""
    given = [key for key in KEPT_BY_RESUME if getattr(request, key) is not None]
    if given:
        raise OptionError(
            f"{'/'.join('{' + key + '}' for key in given)} cannot be combined with {{resume}} "
            "(the run keeps its profile, seed, folder, thread count, device and loggers)"
        )
    if overrides:
        raise OptionError("{overrides} cannot be combined with {resume} (the run keeps its config)")
    path = Path(request.resume)
    saved = RunDir.inspect(path)
    config = path / CONFIG
    exp, cfg = _saved_config(path, saved, request.experiment)
    changed_input(saved, cfg, config)  # before a finished run is even reloaded
    try:
        threads = resolve_threads(saved.get("threads"))
        recorded = saved.get("device", "cpu")  # runs before 0.3 ran on the CPU
        if recorded == "auto":
            raise ConfigError("device='auto' (a run records the device it resolved to)")
        device = resolve_device(recorded)
        from biaslab.train.config import check_precision

        check_precision(cfg, device)
        log = check_loggers(saved.get("log"))
    except BiaslabError as exc:
        raise CheckpointError(f"{config}: {exc}; cannot resume") from None
    executor, workers, address = request.executor, request.workers, request.address
    if executor is None:  # the one config.json records (serial for a run that records none)
        recorded = saved.get("executor") if isinstance(saved.get("executor"), dict) else {}
        executor = recorded.get("name", "serial")
        workers = workers if workers is not None else recorded.get("workers")
        address = address if address is not None else recorded.get("address")
    check_executor(executor, workers, address)
    require_data(exp.required_data(cfg))
    machine = Machine(threads, device, executor, workers, address)
    return Plan(
        exp, cfg, saved["profile"], saved["seed"], machine, log, str(saved.get("command", "")),
        request.progress, request.echo, resume=path, saved=saved,  # a resume writes into its own folder
    )  # fmt: skip


def _saved_config(path: Path, saved: dict, name: str | None):
    """The experiment and config that ``saved`` (a config.json proven a run's by
    ``RunDir.inspect``) records, each field checked: a one-line CheckpointError if not."""
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
        return exp, from_dict(exp.config, saved["config"])
    except ConfigError as exc:
        raise CheckpointError(f"{config}: {exc}; cannot resume: start a new run") from None


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


def _check_arguments(request: RunRequest) -> None:
    """The arguments whose type Python leaves open, checked as the command line checks them."""
    name = request.experiment
    if name is not None and not isinstance(name, str):
        raise BiaslabError(f"the experiment name must be a string, not {name!r} (see 'biaslab list')")
    for key in ("out", "resume", "runs_dir"):
        value = getattr(request, key)
        if value is None and key != "runs_dir":
            continue
        if isinstance(value, bytes) or not isinstance(value, (str, os.PathLike)):
            option = "{" + key + "}"
            raise OptionError(f"{option} must be a folder's path (a string), not {literal(repr(value))}")
        if not os.fspath(value).strip():
            raise OptionError(
                f"{{{key}}} is empty (an unset shell variable?); name a folder or omit {{{key}}}"
            )
    if request.progress not in PROGRESS_MODES:
        raise BiaslabError(f"progress must be True, False, None or 'lines', not {request.progress!r}")
