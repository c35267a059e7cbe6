"""The autoencoder: compress to a small code z = f(x), reconstruct x̂ = g(z).

Trained to minimise the reconstruction error ||x - g(f(x))||² (eq. 3.1). With linear f and g
(:class:`LinearAutoencoder`) it spans the same subspace as PCA; non-linear maps can bend the code
around the data manifold.

:class:`Autoencoder` (``encode`` / ``decode``); :func:`interpolations` (decoded straight paths
between two classes' codes); :func:`corrupt` and :func:`denoising_step` (a Trainer step: noisy in,
clean target); :func:`reconstruction_error` (an anomaly score). :class:`LinearAutoencoder`
(x̂ = W_d W_e x, no activation, no bias) has PCA's subspace at its minima (Baldi & Hornik 1989)
and reaches scikit-learn's PCA reconstruction (tested).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from biaslab.nn.mlp import MLP, device_of
from biaslab.train.steps import StepOutput


class _EncoderDecoder(nn.Module):
    """What both autoencoders share: a subclass sets ``encoder`` f and ``decoder`` g; the input
    is flattened before f, and x̂ = g(f(x)) (eq. 3.1). A subclass may shape the output in
    :meth:`decode` (a sigmoid for pixels)."""

    encoder: nn.Module
    decoder: nn.Module

    def reset_parameters(self) -> None:
        self.encoder.reset_parameters()
        self.decoder.reset_parameters()

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x.flatten(1))  # (N, D) or (N, 1, H, W) -> (N, D) -> (N, latent_dim)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z)  # (N, latent_dim) -> (N, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x))


class Autoencoder(_EncoderDecoder):
    """An MLP encoder and a mirrored MLP decoder with a sigmoid output (pixels in [0, 1]).

    Args:
        input_dim: size of a flattened input (784 for MNIST).
        latent_dim: size of the code z (default 2, so it can be plotted).
        hidden: encoder widths; the decoder mirrors them (default (256, 64)).
        activation: hidden non-linearity (default ``"relu"``).

    Shapes:
        input ``(N, input_dim)`` or ``(N, 1, H, W)`` -> output ``(N, input_dim)``;
        :meth:`encode` -> ``(N, latent_dim)``; :meth:`decode` ``(N, latent_dim)`` -> ``(N, input_dim)``.
    """

    def __init__(
        self,
        input_dim: int = 784,
        latent_dim: int = 2,
        hidden: Sequence[int] = (256, 64),
        activation: str = "relu",
    ):
        super().__init__()
        self.input_dim, self.latent_dim = input_dim, latent_dim
        self.encoder = MLP((input_dim, *hidden, latent_dim), activation=activation)
        self.decoder = MLP((latent_dim, *reversed(hidden), input_dim), activation=activation)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.decoder(z))  # (N, latent_dim) -> (N, D), pixels in (0, 1)


class LinearAutoencoder(_EncoderDecoder):
    """A linear autoencoder: z = W_e x, x̂ = W_d z, no activation and no bias (for centred inputs).

    Baldi & Hornik 1989: on centred data, every minimum of the squared reconstruction error
    (there is no other local minimum) has the decoder's columns spanning the top-k principal
    subspace, so the reconstruction is PCA's. The columns are not the principal components
    themselves: W_d A and A⁻¹ W_e reconstruct alike for any invertible A. Gradient descent
    reaches that subspace only at convergence, at a rate set by the eigenvalue gap λ_k − λ_{k+1}.

    Args:
        input_dim: size of a flattened input (784 for MNIST).
        latent_dim: size k of the code z (default 2).

    Shapes:
        input ``(N, input_dim)`` or ``(N, 1, H, W)`` -> output ``(N, input_dim)``; :meth:`encode`
        -> ``(N, k)``; :meth:`decode` ``(N, k)`` -> ``(N, input_dim)``; ``decoder.weight`` is W_d,
        ``(input_dim, k)``, whose columns span the code's subspace.
    """

    def __init__(self, input_dim: int = 784, latent_dim: int = 2):
        super().__init__()
        if input_dim < 1 or not 1 <= latent_dim <= input_dim:
            raise ValueError(
                f"need 1 <= latent_dim <= input_dim, got latent_dim={latent_dim}, input_dim={input_dim}"
            )
        self.input_dim, self.latent_dim = input_dim, latent_dim
        self.encoder = nn.Linear(input_dim, latent_dim, bias=False)  # W_e (k, D)
        self.decoder = nn.Linear(latent_dim, input_dim, bias=False)  # W_d (D, k)


def interpolations(
    decode: Callable[[torch.Tensor], torch.Tensor],
    codes: np.ndarray,
    labels: np.ndarray,
    pairs: Sequence[tuple[int, int]],
    steps: int,
) -> np.ndarray:
    """Decode ``steps`` evenly spaced points on the segment between the first codes of each pair
    of labels (the endpoints included): what the latent space holds between two digits.

    ``decode`` may be a model's method (``model.decode``) or a model: the points are decoded on
    that model's device.

    Shapes:
        codes (N, L), labels (N,) -> (len(pairs), steps, D) decoded outputs.
    """
    owner = getattr(decode, "__self__", decode)  # the model of a bound method, or the model itself
    device = device_of(owner) if isinstance(owner, nn.Module) else torch.device("cpu")
    t = np.linspace(0.0, 1.0, steps, dtype=np.float32)[:, None]  # (S, 1)
    rows = []
    for a, b in pairs:
        za, zb = codes[np.flatnonzero(labels == a)[0]], codes[np.flatnonzero(labels == b)[0]]
        line = (1 - t) * za + t * zb  # (S, L)
        with torch.no_grad():
            rows.append(decode(torch.from_numpy(line.astype(np.float32)).to(device)).cpu().numpy())
    return np.stack(rows)  # (P, S, D)


def corrupt(x: torch.Tensor, noise_std: float, generator: torch.Generator) -> torch.Tensor:
    """x plus Gaussian noise of standard deviation ``noise_std``, clipped back to [0, 1]; the noise
    is drawn on the generator's device and moved to x's."""
    noise = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=generator.device).to(x.device)
    return (x + noise_std * noise).clamp(0, 1)


def denoising_step(noise_std: float):
    """A Trainer step for a denoising autoencoder (Vincent et al. 2008): fresh noise on every batch
    (from the trainer's checkpointed generator), the loss the MSE to the *clean* input."""

    def step(model: nn.Module, batch, generator: torch.Generator) -> StepOutput:
        clean = (batch[0] if isinstance(batch, (tuple, list)) else batch).flatten(1)  # (N, D)
        output = model(corrupt(clean, noise_std, generator))
        return StepOutput(nn.functional.mse_loss(output, clean), {}, output, clean)

    return step


@torch.no_grad()
def reconstruction_error(model: nn.Module, x: torch.Tensor, batch_size: int = 2048) -> torch.Tensor:
    """Per-image mean squared reconstruction error, an anomaly score (higher = less like the
    training data), on the model's device. Shapes: x (N, ...) -> (N,)."""
    model.eval()
    device = device_of(model)
    chunks = (chunk.to(device) for chunk in x.split(batch_size))
    return torch.cat([(model(chunk) - chunk.flatten(1)).pow(2).mean(1) for chunk in chunks])
