"""Seeds and grids from the command line: the product as runs under one sweep folder, aggregated
(mean ± std, claims held k of n, the best configuration on a validation metric only), the same
results whatever runs them, a killed sweep resumed, a failing run reported while the others finish."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from biaslab import runner
from biaslab.cli import main
from biaslab.errors import ConfigError
from biaslab.runs import read_json, reproducible
from biaslab.sweep import SWEEP_RESULTS, MemberSpec, aggregate, grid_of, parse_seeds
from tests.processes import kill_when

pytestmark = pytest.mark.usefixtures("in_tmp")
SCRIPT = Path(sys.executable).parent / "biaslab"
XOR = ["run", "xor", "--quick", "--set", "epochs=5", "--seeds", "0-1", "--set", "lr=0.1,0.5", "--no-progress"]
MEMBERS = ["lr=0.1,seed=0", "lr=0.1,seed=1", "lr=0.5,seed=0", "lr=0.5,seed=1"]


def test_seeds_and_grids_are_read_as_written():
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4] and parse_seeds("0,3,7") == [0, 3, 7]
    assert parse_seeds("0-2,9") == [0, 1, 2, 9]
    for bad in ("a", "3-1", "0,0", "-1"):
        with pytest.raises(ConfigError, match="--seeds"):
            parse_seeds(bad)
    grid = grid_of({"lr": "1e-3,3e-3", "train_sizes": "100,200;300,400", "epochs": "3"}, ["train_sizes"])
    assert grid == {"lr": ["1e-3", "3e-3"], "train_sizes": ["100,200", "300,400"], "epochs": ["3"]}


def members(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if (p / "COMPLETE").exists())


def test_a_sweep_runs_every_combination_and_aggregates_them(capsys):
    assert main([*XOR, "--out", "sweep"]) == 0
    folder = Path("sweep")
    assert members(folder) == MEMBERS
    summary = read_json(folder / SWEEP_RESULTS)
    assert [c["config"] for c in summary["configurations"]] == [{"lr": "0.1"}, {"lr": "0.5"}]
    for configuration in summary["configurations"]:
        runs = [read_json(folder / name / "results.json") for name in configuration["runs"]]
        values = [r["metrics"]["mlp_test_accuracy"] for r in runs]
        assert configuration["metrics"]["mlp_test_accuracy"]["mean"] == pytest.approx(sum(values) / 2)
        claim = runs[0]["claims"][0]["claim"]
        held = sum(c["passed"] is True for r in runs for c in r["claims"] if c["claim"] == claim)
        assert configuration["claims"][claim]["held"] == held and configuration["claims"][claim]["runs"] == 2
    assert read_json(folder / "lr=0.5,seed=1" / "config.json")["config"]["lr"] == 0.5
    index = (folder / "index.html").read_text()
    assert all(name in index for name in MEMBERS)
    out = capsys.readouterr().out
    assert "lr=0.1: 2 run(s)" in out and "index: sweep/index.html" in out


def test_local_workers_give_the_serial_sweep():
    assert main([*XOR, "--out", "serial", "--threads", "1"]) == 0
    assert main([*XOR, "--out", "local", "--executor", "local", "--workers", "2"]) == 0
    for name in MEMBERS:
        serial, local = (
            reproducible(read_json(Path(f) / name / "results.json")) for f in ("serial", "local")
        )
        assert serial == local


def test_a_killed_sweep_resumes_without_running_finished_runs_again():
    folder = Path("killed")
    proc = subprocess.Popen([str(SCRIPT), *XOR, "--out", str(folder)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    kill_when(proc, lambda: folder.exists() and len(members(folder)) >= 2)
    done = {name: (folder / name / "COMPLETE").stat().st_mtime_ns for name in members(folder)}
    assert 2 <= len(done) < 4
    assert main(["run", "--resume", str(folder)]) == 0
    assert members(folder) == MEMBERS
    assert {name: (folder / name / "COMPLETE").stat().st_mtime_ns for name in done} == done
    assert main([*XOR, "--out", "again", "--threads", "2"]) == 0
    for name in MEMBERS:  # the sweep killed and resumed gives the results of one run through
        assert reproducible(read_json(folder / name / "results.json")) == reproducible(
            read_json(Path("again") / name / "results.json")
        )


def test_a_failing_run_is_reported_while_the_others_finish(monkeypatch, capsys):
    real = runner.run

    def fails_for_seed_1(*args, seed=None, **kwargs):
        if seed == 1:
            raise RuntimeError("a bug in this run")
        return real(*args, seed=seed, **kwargs)

    monkeypatch.setattr(runner, "run", fails_for_seed_1)  # serial: the runs are in this process
    assert main([*XOR, "--out", "broken"]) == 1
    assert "2 of 4 runs failed (lr=0.1,seed=1: RuntimeError: a bug in this run)" in capsys.readouterr().err
    assert members(Path("broken")) == ["lr=0.1,seed=0", "lr=0.5,seed=0"]


def test_the_best_configuration_is_chosen_on_validation_only(tmp_path):
    specs, combos = [], [{"lr": "0.1"}, {"lr": "0.5"}]
    val_loss = {("0.1", 0): 0.30, ("0.1", 1): 0.34, ("0.5", 0): 0.20, ("0.5", 1): 0.26}
    for (lr, seed), loss in val_loss.items():
        folder = tmp_path / f"lr={lr},seed={seed}"
        folder.mkdir()
        test = 0.9 if lr == "0.1" else 0.8  # the test metric would choose the other one
        results = {"metrics": {"val_loss": loss, "test_accuracy": test}, "claims": []}
        (folder / "results.json").write_text(json.dumps(results))
        specs.append(MemberSpec("xor", "quick", (("lr", lr),), seed, 1, "cpu", str(folder), "host"))
    summary = aggregate(tmp_path, specs, combos, "val_loss", ["lr"])
    assert summary["best"]["config"] == {"lr": "0.5"}
    assert summary["best"]["val_loss"]["mean"] == pytest.approx(0.23)
    assert summary["best"]["val_loss"]["std"] == pytest.approx(0.0424264, rel=1e-5)
    assert main(["run", "xor", "--quick", "--seeds", "0-1", "--select", "test_accuracy"]) == 2
    assert not Path("runs").exists()  # refused before anything was written


def test_a_sweep_groups_by_the_dimensions_and_selects_in_the_declared_direction(tmp_path):
    """A metric recorded with its dimensions keeps them in the sweep's aggregate, and its declared
    direction picks the best configuration (a gap: lower is better, which its name cannot say)."""
    specs, combos = [], [{"lr": "0.1"}, {"lr": "0.5"}]
    for lr, gap in (("0.1", 0.05), ("0.5", 0.2)):
        folder = tmp_path / f"lr={lr},seed=0"
        folder.mkdir()
        record = {"name": "gap", "value": gap, "dims": {"model": "mlp", "split": "val"}, "better": "lower",
                  "key": "mlp_val_gap"}  # fmt: skip
        results = {"metrics": {"mlp_val_gap": gap}, "records": [record], "claims": []}
        (folder / "results.json").write_text(json.dumps(results))
        specs.append(MemberSpec("xor", "quick", (("lr", lr),), 0, 1, "cpu", str(folder), "host"))
    summary = aggregate(tmp_path, specs, combos, "mlp_val_gap", ["lr"])
    first = summary["configurations"][0]["metrics"]["mlp_val_gap"]
    assert first["dims"] == {"model": "mlp", "split": "val"} and first["name"] == "gap"
    assert summary["best"]["config"] == {"lr": "0.1"} and summary["best"]["rule"].startswith("lowest")
