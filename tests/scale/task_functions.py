"""Task functions for the executor tests: module-level, so spawned workers and Ray import them."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class StudyConfig:
    """A config as a lab's: frozen, picklable; ``marks`` is a folder the tasks may leave files in."""

    marks: str = ""
    fail: str = ""  # the key that raises


def draw(task, name: str, size: int) -> dict:
    """Draws from torch's generator after the task's seeding, and a training seed: what fixes a task."""
    if name == task.cfg.fail:
        raise ValueError(f"task {name} fails on purpose")
    return {"draws": torch.rand(size).tolist(), "seed": task.seed_for(name), "pid": os.getpid()}


def dies_once(task, name: str) -> dict:
    """SIGKILLs its own worker process at its first attempt (a mark file remembers it), then works."""
    mark = Path(task.cfg.marks) / f"{name}.started"
    if not mark.exists():
        mark.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return {"draws": torch.rand(3).tolist()}


def dies_beside_a_slow_one(task, name: str) -> dict:
    """``slow`` waits until ``fast`` has started and a second longer, so it is in flight when
    ``fast`` SIGKILLs its worker (once, as :func:`dies_once`); any other name just draws."""
    if name == "slow":
        deadline = time.monotonic() + 60
        while not (Path(task.cfg.marks) / "fast.started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)
    if name != "fast":
        return {"draws": torch.rand(3).tolist()}
    return dies_once(task, name)


def always_dies(task, name: str) -> dict:
    os.kill(os.getpid(), signal.SIGKILL)


def bad_input(task, name: str, size: int) -> dict:
    from biaslab.errors import BiaslabError

    raise BiaslabError(f"{name}: a value the user can fix")


def saves_a_file(task, name: str, size: int) -> dict:
    """Saves a file of its own under models/ (a fitted model's, as compare's fits do)."""
    task.save_file(f"models/{name}/weights.bin", bytes(range(size)))
    return {"saved": name}


def saves_outside_models(task, name: str, size: int) -> dict:
    task.save_file(f"../{name}.bin", b"no")
    return {}
