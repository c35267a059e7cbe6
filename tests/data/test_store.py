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
