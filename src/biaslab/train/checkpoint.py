"""Checkpoint files: a fingerprint of the training, an atomic save, a checked load.

What a checkpoint holds is the Trainer's business (``Trainer.state_dict``); this module writes
it atomically, loads it with ``torch.load(weights_only=True)`` (plain tensors, numbers, strings
and containers only), and refuses a file that is corrupt or belongs to another training.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from torch import nn

from biaslab.errors import CheckpointError
from biaslab.fileio import atomic_write


def fingerprint(
    model: nn.Module, config, tag: str, seed: int, extra: str = "", step_name: str | None = None
) -> str:
    """A short hash of what makes a training: tag, model class and shapes, config, seed, ``extra``.

    ``step_name`` (a step function's name) joins the hash only when given, so that checkpoints
    of trainings without one keep their fingerprint.
    """
    shapes = [list(p.shape) for p in model.parameters()]
    parts = [tag, type(model).__name__, shapes, asdict(config), seed, extra]
    if step_name is not None:
        parts.append(step_name)
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def save(path: Path, state: dict[str, Any]) -> None:
    """Write ``state`` to ``path`` atomically (never half-written)."""
    atomic_write(path, lambda f: torch.save(state, f))


def load(
    path: Path, expected_fingerprint: str, tag: str, required: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The state saved at ``path``; a corrupt file or another training's is a CheckpointError.

    ``required`` maps keys the state must hold to their type (a type or tuple of types, as for
    ``isinstance``); a state that lacks one or holds another type is refused too.
    """
    try:
        state = torch.load(path, weights_only=True)
    except Exception as exc:  # any unpickling failure means the file is unusable
        raise CheckpointError(
            f"checkpoint {path} is corrupt or not a biaslab checkpoint "
            f"({type(exc).__name__}); delete it to restart '{tag}' from scratch"
        ) from None
    if not isinstance(state, dict) or state.get("fingerprint") != expected_fingerprint:
        raise CheckpointError(
            f"checkpoint {path} does not match this run (different model, config or seed); "
            "resume with the run's own config or start a new run"
        )
    wrong = [key for key, kind in (required or {}).items() if not isinstance(state.get(key), kind)]
    if wrong:
        raise CheckpointError(
            f"checkpoint {path} lacks or has malformed {', '.join(wrong)}; "
            f"delete it to restart '{tag}' from scratch"
        )
    return state


# What a Trainer's checkpoint must hold (``Trainer.state_dict``), and of which type.
TRAINER_STATE: dict[str, type | tuple[type, ...]] = {
    "model": dict,
    "optimizer": dict,
    "scheduler": (dict, type(None)),
    "step": int,
    "epoch": int,
    "finished": bool,
    "diverged": bool,
    "train_time": (int, float),
    "batch_in_epoch": int,
    "epoch_gen_state": torch.Tensor,
    "epoch_loss_sum": (int, float),
    "epoch_count": int,
    "shuffle_gen": torch.Tensor,
    "rng": dict,
    "early_stopping": dict,
    "history": list,
}
