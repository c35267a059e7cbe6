"""Explicit regularisers as proximal steps, and the weight measures that show what they do.

A penalty R(w) added to the loss can be taken as a gradient (torch's ``weight_decay`` adds λw to
the gradient of L2) or, after each plain gradient step of step size η, by its *proximal map*
(proximal gradient descent; Parikh & Boyd 2014, sec. 4.2):

    w ← prox_{ηR}(w − η ∇L(w)),   prox_{ηR}(v) = argmin_w  R(w) + ‖w − v‖² / (2η)

For the two classic penalties the map is one line:

    R = λ‖w‖₁:          prox(v) = sign(v) · max(|v| − ηλ, 0)      (soft thresholding, ISTA)
    R = (λ/2)‖w − a‖²:  prox(v) = a + (v − a) / (1 + ηλ)          (shrinking towards the anchor a)

The L1 map sets every weight within ηλ of zero *exactly* to zero, which a subgradient never
does: that is how L1 makes a network sparse. The L2 map with a = 0 is weight decay; with a = the
initial weights it is the penalty the equivalence of early stopping and L2 is stated for
(Goodfellow et al. 2016, sec. 7.8, whose gradient descent starts at w = 0: early stopping after
τ steps acts like this penalty with λ ≈ 1/(ητ), eq. 7.43).

:class:`Proximal` is a Trainer callback that applies one map after every optimizer step, with
the step's learning rate; it is exact proximal gradient descent for plain SGD and refuses other
optimizers. :class:`WeightNorms` logs ‖w‖ and ‖w − w₀‖ at every epoch, the coordinates of the
regularisation paths.

:func:`soft_threshold` equals torch's softshrink, and :func:`shrink_toward` is the L2 map; proximal
descent reaches scikit-learn's Lasso, its exact zeros included, and the closed-form ridge
solution around an anchor (tested). :func:`weights_of` (the matrices and kernels a penalty acts
on), :func:`exact_zeros` and :func:`weight_norms` measure the weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import torch
from torch import nn

from biaslab.train.callbacks import Callback

__all__ = [
    "Proximal",
    "WeightNorms",
    "exact_zeros",
    "shrink_toward",
    "soft_threshold",
    "weight_norms",
    "weights_of",
]

Penalty = Literal["l1", "l2"]


def soft_threshold(v: torch.Tensor, threshold: float) -> torch.Tensor:
    """prox of threshold·‖·‖₁: sign(v) · max(|v| − threshold, 0), elementwise (= torch's softshrink)."""
    return v.sign() * (v.abs() - threshold).clamp_min(0)


def shrink_toward(v: torch.Tensor, anchor: torch.Tensor | None, strength: float) -> torch.Tensor:
    """prox of (strength/2)·‖· − anchor‖²: anchor + (v − anchor) / (1 + strength); anchor None is 0."""
    if anchor is None:
        return v / (1 + strength)
    return anchor + (v - anchor) / (1 + strength)


def weights_of(model: nn.Module, matrices_only: bool = True) -> list[torch.Tensor]:
    """The parameters a penalty acts on: the weight matrices and kernels (dim > 1; biases and
    norms' scales left alone, as is usual), or every parameter."""
    return [p for p in model.parameters() if p.dim() > 1 or not matrices_only]


def exact_zeros(model: nn.Module) -> tuple[int, int]:
    """(weights exactly 0.0, all weights) over the weight matrices and kernels."""
    weights = weights_of(model)
    return sum(int((w == 0).sum()) for w in weights), sum(w.numel() for w in weights)


@torch.no_grad()
def weight_norms(model: nn.Module, reference: Sequence[torch.Tensor]) -> tuple[float, float]:
    """(‖w‖, ‖w − w₀‖) over the weight matrices and kernels, w₀ = ``reference`` (one tensor
    per weight, e.g. copies of the initial ones), summed in float64."""
    weights = weights_of(model)
    norm = sum(float((w.double() ** 2).sum()) for w in weights)
    distance = sum(
        float(((w.double() - r.to(w.device).double()) ** 2).sum()) for w, r in zip(weights, reference)
    )
    return math.sqrt(norm), math.sqrt(distance)


class Proximal(Callback):
    """After every optimizer step, the proximal map of a penalty on the model's weights.

    Args:
        penalty: ``"l1"`` (λ‖w‖₁, soft thresholding) or ``"l2"`` ((λ/2)‖w − a‖²).
        strength: λ (> 0).
        anchor: for ``"l2"``, the weights a to shrink towards, one tensor per penalised
            parameter (e.g. copies of the initial weights); None shrinks towards 0.
        matrices_only: penalise the weight matrices and kernels only (default True), or every
            parameter.

    The step size is the optimizer's learning rate at that step (schedules included). Proximal
    gradient descent is defined for plain gradient steps: an optimizer other than SGD without
    momentum is refused when the fit starts.
    """

    def __init__(
        self,
        penalty: Penalty,
        strength: float,
        anchor: Sequence[torch.Tensor] | None = None,
        matrices_only: bool = True,
    ):
        if penalty not in ("l1", "l2"):
            raise ValueError(f"penalty must be 'l1' or 'l2', got {penalty!r}")
        if not (isinstance(strength, (int, float)) and math.isfinite(strength) and strength > 0):
            raise ValueError(f"strength must be a finite number > 0, got {strength!r}")
        if penalty == "l1" and anchor is not None:
            raise ValueError("an anchor is for penalty='l2'; L1's proximal map shrinks towards 0")
        self.penalty, self.strength, self.matrices_only = penalty, float(strength), matrices_only
        self.anchor = None if anchor is None else [a.detach() for a in anchor]

    def on_fit_start(self, trainer) -> None:
        config = trainer.config
        if config.optimizer != "sgd" or config.momentum:
            raise ValueError(
                f"a proximal step follows a plain gradient step: needs optimizer=sgd without momentum, "
                f"got optimizer={config.optimizer}, momentum={config.momentum}"
            )
        weights = weights_of(trainer.model, self.matrices_only)
        if self.anchor is not None:
            shapes = [tuple(w.shape) for w in weights]
            if [tuple(a.shape) for a in self.anchor] != shapes:
                raise ValueError(
                    f"anchor shapes {[tuple(a.shape) for a in self.anchor]} != the weights' {shapes}"
                )
            self.anchor = [a.to(w.device, w.dtype) for a, w in zip(self.anchor, weights)]

    @torch.no_grad()
    def on_step_end(self, trainer) -> None:
        eta = trainer.optimizer.param_groups[0]["lr"]
        weights = weights_of(trainer.model, self.matrices_only)
        anchors = self.anchor or [None] * len(weights)
        for w, a in zip(weights, anchors):
            if self.penalty == "l1":
                w.copy_(soft_threshold(w, eta * self.strength))
            else:
                w.copy_(shrink_toward(w, a, eta * self.strength))


class WeightNorms(Callback):
    """Log ``weight_norm`` ‖w‖ and ``weight_distance`` ‖w − w₀‖ (over the weight matrices and
    kernels) in every epoch's record; w₀ is ``reference`` (copies of the initial weights)."""

    def __init__(self, reference: Sequence[torch.Tensor]):
        self.reference = [r.detach().clone() for r in reference]

    def on_validation_end(self, trainer, record: dict) -> None:
        record["weight_norm"], record["weight_distance"] = weight_norms(trainer.model, self.reference)
