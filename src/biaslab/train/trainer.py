"""One training loop for every lab.

Two data paths:

* tensors already in memory (``train=(x, y)``): each epoch draws one permutation, gathers the
  shuffled tensors once and takes mini-batches as *slices* of them — no per-sample indexing, no
  collation (about 1.5x the throughput of a ``DataLoader`` here, see ``benchmarks/mnist_mlp.py``);
* any ``torch.utils.data.Dataset`` (``train=dataset``): a ``DataLoader`` over the same seeded
  permutation, for data that does not fit in memory; ``collate_fn`` builds its batches (e.g.
  ``torch_geometric.data.Batch.from_data_list`` for a list of graphs).

Two kinds of step:

* ``loss_fn(model(*inputs), targets)`` on a batch ``(*inputs, targets)`` (the default);
* ``step(model, batch, generator)`` for everything else (two-term losses, random timesteps,
  node masks, see :mod:`biaslab.train.steps`): it gets the batch exactly as collated and a
  generator owned by the trainer, so whatever it draws from it is checkpointed and resumed too.

A checkpoint holds the model, optimizer, scheduler, step counters, the early-stopping state,
the history, the partial sums of the epoch in progress and every RNG state, so a run killed at any
point and resumed from it ends with bit-identical numbers on CPU. The epoch's permutation is
re-drawn from the shuffling generator's state saved at the start of that epoch.

Validation metrics are computed once on the outputs of the whole set (AUROC or a calibration
error is not a mean over batches); the loss is the batch-size-weighted mean of batch losses.
"""

from __future__ import annotations

import contextlib
import copy
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from biaslab.errors import CheckpointError, DivergenceError
from biaslab.train import checkpoint
from biaslab.train.averaging import WeightAverage
from biaslab.train.callbacks import PROGRESS_MODES, EarlyStopping, TrainingProgress
from biaslab.train.config import EVAL_BATCH, TrainConfig, make_optimizer, make_scheduler
from biaslab.train.seed import derive_seed, rng_state, set_rng_state
from biaslab.train.steps import (
    StepFn,
    StepOutput,
    as_step_output,
    batch_size_of,
    holds_nonfinite,
    scalar,
)

__all__ = ["StepOutput", "Trainer", "accuracy"]

Batch = tuple[torch.Tensor, ...]
MetricFn = Callable[[torch.Tensor, torch.Tensor], "torch.Tensor | float"]


class Logger(Protocol):
    def log(self, record: dict) -> None: ...
    def rewind(self, step: int) -> None: ...


def accuracy(outputs: torch.Tensor, targets: torch.Tensor) -> float:
    """Fraction of rows whose arg-max equals the integer target, exactly (count / n in float64).

    Shapes:
        outputs: (N, C) scores; targets: (N,) class indices.
    """
    hits = outputs.argmax(dim=-1) == targets
    return int(hits.sum()) / hits.numel() if hits.numel() else math.nan


