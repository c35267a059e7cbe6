"""Callbacks: what a training does besides its loop, on a few named hooks.

The :class:`~biaslab.train.trainer.Trainer`'s loop only trains and validates; everything else
(early stopping, keeping the best epoch, the weight average, checkpoints, the metrics log, the
progress bar) is a callback. A callback defines the hooks it needs, each ``hook(trainer, ...)``:

==========================  ==================================================================
``on_fit_start(trainer)``   training is about to start (after a resume: from the restored state)
``on_step_end(trainer)``    an optimizer step has been taken (``trainer.step`` counts them)
``on_validation_start``     the epoch's training steps are done; validation follows
``on_validation_end``       ``(trainer, record)``: the epoch's record, validated and in
                            ``trainer.history``; also a divergence's record (``"diverged"``)
``on_fit_end(trainer)``     training is over (``trainer.finished``)
``on_exception``            ``(trainer, error)``: the fit is dying of ``error``
==========================  ==================================================================

A callback that keeps state across a resume names it ``state_key`` and gives ``state_dict()``
and ``load_state_dict(state, trainer)``; the latter checks the state against the trainer and
raises ValueError (naming the field) without changing anything when it could not have been
saved by this training. ``trainer.should_stop = True`` ends the fit after this epoch.

In a training across processes (:mod:`biaslab.train.distributed`) every process runs every
callback on the same records; one that writes (a log, the progress display) runs its hooks on
rank 0 only (:func:`~biaslab.train.distributed.main_process_only`), and
:class:`~biaslab.train.checkpoint.Checkpointing` saves from rank 0.

Callbacks nest like ``with`` blocks: the start hooks run in the trainer's order, the end hooks
(step, validation and fit end) in reverse, so that a callback listed first wraps the others. The
trainer lists :class:`~biaslab.train.checkpoint.Checkpointing` first (it saves what all the
others have done, and it restores them before they start), then the weight average (validation,
early stopping and keep-the-best judge the averaged weights), early stopping, keep-the-best,
then the given callbacks in their order.

The callbacks here: :class:`Best` (one monitored value, its direction by
:func:`biaslab.better.better`), :class:`EarlyStopping` (sets ``trainer.should_stop``),
:class:`KeepBest` (the best epoch's weights at the end), :class:`TimeLimit` (stops after the epoch
that passes a wall-clock budget; added by ``TrainSetup(time_limit_s=)``, which ``biaslab compare
--time-limit`` sets per training), :class:`LogRecords` (a record per epoch; rewound on a resume),
:class:`MeasureAtSteps` (a measurement after chosen optimizer steps) and
:class:`TrainingProgress` (a tqdm bar over steps with the epoch's running loss and the last
validation figure, one line per epoch on stderr for a file or a pipe, or nothing).
:func:`arranged` puts a training's callbacks in that nesting order.
"""

from __future__ import annotations

import copy
import math
import os
import sys
import time

import torch

from biaslab.better import better, improves
from biaslab.checks import check_integer, is_number
from biaslab.formatting import quoted
from biaslab.train.checkpoint import check_tensors, is_count
from biaslab.train.distributed import main_process_only


class Callback:
    """The hooks, each doing nothing: subclass and define the ones you need (or duck-type)."""

    def on_fit_start(self, trainer) -> None: ...
    def on_step_end(self, trainer) -> None: ...
    def on_validation_start(self, trainer) -> None: ...
    def on_validation_end(self, trainer, record: dict) -> None: ...
    def on_fit_end(self, trainer) -> None: ...
    def on_exception(self, trainer, error: BaseException) -> None: ...


