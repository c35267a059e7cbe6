"""A lab's study as tasks, end to end (MNIST-1D --quick: 12 fits): the same results whatever runs
the tasks and in whatever order; a driver killed and resumed, a worker killed mid-study, a task
that raises."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import biaslab
from biaslab import runner
from biaslab.cli import main
from biaslab.experiments import mnist1d
from biaslab.runs import read_json
from biaslab.scale.executors import SerialExecutor
from tests.processes import kill_when
from tests.scale.conftest import LONGER, records_of, results_of

pytestmark = pytest.mark.usefixtures("in_tmp")
SCRIPT = Path(sys.executable).parent / "biaslab"


class ReversedExecutor(SerialExecutor):
    def run(self, specs, receive):
        super().run(list(reversed(specs)), receive)


def test_serial_reversed_and_local_workers_give_the_same_bits(reference, monkeypatch):
    local = biaslab.run("mnist1d", LONGER, profile="quick", out="local", executor="local", workers=2,
                        progress=False)  # fmt: skip
    assert read_json(local.run_dir / "config.json")["threads"] == 1  # the cores divided between two
    with monkeypatch.context() as patched:
        patched.setattr(runner, "make_executor", lambda *args: ReversedExecutor())
        backward = biaslab.run("mnist1d", LONGER, profile="quick", out="backward", threads=1, progress=False)
    assert results_of(reference) == results_of(local.run_dir) == results_of(backward.run_dir)
    assert records_of(reference) == records_of(local.run_dir) == records_of(backward.run_dir)
    assert len(list((local.run_dir / "tasks" / "train_one").glob("*.json"))) == 10


def test_a_killed_driver_resumes_the_study_without_rerunning_finished_tasks(reference):
    run = Path("killed")
    command = [str(SCRIPT), "run", "mnist1d", "--quick", "--out", str(run), "--executor", "local",
               "--workers", "2", "--no-progress", *(f"--set={k}={v}" for k, v in LONGER.items())]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    finished = lambda: list(run.glob("tasks/*/*.json"))
    workers = []
    kill_when(proc, lambda: len(finished()) >= 4 and bool(workers.extend(_workers_of(proc.pid)) or workers))
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in workers):  # its workers end with it
        assert time.monotonic() < deadline, "the driver's workers outlived it"
        time.sleep(0.05)
    before = {p.name: p.stat().st_mtime_ns for p in finished()}
    assert 4 <= len(before) < 12 and not (run / "COMPLETE").exists()
    biaslab.run(resume=run, progress=False)
    assert results_of(run) == results_of(reference)
    assert records_of(run) == records_of(reference)
    assert {p.name: p.stat().st_mtime_ns for p in finished() if p.name in before} == before  # not rerun


def test_a_worker_killed_mid_study_has_its_task_rerun_and_the_same_results(reference):
    run = Path("worker-killed")
    command = [str(SCRIPT), "run", "mnist1d", "--quick", "--out", str(run), "--executor", "local",
               "--workers", "2", "--no-progress", *(f"--set={k}={v}" for k, v in LONGER.items())]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        in_progress = run / "tasks" / "train_one" / "gru-normal-0.metrics.jsonl"  # an epoch logged
        deadline = time.monotonic() + 120
        while not in_progress.exists():
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the study made no progress"
            time.sleep(0.005)
        workers = _workers_of(proc.pid)
        assert workers, "no worker process found"
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    assert "a worker died" in stderr and "again" in stderr  # told, whichever tasks it took with it
    assert results_of(run) == results_of(reference)
    assert records_of(run) == records_of(reference)


def test_a_raising_task_lets_the_others_finish_and_exits_1(monkeypatch, capsys):
    real = mnist1d.build

    def broken(name):
        if name == "gru":
            raise RuntimeError("a bug in the GRU")
        return real(name)

    monkeypatch.setattr(mnist1d, "build", broken)  # serial: the tasks run in this process
    code = main(["run", "mnist1d", "--quick", "--out", "broken", "--no-progress"])
    assert code == 1
    err = capsys.readouterr().err
    assert "2 of 12 tasks failed (train_one gru-normal-0, train_one gru-shuffled-0)" in err
    assert "RuntimeError: a bug in the GRU" in err
    tasks = Path("broken/tasks/train_one")
    assert (
        len(list(tasks.glob("*.json"))) == 8 and len(list(Path("broken/tasks/train_udl").glob("*.json"))) == 2
    )
    assert "a bug in the GRU" in (tasks / "gru-normal-0.traceback.txt").read_text()
    assert not Path("broken/COMPLETE").exists()


def _parent(proc_dir: Path) -> int | None:
    try:
        return int((proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _workers_of(pid: int) -> list[int]:
    """The spawned worker processes of the driver ``pid`` (not its resource tracker)."""
    found = []
    for proc_dir in Path("/proc").glob("[0-9]*"):
        if _parent(proc_dir) != pid:
            continue
        try:
            cmdline = (proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "spawn_main" in cmdline and "resource_tracker" not in cmdline:
            found.append(int(proc_dir.name))
    return found
