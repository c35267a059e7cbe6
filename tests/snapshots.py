"""A folder's exact state, to prove that a refused command changed nothing in it."""

import os
from pathlib import Path


def snapshot(root: Path) -> dict[str, tuple]:
    """Every file, folder and link under ``root``: its kind, mode, size, mtime and bytes.

    Two snapshots are equal only if nothing was created, removed, written, truncated or touched.
    """
    state = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            info = path.lstat()
            content = path.read_bytes() if path.is_file() and not path.is_symlink() else None
            state[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns, content)
    return state
