"""A comparison's many trainings of one candidate, trained together.

A learning curve trains one candidate 8 times (4 sizes, 2 seeds), each subset repeated to the
whole training set's rows so that every point takes the same steps (:mod:`.curves`): trainings
of one architecture on data of one shape, the case :func:`~biaslab.train.ensemble.fit_ensemble`
batches. :func:`fit_together` fits a list of trials as :func:`~biaslab.comparison.fitting.fit`
fits each: each member built from its own setup's seed, shuffled and augmented with its own
draws, keeping its own best epoch on its own validation rows
(:data:`~biaslab.comparison.fitting.MONITORS`): the same trainings, each member's weights equal
to its own fit's up to float rounding, in a fraction of the time; each training's records go to
its setup's logger as its own fit would send them (after the fit, not as it runs; no checkpoint:
a batch killed midway trains again, to the same numbers). Trials it cannot batch (an
estimator, graphs, masks, a regressor, early stopping, a time limit, a GPU, a layer such as
dropout) are fitted one by one as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from biaslab.comparison.fitting import MONITORS, Fitted, Trial, fit, init_seed, kept_best
from biaslab.comparison.models import FOR_MEMBERS
from biaslab.errors import ConfigError
from biaslab.train.ensemble import each_member, fit_ensemble
from biaslab.train.trainer import accuracy

__all__ = ["MAX_BATCHED_VALUES", "fit_together", "small_enough"]

MAX_BATCHED_VALUES = 25_000_000  # input values of all members' training sets together (100 MB float32)


def small_enough(count: int, rows: int, input_shape: Sequence[int]) -> bool:
    """Whether ``count`` training sets of ``rows`` examples of ``input_shape`` fit in memory at
    once (:data:`MAX_BATCHED_VALUES`): a curve of MNIST-sized data is trained one fit at a time."""
    return count * rows * math.prod(input_shape) <= MAX_BATCHED_VALUES


def fit_together(trials: Sequence[Trial]) -> list[Fitted]:
    """Each of ``trials`` fitted as :func:`~biaslab.comparison.fitting.fit` fits it, in order;
    trials of one torch candidate classifying array data of one shape as one batched ensemble."""
    trials = list(trials)
    if not _batchable(trials):
        return [fit(trial) for trial in trials]
    first = trials[0]
    candidate, task, monitor = first.candidate, first.task, MONITORS[first.task]
    models = []
    for trial in trials:
        torch.manual_seed(init_seed(trial.setup))  # as fit_torch draws each one's initial weights
        models.append(candidate.build(trial.prepared.input_shape, trial.prepared.n_outputs, task))
    try:
        together = fit_ensemble(
            models,
            [trial.prepared.trainer_batches("train", False) for trial in trials],
            kept_best(first.config, monitor),
            seeds=[trial.setup.seed for trial in trials],
            tags=[trial.setup.tag for trial in trials],
            val=[trial.prepared.trainer_batches("val", False) for trial in trials],
            metrics={"accuracy": accuracy},
            keep_best=monitor,
            augment=None if candidate.augment is None else _for_members(candidate.augment),
        )
    except ConfigError:  # what a batch cannot hold (dropout, early stopping, ...): one by one
        return [fit(trial) for trial in trials]
    seconds = together.seconds / len(trials)
    parameters = sum(p.numel() for p in together.models[0].parameters())
    for trial, history in zip(trials, together.histories):  # each training's records, as its own fit logs
        for record in history:
            record["tag"] = trial.setup.tag
        if trial.setup.logger is not None:
            trial.setup.logger.rewind(0)
            for record in history:
                trial.setup.logger.log(record)
    return [
        Fitted(model, "torch", task, first.prepared.n_outputs, False, best, seconds, parameters, history)
        for model, best, history in zip(together.models, together.best_epochs, together.histories)
    ]


def _for_members(augment):
    """``augment`` (of one batch) of all members' batches at once: its batched form where
    :data:`~biaslab.comparison.models.FOR_MEMBERS` has one, else a call per member."""
    return FOR_MEMBERS.get(augment) or each_member(augment)


def _batchable(trials: list[Trial]) -> bool:
    """Whether ``trials`` are trainings of one candidate that ``fit`` would make with the protocol's
    plain step on arrays (what ``fit_ensemble`` refuses itself, its ConfigError sends back to one
    by one: layers, early stopping, weight averages, precision, differing shapes)."""
    if len(trials) < 2:
        return False
    first = trials[0]
    candidate, config = first.candidate, first.config
    if candidate.engine != "torch" or candidate.takes_mask or getattr(candidate, "reads", "x") != "x":
        return False
    if first.task != "classify" or first.prepared.kind in ("graph", "molecule"):
        return False
    same = all(t.candidate is candidate and t.config == config for t in trials)
    setups_plain = all(t.setup.time_limit_s is None and t.setup.device == "cpu" for t in trials)
    return same and setups_plain
