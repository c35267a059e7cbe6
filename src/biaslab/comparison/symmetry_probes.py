"""Probing the data's own symmetries: which transformations leave the label alone, and which
candidates are built to ignore them.

A prior fits when the data have the symmetry it assumes (Day 4). Two questions, for each
transformation T a prior of the data's kind could assume (:func:`probes_for`):

1. **Does the label survive T?** (:func:`label_survival`) The same candidate (the MLP is the
   natural reference: it assumes no symmetry, so it can learn T(x) and x apart) is trained twice
   by the comparison protocol, once as is and once with its training batches augmented by T
   (each example transformed with probability :data:`AUGMENT_PROBABILITY`). Both are judged on
   the **validation** rows, never the test rows. The cost of augmenting is measured with its 95%
   interval (:func:`survival`), against a margin (:data:`SURVIVAL_POINTS` points of accuracy,
   :data:`SURVIVAL_MAE_FRACTION` of the MAE to regress), and one of three outcomes is said: the
   label **survives** T (the whole interval lies below the margin), T **changes** it (the whole
   interval lies above), or the validation rows **cannot tell** (the interval straddles the
   margin: how many rows would decide is said too).
2. **Which candidates are invariant to T?** (:func:`candidate_invariance`) The symmetry verifier
   (:func:`biaslab.evaluate.symmetry.invariance_error`) of a trained model on validation inputs:
   about 1e-7 for an exact symmetry (Deep Sets under a permutation), order 1 for none (an MLP).

:mod:`biaslab.comparison.symmetry_report` asks both questions per probe and says, in sentences,
which prior fits the data and why.

    kind       probes (name: the prior that assumes it)
    image      shift (a random translation of up to 1/8 of the side, edges repeated):
               translation invariance; flip (left-right): mirror symmetry
    sequence   time shift (up to 1/8 of the steps, edges repeated): translation invariance in
               time; reversal: no direction of time
    set        permutation (of the elements, the mask alike): permutation invariance
    table      none: augmenting with a column permutation costs nothing even where the columns'
               order carries the label (it moves examples off the data, where no label
               collides), so it cannot tell; a table's candidates assume no symmetry anyway

What "the label survives T" measures, then: that T maps no example onto another class's (or
another target's) examples, so a model can be trained on x and T(x) alike. For a transformation
that keeps examples on the data (shifts, reversals, permutations of a set) that is the symmetry;
a left-right flip of digits also passes, because flipped digits look like no other digit.

Details: the augmented training has its own tag, checkpoint and log but the plain one's seed, so
the same initial weights (``fitting.init_seed`` ignores the tag), and a plain result at hand is
reused. The interval is on accuracy points with Agresti and Caffo's adjusted variances, or on the
MAE's relative rise with var|e| = RMSE² − MAE²; :meth:`Survival.rows_to_decide` says how many rows
would decide. :func:`candidate_invariance` calls an error below ``EXACT_INVARIANCE`` (1e-5)
exact and one from ``NO_INVARIANCE`` (0.05) none; :func:`invariances` measures it for every probe
on the first validation rows. ``biaslab compare`` runs the probes after the leaderboard unless
``symmetries=false``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from biaslab.comparison.fitting import Fitted, Trial
from biaslab.comparison.probes import Probe, draw_rand, probes_for
from biaslab.comparison.protocol import fit_candidate
from biaslab.errors import ConfigError
from biaslab.evaluate.symmetry import invariance_error
from biaslab.train.seed import derive_seed

if TYPE_CHECKING:
    from biaslab.comparison.candidates import Candidate, Task
    from biaslab.comparison.prepared import Prepared
    from biaslab.comparison.protocol import CandidateResult
    from biaslab.train.recipes import TrainSetup

__all__ = [
    "AUGMENT_PROBABILITY",
    "EXACT_INVARIANCE",
    "NO_INVARIANCE",
    "OUTCOMES",
    "SURVIVAL_MAE_FRACTION",
    "SURVIVAL_POINTS",
    "Z_95",
    "Probe",
    "Survival",
    "augmented",
    "candidate_invariance",
    "invariance_word",
    "invariances",
    "label_survival",
    "probes_for",
    "survival",
    "with_probe",
]

# Each training example is transformed with this probability: the model sees x and T(x) alike,
# as augmentation does, and can fit both only if they share a label.
AUGMENT_PROBABILITY = 0.5
# The margin: augmenting with T may cost up to this many points of validation accuracy (2
# points: below what a prior's fit is argued from), or raise the validation MAE by up to 5%,
# with the label still surviving T.
SURVIVAL_POINTS = 2.0
SURVIVAL_MAE_FRACTION = 0.05
Z_95 = 1.959964  # the normal quantile of a two-sided 95% interval
OUTCOMES = ("survives", "changes", "cannot tell")
# Invariance errors (relative, as the verifier gives them): below EXACT_INVARIANCE the model is
# invariant by construction (float32 rounding is ~1e-7); at or above NO_INVARIANCE it is not.
EXACT_INVARIANCE = 1e-5
NO_INVARIANCE = 0.05


# -- 1. does the label survive T? -------------------------------------------------------------
def augmented(
    probe: Probe, x: torch.Tensor, mask: torch.Tensor | None, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A training batch augmented by ``probe``: each example replaced by its transform with
    probability :data:`AUGMENT_PROBABILITY` (the mask alike).

    Shapes:
        x (N, *input_shape), mask (N, S) or None -> the same.
    """
    moved_x, moved_mask = probe.transform(x, mask, generator)
    chosen = draw_rand((len(x),), generator, x) < AUGMENT_PROBABILITY  # (N,)
    pick = chosen.reshape(-1, *([1] * (x.dim() - 1)))
    out_mask = mask if mask is None else torch.where(chosen[:, None], moved_mask, mask)
    return torch.where(pick, moved_x, x), out_mask


