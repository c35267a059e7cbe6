"""A lab's fits as keyed tasks: each seeded by its key, its result saved on its own, in any order.

A study (a lab over models, sizes and seeds) is a set of independent fits. A lab hands them to
``ctx.tasks(fn, keys)``: ``fn(task, *key)`` is a module-level function (a worker imports it by
name) that trains and measures one fit with the :class:`~biaslab.scale.context.TaskContext`
``task`` and returns plain data (numbers, text, lists, dicts). The executor runs the tasks
(:mod:`biaslab.scale.executors`); the driver, the process that runs the lab, receives each
result and writes it atomically to ``tasks/<fn>/<key>.json`` in the run directory. A resumed run
reads the finished tasks back and runs only the others.

Results return to the driver, so workers need no storage they share with it: a worker on the
driver's machine writes its trainings' checkpoints into the run directory (a resumed task goes on
from its last epoch), a worker elsewhere keeps none (a task that dies restarts from its beginning).

What fixes a task's numbers is its key, the run's seed and config, and the threads it computes
on: before ``fn`` runs, every global generator is seeded from the key, and the trainings it sets
up are seeded by their tags. On the CPU a task gives the same bits in every process and in every
order for a given thread count per task (torch splits its sums by thread, so another count gives
other rounding: the run's config.json records the count, and a resume reuses it).

The pieces: :class:`TaskSpec` (a task, picklable), :func:`run_task` (a worker's side: its threads,
deterministic kernels, every global generator seeded from the key, the fit, and its outcome or
its failure as data) and :class:`Study` (the driver's side: finished tasks read back from
``tasks/<fn>/<key>.json``, the others run by the executor, each outcome saved atomically as it
arrives and its records appended to metrics.jsonl once). A failed task's traceback is saved as
``<key>.traceback.txt``; the other tasks finish, then one error is raised: a
:class:`~biaslab.errors.BiaslabError` when every failure is bad input (exit 2), else
:class:`TasksFailed` (a bug, exit 1).
"""

from __future__ import annotations

import json
import re
import socket
import time
import traceback
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biaslab.errors import BiaslabError
from biaslab.fileio import atomic_write_bytes, atomic_write_text, check_run_file_size
from biaslab.hardware import make_deterministic, use_threads
from biaslab.results import lab_file
from biaslab.runs import CHECKPOINTS, TASKS
from biaslab.scale.context import RecordFile, TaskContext
from biaslab.train.seed import derive_seed, seed_everything

MAX_ATTEMPTS = 3  # a task whose worker dies is run again, up to this many attempts in all


@dataclass(frozen=True)
class TaskSpec:
    """Everything a worker needs to run one task, picklable (the config's class and ``fn`` are
    module-level, so a worker imports them by name)."""

    fn: Callable[..., Any]
    key: tuple
    experiment: str
    cfg: Any
    seed: int
    profile: str
    device: str
    threads: int
    progress: bool | str | None
    run_dir: str
    host: str  # the driver's machine: a worker there uses the run directory

    @property
    def group(self) -> str:
        return self.fn.__name__

    @property
    def name(self) -> str:
        return task_name(self.key)

    @property
    def label(self) -> str:
        return f"{self.group} {self.name}"


Receive = Callable[[TaskSpec, dict], None]  # an executor hands each outcome to the driver


def task_name(key: tuple) -> str:
    """A task's file name: its key's parts joined by ``-``, anything but letters, digits, ``.``,
    ``_``, ``=`` and ``+`` replaced by ``_``."""
    return "-".join(re.sub(r"[^A-Za-z0-9._=+]", "_", str(part)) for part in key)


def plain(value: Any) -> Any:
    """``value`` as JSON's types: NumPy and torch scalars as numbers, arrays and tuples as lists,
    dict keys as text; nan and inf stay floats (the task files hold them as NaN / Infinity)."""
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    elif hasattr(value, "tolist") and callable(value.tolist):
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a task returned {type(value).__name__}; return numbers, text, lists and dicts")


def on_driver_machine(host: str, folder: Path) -> bool:
    """Whether this process runs on the driver's machine ``host``, where ``folder`` exists: a worker
    there writes into the run's folders, one elsewhere returns everything to the driver."""
    return socket.gethostname() == host and folder.is_dir()


def run_task(spec: TaskSpec) -> dict:
    """Run one task where it is (the driver's process or a worker) and return its outcome:
    ``{"result", "records", "trained", "files", "seconds"}`` (``files``: what it saved with
    ``task.save_file``), or ``{"error": {...}}`` if it raised."""
    folder = Path(spec.run_dir)
    local = on_driver_machine(spec.host, folder)
    records_path = folder / TASKS / spec.group / f"{spec.name}.metrics.jsonl" if local else None
    if records_path is not None:
        records_path.parent.mkdir(parents=True, exist_ok=True)
    records = RecordFile(records_path)
    task = TaskContext(
        spec.experiment, spec.cfg, spec.seed, spec.profile, spec.device, spec.progress,
        folder / CHECKPOINTS if local else None, records=records,
    )  # fmt: skip
    start = time.perf_counter()
    try:
        with use_threads(spec.threads):
            make_deterministic(spec.device)
            seed_everything(derive_seed(spec.seed, spec.experiment, "task", spec.group, *map(str, spec.key)))
            result = plain(spec.fn(task, *spec.key))
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # reported to the driver as data: the other tasks go on
        return {"error": failure(error), "seconds": time.perf_counter() - start}
    return {
        "result": result,
        "records": records.records,
        "trained": task._trained,
        "files": task.files,
        "seconds": time.perf_counter() - start,
    }


