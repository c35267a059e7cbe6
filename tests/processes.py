"""A run as a process a test kills: wait until it has reached a given point, then SIGKILL it."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from biaslab.runs import RunDir


def records_of(run: Path, tag: str) -> int:
    """How many metrics records of training ``tag`` the run at ``run`` has logged so far."""
    return sum(r.get("tag") == tag for r in RunDir(run).read_metrics()) if run.exists() else 0


def kill_when(proc: subprocess.Popen, ready: Callable[[], bool], timeout: float = 90) -> None:
    """SIGKILL ``proc`` as soon as ``ready()`` holds (polled every 5 ms). Fails the test when the
    process ends first (with its stderr) or makes no progress for ``timeout`` seconds; never
    leaves it running."""
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None, f"the run ended before it was killed: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
