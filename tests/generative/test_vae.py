"""Tests for biaslab.generative.vae: the ELBO's two terms against torch.distributions, the
reparameterisation, and the importance-weighted estimate against log p(x) by quadrature."""

import math

import numpy as np
import pytest
import torch
from torch.distributions import Bernoulli, Normal, kl_divergence

from biaslab.generative.vae import (
    VAE,
    importance_weighted_nll,
    kl_to_standard_normal,
    negative_elbo,
    reconstruction_nll,
    vae_step,
)


def test_kl_term_equals_torch_distributions():
    torch.manual_seed(0)
    mu, logvar = torch.randn(6, 4), torch.randn(6, 4)
    expected = kl_divergence(Normal(mu, (0.5 * logvar).exp()), Normal(0.0, 1.0)).sum(1)
    torch.testing.assert_close(kl_to_standard_normal(mu, logvar), expected)
    assert torch.all(kl_to_standard_normal(torch.zeros(2, 3), torch.zeros(2, 3)) == 0)


def test_reconstruction_is_the_bernoulli_negative_log_likelihood():
    torch.manual_seed(1)
    logits = torch.randn(5, 7)
    binary = (torch.rand(5, 7) < 0.5).float()
    torch.testing.assert_close(
        reconstruction_nll(logits, binary), -Bernoulli(logits=logits).log_prob(binary).sum(1)
    )
    grey = torch.rand(5, 1, 1, 7)  # images are flattened; grey targets give the cross-entropy
    p = torch.sigmoid(logits)
    expected = -(grey.flatten(1) * p.log() + (1 - grey.flatten(1)) * (1 - p).log()).sum(1)
    torch.testing.assert_close(reconstruction_nll(logits, grey), expected, rtol=1e-5, atol=1e-5)


def test_reparameterisation_draws_from_q_and_passes_gradients():
    mu = torch.tensor([[1.0, -2.0]], requires_grad=True)
    logvar = torch.tensor([[0.0, math.log(4.0)]], requires_grad=True)
    z = VAE.reparameterize(mu.expand(50_000, 2), logvar.expand(50_000, 2), torch.Generator().manual_seed(0))
    assert z.mean(0).tolist() == pytest.approx([1.0, -2.0], abs=0.03)
    assert z.std(0).tolist() == pytest.approx([1.0, 2.0], rel=0.02)
    z.sum().backward()
    assert mu.grad is not None and logvar.grad is not None and float(logvar.grad.abs().sum()) > 0


def test_negative_elbo_is_its_two_terms_and_the_step_logs_them():
    torch.manual_seed(2)
    model, x = VAE(12, 3, (8,)), torch.rand(4, 12)
    total, rec, kl = negative_elbo(model, x, torch.Generator().manual_seed(0))
    torch.testing.assert_close(total, rec + kl)
    out = vae_step(model, (x,), torch.Generator().manual_seed(0))
    torch.testing.assert_close(out.loss, total.mean())
    assert set(out.terms) == {"reconstruction", "kl"}
    assert model.encode(x)[0].shape == (4, 3) and model.decode(torch.zeros(2, 3)).shape == (2, 12)


def exact_log_px(model: VAE, x: torch.Tensor) -> torch.Tensor:
    """log p(x) = log ∫ p(x | z) N(z; 0, 1) dz for a 1-D latent, by the trapezoid rule on a fine grid."""
    z = torch.linspace(-10, 10, 20_001, dtype=torch.float64)[:, None]  # (G, 1)
    model = model.double()
    with torch.no_grad():
        logits = model.decode_logits(z)  # (G, D)
        out = []
        for row in x.double():
            log_joint = -reconstruction_nll(logits, row.expand_as(logits)) + Normal(0.0, 1.0).log_prob(
                z[:, 0]
            )
            out.append(torch.logsumexp(log_joint, 0) + math.log(float(z[1, 0] - z[0, 0])))
    model.float()
    return torch.stack(out)


def test_importance_weighted_estimate_approaches_log_px_and_bounds_the_elbo():
    torch.manual_seed(3)
    model = VAE(6, 1, (8,))
    x = (torch.rand(5, 6) < 0.5).float()
    exact = -exact_log_px(model, x).float()  # the true −log p(x), (5,)
    gen = torch.Generator().manual_seed(4)
    tight = importance_weighted_nll(model, x, k=20_000, generator=gen)
    torch.testing.assert_close(tight, exact, rtol=0, atol=0.02)
    one = torch.stack([importance_weighted_nll(model, x, k=1, generator=gen) for _ in range(4000)]).mean(0)
    with torch.no_grad():
        elbo = torch.stack([negative_elbo(model, x, gen)[0] for _ in range(4000)]).mean(0)
    torch.testing.assert_close(one, elbo, rtol=0, atol=0.08)  # k = 1 is the ELBO's estimate
    assert bool(torch.all(tight <= elbo + 1e-4)) and bool(torch.all(exact <= elbo))  # −log p ≤ −ELBO
    assert np.isfinite(importance_weighted_nll(model, x, k=3, batch_size=2).numpy()).all()


def test_the_package_exports_the_public_names_of_the_design():
    import biaslab.generative

    for name in ("Autoencoder", "VAE", "NoiseSchedule", "DDPM", "DDIM"):  # shared/DESIGN.md
        assert name in biaslab.generative.__all__
    assert biaslab.generative.VAE is VAE
