"""Dropout as an ensemble: the average over random masks against one pass with scaled weights.

The workshop book §4.2: "Dropout (Srivastava et al., 2014). At each training step, randomly set a
fraction of hidden activations to zero. The trained model behaves as an ensemble." A network
with n dropped units is a family of 2ⁿ thinned networks sharing weights; the ensemble's
prediction is the average over masks m (each unit kept with probability q = 1 − p)::

    p_ensemble(y | x) = E_m [softmax(f(x; m))] ≈ (1/T) Σ_t softmax(f(x; m_t))   (Monte Carlo: "MC dropout")

Srivastava et al. 2014 replace the average by one pass of the network with every unit kept and
its outgoing weights scaled by q, "weight scaling" (PyTorch's ``nn.Dropout`` scales by 1/q while
training instead, so that ``eval()`` is that pass). For one dropout layer feeding a linear map the
scaled pass is the masks' expected output exactly, E_m[W (m ⊙ h) / q] = W h; after a
non-linearity it is an approximation, whose error the two functions below measure (their §7.5
found the Monte-Carlo average of about 50 masks matched weight scaling's test error).
Gal & Ghahramani 2016 read the same average as approximate Bayesian inference.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["mc_dropout_probs", "weight_scaled_probs"]


def _dropouts(model: nn.Module) -> list[nn.Module]:
    return [m for m in model.modules() if isinstance(m, nn.modules.dropout._DropoutNd)]


@torch.no_grad()
def mc_dropout_probs(model: nn.Module, x: torch.Tensor, samples: int, seed: int) -> torch.Tensor:
    """Class probabilities of ``samples`` forward passes, each with fresh dropout masks: only the
    dropout layers are switched to training mode (batch norm and the rest stay as they are), and
    the model's modes are restored afterwards. ``seed`` fixes the masks.

    Shapes:
        x ``(N, *)`` -> ``(samples, N, K)``; average over dim 0 for the ensemble's prediction.
    """
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples={samples!r}: give a whole number >= 1")
    dropouts = _dropouts(model)
    if not dropouts:
        raise ValueError("the model has no dropout layer: every sample would be the same")
    modes = [m.training for m in dropouts]
    with torch.random.fork_rng(devices=[x.device] if x.device.type == "cuda" else []):
        torch.manual_seed(seed)
        try:
            for m in dropouts:
                m.train()
            probs = [torch.softmax(model(x), dim=-1) for _ in range(samples)]  # each (N, K)
        finally:
            for m, mode in zip(dropouts, modes):
                m.train(mode)
    return torch.stack(probs)  # (samples, N, K)


@torch.no_grad()
def weight_scaled_probs(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Class probabilities of one pass in evaluation mode (every unit kept; PyTorch's inverted
    dropout makes this the weight-scaled network of Srivastava et al.); the mode is restored.

    Shapes:
        x ``(N, *)`` -> ``(N, K)``.
    """
    was_training = model.training
    model.eval()
    try:
        return torch.softmax(model(x), dim=-1)
    finally:
        model.train(was_training)
