"""Noise predictors ε_θ(x_t, t) for diffusion: an MLP for points, a small U-Net for images.

Both read the timestep through a sinusoidal embedding (the Transformer's, Ho et al. 2020 §4)
passed through a two-layer MLP, so nearby timesteps get similar inputs. The U-Net follows Ho et
al.'s layout at MNIST scale: residual blocks (GroupNorm → SiLU → 3x3 conv, the time embedding
added in between), average-pool downsampling, nearest-neighbour upsampling, and a skip connection
from each resolution on the way down to the same resolution on the way up.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
from torch import nn

from biaslab.nn.attention import MultiHeadAttention
from biaslab.nn.transformer import sinusoidal_embedding


class TimeEmbedding(nn.Module):
    """t (N,) -> (N, dim): sinusoidal features of t, then Linear → SiLU → Linear."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return self.mlp(sinusoidal_embedding(t, self.dim).to(self.mlp[0].weight.dtype))


class MLPDenoiser(nn.Module):
    """ε_θ for points: the MLP of [features(x_t), embedding(t)] with SiLU activations.

    An MLP on raw low-dimensional coordinates learns smooth functions first (spectral bias) and
    blurs thin structures such as a spiral's arms; sinusoidal features of each coordinate at
    frequencies up to ``input_scale`` (Tancik et al. 2020's Fourier features) let it resolve them.

    Args:
        dim: dimensions of a point (default 2).
        hidden: widths of the hidden layers (default (128, 128, 128)).
        time_dim: width of the time embedding (default 32).
        input_features: sinusoidal features per coordinate (default 0: the raw coordinates).
        input_scale: the coordinate is multiplied by this before its features (default 25).

    Shapes:
        x (N, dim), t (N,) long -> (N, dim).
    """

    def __init__(
        self,
        dim: int = 2,
        hidden: Sequence[int] = (128, 128, 128),
        time_dim: int = 32,
        input_features: int = 0,
        input_scale: float = 25.0,
    ):
        super().__init__()
        self.time = TimeEmbedding(time_dim)
        self.input_features, self.input_scale = input_features, input_scale
        width = dim * (1 + input_features)
        sizes = [width + time_dim, *hidden, dim]
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(itertools.pairwise(sizes)):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                layers.append(nn.SiLU())
        self.net = nn.Sequential(*layers)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The coordinates and their sinusoidal features: (N, dim) -> (N, dim * (1 + input_features))."""
        if not self.input_features:
            return x
        columns = [
            sinusoidal_embedding(x[:, d] * self.input_scale, self.input_features) for d in range(x.shape[1])
        ]
        return torch.cat([x, *(c.to(x.dtype) for c in columns)], dim=1)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([self.features(x), self.time(t)], dim=1))  # -> (N, dim)


def _groups(channels: int) -> int:
    return next(g for g in (8, 4, 2, 1) if channels % g == 0)


class ResidualBlock(nn.Module):
    """h = conv(SiLU(norm(x))) + proj(temb); out = conv(SiLU(norm(h))) + skip(x).

    Shapes:
        x (N, c_in, H, W), temb (N, time_dim) -> (N, c_out, H, W).
    """

    def __init__(self, c_in: int, c_out: int, time_dim: int):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(_groups(c_in), c_in), nn.Conv2d(c_in, c_out, 3, padding=1)
        self.time = nn.Linear(time_dim, c_out)
        self.norm2, self.conv2 = nn.GroupNorm(_groups(c_out), c_out), nn.Conv2d(c_out, c_out, 3, padding=1)
        self.skip = nn.Identity() if c_in == c_out else nn.Conv2d(c_in, c_out, 1)

    def forward(self, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        h = self.conv1(nn.functional.silu(self.norm1(x)))
        h = h + self.time(temb)[:, :, None, None]  # (N, c_out) -> (N, c_out, 1, 1), added at every pixel
        h = self.conv2(nn.functional.silu(self.norm2(h)))
        return h + self.skip(x)


class AttentionBlock(nn.Module):
    """x + W_O·MHA(norm(x)) over the H·W pixels as tokens: every pixel can read every other.

    Ho et al. (2020) put one such block at their 16x16 resolution; at MNIST scale the coarsest
    (7x7 = 49 tokens) resolution is where it is cheap and where a digit's parts meet.

    Shapes:
        x (N, C, H, W) -> (N, C, H, W).
    """

    def __init__(self, channels: int, heads: int = 4):
        super().__init__()
        self.norm = nn.GroupNorm(_groups(channels), channels)
        self.attention = MultiHeadAttention(channels, heads if channels % heads == 0 else 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N, C, H, W = x.shape
        tokens = self.norm(x).flatten(2).transpose(1, 2)  # (N, C, H, W) -> (N, H·W, C)
        out, _ = self.attention(tokens, tokens, tokens, need_weights=False)  # (N, H·W, C)
        return x + out.transpose(1, 2).reshape(N, C, H, W)  # (N, H·W, C) -> (N, C, H, W)


class UNet(nn.Module):
    """A small U-Net ε_θ(x_t, t) for images whose sides halve ``len(channels) - 1`` times.

    Args:
        in_channels: image channels (default 1).
        channels: widths per resolution, from full to coarsest (default (32, 64)): one residual
            block per resolution on the way down, one in the middle, one per resolution up.
        time_dim: width of the time embedding (default 64).
        attention: a self-attention block after the middle residual block, at the coarsest
            resolution, followed by a second residual block (default False).

    Shapes:
        x (N, in_channels, H, W) with H and W divisible by 2^(len(channels) − 1), t (N,) long
        -> (N, in_channels, H, W).
    """

    def __init__(
        self,
        in_channels: int = 1,
        channels: Sequence[int] = (32, 64),
        time_dim: int = 64,
        attention: bool = False,
    ):
        super().__init__()
        if not channels:
            raise ValueError("channels must name at least one resolution")
        self.channels = tuple(channels)
        self.time = TimeEmbedding(time_dim)
        self.inp = nn.Conv2d(in_channels, channels[0], 3, padding=1)
        widths = [channels[0], *channels]
        self.down = nn.ModuleList(ResidualBlock(a, b, time_dim) for a, b in itertools.pairwise(widths))
        self.middle = ResidualBlock(channels[-1], channels[-1], time_dim)
        self.attention = AttentionBlock(channels[-1]) if attention else None
        self.middle2 = ResidualBlock(channels[-1], channels[-1], time_dim) if attention else None
        # Up: at each resolution, from coarse to full, the block reads [upsampled h, the down skip].
        ups, c = [], channels[-1]
        for skip in reversed(channels):
            ups.append(ResidualBlock(c + skip, skip, time_dim))
            c = skip
        self.up = nn.ModuleList(ups)
        self.out = nn.Sequential(nn.GroupNorm(_groups(channels[0]), channels[0]), nn.SiLU())
        self.out_conv = nn.Conv2d(channels[0], in_channels, 3, padding=1)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        levels = len(self.channels) - 1
        if x.shape[-1] % 2**levels or x.shape[-2] % 2**levels:
            raise ValueError(f"image sides must be divisible by {2**levels}, got {tuple(x.shape[-2:])}")
        temb = self.time(t)  # (N, time_dim)
        h = self.inp(x)  # (N, C0, H, W)
        skips = []
        for i, block in enumerate(self.down):
            h = block(h, temb)
            skips.append(h)
            if i < levels:
                h = nn.functional.avg_pool2d(h, 2)  # (N, C, H, W) -> (N, C, H/2, W/2)
        h = self.middle(h, temb)
        if self.attention is not None:
            h = self.middle2(self.attention(h), temb)
        for i, block in enumerate(self.up):
            if i > 0:
                h = nn.functional.interpolate(h, scale_factor=2, mode="nearest")  # (N, C, 2H, 2W)
            h = block(torch.cat([h, skips.pop()], dim=1), temb)  # (N, C + C_skip, H, W) -> (N, C_skip, H, W)
        return self.out_conv(self.out(h))
