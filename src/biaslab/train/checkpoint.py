"""Checkpoints: what one holds (:class:`TrainingState`), and the callback that saves and loads it.

A file is written atomically, loaded with ``torch.load(weights_only=True)`` (plain tensors,
numbers, strings and containers only), and refused when it is corrupt, belongs to another
training, or holds a state this training could not have saved.

:class:`TrainingState` is everything a training needs to go on bit for bit; :meth:`TrainingState.from_dict`
checks it (types, then the counters, sums and history this training could have saved) before
anything is applied, and :func:`restore` applies it all or nothing. :class:`Checkpointing` is the
callback that loads at fit start and saves after each epoch, every ``checkpoint_every`` steps and
at the end; :func:`fingerprint` names the training a file belongs to (tag, model class and
shapes, config, seed, step function, the run).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import warnings
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, NoReturn

import torch
from torch import nn

from biaslab.checks import is_integer, is_number
from biaslab.config import short_of_memory
from biaslab.errors import CheckpointError
from biaslab.fileio import atomic_write, torch_zip_bytes
from biaslab.formatting import quoted
from biaslab.train.distributed import barrier
from biaslab.train.seed import rng_state, set_rng_state


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


def load(path: Path, expected_fingerprint: str, tag: str) -> dict[str, Any]:
    """The state saved at ``path``; a corrupt file or another training's is a CheckpointError.

    Before ``torch.load``, the file must be torch's zip format (what :func:`save` writes) and
    declare no more than the free memory (a forged directory would otherwise have ``torch.load``
    allocate what it declares; the legacy format's allocations cannot be checked beforehand)."""
    unpacked = torch_zip_bytes(path)
    if unpacked is None:
        raise CheckpointError(
            f"checkpoint {path} is corrupt or not a biaslab checkpoint (not torch's zip format); "
            f"delete it to restart '{tag}' from scratch"
        )
    if short_of_memory(unpacked) is not None:
        raise CheckpointError(
            f"checkpoint {path} declares {unpacked / 2**20:,.0f} MiB, more than the free memory: "
            f"not a checkpoint this training wrote; delete it to restart '{tag}' from scratch"
        )
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
    return state


def is_count(value: Any) -> bool:
    """An int >= 0 (a bool is not a count)."""
    return is_integer(value) and value >= 0


def check_tensors(what: str, tensors: Any, reference: dict[str, torch.Tensor] | None) -> None:
    """Refuse ``tensors`` unless it maps names to tensors and, given a ``reference``, the names
    of ``reference`` to tensors of the same shapes and dtypes (a ValueError naming ``what``):
    saved weights must fit the model they load into."""
    if not isinstance(tensors, dict) or not all(
        isinstance(name, str) and isinstance(t, torch.Tensor) for name, t in tensors.items()
    ):
        raise ValueError(f"{what}={quoted(tensors)}, not a dict of names to tensors")
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


@dataclass
class TrainingState:
    """What a checkpoint holds: everything a training needs to go on bit for bit (on the CPU).

    The model's, optimizer's, scheduler's and gradient scaler's own state dicts; the step and
    epoch counters and the position in the epoch in progress (its batch, the shuffling
    generator's state at its start, its partial sums); the trainer's generators and every global
    RNG; the history; the state of each callback that has one, under its ``state_key``.
    """

    fingerprint: str
    model: dict
    optimizer: dict
    scheduler: dict | None
    grad_scaler: dict
    step: int
    epoch: int
    finished: bool
    diverged: bool
    train_time: float
    batch_in_epoch: int
    epoch_gen_state: torch.Tensor
    epoch_loss_sum: float
    epoch_count: int
    epoch_term_sums: dict
    shuffle_gen: torch.Tensor
    step_gen: torch.Tensor
    rng: dict
    history: list
    callbacks: dict

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (not copied: ``asdict`` would deep-copy every tensor)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, state: dict[str, Any], path: Path, tag: str, epochs: int, steps_per_epoch: int):
        """The state saved at ``path``, once each field has the right type and the counters,
        sums and history are ones this training could have saved; a one-line CheckpointError
        naming the file, the field and its value otherwise. The parts with load methods of their
        own (model, optimizer, RNG states, callbacks) are checked when the trainer loads them."""
        wrong = [f.name for f in fields(cls) if not isinstance(state.get(f.name), _TYPES[f.name])]
        if wrong:
            raise CheckpointError(
                f"checkpoint {path} lacks or has malformed {', '.join(wrong)}; "
                f"delete it to restart '{tag}' from scratch"
            )
        self = cls(**{f.name: state[f.name] for f in fields(cls)})
        self._check(path, tag, epochs, steps_per_epoch)
        return self

    def _check(self, path: Path, tag: str, epochs: int, steps_per_epoch: int) -> None:
        """What the loop keeps at every save (each save point is tested):
        ``step == epoch * steps_per_epoch + batch_in_epoch``, where ``batch_in_epoch <=
        steps_per_epoch`` (``checkpoint_every`` saves after an epoch's last batch, before its
        validation) and is 0 once ``epoch == epochs``; the epoch's sums are empty at its start;
        ``history`` holds a record ``{"epoch": i, "step": i * steps_per_epoch}`` per finished
        epoch i, then a divergence's record (its step: ``step``); a divergence ends the training
        (``finished``), as do early stopping and the last epoch; the scheduler took one step per
        optimizer step. The epoch's loss and term sums may be negative or (terms) non-finite."""

        def refuse(what: str) -> NoReturn:
            raise CheckpointError(f"checkpoint {path} has {what}; delete it to restart '{tag}' from scratch")

        for key in ("step", "epoch", "batch_in_epoch", "epoch_count"):
            if not is_count(getattr(self, key)):
                refuse(f"{key}={quoted(getattr(self, key))}, not a count (an int >= 0)")
        step, epoch, batch = self.step, self.epoch, self.batch_in_epoch
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
            value = getattr(self, key)
            if not math.isfinite(value) or (key == "train_time" and value < 0):
                refuse(
                    f"{key}={quoted(value)}, not a finite number" + (" >= 0" if key == "train_time" else "")
                )
        sums = self.epoch_term_sums
        if not all(isinstance(k, str) and is_number(v) for k, v in sums.items()):
            refuse(f"epoch_term_sums={quoted(sums)}, not a dict of term names to numbers")
        if batch == 0 and (self.epoch_count or self.epoch_loss_sum or sums):
            refuse(
                f"epoch_count={self.epoch_count}, epoch_loss_sum={quoted(self.epoch_loss_sum)} and "
                f"epoch_term_sums={quoted(sums)} at the start of an epoch (batch_in_epoch=0): sums of no "
                "batch"
            )

        stopped = self.callbacks.get("early_stopping", {})
        stopped = stopped.get("stopped_epoch") if isinstance(stopped, dict) else None
        if self.diverged and not self.finished:
            refuse("diverged=True and finished=False (a divergence ends the training)")
        if self.finished and not self.diverged and epoch < epochs and stopped != epoch:
            refuse(f"finished=True at epoch={epoch} of {epochs}, neither diverged nor stopped early")
        last = self.scheduler.get("last_epoch") if self.scheduler is not None else step
        if not is_count(last) or last != step:
            refuse(f"scheduler.last_epoch={quoted(last)}, not step={step} (one per optimizer step)")

        history, diverged = self.history, self.diverged
        if len(history) != epoch + diverged:
            refuse(
                f"a history of {len(history)} records at epoch={epoch}, not {epoch + diverged} "
                "(one per finished epoch" + (", then the divergence's)" if diverged else ")")
            )
        for i, record in enumerate(history):
            if not isinstance(record, dict):
                refuse(f"history[{i}]={quoted(record)}, not a record (a dict)")
            bad = [
                (k, v)
                for k, v in record.items()
                if not (isinstance(k, str) and isinstance(v, (str, int, float)))
            ]
            if bad:
                refuse(f"history[{i}] with {bad[0][0]}={quoted(bad[0][1])}, not a number or a string")
            last_divergence = diverged and i == len(history) - 1
            for key, expected in (
                ("epoch", i + 1),
                ("step", step if last_divergence else (i + 1) * steps_per_epoch),
            ):
                if not is_count(record.get(key)) or record[key] != expected:
                    refuse(f"history[{i}] with {key}={quoted(record.get(key))}, not {expected}")