class Best:
    """The best value of ``monitor`` seen so far, and the epoch that had it.

    Errors, losses and costs are minimised, all others (accuracies, AUROC) maximised, by the
    one rule of :func:`biaslab.better.better`; a change smaller than ``min_delta`` is not an
    improvement; nan, inf and a missing key never are.
    """

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0):
        self.monitor, self.min_delta = monitor, min_delta
        self.direction = better(monitor)
        self.value: float | None = None
        self.epoch = 0

    def improved(self, record: dict, epoch: int) -> bool | None:
        """Take ``record`` of ``epoch``: True if it beats the best (now its value), False if not,
        None when it has no finite value of the monitored key (nothing to judge)."""
        value = record.get(self.monitor)
        if value is None or not math.isfinite(value):
            return None
        improved = improves(value, self.value, self.direction, self.min_delta)
        if improved:
            self.value, self.epoch = value, epoch
        return improved

    def state_dict(self) -> dict:
        return {"best": self.value, "best_epoch": self.epoch}

    def checked(self, state: dict, epoch: int) -> tuple[float | None, int]:
        """``(best, best_epoch)`` of ``state`` once checked against ``epoch``; a ValueError else."""
        best, best_epoch = state["best"], state["best_epoch"]
        if not is_count(best_epoch) or best_epoch > epoch:
            raise ValueError(f"best_epoch={quoted(best_epoch)}, not a count up to epoch={epoch}")
        if best is not None and not (is_number(best) and math.isfinite(best)):
            raise ValueError(f"best={quoted(best)}, not a finite number or None")
        if best is None and best_epoch:
            raise ValueError(f"best=None (nothing seen yet) with best_epoch={best_epoch}")
        return best, best_epoch


def _missing(state, keys, what: str) -> None:
    if not isinstance(state, dict):
        raise ValueError(f"{what} state {quoted(state)}, not a dict")
    missing = [key for key in keys if key not in state]
    if missing:
        raise ValueError(f"{what} state without {', '.join(missing)}")


class EarlyStopping(Callback):
    """Stop when ``monitor`` has not improved for ``patience`` epochs (:class:`Best` judges).

    It only stops: :class:`KeepBest` brings the best epoch's weights back.
    """

    state_key = "early_stopping"

    def __init__(self, patience: int, monitor: str = "val_loss", min_delta: float = 0.0):
        check_integer(patience, "patience")
        self.patience, self.best = patience, Best(monitor, min_delta)
        self.bad_epochs = 0
        self.stopped_epoch = 0

    def on_validation_end(self, trainer, record: dict) -> None:
        improved = self.best.improved(record, trainer.epoch)
        if improved is None:
            return
        self.bad_epochs = 0 if improved else self.bad_epochs + 1
        if self.bad_epochs >= self.patience:
            self.stopped_epoch = trainer.epoch
            trainer.should_stop = True

    def state_dict(self) -> dict:
        return {**self.best.state_dict(), "bad_epochs": self.bad_epochs, "stopped_epoch": self.stopped_epoch}

    def load_state_dict(self, state: dict, trainer) -> None:
        """Restore what :meth:`state_dict` returned, checked against ``trainer.epoch``."""
        _missing(state, self.state_dict(), "early-stopping")
        best, best_epoch = self.best.checked(state, trainer.epoch)
        bad, stopped = state["bad_epochs"], state["stopped_epoch"]
        for key, value in (("bad_epochs", bad), ("stopped_epoch", stopped)):
            if not is_count(value) or value > trainer.epoch:
                raise ValueError(f"{key}={quoted(value)}, not a count up to epoch={trainer.epoch}")
        if best is None and (bad or stopped):
            raise ValueError(f"best=None (nothing seen yet) with bad_epochs={bad}, stopped_epoch={stopped}")
        # training stops when bad_epochs reaches the patience, and only then
        if (bad >= self.patience) != bool(stopped) or bad > self.patience:
            raise ValueError(f"bad_epochs={bad} with stopped_epoch={stopped} and patience={self.patience}")
        self.best.value, self.best.epoch = best, best_epoch
        self.bad_epochs, self.stopped_epoch = bad, stopped


