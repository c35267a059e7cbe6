"""Accuracy as the inputs move: one curve per kind of change.

A test accuracy is measured where the training data lived. A robustness curve measures it again
after a transform of growing size — digits moved by s pixels, rotated by θ degrees — so the curve
shows how far a model's prior carries it (a CNN's translation equivariance, nothing for rotation).
:func:`accuracy_under_transform` draws such a curve for any transform; the adversarial version,
where the change is chosen against the model, is ``adversarial.accuracy_under_attack``.

:func:`eval_mode` evaluates a model with every module's own training flag restored after.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import nn

from biaslab.checks import check_integer
from biaslab.nn.mlp import device_of
from biaslab.train.config import eval_batch

Transform = Callable[[torch.Tensor, float], "torch.Tensor | Sequence[torch.Tensor]"]


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[None]:
    """Every module in eval mode (dropout off, batch-norm on running statistics), and each one's
    own training flag restored afterwards, also when the body raises."""
    flags = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for module, training in flags:
            module.training = training


def check_curve_inputs(x: torch.Tensor, y: torch.Tensor, batch_size: int) -> int:
    """A robustness curve's inputs, checked: as many labels as rows (at least one), and a whole
    batch size >= 1, returned as an int."""
    batch_size = check_integer(batch_size, "batch_size")
    if len(x) != len(y) or len(x) == 0:
        raise ValueError(f"x and y must hold the same positive number of rows, got {len(x)} and {len(y)}")
    return int(batch_size)


def count_correct(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int) -> int:
    """How many rows of ``x`` the model classifies as ``y`` (argmax of its outputs), in batches
    moved to the model's device."""
    correct, device = 0, device_of(model)
    with eval_mode(model), torch.no_grad():
        for start in range(0, len(x), batch_size):
            logits = model(x[start : start + batch_size].to(device))  # (B, classes)
            correct += int((logits.argmax(dim=1) == y[start : start + batch_size].to(device)).sum())
    return correct


def accuracy_under_transform(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    transform: Transform,
    amounts: Iterable[float],
    batch_size: int | None = None,
) -> dict[float, float]:
    """Accuracy on ``transform(x, a)`` for each amount ``a``: the robustness curve.

    Args:
        model: a classifier, evaluated in eval mode (each module's flag restored afterwards).
        x, y: the inputs and their labels, ``(N, ...)`` and ``(N,)``.
        transform: ``transform(x, a) -> x'``, e.g. ``functools.partial(data.transforms.rotate,
            fill=blank)``; it may return several tensors (moved right, left, down, up:
            ``data.transforms.translations``), and the accuracy at ``a`` is then their mean.
        amounts: the sizes of the change, in the order wanted; include 0 (or whatever leaves the
            inputs as they are) for the clean accuracy.
        batch_size: rows per forward pass (default: ``train.config.eval_batch`` of the model's
            device).
    Returns:
        ``{a: accuracy}`` in the order given, accuracies in [0, 1].
    """
    batch_size = check_curve_inputs(x, y, eval_batch(device_of(model), batch_size))
    curve = {}
    for amount in amounts:
        moved = transform(x, amount)
        versions = [moved] if isinstance(moved, torch.Tensor) else list(moved)
        if not versions or any(v.shape != x.shape for v in versions):
            raise ValueError(f"transform(x, {amount!r}) must return tensors of x's shape {tuple(x.shape)}")
        scores = [count_correct(model, v, y, batch_size) / len(x) for v in versions]
        curve[amount] = sum(scores) / len(scores)
    return curve
