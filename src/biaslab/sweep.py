"""Seeds and grids: one lab run for every combination of config values and seeds, as tasks.

``biaslab run NAME --seeds 0-4 --set lr=1e-3,3e-3 --set batch_size=64,128`` runs the product (2 x
2 x 5 = 20 runs) under one sweep directory, one complete run directory each, named by what it
changes (``lr=0.001,batch_size=64,seed=0``). The runs are the executor's tasks
(:mod:`biaslab.scale.executors`): serial, local worker processes or a Ray cluster, each run
computing on its own. A worker on the driver's machine writes its run straight into the sweep
directory (a resumed sweep goes on inside an unfinished run); a worker elsewhere runs it in a
folder of its own and returns its files (checkpoints left out), which the driver writes: no
shared storage is needed.

The sweep's ``index.html`` lists the runs, those of one configuration in one row (mean ± std of
each metric over the seeds, each claim held in k of n); ``sweep.json`` holds the request and
``sweep-results.json`` the aggregate: per configuration its metrics' means and standard
deviations, its claims' tallies and, with ``select`` naming a validation metric, the best
configuration chosen by that metric alone (the test metrics never choose).
"""

from __future__ import annotations

import itertools
import shutil
import socket
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biaslab.better import better
from biaslab.errors import BiaslabError, ConfigError
from biaslab.fileio import atomic_write_bytes, read_json, write_json
from biaslab.formatting import tell
from biaslab.locking import DirectoryLock
from biaslab.results import finite_number, mean_std, verdict_of
from biaslab.runs import CHECKPOINTS, COMPLETE, RESULTS
from biaslab.scale.tasks import failure, on_driver_machine, one_error

