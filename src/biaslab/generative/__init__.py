"""Generative models: autoencoders (more to come: VAE, diffusion)."""

from biaslab.generative.autoencoder import Autoencoder

__all__ = ["Autoencoder"]
