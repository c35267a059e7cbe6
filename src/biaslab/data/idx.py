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

from biaslab.data.user_formats import check_memory_for
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
        DataFormatError: bad magic number, unknown dtype code, dimensions whose array would not
            fit in the free memory (checked from the header, before any data is read or
            decompressed: a gzip bomb stops at the size the header declares), or a payload whose
            size does not match the dimensions exactly (truncated or trailing data).
    """
    path = Path(path)
    try:
        with path.open("rb") as file:
            gzipped = file.read(2) == b"\x1f\x8b"
            file.seek(0)
            stream = gzip.GzipFile(fileobj=file) if gzipped else file
            head = stream.read(4)
            if len(head) < 4 or head[:2] != b"\x00\x00":
                raise DataFormatError(f"{path} is not an IDX file (bad magic number)")
            code, ndim = head[2], head[3]
            if code not in _IDX_DTYPES:
                raise DataFormatError(f"{path} has unknown IDX dtype code 0x{code:02X}")
            dims_raw = stream.read(4 * ndim)
            if len(dims_raw) < 4 * ndim:
                raise DataFormatError(f"{path} is truncated inside its IDX header")
            dims = struct.unpack(f">{ndim}I", dims_raw)
            dtype = np.dtype(_IDX_DTYPES[code])
            expected = int(np.prod(dims, dtype=object)) * dtype.itemsize  # exact: dims may be huge
            check_memory_for(f"{path} (IDX dims {dims})", 2 * expected)  # the bytes and the array
            data = stream.read(expected + 1)  # never more than the header promises, plus one to tell
    except (OSError, EOFError, zlib.error) as exc:
        raise DataFormatError(f"cannot read IDX file {path}: {exc}") from None
    if len(data) != expected:
        problem = "truncated" if len(data) < expected else "followed by trailing data"
        got = f"{len(data)}" if len(data) <= expected else f"more than {expected}"
        raise DataFormatError(f"{path} is {problem}: {got} data bytes, dims {dims} need {expected}")
    array = np.frombuffer(data, dtype=dtype).reshape(dims)
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
