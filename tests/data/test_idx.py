"""Tests for the IDX reader/writer in biaslab.data.mnist.

The files are written here with ``struct.pack`` (independently of ``write_idx``) so the reader is
checked against the format itself, not against our own writer.
"""

import gzip
import struct

import numpy as np
import pytest

from biaslab.data import load_idx_dataset, read_idx, write_idx
from biaslab.errors import BiaslabError, DataFormatError

# dtype code byte -> (struct format of one element, numpy dtype)
CODES = {
    0x08: ("B", np.uint8),
    0x09: ("b", np.int8),
    0x0B: ("h", np.int16),
    0x0C: ("i", np.int32),
    0x0D: ("f", np.float32),
    0x0E: ("d", np.float64),
}


def pack_idx(code: int, shape: tuple, values: list) -> bytes:
    """An IDX file built by hand: magic 0,0,code,ndim; big-endian dims; big-endian values."""
    fmt = CODES[code][0]
    header = struct.pack(">BBBB", 0, 0, code, len(shape)) + struct.pack(f">{len(shape)}I", *shape)
    return header + struct.pack(f">{len(values)}{fmt}", *values)


def sample_values(code: int, size: int) -> list:
    rng = np.random.default_rng(code)
    if code in (0x0D, 0x0E):
        return [float(v) for v in rng.normal(size=size).astype(CODES[code][1])]
    info = np.iinfo(CODES[code][1])
    return [int(v) for v in rng.integers(info.min, info.max, size=size, endpoint=True)]


@pytest.mark.parametrize("code", sorted(CODES))
@pytest.mark.parametrize("shape", [(7,), (3, 4, 5)])
@pytest.mark.parametrize("gz", [False, True])
def test_read_hand_written_idx(tmp_path, code, shape, gz):
    values = sample_values(code, int(np.prod(shape)))
    raw = pack_idx(code, shape, values)
    path = tmp_path / ("data.idx.gz" if gz else "data.idx")
    path.write_bytes(gzip.compress(raw) if gz else raw)
    array = read_idx(path)
    assert array.shape == shape
    assert array.dtype == np.dtype(CODES[code][1])
    assert array.dtype.isnative
    np.testing.assert_array_equal(array, np.array(values, dtype=CODES[code][1]).reshape(shape))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("name", ["a-idx", "a-idx.gz"])
def test_write_read_roundtrip(tmp_path, dtype, name):
    array = (np.arange(2 * 3 * 4) - 5).astype(dtype).reshape(2, 3, 4)
    path = write_idx(tmp_path / name, array)
    back = read_idx(path)
    assert back.dtype == array.dtype
    np.testing.assert_array_equal(back, array)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")


def test_write_idx_matches_hand_written_bytes(tmp_path):
    array = np.array([[1, -2], [300, 4]], dtype=np.int16)
    write_idx(tmp_path / "x", array)
    assert (tmp_path / "x").read_bytes() == pack_idx(0x0B, (2, 2), [1, -2, 300, 4])


def test_write_idx_rejects_unsupported_dtype(tmp_path):
    with pytest.raises(BiaslabError, match="IDX"):
        write_idx(tmp_path / "x", np.zeros(3, dtype=np.int64))


@pytest.mark.parametrize(
    "raw, problem",
    [
        (pack_idx(0x08, (10,), list(range(10)))[:-1], "truncated"),
        (pack_idx(0x08, (10,), list(range(10))) + b"\x00", "trailing"),
        (b"\x01\x00" + pack_idx(0x08, (2,), [1, 2])[2:], "magic"),
        (b"\x00\x00\x07\x01" + struct.pack(">I", 1) + b"\x00", "dtype code"),
        (b"\x00\x00\x08\x03\x00\x00", "header"),
        (b"\x00", "magic"),
    ],
)
def test_malformed_idx_raises(tmp_path, raw, problem):
    path = tmp_path / "broken-idx"
    path.write_bytes(raw)
    with pytest.raises(DataFormatError, match=problem) as info:
        read_idx(path)
    assert "broken-idx" in str(info.value)


def test_truncated_gzip_raises(tmp_path):
    path = tmp_path / "cut.gz"
    path.write_bytes(gzip.compress(pack_idx(0x08, (100,), list(range(100))))[:-10])
    with pytest.raises(DataFormatError, match="cut.gz"):
        read_idx(path)


def write_standard_files(folder, n_train=6, n_test=4, gz_labels=True):
    rng = np.random.default_rng(0)
    files = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": rng.integers(0, 10, n_train).astype(np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, n_test).astype(np.uint8),
    }
    for name, array in files.items():
        suffix = ".gz" if gz_labels and "labels" in name else ""
        write_idx(folder / (name + suffix), array)
    return files


def test_load_idx_dataset(tmp_path):
    files = write_standard_files(tmp_path)
    data = load_idx_dataset(tmp_path)
    np.testing.assert_array_equal(data.x_train, files["train-images-idx3-ubyte"])
    np.testing.assert_array_equal(data.y_test, files["t10k-labels-idx1-ubyte"])
    assert data.y_train.dtype == np.int64 and data.x_test.dtype == np.uint8
    assert data.x_train.shape == (6, 28, 28) and data.y_test.shape == (4,)


def test_load_idx_dataset_missing_file(tmp_path):
    write_standard_files(tmp_path)
    (tmp_path / "t10k-images-idx3-ubyte").unlink()
    with pytest.raises(DataFormatError, match="t10k-images-idx3-ubyte"):
        load_idx_dataset(tmp_path)


def test_load_idx_dataset_count_mismatch(tmp_path):
    write_standard_files(tmp_path, gz_labels=False)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(5, dtype=np.uint8))
    with pytest.raises(DataFormatError, match="train-labels-idx1-ubyte"):
        load_idx_dataset(tmp_path)


def test_a_header_that_declares_terabytes_reads_nothing(tmp_path):
    """Dims of 2^32 - 1 images of 2^16 x 2^16 pixels: refused from the header, nothing allocated."""
    path = tmp_path / "huge-idx3-ubyte"
    path.write_bytes(b"\x00\x00\x08\x03" + struct.pack(">3I", 2**32 - 1, 2**16, 2**16) + b"\x00" * 16)
    with pytest.raises(DataFormatError, match="would need about .* of memory"):
        read_idx(path)


def test_a_gzip_bomb_is_read_no_further_than_its_header_declares(tmp_path, monkeypatch):
    """10 declared bytes followed by 200 MB of zeros, gzipped to 200 kB: refused after reading 11."""
    import io

    body = io.BytesIO()
    with gzip.GzipFile(fileobj=body, mode="wb") as out:
        out.write(b"\x00\x00\x08\x01" + struct.pack(">I", 10))
        for _ in range(200):
            out.write(bytes(1 << 20))
    path = tmp_path / "bomb-idx1-ubyte.gz"
    path.write_bytes(body.getvalue())
    read = []
    original = gzip.GzipFile.read
    monkeypatch.setattr(gzip.GzipFile, "read", lambda self, n=-1: read.append(n) or original(self, n))
    with pytest.raises(DataFormatError, match="followed by trailing data: more than 10 data bytes"):
        read_idx(path)
    assert -1 not in read and sum(read) <= 4 + 4 + 11  # never the whole stream
