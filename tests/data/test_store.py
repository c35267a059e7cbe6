"""Tests for biaslab.data.store: compressed array archives, written atomically."""

import os

import numpy as np
import pytest

from biaslab.data import store
from biaslab.errors import BiaslabError, DataFormatError


def test_atomic_save_and_load_npz(tmp_path):
    target = tmp_path / "arrays.npz"
    a, b = np.arange(10, dtype=np.uint8), np.eye(3)
    store.atomic_save_npz(target, a=a, b=b)
    loaded = store.load_npz(target)
    assert set(loaded) == {"a", "b"}
    np.testing.assert_array_equal(loaded["a"], a)
    np.testing.assert_array_equal(loaded["b"], b)
    assert [p.name for p in tmp_path.iterdir()] == ["arrays.npz"]


def test_failed_savez_leaves_nothing(monkeypatch, tmp_path):
    def broken(handle, **arrays):
        handle.write(b"partial garbage")
        raise RuntimeError("disk full")

    monkeypatch.setattr(np, "savez_compressed", broken)
    target = tmp_path / "x.npz"
    with pytest.raises(RuntimeError, match="disk full"):
        store.atomic_save_npz(target, a=np.zeros(3))
    assert list(tmp_path.iterdir()) == []


def test_failed_replace_no_partial_target(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "replace", lambda src, dst: (_ for _ in ()).throw(OSError("nope")))
    with pytest.raises(OSError):
        store.atomic_save_npz(tmp_path / "y.npz", a=np.ones(4))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("contents", [b"", b"this is not a zip file", b"PK\x03\x04truncated"])
def test_load_npz_corrupt(tmp_path, contents):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(contents)
    with pytest.raises(DataFormatError) as info:
        store.load_npz(bad)
    message = str(info.value)
    assert "bad.npz" in message and "delete" in message and "\n" not in message


def test_load_npz_truncated_archive(tmp_path):
    good = tmp_path / "good.npz"
    store.atomic_save_npz(good, a=np.random.default_rng(0).random(5000))
    cut = tmp_path / "cut.npz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(DataFormatError, match="cut.npz"):
        store.load_npz(cut)


def test_load_npz_refuses_pickles(tmp_path):
    path = tmp_path / "obj.npz"
    np.savez(path, a=np.array([{"x": 1}], dtype=object))
    with pytest.raises(DataFormatError):
        store.load_npz(path)


def test_load_npz_missing_file(tmp_path):
    with pytest.raises(BiaslabError, match="no such data file"):
        store.load_npz(tmp_path / "absent.npz")


STORED_CASES = {
    "uint8 images": np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28),
    "int64 labels": np.arange(7, dtype=np.int64),
    "fortran order": np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    "big-endian": np.arange(5, dtype=">i4"),
    "unicode scalar": np.array("héllo"),
    "empty": np.zeros((0, 3), dtype=np.float32),
    "structured": np.array([(1, 2.5)], dtype=[("a", "<i2"), ("b", "<f8")]),
}


def test_uncompressed_archive_read_in_one_call_equals_numpy(tmp_path):
    path = tmp_path / "stored.npz"
    store.atomic_save_npz(path, compress=False, **{k.replace(" ", "_"): v for k, v in STORED_CASES.items()})
    loaded = store.load_npz(path)
    with np.load(path) as reference:
        assert sorted(loaded) == sorted(reference.files)
        for name in reference.files:
            expected, got = reference[name], loaded[name]
            assert got.dtype == expected.dtype and got.shape == expected.shape, name
            np.testing.assert_array_equal(got, expected)
            assert got.flags.writeable and got.flags.f_contiguous == expected.flags.f_contiguous, name


def flip_byte_inside(path, needle: bytes):
    data = bytearray(path.read_bytes())
    at = data.index(needle) + len(needle) // 2
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def test_uncompressed_archive_with_a_damaged_member_is_refused(tmp_path):
    path = tmp_path / "stored.npz"
    store.atomic_save_npz(path, compress=False, a=np.full(4096, 7, dtype=np.uint8))
    flip_byte_inside(path, bytes([7]) * 4096)  # inside the data: only the CRC-32 can tell
    with pytest.raises(DataFormatError, match="CRC"):
        store.load_npz(path)


def test_uncompressed_archive_cut_short_is_refused(tmp_path):
    good = tmp_path / "good.npz"
    store.atomic_save_npz(good, compress=False, a=np.arange(5000.0))
    cut = tmp_path / "cut.npz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size - 2000])
    with pytest.raises(DataFormatError, match="cut.npz"):
        store.load_npz(cut)