def failure(error: BaseException) -> dict:
    """A task's exception as data: its one line, whether the user can fix it, its traceback."""
    return {
        "message": f"{type(error).__name__}: {error}" if not isinstance(error, BiaslabError) else str(error),
        "user_error": isinstance(error, BiaslabError),
        "traceback": "".join(traceback.format_exception(error)),
    }


def died(spec: TaskSpec, attempts: int) -> dict:
    """The outcome of a task whose worker died at every attempt."""
    message = f"the worker running it died {attempts} times (killed, or out of memory?)"
    return {"error": {"message": message, "user_error": False, "traceback": message + "\n"}, "seconds": 0.0}


class TasksFailed(RuntimeError):
    """Some of a study's tasks raised a bug: the others finished, each failure's traceback is saved."""


def one_error(text: str, errors: Sequence[dict]) -> Exception:
    """The error for a study whose tasks failed with ``errors`` (``failure``'s): a BiaslabError
    when the user can fix every one (exit 2), else :class:`TasksFailed` (a bug: exit 1)."""
    return BiaslabError(text) if all(error["user_error"] for error in errors) else TasksFailed(text)


class Study:
    """The driver's side of ``ctx.tasks``: finished tasks read back, the others run by the
    executor, each outcome saved as it arrives.

    Args:
        run: the run directory (a ``RunDir``).
        executor: runs the tasks (``biaslab.scale.executors``).
        say: a line of progress, or None for silence.
    """

    def __init__(self, run, executor, say: Callable[[str], None] | None = None):
        self.run, self.executor, self.say = run, executor, say
        self.trained: list[str] = []

    def folder(self, spec: TaskSpec) -> Path:
        return self.run.path / TASKS / spec.group

    def run_all(self, specs: Sequence[TaskSpec]) -> dict[Hashable, Any]:
        """Every spec's result by key, in the order given; finished ones read from their files."""
        names = [spec.name for spec in specs]
        if len(set(names)) != len(names) or len({spec.key for spec in specs}) != len(specs):
            repeated = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"tasks share the names {repeated}: give each a distinct key")
        results: dict[Hashable, Any] = {}
        pending = []
        for spec in specs:
            saved = self.read(spec)
            if saved is None:
                pending.append(spec)
            else:
                results[spec.key] = saved["result"]
                self.trained += saved.get("trained", [])
        failures: list[tuple[TaskSpec, dict]] = []
        done = [0]

        def receive(spec: TaskSpec, outcome: dict) -> None:
            done[0] += 1
            if "error" in outcome:
                failures.append((spec, outcome["error"]))
                self.save_failure(spec, outcome["error"])
                self.tell(
                    f"task {done[0]}/{len(pending)} failed: {spec.label}: {outcome['error']['message']}"
                )
                return
            self.save(spec, outcome)
            results[spec.key] = outcome["result"]
            self.trained += outcome["trained"]
            self.tell(f"task {done[0]}/{len(pending)} done: {spec.label} ({outcome['seconds']:.1f} s)")

        if pending:
            self.executor.run(pending, receive)
        if failures:
            raise self.failed(failures, len(specs))
        return {spec.key: results[spec.key] for spec in specs}

    def tell(self, line: str) -> None:
        if self.say is not None:
            self.say(line)

    def read(self, spec: TaskSpec) -> dict | None:
        path = self.folder(spec) / f"{spec.name}.json"
        if not path.exists():
            return None
        try:
            check_run_file_size(path)
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, BiaslabError):
            return None  # unreadable: the task runs again
        return saved if isinstance(saved, dict) and saved.get("key") == plain(spec.key) else None

    def save(self, spec: TaskSpec, outcome: dict) -> None:
        """The task's own files (``task.save_file``), then its records into metrics.jsonl (once: a
        rerun's replace a killed attempt's), then its result file, atomically; then its own record
        file goes. The result file is written last: a task read back has its files."""
        for relative, data in outcome.get("files", {}).items():
            atomic_write_bytes(self.run.path / lab_file(relative), data)
        self.run.metrics.drop(outcome["trained"])
        for record in outcome["records"]:
            self.run.metrics.log({k: v for k, v in record.items() if k != "time"})
        folder = self.folder(spec)
        text = json.dumps(
            {"key": plain(spec.key), "result": outcome["result"], "trained": outcome["trained"],
             "seconds": round(outcome["seconds"], 3)},
            allow_nan=True,
        )  # fmt: skip
        atomic_write_text(folder / f"{spec.name}.json", text + "\n")
        (folder / f"{spec.name}.metrics.jsonl").unlink(missing_ok=True)
        (folder / f"{spec.name}.traceback.txt").unlink(missing_ok=True)

    def save_failure(self, spec: TaskSpec, error: dict) -> None:
        atomic_write_text(self.folder(spec) / f"{spec.name}.traceback.txt", error["traceback"])

    def failed(self, failures: list[tuple[TaskSpec, dict]], total: int) -> Exception:
        """One error for the failed tasks: a BiaslabError when the user can fix every one (exit 2),
        else :class:`TasksFailed` (a bug: exit 1); the first failure's line, where the others are."""
        spec, first = failures[0]
        where = self.folder(spec).relative_to(self.run.path)
        text = (
            f"{len(failures)} of {total} tasks failed ({', '.join(s.label for s, _ in failures[:5])}"
            f"{', ...' if len(failures) > 5 else ''}); the first: {first['message']}; "
            f"tracebacks in {where}/<task>.traceback.txt"
        )
        return one_error(text, [error for _, error in failures])
