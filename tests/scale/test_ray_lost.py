"""A Ray cluster that goes away mid-run: one line naming what was lost, exit 2 (not an internal
error), the finished tasks kept, and a resume on this machine finishing with the results of an
uninterrupted run. Its own cluster on 127.0.0.1, stopped by the test (in a module of its own: the
other Ray tests' cluster is gone by then)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.scale.conftest import LONGER, records_of, results_of
from tests.scale.ray_cluster import LOOPBACK, loopback_cluster

pytest.importorskip("ray")
REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "biaslab"
RAY = Path(sys.executable).parent / "ray"


def finished_tasks(run: Path) -> int:
    return sum(1 for _ in (run / "tasks").rglob("*.json")) if (run / "tasks").is_dir() else 0


def test_a_cluster_that_goes_away_is_one_line_and_the_run_resumes_here(tmp_path, reference):
    run = tmp_path / "run"
    env = {**os.environ, **LOOPBACK}
    sets = [arg for key, value in LONGER.items() for arg in ("--set", f"{key}={value}")]
    with loopback_cluster(cpus=1, pythonpath=REPO) as address:
        proc = subprocess.Popen(
            [str(SCRIPT), "run", "mnist1d", "--quick", *sets, "--executor", "ray", "--address", address,
             "--out", str(run), "--no-progress"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
        )  # fmt: skip
        try:
            while finished_tasks(run) < 2:  # some of the 12 fits done, the rest to come
                ended = proc.poll() is not None
                assert not ended, f"the run ended before the cluster went away: {proc.stderr.read()[-3000:]}"
                time.sleep(0.05)
            subprocess.run([str(RAY), "stop", "--force"], env=env, capture_output=True, timeout=180)
            err = proc.communicate(timeout=300)[1]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    lines = [line for line in err.splitlines() if line.startswith("biaslab: ")]
    assert proc.returncode == 2, err[-3000:]
    assert len(lines) == 1 and "the Ray cluster went away mid-run" in lines[0], err[-3000:]
    assert "internal error" not in err and f"continue with: biaslab run --resume {run}" in lines[0]
    kept = finished_tasks(run)
    assert kept >= 2 and not (run / "COMPLETE").exists()

    resumed = subprocess.run(
        [str(SCRIPT), "run", "--resume", str(run), "--executor", "local", "--no-progress"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert results_of(run) == results_of(reference)
    assert records_of(run) == records_of(reference)
