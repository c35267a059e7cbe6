"""biaslab as people install it: ``python -m build`` makes a wheel and an sdist holding the
templates and notebooks, and the wheel, installed into a fresh virtual environment (torch==2.13.0
first), runs a lab and copies the notebooks from a folder outside the source tree.

Slow (a fresh environment: about 40 s with pip's cache); CI runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from biaslab.notebooks import NOTEBOOKS

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ("base", "claims", "index", "inline", "macros", "report")

pytestmark = pytest.mark.slow


def run(*args, cwd: Path, timeout: int = 900) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{' '.join(map(str, args))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: the build backend (setuptools) comes from this environment, not the network
    run(
        sys.executable, "-m", "build", "--no-isolation", "--wheel", "--sdist", "--outdir", out, ROOT, cwd=ROOT
    )
    return out


def test_the_wheel_and_the_sdist_hold_the_templates_and_the_notebooks(dist):
    (wheel,) = dist.glob("biaslab-*.whl")
    (sdist,) = dist.glob("biaslab-*.tar.gz")
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    in_sdist = {Path(*Path(n).parts[1:]).as_posix() for n in tarfile.open(sdist).getnames()}
    for name in NOTEBOOKS:
        assert f"biaslab/notebooks/{name}" in in_wheel and f"src/biaslab/notebooks/{name}" in in_sdist
    for template in TEMPLATES:
        assert f"biaslab/report/templates/{template}.html.j2" in in_wheel
        assert f"src/biaslab/report/templates/{template}.html.j2" in in_sdist
    metadata = zipfile.ZipFile(wheel).read(next(n for n in in_wheel if n.endswith("METADATA"))).decode()
    for needed in ("Classifier: Framework :: Jupyter", "Project-URL: Source", "Provides-Extra: graph",
                   "Provides-Extra: notebooks", "Provides-Extra: test"):  # fmt: skip
        assert needed in metadata


def test_the_wheel_works_in_a_fresh_environment_outside_the_source_tree(dist, tmp_path):
    venv, work = tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    run(sys.executable, "-m", "venv", venv, cwd=work)
    python, biaslab = venv / "bin" / "python", venv / "bin" / "biaslab"
    # --no-compile: no .pyc written for the thousands of modules no test imports (15 of torch's
    # 20 s of install here); what is imported is compiled on import as usual
    pip_install = (python, "-m", "pip", "install", "-q", "--no-compile")
    run(*pip_install, "torch==2.13.0", cwd=work)  # the CPU wheel, first
    torch_version = "import torch; print(torch.__version__, torch.__file__)"
    before = run(python, "-c", torch_version, cwd=work)
    (wheel,) = dist.glob("biaslab-*.whl")
    run(*pip_install, wheel, cwd=work)
    assert run(python, "-c", torch_version, cwd=work) == before  # the installed torch is kept
    where = run(python, "-c", "import biaslab; print(biaslab.__file__)", cwd=work)
    assert Path(where.strip()).is_relative_to(venv) and not Path(where.strip()).is_relative_to(ROOT)
    out = run(biaslab, "run", "xor", "--quick", "--out", work / "xor", "--no-progress", cwd=work)
    assert (work / "xor" / "COMPLETE").is_file() and (work / "xor" / "report.html").is_file(), out
    run(biaslab, "notebooks", work / "notebooks", cwd=work)
    assert sorted(p.name for p in (work / "notebooks").iterdir()) == sorted(NOTEBOOKS)
