"""The studies the executor tests compare against."""

from __future__ import annotations

from pathlib import Path

import pytest

import biaslab
from biaslab.runs import RunDir, read_json, reproducible, reproducible_record

LONGER = {"gru_epochs": 6, "transformer_epochs": 6}  # MNIST-1D --quick with tasks long enough to kill


def results_of(run: Path) -> dict:
    return reproducible(read_json(Path(run) / "results.json"))


def records_of(run: Path) -> list:
    """metrics.jsonl without time stamps, in a fixed order (tasks finish in any order)."""
    records = [reproducible_record(r) for r in RunDir(run).metrics.read()]
    return sorted(records, key=lambda r: (r["tag"], r["epoch"]))


@pytest.fixture(scope="session")
def reference(tmp_path_factory):
    """MNIST-1D --quick (12 fits) run serially, in order, on one thread per fit."""
    out = tmp_path_factory.mktemp("reference") / "run"
    biaslab.run("mnist1d", LONGER, profile="quick", out=out, threads=1, progress=False)
    return out
