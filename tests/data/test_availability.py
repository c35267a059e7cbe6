"""Checked before a run directory exists: the data sets and the graph labs' libraries."""

from __future__ import annotations

import importlib.util

import pytest

from biaslab.data import availability
from biaslab.errors import BiaslabError, DataMissingError
from tests.test_cli import assert_one_line_error, cli


def hide(monkeypatch, module: str) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        availability.importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a)
    )


LIBRARIES = [("torch-geometric", "torch_geometric"), ("rdkit", "rdkit")]


@pytest.mark.parametrize(("requirement", "module"), LIBRARIES)
def test_a_missing_graph_library_names_the_extra(monkeypatch, requirement, module):
    availability.require_data((requirement,))  # installed here
    hide(monkeypatch, module)
    with pytest.raises(DataMissingError, match=r"needs .*pip install 'biaslab\[graph\]'"):
        availability.require_data((requirement,))


def test_an_unknown_requirement_is_a_bug_in_the_lab():
    with pytest.raises(BiaslabError, match="unknown data set"):
        availability.require_data(("nope",))


def test_gnn_nodes_without_torch_geometric_is_one_line_and_writes_nothing(monkeypatch, tmp_path, capsys):
    hide(monkeypatch, "torch_geometric")
    rc, _, err = cli(capsys, "run", "gnn-nodes", "--quick", "--out", tmp_path / "run")
    assert_one_line_error(rc, err, "torch-geometric", "biaslab[graph]")
    assert not (tmp_path / "run").exists()
