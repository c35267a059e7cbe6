"""Training hyper-parameters, and the optimizer and learning-rate schedule they name.

A lab's config holds its training as a *part*: a field ``train: ClassifierTraining =
ClassifierTraining(epochs=5, lr=3e-3)`` (:mod:`biaslab.config`), so every training key (``lr``,
``weight_decay``, ``patience``, ``max_grad_norm``, ...) is a flat ``--set`` key of that lab,
declared once here, and the lab hands ``cfg.train`` to its trainings whole (or
``dataclasses.replace(cfg.train, epochs=...)`` for a second training with its own epochs). A lab
that sets a key per training itself leaves it out of its part (:func:`training_without`).

:class:`TrainConfig` declares every training key once, with ``precision`` (fp32, bf16, fp16:
:func:`autocast_dtype` gives bf16 on CUDA or a CPU with native support, fp16 on CUDA, one
ConfigError line otherwise). A lab's training part is :class:`ClassifierTraining` (its
``monitor`` may watch ``val_accuracy``: ``ClassifierMonitor``), :class:`LossTraining` (losses
only: ``Monitor``), or a subclass of its own narrowing ``monitor`` to the keys its trainings log
(the vae lab's). ``Optimizer`` and ``Schedule`` are one ``Literal`` each;
:func:`make_optimizer` uses torch's fused implementation on the CPU and CUDA where every
parameter allows it, and :func:`make_scheduler` the per-step schedule. ``mlp_memory`` is the
estimate a config checks against the free memory.
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from biaslab.config import check_choices, check_range, flat_values, shown_value
from biaslab.errors import ConfigError
from biaslab.nn.mlp import mlp_memory_bytes

Optimizer = Literal["sgd", "adam", "adamw"]
Schedule = Literal["constant", "cosine", "onecycle", "step"]
Precision = Literal["fp32", "bf16", "fp16"]
OPTIMIZERS: tuple[str, ...] = typing.get_args(Optimizer)
SCHEDULES: tuple[str, ...] = typing.get_args(Schedule)
PRECISIONS: tuple[str, ...] = typing.get_args(Precision)
# Rows an evaluation pushes through the model at once on an accelerator (Trainer.evaluate's and
# predict's default there): with the training batch, the largest batch a memory estimate must
# allow for.
EVAL_BATCH = 2048
# ... and on a CPU, where a chunk's activations should stay in the caches: the (32, 64) CNN of
# the MNIST labs evaluates 1.4 to 2.4x faster per image in chunks of 128 than of 2048 (152 against
# 359 us, and 210 against 293 an hour later, on a shared 2-core EPYC, 2026-12-08), while an MLP's
# matrix products lose at most 1 us a row.
CPU_EVAL_BATCH = 128


def eval_batch(device: torch.device | str, requested: int | None = None) -> int:
    """Rows per evaluation chunk on ``device``: ``requested`` when given, else ``CPU_EVAL_BATCH``
    on a CPU and ``EVAL_BATCH`` elsewhere. Each row's outputs do not depend on the chunk (the
    model is in eval mode)."""
    if requested is not None:
        return requested
    return CPU_EVAL_BATCH if torch.device(device).type == "cpu" else EVAL_BATCH


# What early stopping and keep-the-best may watch (``monitor``): a lab's config narrows the field
# to the history keys its trainings log each epoch. Every training logs train_loss and, with a
# validation set, val_loss; fit_classifier adds val_accuracy; a step function val_<term>.
Monitor = Literal["train_loss", "val_loss"]
ClassifierMonitor = Literal["train_loss", "val_loss", "val_accuracy"]


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
        monitor: the history key early stopping and keep-the-best watch; losses, errors (MAE,
            MSE, RMSE, ECE, ...) and costs are minimised, others maximised
            (:func:`biaslab.better.better`; default ``"val_loss"``). Any key here; a lab's
            config narrows it to a ``Literal`` of the keys its trainings log (:data:`Monitor`,
            :data:`ClassifierMonitor`).
        min_delta: smallest change that counts as an improvement (default 0.0).
        restore_best: load the best weights seen when training ends (default True when
            early stopping is on).
        max_grad_norm: clip the global gradient norm (default None: no clipping).
        checkpoint_every: also checkpoint every this many steps; 0: once per epoch (default 0).
        precision: ``"fp32"`` (default), ``"bf16"`` or ``"fp16"``: forward passes and losses
            under ``torch.autocast`` of the run's device in bfloat16 (on CUDA, or a CPU with
            native bf16 support) or float16 (CUDA only, with a gradient scaler); weights,
            gradients and optimizer state stay fp32. A seed fixes a run bit for bit within one
            precision, not across them.
        ema_decay: keep an exponential moving average of the weights, θ̄ ← d·θ̄ + (1 − d)·θ
            after every step, the decay warmed up as min(d, (1 + u)/(10 + u)) at update u
            (:mod:`biaslab.train.averaging`); validate with it and end training holding it;
            0 switches it off (default 0.0). Diffusion models use 0.999–0.9999.
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
    precision: Precision = "fp32"
    ema_decay: float = 0.0

    def __post_init__(self):
        # 1. each field on its own (optimizer, schedule, precision, a lab's monitor: their Literal)
        check_choices(self)
        check_range(self, "epochs", 1)
        check_range(self, "batch_size", 1)
        check_range(self, "lr", 0, open_low=True)
        check_range(
            self, "momentum", 0, 1, "the fraction of the last step kept; 1 never forgets one", open_high=True
        )
        check_range(self, "weight_decay", 0)
        check_range(self, "warmup", 0, 1, "a fraction of the steps", open_low=True, open_high=True)
        check_range(self, "patience", 0, why="0 switches early stopping off")
        check_range(self, "min_delta", 0)
        check_range(self, "max_grad_norm", 0, why="or none: no clipping", open_low=True)
        check_range(self, "checkpoint_every", 0, why="0: once per epoch")
        check_range(self, "ema_decay", 0, 1, "0: off; the weight of the old average per step", open_high=True)
        # 2. relations
        if self.optimizer != "sgd" and (self.momentum or self.nesterov):
            key = "momentum" if self.momentum else "nesterov"
            raise ConfigError(
                f"{key}={shown_value(getattr(self, key))}: only optimizer=sgd uses it "
                f"(optimizer={self.optimizer} keeps its own moment estimates); add --set optimizer=sgd"
            )
        if self.nesterov and not self.momentum:
            raise ConfigError("nesterov=true: needs momentum > 0 (momentum=0.0); set momentum, e.g. 0.9")

    def optimizer_states(self) -> int:
        """Tensors of the parameters' shape the optimizer keeps (Adam's 2 moments, SGD's momentum)."""
        if self.optimizer == "sgd":
            return 1 if self.momentum else 0
        return 2

    def mlp_memory(self, *mlps: Sequence[int]) -> int:
        """Estimated peak bytes of training these MLPs together with this config.

        :func:`~biaslab.nn.mlp.mlp_memory_bytes` of each (an autoencoder's encoder and decoder
        are two) with this optimizer's state, for the larger of a training batch and the chunk
        the trainer evaluates at once (``EVAL_BATCH``). A lab's config passes the sum of what
        its run holds to :func:`~biaslab.config.check_memory`.
        """
        batch = max(self.batch_size, EVAL_BATCH)
        states = self.optimizer_states()
        return sum(mlp_memory_bytes(sizes, batch, optimizer_states=states) for sizes in mlps)


