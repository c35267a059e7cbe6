"""File I/O every layer shares: atomic writes and JSON.

Files are written *atomically*: the bytes go to a temporary file in the same directory, are
flushed to disk, and only then renamed over the target with :func:`os.replace`. A crash or an
error half-way through therefore never leaves a truncated file behind: either the old file (or
none) or the complete new one is there. Caches, checkpoints, figures, JSON and HTML all go
through :func:`atomic_write`.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from biaslab.errors import BiaslabError

__all__ = [
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "data_dir",
    "json_safe",
    "read_json",
    "write_json",
]

DATA_ENV_VAR = "BIASLAB_DATA"

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
    return path


def atomic_write(path: str | os.PathLike, write: Callable) -> Path:
    """Call ``write(fileobj)`` on a temporary file next to ``path``, then rename it over ``path``.

    On any failure the temporary file is removed and ``path`` is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp_name, 0o666 & ~_UMASK)  # mkstemp creates private (0o600) files
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)
    return path


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


def read_json(path: str | os.PathLike) -> Any:
    """Parse a JSON file; a missing, unreadable or malformed file is a one-line BiaslabError."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BiaslabError(f"{path} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BiaslabError(f"{path} is not valid JSON ({exc})") from None
    except OSError as exc:
        raise BiaslabError(f"{path} cannot be read ({exc.strerror or type(exc).__name__})") from None