class Trainer:
    """Mini-batch training with validation, early stopping, schedules and exact resume.

    Args:
        model: the module to train (its parameters are updated in place).
        loss_fn: ``loss_fn(outputs, targets) -> scalar``; default cross-entropy.
        config: a :class:`TrainConfig` (epochs, batch size, optimizer, lr, schedule, ...).
        seed: seeds the shuffling generator (model initialisation is the caller's business).
        metrics: extra validation metrics ``name -> fn(outputs, targets)``, each computed once on
            the outputs and targets of the whole validation set.
        checkpoint: file to save to; if it exists, training resumes from it.
        fingerprint: a string identifying the run; a checkpoint with another one is refused.
        logger: receives one record per epoch (``log``) and ``rewind(step)`` on resume.
        tag: names this training in logs and messages.
        progress: ``True`` a progress bar, ``"lines"`` one line per epoch, ``False`` nothing;
            default None: a bar when stderr is a terminal and not in CI
            (:class:`~biaslab.train.callbacks.TrainingProgress`).
        on_divergence: ``"raise"`` (a :class:`DivergenceError` naming the learning rate) or
            ``"stop"`` (end training, ``history[-1]["diverged"] = True``).
        step: instead of ``loss_fn``, ``step(model, batch, generator) -> loss | (loss, terms) |
            StepOutput`` on the batch as collated; ``generator`` is the trainer's own
            (``self.step_gen``, checkpointed) in training and a fresh one seeded the same way at
            every validation, which runs in eval mode without gradients. Extra ``terms`` are
            logged as ``train_<name>`` / ``val_<name>``; metrics use ``StepOutput.outputs`` and
            ``.targets``. Stored as ``self.step_fn`` (``self.step`` counts optimizer steps).
        collate_fn: builds batches from a ``Dataset``'s items, in training and in
            :meth:`evaluate`; default: the ``DataLoader``'s. Unused for in-memory tensors.
        lr_key: the config key that sets the learning rate, named in a divergence message
            (default ``"lr"``).
    """

    def __init__(
        self,
        model: nn.Module,
        loss_fn: Callable | None = None,
        config: TrainConfig | None = None,
        *,
        seed: int = 0,
        metrics: dict[str, MetricFn] | None = None,
        checkpoint: str | Path | None = None,
        fingerprint: str = "",
        logger: Logger | None = None,
        tag: str = "train",
        progress: bool | str | None = None,
        on_divergence: str = "raise",
        step: StepFn | None = None,
        collate_fn: Callable | None = None,
        lr_key: str = "lr",
    ):
        if on_divergence not in ("raise", "stop"):
            raise ValueError("on_divergence must be 'raise' or 'stop'")
        if step is not None and loss_fn is not None:
            raise ValueError("give either loss_fn or step, not both")
        self.model = model
        self.step_fn = step
        self.collate_fn = collate_fn
        self.loss_fn = loss_fn or nn.functional.cross_entropy
        self.config = config or TrainConfig()
        self.seed = seed
        self.metrics = dict(metrics or {})
        self.checkpoint = Path(checkpoint) if checkpoint else None
        self.logger = logger
        self.tag = tag
        self.on_divergence = on_divergence
        self.lr_key = lr_key
        if progress not in PROGRESS_MODES:
            raise ValueError(f"progress must be True, False, None or 'lines', not {progress!r}")
        self.progress = progress
        self.fingerprint = self._fingerprint(fingerprint)

        self.optimizer = make_optimizer(self.config, model.parameters())
        self.scheduler = None  # built in fit(), when the number of steps is known
        self.shuffle_gen = torch.Generator().manual_seed(derive_seed(seed, tag, "shuffle"))
        self.step_gen = torch.Generator().manual_seed(derive_seed(seed, tag, "step"))
        self.early_stopping = EarlyStopping(self.config.patience, self.config.monitor, self.config.min_delta)
        # θ̄ of config.ema_decay: validation and early stopping see it, and fit() ends with it.
        self.average = WeightAverage(self.config.ema_decay) if self.config.ema_decay else None
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
        self._epoch_term_sums: dict[str, float] = {}  # batch-size-weighted sums of step terms
        self._buffers: dict[int, torch.Tensor] = {}  # shuffled copies of in-memory tensors

    # ------------------------------------------------------------------------------------
    def fit(self, train: Batch | Dataset, val: Batch | Dataset | None = None) -> list[dict]:
        """Train for ``config.epochs`` epochs (fewer if early stopping fires); return history."""
        n = len(train[0]) if isinstance(train, tuple) else len(train)
        if n == 0:
            raise ValueError("the training set is empty")
        steps_per_epoch = math.ceil(n / self.config.batch_size)
        self.scheduler = make_scheduler(
            self.config, self.optimizer, total_steps=self.config.epochs * steps_per_epoch
        )
        if self.checkpoint and self.checkpoint.exists():
            self._load(self.checkpoint, steps_per_epoch)
        if self.logger is not None:
            self.logger.rewind(self.step)
        if self.finished:
            return self.history

        bar = self._progress = TrainingProgress(
            self.progress, self.config.epochs * steps_per_epoch, self.step, self.tag,
            self.config.epochs, self.config.monitor,
        )  # fmt: skip
        try:
            while self.epoch < self.config.epochs and not self.finished:
                self._train_one_epoch(train, n, bar)
                if self.diverged:
                    break
                self._end_epoch(val)
        finally:
            bar.close()
            self._buffers.clear()
        if self.average is not None:
            self.average.copy_to(self.model)
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
                yield tuple(t[i : i + bs] for t in shuffled)
        else:
            # Its own generator, though the sampler is explicit: iterating a DataLoader draws a base
            # seed from its generator, or else from torch's global one (whose draws dropout and
            # step functions consume: the run's numbers would change). Checked in the tests.
            loader = DataLoader(
                train,
                batch_size=bs,
                sampler=perm[start:].tolist(),
                collate_fn=self.collate_fn,
                generator=torch.Generator().manual_seed(self.seed),
            )
            yield from self._as_batches(loader)

    def _as_batches(self, loader: DataLoader):
        """A step gets batches as collated; ``loss_fn`` gets tuples ``(*inputs, targets)``."""
        if self.step_fn is not None:
            return iter(loader)
        return (tuple(b) if isinstance(b, (list, tuple)) else (b,) for b in loader)

    def _train_one_epoch(self, train, n: int, bar) -> None:
        self.model.train()
        cfg = self.config
        for batch in self._batches(train, n):
            t0 = time.perf_counter()
            out, k = self._forward(batch, self.step_gen)
            loss = out.loss
            terms = {name: scalar(term) for name, term in out.terms.items()}
            value = loss.item()
            if not math.isfinite(value):
                self._diverge(value, batch)
                return
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.max_grad_norm:
                nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
            self.optimizer.step()
            if self.scheduler is not None:
                self.scheduler.step()
            if self.average is not None:
                self.average.update(self.model)
            self.train_time += time.perf_counter() - t0
            self.step += 1
            self._batch_in_epoch += 1
            self._epoch_loss_sum += value * k
            self._epoch_count += k
            for name, term in terms.items():
                self._epoch_term_sums[name] = self._epoch_term_sums.get(name, 0.0) + term * k
            bar.step(self._epoch_loss_sum / max(self._epoch_count, 1))
            if cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0:
                self._save()

    def _forward(self, batch, generator: torch.Generator) -> tuple[StepOutput, int]:
        """One batch through the model: the step's answer and the batch's weight in the means.

        With ``loss_fn`` the batch is ``(*inputs, targets)`` and its weight ``len(targets)``;
        a step function gets the batch as collated and ``generator`` to draw from.
        With ``precision="bf16"`` both run under CPU autocast in bfloat16.
        """
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.config.precision == "bf16"):
            if self.step_fn is None:
                *inputs, targets = batch
                outputs = self.model(*inputs)
                return StepOutput(self.loss_fn(outputs, targets), {}, outputs, targets), len(targets)
            return as_step_output(self.step_fn(self.model, batch, generator)), batch_size_of(batch)

    def _diverge(self, value: float, batch) -> None:
        if holds_nonfinite(batch):  # the data, not the learning rate, made the loss blow up
            raise ValueError(
                f"training '{self.tag}': a batch holds nan or inf values, so its loss is {value}; "
                "the data are at fault, not the learning rate"
            )
        lr = self.optimizer.param_groups[0]["lr"]
        where = f"epoch {self.epoch + 1}, step {self.step + 1}"
        if self.on_divergence == "raise":
            raise DivergenceError.at(self.tag, value, where, lr, self.lr_key)
        self.diverged = True
        record = {
            "tag": self.tag,
            "epoch": self.epoch + 1,
            "step": self.step,
            "train_loss": value,
            "lr": lr,
            "diverged": True,
        }
        self.history.append(record)
        if self.logger is not None:
            self.logger.log(record)

    def _end_epoch(self, val) -> None:
        record: dict[str, Any] = {
            "tag": self.tag,
            "epoch": self.epoch + 1,
            "step": self.step,
            "train_loss": self._epoch_loss_sum / max(self._epoch_count, 1),
            **{
                f"train_{name}": total / max(self._epoch_count, 1)
                for name, total in self._epoch_term_sums.items()
            },
            "lr": self.optimizer.param_groups[0]["lr"],
        }
        with self._evaluated_weights():
            if val is not None:
                record.update({f"val_{k}": v for k, v in self.evaluate(val).items()})
            self.history.append(record)
            if self.logger is not None:
                self.logger.log(record)
            self._progress.epoch(record)
            self.epoch += 1
            self._batch_in_epoch, self._epoch_loss_sum, self._epoch_count = 0, 0.0, 0
            self._epoch_term_sums = {}
            self.finished = self.early_stopping.update(record, self.model, self.epoch)
        if not self.finished:  # else fit() saves once it holds the final weights
            self._save()

    def _evaluated_weights(self):
        """The weights validation judges: θ̄ with ``ema_decay``, else the model's own."""
        return self.average.applied(self.model) if self.average is not None else contextlib.nullcontext()

    @torch.no_grad()
    def evaluate(self, data: Batch | Dataset, batch_size: int = EVAL_BATCH) -> dict[str, float]:
        """Loss, step terms and every metric over ``data``, in eval mode.

        The loss (and each term) is the batch-size-weighted mean of the per-batch values; each
        metric is computed once on the outputs and targets of all batches concatenated.
        """
        was_training = self.model.training
        self.model.eval()
        if isinstance(data, tuple):
            n = len(data[0])
            batches = (tuple(t[i : i + batch_size] for t in data) for i in range(0, n, batch_size))
        else:
            batches = self._as_batches(
                DataLoader(
                    data,
                    batch_size=batch_size,
                    collate_fn=self.collate_fn,
                    generator=torch.Generator().manual_seed(0),
                )
            )
        gen = torch.Generator().manual_seed(derive_seed(self.seed, self.tag, "eval"))
        sums: dict[str, float] = {"loss": 0.0}
        count = 0
        outputs: list[torch.Tensor] = []
        targets: list[torch.Tensor] = []
        try:
            for batch in batches:
                res, k = self._forward(batch, gen)
                out, target = res.outputs, res.targets
                sums["loss"] += scalar(res.loss) * k
                for name, term in res.terms.items():
                    sums[name] = sums.get(name, 0.0) + scalar(term) * k
                if self.metrics:
                    if out is None or target is None:
                        raise ValueError(
                            f"training '{self.tag}' has metrics but its step returns "
                            "no outputs/targets; return a StepOutput with both"
                        )
                    outputs.append(out)
                    targets.append(target)
                count += k
        finally:
            self.model.train(was_training)
        result = {name: total / count for name, total in sums.items()}
        if self.metrics:
            all_outputs, all_targets = torch.cat(outputs), torch.cat(targets)
            for name, fn in self.metrics.items():
                result[name] = float(fn(all_outputs, all_targets))
        return result

    # -- checkpoints ----------------------------------------------------------------------
    def _fingerprint(self, extra: str) -> str:
        step_name = None
        if self.step_fn is not None:
            step_name = getattr(self.step_fn, "__qualname__", type(self.step_fn).__qualname__)
        return checkpoint.fingerprint(self.model, self.config, self.tag, self.seed, extra, step_name)

    def state_dict(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
            "step": self.step,
            "epoch": self.epoch,
            "finished": self.finished,
            "diverged": self.diverged,
            "train_time": self.train_time,
            "batch_in_epoch": self._batch_in_epoch,
            "epoch_gen_state": self._epoch_gen_state,
            "epoch_loss_sum": self._epoch_loss_sum,
            "epoch_count": self._epoch_count,
            "epoch_term_sums": dict(self._epoch_term_sums),
            "shuffle_gen": self.shuffle_gen.get_state(),
            "step_gen": self.step_gen.get_state(),
            "rng": rng_state(),
            "early_stopping": self.early_stopping.state_dict(),
            "weight_average": self.average.state_dict() if self.average is not None else None,
            "history": self.history,
        }

    def _save(self) -> None:
        if self.checkpoint is not None:
            checkpoint.save(self.checkpoint, self.state_dict())

    def _load(self, path: Path, steps_per_epoch: int) -> None:
        """Resume from ``path``, all or nothing: its counters, sums and history are checked
        first, and a part that fails to load puts back what the others changed."""
        state = checkpoint.load(path, self.fingerprint, self.tag, required=checkpoint.TRAINER_STATE)
        checkpoint.check_trainer_state(state, path, self.tag, self.config.epochs, steps_per_epoch)
        before, key = copy.deepcopy(self.state_dict()), ""
        try:
            for key, load in self._parts(state):
                load(state[key])
        except (LookupError, RuntimeError, ValueError, TypeError, AttributeError, OverflowError) as exc:
            for part, load in self._parts(before):
                load(before[part])
            raise CheckpointError(
                f"checkpoint {path} is incomplete or mismatched: a malformed {key} ({type(exc).__name__}: "
                f"{' '.join(str(exc).split())}); delete it to restart '{self.tag}' from scratch"
            ) from None
        self.step, self.epoch, self._batch_in_epoch = state["step"], state["epoch"], state["batch_in_epoch"]
        self.finished, self.diverged = state["finished"], state["diverged"]
        self.train_time, self._epoch_loss_sum = float(state["train_time"]), float(state["epoch_loss_sum"])
        self._epoch_gen_state, self._epoch_count = state["epoch_gen_state"], state["epoch_count"]
        self._epoch_term_sums = {k: float(v) for k, v in state["epoch_term_sums"].items()}
        self.history = list(state["history"])

    def _parts(self, state: dict[str, Any]) -> list[tuple[str, Callable]]:
        """(key, loader) of the parts that objects load and check (epoch_gen_state: only tried)."""
        parts = {
            "model": self.model.load_state_dict,
            "optimizer": self.optimizer.load_state_dict,
            "scheduler": self.scheduler and self.scheduler.load_state_dict,
            "shuffle_gen": self.shuffle_gen.set_state,
            "step_gen": self.step_gen.set_state,
            "epoch_gen_state": torch.Generator().set_state,
            "rng": set_rng_state,
            "early_stopping": lambda s: self.early_stopping.load_state_dict(s, self.model),
            "weight_average": self.average and (lambda s: self.average.load_state_dict(s, self.model)),
        }
        return [(key, load) for key, load in parts.items() if load]
