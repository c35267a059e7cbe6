"""The variational autoencoder (Kingma & Welling 2014): a latent-variable model trained by its ELBO.

A prior p(z) = N(0, I), a decoder p_θ(x | z) (here Bernoulli: one probability per pixel) and an
encoder q_φ(z | x) = N(μ_φ(x), diag σ²_φ(x)) that approximates the intractable posterior. For every
x the evidence lower bound holds:

    log p(x) ≥ ELBO(x) = E_q[log p_θ(x | z)] − KL(q_φ(z | x) || p(z))

1. encode: μ, log σ² = encoder(x);
2. reparameterise: z = μ + σ ⊙ ε with ε ~ N(0, I), so gradients flow through μ and σ;
3. decode: the pixel logits of p_θ(x | z);
4. the loss −ELBO = reconstruction (the Bernoulli negative log-likelihood, summed over pixels)
   + KL (closed form: ½ Σ_j (μ_j² + σ_j² − 1 − log σ_j²)), both in nats per image.

The ELBO only bounds log p(x). The importance-weighted estimate (Burda et al. 2016)

    log p(x) ≈ log (1/k) Σ_i p_θ(x | z_i) p(z_i) / q_φ(z_i | x),  z_i ~ q_φ(z | x)

is tighter and tends to log p(x) as k grows (:func:`importance_weighted_nll`).

Grey-level pixels in [0, 1] are used as the Bernoulli targets, as the PyTorch examples' VAE does,
so the numbers compare with its reference; a binarised MNIST gives other (lower) values.

The calls: :class:`VAE` (an MLP encoder to μ and log σ², a Bernoulli decoder),
:func:`reconstruction_nll`, :func:`kl_to_standard_normal`, :func:`negative_elbo`, :func:`vae_step`
(a Trainer step logging both terms) and :func:`importance_weighted_nll`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from biaslab.nn.mlp import MLP, device_of
from biaslab.train.steps import StepOutput

LOG_2PI = math.log(2 * math.pi)


class VAE(nn.Module):
    """An MLP encoder to (μ, log σ²) and a mirrored MLP decoder to pixel logits.

    Args:
        input_dim: pixels per image (default 784).
        latent_dim: dimensions of z (default 20).
        hidden: encoder widths; the decoder mirrors them (default (512, 256)).

    Shapes:
        x (N, input_dim) or (N, 1, H, W); :meth:`encode` -> μ, log σ² (N, latent_dim);
        :meth:`decode_logits` (N, latent_dim) -> (N, input_dim).
    """

    def __init__(self, input_dim: int = 784, latent_dim: int = 20, hidden: Sequence[int] = (512, 256)):
        super().__init__()
        self.input_dim, self.latent_dim = input_dim, latent_dim
        self.encoder = MLP((input_dim, *hidden, 2 * latent_dim))
        self.decoder = MLP((latent_dim, *reversed(hidden), input_dim))

    def reset_parameters(self) -> None:
        self.encoder.reset_parameters()
        self.decoder.reset_parameters()

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """1. μ and log σ² of q(z | x)."""
        mu, logvar = self.encoder(x.flatten(1)).chunk(2, dim=1)  # (N, 2L) -> 2 x (N, L)
        return mu, logvar

    def encode_mean(self, x: torch.Tensor) -> torch.Tensor:
        """μ of q(z | x): the image's code without sampling (for maps and walks in latent space)."""
        return self.encode(x)[0]  # (N, latent_dim)

    @staticmethod
    def reparameterize(mu: torch.Tensor, logvar: torch.Tensor, generator: torch.Generator | None = None):
        """2. z = μ + σ ⊙ ε, ε ~ N(0, I) from ``generator`` (default torch's global CPU one), drawn
        on the generator's device and moved to μ's."""
        device = "cpu" if generator is None else generator.device
        eps = torch.randn(mu.shape, generator=generator, dtype=mu.dtype, device=device).to(mu.device)
        return mu + torch.exp(0.5 * logvar) * eps

    def decode_logits(self, z: torch.Tensor) -> torch.Tensor:
        """3. The logits of p(x | z), one per pixel."""
        return self.decoder(z)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """The pixel probabilities (the decoded image's mean)."""
        return torch.sigmoid(self.decoder(z))

    def forward(self, x: torch.Tensor, generator: torch.Generator | None = None):
        """(logits, μ, log σ²) of one reparameterised pass."""
        mu, logvar = self.encode(x)
        return self.decode_logits(self.reparameterize(mu, logvar, generator)), mu, logvar