SWEEP = "sweep.json"
SWEEP_RESULTS = "sweep-results.json"


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` -> [0, 1, 2, 3, 4]; ``"0,3,7"``; ``"0-2,9"``. One line for anything else."""
    seeds: list[int] = []
    for part in str(text).split(","):
        low, dash, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high) if dash else int(low)
        except ValueError:
            raise ConfigError(f"--seeds {text!r}: give seeds as 0-4, 0,3,7 or 0-2,9") from None
        if first < 0 or last < first or last - first > 10_000:
            raise ConfigError(f"--seeds {text!r}: a range runs from a seed >= 0 up to a larger one")
        seeds += range(first, last + 1)
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"--seeds {text!r} names a seed twice")
    return seeds


def list_keys(config_cls) -> list[str]:
    """The config keys whose value is a list (a tuple field): their commas belong to one value."""
    from biaslab.config import field_types

    return [key for key, tp in field_types(config_cls).items() if "tuple" in str(tp)]


def grid_of(sets: Mapping[str, str], tuple_keys: Sequence[str]) -> dict[str, list[str]]:
    """``--set`` values as a grid: ``lr=1e-3,3e-3`` is two values of ``lr``; a list key's own commas
    stay (``train_sizes=100,200``), its alternatives are separated by ``;`` (``100,200;300,400``)."""
    return {key: value.split(";" if key in tuple_keys else ",") for key, value in sets.items()}


@dataclass(frozen=True)
class MemberSpec:
    """One run of a sweep, as a worker receives it."""

    experiment: str
    profile: str
    overrides: tuple[tuple[str, str], ...]
    seed: int
    threads: int
    device: str
    folder: str  # its run directory in the sweep directory
    host: str  # the driver's machine

    @property
    def name(self) -> str:
        return Path(self.folder).name

    @property
    def label(self) -> str:
        return self.name


def member_name(overrides: Mapping[str, str], seed: int, varying: Sequence[str]) -> str:
    """A run's folder: the values it changes (keys given one value, the same for all, left out)."""
    parts = [f"{key}={value}" for key, value in overrides.items() if key in varying] + [f"seed={seed}"]
    return ",".join(parts).replace("/", "_").replace(" ", "_")


def run_member(spec: MemberSpec) -> dict:
    """Run (or go on with) one run of the sweep where it is; its files come back when the sweep
    directory is not on this machine."""
    from biaslab.runner import run

    start = time.perf_counter()
    folder = Path(spec.folder)
    local = on_driver_machine(spec.host, folder.parent)
    target = folder if local else Path(tempfile.mkdtemp(prefix="biaslab-sweep-")) / spec.name
    try:
        if (target / "config.json").exists():
            run(resume=target, progress=False)
        else:
            run(spec.experiment, dict(spec.overrides), profile=spec.profile, seed=spec.seed, out=target,
                threads=spec.threads, device=spec.device, progress=False)  # fmt: skip
        files = {} if local else _files_of(target)
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        return {"error": failure(error), "seconds": time.perf_counter() - start}
    finally:
        if not local:
            shutil.rmtree(target.parent, ignore_errors=True)
    return {"result": {}, "files": files, "trained": [], "seconds": time.perf_counter() - start}


def _files_of(folder: Path) -> dict[str, bytes]:
    """A finished run's files by relative path, its checkpoints and lock left out."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != ".lock" and CHECKPOINTS not in path.relative_to(folder).parts
    }


def run_sweep(
    experiment: str,
    grid: Mapping[str, Sequence[str]],
    seeds: Sequence[int],
    *,
    profile: str,
    folder: Path,
    executor,
    threads: int,
    device: str,
    select: str | None = None,
    command: str = "",
) -> dict:
    """Every combination of ``grid``'s values and ``seeds`` as a run in ``folder`` (new, or a sweep
    to go on with); returns the aggregate written to sweep-results.json."""
    folder.mkdir(parents=True, exist_ok=True)
    lock = DirectoryLock(folder / ".lock")
    lock.acquire(f"{folder} is a sweep in progress: {{holder}}")
    try:
        request = {
            "experiment": experiment,
            "profile": profile,
            "grid": {k: list(v) for k, v in grid.items()},
            "seeds": list(seeds),
            "select": select,
            "threads": threads,
            "device": device,
        }
        saved = read_json(folder / SWEEP) if (folder / SWEEP).exists() else None
        if saved is not None and {k: saved.get(k) for k in request} != request:
            raise BiaslabError(f"{folder} holds another sweep ({saved.get('command')}): name a new folder")
        request["command"] = saved["command"] if saved else command
        write_json(folder / SWEEP, request)
        combos = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
        varying = [key for key, values in grid.items() if len(values) > 1]
        host = socket.gethostname()
        specs = [
            MemberSpec(experiment, profile, tuple(combo.items()), seed, threads, device,
                       str(folder / member_name(combo, seed, varying)), host)
            for combo in combos for seed in seeds
        ]  # fmt: skip
        pending = [spec for spec in specs if not (Path(spec.folder) / COMPLETE).exists()]
        failures = []

        def receive(spec: MemberSpec, outcome: dict) -> None:
            done = len(specs) - len(pending) + len(received) + 1
            received.append(spec)
            if "error" in outcome:
                failures.append((spec, outcome["error"]))
                tell(f"run {done}/{len(specs)} failed: {spec.name}: {outcome['error']['message']}")
                return
            for relative, data in outcome["files"].items():
                atomic_write_bytes(Path(spec.folder) / relative, data)
            tell(f"run {done}/{len(specs)} done: {spec.name} ({outcome['seconds']:.1f} s)")

        received: list[MemberSpec] = []
        if pending:
            executor.run(pending, receive, run_member)
        summary = aggregate(folder, specs, combos, select, varying)
        tables = add_sweep_tables(experiment, folder, summary)
        write_json(folder / SWEEP_RESULTS, summary)
        from biaslab.report.html import render_index

        render_index(folder, title=f"sweep of {experiment}", tables=tables)
        if failures:
            spec, first = failures[0]
            text = f"{len(failures)} of {len(specs)} runs failed ({spec.name}: {first['message']})"
            raise one_error(text, [error for _, error in failures])
        return summary
    finally:
        lock.release()


def aggregate(
    folder: Path,
    specs: Sequence[MemberSpec],
    combos: list[dict],
    select: str | None,
    varying: Sequence[str] = (),
) -> dict:
    """Per configuration: its runs, each numeric metric's mean and standard deviation over the seeds
    (with its name, dimensions and direction where the lab recorded them: :mod:`biaslab.records`),
    each claim held k of n; the best configuration by ``select`` (a validation metric) alone, in
    the direction its record declares (else :func:`~biaslab.better.better`'s rule)."""
    configurations = []
    for combo in combos:
        runs = [s for s in specs if dict(s.overrides) == combo and (Path(s.folder) / RESULTS).exists()]
        results = [read_json(Path(s.folder) / RESULTS) for s in runs]
        metrics: dict[str, dict[str, float]] = {}
        keys = sorted({k for r in results for k, v in r["metrics"].items() if finite_number(v)})
        described = {rec["key"]: rec for r in results for rec in r.get("records", [])}  # by its dimensions
        for key in keys:
            values = [r["metrics"][key] for r in results if finite_number(r["metrics"].get(key))]
            mean, std = mean_std(values)
            metrics[key] = {"mean": mean, "std": std, "n": len(values)}
            if key in described:
                metrics[key] |= {k: described[key][k] for k in ("name", "dims", "better")}
        claims: dict[str, dict[str, int]] = {}
        for result in results:
            for claim in result["claims"]:
                tally = claims.setdefault(claim["claim"], {"held": 0, "judged": 0, "runs": 0})
                tally["runs"] += 1
                tally["judged"] += verdict_of(claim) in ("pass", "fail")
                tally["held"] += verdict_of(claim) == "pass"
        shown = {k: v for k, v in combo.items() if k in varying}  # what sets it apart
        configurations.append({"config": shown, "runs": [Path(s.folder).name for s in runs],
                               "metrics": metrics, "claims": claims})  # fmt: skip
    summary: dict[str, Any] = {"configurations": configurations, "select": select, "best": None}
    if select:
        scored = [c for c in configurations if select in c["metrics"]]
        if scored:
            lower = scored[0]["metrics"][select].get("better", better(select)) == "lower"
            best = (min if lower else max)(scored, key=lambda c: c["metrics"][select]["mean"])
            rule = f"{'lowest' if lower else 'highest'} mean {select} over the seeds"
            summary["best"] = {"config": best["config"], select: best["metrics"][select], "rule": rule}
    return summary


def add_sweep_tables(experiment: str, folder: Path, summary: dict) -> list[dict]:
    """The experiment's own tables of each configuration's finished runs
    (:attr:`~biaslab.registry.Experiment.sweep_tables`; compare: its leaderboard over the
    seeds), kept in each configuration's ``tables``; returns them all, each titled with its
    configuration when the sweep has several."""
    from biaslab import registry

    make = registry.get(experiment).sweep_tables
    every = []
    for configuration in summary["configurations"]:
        if make is None or not configuration["runs"]:
            continue
        configuration["tables"] = make([folder / name for name in configuration["runs"]])
        shown = ", ".join(f"{k}={v}" for k, v in configuration["config"].items())
        every += [
            {**t, "title": f"{t['title']}: {shown}" if shown else t["title"]} for t in configuration["tables"]
        ]
    return every


def check_select(select: str | None) -> None:
    """Only a validation metric chooses a configuration: the test set is read once, never to choose."""
    if select is not None and "val" not in select.split("_"):
        raise ConfigError(
            f"--select {select!r}: the best configuration is chosen on a validation metric (a key with "
            "'val' in it, e.g. val_accuracy), never on a test metric"
        )


def start(
    name: str | None,
    sets: Mapping[str, str],
    seeds: str | None,
    *,
    profile: str | None,
    out: str | None,
    runs_dir: str,
    resume: str | None,
    executor: str | None,
    workers: int | None,
    address: str | None,
    threads,
    device: str | None,
    select: str | None,
    command: str,
) -> tuple[Path, dict]:
    """A sweep from the command line's options, every value checked before anything is written
    (one line); or, with ``resume``, the sweep in that folder taken up again."""
    from datetime import datetime

    from biaslab import registry
    from biaslab.config import check_seed
    from biaslab.hardware import make_deterministic
    from biaslab.request import check_machine
    from biaslab.scale.executors import check_executor, make_executor

    executor = executor or "serial"
    if resume is not None:
        check_executor(executor, workers, address)
        request = read_json(Path(resume) / SWEEP)
        name, grid, seed_list = request["experiment"], request["grid"], request["seeds"]
        profile, select, device = request["profile"], request["select"], request["device"]
        threads = request["threads"]
        folder = Path(resume)
    else:
        if name is None:
            raise BiaslabError("name an experiment to sweep (see 'biaslab list')")
        exp = registry.get(name)
        profile = profile or "default"
        check_select(select)
        seed_list = parse_seeds(seeds) if seeds is not None else [0]
        for seed in seed_list:
            check_seed(seed)
        grid = grid_of(sets, list_keys(exp.config))
        for values in itertools.product(*grid.values()):
            exp.make_config(profile, dict(zip(grid, values)))  # each combination checked: one line
        machine = check_machine(executor, workers, address, threads, device)
        threads, device = machine.threads, machine.device
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        folder = Path(out) if out else Path(runs_dir) / f"{name}-sweep-{stamp}"
        if folder.exists() and any(folder.iterdir()):
            raise BiaslabError(f"{folder} is not empty: name a new folder, or continue a sweep with --resume")
    make_deterministic(device)
    runner = make_executor(executor, workers, address, threads, device)
    try:
        summary = run_sweep(name, grid, seed_list, profile=profile, folder=folder, executor=runner,
                            threads=threads, device=device, select=select, command=command)  # fmt: skip
    finally:
        runner.close()
    return folder, summary


def summary_lines(folder: Path, summary: dict) -> list[str]:
    """What the command line prints: a line per configuration, the best, where the index is."""
    select, lines = summary["select"], []
    for configuration in summary["configurations"]:
        config = ", ".join(f"{k}={v}" for k, v in configuration["config"].items()) or "(the config as given)"
        held = sum(t["held"] for t in configuration["claims"].values())
        judged = sum(t["judged"] for t in configuration["claims"].values())
        text = f"{config}: {len(configuration['runs'])} run(s), claims held {held} of {judged} judged"
        if select and select in configuration["metrics"]:
            m = configuration["metrics"][select]
            text += f"; {select} {m['mean']:.4g} ± {m['std']:.2g}"
        lines.append(text)
        for table in configuration.get("tables", []):
            lines += [f"  {table['title']}:", *(f"    {line}" for line in table.get("lines", []))]
    if summary["best"] is not None:
        best = ", ".join(f"{k}={v}" for k, v in summary["best"]["config"].items())
        lines.append(f"best on validation ({summary['best']['rule']}): {best}")
    lines.append(f"index: {folder / 'index.html'}")
    return lines
