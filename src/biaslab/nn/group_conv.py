"""Group equivariant convolution on p4 (Cohen & Welling 2016, G-CNNs): quarter turns built in.

A convolution shares one filter over all translations, so shifting the input shifts the output. A
p4 convolution also shares it over the four rotations of C4 = {R⁰, R¹, R², R³}, with
R = ``torch.rot90(·, 1, dims=(-2, -1))``: each filter is applied in all four orientations and the
feature maps gain a rotation axis r. With ⋆ the cross-correlation of ``F.conv2d``:

    [x ⋆ ψ](o, r) = Σ_i x_i ⋆ Rʳ ψ_{o,i}                               (eq. 10, lifting: Z² → p4)
    [x ⋆ ψ](o, r) = Σ_i Σ_s x_{i,s} ⋆ Rʳ ψ_{o,i,(s − r) mod 4}         (eq. 11, group correlation)

The filter of eq. 11 is itself a function on the group (one k×k map per rotation s): the output
at rotation r rotates it spatially by r AND shifts its rotation axis cyclically by r. Each layer
is one ``conv2d`` whose weight stacks the 4 transformed copies of ψ.

Why it is equivariant: with symmetric zero padding, correlating a rotated image with a rotated
filter is the rotated correlation, (R x) ⋆ (R ψ) = R (x ⋆ ψ), exactly, for any H×W (odd and
non-square included) and kernel size. So (R x) ⋆ Rʳ ψ = R (x ⋆ Rʳ⁻¹ ψ) for eq. 10, and the same with
s → s − 1 for eq. 11. The index convention, for both layers and any stack of them:

    f(rot90(x, 1))[:, :, r] = rot90(f(x)[:, :, (r − 1) mod 4], 1)
    f(rot90(x, k)) = torch.roll(torch.rot90(f(x), k, (-2, -1)), shifts=k, dims=2)

rotating the input by k quarter turns (torch.rot90's direction: from the row axis towards the
column axis, counterclockwise as an image is displayed) rotates every output map by k quarter
turns the same way and moves rotation channel r to r + k (mod 4). The bias is one per output
channel, shared over r: a per-rotation bias would not move with the roll.

ReLU and 2x2 pooling act per position and per rotation, so they commute with this action — the
pooling only on maps of even height and width, whose 2x2 blocks a quarter turn maps onto blocks
(28 → 14 → 7 is fine; an odd size drops a row or column that rotation moves). A max over the
rotation axis then leaves maps that only rotate, and a global mean over space is invariant:
:class:`C4CNN` gives the same logits for all four quarter turns of its input (to rounding, ~1e-7).
It is not invariant to other angles, which need interpolation.

Cost: a lifting layer computes 4·C_out maps from C_out·C_in·k² weights; a group layer 4·C_out maps
from 4·C_in inputs, 16x the multiply-adds of a plain C_in → C_out convolution. Forward + backward
of ``C4CNN(1, (8, 16), 10)`` on 128 images of 28x28, 2-core CPU: ≈ 40 ms (median of 40 steps),
against ≈ 8 ms for ``CNN(1, (8, 16), 10, dims=2, pool="max", global_pool="avg")``, about 5x
(one-off measurement, torch 2.13 CPU, not a test).

Each layer is tested equal to its definition written as loops, and :class:`C4CNN` (lifting, group
layers, 2x2 pools after the first ``pooled_layers``) invariant to quarter turns, against a plain
CNN that is not.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from biaslab.nn.conv import _check_int

__all__ = ["C4CNN", "C4GroupConv", "C4LiftingConv"]

POOLS = {"max": F.max_pool2d, "avg": F.avg_pool2d}


class _C4Conv(nn.Module):
    """What the two layers share: the checks, the parameters, their initialisation, one conv2d."""

    group_in: bool  # does the input carry the rotation axis (C4GroupConv) or not (C4LiftingConv)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int = 3,
        padding: int | None = None,
        bias: bool = True,
    ):
        super().__init__()
        self.in_channels = _check_int("in_channels", in_channels, 1)
        self.out_channels = _check_int("out_channels", out_channels, 1)
        self.kernel_size = _check_int("kernel_size", kernel_size, 1)
        if padding is None and kernel_size % 2 == 0:
            raise ValueError(f"the default padding k // 2 needs an odd kernel_size, got {kernel_size}")
        self.padding = kernel_size // 2 if padding is None else _check_int("padding", padding, 0)
        group = (4,) if self.group_in else ()
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, *group, kernel_size, kernel_size))
        self.bias = nn.Parameter(torch.empty(out_channels)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """nn.Conv2d's default: kaiming-uniform weights, biases uniform in ±1/√fan_in."""
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # fan_in = C_in·(4·)k·k
        if self.bias is not None:
            bound = 1 / math.sqrt(self.weight[0].numel())
            nn.init.uniform_(self.bias, -bound, bound)

    def _check(self, x: torch.Tensor) -> None:
        name, dims = type(self).__name__, ("N, C_in, 4, H, W" if self.group_in else "N, C_in, H, W")
        if x.dim() != 5 - (not self.group_in):
            raise ValueError(f"{name} expects input ({dims}), got shape {tuple(x.shape)}")
        if x.size(1) != self.in_channels:
            raise ValueError(f"{name} expects {self.in_channels} input channels, got {x.size(1)}")
        if self.group_in and x.size(2) != 4:
            raise ValueError(f"{name} expects a rotation axis of size 4 at dim 2, got {x.size(2)}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check(x)
        flat = x.flatten(1, 2) if self.group_in else x  # (N, C_in, 4, H, W) -> (N, C_in·4, H, W)
        bias = None if self.bias is None else self.bias.repeat_interleave(4)  # (C_out,) -> (C_out·4,)
        y = F.conv2d(flat, self.filter_bank(), bias, padding=self.padding)  # (N, C_out·4, H', W')
        return y.unflatten(1, (self.out_channels, 4))  # (N, C_out·4, H', W') -> (N, C_out, 4, H', W')

    def extra_repr(self) -> str:
        sizes = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
        return f"{sizes}, padding={self.padding}, bias={self.bias is not None}"


class C4LiftingConv(_C4Conv):
    """Lifting correlation, image → function on p4 (eq. 10): channel o at rotation r is
    ``x ⋆ rot90(ψ_o, r)``. Equivariant as the module docstring states.

    Args:
        in_channels: C_in of the image.
        out_channels: C_out; each gets 4 rotation channels.
        kernel_size: k, square filters (default 3).
        padding: zeros on each side (default None: k // 2, which needs an odd k; keeps H and W).
        bias: add one learned bias per output channel, shared over the 4 rotations (default True).

    Shapes:
        ``(N, C_in, H, W)`` -> ``(N, C_out, 4, H', W')``, H' = H + 2·padding − k + 1;
        ``weight`` ``(C_out, C_in, k, k)``, ``bias`` ``(C_out,)``.
    """

    group_in = False

    def filter_bank(self) -> torch.Tensor:
        """The weight of the one conv2d: row o·4 + r is rot90(ψ_o, r), ``(C_out·4, C_in, k, k)``."""
        rotated = [torch.rot90(self.weight, r, (-2, -1)) for r in range(4)]  # 4 x (C_out, C_in, k, k)
        return torch.stack(rotated, 1).flatten(0, 1)  # (C_out, 4, C_in, k, k) -> (C_out·4, C_in, k, k)


class C4GroupConv(_C4Conv):
    """Group correlation, function on p4 → function on p4 (eq. 11): channel o at rotation r is
    ``Σ_i Σ_s x[:, i, s] ⋆ rot90(ψ[o, i, (s − r) mod 4], r)``. Equivariant as the module
    docstring states.

    Args:
        in_channels: C_in, each with its 4 rotation channels.
        out_channels: C_out; each gets 4 rotation channels.
        kernel_size: k, square filters (default 3).
        padding: zeros on each side (default None: k // 2, which needs an odd k; keeps H and W).
        bias: add one learned bias per output channel, shared over the 4 rotations (default True).

    Shapes:
        ``(N, C_in, 4, H, W)`` -> ``(N, C_out, 4, H', W')``, H' = H + 2·padding − k + 1;
        ``weight`` ψ ``(C_out, C_in, 4, k, k)``, ``bias`` ``(C_out,)``.
    """

    group_in = True

    def filter_bank(self) -> torch.Tensor:
        """The weight of the one conv2d: row o·4 + r, column i·4 + s is rot90(ψ[o, i, (s − r) mod 4], r),
        ``(C_out·4, C_in·4, k, k)``."""
        # torch.roll(ψ, r, dims=2)[:, :, s] = ψ[:, :, (s − r) mod 4]: the cyclic shift, then the rotation
        moved = [torch.rot90(torch.roll(self.weight, r, 2), r, (-2, -1)) for r in range(4)]
        bank = torch.stack(moved, 1)  # 4 x (C_out, C_in, 4, k, k) -> (C_out, 4, C_in, 4, k, k)
        return bank.flatten(2, 3).flatten(0, 1)  # -> (C_out, 4, C_in·4, k, k) -> (C_out·4, C_in·4, k, k)


class C4CNN(nn.Module):
    """A classifier exactly invariant to quarter turns: a lifting layer, group layers, a max over
    the rotations, a global mean over space, a linear head.

        lift → ReLU → pool → [group conv → ReLU → pool] ... → group conv → ReLU → max_r → mean_xy → Linear

    (one layer per entry of ``channels``, 2x2 pooling after the first ``pooled_layers``, by default
    every layer but the last). A 2x2 pool
    commutes with rot90 only on maps of even height and width: :meth:`features` raises a
    ValueError rather than pool an odd size (28x28 with three layers: 28 → 14 → 7, fine).

    Args:
        in_channels: channels of the image (1 for MNIST).
        channels: output channels of the lifting layer, then of each group layer (default (8, 16)).
        num_classes: outputs of the head (default 10).
        kernel_size: k of every layer, odd (default 3; padding k // 2 keeps the size).
        pool: ``"max"`` (default), ``"avg"`` or None: the 2x2 pooling between layers.
        pooled_layers: pool after each of the first this many layers (default None: all but the
            last); later layers keep the size and widen the receptive field.

    Shapes:
        ``(N, in_channels, H, W)`` -> ``(N, num_classes)``; :meth:`features` ``(N, channels[-1])``.
    """

    def __init__(
        self,
        in_channels: int,
        channels: Sequence[int] = (8, 16),
        num_classes: int = 10,
        kernel_size: int = 3,
        pool: str | None = "max",
        pooled_layers: int | None = None,
    ):
        super().__init__()
        if not channels:
            raise ValueError("channels must name at least the lifting layer")
        if pool not in (*POOLS, None):
            raise ValueError(f"pool must be 'max', 'avg' or None, got {pool!r}")
        self.pool = pool
        self.pooled_layers = len(channels) - 1 if pooled_layers is None else pooled_layers
        if not 0 <= self.pooled_layers <= len(channels):
            raise ValueError(f"pooled_layers must be in 0..{len(channels)}, got {pooled_layers}")
        layers = [C4LiftingConv(in_channels, channels[0], kernel_size)]
        layers += [C4GroupConv(c_in, c_out, kernel_size) for c_in, c_out in itertools.pairwise(channels)]
        self.layers = nn.ModuleList(layers)
        self.head = nn.Linear(channels[-1], _check_int("num_classes", num_classes, 1))

    def reset_parameters(self) -> None:
        for module in (*self.layers, self.head):
            module.reset_parameters()

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The invariant feature vector the head reads, ``(N, channels[-1])``."""
        if x.dim() != 4:
            raise ValueError(f"C4CNN expects images (N, C, H, W), got shape {tuple(x.shape)}")
        h = x
        for index, layer in enumerate(self.layers):
            h = torch.relu(layer(h))  # (N, C, 4, H, W)
            if self.pool is not None and index < self.pooled_layers:
                if h.size(-2) % 2 or h.size(-1) % 2:
                    raise ValueError(
                        f"C4CNN would 2x2-pool maps of odd size {tuple(h.shape[-2:])} after layer {index}, "
                        "which breaks rotation invariance: use input sizes divisible by 2^(pools)"
                    )
                pooled = POOLS[self.pool](h.flatten(1, 2), 2)  # (N, C·4, H, W) -> (N, C·4, H/2, W/2)
                h = pooled.unflatten(1, h.shape[1:3])  # (N, C·4, H/2, W/2) -> (N, C, 4, H/2, W/2)
        return h.amax(dim=2).flatten(2).mean(dim=2)  # max over r: (N, C, H, W) -> (N, C, H·W) -> (N, C)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))  # (N, num_classes)
