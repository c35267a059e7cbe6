"""File I/O every layer shares: atomic writes and JSON.

Files are written *atomically*: the bytes go to a temporary file in the same directory, are
flushed to disk, and only then renamed over the target with :func:`os.replace`. A crash or an
error half-way through therefore never leaves a truncated file behind: either the old file (or
none) or the complete new one is there. Caches, checkpoints, figures, JSON and HTML all go
through :func:`atomic_write` (and :func:`atomic_write_bytes`, :func:`atomic_write_text`,
:func:`write_json`); a storage failure the user can fix (a full disk, a read-only folder, a
directory in the way) becomes a one-line :class:`~biaslab.errors.StorageError` naming the file
(:func:`as_storage_error`), and :func:`remove_temp_files` clears what interrupted writes left.

Also here: :func:`read_json` and :func:`json_safe`, :func:`write_traceback` (a bug's traceback,
saved), and :func:`data_dir`, where biaslab caches data: ``$BIASLAB_DATA``, default
``~/.cache/biaslab``.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from biaslab.errors import BiaslabError, StorageError

__all__ = [
    "TEMP_NAME",
    "StorageError",
    "as_storage_error",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_run_file_size",
    "data_dir",
    "json_safe",
    "read_json",
    "remove_temp_files",
    "torch_zip_bytes",
    "write_json",
    "write_traceback",
]

DATA_ENV_VAR = "BIASLAB_DATA"
# The most a run's JSON file or metrics.jsonl may hold before it is read (whole): about 100 times
# the largest a biaslab run writes (the workshop's results.json, a few MB), so that only a file
# that is not a run's, or a forged one, is refused rather than parsed into many GB of objects.
MAX_RUN_FILE_BYTES = 256 << 20

_UMASK = os.umask(0)  # read the process umask (it can only be read by setting it) ...
os.umask(_UMASK)  # ... and restore it at once; new files get the usual 0o666 & ~umask mode.


def data_dir() -> Path:
    """Return the directory for biaslab's cached data, creating it if needed.

    Returns:
        ``$BIASLAB_DATA`` when that variable is set (and not empty), else ``~/.cache/biaslab``.

    Raises:
        BiaslabError: the directory cannot be created or is not writable.
    """
    configured = os.environ.get(DATA_ENV_VAR, "").strip()
    path = Path(configured).expanduser() if configured else Path.home() / ".cache" / "biaslab"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BiaslabError(
            f"cannot create the data directory {path} ({exc.strerror or exc}); "
            f"set {DATA_ENV_VAR} to a writable directory"
        ) from None
    if not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
        raise BiaslabError(
            f"the data directory {path} is not a writable directory; "
            f"set {DATA_ENV_VAR} to a writable directory"
        )
    if path not in _CLEANED:  # once per process: what killed writers left behind
        remove_temp_files(path)
        _CLEANED.add(path)
    return path


_CLEANED: set[Path] = set()


# -- storage failures -------------------------------------------------------------------------
# What the user can do about a failed read or write, by errno. Any other OSError is a bug.
_STORAGE_ADVICE = {
    errno.ENOSPC: "the disk is full; free some space",
    errno.EDQUOT: "the disk quota is exceeded; free some space",
    errno.EFBIG: "the file is too large for this file system",
    errno.EROFS: "the file system is read-only; choose a writable folder",
    errno.EACCES: "permission denied; make the folder writable or choose another",
    errno.EPERM: "operation not permitted; make the folder writable or choose another",
    errno.EISDIR: "a directory is in the way; remove or rename it",
    errno.ENOTDIR: "a file is in the way of a folder on the path; remove or rename it",
    errno.EEXIST: "a file is in the way of a folder on the path; remove or rename it",
    errno.EIO: "an input/output error on the device",
    errno.ENAMETOOLONG: "the file name is too long; choose a shorter path",
}


def as_storage_error(
    exc: BaseException, path: str | os.PathLike, action: str = "write"
) -> StorageError | None:
    """A one-line :class:`StorageError` for ``exc`` (or the OSError it was raised from) when it
    is a storage failure the user can fix (full disk, read-only folder, a directory in the way);
    None when it is not (then it is a bug, reported as such)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _STORAGE_ADVICE:
            return StorageError(f"cannot {action} {path}: {_STORAGE_ADVICE[exc.errno]} ({exc.strerror})")
        exc = exc.__cause__ or exc.__context__
    return None


