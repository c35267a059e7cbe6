"""One training loop for every lab.

Two data paths:

* tensors already in memory (``train=(x, y)``): each epoch draws one permutation, gathers the
  shuffled tensors once and takes mini-batches as *slices* of them — no per-sample indexing, no
  collation (about 1.5x the throughput of a ``DataLoader`` here, see ``benchmarks/mnist_mlp.py``);
* any ``torch.utils.data.Dataset`` (``train=dataset``): a ``DataLoader`` over the same seeded
  permutation, for data that does not fit in memory.

A checkpoint holds the model, optimizer, scheduler, step counters, the early-stopping state,
the history, the partial sums of the epoch in progress and every RNG state, so a run killed at any
point and resumed from it ends with bit-identical numbers on CPU. The epoch's permutation is
re-drawn from the shuffling generator's state saved at the start of that epoch.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Protocol

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from biaslab.fileio import atomic_write
from biaslab.errors import CheckpointError, DivergenceError
from biaslab.train.callbacks import EarlyStopping, progress_bar
from biaslab.train.config import TrainConfig, make_optimizer, make_scheduler
from biaslab.train.seed import derive_seed, rng_state, set_rng_state

Batch = tuple[torch.Tensor, ...]
MetricFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Logger(Protocol):
    def log(self, record: dict) -> None: ...
    def rewind(self, step: int) -> None: ...


def accuracy(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Fraction of rows whose arg-max equals the integer target."""
    return (outputs.argmax(dim=-1) == targets).float().mean()