# The type (as for isinstance) each field of a saved TrainingState must have.
_TYPES: dict[str, type | tuple[type, ...]] = {
    "fingerprint": str,
    "model": dict,
    "optimizer": dict,
    "scheduler": (dict, type(None)),
    "grad_scaler": dict,
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
    "history": list,
    "callbacks": dict,
}


# The fields of a TrainingState that are the trainer's attributes of the same name.
COUNTERS = (
    "step",
    "epoch",
    "finished",
    "diverged",
    "train_time",
    "batch_in_epoch",
    "epoch_gen_state",
    "epoch_loss_sum",
    "epoch_count",
    "epoch_term_sums",
    "history",
)


def capture(trainer, fingerprint: str = "") -> TrainingState:
    """``trainer``'s state as of now (its parts are the live objects', not copies)."""
    return TrainingState(
        fingerprint=fingerprint,
        model=trainer.model.state_dict(),
        optimizer=trainer.optimizer.state_dict(),
        scheduler=trainer.scheduler.state_dict() if trainer.scheduler is not None else None,
        grad_scaler=trainer.scaler.state_dict(),
        shuffle_gen=trainer.shuffle_gen.get_state(),
        step_gen=trainer.step_gen.get_state(),
        rng=rng_state(),
        callbacks={cb.state_key: cb.state_dict() for cb in trainer.callbacks if hasattr(cb, "state_key")},
        **{name: copy.copy(getattr(trainer, name)) for name in COUNTERS},
    )


