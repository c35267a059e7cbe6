"""Training recipes the labs share, and the setup a run hands to each training.

Every lab that trains a classifier calls :func:`fit_classifier`; autoencoders call
:func:`fit_reconstruction`; the NumPy models of ``biaslab.scratch`` go through
:func:`fit_scratch`. Each takes a :class:`TrainSetup`, which the runner's context makes per tag
(``ctx.training("mlp")``): where the checkpoint goes, the seed of the shuffling, the metrics
logger. The test split is evaluated once, after training, and never used for a choice.

Also: :func:`fit_best_of_restarts` (several initialisations, the best on validation kept and
only it tested; a lab passes ``lambda r: ctx.training(f"{tag}-restart{r}")`` so that each restart
has its own tag, log and checkpoint), :func:`fit_node_classifier` (batches of training nodes,
each a forward pass over the whole graph), :func:`fit_learning_curve` -> :class:`LearningCurve`
(nested subsets, every point at the same step budget, errors on extra held-out sets; the test
split for the largest only), :func:`predict` (a model method in eval mode, in batches) and
:func:`for_steps` (a set of any size repeated whole to epochs of at least ``epoch_rows`` rows, and
the epochs that make ``steps`` steps: learning curves at an equal step budget).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from biaslab.checks import check_integer
from biaslab.nn.mlp import device_of
from biaslab.train.callbacks import LogRecords, TimeLimit, TrainingProgress
from biaslab.train.checkpoint import Checkpointing
from biaslab.train.config import TrainConfig, eval_batch
from biaslab.train.seed import derive_seed
from biaslab.train.steps import StepOutput
from biaslab.train.trainer import Logger, Trainer, accuracy


@dataclass(frozen=True)
class TrainSetup:
    """What one tagged training of a run needs besides its model and config.

    Args:
        tag: names the training in checkpoints, logs and messages.
        seed: seeds the trainer's own generators (shuffling, per-step draws).
        checkpoint: file to save to and resume from (default None: no checkpoint).
        fingerprint: identifies the run; a checkpoint with another fingerprint is refused.
        logger: receives one record per epoch (and ``rewind`` on resume).
        progress: ``True`` a bar, ``"lines"`` a line per epoch, ``False`` nothing (default None:
            a bar on a terminal only).
        lr_key: the config key of the learning rate, for a divergence message (default "lr").
        device: where the training runs (default "cpu").
        time_limit_s: stop after the epoch that passes this many wall-clock seconds
            (:class:`~biaslab.train.callbacks.TimeLimit`); None (default): no limit.
    """

    tag: str = "train"
    seed: int = 0
    checkpoint: Path | None = None
    fingerprint: str = ""
    logger: Logger | None = None
    progress: bool | str | None = None
    lr_key: str = "lr"
    device: str = "cpu"
    time_limit_s: float | None = None

    def callbacks(self) -> list:
        """The callbacks this setup asks for: a checkpoint file, a metrics log, the progress display."""
        callbacks: list = (
            [] if self.checkpoint is None else [Checkpointing(self.checkpoint, self.fingerprint)]
        )
        if self.logger is not None:
            callbacks.append(LogRecords(self.logger))
        if self.time_limit_s is not None:
            callbacks.append(TimeLimit(self.time_limit_s))
        return [*callbacks, TrainingProgress(self.progress)]

    def trainer(self, model: nn.Module, config: TrainConfig, callbacks=(), **kwargs: Any) -> Trainer:
        """A :class:`Trainer` for ``model`` wired to this setup; ``callbacks`` join the setup's,
        ``kwargs`` go to Trainer."""
        return Trainer(
            model,
            config=config,
            seed=self.seed,
            tag=self.tag,
            device=self.device,
            callbacks=[*self.callbacks(), *callbacks],
            lr_key=self.lr_key,
            **kwargs,
        )


@dataclass
class FitResult:
    trainer: Trainer | None
    history: list[dict]
    test: dict[str, float] | None  # loss and metrics on the test split, measured once at the end

    @property
    def train_time(self) -> float:
        return (
            self.trainer.train_time
            if self.trainer is not None
            else sum(r.get("seconds", 0.0) for r in self.history)
        )


def predict(model: nn.Module, x: torch.Tensor, method: str = "forward", batch_size: int | None = None):
    """``model.<method>(x)`` in eval mode, without gradients, ``batch_size`` rows at a time
    (default: ``eval_batch`` of the model's device; a CNN's activations on all of MNIST at once
    would take gigabytes), concatenated.

    Each batch is moved to the model's device, and the result stays there (``.cpu()`` it for NumPy).

    Shapes:
        x (N, ...) -> (N, ...) as the method returns per row.
    """
    model.eval()
    fn, device = getattr(model, method), device_of(model)
    batch_size = eval_batch(device, batch_size)
    with torch.no_grad():
        return torch.cat([fn(x[i : i + batch_size].to(device)) for i in range(0, len(x), batch_size)])


def fit_classifier(
    model: nn.Module,
    splits,
    config: TrainConfig,
    setup: TrainSetup,
    *,
    test: bool = True,
    on_divergence: str = "raise",
    label_smoothing: float = 0.0,
    callbacks=(),
    step=None,
) -> FitResult:
    """Train ``model`` by cross-entropy with validation accuracy each epoch; test once at the end.

    Args:
        model: outputs logits ``(N, classes)``.
        splits: has ``x_train, y_train, x_val, y_val`` (and ``x_test, y_test`` when ``test``).
        config: the training hyper-parameters (a lab's ``cfg.train``).
        setup: ``ctx.training(tag)``.
        test: evaluate the test split after training (default True).
        on_divergence: ``"raise"`` or ``"stop"`` (see :class:`Trainer`).
        label_smoothing: train (and report ``loss``) against targets mixed with the uniform
            distribution by this fraction (default 0: plain cross-entropy); the plain
            cross-entropy is then reported as ``nll`` beside it.
        callbacks: join the setup's (e.g. a proximal step of a penalty).
        step: a Trainer step in place of plain cross-entropy (e.g. on augmented inputs); it
            must return the logits and targets as ``outputs`` and ``targets``.
    """
    if step is not None and label_smoothing:
        raise ValueError("label_smoothing applies to the plain cross-entropy; a step computes its own loss")
    metrics = {"accuracy": accuracy}
    loss_fn = None
    if label_smoothing:
        loss_fn = partial(nn.functional.cross_entropy, label_smoothing=label_smoothing)
        metrics["nll"] = nn.functional.cross_entropy
    trainer = setup.trainer(
        model, config, callbacks, loss_fn=loss_fn, step=step, metrics=metrics, on_divergence=on_divergence
    )
    history = trainer.fit((splits.x_train, splits.y_train), val=(splits.x_val, splits.y_val))
    result = trainer.evaluate((splits.x_test, splits.y_test)) if test else None
    return FitResult(trainer, history, result)


def fit_best_of_restarts(
    build: Callable[[], nn.Module],
    splits,
    config: TrainConfig,
    setup: TrainSetup | Callable[[int], TrainSetup],
    restarts: int = 3,
) -> FitResult:
    """Train ``restarts`` initialisations of ``build()`` by :func:`fit_classifier` and keep the one
    whose kept weights score the highest validation accuracy; the test split is evaluated for that
    one only.

    A network can settle in a plateau that depends on its initial weights alone (an LSTM recalling
    a symbol 100 steps back stalled at 7 of 8 symbols for about one initialisation in five);
    restarts chosen on the validation split are the standard remedy, and the test split stays
    untouched by the choice.

    Args:
        setup: one :class:`TrainSetup`, from which restart r derives the tag ``"<tag>-restart<r>"``
            (its own shuffling and checkpoint file; refused with a metrics logger when
            ``restarts > 1``, since a run's logger keys epochs by tag), or ``setup(r)`` giving
            restart r's own setup, e.g. ``lambda r: ctx.training(f"lstm-restart{r}")`` in a lab.
            Restart r draws its weights after ``torch.manual_seed(derive_seed(s.seed, s.tag,
            "restart", r))`` with ``s`` the given setup, or ``derive_seed(s.seed, s.tag, "init")``
            with ``s = setup(r)``.
        restarts: initialisations to train (default 3).
    Returns:
        the kept fit; ``history`` is its own, and each record also carries ``restart`` (its index).
    """
    restarts = check_integer(restarts, "restarts")
    if isinstance(setup, TrainSetup) and setup.logger is not None and restarts > 1:
        raise ValueError(
            f"{setup.tag}: restarts > 1 with one metrics logger would mix their epochs under one tag; "
            "pass setup(r) giving each restart its own"
        )
    best: tuple[float, int, FitResult] | None = None
    for r in range(int(restarts)):
        if isinstance(setup, TrainSetup):
            torch.manual_seed(derive_seed(setup.seed, setup.tag, "restart", str(r)))
            checkpoint = setup.checkpoint
            if checkpoint is not None:
                checkpoint = checkpoint.with_name(f"{checkpoint.stem}-restart{r}{checkpoint.suffix}")
            own = replace(setup, tag=f"{setup.tag}-restart{r}", checkpoint=checkpoint)
        else:
            own = setup(r)
            torch.manual_seed(derive_seed(own.seed, own.tag, "init"))
        fit = fit_classifier(build(), splits, config, own, test=False)
        score = fit.trainer.evaluate((splits.x_val, splits.y_val))["accuracy"]  # of the weights kept
        if best is None or score > best[0]:
            best = (score, r, fit)
    _, kept, fit = best
    history = [{**record, "restart": kept} for record in fit.history]
    return FitResult(fit.trainer, history, fit.trainer.evaluate((splits.x_test, splits.y_test)))


@dataclass
class LearningCurve:
    """One fresh training per training-set size (:func:`fit_learning_curve`).

    ``rows[i]`` are the positions in the training set of the ``sizes[i]`` examples fit ``i``
    learned from (nested: each holds the previous); only the largest fit has a test result.
    ``errors_on[name][i]`` is fit ``i``'s error (1 − accuracy) on the extra set ``name``.
    """

    sizes: list[int]
    rows: list[np.ndarray]
    fits: list[FitResult]
    errors_on: dict[str, list[float]]

    @property
    def val_errors(self) -> list[float]:
        """1 − the validation accuracy at the end of each training."""
        return [1.0 - fit.history[-1]["val_accuracy"] for fit in self.fits]

    @property
    def final(self) -> FitResult:
        """The training on the most data: the model a decision is made about."""
        return self.fits[-1]


def fit_learning_curve(
    make_model: Callable[[int], nn.Module],
    splits,
    sizes: Sequence[int],
    config: TrainConfig,
    setup_for: Callable[[int], TrainSetup],
    seed: int,
    epoch_length: int | None = None,
    also_on: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
) -> LearningCurve:
    """Validation error against the amount of training data, at an equal step budget.

    A fresh classifier is trained (:func:`fit_classifier`) on the first ``n`` rows of one seeded
    permutation of the training set, for each ``n`` in ``sizes``; the subsets are nested. Each
    subset is repeated to ``epoch_length`` examples, so every point trains for the same number
    of steps (``config.epochs`` epochs of ``epoch_length``): only the amount of data differs, not
    the optimisation. The test split is evaluated once, for the largest size.

    Args:
        make_model: ``make_model(n)`` returns a freshly initialised model for size ``n`` (e.g.
            ``lambda n: ctx.init_model(build, "cnn", str(n))``).
        splits: has ``x_train, y_train, x_val, y_val, x_test, y_test``.
        sizes: increasing training-set sizes, each at most ``len(splits.y_train)``.
        config: the training hyper-parameters shared by every point.
        setup_for: ``setup_for(n)`` returns the :class:`TrainSetup` of size ``n`` (its own tag
            and checkpoint, e.g. ``lambda n: ctx.training(f"cnn-{n}")``).
        seed: seeds the permutation the subsets are cut from.
        epoch_length: examples per epoch, at least the largest size (default: the largest size).
            A small data set trained for as many steps as a large one gives the large one's.
        also_on: name -> ``(x, y)``: further held-out sets each model's error is measured on
            after its training (e.g. the validation set under a shift), never used for a choice.
    """
    sizes = [int(n) for n in sizes]
    available = len(splits.y_train)
    if not sizes or sizes != sorted(set(sizes)) or sizes[0] < 1 or sizes[-1] > available:
        raise ValueError(f"sizes must increase within 1..{available} (the training set), got {sizes}")
    epoch_length = sizes[-1] if epoch_length is None else int(epoch_length)
    if epoch_length < sizes[-1]:
        raise ValueError(f"epoch_length={epoch_length} is shorter than the largest size {sizes[-1]}")
    order = np.random.default_rng(seed).permutation(available)
    also_on = also_on or {}
    curve = LearningCurve(sizes, [], [], {name: [] for name in also_on})
    for n in sizes:
        subset = splits.train_subset(order[:n], repeat_to=epoch_length)
        fit = fit_classifier(make_model(n), subset, config, setup_for(n), test=n == sizes[-1])
        curve.rows.append(order[:n])
        curve.fits.append(fit)
        for name, data in also_on.items():
            curve.errors_on[name].append(1.0 - fit.trainer.evaluate(data)["accuracy"])
    return curve


def for_steps(
    tensors: Sequence[torch.Tensor], steps: int, batch_size: int, epoch_rows: int = 4096
) -> tuple[tuple[torch.Tensor, ...], int]:
    """A training set of any size made to train for about ``steps`` optimizer steps: its rows
    repeated whole until an epoch holds at least ``epoch_rows`` (one shuffled pass over the
    copies; a tiny set does not spend its steps in thousands of one-batch epochs), or the rows the
    steps take when they are fewer (a budget of 10 steps is not stretched to a 4,096-row epoch),
    and the epochs that give ``steps`` batches of ``batch_size`` (at least one). Learning curves at
    an equal step budget compare the data, not the optimisation.

    Shapes:
        each tensor ``(n, ...)`` -> ``(c n, ...)``, c = ⌈min(epoch_rows, steps · batch) / n⌉;
        epochs = ⌈steps · batch / (c n)⌉.
    """
    n = len(tensors[0])
    copies = math.ceil(min(epoch_rows, steps * batch_size) / n)
    repeated = tuple(t.repeat(copies, *(1,) * (t.dim() - 1)) for t in tensors)  # (copies n, ...) each
    return repeated, max(1, math.ceil(steps * batch_size / (copies * n)))


def fit_node_classifier(
    model: nn.Module, graph, masks, config: TrainConfig, setup: TrainSetup, *, uses_edges: bool = True
) -> FitResult:
    """Train ``model`` to classify the nodes of one graph (the semi-supervised setting: every
    node's features and edges are seen, only the training nodes' labels).

    The examples are the training nodes: a batch of ``config.batch_size`` of them (all of them,
    when it is at least their number: one full-graph step per epoch) costs one forward pass over
    the whole graph and the cross-entropy of its own nodes. Validation each epoch and the test
    once at the end score their own nodes.

    Args:
        model: ``model(x, edge_index) -> (N, classes)`` logits, or ``model(x)`` when
            ``uses_edges`` is False (an MLP on the node features alone).
        graph: has ``x`` (N, F), ``y`` (N,) and ``edge_index`` (2, E) (a torch-geometric ``Data``).
        masks: boolean ``(train, val, test)`` node masks, each (N,).
        config: the training hyper-parameters.
        setup: ``ctx.training(tag)``.
    """
    graph = copy.copy(graph).to(setup.device)  # PyG's Data.to moves in place: leave the caller's graph be
    train_nodes, val_nodes, test_nodes = (mask.nonzero().squeeze(1) for mask in masks)  # each (n,)

    def step(model: nn.Module, batch, generator) -> StepOutput:
        (nodes,) = batch
        nodes = nodes.sort().values  # the graph's order: a full batch is the mask's rows, bit for bit
        logits = model(graph.x, graph.edge_index) if uses_edges else model(graph.x)  # (N, C)
        loss = nn.functional.cross_entropy(logits[nodes], graph.y[nodes])
        return StepOutput(loss, {}, logits[nodes], graph.y[nodes])

    trainer = setup.trainer(model, config, step=step, metrics={"accuracy": accuracy})
    history = trainer.fit((train_nodes,), val=(val_nodes,))
    return FitResult(trainer, history, trainer.evaluate((test_nodes,), batch_size=len(test_nodes)))


def fit_reconstruction(
    model: nn.Module, splits, config: TrainConfig, setup: TrainSetup, loss_fn=nn.functional.mse_loss
) -> FitResult:
    """Train ``model`` to reproduce its input (autoencoders): targets are the inputs."""
    trainer = setup.trainer(model, config, loss_fn=loss_fn)
    history = trainer.fit((splits.x_train, splits.x_train), val=(splits.x_val, splits.x_val))
    return FitResult(trainer, history, trainer.evaluate((splits.x_test, splits.x_test)))


def fit_scratch(
    model,
    optimizer,
    splits,
    *,
    epochs: int,
    batch_size: int,
    setup: TrainSetup,
    seed: int | None = None,
    test: bool = True,
    on_divergence: str = "raise",
) -> FitResult:
    """Train a NumPy model of ``biaslab.scratch`` with our own loop (``scratch.fit``).

    The NumPy loop keeps no checkpoint (it is fast): a resumed run trains it again from the
    start, so its records already in the metrics log are rewound first, then each epoch's
    record is logged as it ends. The test split is evaluated once.

    Args:
        model: e.g. :class:`biaslab.scratch.TwoLayerMLP`.
        optimizer: a ``biaslab.scratch`` optimizer over the model's parameters.
        splits: has NumPy-convertible ``x_train, y_train, x_val, y_val, x_test, y_test``.
        epochs, batch_size: as in TrainConfig.
        setup: ``ctx.training(tag)`` (its checkpoint is unused).
        seed: the shuffling seed (default ``setup.seed``).
        on_divergence: ``"raise"`` (default: a DivergenceError naming the learning rate, as
            the PyTorch trainer) or ``"stop"``.
    """
    from biaslab.scratch.loop import evaluate, fit

    logger = setup.logger
    if logger is not None:
        logger.rewind(0)
    history = fit(
        model,
        optimizer,
        (splits.x_train, splits.y_train),
        (splits.x_val, splits.y_val),
        epochs=epochs,
        batch_size=batch_size,
        seed=setup.seed if seed is None else seed,
        callback=None if logger is None else logger.log,
        on_divergence=on_divergence,
        tag=setup.tag,
        lr_key=setup.lr_key,
    )
    result = None
    if test:
        loss, acc = evaluate(model, splits.x_test, splits.y_test)
        result = {"loss": loss, "accuracy": acc}
    return FitResult(None, history, result)
