"""Where biaslab keeps its data files: the cache directory and compressed array archives.

Every file biaslab caches (for example the converted MNIST arrays) lives in :func:`data_dir` and
is written atomically through :func:`biaslab.fileio.atomic_write`.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from biaslab.errors import BiaslabError, DataFormatError
from biaslab.fileio import DATA_ENV_VAR as ENV_VAR
from biaslab.fileio import atomic_write, data_dir

__all__ = ["ENV_VAR", "atomic_save_npz", "data_dir", "load_npz"]


def atomic_save_npz(path: str | os.PathLike, compress: bool = True, **arrays: np.ndarray) -> Path:
    """Save ``arrays`` to an ``.npz`` file atomically.

    Args:
        path: target file (written exactly as named; no ``.npz`` suffix is appended).
        compress: deflate the arrays (default True); an uncompressed archive loads several
            times faster (MNIST: 0.36 s -> under 0.1 s) for its larger size on disk.
        **arrays: the arrays to store, by name (as for :func:`numpy.savez`).

    Returns:
        The target path.
    """
    save = np.savez_compressed if compress else np.savez
    return atomic_write(path, lambda handle: save(handle, **arrays))


def load_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Load every array of an ``.npz`` file into memory (pickled objects are refused).

    Args:
        path: the ``.npz`` file.

    Returns:
        A dict from array name to array.

    Raises:
        BiaslabError: the file does not exist.
        DataFormatError: the file is corrupt or not an ``.npz`` archive.
    """
    path = Path(path)
    if not path.is_file():
        raise BiaslabError(f"no such data file: {path}")
    try:
        with open(path, "rb") as handle:  # our own handle: closed even when np.load fails
            archive = np.load(handle, allow_pickle=False)
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise ValueError("a single .npy array, not an .npz archive")
            with archive:
                return {name: archive[name] for name in archive.files}
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DataFormatError(
            f"{path} is corrupt or not a valid .npz file ({reason}); delete it so it is rebuilt"
        ) from None