class KeepBest(Callback):
    """Remember the weights of the epoch with the best ``monitor`` and end the training with them
    (with or without early stopping)."""

    state_key = "keep_best"

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0):
        self.best = Best(monitor, min_delta)
        self.weights: dict | None = None

    def on_validation_end(self, trainer, record: dict) -> None:
        if self.best.improved(record, trainer.epoch):
            self.weights = copy.deepcopy(trainer.model.state_dict())

    def on_fit_end(self, trainer) -> None:
        if self.weights is not None:
            trainer.model.load_state_dict(self.weights)

    def state_dict(self) -> dict:
        return {**self.best.state_dict(), "best_state": self.weights}

    def load_state_dict(self, state: dict, trainer) -> None:
        """Restore what :meth:`state_dict` returned; the best weights must fit the model."""
        _missing(state, self.state_dict(), "keep-best")
        best, best_epoch = self.best.checked(state, trainer.epoch)
        weights = state["best_state"]
        if (weights is None) != (best is None):  # weights are kept from the first value seen on
            raise ValueError(f"best_state={quoted(weights)} with best={best!r}")
        if weights is not None:
            check_tensors("best_state", weights, trainer.model.state_dict())
        self.best.value, self.best.epoch, self.weights = best, best_epoch, weights


class TimeLimit(Callback):
    """Stop the fit after the epoch during which ``seconds`` of wall-clock time have passed since
    it started (Lightning's ``Timer`` callback); :class:`KeepBest`, if any, then brings back the
    best epoch so far. ``stopped`` says whether the limit ended the fit (not its last epoch).

    The clock is the machine's: a fit it stops is no longer fixed by its seed alone. A resumed fit
    starts a fresh clock (the time a killed attempt spent is not known).
    """

    def __init__(self, seconds: float, clock=time.monotonic):
        if not (isinstance(seconds, (int, float)) and seconds > 0 and math.isfinite(seconds)):
            raise ValueError(f"a time limit is a positive number of seconds, not {seconds!r}")
        self.seconds, self.clock = float(seconds), clock
        self.stopped = False
        self._start = 0.0

    def on_fit_start(self, trainer) -> None:
        self._start = self.clock()

    def on_validation_end(self, trainer, record: dict) -> None:
        if trainer.stopping or self.clock() - self._start < self.seconds:
            return  # the fit ends anyway, or there is time left
        trainer.should_stop = True
        self.stopped = True


class MeasureAtSteps(Callback):
    """Measure the model at chosen optimizer steps: ``values[step] = measure(model)`` right after
    step ``step``, in eval mode and without gradients (train mode is restored). A learning curve
    against steps, or against the compute those steps cost (Kaplan et al. 2020's L(C)), from one
    training instead of one training per budget.

    Args:
        steps: the optimizer steps (counted from 1) after which to measure.
        measure: ``measure(model) -> float``.
    """

    state_key = "measure_at_steps"

    def __init__(self, steps, measure):
        self.steps = sorted({check_integer(s, "a step to measure at") for s in steps})
        self.measure = measure
        self.values: dict[int, float] = {}

    def on_step_end(self, trainer) -> None:
        if trainer.step not in self.steps:
            return
        model, training = trainer.model, trainer.model.training
        model.eval()
        with torch.no_grad():
            self.values[trainer.step] = float(self.measure(model))
        model.train(training)

    def state_dict(self) -> dict:
        return {"values": dict(self.values)}

    def load_state_dict(self, state: dict, trainer) -> None:
        """Restore the values measured before a checkpoint: steps measured, none past it."""
        _missing(state, self.state_dict(), "measure-at-steps")
        values = state["values"]
        if not isinstance(values, dict) or any(s not in self.steps or s > trainer.step for s in values):
            raise ValueError(f"values={quoted(values)} at step {trainer.step}, measuring at {self.steps}")
        self.values = {int(s): float(v) for s, v in values.items()}