@dataclass(frozen=True)
class ClassifierTraining(TrainConfig):
    """The training part of a lab config whose trainings log validation accuracy
    (:func:`~biaslab.train.recipes.fit_classifier`): ``monitor`` may watch it too."""

    monitor: ClassifierMonitor = "val_loss"


@dataclass(frozen=True)
class LossTraining(TrainConfig):
    """The training part of a lab config whose trainings log only losses (a denoiser's, an
    autoencoder's): ``monitor`` watches one of them."""

    monitor: Monitor = "val_loss"


def training_without(name: str, base: type[TrainConfig], **why: str) -> type:
    """A training part that holds every key of ``base`` but those named, each with why the lab
    leaves it out: for a lab that sets them per training itself (lr-sweep one ``lr`` per
    training, mnist1d one ``epochs`` per model)::

        SweepTraining = training_without(
            "SweepTraining", ClassifierTraining, lr="the sweep trains once per value of learning_rates"
        )
        train: SweepTraining = SweepTraining(epochs=9, batch_size=50)
        ...
        fit_classifier(model, splits, cfg.train.training(lr=lr), ...)

    ``part.training(**keys)`` builds the ``base`` of one training. The part checks its keys
    as ``base`` does (the keys left out at ``base``'s defaults meanwhile); ``--set lr=...`` is
    refused with the reason, and ``biaslab config`` prints it (``UNUSED_KEYS``). Like a
    ``namedtuple``, the class is named ``name`` and belongs to the module that calls this: assign
    it to that name there (so that it pickles).
    """
    names = [f.name for f in dataclasses.fields(base)]
    unknown = sorted(set(why) - set(names))
    if unknown:
        raise TypeError(f"{base.__name__} has no key(s) {', '.join(unknown)}")
    hints = typing.get_type_hints(base)
    kept = [f for f in dataclasses.fields(base) if f.name not in why]

    def training(self, **keys) -> TrainConfig:
        """The ``base`` config of one training: this part's keys, with ``keys`` (those left out,
        and any this training sets otherwise) in their place."""
        return base(**{**{f.name: getattr(self, f.name) for f in kept}, **keys})

    def __post_init__(self) -> None:
        self.training()  # base's checks of the keys kept

    left_out = ", ".join(why)
    return dataclasses.make_dataclass(
        name,
        [(f.name, hints[f.name], dataclasses.field(default=f.default)) for f in kept],
        frozen=True,
        namespace={
            "__module__": sys._getframe(1).f_globals.get("__name__", __name__),
            "__doc__": f"{base.__name__}'s keys but {left_out}, given per training by .training().",
            "UNUSED_KEYS": dict(why),
            "training": training,
            "__post_init__": __post_init__,
        },
    )


