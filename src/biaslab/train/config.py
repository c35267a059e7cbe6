"""Training hyper-parameters, and the optimizer and learning-rate schedule they name.

A lab's config *inherits* :class:`TrainConfig` and overrides the defaults it needs, so every
training key (``lr``, ``weight_decay``, ``patience``, ``max_grad_norm``, ...) is a ``--set`` key
of that lab, declared once here; :meth:`TrainConfig.of` takes the training part of a lab's config.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass
from typing import Literal

import torch

from biaslab.config import require_positive
from biaslab.errors import ConfigError

Optimizer = Literal["sgd", "adam", "adamw"]
Schedule = Literal["constant", "cosine", "onecycle", "step"]
OPTIMIZERS: tuple[str, ...] = typing.get_args(Optimizer)
SCHEDULES: tuple[str, ...] = typing.get_args(Schedule)


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of one training.

    Args:
        epochs: passes over the training set (default 10).
        batch_size: examples per step (default 128).
        optimizer: ``"sgd"``, ``"adam"`` or ``"adamw"`` (default ``"adam"``).
        lr: learning rate; the peak rate for ``"onecycle"`` (default 1e-3).
        momentum: SGD momentum (default 0.0); ``nesterov`` uses Nesterov's form.
        weight_decay: L2 penalty (decoupled for AdamW) (default 0.0).
        schedule: ``"constant"``, ``"cosine"`` (to 0 over all steps), ``"onecycle"`` (warm-up
            for ``warmup`` of the steps, then cosine annealing) or ``"step"`` (x0.1 at half and
            three quarters of training) (default ``"constant"``).
        warmup: fraction of steps spent warming up in ``"onecycle"`` (default 0.25).
        patience: epochs without improvement of ``monitor`` before stopping; 0 disables
            early stopping (default 0).
        monitor: the history key early stopping watches; ``*loss`` keys are minimised,
            others maximised (default ``"val_loss"``).
        min_delta: smallest change that counts as an improvement (default 0.0).
        restore_best: load the best weights seen when training ends (default True when
            early stopping is on).
        max_grad_norm: clip the global gradient norm (default None: no clipping).
        checkpoint_every: also checkpoint every this many steps; 0: once per epoch (default 0).
    """

    epochs: int = 10
    batch_size: int = 128
    optimizer: Optimizer = "adam"
    lr: float = 1e-3
    momentum: float = 0.0
    nesterov: bool = False
    weight_decay: float = 0.0
    schedule: Schedule = "constant"
    warmup: float = 0.25
    patience: int = 0
    monitor: str = "val_loss"
    min_delta: float = 0.0
    restore_best: bool = True
    max_grad_norm: float | None = None
    checkpoint_every: int = 0

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"optimizer '{self.optimizer}' unknown (choose from {', '.join(OPTIMIZERS)})")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"schedule '{self.schedule}' unknown (choose from {', '.join(SCHEDULES)})")
        require_positive(self, "epochs", "batch_size", "max_grad_norm")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ConfigError(f"lr must be a positive finite number, got {self.lr}")
        for name in ("momentum", "weight_decay", "min_delta"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ConfigError(f"{name}={value!r}: must be a finite number >= 0")
        if not 0.0 < self.warmup < 1.0:
            raise ConfigError(f"warmup={self.warmup!r}: must be between 0 and 1 (a fraction of the steps)")
        if self.patience < 0 or self.checkpoint_every < 0:
            raise ConfigError("patience and checkpoint_every must be >= 0 (0 switches them off)")
        getattr(super(), "__post_init__", lambda: None)()  # cooperative: e.g. MnistSizes' checks

    @classmethod
    def of(cls, cfg, **overrides) -> TrainConfig:
        """The training part of a lab's config ``cfg``, with ``overrides`` applied.

        Every :class:`TrainConfig` field that ``cfg`` has is taken from it (a lab config that
        inherits TrainConfig has them all); the others keep their defaults.
        """
        names = [f.name for f in dataclasses.fields(cls)]
        values = {n: getattr(cfg, n) for n in names if hasattr(cfg, n)}
        unknown = set(overrides) - set(names)
        if unknown:
            raise TypeError(f"TrainConfig has no field(s) {', '.join(sorted(unknown))}")
        return cls(**{**values, **overrides})


def make_optimizer(cfg: TrainConfig, params) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(
            params, lr=cfg.lr, momentum=cfg.momentum, nesterov=cfg.nesterov, weight_decay=cfg.weight_decay
        )
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)


def make_scheduler(cfg: TrainConfig, optimizer: torch.optim.Optimizer, total_steps: int):
    """The per-step learning-rate schedule, or None for a constant rate."""
    sched = torch.optim.lr_scheduler
    if cfg.schedule == "cosine":
        return sched.CosineAnnealingLR(optimizer, T_max=max(total_steps, 1))
    if cfg.schedule == "onecycle":
        return sched.OneCycleLR(
            optimizer,
            max_lr=cfg.lr,
            total_steps=max(total_steps, 2),
            pct_start=cfg.warmup,
            anneal_strategy="cos",
            cycle_momentum=cfg.optimizer == "sgd" and cfg.momentum > 0,
        )
    if cfg.schedule == "step":
        milestones = [total_steps // 2, (3 * total_steps) // 4]
        return sched.MultiStepLR(optimizer, milestones=milestones, gamma=0.1)
    return None
