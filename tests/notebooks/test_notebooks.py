"""The workshop notebooks: stored clean, shaped alike, and executed top to bottom in a real
Jupyter kernel in the quick profile (any error, or a failed claim the quick profile judges,
fails the test)."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient

from biaslab.notebooks import NOTEBOOKS, notebook_path
from biaslab.notebooks.lab import PROFILE_VARIABLE

INSTALL = '%pip install torch==2.13.0 "biaslab[graph,notebooks]"'


def read(name: str):
    return nbformat.read(notebook_path(name), as_version=4)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_stored_without_outputs(name):
    raw = json.loads(notebook_path(name).read_text(encoding="utf-8"))
    nbformat.validate(nbformat.reads(json.dumps(raw), as_version=4))
    for cell in raw["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, cell["source"][:80]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_first_cell_says_how_to_install_and_the_profile_is_one_parameter(name):
    code = [c for c in read(name).cells if c.cell_type == "code"]
    assert 'find_spec("biaslab")' in code[0].source and INSTALL in code[0].source
    parameters = code[1]
    assert "parameters" in parameters.metadata.get("tags", [])
    assert f'os.environ.get("{PROFILE_VARIABLE}", "default")' in parameters.source
    day = NOTEBOOKS.index(name) + 1
    assert any(f"Lab(day={day}, profile=PROFILE)" in c.source for c in code)
    assert "lab.run_day()" in code[-2].source and "lab.finish()" in code[-1].source


def test_the_first_cell_runs_without_biaslab_and_names_the_command(tmp_path):
    """A fresh kernel without biaslab: the first cell stops with the install command."""
    first = next(c for c in read(NOTEBOOKS[0]).cells if c.cell_type == "code")
    source = first.source.replace('"biaslab"', '"biaslab_not_installed_here"')
    with pytest.raises(ModuleNotFoundError, match="pip install torch==2.13.0"):
        exec(compile(source, "first-cell", "exec"), {})


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_executes_in_the_quick_profile(name, tmp_path, monkeypatch):
    monkeypatch.setenv(PROFILE_VARIABLE, "quick")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = read(name)
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()  # raises CellExecutionError on any error, a failed judged claim included
    finish = notebook.cells[-1]
    text = "".join(o.get("text", "") + json.dumps(o.get("data", {})) for o in finish.outputs)
    assert "claims passed" in text or "claim passed" in text, text[:500]
    assert (tmp_path / "runs").is_dir()  # the day's experiments ran inside the notebook's folder
