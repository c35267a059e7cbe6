"""The run directory: its file names, its lock, and reading and writing its files.

Layout (see docs/architecture.md)::

    runs/<name>-<YYYYmmdd-HHMMSS>-<seed>/
        config.json      resolved config, seed, profile, package versions
        metrics.jsonl    one JSON object per logged step
        results.json     final figures and each claim beside its measured value; wall-clock
                         measurements apart under "timings" (see reproducible())
        figures/*.png
        report.html      self-contained (figures embedded)
        checkpoints/
        labs/<name>/     (a workshop only) one run directory per lab, and index.html
        traceback.txt    (only after a bug) the full traceback of the internal error
        .lock            held (flock) by the one process that writes the run
        COMPLETE         written last: a run without it is unfinished

Everything that reads or writes these names (the runner, ``biaslab show``, the report, the
index and the workshop) takes them from here, and judges claims with :func:`verdict_of` and
:func:`tally` (defined in :mod:`biaslab.results`, re-exported here), so that there is one
vocabulary of verdicts.

One process writes a run: :meth:`RunDir.create` and :meth:`RunDir.open` take the directory's
lock (:mod:`biaslab.locking`) and the runner releases it. A directory that holds another run's
files without its config.json is refused; a resume clears what a kill interrupted (temporary
files of atomic writes, a metrics line cut short).
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from biaslab.checks import is_integer
from biaslab.errors import BiaslabError, CheckpointError, DataFormatError
from biaslab.fileio import (
    TEMP_NAME,
    as_storage_error,
    atomic_write_text,
    check_run_file_size,
    json_safe,
    read_json,
    remove_temp_files,
    write_json,
)
from biaslab.locking import DirectoryLock
from biaslab.loggers import Sink
from biaslab.results import (  # re-exported: the run directory's readers take them from here
    COMPLETE,
    MODELS,
    RESULTS,
    TIMING_KEYS,
    TIMINGS,
    VERDICTS,
    Tally,
    Verdict,
    reproducible,
    reproducible_record,
    results_problem,
    tally,
    verdict_of,
)

__all__ = [
    "CHECKPOINTS",
    "COMPLETE",
    "CONFIG",
    "FIGURES",
    "INDEX",
    "LABS",
    "LOCK",
    "METRICS",
    "MODELS",
    "REPORT",
    "RESULTS",
    "TIMINGS",
    "TIMING_KEYS",
    "TRACEBACK",
    "VERDICTS",
    "RunDir",
    "Tally",
    "Verdict",
    "atomic_write_text",
    "find_runs",
    "read_json",
    "reproducible",
    "reproducible_record",
    "tally",
    "verdict_of",
    "write_json",
]

# -- file names ------------------------------------------------------------------------------
CONFIG = "config.json"
METRICS = "metrics.jsonl"
REPORT = "report.html"
INDEX = "index.html"
FIGURES = "figures"
CHECKPOINTS = "checkpoints"
LABS = "labs"
TRACEBACK = "traceback.txt"
LOCK = ".lock"
TASKS = "tasks"  # a study's finished tasks (biaslab.scale.tasks)

# Files that only a run writes: found without a config.json, they are another run's leftovers.
RUN_OUTPUTS = (
    COMPLETE,
    RESULTS,
    METRICS,
    REPORT,
    INDEX,
    TRACEBACK,
    FIGURES,
    CHECKPOINTS,
    LABS,
    TASKS,
    MODELS,
)

# config.json's marker: the hash of the keys that fix a run (see run_fingerprint).
RUN_MARKER = "run_fingerprint"
IDENTITY_KEYS = ("experiment", "profile", "seed", "config")  # and "threads", "device" where recorded
_PROBE = ".write-test"


def run_fingerprint(saved: dict) -> str:
    """The hash of what fixes a run: experiment, profile, seed, thread count, device, config and
    the digests of the input files it reads (``biaslab.inputs``).

    Written into config.json as its ``run_fingerprint`` when the run starts; a resume refuses a
    config.json without it (not a biaslab run) or whose fields no longer match it (edited).
    """
    identity = {k: saved.get(k) for k in (*IDENTITY_KEYS, "threads", "device", "inputs") if k in saved}
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _stillborn(path: Path) -> bool:
    """Whether ``path`` holds only what :meth:`RunDir.create` makes before config.json exists
    (the lock, empty figures/ and checkpoints/, the write probe, config.json's temporary
    file): a run that a kill stopped while it was being created, before any work. The lock
    file is there from the start: an empty folder is no run at all."""
    if not (path / LOCK).is_file():
        return False
    for entry in path.iterdir():
        if entry.name in (FIGURES, CHECKPOINTS):
            if not _empty_dir(entry):
                return False
        elif entry.name not in (LOCK, _PROBE) and not (
            TEMP_NAME.match(entry.name) and entry.name.startswith(f".{CONFIG}.")
        ):
            return False
    return True


def _refuse_occupied(path: Path) -> None:
    """Refuse ``path`` as a new run's folder unless it is missing, empty, or holds only what a
    kill left of a run being created. Nothing is written."""
    try:
        if not path.exists():
            return
        if not path.is_dir():
            raise BiaslabError(f"{path} is a file, not a folder; choose another output folder")
        if (path / CONFIG).exists():
            error = BiaslabError(f"{path} already holds a run; resume it, or choose another output folder")
            error.resume = path
            raise error
        if _stillborn(path) or not any(path.iterdir()):
            return
        names = sorted(entry.name for entry in path.iterdir())
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise BiaslabError(f"cannot use output directory {path}: {reason}") from None
    leftovers = [n for n in RUN_OUTPUTS if (path / n).exists() and not _empty_dir(path / n)]
    if leftovers:
        raise BiaslabError(
            f"{path} holds files of another run ({', '.join(leftovers)}) but no config.json; "
            "remove them or choose another output folder"
        )
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    raise BiaslabError(
        f"{path} already holds files ({shown}); a run needs a new or empty folder: "
        "choose another output folder"
    )


def package_versions() -> dict[str, str]:
    import numpy
    import torch

    from biaslab.version import __version__

    return {
        "biaslab": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
    }


class RunDir:
    """One run's directory. Create with :meth:`create` (new) or :meth:`open` (resume)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._made: list[Path] = []  # directories create() made (for discard_if_unused)
        self._made_runs_dir: Path | None = None  # the runs folder create() made, if it did
        self._lock: DirectoryLock | None = None
        self.sinks: list[Sink] = []  # where records go besides metrics.jsonl (``--log``)

    # -- creation -------------------------------------------------------------------------
    @classmethod
    def create(
        cls, name: str, seed: int, out: str | Path | None = None, runs_dir: str | Path = "runs"
    ) -> RunDir:
        """Make a fresh run directory and lock it; refuse one that holds a run or its leftovers.

        The caller must :meth:`release` the run when done (the runner does).
        """
        made_root = made_runs_dir = False
        try:
            if out is None:
                stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
                made_runs_dir = not Path(runs_dir).exists()
                Path(runs_dir).mkdir(parents=True, exist_ok=True)
                path, n = Path(runs_dir) / f"{name}-{stamp}-{seed}", 1
                while True:  # claim the name atomically: two runs in the same second differ
                    try:
                        path.mkdir()
                        break
                    except FileExistsError:
                        n += 1
                        path = Path(runs_dir) / f"{name}-{stamp}-{seed}-{n}"
                made_root = True
            else:
                path = Path(out)
                _refuse_occupied(path)  # checked before the folder (or its parents) is made
                made_root = not path.exists()
                path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            where = Path(runs_dir) if out is None else Path(out)
            raise BiaslabError(f"cannot write to output directory {where}: {exc.strerror or exc}") from None
        run = cls(path)
        run._made = [path] if made_root else []
        run._made_runs_dir = Path(runs_dir) if made_runs_dir else None  # removed with the run if left empty
        try:
            run.acquire()
            _refuse_occupied(path)  # again, now that no other biaslab process can write it
            remove_temp_files(path, any_writer=True)  # a config.json a kill interrupted
            run._made += [p for p in (run.figures_dir, run.checkpoints_dir) if not p.exists()]
            run._make_dirs("output directory", probe=True)
        except BaseException:
            if run._lock is not None:  # never undo a directory another process holds
                run.discard_if_unused()
            run.release()
            raise
        return run

    @classmethod
    def inspect(cls, path: str | Path) -> dict:
        """config.json of the run at ``path``, proven a biaslab run's; nothing is written.

        A folder is a run when its config.json is a JSON object that carries the run's marker,
        ``run_fingerprint``: the hash of what fixes the run (experiment, profile, seed, thread
        count, config; :func:`run_fingerprint`). A folder without it (not a biaslab run), or
        one whose config.json was edited after the run started (the hash no longer matches: a
        resume would append one run's records and checkpoints to another's), is refused with a
        one-line CheckpointError, before anything in it is locked, written or removed.
        """
        path = Path(path)
        config = path / CONFIG
        try:
            if not path.is_dir():
                why = "does not exist" if not path.exists() else "is not a folder"
                raise CheckpointError(f"{path} {why}; cannot resume")
            if not config.is_file():
                if _stillborn(path):
                    raise CheckpointError(
                        f"{path} was stopped while its run was being created, before "
                        "anything was computed: there is nothing to resume; start the run again "
                        "into the same folder, or delete it"
                    )
                raise CheckpointError(f"{path} is not a biaslab run (no {CONFIG}); cannot resume")
        except OSError as exc:  # a name too long, a folder that cannot be read
            raise CheckpointError(
                f"{path} cannot be read ({exc.strerror or type(exc).__name__}); cannot resume"
            ) from None
        saved = cls._read_object(config, True, "a biaslab run config")
        marker = saved.get(RUN_MARKER)
        if marker is None:
            raise CheckpointError(
                f"{config} is not a biaslab run's config (it has no '{RUN_MARKER}': another "
                "program's file, or a run of a biaslab older than 0.2); the folder is left as it is"
            )
        missing = [k for k in IDENTITY_KEYS if k not in saved]
        if missing:
            raise CheckpointError(
                f"{config} lacks {', '.join(missing)}; it is not a complete run config, cannot resume"
            )
        if marker != run_fingerprint(saved):
            raise CheckpointError(
                f"{config} was changed after the run started (its {', '.join(IDENTITY_KEYS)} "
                f"no longer match its '{RUN_MARKER}'); resuming would mix two runs; start a new run"
            )
        return saved

    @classmethod
    def open(cls, path: str | Path, expected: dict | None = None) -> RunDir:
        """An existing run directory, for ``--resume``: proven a run, locked, interrupted writes
        cleared.

        ``expected`` is the config.json that :meth:`inspect` returned and the caller checked
        (default: inspected here); it must still be the file's content once the lock is held.
        Only then are temporary files of atomic writes that a kill interrupted removed, a last
        line of metrics.jsonl that a kill cut short dropped, and an earlier attempt's
        traceback.txt deleted. The caller must :meth:`release` it.
        """
        path = Path(path)
        if expected is None:
            expected = cls.inspect(path)
        run = cls(path)
        run.acquire()
        try:
            if cls.inspect(path) != expected:
                raise CheckpointError(f"{run.config_path} changed while the resume was starting; try again")
            run._make_dirs("run directory")
            for folder in (path, run.figures_dir, run.checkpoints_dir):
                remove_temp_files(folder, any_writer=True)
            run.repair_metrics()
            (path / TRACEBACK).unlink(missing_ok=True)  # an earlier attempt's bug: a new attempt
        except BaseException:
            run.release(restore=True)
            raise
        return run

    # -- the lock: one writer per run directory -------------------------------------------
    def acquire(self) -> None:
        """Take the run directory's exclusive lock (see :class:`~biaslab.locking.DirectoryLock`),
        or raise RunLockedError naming the process that holds it."""
        if self._lock is None:
            lock = DirectoryLock(self.path / LOCK)
            lock.acquire(
                f"{self.path} is in use by {{holder}}; wait for it to finish, or choose another output folder"
            )
            self._lock = lock

    def release(self, restore: bool = False) -> None:
        """Give the lock back (idempotent); ``restore``: the lock file's note as it was found
        (a refused attempt)."""
        if self._lock is not None:
            self._lock.release(restore)
            self._lock = None

    def _make_dirs(self, what: str, probe: bool = False) -> None:
        """Make figures/ and checkpoints/ (and the run directory); optionally prove it writable."""
        try:
            self.figures_dir.mkdir(parents=True, exist_ok=True)
            self.checkpoints_dir.mkdir(exist_ok=True)
            if probe:
                test = self.path / _PROBE
                test.write_text("")
                test.unlink()
        except OSError as exc:
            reason = exc.strerror or exc.__class__.__name__
            raise BiaslabError(f"cannot write to {what} {self.path}: {reason}") from None

    def discard_if_unused(self) -> bool:
        """Undo :meth:`create` for a run that failed before writing anything but config.json.

        Such a run (a bad config value caught by the experiment, a loss that diverged in its first
        epoch) has nothing to resume; leaving it would make the same ``--out`` refuse a corrected
        run. Only what :meth:`create` made is removed; a directory opened for resume, or one with
        metrics, checkpoints, figures or any other file in it, is kept. Returns True if removed.
        """
        if not self._made:
            return False
        try:
            own = {CONFIG, LOCK}
            extra = [p for p in self.path.iterdir() if p.name not in own and p not in self._made]
            if extra or any(any(d.iterdir()) for d in self._made if d != self.path):
                return False
            self.config_path.unlink(missing_ok=True)
            (self.path / LOCK).unlink(missing_ok=True)
            for d in reversed(self._made):  # subdirectories first, then the run directory
                if d.exists():  # (create may have failed before making them all)
                    d.rmdir()
            parent = self._made_runs_dir
            if parent is not None and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()  # a refusal leaves no empty runs/ behind
        except OSError:
            return False
        self._made = []
        return True

    # -- files ----------------------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.path / CONFIG

    @property
    def results_path(self) -> Path:
        return self.path / RESULTS

    @property
    def metrics_path(self) -> Path:
        return self.path / METRICS

    @property
    def report_path(self) -> Path:
        return self.path / REPORT

    @property
    def index_path(self) -> Path:
        return self.path / INDEX

    @property
    def figures_dir(self) -> Path:
        return self.path / FIGURES

    @property
    def checkpoints_dir(self) -> Path:
        return self.path / CHECKPOINTS

    @property
    def labs_dir(self) -> Path:
        return self.path / LABS

    @property
    def is_run(self) -> bool:
        """Whether the directory holds a run (a config.json); False for a path that cannot be
        looked at (a name too long for the file system, a folder without read permission)."""
        return _is_file(self.config_path)

    @property
    def is_complete(self) -> bool:
        return _is_file(self.path / COMPLETE)

    @property
    def status(self) -> str:
        """``"complete"`` or ``"unfinished"``."""
        return "complete" if self.is_complete else "unfinished"

    def write_config(
        self,
        experiment: str,
        profile: str,
        seed: int,
        config: dict,
        command: str,
        threads: int | None = None,
        log: Sequence[str] = (),
        device: str | None = None,
        executor: dict | None = None,
        inputs: dict | None = None,
    ) -> None:
        """Write config.json: what fixes the run (experiment, profile, seed, config, the thread
        count and the device, for a seed fixes a CPU run bit for bit for a given count, and a
        run on another device computes other bits), with versions; and how it runs (its
        loggers, the executor of its tasks), which a resume may change."""
        identity = {
            "experiment": experiment,
            "profile": profile,
            "seed": seed,
            **({} if threads is None else {"threads": threads}),
            **({} if device is None else {"device": device}),
            "config": json_safe(config),
            **({"inputs": inputs} if inputs else {}),  # the files it reads, by their contents
        }
        write_json(
            self.config_path,
            {
                **identity,
                "versions": package_versions(),
                "created": datetime.now().isoformat(timespec="seconds"),
                "command": command,
                **({"log": list(log)} if log else {}),  # loggers: how the run reports, not what it is
                **({"executor": {k: v for k, v in executor.items() if v is not None}} if executor else {}),
                RUN_MARKER: run_fingerprint(identity),
            },
        )

    def read_config(self, required: bool = True) -> dict | None:
        """config.json as a dict (None if absent and not ``required``); not a dict is an error."""
        return self._read_object(self.config_path, required, "a biaslab run config")

    def write_results(self, results: dict) -> None:
        write_json(self.results_path, results)

    def read_results(self, required: bool = True, checked: bool = True) -> dict | None:
        """results.json as a dict (None if absent and not ``required``); not a dict is an error,
        and so, when ``checked``, is a file that is not a run's results
        (:func:`~biaslab.results.results_problem`): a one-line DataFormatError. The HTML pages
        read it unchecked: they show whatever it holds, escaped."""
        results = self._read_object(self.results_path, required, "a biaslab results file")
        problem = None if results is None or not checked else results_problem(results)
        if problem is not None:
            raise DataFormatError(f"{self.results_path} is not a biaslab results file: {problem}")
        return results

    @staticmethod
    def _read_object(path: Path, required: bool, what: str) -> dict | None:
        if not required and not path.is_file():
            return None
        data = read_json(path)
        if not isinstance(data, dict):
            raise BiaslabError(f"{path} is not {what} (a JSON {type(data).__name__}, not an object)")
        return data

    def mark_complete(self) -> None:
        atomic_write_text(self.path / COMPLETE, datetime.now().isoformat(timespec="seconds") + "\n")

    # -- metrics log ----------------------------------------------------------------------
    def log(self, record: dict) -> None:
        """Append one JSON object to metrics.jsonl (one line, flushed)."""
        record = json_safe({"time": round(time.time(), 3), **record})
        line = json.dumps(record)
        try:
            with open(self.metrics_path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        except OSError as exc:
            raise (as_storage_error(exc, self.metrics_path) or exc) from None
        for sink in self.sinks:
            sink.log(record)

    def close_sinks(self) -> None:
        """Hand every sink the whole log and close it (the end of an attempt)."""
        sinks, self.sinks = self.sinks, []
        if sinks:
            records = self.read_metrics()
            for sink in sinks:
                sink.close(records)

    def _metrics_records(self) -> list[tuple[str, dict]]:
        """metrics.jsonl's complete lines, each with the JSON object it holds.

        A last line without its newline (a kill cut it short) is left out; any other bad line,
        or bytes that are not UTF-8, is a one-line DataFormatError naming the file and the line.
        """
        if not self.metrics_path.exists():
            return []
        check_run_file_size(self.metrics_path)
        try:
            data = self.metrics_path.read_bytes()
        except OSError as exc:
            raise (as_storage_error(exc, self.metrics_path, "read") or exc) from None
        lines = data.split(b"\n")
        lines.pop()  # after the last newline: empty, or a line cut short
        records = []
        for number, raw in enumerate(lines, start=1):
            try:
                text = raw.decode("utf-8")
                record = json.loads(text)
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
                what = _malformed_field(record)
            except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
                what = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "not a JSON object"
            if what is not None:
                error = DataFormatError(
                    f"{self.metrics_path} line {number} is {what}: the log is corrupt; delete "
                    "that line (or the file, losing the log) and resume"
                )
                error.resume = self.path
                raise error
            records.append((text, record))
        return records

    def _keep_metrics(self, keep: Callable[[dict], bool]) -> None:
        """Rewrite metrics.jsonl with the complete records ``keep`` accepts (a line cut short
        by a kill never is); the file is left alone when that would change nothing."""
        if not self.metrics_path.exists():
            return
        kept = [text for text, record in self._metrics_records() if keep(record)]
        if self.metrics_path.stat().st_size != sum(len(text.encode()) + 1 for text in kept):
            atomic_write_text(self.metrics_path, "".join(text + "\n" for text in kept))

    def repair_metrics(self) -> None:
        """Drop a last line that a kill cut short (it would glue onto the next record)."""
        self._keep_metrics(lambda record: True)

    def rewind_metrics(self, tag: str, step: int) -> None:
        """Drop records of training ``tag`` logged after ``step`` (work that a resume will redo),
        here and in every sink."""
        self._keep_metrics(lambda record: record.get("tag") != tag or record.get("step", 0) <= step)
        for sink in self.sinks:
            sink.rewind(tag, step)

    def drop_metrics(self, tags: Sequence[str]) -> None:
        """Drop every record of trainings ``tags`` (a task that runs again logs them anew)."""
        tags = set(tags)
        if tags and self.metrics_path.exists():
            self._keep_metrics(lambda record: record.get("tag") not in tags)
            for sink in self.sinks:
                for tag in tags:
                    sink.rewind(tag, -1)

    def read_metrics(self) -> list[dict]:
        """Every record of metrics.jsonl (a last line cut short by a kill is left out)."""
        return [record for _, record in self._metrics_records()]


def _malformed_field(record: dict) -> str | None:
    """What is wrong with a metrics record's bookkeeping fields (a resume rewinds by them), or
    None: ``tag`` is text, ``step`` and ``epoch`` whole numbers of at least 0."""
    if "tag" in record and not isinstance(record["tag"], str):
        return f"a record whose tag is {record['tag']!r}, not text"
    for key in ("step", "epoch"):
        value = record.get(key, 0)
        if not is_integer(value) or value < 0:
            return f"a record whose {key} is {value!r}, not a whole number >= 0"
    return None


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _empty_dir(path: Path) -> bool:
    return path.is_dir() and not any(path.iterdir())


def find_runs(root: Path, depth: int = 3) -> list[Path]:
    """Run directories (holding config.json) under ``root``, up to ``depth`` levels down.

    Three levels reach a workshop's labs (``<run>/labs/<name>/``). Hidden folders are skipped.
    """
    found: list[Path] = []
    try:
        children = sorted(p for p in Path(root).iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return found
    for child in children:
        if (child / CONFIG).is_file():
            found.append(child)
        if depth > 1:
            found += find_runs(child, depth - 1)
    return found