class LogRecords(Callback):
    """Hand every epoch's record to ``logger.log``; on a resume, ``logger.rewind(step)`` first
    drops what a killed run logged after its checkpoint. Across processes, rank 0's only."""

    def __init__(self, logger):
        self.logger = logger

    @main_process_only
    def on_fit_start(self, trainer) -> None:
        self.logger.rewind(trainer.step)

    @main_process_only
    def on_validation_end(self, trainer, record: dict) -> None:
        self.logger.log(record)


PROGRESS_MODES = (True, False, None, "lines")


class TrainingProgress(Callback):
    """What a training shows while it runs, on stderr.

    ``mode``: ``True``, a bar over optimizer steps with the epoch's running loss and the last
    validation figure, left on screen when the training ends; ``"lines"``, one line per epoch
    (tag, epoch, loss, the validation figure, elapsed time), for a log file or a pipe: a long
    run is never silent for longer than an epoch; ``False``, nothing; ``None``, a bar when
    stderr is a terminal (and not in CI), else nothing. Across processes, rank 0 shows it.
    """

    def __init__(self, mode: bool | str | None = None):
        if mode not in PROGRESS_MODES:
            raise ValueError(f"progress must be True, False, None or 'lines', not {mode!r}")
        if mode is None:
            mode = sys.stderr.isatty() and not os.environ.get("CI")
        self.mode = mode
        self.bar = None
        self.postfix: dict[str, str] = {}

    @main_process_only
    def on_fit_start(self, trainer) -> None:
        self.start = time.perf_counter()
        if self.mode is True and not trainer.finished:
            from tqdm.auto import tqdm

            total = trainer.config.epochs * trainer.steps_per_epoch
            self.bar = tqdm(
                total=total, initial=trainer.step, desc=trainer.tag, unit="step", dynamic_ncols=True
            )

    def on_step_end(self, trainer) -> None:
        if self.bar is not None:
            self.postfix["loss"] = f"{trainer.running_loss:.4g}"
            self.bar.set_postfix(self.postfix, refresh=False)
            self.bar.update(1)

    @main_process_only
    def on_validation_end(self, trainer, record: dict) -> None:
        monitor = trainer.config.monitor
        key = monitor if monitor in record else next((k for k in record if k.startswith("val_")), None)
        if self.bar is not None and key is not None:
            self.postfix[key] = f"{record[key]:.4g}"
            self.bar.set_postfix(self.postfix)
        if self.mode == "lines":
            figure = f"  {key} {record[key]:.4g}" if key is not None else ""
            sys.stderr.write(
                f"{trainer.tag}  epoch {record['epoch']}/{trainer.config.epochs}  "
                f"loss {record['train_loss']:.4g}{figure}  {time.perf_counter() - self.start:.1f} s\n"
            )
            sys.stderr.flush()

    def on_fit_end(self, trainer) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def on_exception(self, trainer, error: BaseException) -> None:
        self.on_fit_end(trainer)


def arranged(config, given) -> list:
    """The callbacks of a training in the order they nest: checkpointing, those ``config`` asks
    for (the weight average of ``ema_decay``, early stopping of ``patience``, keep-the-best of
    ``restore_best`` with it), the others as given, and a progress display when none is given."""
    from biaslab.train.averaging import WeightAveraging
    from biaslab.train.checkpoint import Checkpointing

    given = list(given)
    outer = [cb for cb in given if isinstance(cb, Checkpointing)]
    inner = [cb for cb in given if not isinstance(cb, Checkpointing)]
    from_config: list = []
    if config.ema_decay:
        from_config.append(WeightAveraging(config.ema_decay))
    if config.patience:
        from_config.append(EarlyStopping(config.patience, config.monitor, config.min_delta))
        if config.restore_best:
            from_config.append(KeepBest(config.monitor, config.min_delta))
    if not any(isinstance(cb, TrainingProgress) for cb in inner):
        inner.append(TrainingProgress())
    return [*outer, *from_config, *inner]
