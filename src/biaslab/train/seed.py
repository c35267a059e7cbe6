"""Seeding and RNG state capture: a seed fully fixes a CPU run, and a checkpoint restores it.

:func:`seed_everything`, :func:`derive_seed` (a seed for a named part, independent of call order)
and the capture and restore of every global RNG state, in a form a checkpoint holds with
``weights_only=True`` (NumPy's and Python's states as JSON strings).
"""

from __future__ import annotations

import hashlib
import json
import random

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator and torch's CPU generator."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def derive_seed(seed: int, *names: str) -> int:
    """A seed for a named sub-task, stable across runs and Python versions."""
    digest = hashlib.sha256(json.dumps([seed, *names]).encode()).digest()
    return int.from_bytes(digest[:4], "little")


def rng_state() -> dict:
    """Every global RNG state in a form ``torch.load(weights_only=True)`` accepts."""
    py_version, py_internal, py_gauss = random.getstate()
    np_state = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        # NumPy's and Python's states as JSON strings: plain data, safe to unpickle.
        "numpy": json.dumps(
            [np_state[0], np_state[1].tolist(), *map(float, np_state[2:4]), float(np_state[4])]
        ),
        "python": json.dumps([py_version, list(py_internal), py_gauss]),
    }


def set_rng_state(state: dict) -> None:
    """Restore what :func:`rng_state` captured."""
    torch.set_rng_state(state["torch"])
    name, keys, pos, has_gauss, cached = json.loads(state["numpy"])
    np.random.set_state((name, np.array(keys, dtype=np.uint32), int(pos), int(has_gauss), cached))
    version, internal, gauss = json.loads(state["python"])
    random.setstate((version, tuple(internal), gauss))
