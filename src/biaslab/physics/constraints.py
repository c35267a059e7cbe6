"""Physics in the loss: a conserved quantity as a penalty on a learned vector field.

A network f_θ(x) that models the dynamics dx/dt of a system with a conserved quantity H (a
pendulum's energy) should keep H constant along its own flow. By the chain rule, along dx/dt = f_θ(x)

    dH/dt = ∇H(x) · f_θ(x)                                                        (energy rate)

which is zero for the true dynamics. The seeds' slides write the physics term as γ Ω(ŷ, Φ) added
to the data loss; here Ω is the mean squared energy rate over states x (the training states, or
any others: the penalty needs no labels):

    L = (1/N) Σ ||f_θ(x_i) − ẋ_i||² + γ (1/M) Σ (∇H(x_j) · f_θ(x_j))²

∇H comes from autograd, so any differentiable H works.

:func:`energy_rate` (zero for the true pendulum, c L² ω² for a pushed one: tested),
:func:`conservation_penalty` (its mean square) and :func:`dynamics_step` (a Trainer step: the MSE
to dx/dt plus ``weight`` times the penalty; tested to cut a linear field's energy rate).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from biaslab.train.steps import StepOutput

__all__ = ["conservation_penalty", "dynamics_step", "energy_rate"]

Quantity = Callable[[torch.Tensor], torch.Tensor]  # states (N, D) -> (N,)


def energy_rate(
    field: Callable[[torch.Tensor], torch.Tensor], quantity: Quantity, states: torch.Tensor
) -> torch.Tensor:
    """dH/dt = ∇H(x) · f(x) at each state: how fast ``field`` changes ``quantity``; differentiable
    in the field's parameters (∇H, a property of the system, is a constant to them).

    Shapes:
        states (N, D) -> (N,).
    """
    with torch.enable_grad():  # ∇H by autograd, also where the caller evaluates without gradients
        x = states.detach().requires_grad_(True)
        (gradient,) = torch.autograd.grad(quantity(x).sum(), x)  # (N, D) ∇H
    return (gradient * field(states)).sum(dim=1)


def conservation_penalty(field, quantity: Quantity, states: torch.Tensor) -> torch.Tensor:
    """Ω = mean (dH/dt)² over ``states``: zero for dynamics that conserve H."""
    return energy_rate(field, quantity, states).pow(2).mean()


def dynamics_step(
    quantity: Quantity | None = None, weight: float = 0.0, collocation: torch.Tensor | None = None
):
    """A Trainer step fitting ``model`` (states (B, D) -> derivatives (B, D)) to batches
    ``(x, dx/dt)`` by the mean squared error, plus ``weight`` x the conservation penalty of
    ``quantity`` (none when ``weight`` is 0): on the batch's states, or on B ``collocation``
    states drawn by the trainer's generator each step (states without labels, e.g. beyond the
    data: the penalty needs none).

    Shapes:
        collocation (M, D) or None.
    """
    if weight < 0:
        raise ValueError(f"weight={weight}: a penalty's weight is >= 0")
    if weight > 0 and quantity is None:
        raise ValueError("a conservation penalty needs the quantity to conserve")

    def step(model: nn.Module, batch, generator: torch.Generator) -> StepOutput:
        x, target = batch[0], batch[1]
        predicted = model(x)  # (B, D)
        fit = F.mse_loss(predicted, target)
        if weight == 0:
            return StepOutput(fit, {"fit": fit.detach()}, predicted.detach(), target)
        where = x
        if collocation is not None:
            rows = torch.randint(len(collocation), (len(x),), generator=generator)  # (B,)
            where = collocation[rows].to(x.device, x.dtype)
        penalty = conservation_penalty(model, quantity, where)
        return StepOutput(fit + weight * penalty, {"fit": fit.detach(), "penalty": penalty.detach()},
                          predicted.detach(), target)  # fmt: skip

    return step
