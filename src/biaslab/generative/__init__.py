"""Generative models: autoencoders, the variational autoencoder, Gaussians and the likelihood,
denoising diffusion.

Also normalizing flows (``flows``) and the noise predictors of diffusion (``denoisers``).
"""

from biaslab.generative.autoencoder import Autoencoder
from biaslab.generative.denoisers import MLPDenoiser, UNet
from biaslab.generative.diffusion import DDIM, DDPM, NoiseSchedule, diffusion_loss, diffusion_step
from biaslab.generative.gaussian import (
    Gaussian,
    MonteCarlo,
    fit_gaussian,
    gaussian_log_likelihood,
    kl_gaussians,
    kl_monte_carlo,
    sample_gaussian,
)
from biaslab.generative.vae import VAE

__all__ = [
    "DDIM",
    "DDPM",
    "VAE",
    "Autoencoder",
    "Gaussian",
    "MLPDenoiser",
    "MonteCarlo",
    "NoiseSchedule",
    "UNet",
    "diffusion_loss",
    "diffusion_step",
    "fit_gaussian",
    "gaussian_log_likelihood",
    "kl_gaussians",
    "kl_monte_carlo",
    "sample_gaussian",
]
