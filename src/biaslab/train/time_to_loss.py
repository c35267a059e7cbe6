"""What it costs to reach a loss: plain SGD steps until the training loss falls to a target.

The cost of gradient descent is counted where it is spent: in examples whose gradient was taken
(a machine-independent count) and in the seconds of the steps alone. A full-batch step takes the
gradient of all N examples and moves once; a minibatch step takes B of them and moves once. If
both made the same progress per step, full batch would cost N/B times as much (the notes' "full
batch is about 100x slower"); the loop measures how far that holds.

The loop is the Trainer's in miniature, for steps rather than epochs: shuffle, step, and every
``check_every`` steps the loss over the whole training set (not timed).

:func:`time_to_loss` returns a :class:`TimeToLoss` (reached, steps, examples, seconds) and stops
on a divergence; full-batch steps equal gradient descent with ``torch.optim.SGD`` (tested).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
from torch import nn

__all__ = ["TimeToLoss", "time_to_loss"]


@dataclass(frozen=True)
class TimeToLoss:
    """``reached``: the training loss fell to the target; ``steps``, ``examples`` (gradients
    taken) and ``seconds`` (of the steps) spent until then, or until the budget ran out or the
    loss diverged (``loss``: the last one measured)."""

    reached: bool
    steps: int
    examples: int
    seconds: float
    loss: float


def time_to_loss(
    model: nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    *,
    batch_size: int,
    lr: float,
    target: float,
    max_examples: int,
    check_every: int = 10,
    seed: int = 0,
) -> TimeToLoss:
    """Plain SGD on cross-entropy until the loss over all of ``inputs`` is at most ``target``.

    Args:
        model: trained in place, outputs logits ``(N, classes)``.
        inputs, targets: the training set ``(N, ...)``, ``(N,)``.
        batch_size: examples per step; ``len(inputs)`` is full-batch gradient descent.
        lr: the step size η of w ← w − η ∇L.
        target: the training loss to reach.
        max_examples: the budget, in gradients of single examples.
        check_every: steps between two checks of the whole set's loss (a full-batch step
            checks after every step).
        seed: seeds the shuffling.

    The loss is checked once before the first step; a check above twice that first loss, or
    not finite, ends the run as diverged.
    """
    n = len(inputs)
    if not 0 < batch_size <= n:
        raise ValueError(f"batch_size must be in 1..{n} (the training set), got {batch_size}")
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed)
    every = 1 if batch_size == n else check_every
    start = loss = _loss(model, inputs, targets)
    order, position, steps, seconds = torch.randperm(n, generator=generator), 0, 0, 0.0
    while steps * batch_size < max_examples:
        if position + batch_size > n:  # a new epoch: reshuffle
            order, position = torch.randperm(n, generator=generator), 0
        rows = order[position : position + batch_size]  # (B,)
        position += batch_size
        began = time.perf_counter()
        model.train()
        step_loss = nn.functional.cross_entropy(model(inputs[rows]), targets[rows])
        optimizer.zero_grad(set_to_none=True)
        step_loss.backward()
        optimizer.step()
        seconds += time.perf_counter() - began
        steps += 1
        if steps % every == 0:
            loss = _loss(model, inputs, targets)
            if loss <= target or not math.isfinite(loss) or loss > 2 * start:
                break
    return TimeToLoss(loss <= target, steps, steps * batch_size, seconds, loss)


@torch.no_grad()
def _loss(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> float:
    model.eval()
    return float(nn.functional.cross_entropy(model(inputs), targets))
