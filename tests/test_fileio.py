"""Tests for biaslab.fileio: the data directory, atomic writes and JSON."""

import os
from pathlib import Path

import pytest

from biaslab import fileio as store
from biaslab.errors import BiaslabError


def test_data_dir_honours_env(monkeypatch, tmp_path):
    target = tmp_path / "nested" / "cache"
    monkeypatch.setenv("BIASLAB_DATA", str(target))
    assert store.data_dir() == target
    assert target.is_dir()


def test_data_dir_default_under_home(monkeypatch, tmp_path):
    monkeypatch.delenv("BIASLAB_DATA", raising=False)
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path))
    assert store.data_dir() == tmp_path / ".cache" / "biaslab"


def test_data_dir_unusable_raises(monkeypatch, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("BIASLAB_DATA", str(blocker / "sub"))
    with pytest.raises(BiaslabError, match="BIASLAB_DATA"):
        store.data_dir()


def test_atomic_write_bytes_roundtrip(tmp_path):
    target = tmp_path / "sub" / "f.bin"
    store.atomic_write_bytes(target, b"hello")
    assert target.read_bytes() == b"hello"
    store.atomic_write_bytes(target, b"again")
    assert target.read_bytes() == b"again"
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.bin"]


def test_failed_replace_keeps_old_file(monkeypatch, tmp_path):
    target = tmp_path / "x.bin"
    target.write_bytes(b"old contents")

    def broken_replace(src, dst):
        raise OSError("rename failed")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="rename failed"):
        store.atomic_write_bytes(target, b"new contents")
    assert target.read_bytes() == b"old contents"
    assert [p.name for p in tmp_path.iterdir()] == ["x.bin"]
