"""One training loop for every lab: batches → forward → loss → backward → step → schedule → validate.

Everything else a training does is a callback on a few named hooks (:mod:`biaslab.train.callbacks`):
the weight average, early stopping and keep-the-best come from the config
(``ema_decay``, ``patience``, ``restore_best``); checkpoints, the metrics log and the progress
bar are given (:class:`~biaslab.train.checkpoint.Checkpointing`,
:class:`~biaslab.train.callbacks.LogRecords`, :class:`~biaslab.train.callbacks.TrainingProgress`).

Two data paths:

* tensors already in memory (``train=(x, y)``): each epoch draws one permutation, gathers the
  shuffled tensors once and takes mini-batches as *slices* of them — no per-sample indexing, no
  collation (about 1.5x the throughput of a ``DataLoader`` here, see ``benchmarks/mnist_mlp.py``);
* any ``torch.utils.data.Dataset`` (``train=dataset``): a ``DataLoader`` over the same seeded
  permutation; ``collate_fn`` builds its batches (e.g. a batch of molecular graphs).

Two kinds of step: ``loss_fn(model(*inputs), targets)`` on a batch ``(*inputs, targets)`` (the
default), or ``step(model, batch, generator)`` for everything else (two-term losses, random
timesteps, node subsets, see :mod:`biaslab.train.steps`): it gets the batch as collated and a
generator owned by the trainer, so whatever it draws is checkpointed and resumed too.

The model, every batch and the step's generator live on one ``device``; forward passes run under
``torch.autocast`` of that device's type with ``config.precision`` (``bf16`` on the CPU and CUDA;
``fp16`` on CUDA, with a gradient scaler). The shuffling generator stays on the CPU, so a seed
draws the same batches everywhere; on the CPU a resumed run ends bit-identical to an unbroken one.

Validation metrics are computed once on the outputs of the whole set (AUROC or a calibration
error is not a mean over batches); the loss is the batch-size-weighted mean of batch losses.

Under ``torchrun``, in a joined process group, it is one training across the processes
(DistributedDataParallel, each process a shard of every batch: :mod:`biaslab.train.distributed`).

The loop is about a hundred lines: ``fit`` → ``_train_one_epoch`` → ``_forward`` → ``_validate``,
with ``_call`` running one hook of every callback. A divergence raises a
:class:`~biaslab.errors.DivergenceError` or stops the training (``on_divergence``);
``trainer.callback(kind)`` finds a callback, and ``state()`` / ``load_state()`` are what a
checkpoint holds and restores.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from biaslab.errors import DivergenceError
from biaslab.nn.mlp import device_of
from biaslab.train import checkpoint, distributed
from biaslab.train.callbacks import arranged
from biaslab.train.checkpoint import TrainingState
from biaslab.train.config import (
    EVAL_BATCH,
    TrainConfig,
    autocast_dtype,
    eval_batch,
    make_optimizer,
    make_scheduler,
)
from biaslab.train.seed import derive_seed
from biaslab.train.steps import (
    StepFn,
    StepOutput,
    as_step_output,
    batch_size_of,
    holds_nonfinite,
    move_to,
    scalar,
)

__all__ = ["StepOutput", "Trainer", "accuracy", "mean_absolute_error"]

Batch = tuple[torch.Tensor, ...]
MetricFn = Callable[[torch.Tensor, torch.Tensor], "torch.Tensor | float"]
START_HOOKS = ("on_fit_start", "on_validation_start")  # run in order; the others in reverse


class Logger(Protocol):
    def log(self, record: dict) -> None: ...
    def rewind(self, step: int) -> None: ...


def mean_absolute_error(outputs: torch.Tensor, targets: torch.Tensor) -> float:
    """Mean of ``|output − target|`` over the rows: a regression's validation metric.

    Shapes:
        outputs, targets: (N,).
    """
    return float((outputs - targets).abs().mean())


def accuracy(outputs: torch.Tensor, targets: torch.Tensor) -> float:
    """Fraction of rows whose arg-max equals the integer target, exactly (count / n in float64).

    Shapes:
        outputs: (N, C) scores; targets: (N,) class indices.
    """
    hits = outputs.argmax(dim=-1) == targets
    return int(hits.sum()) / hits.numel() if hits.numel() else math.nan


class Trainer:
    """Mini-batch training with validation, on any device, extended by callbacks.

    In a process group of several processes (``self.world``: :func:`distributed.joined_world`),
    steps run ``self.train_model``, the model in DistributedDataParallel (a step function gets it),
    on this process's shard of each global batch of ``config.batch_size`` rows; ``self.model``
    stays the module (evaluation, state dicts). With one process both are the model.

    Args:
        model: the module to train (moved to ``device``; its parameters are updated in place).
        loss_fn: ``loss_fn(outputs, targets) -> scalar``; default cross-entropy.
        config: a :class:`TrainConfig` (epochs, batch size, optimizer, lr, schedule, ...).
        step: instead of ``loss_fn``, ``step(model, batch, generator) -> loss | (loss, terms) |
            StepOutput`` on the batch as collated; ``generator`` is the trainer's own
            (``self.step_gen``, checkpointed) in training and a fresh one seeded the same way at
            every validation, which runs in eval mode without gradients. Extra ``terms`` are
            logged as ``train_<name>`` / ``val_<name>``; metrics use ``StepOutput.outputs`` and
            ``.targets``. Stored as ``self.step_fn`` (``self.step`` counts optimizer steps).
        metrics: extra validation metrics ``name -> fn(outputs, targets)``, each computed once on
            the outputs and targets of the whole validation set.
        seed: seeds the shuffling and step generators (model initialisation is the caller's).
        tag: names this training in logs, checkpoints and messages.
        device: where the model, batches and step generator live (default: the model's device).
        callbacks: extensions on the hooks of :mod:`biaslab.train.callbacks`, e.g.
            ``Checkpointing(path)``, ``LogRecords(logger)``, ``TrainingProgress("lines")``
            (without one: a bar when stderr is a terminal).
        collate_fn: builds batches from a ``Dataset``'s items; unused for in-memory tensors.
        on_divergence: ``"raise"`` (a :class:`DivergenceError` naming the learning rate) or
            ``"stop"`` (end training, ``history[-1]["diverged"] = True``).
        lr_key: the config key of the learning rate, named in a divergence message.
    """

    def __init__(
        self,
        model: nn.Module,
        loss_fn: Callable | None = None,
        config: TrainConfig | None = None,
        *,
        step: StepFn | None = None,
        metrics: dict[str, MetricFn] | None = None,
        seed: int = 0,
        tag: str = "train",
        device: str | torch.device | None = None,
        callbacks: Sequence = (),
        collate_fn: Callable | None = None,
        on_divergence: str = "raise",
        lr_key: str = "lr",
    ):
        if on_divergence not in ("raise", "stop"):
            raise ValueError("on_divergence must be 'raise' or 'stop'")
        if step is not None and loss_fn is not None:
            raise ValueError("give either loss_fn or step, not both")
        self.config = cfg = config or TrainConfig()
        self.device = device_of(model) if device is None else torch.device(device)
        self.autocast = autocast_dtype(cfg.precision, self.device.type)
        self.model = model.to(self.device)
        self.world = distributed.joined_world()
        self.train_model = distributed.wrap(self.model, self.device) if self.world.distributed else self.model
        self.loss_fn, self.step_fn = loss_fn or nn.functional.cross_entropy, step
        self.metrics, self.collate_fn = dict(metrics or {}), collate_fn
        self.seed, self.tag, self.on_divergence, self.lr_key = seed, tag, on_divergence, lr_key

        self.optimizer = make_optimizer(cfg, self.model.parameters())
        self.scheduler = None  # built in fit(), when the number of steps is known
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=cfg.precision == "fp16")
        self.shuffle_gen = torch.Generator().manual_seed(derive_seed(seed, tag, "shuffle"))
        rank = () if self.world.rank == 0 else (f"rank {self.world.rank}",)  # each process its own draws
        self.step_gen = _generator(self.device, derive_seed(seed, tag, "step", *rank))
        self.callbacks = arranged(cfg, callbacks)
        if self.world.distributed:
            self.callbacks.append(distributed.RankRandomness(self.step_gen))
        self.history: list[dict[str, Any]] = []
        self.step = 0  # optimizer steps taken
        self.epoch = 0  # epochs finished
        self.finished = self.diverged = self.should_stop = False
        self.train_time = 0.0  # seconds spent in training steps (not validation)
        self.steps_per_epoch = 0
        # Position inside the epoch in progress, for an exact mid-epoch resume.
        self.batch_in_epoch, self.epoch_loss_sum, self.epoch_count = 0, 0.0, 0
        self.epoch_gen_state = self.shuffle_gen.get_state()
        self.epoch_term_sums: dict[str, float] = {}  # batch-size-weighted sums of step terms
        self._buffers: dict[int, torch.Tensor] = {}  # shuffled copies of in-memory tensors

    @property
    def stopping(self) -> bool:
        """Whether the epoch (or divergence) being closed is the training's last."""
        return self.diverged or self.should_stop or self.epoch >= self.config.epochs

    def callback(self, kind: type):
        """The first of this training's callbacks that is a ``kind`` (None if there is none), e.g.
        ``trainer.callback(EarlyStopping).stopped_epoch``."""
        return next((cb for cb in self.callbacks if isinstance(cb, kind)), None)

    @property
    def running_loss(self) -> float:
        """The mean training loss of the epoch so far."""
        return self.epoch_loss_sum / max(self.epoch_count, 1)

    # ------------------------------------------------------------------------------------
    def fit(self, train: Batch | Dataset, val: Batch | Dataset | None = None) -> list[dict]:
        """Train for ``config.epochs`` epochs (fewer if a callback stops it); return the history."""
        n = len(train[0]) if isinstance(train, tuple) else len(train)
        if n == 0:
            raise ValueError("the training set is empty")
        self.steps_per_epoch = math.ceil(n / self.config.batch_size)
        distributed.check_split(n, self.config.batch_size, self.world.world_size, self.tag)
        total = self.config.epochs * self.steps_per_epoch
        self.scheduler = make_scheduler(self.config, self.optimizer, total_steps=total)
        try:
            self._call("on_fit_start")
            if not self.finished:
                train = self._on_device(train)
                while not self.stopping:
                    self._train_one_epoch(train, n)
                    if not self.diverged:
                        self._validate(val)
                self.finished = True
        except BaseException as error:
            self._call("on_exception", error)
            raise
        finally:
            self._buffers.clear()
        self._call("on_fit_end")
        return self.history

    def _train_one_epoch(self, train, n: int) -> None:
        self.train_model.train()
        for batch, weight in self._batches(train, n):
            t0 = time.perf_counter()
            out, k = self._forward(self.train_model, batch, self.step_gen)
            value = out.loss.item()
            sums = {"loss": value * k, **{name: scalar(term) * k for name, term in out.terms.items()}}
            if self.world.distributed:  # the global batch's sums, the same in every process
                sums, k = distributed.sum_across(sums, k, self.device)
                value = sums["loss"] / k
            if not math.isfinite(value):
                return self._diverge(value, batch)
            self.optimizer.zero_grad(set_to_none=True)
            loss = out.loss if weight == 1 else out.loss * weight  # a shard's share of the mean
            self.scaler.scale(loss).backward()
            if self.config.max_grad_norm:
                self.scaler.unscale_(self.optimizer)
                nn.utils.clip_grad_norm_(self.model.parameters(), self.config.max_grad_norm)
            self.scaler.step(self.optimizer)
            self.scaler.update()
            if self.scheduler is not None:
                self.scheduler.step()
            self.train_time += time.perf_counter() - t0
            self.step, self.batch_in_epoch = self.step + 1, self.batch_in_epoch + 1
            self.epoch_loss_sum += sums.pop("loss")
            self.epoch_count += k
            for name, total in sums.items():
                self.epoch_term_sums[name] = self.epoch_term_sums.get(name, 0.0) + total
            self._call("on_step_end")

    def _forward(self, model: nn.Module, batch, generator: torch.Generator) -> tuple[StepOutput, int]:
        """One batch through ``model``, under autocast: the step's answer and the batch's weight
        in the means (``len(targets)`` with ``loss_fn``; a step's batch as :func:`batch_size_of`)."""
        with torch.autocast(self.device.type, dtype=self.autocast, enabled=self.autocast is not None):
            if self.step_fn is None:
                *inputs, targets = batch
                outputs = model(*inputs)
                return StepOutput(self.loss_fn(outputs, targets), {}, outputs, targets), len(targets)
            return as_step_output(self.step_fn(model, batch, generator)), batch_size_of(batch)

    def _validate(self, val) -> None:
        """Close the epoch: its record, validated on ``val`` (the callbacks see it at both ends)."""
        count = max(self.epoch_count, 1)
        record: dict[str, Any] = {
            "tag": self.tag,
            "epoch": self.epoch + 1,
            "step": self.step,
            "train_loss": self.epoch_loss_sum / count,
            **{f"train_{name}": total / count for name, total in self.epoch_term_sums.items()},
            "lr": self.optimizer.param_groups[0]["lr"],
        }
        self._call("on_validation_start")
        if val is not None:
            record.update({f"val_{k}": v for k, v in self.evaluate(val).items()})
        self.history.append(record)
        self.epoch += 1
        self.batch_in_epoch, self.epoch_loss_sum, self.epoch_count, self.epoch_term_sums = 0, 0.0, 0, {}
        self._call("on_validation_end", record)

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
        record = {"tag": self.tag, "epoch": self.epoch + 1, "step": self.step, "train_loss": value, "lr": lr}
        record["diverged"] = True
        self.history.append(record)
        self._call("on_validation_end", record)

    def _call(self, hook: str, *args) -> None:
        """Run ``hook`` of every callback that has it: start hooks in order, end hooks in reverse."""
        for callback in self.callbacks if hook in START_HOOKS else reversed(self.callbacks):
            method = getattr(callback, hook, None)
            if method is not None:
                method(self, *args)

    # -- data ----------------------------------------------------------------------------
    def _on_device(self, data):
        """In-memory tensors moved to the device once (a tensor given twice stays one)."""
        if not isinstance(data, tuple):
            return data
        moved: dict[int, torch.Tensor] = {}
        return tuple(moved.setdefault(id(t), t.to(self.device)) for t in data)

    def _batches(self, train: Batch | Dataset, n: int):
        """Yield the epoch's mini-batches, on the device, from ``self.batch_in_epoch`` on: each
        ``(batch, weight)``, this process's shard of the global batch and its loss weight
        (:func:`distributed.shard`; with one process the whole batch and 1.0)."""
        if self.batch_in_epoch == 0:
            self.epoch_gen_state = self.shuffle_gen.get_state()
        else:  # resuming mid-epoch: re-draw this epoch's permutation
            self.shuffle_gen.set_state(self.epoch_gen_state)
        perm = torch.randperm(n, generator=self.shuffle_gen)
        bs, start = self.config.batch_size, self.batch_in_epoch * self.config.batch_size
        parts = distributed.batch_shards(n, bs, start, self.world)  # [(rows of perm, weight)]
        if isinstance(train, tuple):
            # Gather each distinct tensor once (an autoencoder passes (x, x)) into a buffer
            # reused every epoch (a fresh 100+ MB allocation costs 5x the copy), then slice.
            index, gathered = perm.to(self.device), {}
            for t in train:
                if id(t) not in gathered:
                    buf = self._buffers.setdefault(id(t), torch.empty_like(t))
                    gathered[id(t)] = torch.index_select(t, 0, index, out=buf)
            shuffled = [gathered[id(t)] for t in train]
            for rows, weight in parts:
                yield tuple(t[rows] for t in shuffled), weight  # each (B, ...)
        else:
            # Its own generator, though the sampler is explicit: iterating a DataLoader draws a base
            # seed from its generator, or else from torch's global one (whose draws dropout and
            # step functions consume: the run's numbers would change). Checked in the tests.
            gen = torch.Generator().manual_seed(self.seed)
            batches = [perm[rows].tolist() for rows, _ in parts]
            loader = DataLoader(train, batch_sampler=batches, collate_fn=self.collate_fn, generator=gen)
            yield from zip(self._as_batches(loader), (weight for _, weight in parts))

    def _as_batches(self, loader: DataLoader):
        """Batches on the device: as collated for a step, tuples ``(*inputs, targets)`` for ``loss_fn``."""
        for batch in loader:
            if self.step_fn is None and not isinstance(batch, (list, tuple)):
                batch = (batch,)
            yield move_to(tuple(batch) if self.step_fn is None else batch, self.device)

    @torch.no_grad()
    def evaluate(self, data: Batch | Dataset, batch_size: int | None = None) -> dict[str, float]:
        """Loss, step terms and every metric over ``data``, in eval mode, ``batch_size`` rows at a
        time. The default: ``eval_batch`` of the trainer's device for the plain loss; for a step
        function ``EVAL_BATCH`` on every device, since a step may draw random numbers per chunk
        (a denoiser's noise levels) and its validation loss is then fixed by the chunks as much as
        by the seed.

        The loss (and each term) is the batch-size-weighted mean of the per-batch values; each
        metric is computed once on the outputs and targets of all batches concatenated.
        """
        was_training = self.model.training
        self.model.eval()
        if batch_size is None and self.step_fn is not None:
            batch_size = EVAL_BATCH  # a step's random draws per chunk stay the same on every device
        batch_size = eval_batch(self.device, batch_size)
        if isinstance(data, tuple):
            n = len(data[0])
            batches = (
                move_to(tuple(t[i : i + batch_size] for t in data), self.device)
                for i in range(0, n, batch_size)
            )
        else:
            gen = torch.Generator().manual_seed(0)
            batches = self._as_batches(
                DataLoader(data, batch_size, collate_fn=self.collate_fn, generator=gen)
            )
        gen = _generator(self.device, derive_seed(self.seed, self.tag, "eval"))
        sums: dict[str, float] = {"loss": 0.0}
        count, outputs, targets = 0, [], []
        try:
            for batch in batches:
                res, k = self._forward(self.model, batch, gen)
                sums["loss"] += scalar(res.loss) * k
                for name, term in res.terms.items():
                    sums[name] = sums.get(name, 0.0) + scalar(term) * k
                if self.metrics:
                    if res.outputs is None or res.targets is None:
                        raise ValueError(
                            f"training '{self.tag}' has metrics but its step returns "
                            "no outputs/targets; return a StepOutput with both"
                        )
                    outputs.append(res.outputs)
                    targets.append(res.targets)
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
    def fingerprint(self, extra: str = "") -> str:
        """What a checkpoint of this training is recognised by (see :func:`checkpoint.fingerprint`)."""
        step_name = None
        if self.step_fn is not None:
            step_name = getattr(self.step_fn, "__qualname__", type(self.step_fn).__qualname__)
        return checkpoint.fingerprint(self.model, self.config, self.tag, self.seed, extra, step_name)

    def state(self, fingerprint: str = "") -> TrainingState:
        """Everything a checkpoint holds, as of now (not copied). Across processes every process
        calls it (it gathers the ranks' random states), as :class:`Checkpointing` does."""
        return checkpoint.capture(self, fingerprint)

    def load_state(self, state: TrainingState, path: Path | str = "the checkpoint") -> None:
        """Go on from ``state``, all or nothing (:func:`checkpoint.restore`)."""
        checkpoint.restore(self, state, path)


def _generator(device: torch.device, seed: int) -> torch.Generator:
    """A generator on ``device`` (CUDA and MPS draw from their own), seeded."""
    gen = torch.Generator(device=device) if device.type in ("cuda", "mps") else torch.Generator()
    return gen.manual_seed(seed)