def bf16_supported() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX-512 BF16 or AMX), as oneDNN reports it."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def autocast_dtype(precision: str, device: str) -> torch.dtype | None:
    """The dtype forward passes run in on ``device`` (a device type: "cpu", "cuda", "mps"):
    None for fp32, bfloat16 for bf16 (CUDA, or a CPU with native support), float16 for fp16
    (CUDA); a ConfigError in one line for a precision the device lacks."""
    if precision == "fp32":
        return None
    if precision == "bf16" and (device == "cuda" or (device == "cpu" and bf16_supported())):
        return torch.bfloat16
    if precision == "fp16" and device == "cuda":
        return torch.float16
    where = "CUDA" if precision == "fp16" else "CUDA or a CPU with native bfloat16 support"
    raise ConfigError(f"precision={precision}: runs on {where}, not on this {device}; use precision=fp32")


def check_precision(cfg, device: str) -> None:
    """A lab's config's ``precision`` (its own, or its training part's) must run on ``device``:
    a one-line ConfigError if not (checked before a run writes anything)."""
    precision = flat_values(cfg).get("precision")
    if precision is not None:
        autocast_dtype(precision, device)


def make_optimizer(cfg: TrainConfig, params) -> torch.optim.Optimizer:
    """The optimizer ``cfg`` names, in torch's fused implementation (one kernel over all
    parameters; Adam's step measured 412 -> 190 us here) where every parameter allows it, else
    the multi-tensor ``foreach`` one."""
    params = list(params)
    fast = {"fused": True} if all(_fusable(p) for p in params) else {"foreach": True}
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(
            params,
            lr=cfg.lr,
            momentum=cfg.momentum,
            nesterov=cfg.nesterov,
            weight_decay=cfg.weight_decay,
            **fast,
        )
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay, **fast)
    return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, **fast)


def _fusable(param) -> bool:
    """torch's fused optimizers take floating-point tensors on the CPU or a GPU."""
    tensor = param["params"][0] if isinstance(param, dict) else param
    return tensor.is_floating_point() and tensor.device.type in ("cpu", "cuda")


def make_scheduler(cfg: TrainConfig, optimizer: torch.optim.Optimizer, total_steps: int):
    """The per-step learning-rate schedule, or None for a constant rate."""
    sched = torch.optim.lr_scheduler
    if cfg.schedule == "cosine":
        return sched.CosineAnnealingLR(optimizer, T_max=max(total_steps, 1))
    if cfg.schedule == "onecycle":
        total = max(total_steps, 2)
        # torch's warm-up ends at step pct·total − 1 and divides by that length: a warm-up of at
        # most one step (4 steps at warmup 0.25) would divide by zero, so it gets one and a half
        warmup = cfg.warmup if cfg.warmup * total > 1 else 1.5 / total
        return sched.OneCycleLR(
            optimizer,
            max_lr=cfg.lr,
            total_steps=total,
            pct_start=warmup,
            anneal_strategy="cos",
            cycle_momentum=cfg.optimizer == "sgd" and cfg.momentum > 0,
        )
    if cfg.schedule == "step":
        milestones = [total_steps // 2, (3 * total_steps) // 4]
        return sched.MultiStepLR(optimizer, milestones=milestones, gamma=0.1)
    return None


# The training parts of labs whose fits each take a set number of optimizer steps (their own
# ``steps`` key, turned into epochs by ``train.recipes.for_steps``), whatever their data's size.
_BY_STEPS = "every fit takes the same number of optimizer steps (steps)"
ClassifierStepsTraining = training_without("ClassifierStepsTraining", ClassifierTraining, epochs=_BY_STEPS)
LossStepsTraining = training_without("LossStepsTraining", LossTraining, epochs=_BY_STEPS)
