"""The catalog: ``biaslab list`` reads from the sources, no lab imported; ``biaslab config``
imports the one lab it shows.

Every declaration must be literal, and ``list`` may not import torch (timings:
benchmarks/startup.py).
"""

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from biaslab import catalog, cli, registry

EXPERIMENTS = registry.all_experiments()


def run_python(code: str, data_dir) -> str:
    env = {**os.environ, "BIASLAB_DATA": str(data_dir)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_declaration_is_literal():
    """name, day, step, title and summary of every @experiment are literals: `list` reads them
    without importing the lab. A lab whose declaration is not literal fails here, by name."""
    entries, problems = catalog.read_catalog()
    assert not problems, "not readable from the source:\n" + "\n".join(
        f"  {p.module}: {p.reason}" for p in problems
    )
    assert sorted(e.name for e in entries) == sorted(e.name for e in EXPERIMENTS)
    assert {e.module for e in entries} == set(catalog.experiment_modules())


def test_list_imports_no_lab_and_config_its_own(tmp_path, capsys):
    """The first call in an empty data directory: ``list`` imports no torch and no lab,
    ``config NAME`` that lab alone; both print what the imported registry gives."""
    probe = textwrap.dedent(
        """
        import contextlib, io, json, sys
        from biaslab.cli import main

        report = {}
        for argv in (["list"], ["config", "xor"], ["config", "mnist-mlp"]):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = main(argv)
            heavy = sorted(m for m in sys.modules if m == "torch" or m.startswith("biaslab.experiments."))
            report[" ".join(argv)] = {"code": code, "out": out.getvalue(), "heavy": heavy}
        print(json.dumps(report))
        """
    )
    data = tmp_path / "empty"
    data.mkdir()
    report = json.loads(run_python(probe, data))
    for command, got in report.items():
        assert got["code"] == 0, command
        own = {"list": [], "config xor": ["biaslab.experiments.xor", "torch"]}.get(command)
        if own is not None:
            assert got["heavy"] == own, f"{command} imported {got['heavy'][:5]}"
        expected = io.StringIO()
        with contextlib.redirect_stdout(expected):
            assert cli.main(command.split()) == 0
        assert got["out"] == expected.getvalue(), command
    assert list(data.iterdir()) == []  # nothing cached, nothing written
    names = [line.split()[0] for line in report["list"]["out"].splitlines() if line.startswith("  ")]
    assert names == [e.name for e in EXPERIMENTS]


# -- the mechanism, on a fake package root ----------------------------------------------------
BASE = '''
"""A base config module: the slice runs only what its config needs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import not_a_real_package_xyz  # bound lazily: never imported, the config never uses it
from not_a_real_package_xyz import helper
from biaslab.config import check_range

BOOM = 1 / 0  # never run: nothing the config needs uses it
LIMITS = {"width": 1}
LIMITS.update(depth=2)  # run: it changes a name the config uses


def unused():
    return BOOM


@dataclass(frozen=True)
class BaseConfig:
    MODES: ClassVar[tuple[str, ...]] = ("a", "b")

    mode: Literal["a", "b"] = "a"
    depth: int = 3

    def __post_init__(self):
        check_range(self, "depth", LIMITS["depth"])

    def model(self):
        return helper(not_a_real_package_xyz.thing)
'''

LAB = '''
"""A fake lab."""
from __future__ import annotations

import math
from dataclasses import dataclass

import not_a_real_package_xyz as heavy
from biaslab.fakebase import LIMITS, BaseConfig
from biaslab.registry import experiment
from biaslab.train.config import training_without

SCALE = int(math.sqrt(16))
QUICK = {"depth": 2}
Lean = training_without("Lean", BaseConfig, mode="one mode only")  # a part without a key


@dataclass(frozen=True)
class FakeConfig:
    base: Lean = Lean()
    width: int = SCALE * LIMITS["width"]


@experiment(
    name="fake-lab",
    day=1,
    step=5,
    summary="a fake lab",
    config=FakeConfig,
    quick={**QUICK, "width": 1},
    full={"depth": 9},
)
def run(ctx):
    heavy.train(ctx)
'''


@pytest.fixture
def fake_root(tmp_path, monkeypatch):
    """A package root holding ``fakebase.py`` and ``experiments/fake_lab.py``; returns a
    function that writes the lab's source."""
    root = tmp_path / "biaslab"
    (root / "experiments").mkdir(parents=True)
    (root / "fakebase.py").write_text(BASE)
    monkeypatch.setattr(catalog, "ROOT", root)
    monkeypatch.setattr(catalog, "EXPERIMENTS_DIR", root / "experiments")
    lab = root / "experiments" / "fake_lab.py"

    def write(source: str = LAB) -> str:
        mtime = lab.stat().st_mtime_ns if lab.exists() else 0
        lab.write_text(source)
        os.utime(lab, ns=(mtime + 10**9, mtime + 10**9))  # a new time even on a coarse clock
        return "biaslab.experiments.fake_lab"

    return write


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ('summary="a fake lab"', "summary=LIMITS", r"fake_lab.py:\d+: summary= is not a literal \(LIMITS\)"),
        ("day=1", 'day="1"', r"fake_lab.py:\d+: day='1' is not a int"),
        ('    summary="a fake lab",\n', "", r"fake_lab.py:\d+: @experiment without summary"),
        ("step=5,", "**{'step': 5},", r"keywords only"),
        ("@experiment(", "DECLARED = dict(", r"fake_lab.py: no @experiment\(...\) decorator"),
    ],
)
def test_a_declaration_that_is_not_literal_is_named(fake_root, old, new, reason):
    """A problem names the module, file, line and keyword; the registry imports such a module."""
    module = fake_root(LAB.replace(old, new))
    entries, problems = catalog.read_catalog()
    assert entries == [] and [p.module for p in problems] == [module]
    assert re.search(reason, problems[0].reason), problems[0].reason


def test_other_decorators_beside_the_declaration_are_fine(fake_root):
    fake_root(LAB.replace("@experiment(", "@staticmethod\n@experiment("))
    entries, problems = catalog.read_catalog()
    assert [e.name for e in entries] == ["fake-lab"] and problems == []
