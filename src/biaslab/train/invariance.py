"""A symmetry imposed by training instead of by the architecture: augmentation and a penalty.

Three ways give a model a known symmetry T (the seeds' physics slides): build it into the
architecture (a group convolution, :mod:`biaslab.nn.group_conv`), or leave the architecture plain
and teach it, either by showing transformed examples with their unchanged labels,

    L_aug(θ) = E_{g ~ G} CE(f_θ(T_g x), y)                                   (data augmentation)

or by adding the measured violation of the symmetry to the loss, weighted by λ,

    L_pen(θ) = CE(f_θ(x), y) + λ · E_{g ~ G} mean_c (f_θ(T_g x)_c − f_θ(x)_c)²   (invariance penalty)

(the slides' γ Ω(ŷ, Φ) with Ω the invariance error of the logits; it needs no labels for T_g x).
Both are Trainer steps; each draws g per example from the trainer's generator, so a seed fixes
the draws and a resumed training repeats them. Neither makes f exactly invariant: they approach
it where the data are, at the cost of the examples (augmentation) or of a second forward pass
per step (the penalty).

The calls: :func:`random_quarter_turns` (each image its own k ~ uniform{0..3}),
:func:`random_shifts` (each image its own whole-pixel offset, by
:func:`biaslab.data.transforms.translate_each`), :func:`augmented_step` (cross-entropy on
transformed inputs), :func:`invariance_penalty` (Ω, the mean squared change of the outputs) and
:func:`invariance_step` (cross-entropy + λ Ω on a transformed copy). Each equals its formula
written out (tested).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from biaslab.data.transforms import translate_each
from biaslab.train.steps import StepOutput

__all__ = ["augmented_step", "invariance_penalty", "invariance_step", "random_quarter_turns", "random_shifts"]

Transform = Callable[[torch.Tensor, torch.Generator], torch.Tensor]


def random_quarter_turns(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Each image turned by its own random element of C4: k ~ uniform{0, 1, 2, 3} quarter turns
    (``torch.rot90``'s direction), drawn from ``generator``.

    Shapes:
        ``(N, C, H, H)`` -> ``(N, C, H, H)``.
    """
    if x.dim() != 4 or x.size(-1) != x.size(-2):
        raise ValueError(f"expected square images (N, C, H, H), got shape {tuple(x.shape)}")
    k = torch.randint(0, 4, (len(x),), generator=generator, device=generator.device).to(x.device)  # (N,)
    turned = torch.stack([torch.rot90(x, r, (-2, -1)) for r in range(4)])  # (4, N, C, H, H)
    return turned[k, torch.arange(len(x), device=x.device)]  # (N, C, H, H): image i turned k_i times


def random_shifts(x: torch.Tensor, generator: torch.Generator, max_shift: int = 2) -> torch.Tensor:
    """Each image shifted by its own whole-pixel offset (dx, dy), each drawn uniformly from
    ``-max_shift..max_shift`` with ``generator``; pixels that enter the frame are 0
    (:func:`~biaslab.data.transforms.translate_each`). ``functools.partial(random_shifts, max_shift=m)``
    is a transform for :func:`augmented_step`.

    Shapes:
        ``(N, ..., H, W)`` -> the same shape.
    """
    if max_shift < 0:
        raise ValueError(f"max_shift must be >= 0, got {max_shift}")
    offsets = torch.randint(
        -max_shift, max_shift + 1, (len(x), 2), generator=generator, device=generator.device
    )
    return translate_each(x, offsets.to(x.device))  # offsets (N, 2): image i's (dx, dy)


def augmented_step(transform: Transform = random_quarter_turns):
    """A Trainer step for L_aug: cross-entropy on ``transform``-ed inputs with their own labels."""

    def step(model: nn.Module, batch, generator: torch.Generator) -> StepOutput:
        x, y = batch
        logits = model(transform(x, generator))
        return StepOutput(nn.functional.cross_entropy(logits, y), outputs=logits, targets=y)

    return step


def invariance_penalty(outputs: torch.Tensor, turned_outputs: torch.Tensor) -> torch.Tensor:
    """Ω = mean over examples and outputs of (f(T x) − f(x))², from f(x) and f(T x): zero for an
    invariant model.

    Shapes:
        ``outputs`` and ``turned_outputs`` ``(N, ...)`` -> a scalar.
    """
    return ((turned_outputs - outputs) ** 2).mean()


def invariance_step(weight: float, transform: Transform = random_quarter_turns):
    """A Trainer step for L_pen: cross-entropy on the inputs as given plus ``weight`` (λ) times
    Ω on a ``transform``-ed copy; logs ``penalty`` (Ω before weighting)."""

    def step(model: nn.Module, batch, generator: torch.Generator) -> StepOutput:
        x, y = batch
        logits = model(x)
        penalty = invariance_penalty(logits, model(transform(x, generator)))  # Ω: one forward pass more
        loss = nn.functional.cross_entropy(logits, y) + weight * penalty
        return StepOutput(loss, {"penalty": penalty.detach()}, outputs=logits, targets=y)

    return step
