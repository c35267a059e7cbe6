"""How much the loss depends on each input step of a sequence: the vanishing-gradient probe.

A recurrent network reads x_1 … x_T and is judged at the end. The gradient of the loss with
respect to an early input, ∂L/∂x_t, reaches it through T − t multiplications by the recurrent
Jacobian ∂h_{s}/∂h_{s−1} (eq. 5.6 for an Elman cell); when those shrink vectors the gradient
decays geometrically towards the start, and what lies far back cannot be learned.
:func:`gradient_by_step` measures ‖∂L/∂x_t‖ for every t. :func:`scaled_identity_rnn` builds the
network on which that decay has a closed form: a ReLU RNN whose recurrent matrix is ρI and whose
units all stay active, so that ∂h_T/∂h_t = ρ^(T−t) I and ‖∂L/∂x_1‖ / ‖∂L/∂x_T‖ = ρ^(T−1).

It computes in float64 on a copy of the model, so the caller's model and gradients are untouched.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from biaslab.nn.mlp import device_of
from biaslab.nn.recurrent import RNN

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def gradient_by_step(
    model: nn.Module,
    steps: torch.Tensor,
    targets: torch.Tensor,
    loss_fn: LossFn = F.cross_entropy,
) -> np.ndarray:
    """‖∂L/∂x_t‖ for each input step t, averaged over the sequences (L = ``loss_fn``, a mean).

    Computed in float64 on a copy of the model (the caller's model and its gradients are left
    as they are): a vanished gradient is ~1e-30 after 100 Elman steps, which float32 rounds to 0.
    The copy runs on the model's device, or on the CPU for Apple's MPS, which has no float64.

    Args:
        model: reads ``(N, T, F)`` inputs, e.g. ``nn.SequenceClassifier``.
        steps: the inputs ``(N, T, F)`` (one-hot symbols, or real values).
        targets: what ``loss_fn`` compares the outputs with, e.g. class labels ``(N,)``.
        loss_fn: ``loss_fn(outputs, targets) -> scalar``; default the cross-entropy.
    Returns:
        ``(T,)`` array: the gradient's Euclidean norm over the features at each step, mean over N.
    """
    if steps.dim() != 3:
        raise ValueError(f"steps must be (N, T, F), got shape {tuple(steps.shape)}")
    device = device_of(model)
    device = torch.device("cpu") if device.type == "mps" else device
    probe = copy.deepcopy(model).to(device).double()
    inputs = steps.detach().to(device).double().requires_grad_(True)  # (N, T, F)
    with torch.enable_grad():
        loss = loss_fn(probe(inputs), targets.to(device))
        (grad,) = torch.autograd.grad(loss, inputs)  # (N, T, F): nothing lands in .grad
    return grad.norm(dim=-1).mean(dim=0).cpu().numpy()  # (T,)


class LastStepReadout(nn.Module):
    """A recurrent layer read at its last step by a linear map.

    Shapes:
        x ``(N, T, F)`` -> ``(N, classes)``.
    """

    def __init__(self, rnn: nn.Module, classes: int):
        super().__init__()
        self.rnn, self.readout = rnn, nn.Linear(rnn.hidden_size, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output, _ = self.rnn(x)  # (N, T, H)
        return self.readout(output[:, -1])  # (N, classes)


def scaled_identity_rnn(inputs: int, hidden: int, classes: int, radius: float, seed: int) -> LastStepReadout:
    """A float64 ReLU RNN whose recurrent matrix is ρI (an IRNN scaled: Le et al. 2015), read at its
    last step. Its biases are 0 and its input weights non-negative, so on non-negative inputs
    (one-hot symbols) every unit stays active: the network is linear along a sequence and
    ∂h_T/∂h_t = ρ^(T−t) I exactly (eq. 5.6's Jacobian with ReLU' = 1). float64: ρ itself is not
    rounded to float32. The weights are drawn from a generator seeded by ``seed``.

    Shapes:
        x ``(N, T, inputs)`` -> ``(N, classes)``.
    """
    g = torch.Generator().manual_seed(seed)
    rnn = RNN(inputs, hidden, nonlinearity="relu")
    model = LastStepReadout(rnn, classes).double()
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(0.1 * torch.rand(hidden, inputs, generator=g))
        rnn.weight_hh_l0.copy_(radius * torch.eye(hidden, dtype=torch.float64))
        rnn.bias_ih_l0.zero_()
        rnn.bias_hh_l0.zero_()
        model.readout.weight.copy_(torch.randn(classes, hidden, generator=g) / hidden**0.5)
        model.readout.bias.zero_()
    return model