def reconstruction_nll(logits: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """−log p(x | z) of a Bernoulli decoder, summed over pixels: (N, D) logits, targets -> (N,)."""
    return nn.functional.binary_cross_entropy_with_logits(logits, x.flatten(1), reduction="none").sum(1)


def kl_to_standard_normal(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """KL(N(μ, diag σ²) || N(0, I)) = ½ Σ_j (μ_j² + σ_j² − 1 − log σ_j²): (N, L) -> (N,)."""
    return 0.5 * (mu.pow(2) + logvar.exp() - 1 - logvar).sum(1)


def negative_elbo(model: VAE, x: torch.Tensor, generator: torch.Generator | None = None):
    """4. (−ELBO, reconstruction, KL), each (N,) in nats per image, from one sample of z, on the
    model's device."""
    x = x.to(device_of(model))
    logits, mu, logvar = model(x, generator)
    reconstruction, kl = reconstruction_nll(logits, x), kl_to_standard_normal(mu, logvar)
    return reconstruction + kl, reconstruction, kl


def vae_step(model: VAE, batch, generator: torch.Generator) -> StepOutput:
    """A Trainer step: the mean −ELBO of the batch, its two terms logged apart (nats per image)."""
    x = batch[0] if isinstance(batch, (tuple, list)) else batch
    loss, reconstruction, kl = negative_elbo(model, x, generator)
    return StepOutput(loss.mean(), {"reconstruction": reconstruction.mean(), "kl": kl.mean()})


def _gaussian_log_density(z: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """log N(z; μ, diag σ²) summed over the last axis."""
    return -0.5 * (LOG_2PI + logvar + (z - mu).pow(2) / logvar.exp()).sum(-1)


@torch.no_grad()
def importance_weighted_nll(
    model: VAE, x: torch.Tensor, k: int = 100, generator: torch.Generator | None = None, batch_size: int = 500
) -> torch.Tensor:
    """−log p(x) estimated with ``k`` importance samples from q(z | x) (Burda et al. 2016).

    log w_i = log p(x | z_i) + log p(z_i) − log q(z_i | x);  −log p(x) ≈ −(logsumexp_i log w_i − log k).
    Never above the one-sample −ELBO on average; k = 1 is an unbiased estimate of it.

    The noise is drawn on the generator's device (default torch's global CPU generator) and
    moved to the model's.

    Shapes:
        x (N, D) -> (N,) nats per image, on the model's device.
    """
    model.eval()
    device = device_of(model)
    noise_device = "cpu" if generator is None else generator.device
    out = []
    for chunk in x.split(batch_size):
        chunk = chunk.to(device)
        mu, logvar = model.encode(chunk)  # (n, L)
        eps = torch.randn((k, *mu.shape), generator=generator, dtype=mu.dtype, device=noise_device)
        eps = eps.to(device)  # (k, n, L)
        z = mu + torch.exp(0.5 * logvar) * eps  # (k, n, L)
        logits = model.decode_logits(z.reshape(-1, mu.shape[1])).view(k, len(chunk), -1)  # (k, n, D)
        target = chunk.flatten(1).expand(k, -1, -1)  # (k, n, D)
        log_px_z = -nn.functional.binary_cross_entropy_with_logits(logits, target, reduction="none").sum(-1)
        log_pz = _gaussian_log_density(z, torch.zeros_like(z), torch.zeros_like(z))  # (k, n)
        log_qz = _gaussian_log_density(z, mu, logvar)  # (k, n)
        log_w = log_px_z + log_pz - log_qz  # (k, n)
        out.append(-(torch.logsumexp(log_w, dim=0) - math.log(k)))
    return torch.cat(out)
