"""IDX, the format of the official MNIST (and Fashion-MNIST) files: a magic number naming the
dtype and the number of dimensions, the dimensions as big-endian 32-bit integers, then the data.
:func:`read_idx` reads a file, plain or gzip-compressed; :func:`write_idx` writes one atomically.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from biaslab.errors import BiaslabError, DataFormatError
from biaslab.fileio import atomic_write_bytes

__all__ = ["read_idx", "write_idx"]

_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_IDX_CODES = {np.dtype(d).newbyteorder("=").str: code for code, d in _IDX_DTYPES.items()}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (the format of the official MNIST files), plain or gzip-compressed.

    Args:
        path: the file; gzip compression is detected from its contents.

    Returns:
        A native-byte-order array of the stored dtype (uint8, int8, int16, int32, float32 or
        float64) and shape.

    Raises:
        DataFormatError: bad magic number, unknown dtype code, or a payload whose size does not
            match the dimensions exactly (truncated or trailing data).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataFormatError(f"cannot read IDX file {path}: {exc}") from None
    if len(raw) < 4 or raw[:2] != b"\x00\x00":
        raise DataFormatError(f"{path} is not an IDX file (bad magic number)")
    code, ndim = raw[2], raw[3]
    if code not in _IDX_DTYPES:
        raise DataFormatError(f"{path} has unknown IDX dtype code 0x{code:02X}")
    start = 4 + 4 * ndim
    if len(raw) < start:
        raise DataFormatError(f"{path} is truncated inside its IDX header")
    dims = struct.unpack(f">{ndim}I", raw[4:start])
    dtype = np.dtype(_IDX_DTYPES[code])
    expected = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    got = len(raw) - start
    if got != expected:
        problem = "truncated" if got < expected else "followed by trailing data"
        raise DataFormatError(f"{path} is {problem}: {got} data bytes, dims {dims} need {expected}")
    array = np.frombuffer(raw, dtype=dtype, offset=start).reshape(dims)
    return array.astype(dtype.newbyteorder("="))  # a writable copy in native byte order


def write_idx(path: str | os.PathLike, array: np.ndarray) -> Path:
    """Write ``array`` as an IDX file (gzip-compressed when ``path`` ends with ``.gz``), atomically.

    Args:
        path: target file.
        array: uint8, int8, int16, int32, float32 or float64 data with at most 255 dimensions.

    Returns:
        The target path.

    Raises:
        BiaslabError: the dtype or shape cannot be stored in IDX.
    """
    array = np.asarray(array)
    code = _IDX_CODES.get(array.dtype.newbyteorder("=").str)
    if code is None:
        raise BiaslabError(
            f"IDX cannot store {array.dtype}; use uint8, int8, int16, int32, float32 or float64"
        )
    if array.ndim > 255 or any(d >= 2**32 for d in array.shape):
        raise BiaslabError(f"IDX cannot store an array of shape {array.shape}")
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    data = header + np.ascontiguousarray(array, dtype=_IDX_DTYPES[code]).tobytes()
    if str(path).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    return atomic_write_bytes(path, data)
