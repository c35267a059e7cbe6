"""One run's folder (:class:`RunDir`): made or opened under its lock, its subfolders, config.json,
results.json and the completion marker; its metrics log is :attr:`RunDir.metrics`."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from biaslab.errors import BiaslabError, CheckpointError, DataFormatError
from biaslab.fileio import atomic_write_text, json_safe, remove_temp_files, write_json
from biaslab.locking import DirectoryLock
from biaslab.results import COMPLETE, RESULTS, results_problem
from biaslab.runs.inspection import inspect, is_file, read_object, refuse_occupied
from biaslab.runs.metrics_log import MetricsLog
from biaslab.runs.names import (
    CHECKPOINTS,
    CONFIG,
    FIGURES,
    INDEX,
    LABS,
    LOCK,
    METRICS,
    PROBE,
    REPORT,
    RUN_MARKER,
    TRACEBACK,
    run_fingerprint,
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
        self.metrics = MetricsLog(self.path / METRICS)  # metrics.jsonl and the loggers (--log)

    inspect = staticmethod(inspect)  # config.json of the run at a path, proven a run's; nothing written

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
                refuse_occupied(path)  # checked before the folder (or its parents) is made
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
            refuse_occupied(path)  # again, now that no other biaslab process can write it
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
            expected = inspect(path)
        run = cls(path)
        run.acquire()
        try:
            if inspect(path) != expected:
                raise CheckpointError(f"{run.config_path} changed while the resume was starting; try again")
            run._make_dirs("run directory")
            for folder in (path, run.figures_dir, run.checkpoints_dir):
                remove_temp_files(folder, any_writer=True)
            run.metrics.repair()
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
                test = self.path / PROBE
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
        return self.metrics.path

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
        return is_file(self.config_path)

    @property
    def is_complete(self) -> bool:
        return is_file(self.path / COMPLETE)

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
        return read_object(self.config_path, required, "a biaslab run config")

    def write_results(self, results: dict) -> None:
        write_json(self.results_path, results)

    def read_results(self, required: bool = True, checked: bool = True) -> dict | None:
        """results.json as a dict (None if absent and not ``required``); not a dict is an error,
        and so, when ``checked``, is a file that is not a run's results
        (:func:`~biaslab.results.results_problem`): a one-line DataFormatError. The HTML pages
        read it unchecked: they show whatever it holds, escaped."""
        results = read_object(self.results_path, required, "a biaslab results file")
        problem = None if results is None or not checked else results_problem(results)
        if problem is not None:
            raise DataFormatError(f"{self.results_path} is not a biaslab results file: {problem}")
        return results

    def mark_complete(self) -> None:
        atomic_write_text(self.path / COMPLETE, datetime.now().isoformat(timespec="seconds") + "\n")
