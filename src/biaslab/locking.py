"""An exclusive lock on a directory, held by one process at a time.

The lock is an ``flock`` on a small file (a run directory's ``.lock``). The kernel releases it
when the holding process ends in any way, SIGKILL included, so a lock left by a dead process is
simply taken over; there is no stale-lock clean-up to get wrong. The file also records who holds
the lock (process, host, start time), for the message another process gets.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime
from pathlib import Path

from biaslab.errors import RunLockedError
from biaslab.fileio import as_storage_error

try:
    import fcntl
except ImportError:  # not POSIX: no locking
    fcntl = None

__all__ = ["DirectoryLock"]


class DirectoryLock:
    """``DirectoryLock(path).acquire(message)`` ... ``release()``.

    Args:
        path: the lock file (created if missing; left in place, emptied, on release).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._fd: int | None = None
        self._found = b""  # the note the file held when the lock was taken (restored by a refusal)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, message: str = "") -> None:
        """Take the lock without waiting.

        Raises:
            RunLockedError: another process holds it; ``message`` with ``{holder}`` replaced by
                who holds it (e.g. "process 4242 on host since 2026-11-22T10:00:00"); default
                "<folder> is locked by <holder>".
            StorageError: the lock file cannot be created (read-only folder, full disk).
        """
        if fcntl is None or self._fd is not None:
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise (as_storage_error(exc, self.path) or exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            text = message or f"{self.path.parent} is locked by {{holder}}"
            raise RunLockedError(text.replace("{holder}", holder)) from None
        stamp = datetime.now().isoformat(timespec="seconds")
        self._found = os.pread(fd, 4096, 0)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()} on {socket.gethostname()} since {stamp}\n".encode(), 0)
        self._fd = fd

    def release(self, restore: bool = False) -> None:
        """Give the lock back (idempotent); the file stays, emptied, or with ``restore`` holding
        again the note it held when the lock was taken (an attempt that was refused leaves the
        folder byte for byte as it found it)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.ftruncate(fd, 0)
                if restore and self._found:
                    os.pwrite(fd, self._found, 0)
            except OSError:
                pass
            os.close(fd)