class Trainer:
    """Mini-batch training with validation, early stopping, schedules and exact resume.

    Args:
        model: the module to train (its parameters are updated in place).
        loss_fn: ``loss_fn(outputs, targets) -> scalar``; default cross-entropy.
        config: a :class:`TrainConfig` (epochs, batch size, optimizer, lr, schedule, ...).
        seed: seeds the shuffling generator (model initialisation is the caller's business).
        metrics: extra validation metrics ``name -> fn(outputs, targets)`` (batch means).
        checkpoint: file to save to; if it exists, training resumes from it.
        fingerprint: a string identifying the run; a checkpoint with another one is refused.
        logger: receives one record per epoch (``log``) and ``rewind(step)`` on resume.
        tag: names this training in logs and messages.
        progress: show a progress bar; default: only when stderr is a terminal and not in CI.
        on_divergence: ``"raise"`` (a :class:`DivergenceError` naming the learning rate) or
            ``"stop"`` (end training, ``history[-1]["diverged"] = True``).
    """

    def __init__(self, model: nn.Module, loss_fn: Callable | None = None,
                 config: TrainConfig | None = None, *, seed: int = 0,
                 metrics: dict[str, MetricFn] | None = None, checkpoint: str | Path | None = None,
                 fingerprint: str = "", logger: Logger | None = None, tag: str = "train",
                 progress: bool | None = None, on_divergence: str = "raise"):
        if on_divergence not in ("raise", "stop"):
            raise ValueError("on_divergence must be 'raise' or 'stop'")
        self.model = model
        self.loss_fn = loss_fn or nn.functional.cross_entropy
        self.config = config or TrainConfig()
        self.seed = seed
        self.metrics = dict(metrics or {})
        self.checkpoint = Path(checkpoint) if checkpoint else None
        self.logger = logger
        self.tag = tag
        self.on_divergence = on_divergence
        if progress is None:
            progress = sys.stderr.isatty() and not os.environ.get("CI")
        self.progress = progress
        self.fingerprint = self._fingerprint(fingerprint)

        self.optimizer = make_optimizer(self.config, model.parameters())
        self.scheduler = None  # built in fit(), when the number of steps is known
        self.shuffle_gen = torch.Generator().manual_seed(derive_seed(seed, tag, "shuffle"))
        self.early_stopping = EarlyStopping(self.config.patience, self.config.monitor,
                                            self.config.min_delta)
        self.history: list[dict[str, Any]] = []
        self.step = 0  # optimizer steps taken
        self.epoch = 0  # epochs finished
        self.finished = False
        self.diverged = False
        self.train_time = 0.0  # seconds spent in training steps (not validation)
        # Position inside the epoch in progress, for an exact mid-epoch resume.
        self._batch_in_epoch = 0
        self._epoch_gen_state = self.shuffle_gen.get_state()
        self._epoch_loss_sum = 0.0
        self._epoch_count = 0
        self._buffers: dict[int, torch.Tensor] = {}  # shuffled copies of in-memory tensors

    # ------------------------------------------------------------------------------------
    def fit(self, train: Batch | Dataset, val: Batch | Dataset | None = None) -> list[dict]:
        """Train for ``config.epochs`` epochs (fewer if early stopping fires); return history."""
        n = len(train[0]) if isinstance(train, tuple) else len(train)
        if n == 0:
            raise ValueError("the training set is empty")
        steps_per_epoch = math.ceil(n / self.config.batch_size)
        self.scheduler = make_scheduler(self.config, self.optimizer,
                                        total_steps=self.config.epochs * steps_per_epoch)
        if self.checkpoint and self.checkpoint.exists():
            self._load(self.checkpoint)
        if self.logger is not None:
            self.logger.rewind(self.step)
        if self.finished:
            return self.history

        bar = progress_bar(total=self.config.epochs * steps_per_epoch, initial=self.step,
                           desc=self.tag, enabled=self.progress)
        try:
            while self.epoch < self.config.epochs and not self.finished:
                self._train_one_epoch(train, n, bar)
                if self.diverged:
                    break
                self._end_epoch(val)
        finally:
            bar.close()
            self._buffers.clear()
        self.finished = True
        if self.early_stopping.best_state is not None and self.config.restore_best:
            self.model.load_state_dict(self.early_stopping.best_state)
        self._save()
        return self.history

    # ------------------------------------------------------------------------------------
    def _batches(self, train: Batch | Dataset, n: int):
        """Yield the epoch's mini-batches from ``self._batch_in_epoch`` on."""
        if self._batch_in_epoch == 0:
            self._epoch_gen_state = self.shuffle_gen.get_state()
        else:  # resuming mid-epoch: re-draw this epoch's permutation
            self.shuffle_gen.set_state(self._epoch_gen_state)
        perm = torch.randperm(n, generator=self.shuffle_gen)
        bs = self.config.batch_size
        start = self._batch_in_epoch * bs
        if isinstance(train, tuple):
            # Gather each distinct tensor once (an autoencoder passes (x, x)) into a buffer
            # reused every epoch (a fresh 100+ MB allocation costs 5x the copy), then slice.
            gathered: dict[int, torch.Tensor] = {}
            for t in train:
                if id(t) not in gathered:
                    buf = self._buffers.setdefault(id(t), torch.empty_like(t))
                    gathered[id(t)] = torch.index_select(t, 0, perm, out=buf)
            shuffled = [gathered[id(t)] for t in train]
            for i in range(start, n, bs):
                yield tuple(t[i:i + bs] for t in shuffled)
        else:
            # Its own generator: a DataLoader otherwise draws from the global RNG per epoch.
            loader = DataLoader(train, batch_size=bs, sampler=perm[start:].tolist(),
                                generator=torch.Generator().manual_seed(self.seed))
            yield from (tuple(b) if isinstance(b, (list, tuple)) else (b,) for b in loader)

    def _train_one_epoch(self, train, n: int, bar) -> None:
        self.model.train()
        cfg = self.config
        for batch in self._batches(train, n):
            t0 = time.perf_counter()
            *inputs, targets = batch
            loss = self.loss_fn(self.model(*inputs), targets)
            value = loss.item()
            if not math.isfinite(value):
                self._diverge(value)
                return
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.max_grad_norm:
                nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
            self.optimizer.step()
            if self.scheduler is not None:
                self.scheduler.step()
            self.train_time += time.perf_counter() - t0
            self.step += 1
            self._batch_in_epoch += 1
            self._epoch_loss_sum += value * len(targets)
            self._epoch_count += len(targets)
            bar.update(1)
            if cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0:
                self._save()

    def _diverge(self, value: float) -> None:
        lr = self.optimizer.param_groups[0]["lr"]
        where = f"epoch {self.epoch + 1}, step {self.step + 1}"
        if self.on_divergence == "raise":
            raise DivergenceError(
                f"training '{self.tag}' diverged: loss is {value} at {where} with learning rate "
                f"{lr:g}; lower it (e.g. --set lr={lr / 10:g})")
        self.diverged = True
        record = {"tag": self.tag, "epoch": self.epoch + 1, "step": self.step,
                  "train_loss": value, "lr": lr, "diverged": True}
        self.history.append(record)
        if self.logger is not None:
            self.logger.log(record)

    def _end_epoch(self, val) -> None:
        record: dict[str, Any] = {
            "tag": self.tag, "epoch": self.epoch + 1, "step": self.step,
            "train_loss": self._epoch_loss_sum / max(self._epoch_count, 1),
            "lr": self.optimizer.param_groups[0]["lr"],
        }
        if val is not None:
            record.update({f"val_{k}": v for k, v in self.evaluate(val).items()})
        self.history.append(record)
        if self.logger is not None:
            self.logger.log(record)
        self.epoch += 1
        self._batch_in_epoch, self._epoch_loss_sum, self._epoch_count = 0, 0.0, 0
        if self.early_stopping.update(record, self.model, self.epoch):
            self.finished = True
        self._save()

    @torch.no_grad()
    def evaluate(self, data: Batch | Dataset, batch_size: int = 2048) -> dict[str, float]:
        """Mean loss and every metric over ``data``, in eval mode."""
        was_training = self.model.training
        self.model.eval()
        if isinstance(data, tuple):
            n = len(data[0])
            batches = (tuple(t[i:i + batch_size] for t in data) for i in range(0, n, batch_size))
        else:
            batches = (tuple(b) for b in DataLoader(
                data, batch_size=batch_size, generator=torch.Generator().manual_seed(0)))
        sums: dict[str, float] = {"loss": 0.0, **{k: 0.0 for k in self.metrics}}
        count = 0
        for *inputs, targets in batches:
            out = self.model(*inputs)
            k = len(targets)
            sums["loss"] += self.loss_fn(out, targets).item() * k
            for name, fn in self.metrics.items():
                sums[name] += float(fn(out, targets)) * k
            count += k
        self.model.train(was_training)
        return {k: v / count for k, v in sums.items()}

    # -- checkpoints ----------------------------------------------------------------------
    def _fingerprint(self, extra: str) -> str:
        shapes = [list(p.shape) for p in self.model.parameters()]
        text = json.dumps([self.tag, type(self.model).__name__, shapes, asdict(self.config),
                           self.seed, extra], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def state_dict(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
            "step": self.step, "epoch": self.epoch, "finished": self.finished,
            "diverged": self.diverged, "train_time": self.train_time,
            "batch_in_epoch": self._batch_in_epoch, "epoch_gen_state": self._epoch_gen_state,
            "epoch_loss_sum": self._epoch_loss_sum, "epoch_count": self._epoch_count,
            "shuffle_gen": self.shuffle_gen.get_state(), "rng": rng_state(),
            "early_stopping": self.early_stopping.state_dict(),
            "history": self.history,
        }

    def _save(self) -> None:
        if self.checkpoint is None:
            return
        state = self.state_dict()
        atomic_write(self.checkpoint, lambda f: torch.save(state, f))

    def _load(self, path: Path) -> None:
        try:
            state = torch.load(path, weights_only=True)
        except Exception as exc:  # any unpickling failure means the file is unusable
            raise CheckpointError(
                f"checkpoint {path} is corrupt or not a biaslab checkpoint "
                f"({type(exc).__name__}); delete it to restart '{self.tag}' from scratch") from None
        if not isinstance(state, dict) or state.get("fingerprint") != self.fingerprint:
            raise CheckpointError(
                f"checkpoint {path} does not match this run (different model, config or seed); "
                "resume with the run's own config or start a new run")
        try:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            if self.scheduler is not None and state["scheduler"] is not None:
                self.scheduler.load_state_dict(state["scheduler"])
            self.shuffle_gen.set_state(state["shuffle_gen"])
            set_rng_state(state["rng"])
            self.early_stopping.load_state_dict(state["early_stopping"])
        except (KeyError, RuntimeError, ValueError, TypeError) as exc:
            raise CheckpointError(f"checkpoint {path} is incomplete or mismatched ({exc})") from None
        self.step, self.epoch = state["step"], state["epoch"]
        self.finished, self.diverged = state["finished"], state["diverged"]
        self.train_time = state["train_time"]
        self._batch_in_epoch = state["batch_in_epoch"]
        self._epoch_gen_state = state["epoch_gen_state"]
        self._epoch_loss_sum, self._epoch_count = state["epoch_loss_sum"], state["epoch_count"]
        self.history = list(state["history"])
