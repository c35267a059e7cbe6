"""Custom training steps for the :class:`~biaslab.train.trainer.Trainer`.

A lab whose loss is not ``loss_fn(model(*inputs), targets)`` (a VAE's two terms, a diffusion
model's random timesteps, a graph model's node masks) passes ``step(model, batch, generator)``
instead. It returns the loss alone, ``(loss, terms)`` or a :class:`StepOutput`; this module
normalises that answer and says how many examples a collated batch holds (its weight in the
epoch means).

:class:`StepOutput` holds ``loss``, ``terms``, ``outputs`` and ``targets``; :func:`batch_size_of`
counts a batch's examples, and :func:`move_to` moves a batch to a device (tensors, tuples, named
tuples, dicts, objects with ``.to``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


@dataclass
class StepOutput:
    """What a custom step returns.

    Args:
        loss: the scalar to minimise (carrying its graph during training).
        terms: extra scalars to log, ``name -> tensor | float`` (e.g. a VAE's ``"recon"`` and
            ``"kl"``); the trainer records their batch-size-weighted means per epoch as
            ``train_<name>`` and ``val_<name>``.
        outputs: what validation metrics are computed on, e.g. ``logits[mask]`` of a masked-node
            graph model; the outputs of all batches are concatenated along dim 0.
        targets: the matching targets, e.g. ``y[mask]``.
    """

    loss: torch.Tensor
    terms: dict[str, torch.Tensor | float] = field(default_factory=dict)
    outputs: torch.Tensor | None = None
    targets: torch.Tensor | None = None


StepResult = torch.Tensor | tuple | StepOutput
StepFn = Callable[[nn.Module, Any, torch.Generator], StepResult]


def as_step_output(result: StepResult) -> StepOutput:
    """Normalise a step's answer (``loss``, ``(loss, terms)`` or a :class:`StepOutput`)."""
    if isinstance(result, StepOutput):
        out = result
    elif isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
        out = StepOutput(result[0], dict(result[1]))
    elif isinstance(result, torch.Tensor):
        out = StepOutput(result)
    else:
        raise TypeError(
            f"a step must return a loss tensor, (loss, terms) or a StepOutput, not {type(result).__name__}"
        )
    if "loss" in out.terms:
        raise ValueError("a step's extra term may not be called 'loss' (it is logged already)")
    return out


def scalar(value: torch.Tensor | float) -> float:
    """A logged term as a Python float (detached: logging never touches the graph)."""
    return value.detach().item() if isinstance(value, torch.Tensor) else float(value)


def batch_size_of(batch: Any) -> int:
    """How many examples a collated batch holds: its weight in the epoch means.

    A tensor: its length; a tuple or list: the length of its first tensor; an object with
    ``num_graphs`` (a torch_geometric ``Batch``): that; a dict: the length of its first value;
    anything else (e.g. one graph whose nodes are split by masks): 1.
    """
    if isinstance(batch, torch.Tensor):
        return batch.shape[0] if batch.dim() else 1
    if isinstance(batch, (tuple, list)):
        first = next((t for t in batch if isinstance(t, torch.Tensor)), None)
        return batch_size_of(first) if first is not None else 1
    num_graphs = getattr(batch, "num_graphs", None)
    if num_graphs is not None:
        return int(num_graphs)
    if isinstance(batch, dict) and batch:
        first = next(iter(batch.values()))
        return batch_size_of(first) if isinstance(first, torch.Tensor) else len(first)
    return 1


def holds_nonfinite(batch) -> bool:
    """Whether any floating-point tensor of ``batch`` (a tensor, a tuple, list or mapping of
    them, or a PyG batch via its ``to_dict()``) holds nan or inf."""
    if isinstance(batch, torch.Tensor):
        return batch.is_floating_point() and not bool(torch.isfinite(batch).all())
    if isinstance(batch, (tuple, list)):
        return any(holds_nonfinite(b) for b in batch)
    if isinstance(batch, Mapping):
        return any(holds_nonfinite(b) for b in batch.values())
    to_dict = getattr(batch, "to_dict", None)
    return holds_nonfinite(to_dict()) if callable(to_dict) else False


def move_to(batch, device: torch.device):
    """``batch`` with every tensor on ``device``: a tensor, a tuple, list or dict of them, or an
    object with its own ``.to`` (a torch_geometric ``Batch``, a molecule batch); anything else
    (a number, a string) as it is. On the batch's own device nothing is copied."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a named tuple
        return type(batch)(*(move_to(b, device) for b in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(move_to(b, device) for b in batch)
    if isinstance(batch, dict):
        return {key: move_to(value, device) for key, value in batch.items()}
    to = getattr(batch, "to", None)
    return to(device) if callable(to) else batch