def restore(trainer, state: TrainingState, path: Path | str) -> None:
    """Put ``state`` into ``trainer``, all or nothing: a part that fails to load puts back what
    the others changed, and the one-line CheckpointError names the part."""
    before, key = copy.deepcopy(capture(trainer)), "callbacks"
    try:
        _set_counters(trainer, state)  # first: the callbacks check their state against them
        for name, load in _parts(trainer, state):
            key = name
            load()
    except (LookupError, RuntimeError, ValueError, TypeError, AttributeError, OverflowError) as exc:
        _set_counters(trainer, before)
        for _, load in _parts(trainer, before):
            load()
        raise CheckpointError(
            f"checkpoint {path} is incomplete or mismatched: a malformed {key} ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())}); delete it to restart '{trainer.tag}' from scratch"
        ) from None


def _set_counters(trainer, state: TrainingState) -> None:
    for name in COUNTERS:
        setattr(trainer, name, copy.copy(getattr(state, name)))
    trainer.train_time, trainer.epoch_loss_sum = float(state.train_time), float(state.epoch_loss_sum)
    trainer.epoch_term_sums = {k: float(v) for k, v in state.epoch_term_sums.items()}


def _parts(trainer, state: TrainingState) -> list[tuple[str, Any]]:
    """(name, loader) of each part of ``state`` that an object loads and checks."""
    parts = [
        ("model", lambda: trainer.model.load_state_dict(state.model)),
        ("optimizer", lambda: trainer.optimizer.load_state_dict(state.optimizer)),
        ("grad_scaler", lambda: trainer.scaler.load_state_dict(state.grad_scaler)),
        ("shuffle_gen", lambda: trainer.shuffle_gen.set_state(state.shuffle_gen)),
        ("step_gen", lambda: trainer.step_gen.set_state(state.step_gen)),
        ("epoch_gen_state", lambda: torch.Generator().set_state(state.epoch_gen_state)),
        ("rng", lambda: set_rng_state(state.rng)),
    ]
    if trainer.scheduler is not None:
        parts.append(("scheduler", lambda: trainer.scheduler.load_state_dict(state.scheduler)))
    stateful = {cb.state_key: cb for cb in trainer.callbacks if hasattr(cb, "state_key")}
    if set(state.callbacks) != set(stateful):
        raise ValueError(f"states of {sorted(state.callbacks)}, not of {sorted(stateful)}")
    for key, cb in stateful.items():
        parts.append(
            (f"callbacks.{key}", lambda cb=cb, key=key: cb.load_state_dict(state.callbacks[key], trainer))
        )
    return parts


class Checkpointing:
    """A trainer callback (:mod:`biaslab.train.callbacks`): save the training to ``path`` and,
    when the file exists as a fit starts, go on from it.

    Saves after each epoch's validation, every ``config.checkpoint_every`` optimizer steps when
    that is set, and once the training ends. A file of another training (its fingerprint: the
    tag, model class and shapes, config, seed, step function and ``fingerprint``) or one that
    fails the checks of :meth:`TrainingState.from_dict` is a CheckpointError, and nothing of it
    is applied. The trainer runs this callback outermost: it restores every other callback
    before they start and saves after they have all acted. Across processes every process
    loads the file and takes part in each save (the ranks' random states are gathered), rank 0
    writes it, and the others wait until it is written.

    Args:
        path: the checkpoint file.
        fingerprint: a string identifying the run, mixed into the training's fingerprint.
    """

    def __init__(self, path: str | Path, fingerprint: str = ""):
        self.path, self.extra = Path(path), fingerprint

    def on_fit_start(self, trainer) -> None:
        self.fingerprint = trainer.fingerprint(self.extra)
        if self.path.exists():
            state = load(self.path, self.fingerprint, trainer.tag)
            state = TrainingState.from_dict(
                state, self.path, trainer.tag, trainer.config.epochs, trainer.steps_per_epoch
            )
            trainer.load_state(state, self.path)
        self._finished_before = trainer.finished  # reloaded as it was: nothing new to save

    def on_step_end(self, trainer) -> None:
        every = trainer.config.checkpoint_every
        if every and trainer.step % every == 0:
            self._save(trainer)

    def on_validation_end(self, trainer, record: dict) -> None:
        if not trainer.stopping:  # else on_fit_end saves the final weights
            self._save(trainer)

    def on_fit_end(self, trainer) -> None:
        if not self._finished_before:
            self._save(trainer)

    def _save(self, trainer) -> None:
        state = trainer.state(self.fingerprint).to_dict()  # in every process: it may gather
        if trainer.world.is_main:
            save(self.path, state)
        if trainer.world.distributed:  # no process goes on before the file is complete
            barrier(trainer.device)
