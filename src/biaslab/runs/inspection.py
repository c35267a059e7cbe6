"""Looking at a folder without writing to it: is it a run (:func:`inspect`), is it free for a new
run (:func:`refuse_occupied`), did a kill stop a run being created (:func:`stillborn`); finding the
runs under a folder (:func:`find_runs`)."""

from __future__ import annotations

from pathlib import Path

from biaslab.errors import BiaslabError, CheckpointError
from biaslab.fileio import TEMP_NAME, read_json
from biaslab.runs.names import (
    CHECKPOINTS,
    CONFIG,
    FIGURES,
    IDENTITY_KEYS,
    LOCK,
    PROBE,
    RUN_MARKER,
    RUN_OUTPUTS,
    run_fingerprint,
)


def stillborn(path: Path) -> bool:
    """Whether ``path`` holds only what :meth:`RunDir.create` makes before config.json exists
    (the lock, empty figures/ and checkpoints/, the write probe, config.json's temporary
    file): a run that a kill stopped while it was being created, before any work. The lock
    file is there from the start: an empty folder is no run at all."""
    if not (path / LOCK).is_file():
        return False
    for entry in path.iterdir():
        if entry.name in (FIGURES, CHECKPOINTS):
            if not empty_dir(entry):
                return False
        elif entry.name not in (LOCK, PROBE) and not (
            TEMP_NAME.match(entry.name) and entry.name.startswith(f".{CONFIG}.")
        ):
            return False
    return True


def refuse_occupied(path: Path) -> None:
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
        if stillborn(path) or not any(path.iterdir()):
            return
        names = sorted(entry.name for entry in path.iterdir())
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise BiaslabError(f"cannot use output directory {path}: {reason}") from None
    leftovers = [n for n in RUN_OUTPUTS if (path / n).exists() and not empty_dir(path / n)]
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


def inspect(path: str | Path) -> dict:
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
            if stillborn(path):
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
    saved = read_object(config, True, "a biaslab run config")
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


def read_object(path: Path, required: bool, what: str) -> dict | None:
    if not required and not path.is_file():
        return None
    data = read_json(path)
    if not isinstance(data, dict):
        raise BiaslabError(f"{path} is not {what} (a JSON {type(data).__name__}, not an object)")
    return data


def is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def empty_dir(path: Path) -> bool:
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
