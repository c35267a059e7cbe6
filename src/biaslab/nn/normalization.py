"""Batch norm and layer norm from first principles: standardise, then let the network rescale.

Both layers subtract a mean and divide by a standard deviation, then apply a learned per-feature
affine map (γ, β) so that the layer can still represent the identity. They differ in which values
the statistics are taken over.

Batch normalisation (Ioffe & Szegedy 2015, §3, Algorithm 1) normalises each channel c over
the mini-batch, i.e. over every dimension except dim 1 (the batch and, for (N, C, L) or
(N, C, H, W), every position): with m = N·L (or N·H·W) values per channel,

    μ_B  = (1/m) Σ_i x_i                          mini-batch mean
    σ²_B = (1/m) Σ_i (x_i − μ_B)²                 mini-batch variance (biased: 1/m)
    x̂_i  = (x_i − μ_B) / sqrt(σ²_B + ε)           normalise
    y_i  = γ x̂_i + β                               scale and shift

In training the layer also keeps running estimates for inference. Algorithm 2 averages over many
batches, E[x] = E_B[μ_B] and Var[x] = m/(m − 1) · E_B[σ²_B]; torch, and this module, replace the
average with an exponential moving average of the same quantities:

    running_mean ← (1 − momentum) · running_mean + momentum · μ_B
    running_var  ← (1 − momentum) · running_var  + momentum · σ²_B · m / (m − 1)

the running variance takes the UNBIASED batch variance (torch's convention), while the
normalisation itself uses the biased one. In evaluation, x̂ = (x − running_mean) / sqrt(running_var + ε):
one example's output no longer depends on the rest of the batch.

Layer normalisation (Ba, Kiros & Hinton 2016, eq. 3) normalises each example over its last
dimension (its H features), the same in training and evaluation and independent of the batch:

    μ = (1/H) Σ_j x_j,    σ² = (1/H) Σ_j (x_j − μ)²,    y_j = γ_j (x_j − μ) / sqrt(σ² + ε) + β_j

A slip worth knowing: dividing by the variance instead of the standard deviation, (x − μ) / σ²,
gives variance σ² / σ⁴ = 1 / σ², which is 1 only when σ already was 1.

Up to ε, both are invariant to rescaling their input, x → a·x + b with a > 0 (per channel for batch
norm, per example for layer norm): the scale of the previous layer's output no longer matters.

:class:`BatchNorm` and :class:`LayerNorm` equal torch's in outputs, running statistics and
gradients (float64, to 1e-10), and are tested with these invariances.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["BatchNorm", "LayerNorm"]


class _Normalization(nn.Module):
    """What both norms share: ``features``, ``eps``, and the learned scale γ and shift β (ones
    and zeros, or none without ``affine``). A subclass calls ``reset_parameters()`` once its own
    state exists."""

    def __init__(self, features: int, eps: float, affine: bool):
        super().__init__()
        if features < 1:
            raise ValueError(f"features must be at least 1, got {features}")
        self.features, self.eps, self.affine = int(features), float(eps), affine
        if affine:
            self.weight = nn.Parameter(torch.empty(self.features))  # γ
            self.bias = nn.Parameter(torch.empty(self.features))  # β
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        """γ = 1, β = 0: the identity after normalisation."""
        if self.affine:
            nn.init.ones_(self.weight)
            nn.init.zeros_(self.bias)


class BatchNorm(_Normalization):
    """Batch normalisation over every dimension except dim 1 (see the module docstring).

    Equal to ``torch.nn.BatchNorm1d`` / ``BatchNorm2d`` / ``BatchNorm3d`` with
    ``track_running_stats=True`` (one class for every number of dimensions).

    Args:
        features: channels F (the size of dim 1).
        eps: ε added to the variance before the square root (default 1e-5).
        momentum: weight of the current batch in the running estimates (default 0.1).
        affine: learn γ (``weight``, initialised to 1) and β (``bias``, initialised to 0)
            (default True); False leaves y = x̂.

    Buffers:
        ``running_mean`` (F,) starts at 0, ``running_var`` (F,) at 1, ``num_batches_tracked``
        (int64 scalar) counts the training batches seen.

    Shapes:
        ``(N, F)``, ``(N, F, L)``, ``(N, F, H, W)``, ... -> the same shape. Training needs more
        than one value per channel (N · L · ... > 1).
    """

    def __init__(self, features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = True):
        super().__init__(features, eps, affine)
        self.momentum = float(momentum)
        self.register_buffer("running_mean", torch.zeros(self.features))
        self.register_buffer("running_var", torch.ones(self.features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        self.running_mean.zero_()
        self.running_var.fill_(1.0)
        self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """γ = 1, β = 0 (the identity after normalisation) and fresh running estimates."""
        self.reset_running_stats()
        super().reset_parameters()

    def extra_repr(self) -> str:
        return f"{self.features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() < 2:
            raise ValueError(f"expected an input of shape (N, {self.features}, ...), got {tuple(x.shape)}")
        if x.size(1) != self.features:
            raise ValueError(f"expected {self.features} channels in dim 1, got {x.size(1)}")
        reduce_dims = [0, *range(2, x.dim())]  # every dim except the channels
        per_channel = (1, self.features, *[1] * (x.dim() - 2))  # broadcasts (F,) against x
        if self.training:
            count = x.numel() // self.features  # m = N · L · ... values per channel
            if count <= 1:
                raise ValueError(
                    f"expected more than 1 value per channel when training, got input size {tuple(x.shape)}"
                )
            mean = x.mean(dim=reduce_dims)  # μ_B, (F,)
            var = x.var(dim=reduce_dims, correction=0)  # σ²_B, biased, (F,)
            with torch.no_grad():
                unbiased_var = var * (count / (count - 1))  # torch's running_var takes the 1/(m − 1) one
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * mean)
                self.running_var.mul_(1 - self.momentum).add_(self.momentum * unbiased_var)
                self.num_batches_tracked.add_(1)
        else:
            mean, var = self.running_mean, self.running_var
        mean, var = mean.view(per_channel), var.view(per_channel)  # (F,) -> (1, F, 1, ...)
        x_hat = (x - mean) / torch.sqrt(var + self.eps)
        if not self.affine:
            return x_hat
        return self.weight.view(per_channel) * x_hat + self.bias.view(per_channel)  # (F,) -> (1, F, 1, ...)


class LayerNorm(_Normalization):
    """Layer normalisation of each example over its last dimension (see the module docstring).

    Equal to ``torch.nn.LayerNorm(features)``; the same in training and evaluation.

    Args:
        features: size H of the last dimension.
        eps: ε added to the variance before the square root (default 1e-5).
        affine: learn γ (``weight``, initialised to 1) and β (``bias``, initialised to 0), one per
            feature (default True); False leaves y = x̂.

    Shapes:
        ``(..., H)`` -> the same shape; every leading index is normalised on its own.
    """

    def __init__(self, features: int, eps: float = 1e-5, affine: bool = True):
        super().__init__(features, eps, affine)
        self.reset_parameters()

    def extra_repr(self) -> str:
        return f"{self.features}, eps={self.eps}, affine={self.affine}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() < 1:
            raise ValueError(f"expected an input of shape (..., {self.features}), got a scalar")
        if x.size(-1) != self.features:
            raise ValueError(f"expected {self.features} features in the last dim, got {x.size(-1)}")
        mean = x.mean(dim=-1, keepdim=True)  # μ per example, (..., 1)
        var = x.var(dim=-1, keepdim=True, correction=0)  # σ² per example, biased, (..., 1)
        x_hat = (x - mean) / torch.sqrt(var + self.eps)
        if not self.affine:
            return x_hat
        return self.weight * x_hat + self.bias  # (H,) broadcasts over the leading dims
