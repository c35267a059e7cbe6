"""Depth: plain and residual MLPs, with and without normalisation, the recipe h + F(Norm(h)).

    plain      h_l = σ(W_l h_{l−1} + b_l)
    residual   h_l = h_{l−1} + W_l σ(Norm(h_{l−1})) + b_l       Norm: none, batch norm or layer norm

for l = 1 … depth, after a stem h_0 = W_0 x + b_0 (σ of it for the plain stack) and before a linear
head y = W_out h_depth + b_out. Backpropagation multiplies the gradient by one Jacobian per layer,

    ∂L/∂h_{l−1} = (∂h_l/∂h_{l−1})ᵀ ∂L/∂h_l,    ∂h_l/∂h_{l−1} = diag(σ'(·)) W_l  (plain)
                                                              = I + ∂F_l/∂h_{l−1}  (residual)

so in a plain stack its size changes geometrically with depth (vanishing with PyTorch's default
initialisation, whose weights shrink the signal by about 1/√3 a layer), while the identity of a
residual block carries the gradient to the first layers unchanged plus what the blocks add (He
et al. 2016). The sum h grows with depth as every block adds to it; normalising what each block
reads (batch norm, Ioffe & Szegedy 2015; layer norm, Ba et al. 2016) keeps each block's input at
one scale whatever the depth: the pre-norm form of Transformers.

:class:`DeepMLP` (``in_dim``, ``width``, ``depth``, ``out_dim``, ``block`` one of ``BLOCKS``);
``layer_weights()`` gives each layer's weight for the gradient per layer. Each block equals its
formula written with ``torch.nn.functional``.
"""

from __future__ import annotations

from torch import nn

from biaslab.nn.mlp import ACTIVATIONS
from biaslab.nn.normalization import BatchNorm, LayerNorm

__all__ = ["BLOCKS", "DeepMLP"]

BLOCKS = ("plain", "residual", "residual + batch norm", "residual + layer norm")
_NORMS = {"residual": nn.Identity, "residual + batch norm": BatchNorm, "residual + layer norm": LayerNorm}


class _Block(nn.Module):
    """One layer of the stack: σ(W h + b), or h + W σ(Norm(h)) + b."""

    def __init__(self, width: int, block: str, activation: str):
        super().__init__()
        self.residual = block != "plain"
        self.norm = _NORMS[block](width) if self.residual and block != "residual" else nn.Identity()
        self.linear = nn.Linear(width, width)
        self.activation = ACTIVATIONS[activation]()

    def forward(self, h):
        if self.residual:
            return h + self.linear(self.activation(self.norm(h)))  # h + F(Norm(h))
        return self.activation(self.linear(h))


class DeepMLP(nn.Module):
    """An MLP of ``depth`` equal layers of ``width`` between a stem and a head, plain or residual
    (see the module docstring).

    Args:
        in_dim: input features (images are flattened from dim 1).
        width: the width of every layer.
        depth: layers between the stem and the head (at least 1).
        out_dim: outputs (class scores).
        block: one of ``BLOCKS``: ``"plain"``, ``"residual"``, ``"residual + batch norm"`` or
            ``"residual + layer norm"`` (default ``"plain"``).
        activation: σ, as for :class:`~biaslab.nn.MLP` (default ``"relu"``).

    Shapes:
        ``(N, in_dim)`` (or ``(N, ...)`` flattening to it) -> ``(N, out_dim)``.
    """

    def __init__(
        self,
        in_dim: int,
        width: int,
        depth: int,
        out_dim: int,
        block: str = "plain",
        activation: str = "relu",
    ):
        super().__init__()
        if block not in BLOCKS:
            raise ValueError(f"block must be one of {BLOCKS}, got {block!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        if depth < 1 or width < 1:
            raise ValueError(f"depth and width must be at least 1, got {depth} and {width}")
        self.block = block
        self.stem = nn.Linear(in_dim, width)
        self.stem_activation = ACTIVATIONS[activation]() if block == "plain" else nn.Identity()
        self.layers = nn.ModuleList(_Block(width, block, activation) for _ in range(depth))
        self.head = nn.Linear(width, out_dim)

    def forward(self, x):
        h = self.stem_activation(self.stem(x.flatten(1)))  # (N, ...) -> (N, in_dim) -> (N, width)
        for layer in self.layers:
            h = layer(h)
        return self.head(h)

    def layer_weights(self) -> list[nn.Parameter]:
        """W_1 … W_depth, first to last: where a gradient's size is read layer by layer."""
        return [layer.linear.weight for layer in self.layers]