# -- atomic writes -----------------------------------------------------------------------------
_TEMP_SUFFIX = ".tmp"
TEMP_NAME = re.compile(r"^\..+\.pid(\d+)\.[^.]+\.tmp$")  # .<name>.pid<writer pid>.<random>.tmp


def atomic_write(path: str | os.PathLike, write: Callable) -> Path:
    """Call ``write(fileobj)`` on a temporary file next to ``path``, then rename it over ``path``.

    On any failure the temporary file is removed and ``path`` is left untouched; a storage
    failure (full disk, read-only folder, a directory in the way) becomes a one-line
    :class:`StorageError` naming ``path``. A temporary file that a killed process left behind
    is named ``.<name>.pid<PID>.<random>.tmp``; :func:`remove_temp_files` clears them.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.pid{os.getpid()}.", suffix=_TEMP_SUFFIX
        )
    except OSError as exc:
        raise (as_storage_error(exc, path) or exc) from None
    try:
        os.chmod(tmp_name, 0o666 & ~_UMASK)  # mkstemp creates private (0o600) files
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException as exc:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        storage = as_storage_error(exc, path)
        if storage is not None:
            raise storage from None
        raise
    _fsync_dir(path.parent)
    return path


def remove_temp_files(directory: str | os.PathLike, *, any_writer: bool = False) -> list[Path]:
    """Remove the temporary files that interrupted atomic writes left in ``directory``.

    Args:
        directory: where to look (not recursive).
        any_writer: remove every such file (the caller holds the directory's lock, so no one
            else is writing there); by default only those whose writing process has ended.

    Returns:
        The files removed.
    """
    removed = []
    try:
        entries = list(Path(directory).iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = TEMP_NAME.match(entry.name)
        if match is None or (not any_writer and _process_alive(int(match.group(1)))):
            continue
        try:
            entry.unlink()
            removed.append(entry)
        except OSError:
            pass
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # someone else's process (or an odd number): leave its file alone
    return True


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable where the platform allows it (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file + fsync + rename).

    Args:
        path: target file; its parent directory is created if missing.
        data: the complete file contents.

    Returns:
        The target path.
    """
    return atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def json_safe(value: Any) -> Any:
    """A JSON-ready copy of ``value``.

    Floats that JSON cannot hold (nan, inf) become strings; NumPy scalars become Python numbers
    and arrays (NumPy or torch) become lists; dict keys become strings.
    """
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    elif hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays, tensors
        value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def write_json(path: str | os.PathLike, data: Any) -> Path:
    """Write ``data`` as indented JSON, atomically (see :func:`json_safe` for what converts)."""
    return atomic_write_text(path, json.dumps(json_safe(data), indent=2) + "\n")


def check_run_file_size(path: str | os.PathLike) -> None:
    """Refuse, in one BiaslabError line, a run file larger than ``MAX_RUN_FILE_BYTES`` before it
    is read whole (a missing file passes: its reader names it)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return
    if size > MAX_RUN_FILE_BYTES:
        raise BiaslabError(
            f"{path} holds {size / 2**20:,.0f} MiB, more than the {MAX_RUN_FILE_BYTES >> 20} MiB a "
            "run's file may hold: not read (is it this run's file?)"
        )


def torch_zip_bytes(path: str | os.PathLike) -> int | None:
    """What a ``.pt`` file in torch's zip format (``torch.save``'s since torch 1.6) unpacks to:
    the sum of the sizes its zip directory declares, which ``torch.load`` allocates however
    small the file is. None when the file is not a readable zip: torch's legacy format (whose
    allocations cannot be checked before loading), or not a ``.pt`` at all."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            return sum(info.file_size for info in archive.infolist())
    except (OSError, zipfile.BadZipFile, ValueError, EOFError):
        return None


def read_json(path: str | os.PathLike) -> Any:
    """Parse a JSON file; a missing, unreadable, too large (:func:`check_run_file_size`) or
    malformed file is a one-line BiaslabError."""
    check_run_file_size(path)
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BiaslabError(f"{path} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BiaslabError(f"{path} is not valid JSON ({exc})") from None
    except OSError as exc:
        storage = as_storage_error(exc, path, "read")
        reason = exc.strerror or type(exc).__name__
        raise storage or BiaslabError(f"{path} cannot be read ({reason})") from None


def write_traceback(exc: BaseException, path: str | os.PathLike) -> Path:
    """Save ``exc``'s full traceback as text at ``path`` (atomically) and return the path."""
    import traceback

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return atomic_write_text(path, text)
