"""Checkpoint files: a fingerprint of the training, an atomic save, a checked load.

What a checkpoint holds is the Trainer's business (``Trainer.state_dict``); this module writes
it atomically, loads it with ``torch.load(weights_only=True)`` (plain tensors, numbers, strings
and containers only), and refuses a file that is corrupt or belongs to another training.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any, NoReturn

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
        # torch warns about some refused pickles (e.g. "Detected pickle protocol 4") before it
        # raises: the user should see our one line only.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
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
    "epoch_term_sums": dict,
    "shuffle_gen": torch.Tensor,
    "step_gen": torch.Tensor,
    "rng": dict,
    "early_stopping": dict,
    "history": list,
}


def shown(value: Any, width: int = 60) -> str:
    """``repr(value)`` on one line, cut to ``width`` characters: a bad value in a message."""
    text = " ".join(repr(value).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def is_count(value: Any) -> bool:
    """An int >= 0 (a bool is not a count)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def is_number(value: Any) -> bool:
    """An int or float (a bool is not a number here); nan and inf included."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_tensors(what: str, tensors: Any, reference: dict[str, torch.Tensor] | None) -> None:
    """Refuse ``tensors`` unless it maps names to tensors and, given a ``reference``, the names
    of ``reference`` to tensors of the same shapes and dtypes (a ValueError naming ``what``):
    saved weights must fit the model they load into."""
    if not isinstance(tensors, dict) or not all(
        isinstance(name, str) and isinstance(t, torch.Tensor) for name, t in tensors.items()
    ):
        raise ValueError(f"{what}={shown(tensors)}, not a dict of names to tensors")
    if reference is None:
        return
    odd = sorted(set(tensors) ^ set(reference))
    if odd:
        kind = "lacks the model's" if odd[0] in reference else "has a name the model lacks,"
        raise ValueError(f"{what} {kind} {odd[0]!r}")
    for name, t in tensors.items():
        ref = reference[name]
        if t.shape != ref.shape or t.dtype != ref.dtype:
            raise ValueError(
                f"{what}[{name!r}] is {t.dtype} {list(t.shape)}, not {ref.dtype} {list(ref.shape)}"
            )


def check_trainer_state(
    state: dict[str, Any], path: Path, tag: str, epochs: int, steps_per_epoch: int
) -> None:
    """Refuse counters, sums and a history that this training could not have saved.

    ``state`` has passed :func:`load` with ``TRAINER_STATE``. What the loop keeps at every save
    (each save point is tested): ``step == epoch * steps_per_epoch + batch_in_epoch``, where
    ``batch_in_epoch <= steps_per_epoch`` (``checkpoint_every`` saves after an epoch's last batch,
    before its validation) and is 0 once ``epoch == epochs``; the epoch's sums are empty at its
    start; ``history`` holds a record ``{"epoch": i, "step": i * steps_per_epoch}`` per finished
    epoch i, then a divergence's record (its step: ``step``), and a divergence ends the training
    (``finished``), as do early stopping and the last epoch; the scheduler and the weight average
    took one step per optimizer step. The epoch's loss and term sums may be negative or (terms)
    non-finite: a loss or a logged term may be. Each violation is a one-line CheckpointError naming
    the file, the field and its value; the state's parts with load methods of their own (model,
    optimizer, RNG states, early stopping, weight average) are checked when the trainer loads them.
    """

    def refuse(what: str) -> NoReturn:
        raise CheckpointError(f"checkpoint {path} has {what}; delete it to restart '{tag}' from scratch")

    for key in ("step", "epoch", "batch_in_epoch", "epoch_count"):
        if not is_count(state[key]):
            refuse(f"{key}={shown(state[key])}, not a count (an int >= 0)")
    step, epoch, batch = state["step"], state["epoch"], state["batch_in_epoch"]
    if epoch > epochs:
        refuse(f"epoch={epoch}, past this training's {epochs} epochs")
    if epoch == epochs and batch:
        refuse(f"batch_in_epoch={batch} after the last epoch (epoch={epoch})")
    if batch > steps_per_epoch:
        refuse(f"batch_in_epoch={batch}, past the {steps_per_epoch} batches of an epoch")
    if step != epoch * steps_per_epoch + batch:
        refuse(
            f"step={step}, but epoch={epoch} and batch_in_epoch={batch} make "
            f"{epoch * steps_per_epoch + batch} at {steps_per_epoch} batches per epoch "
            "(or the training set has changed)"
        )

    for key in ("train_time", "epoch_loss_sum"):
        value = state[key]
        if not is_number(value) or not math.isfinite(value) or (key == "train_time" and value < 0):
            refuse(f"{key}={shown(value)}, not a finite number" + (" >= 0" if key == "train_time" else ""))
    sums = state["epoch_term_sums"]
    if not isinstance(sums, dict) or not all(isinstance(k, str) and is_number(v) for k, v in sums.items()):
        refuse(f"epoch_term_sums={shown(sums)}, not a dict of term names to numbers")
    if batch == 0 and (state["epoch_count"] or state["epoch_loss_sum"] or sums):
        refuse(
            f"epoch_count={state['epoch_count']}, epoch_loss_sum={shown(state['epoch_loss_sum'])} and "
            f"epoch_term_sums={shown(sums)} at the start of an epoch (batch_in_epoch=0): sums of no batch"
        )

    finished, diverged, stopping = state["finished"], state["diverged"], state["early_stopping"]
    if diverged and not finished:
        refuse("diverged=True and finished=False (a divergence ends the training)")
    if finished and not diverged and epoch < epochs and stopping.get("stopped_epoch") != epoch:
        refuse(f"finished=True at epoch={epoch} of {epochs}, neither diverged nor stopped early")
    for key in ("best_epoch", "bad_epochs", "stopped_epoch"):
        value = stopping.get(key)  # its types are checked by EarlyStopping.load_state_dict
        if is_count(value) and value > epoch:
            refuse(f"early_stopping.{key}={value}, past epoch={epoch}")
    for part, key in (("scheduler", "last_epoch"), ("weight_average", "updates")):
        value = state[part].get(key) if isinstance(state.get(part), dict) else step
        if not is_count(value) or value != step:
            refuse(f"{part}.{key}={shown(value)}, not step={step} (one per optimizer step)")

    history = state["history"]
    if len(history) != epoch + diverged:
        refuse(
            f"a history of {len(history)} records at epoch={epoch}, not {epoch + diverged} "
            "(one per finished epoch" + (", then the divergence's)" if diverged else ")")
        )
    for i, record in enumerate(history):
        if not isinstance(record, dict):
            refuse(f"history[{i}]={shown(record)}, not a record (a dict)")
        bad = [
            (k, v) for k, v in record.items() if not (isinstance(k, str) and isinstance(v, (str, int, float)))
        ]
        if bad:
            refuse(f"history[{i}] with {bad[0][0]}={shown(bad[0][1])}, not a number or a string")
        last_divergence = diverged and i == len(history) - 1
        for key, expected in (
            ("epoch", i + 1),
            ("step", step if last_divergence else (i + 1) * steps_per_epoch),
        ):
            if not is_count(record.get(key)) or record[key] != expected:
                refuse(f"history[{i}] with {key}={shown(record.get(key))}, not {expected}")