class _AugmentedWithMask(nn.Module):
    """A set model trained on batches augmented by a probe that moves the mask too (the
    protocol's ``augment`` sees the inputs only): the probe applies in training mode only, drawing
    from the wrapper's own seeded generator.

    Shapes:
        ``x (N, S, F)``, ``mask (N, S)`` -> ``model(x, mask)``.
    """

    def __init__(self, model: nn.Module, probe: Probe, seed: int):
        super().__init__()
        self.model, self.probe = model, probe
        self.generator = torch.Generator().manual_seed(seed)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.training:
            x, mask = augmented(self.probe, x, mask, self.generator)
        return self.model(x, mask)


def with_probe(candidate: Candidate, probe: Probe, seed: int = 0) -> Candidate:
    """``candidate`` trained on batches augmented by ``probe`` (after its own augmentation, if
    any), named ``"<name> + <probe>"``.

    A candidate without a mask gets the probe as its ``augment`` (drawn from the trainer's step
    generator); one that takes a mask has its model wrapped, so that the mask moves with the
    elements (its draws seeded by ``derive_seed(seed, "probe", probe.name)``).

    Raises:
        ConfigError: a scikit-learn candidate (it trains on no batches to augment).
    """
    if candidate.engine != "torch":
        raise ConfigError(
            f"candidate {candidate.name!r} is a scikit-learn estimator: it cannot be trained with "
            "augmented batches; probe the label with a torch candidate such as the MLP"
        )
    name = f"{candidate.name} + {probe.name}"
    own = candidate.augment
    if not candidate.takes_mask:

        def augment(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
            if own is not None:
                x = own(x, generator)
            return augmented(probe, x, None, generator)[0]

        return dataclasses.replace(candidate, name=name, augment=augment)

    build = candidate.build

    def build_augmented(input_shape, n_outputs, task):
        return _AugmentedWithMask(
            build(input_shape, n_outputs, task), probe, derive_seed(seed, "probe", probe.name)
        )

    return dataclasses.replace(candidate, name=name, build=build_augmented)


@dataclass(frozen=True)
class Survival:
    """Whether the label survives a probe's transformation, by the cost of augmenting with it.

    Attributes:
        probe: the probe's name.
        candidate: the reference candidate trained twice.
        metric: ``"accuracy"`` (classify) or ``"mae"`` (regress), on the validation rows.
        plain, augmented: the validation metric without and with augmentation.
        cost: accuracy points lost (100 × (plain − augmented)) or the MAE's relative rise
            ((augmented − plain) / plain); negative when augmenting helped.
        margin: the most augmenting may cost with the label surviving (same unit as ``cost``).
        low, high: the cost's 95% interval (:func:`survival`).
        n_val: the validation rows it was measured on.
    """

    probe: str
    candidate: str
    metric: str
    plain: float
    augmented: float
    cost: float
    margin: float
    low: float
    high: float
    n_val: int

    @property
    def outcome(self) -> str:
        """``"survives"`` (the interval below the margin), ``"changes"`` (above it) or
        ``"cannot tell"`` (it straddles the margin)."""
        if self.high < self.margin:
            return "survives"
        return "changes" if self.low > self.margin else "cannot tell"

    @property
    def survives(self) -> bool:
        return self.outcome == "survives"

    @property
    def rows_to_decide(self) -> int | None:
        """About how many validation rows would narrow the interval off the margin (the interval's
        half-width falls as 1/sqrt(rows)); None once decided, or for a cost exactly on it."""
        gap = abs(self.cost - self.margin)
        if self.outcome != "cannot tell" or gap == 0:
            return None
        half = (self.high - self.low) / 2
        return math.ceil(self.n_val * (half / gap) ** 2)

    def _amount(self, value: float) -> str:
        return f"{value:.1f} points" if self.metric == "accuracy" else f"{100 * value:.1f}% of the MAE"

    @property
    def cost_text(self) -> str:
        """``"costs 0.3 points"`` or ``"costs 4.1% of the MAE"``; a negative cost says it helped."""
        return f"{'costs' if self.cost >= 0 else 'gains'} {self._amount(abs(self.cost))}"

    @property
    def interval_text(self) -> str:
        """``"95% interval -0.8 to 4.6 points, margin 2.0 points"``."""
        if self.metric == "accuracy":
            span = f"{self.low:.1f} to {self.high:.1f} points"
        else:
            span = f"{100 * self.low:.1f}% to {100 * self.high:.1f}% of the MAE"
        return f"95% interval {span}, margin {self._amount(self.margin)}"


def label_survival(
    probe: Probe,
    trial: Trial,
    *,
    augmented_setup: TrainSetup | None = None,
    plain: CandidateResult | None = None,
) -> Survival:
    """Train ``trial.candidate`` twice by the protocol (the same split, seed and initial weights; the
    order of the batches follows each training's tag), as is and augmented by ``probe``, and
    compare their validation scores. (``fit_candidate`` scores the test rows too, as it always
    does; those scores are not used for the verdict.)

    The outcome, from the cost's 95% interval against the margin: see :func:`survival`.

    Args:
        trial: the plain training (:class:`~biaslab.comparison.fitting.Trial`).
        augmented_setup: the augmented training's: its own tag, checkpoint and log, and
            ``trial.setup``'s seed, so that both start from the same weights (a run passes
            ``replace(ctx.training(tag), seed=setup.seed)``). Default: ``trial.setup`` renamed
            ``"<tag> + <probe>"``, without checkpoint or log (a checkpoint shared by the two
            trainings would resume the first).
        plain: the plain training's result when it is already at hand (a comparison trained the
            reference as a candidate): it is not trained again.
    """
    candidate, setup = trial.candidate, trial.setup
    if augmented_setup is None:
        augmented_setup = dataclasses.replace(
            setup, tag=f"{setup.tag} + {probe.name}", checkpoint=None, logger=None
        )
    if augmented_setup.seed != setup.seed:
        raise ConfigError(
            f"the augmented training's seed ({augmented_setup.seed}) differs from the plain one's "
            f"({setup.seed}): the two would start from different weights"
        )
    if plain is None:
        plain = fit_candidate(trial)
    moved = fit_candidate(
        dataclasses.replace(trial, candidate=with_probe(candidate, probe, setup.seed), setup=augmented_setup)
    )
    return survival(
        probe.name, candidate.name, trial.task, plain.val, moved.val, len(trial.prepared.rows["val"])
    )


def survival(probe: str, candidate: str, task: Task, plain: dict, moved: dict, n_val: int) -> Survival:
    """The verdict of :func:`label_survival` from the two trainings' validation scores (``plain``
    and ``moved``: ``CandidateResult.val``) on ``n_val`` validation rows: the cost and its 95%
    interval, cost ± :data:`Z_95` standard errors, each score's variance from what the scores hold.

    Classify: the two accuracies as proportions of ``n_val`` rows, their variances p(1−p)/n
    taken at Agresti and Caffo's (2000) adjusted proportions (one success and one failure added
    to each), so that two perfect scores still leave an interval. Regress: the MAE's variance is
    var(|e|)/n = (RMSE² − MAE²)/n, the interval of the rise divided by the plain MAE. The two
    trainings are treated as independent (they are judged on the same rows, so the interval is,
    if anything, too wide: "cannot tell" errs toward caution).
    """
    n = max(n_val, 1)
    if task == "classify":
        a, b = plain["accuracy"], moved["accuracy"]
        cost, margin, metric = 100 * (a - b), SURVIVAL_POINTS, "accuracy"
        adjusted = [(p * n + 1) / (n + 2) for p in (a, b)]
        se = 100 * math.sqrt(sum(p * (1 - p) / (n + 2) for p in adjusted))
    else:
        a, b = plain["mae"], moved["mae"]
        scale = max(a, np.finfo(np.float64).tiny)
        cost, margin, metric = (b - a) / scale, SURVIVAL_MAE_FRACTION, "mae"
        spread = sum(max(s["rmse"] ** 2 - s["mae"] ** 2, 0.0) for s in (plain, moved))
        se = math.sqrt(spread / n) / scale
    return Survival(probe, candidate, metric, a, b, cost, margin, cost - Z_95 * se, cost + Z_95 * se, n_val)


# -- 2. which candidates are invariant to T? ---------------------------------------------------
def candidate_invariance(
    model: nn.Module | Fitted,
    probe: Probe,
    x: torch.Tensor,
    mask: torch.Tensor | None = None,
    generator: torch.Generator | int = 0,
) -> float:
    """The verifier's invariance error of a trained model under ``probe`` on inputs ``x``
    (validation rows): ~1e-7 for an exact symmetry, order 1 for none.

    Args:
        model: a torch module, called as ``model(x, mask)`` when ``mask`` is given, else
            ``model(x)``; or a :class:`~biaslab.comparison.fitting.Fitted` (torch or
            scikit-learn: its outputs, the mask passed only if it takes one).
        x, mask: ``(N, *input_shape)`` and ``(N, S)`` or None.
        generator: the probe's draws: a generator, or the seed of a fresh CPU one.
    """
    if not isinstance(generator, torch.Generator):
        generator = torch.Generator().manual_seed(int(generator))
    if isinstance(model, Fitted):
        fitted = model

        def model(x_: torch.Tensor, mask_: torch.Tensor | None = None) -> torch.Tensor:
            return torch.from_numpy(fitted.outputs(x_.cpu(), None if mask_ is None else mask_.cpu()))

        inputs: Any = (x, mask)
    else:
        inputs = x if mask is None else (x, mask)

    def transform(batch: Any) -> Any:
        if isinstance(batch, tuple):
            return probe.transform(batch[0], batch[1], generator)
        return probe.transform(batch, None, generator)[0]

    return invariance_error(model, transform, inputs)


def invariances(fitted: Fitted, prepared: Prepared, probes, seed: int, rows: int = 256) -> dict[str, float]:
    """A trained candidate's invariance error under each probe (:func:`candidate_invariance`) on
    the first ``rows`` validation rows, each probe's draws seeded from ``seed`` and its name."""
    if not probes:
        return {}
    x, mask, _ = prepared.tensors("val")
    x, mask = x[:rows], None if mask is None else mask[:rows]
    return {
        probe.name: candidate_invariance(fitted, probe, x, mask, derive_seed(seed, "invariance", probe.name))
        for probe in probes
    }


def invariance_word(error: float) -> str:
    """``"exact"`` (below :data:`EXACT_INVARIANCE`), ``"none"`` (at or above
    :data:`NO_INVARIANCE`), else ``"approximate"``."""
    if error < EXACT_INVARIANCE:
        return "exact"
    return "none" if error >= NO_INVARIANCE else "approximate"
