"""How biaslab installs where students are: torch is never pinned (a machine keeps its own, Colab's
CUDA build included), and a tag publishes the sdist and the wheel (.github/workflows/release.yml;
the workflow itself runs on GitHub only: here its content is checked)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def project() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def test_torch_is_a_lower_bound_only():
    torch = [Requirement(r) for r in project()["dependencies"] if Requirement(r).name == "torch"]
    assert len(torch) == 1
    assert all(spec.operator == ">=" for spec in torch[0].specifier), torch[0]  # never ==, <, ~=


def test_no_extra_pins_torch():
    for name, requirements in project()["optional-dependencies"].items():
        for r in requirements:
            assert Requirement(r).name != "torch", f"extra {name} names torch: {r}"


def test_a_tag_builds_and_publishes_the_sdist_and_the_wheel():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML reads the key `on` as True
    build = " ".join(step.get("run", "") for step in workflow["jobs"]["build"]["steps"])
    assert "python -m build --sdist --wheel" in build and "GITHUB_REF_NAME" in build
    publish = workflow["jobs"]["publish"]
    assert publish["needs"] == "build" and publish["permissions"] == {"id-token": "write"}
    assert any(step.get("uses", "").startswith("pypa/gh-action-pypi-publish") for step in publish["steps"])


def test_no_source_or_test_file_is_ignored_by_git():
    """A pattern meant for run output (`runs/`) once also ignored the package `biaslab/runs`: the
    working copy passed and a clean clone could not import it. Every file under src/ and tests/
    must be one a commit can carry."""
    import shutil
    import subprocess

    import pytest

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    files = [
        str(p.relative_to(ROOT))
        for folder in ("src", "tests")
        for p in (ROOT / folder).rglob("*")
        if p.is_file()
        and not any(part == "__pycache__" or part.endswith(".egg-info") for part in p.parts)
        and not p.name.endswith(".pyc")
    ]
    ignored = subprocess.run(
        ["git", "check-ignore", "--stdin"], cwd=ROOT, input="\n".join(files), capture_output=True, text=True
    ).stdout.split()
    assert ignored == [], f"git ignores these project files: {ignored}"
