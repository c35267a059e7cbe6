"""The workshop notebooks: stored clean, shaped alike, and executed top to bottom in a real
Jupyter kernel in the quick profile (any error, or a failed claim the quick profile judges,
fails the test), with every question answered and every coding cell filled by its solution (each
check must say "correct"), and once with the coding cells left as they are."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from biaslab.notebooks import NOTEBOOKS, notebook_path
from biaslab.notebooks.lab import PROFILE_VARIABLE, STRICT_VARIABLE
from biaslab.notebooks.solutions import coding_cells, solve

ROOT = Path(__file__).resolve().parents[2]


def repository_url() -> str:
    """The repository URL pyproject.toml publishes (``[project.urls] Source``)."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["urls"]["Source"]


def read(name: str):
    return nbformat.read(notebook_path(name), as_version=4)


def output_text(cell) -> str:
    """What an executed cell printed and displayed, as one string."""
    return "".join(o.get("text", "") + json.dumps(o.get("data", {})) for o in cell.outputs)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_stored_without_outputs(name):
    raw = json.loads(notebook_path(name).read_text(encoding="utf-8"))
    nbformat.validate(nbformat.reads(json.dumps(raw), as_version=4))
    for cell in raw["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, cell["source"][:80]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_first_cell_installs_and_prepares_and_the_profile_is_one_parameter(name):
    code = [c for c in read(name).cells if c.cell_type == "code"]
    day = NOTEBOOKS.index(name) + 1
    first = code[0].source
    assert 'find_spec("biaslab")' in first and f'REPOSITORY = "{repository_url()}"' in first
    assert "torch" not in first.split("REPOSITORY =")[1].split("from biaslab")[0]  # pip never names torch
    assert f"DEVICE = prepare_day({day})" in first
    parameters = code[1]
    assert "parameters" in parameters.metadata.get("tags", [])
    assert f'os.environ.get("{PROFILE_VARIABLE}", "default")' in parameters.source
    assert "RUN_EXPERIMENTS = False" in parameters.source  # the day's experiments: opt-in
    assert any(f"Lab(day={day}, profile=PROFILE, device=DEVICE)" in c.source for c in code)
    assert "if RUN_EXPERIMENTS:" in code[-2].source and "lab.run_day()" in code[-2].source
    assert "lab.finish()" in code[-1].source


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_an_open_in_colab_link_from_the_repository_url(name):
    path = repository_url().removeprefix("https://github.com/")
    link = f"https://colab.research.google.com/github/{path}/blob/main/notebooks/{name}"
    assert f"({link})" in read(name).cells[0].source


def test_the_repository_folder_holds_the_package_notebooks():
    """notebooks/ (what GitHub shows and Colab opens) equals the package's copies
    (``python scripts/sync_notebooks.py`` after an edit)."""
    for name in NOTEBOOKS:
        assert (ROOT / "notebooks" / name).read_bytes() == notebook_path(name).read_bytes(), name
    assert sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb")) == sorted(NOTEBOOKS)


def test_the_first_cell_installs_biaslab_from_the_repository_when_it_is_missing(monkeypatch, capsys):
    """A fresh kernel without biaslab: pip installs it from the repository, torch untouched."""
    first = next(c for c in read(NOTEBOOKS[0]).cells if c.cell_type == "code")
    source = first.source.replace('find_spec("biaslab")', 'find_spec("biaslab_not_installed_here")')
    calls = []
    monkeypatch.setattr(subprocess, "check_call", lambda args: calls.append(args))
    namespace = {}
    exec(compile(source, "first-cell", "exec"), namespace)
    (pip,) = calls
    assert pip[1:4] == ["-m", "pip", "install"]
    assert pip[-1] == f"biaslab[graph,notebooks] @ git+{repository_url()}"
    assert not any("torch" in arg for arg in pip)
    assert namespace["DEVICE"] == "cpu" and "computing on cpu" in capsys.readouterr().out


def data_folder(folder: Path, fashion: bool) -> Path:
    """A data folder holding every data set this machine has, and Fashion-MNIST only as a stand-in
    (MNIST's test images transposed) when ``fashion``: Day 5 solved takes the path it takes once
    Fashion-MNIST is fetched, Day 5 unsolved the one without it (and this machine's own fetched
    copy, if any, is left out of both)."""
    from biaslab.data.mnist import CACHE_NAME, read_cache, write_cache
    from biaslab.data.ood import FASHION_CACHE_NAME
    from biaslab.fileio import data_dir

    folder.mkdir()
    for entry in data_dir().iterdir():
        if entry.name != FASHION_CACHE_NAME:
            (folder / entry.name).symlink_to(entry)
    if fashion:
        digits = read_cache(data_dir() / CACHE_NAME)
        clothes = type(digits)(
            digits.x_train[:10], digits.y_train[:10], digits.x_test.transpose(0, 2, 1).copy(), digits.y_test
        )
        write_cache(folder / FASHION_CACHE_NAME, clothes, source="a stand-in for the tests")
    return folder


def day_5_data(monkeypatch, folder: Path, fashion: bool) -> None:
    """Day 5's data as ``data_folder`` makes them, and no download: a fetch finds nothing."""
    monkeypatch.setenv("BIASLAB_DATA", str(data_folder(folder, fashion)))
    monkeypatch.setenv("BIASLAB_MIRROR", (folder / "no-mirror" / "{name}").as_uri())


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_executes_in_the_quick_profile(name, tmp_path, monkeypatch):
    monkeypatch.setenv(PROFILE_VARIABLE, "quick")
    if name.startswith("Day5"):
        day_5_data(monkeypatch, tmp_path / "data", fashion=True)
    monkeypatch.setenv(STRICT_VARIABLE, "1")  # a failed judged claim raises in finish()
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = read(name)
    run_day = name == NOTEBOOKS[0]  # the opt-in last cell, once: it trains the day's labs again
    parameters = next(c for c in notebook.cells if "parameters" in c.metadata.get("tags", []))
    parameters.source = parameters.source.replace("RUN_EXPERIMENTS = False", f"RUN_EXPERIMENTS = {run_day}")
    checks = solve(notebook)  # {checking cell id: the names its checks print}
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()  # raises CellExecutionError on any error, a failed judged claim included
    said = {cell.id: output_text(cell) for cell in notebook.cells if cell.cell_type == "code"}
    assert re.search(r"(findings|checks) \d+ of \d+ hold", said[notebook.cells[-1].id]), said[
        notebook.cells[-1].id
    ]
    if name.startswith("Day5"):  # Step 7 read the (stand-in) Fashion-MNIST
        assert "mean top-class probability: MNIST test digits" in said["d5-fashion"], said["d5-fashion"]
    for cell_id, names in checks.items():  # the solutions are right (the coding cells' equal the
        assert all(f"{name}: correct" in said[cell_id] for name in names), said[cell_id]  # library's)
    assert (tmp_path / "runs").is_dir() == run_day  # the day's experiments ran inside its folder


@pytest.mark.parametrize("name", [n for n in NOTEBOOKS if coding_cells(read(n))])
def test_a_student_who_writes_nothing_still_sees_the_whole_day(name, tmp_path, monkeypatch):
    """The stubs left as they are: each check says "not written yet" and the notebook runs to its
    end (a student's code is never an error outside strict mode)."""
    monkeypatch.setenv(PROFILE_VARIABLE, "quick")
    monkeypatch.delenv(STRICT_VARIABLE, raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    if name.startswith("Day5"):
        day_5_data(monkeypatch, tmp_path / "data", fashion=False)
    notebook = read(name)
    checks = {check.id: check.source for _, check, _ in coding_cells(notebook)}
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    said = {cell.id: output_text(cell) for cell in notebook.cells if cell.cell_type == "code"}
    if name.startswith("Day5"):  # no Fashion-MNIST on this machine: one line says so
        assert said["d5-fashion"].startswith("Fashion-MNIST is not here"), said["d5-fashion"]
    for cell_id, source in checks.items():
        names = re.findall(r'lab\.check_code\(\s*"([^"]+)"', source)
        assert names and all(f"{n}: not written yet (write " in said[cell_id] for n in names), said[cell_id]
    assert re.search(r"(findings|checks) \d+ of \d+ hold", said[notebook.cells[-1].id])
