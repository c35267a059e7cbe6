"""Several models of one architecture trained as one: a batched ensemble.

Labs train many small models of one architecture one after another: seeds, restarts, the sizes
of a learning curve, another draw of the validation rows. Each such training leaves the cores
mostly idle: a small MLP's step is a few dozen kernels, each too small to fill two cores, with
Python's overhead between them. Stacking the N models' parameters along a new first dimension
and running the architecture once, vectorised over it (``torch.func``: ``stack_module_state``,
``functional_call``, ``vmap``), makes every kernel N times larger, so one step of the ensemble
does the work of N steps.

Training stays each member's own. The loss is the sum of the members' losses,

    L(θ_1, ..., θ_N) = Σ_m L_m(θ_m),      ∂L/∂θ_m = ∂L_m/∂θ_m,

so the backward pass hands every member exactly its own gradient. SGD, Adam and AdamW update
each entry from its own gradient and state (weight decay included), so one optimizer over the
stacked parameters is N optimizers; a schedule sets the same rate for all, as N trainings of one
config would. Gradient clipping, whose norm is a whole model's, is done per member. Each member
m draws its mini-batches as :class:`~biaslab.train.trainer.Trainer` would for its own seed and
tag: each epoch's order is ``torch.randperm(n, generator)``, the generator seeded by
``derive_seed(seed_m, tag_m, "shuffle")``. The same config, initial weights, seeds and tags
thus give each member the weights a Trainer fit of it gives, up to float rounding (tested), and
with ``keep_best`` each keeps its own best epoch on its own validation rows.

What does not split by member is refused in one line: layers whose forward draws random numbers
or updates running statistics (dropout, batch norm), early stopping (members would stop at
different epochs), a weight average, mixed precision. Every member trains on as many rows as
the others, of the same shapes.

:func:`fit_ensemble` trains; :class:`EnsembleFit` holds the members, each a plain module again,
and their histories.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import functional_call, stack_module_state

from biaslab.errors import ConfigError, DivergenceError
from biaslab.train.callbacks import Best
from biaslab.train.config import TrainConfig, make_optimizer, make_scheduler
from biaslab.train.seed import derive_seed

__all__ = ["EnsembleFit", "each_member", "fit_ensemble"]

Batch = tuple[torch.Tensor, torch.Tensor]  # (inputs (n, ...), targets (n, ...)) of one member

# Layers whose forward is not a pure function of the input and the weights.
_IMPURE = (
    nn.Dropout,
    nn.Dropout1d,
    nn.Dropout2d,
    nn.Dropout3d,
    nn.AlphaDropout,
    nn.modules.batchnorm._BatchNorm,
)


@dataclass
class EnsembleFit:
    """What :func:`fit_ensemble` returns.

    Attributes:
        models: the trained members, each a module of the given architecture (with its best
            epoch's weights under ``keep_best``).
        histories: per member, one record per epoch: ``epoch``, ``step``, ``train_loss``, ``lr``,
            and ``val_loss`` and each metric as ``val_<name>`` when validation sets are given.
        best_epochs: per member, the epoch whose weights it holds (1-based; 0: its initial weights,
            when no epoch had a finite value of ``keep_best``).
        seconds: the wall-clock seconds of the whole fit, validation included.
    """

    models: list[nn.Module]
    histories: list[list[dict]]
    best_epochs: list[int]
    seconds: float


def fit_ensemble(
    models: Sequence[nn.Module],
    train: Sequence[Batch],
    config: TrainConfig,
    seeds: Sequence[int],
    tags: Sequence[str] | None = None,
    val: Sequence[Batch] | None = None,
    loss_fn: Callable = nn.functional.cross_entropy,
    metrics: dict[str, Callable] | None = None,
    keep_best: str | None = None,
    augment: Callable | None = None,
) -> EnsembleFit:
    """Train ``models`` (one architecture, N initial weights) as one batched model, member m on
    ``train[m]`` with the shuffles of ``(seeds[m], tags[m])``.

    Args:
        models: N >= 1 modules of one architecture (their parameters' names and shapes equal).
        train: per member its ``(inputs, targets)``, every member the same number of rows.
        config: the training (epochs, batch size, optimizer, rate and schedule, weight decay,
            gradient clipping, ``min_delta``); as for the Trainer.
        seeds, tags: per member, the Trainer's ``seed`` and ``tag`` (tags default to "train").
        val: per member its validation ``(inputs, targets)``, evaluated after every epoch.
        loss_fn: ``loss_fn(outputs, targets)`` of one member, a scalar (vectorised over members).
        metrics: ``name -> fn(outputs, targets)`` of one member, logged as ``val_<name>``.
        keep_best: a validation key (``"val_accuracy"``, ``"val_loss"``): each member ends with
            the weights of its best epoch by it, as the Trainer with a ``KeepBest(keep_best,
            config.min_delta)`` callback; None (default): the last epoch's.
        augment: ``augment(x, generators)`` of all members' training batches ``(N, B, ...)``
            (never of validation), member m's drawing from ``generators[m]``, its own step
            generator, seeded as the Trainer seeds its step generator
            (``derive_seed(seed, tag, "step")``); :func:`each_member` makes one from an
            augmentation of one batch.

    Raises:
        DivergenceError: a member's training loss is not finite (as the Trainer raises it).

    Shapes:
        ``train[m]``: inputs ``(n, ...)``, targets ``(n, ...)``; the ensemble's forward pass takes
        ``(N, B, ...)`` and returns ``(N, B, ...)``.
    """
    count = len(models)
    tags = list(tags) if tags is not None else ["train"] * count
    _check(models, train, config, seeds, tags, val)
    start = time.perf_counter()
    base = copy.deepcopy(models[0])
    params, buffers = stack_module_state(list(models))  # name -> (N, ...) leaves
    params = {name: p.detach().clone().requires_grad_(True) for name, p in params.items()}
    optimizer = make_optimizer(config, params.values())
    n, bs = len(train[0][0]), config.batch_size
    steps_per_epoch = math.ceil(n / bs)
    scheduler = make_scheduler(config, optimizer, total_steps=config.epochs * steps_per_epoch)
    x_all = torch.stack([x for x, _ in train])  # (N, n, ...)
    y_all = torch.stack([y for _, y in train])  # (N, n, ...)
    members = torch.arange(count)[:, None]  # (N, 1): gathers each member's own rows

    def forward(p: dict, b: dict, x: torch.Tensor) -> torch.Tensor:
        return functional_call(base, (p, b), (x,))

    batched = torch.vmap(forward, in_dims=(0, 0, 0))  # (N, B, ...) -> (N, B, ...)
    per_member_loss = torch.vmap(loss_fn)  # (N, B, ...) outputs and targets -> (N,)
    shuffles = [torch.Generator().manual_seed(derive_seed(s, t, "shuffle")) for s, t in zip(seeds, tags)]
    steppers = [torch.Generator().manual_seed(derive_seed(s, t, "step")) for s, t in zip(seeds, tags)]
    bests = [Best(keep_best or "val_loss", config.min_delta) for _ in range(count)]
    kept = {name: p.detach().clone() for name, p in params.items()}  # each member's best epoch
    histories: list[list[dict]] = [[] for _ in range(count)]
    step = 0
    for epoch in range(1, config.epochs + 1):
        orders = torch.stack([torch.randperm(n, generator=g) for g in shuffles])  # (N, n)
        sums = torch.zeros(count)
        for first in range(0, n, bs):
            rows = orders[:, first : first + bs]  # (N, B)
            x, y = x_all[members, rows], y_all[members, rows]  # (N, B, ...)
            if augment is not None:  # each member's batch with its own draws
                x = augment(x, steppers)
            losses = per_member_loss(batched(params, buffers, x), y)  # (N,)
            if not bool(torch.isfinite(losses).all()):
                m = int((~torch.isfinite(losses)).nonzero()[0])
                where = f"epoch {epoch}, step {step + 1}"
                raise DivergenceError.at(tags[m], float(losses[m]), where, optimizer.param_groups[0]["lr"])
            optimizer.zero_grad(set_to_none=True)
            losses.sum().backward()  # each member's gradient is its own loss's
            if config.max_grad_norm:
                _clip_per_member(params.values(), config.max_grad_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            sums += losses.detach() * rows.shape[1]
            step += 1
        lr = optimizer.param_groups[0]["lr"]
        records = [{"epoch": epoch, "step": step, "train_loss": float(s) / n, "lr": lr} for s in sums]
        if val is not None:
            for record, scores in zip(records, _validate(batched, params, buffers, val, loss_fn, metrics)):
                record.update(scores)
        for m, record in enumerate(records):
            histories[m].append(record)
            if keep_best is None or bests[m].improved(record, epoch):
                with torch.no_grad():
                    for name, p in params.items():
                        kept[name][m] = p[m]
    trained = []
    for m in range(count):
        member = copy.deepcopy(base)
        weights = {name: kept[name][m] for name in kept}
        member.load_state_dict({**weights, **{name: b[m] for name, b in buffers.items()}})
        trained.append(member)
    best_epochs = [b.epoch if keep_best is not None else len(h) for b, h in zip(bests, histories)]
    return EnsembleFit(trained, histories, best_epochs, time.perf_counter() - start)


def each_member(augment: Callable) -> Callable:
    """An augmentation of one batch, ``augment(x, generator)``, as ``fit_ensemble`` takes it: of
    every member's batch ``(N, B, ...)``, member m's drawing from ``generators[m]``, one call each."""

    def of_members(x: torch.Tensor, generators: Sequence[torch.Generator]) -> torch.Tensor:
        return torch.stack([augment(x[m], generator) for m, generator in enumerate(generators)])

    return of_members


@torch.no_grad()
def _validate(batched, params, buffers, val, loss_fn, metrics) -> list[dict]:
    """Each member's validation loss and metrics on its own validation rows."""
    x = torch.stack([v[0] for v in val])  # (N, n_val, ...)
    y = torch.stack([v[1] for v in val])
    outputs = batched(params, buffers, x)  # (N, n_val, ...)
    scores = []
    for m in range(len(val)):
        record = {"val_loss": float(loss_fn(outputs[m], y[m]))}
        for name, fn in (metrics or {}).items():
            record[f"val_{name}"] = float(fn(outputs[m], y[m]))
        scores.append(record)
    return scores


def _clip_per_member(params, max_norm: float) -> None:
    """``torch.nn.utils.clip_grad_norm_`` for each member on its own: the norm of a member's
    whole gradient, each of its entries scaled by min(1, max_norm / (norm + 1e-6))."""
    grads = [p.grad for p in params if p.grad is not None]
    squares = torch.stack([g.flatten(1).pow(2).sum(1) for g in grads]).sum(0)  # (N,)
    scale = (max_norm / (squares.sqrt() + 1e-6)).clamp(max=1.0)  # (N,)
    for g in grads:
        g.mul_(scale.view(-1, *[1] * (g.dim() - 1)))


def _check(models, train, config, seeds, tags, val) -> None:
    """One clear line for what the batched training cannot do as N separate ones would."""
    count = len(models)
    if count < 1:
        raise ConfigError("fit_ensemble needs at least one model")
    if not (len(train) == len(seeds) == len(tags) == count) or (val is not None and len(val) != count):
        sizes = f"{count} models, {len(train)} training sets, {len(seeds)} seeds, {len(tags)} tags"
        raise ConfigError(
            f"fit_ensemble needs one of each per member; got {sizes}"
            + (f", {len(val)} validation sets" if val is not None else "")
        )
    shapes = {tuple((name, tuple(p.shape)) for name, p in m.state_dict().items()) for m in models}
    if len(shapes) != 1 or len({type(m) for m in models}) != 1:
        raise ConfigError("fit_ensemble trains models of one architecture: their parameters differ")
    impure = sorted(
        {type(layer).__name__ for m in models for layer in m.modules() if isinstance(layer, _IMPURE)}
    )
    if impure:
        raise ConfigError(
            f"fit_ensemble cannot batch {', '.join(impure)}: its forward draws random numbers or "
            "updates running statistics; train such models one by one"
        )
    for what, sets in (("training", train), ("validation", val or [])):
        layouts = {(tuple(x.shape), tuple(y.shape)) for x, y in sets}
        if len(layouts) > 1:
            raise ConfigError(
                f"fit_ensemble needs {what} sets of one size and shape per member; got {sorted(layouts)}"
            )
    unsupported = {
        "patience": "early stopping (members would stop at different epochs)",
        "ema_decay": "a weight average",
    }
    for key, what in unsupported.items():
        if getattr(config, key):
            raise ConfigError(f"fit_ensemble does not do {what}: set {key} to 0 or train one by one")
    if config.precision != "fp32":
        raise ConfigError(f"fit_ensemble trains in fp32; precision={config.precision!r} is not supported")
