"""The multilayer perceptron: affine maps and non-linearities, no structural prior.

    h_0 = x,   h_l = σ(W_l h_{l-1} + b_l)  for l < L,   y = W_L h_{L-1} + b_L      (eq. 1.5)

With ``sizes=(784, 256, 10)`` this is the notes' two-layer MNIST classifier with
784·256 + 256 + 256·10 + 10 = 203,530 parameters.

:class:`MLP` (``sizes``, ``activation``, ``dropout``; ``MLP.from_numpy([(W, b), ...])``, ``hidden()``
for a hidden layer's activations); :func:`count_parameters`, :func:`linear_parameter_count`,
:func:`mlp_memory_bytes` (the estimate configs check against the free memory) and
:func:`device_of`.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, pairwise

import numpy as np
import torch
from torch import nn

from biaslab.checks import is_integer

ACTIVATIONS = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "identity": nn.Identity,
}


class MLP(nn.Module):
    """A stack of ``Linear`` layers with an activation between them (none after the last).

    Args:
        sizes: layer widths, input first and output last, e.g. ``(784, 256, 10)``.
        activation: ``"relu"`` (default), ``"tanh"``, ``"sigmoid"``, ``"gelu"`` or ``"identity"``.
        dropout: dropout probability after each hidden activation (default 0.0).

    Shapes:
        input ``(*, sizes[0])`` -> output ``(*, sizes[-1])``; inputs with more trailing
        dimensions (e.g. images ``(N, 1, 28, 28)``) are flattened from dim 1.
    """

    def __init__(self, sizes: Sequence[int], activation: str = "relu", dropout: float = 0.0):
        super().__init__()
        if len(sizes) < 2:
            raise ValueError("an MLP needs at least an input and an output size")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}")
        self.sizes = tuple(int(s) for s in sizes)
        layers: list[nn.Module] = []
        for i, (n_in, n_out) in enumerate(zip(self.sizes[:-1], self.sizes[1:])):
            layers.append(nn.Linear(n_in, n_out))
            if i < len(self.sizes) - 2:
                layers.append(ACTIVATIONS[activation]())
                if dropout:
                    layers.append(nn.Dropout(dropout))
        self.layers = nn.Sequential(*layers)

    @classmethod
    def from_numpy(cls, layers: Sequence[tuple[np.ndarray, np.ndarray]], activation: str = "relu") -> MLP:
        """An MLP whose ``Linear`` layers hold the given NumPy weights (copied, as float32).

        Args:
            layers: ``[(W, b), ...]``, W of shape (out, in) as in y = W x + b, e.g.
                ``biaslab.scratch.TwoLayerMLP(...).layers()``.
            activation: the hidden non-linearity (default ``"relu"``).
        """
        sizes = [layers[0][0].shape[1]] + [w.shape[0] for w, _ in layers]
        model = cls(sizes, activation=activation)
        linears = [m for m in model.layers if isinstance(m, nn.Linear)]
        with torch.no_grad():
            for linear, (w, b) in zip(linears, layers):
                linear.weight.copy_(torch.from_numpy(np.asarray(w)))  # (out, in)
                linear.bias.copy_(torch.from_numpy(np.asarray(b)))  # (out,)
        return model

    def reset_parameters(self) -> None:
        for layer in self.layers:
            if isinstance(layer, nn.Linear):
                layer.reset_parameters()

    def hidden(self, x: torch.Tensor, layer: int = 1) -> torch.Tensor:
        """Activations after the ``layer``-th non-linearity (1 = first hidden layer)."""
        x = x.flatten(1) if x.dim() > 2 else x
        seen = 0
        for module in self.layers:
            x = module(x)
            if not isinstance(module, (nn.Linear, nn.Dropout)):
                seen += 1
                if seen == layer:
                    return x
        raise ValueError(f"the MLP has only {seen} hidden layers")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() > 2:
            x = x.flatten(1)  # (N, C, H, W) -> (N, C*H*W)
        return self.layers(x)


def device_of(model: nn.Module) -> torch.device:
    """Where ``model`` computes: the device of its first parameter, else of its first buffer,
    else the CPU (a module without tensors, e.g. ``nn.ReLU()``, runs wherever its input is)."""
    first = next(chain(model.parameters(), model.buffers()), None)
    return torch.device("cpu") if first is None else first.device


def count_parameters(model: nn.Module) -> int:
    """Number of trainable scalars."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def linear_parameter_count(in_features: int, out_features: int, bias: bool = True) -> int:
    """Parameters of a dense layer y = W x + b: in·out weights (one per input–output pair),
    plus ``out`` biases. For an image flattened to ``in_features`` pixels this is what a fully
    connected layer pays for having no locality prior."""
    for name, value in (("in_features", in_features), ("out_features", out_features)):
        if not is_integer(value) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(in_features) * int(out_features) + (int(out_features) if bias else 0)


def mlp_memory_bytes(
    sizes: Sequence[int], batch: int, *, optimizer_states: int = 2, itemsize: int = 4
) -> int:
    """Estimated peak bytes of training an :class:`MLP` with layer widths ``sizes``.

    The weights and biases, their gradients and ``optimizer_states`` more tensors of their shape
    (Adam and AdamW keep 2 moments, SGD with momentum 1, plain SGD 0), plus the activations of
    ``batch`` rows through every layer: each layer's output, its activation and the gradient
    flowing back (3 values per unit and row). An estimate to refuse sizes that cannot fit before
    anything is allocated, not an exact count: allocator overhead and the data are left out.

    Args:
        sizes: layer widths, input first, as for :class:`MLP`.
        batch: the most rows pushed through at once (a training batch or an evaluation chunk).
        optimizer_states: tensors the optimizer keeps per parameter.
        itemsize: bytes per value (4 for float32, PyTorch's default).

    Example: ``mlp_memory_bytes((784, 256, 10), 2048)`` is 203,530 parameters x 4 tensors x 4
    bytes + 2048 x 1050 units x 3 x 4 bytes, about 29 MB.
    """
    sizes = [int(s) for s in sizes]
    parameters = sum(n_in * n_out + n_out for n_in, n_out in pairwise(sizes))
    return itemsize * (parameters * (2 + optimizer_states) + 3 * int(batch) * sum(sizes))
