"""A run as a process a test kills: wait until it has reached a given point, then SIGKILL it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from biaslab.runs import RunDir


def records_of(run: Path, tag: str) -> int:
    """How many metrics records of training ``tag`` the run at ``run`` has logged so far."""
    return sum(r.get("tag") == tag for r in RunDir(run).metrics.read()) if run.exists() else 0


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system) process ``pid`` has used, from /proc; None where unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    except (OSError, IndexError, ValueError):
        return None


def kill_when(
    proc: subprocess.Popen, ready: Callable[[], bool], idle: float = 90, most: float = 1800
) -> None:
    """SIGKILL ``proc`` as soon as ``ready()`` holds (polled every 5 ms). Fails the test when the
    process ends first (with its stderr), or makes no progress: no CPU time used for ``idle``
    seconds (a hang), or not ready after ``most`` seconds in all. Progress, not a wall-clock
    budget: a run on a busy machine is slow, not stuck. Never leaves the process running."""
    try:
        start = last_progress = time.monotonic()
        used = cpu_seconds(proc.pid)
        while not ready():
            assert proc.poll() is None, f"the run ended before it was killed: {proc.stderr.read()}"
            now, cpu = time.monotonic(), cpu_seconds(proc.pid)
            if cpu is None or used is None or cpu > used:
                used, last_progress = cpu, now
            assert now - last_progress < idle, f"the run used no CPU for {idle:g} s: it hangs"
            assert now - start < most, f"the run was not ready after {most:g} s"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
