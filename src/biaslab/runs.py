"""The run directory: atomic files, the metrics log and the completion marker.

Layout (see docs/architecture.md)::

    runs/<name>-<YYYYmmdd-HHMMSS>-<seed>/
        config.json      resolved config, seed, profile, package versions
        metrics.jsonl    one JSON object per logged step
        results.json     final figures and each claim beside its measured value
        figures/*.png
        report.html      self-contained (figures embedded)
        checkpoints/
        COMPLETE         written last: a run without it is unfinished
"""

from __future__ import annotations

import json
import math
import platform
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from biaslab.data.store import atomic_write_bytes
from biaslab.errors import BiaslabError, CheckpointError

COMPLETE = "COMPLETE"


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` via a temporary file and a rename: never half-written."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _json_safe(value: Any) -> Any:
    """Floats that JSON cannot hold (nan, inf) become strings; numpy scalars become Python
    numbers and arrays (numpy or torch) become lists."""
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    elif hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays, tensors
        value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(_json_safe(data), indent=2) + "\n")


def read_json(path: Path) -> Any:
    """Parse a JSON file; a missing, unreadable or malformed file is a one-line BiaslabError."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BiaslabError(f"{path} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BiaslabError(f"{path} is not valid JSON ({exc})") from None
    except OSError as exc:
        raise BiaslabError(f"{path} cannot be read ({exc.strerror or type(exc).__name__})") from None


def package_versions() -> dict[str, str]:
    import numpy
    import torch

    from biaslab import __version__

    return {"biaslab": __version__, "python": platform.python_version(),
            "torch": torch.__version__, "numpy": numpy.__version__}


class RunDir:
    """One run's directory. Create with :meth:`create` (new) or :meth:`open` (resume)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._made: list[Path] = []  # directories create() made (for discard_if_unused)

    # -- creation -------------------------------------------------------------------------
    @classmethod
    def create(cls, name: str, seed: int, out: str | Path | None = None,
               runs_dir: str | Path = "runs") -> "RunDir":
        """Make a fresh run directory; refuse one that already holds a run."""
        if out is None:
            stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
            path = Path(runs_dir) / f"{name}-{stamp}-{seed}"
            n = 1
            while path.exists():  # two runs in the same second
                n += 1
                path = Path(runs_dir) / f"{name}-{stamp}-{seed}-{n}"
        else:
            path = Path(out)
            if (path / "config.json").exists():
                raise BiaslabError(
                    f"{path} already holds a run; use --resume {path} to continue it, "
                    "or choose another --out")
        made = [p for p in (path, path / "figures", path / "checkpoints") if not p.exists()]
        run = cls(path)
        run._make_dirs("output directory", probe=True)
        run._made = made
        return run

    @classmethod
    def open(cls, path: str | Path) -> "RunDir":
        """An existing run directory, for ``--resume``."""
        path = Path(path)
        if not (path / "config.json").is_file():
            raise CheckpointError(f"{path} is not a run directory (no config.json); cannot resume")
        run = cls(path)
        run._make_dirs("run directory")
        return run

    def _make_dirs(self, what: str, probe: bool = False) -> None:
        """Make figures/ and checkpoints/ (and the run directory); optionally prove it writable."""
        try:
            self.figures_dir.mkdir(parents=True, exist_ok=True)
            self.checkpoints_dir.mkdir(exist_ok=True)
            if probe:
                test = self.path / ".write-test"
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
            extra = [p for p in self.path.iterdir()
                     if p.name != "config.json" and p not in self._made]
            if extra or any(any(d.iterdir()) for d in self._made if d != self.path):
                return False
            self.config_path.unlink(missing_ok=True)
            for d in reversed(self._made):  # subdirectories first, then the run directory
                d.rmdir()
        except OSError:
            return False
        self._made = []
        return True

    # -- files ----------------------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.path / "config.json"

    @property
    def results_path(self) -> Path:
        return self.path / "results.json"

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def figures_dir(self) -> Path:
        return self.path / "figures"

    @property
    def checkpoints_dir(self) -> Path:
        return self.path / "checkpoints"

    @property
    def is_complete(self) -> bool:
        return (self.path / COMPLETE).exists()

    def write_config(self, experiment: str, profile: str, seed: int, config: dict,
                     command: str) -> None:
        write_json(self.config_path, {
            "experiment": experiment, "profile": profile, "seed": seed, "config": config,
            "versions": package_versions(),
            "created": datetime.now().isoformat(timespec="seconds"), "command": command,
        })

    def read_config(self) -> dict:
        return read_json(self.config_path)

    def write_results(self, results: dict) -> None:
        write_json(self.results_path, results)

    def mark_complete(self) -> None:
        atomic_write_text(self.path / COMPLETE, datetime.now().isoformat(timespec="seconds") + "\n")

    # -- metrics log ----------------------------------------------------------------------
    def log(self, record: dict) -> None:
        """Append one JSON object to metrics.jsonl (one line, flushed)."""
        line = json.dumps(_json_safe({"time": round(time.time(), 3), **record}))
        with open(self.metrics_path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def rewind_metrics(self, tag: str, step: int) -> None:
        """Drop records of ``tag`` logged after ``step`` (work that a resume will redo)."""
        if not self.metrics_path.exists():
            return
        kept = []
        for line in self.metrics_path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by a kill
                continue
            if rec.get("tag") == tag and rec.get("step", 0) > step:
                continue
            kept.append(line)
        atomic_write_text(self.metrics_path, "".join(k + "\n" for k in kept))

    def read_metrics(self) -> list[dict]:
        if not self.metrics_path.exists():
            return []
        out = []
        for line in self.metrics_path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out
