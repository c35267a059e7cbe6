"""``biaslab notebooks [DIR] [--force]``: copies the five notebooks, never overwrites unasked."""

from __future__ import annotations

import pytest

from biaslab.notebooks import NOTEBOOKS, notebook_path
from tests.test_cli import assert_one_line_error, cli


def test_copies_the_five_notebooks_byte_for_byte(tmp_path, capsys):
    rc, out, err = cli(capsys, "notebooks", tmp_path / "workshop")
    assert rc == 0, err
    for name in NOTEBOOKS:
        copied = tmp_path / "workshop" / name
        assert copied.read_bytes() == notebook_path(name).read_bytes()
        assert str(copied) in out
    assert "jupyter lab" in out


def test_refuses_to_overwrite_without_force_and_copies_nothing(tmp_path, capsys):
    (tmp_path / NOTEBOOKS[2]).write_text("my own edits")
    rc, _, err = cli(capsys, "notebooks", tmp_path)
    assert_one_line_error(rc, err, NOTEBOOKS[2], "--force")
    assert (tmp_path / NOTEBOOKS[2]).read_text() == "my own edits"
    assert sorted(p.name for p in tmp_path.iterdir()) == [NOTEBOOKS[2]]  # nothing else was copied
    rc, _, err = cli(capsys, "notebooks", tmp_path, "--force")
    assert rc == 0 and (tmp_path / NOTEBOOKS[2]).read_bytes() == notebook_path(NOTEBOOKS[2]).read_bytes()


def test_a_file_in_the_way_is_one_clear_error(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    rc, _, err = cli(capsys, "notebooks", tmp_path / "file")
    assert_one_line_error(rc, err, "not a folder")


def test_the_default_folder_is_the_current_one(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "notebooks")[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(NOTEBOOKS)


def test_an_unknown_notebook_name_is_refused():
    from biaslab.errors import BiaslabError

    with pytest.raises(BiaslabError, match="choose one of"):
        notebook_path("Day6.ipynb")


def test_an_empty_folder_name_is_refused(tmp_path, capsys, monkeypatch):
    """An unset shell variable (``biaslab notebooks "$DIR"``) copies nothing into the current folder."""
    monkeypatch.chdir(tmp_path)
    rc, _, err = cli(capsys, "notebooks", "")
    assert_one_line_error(rc, err, "folder is empty (an unset shell variable?)")
    assert list(tmp_path.iterdir()) == []
