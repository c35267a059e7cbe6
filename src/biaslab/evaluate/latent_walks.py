"""Walks in a latent space: decode a straight line between two codes and judge what it shows.

The workshop book §1.5 asks of every latent space: "How does it transport between nearby points?
If small movements in z produce small, plausible changes in x̂, the model has learned the right
manifold. If small movements produce jumps or nonsense, it has not." The lecture notes §4 say
where a plain autoencoder falls short: "its latent space may be irregular—points don't
interpolate smoothly", which VAEs address "by imposing probabilistic structure on the latent
space". The two halves of the book's sentence are measured separately:

* **small changes** — :func:`jump_ratio`: along a walk of S evenly spaced codes z_s = (1 − t_s)·z_a
  + t_s·z_b, the largest step between consecutive decodes over the mean step,

      J = max_s ‖x̂_{s+1} − x̂_s‖ / ( 1/(S−1) Σ_s ‖x̂_{s+1} − x̂_s‖ ),

  1 when the image changes evenly along the line, S − 1 when all the change happens in one step;
* **plausible changes** — :func:`off_manifold_ratio`: each decode's distance to its nearest real
  image (a reference set, e.g. the training images), the walk's largest over the mean of its two
  ends (reconstructions of real images, the decoder's own accuracy). Near 1, the walk stays as
  close to real images as the decoder's reconstructions do; well above 1, it passes through
  images like none in the data.

The notes' other half, "you can't easily sample new data", is measured the same way on decodes of
random codes: :func:`gaussian_codes` draws codes from the Gaussian fitted to an autoencoder's codes
(it has no prior of its own), and ``evaluate.sample_quality.nearest_distances`` gives each decode's
distance to the nearest real image.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from biaslab.checks import check_integer
from biaslab.evaluate.sample_quality import nearest_distances

__all__ = ["gaussian_codes", "jump_ratio", "off_manifold_ratio", "straight_walks"]


def straight_walks(
    decode: Callable[[torch.Tensor], torch.Tensor], start: torch.Tensor, end: torch.Tensor, steps: int
) -> torch.Tensor:
    """Decode ``steps`` evenly spaced codes on each segment from ``start[i]`` to ``end[i]``, both
    ends included, without gradients, on the codes' device.

    Shapes:
        start, end (P, L) -> (P, S, D), S = ``steps``.
    """
    steps = check_integer(steps, "steps", 2)
    if start.shape != end.shape or start.dim() != 2:
        raise ValueError(
            f"start and end must be (pairs, latent) of one shape, got {start.shape} and {end.shape}"
        )
    t = torch.linspace(0.0, 1.0, steps, dtype=start.dtype, device=start.device)[None, :, None]  # (1, S, 1)
    codes = (1 - t) * start[:, None, :] + t * end[:, None, :]  # (P, S, L)
    with torch.no_grad():
        decoded = decode(codes.reshape(-1, codes.shape[-1]))  # (P S, D)
    return decoded.reshape(len(start), steps, -1)  # (P, S, D)


def jump_ratio(walks: np.ndarray) -> np.ndarray:
    """J for each walk: its largest step between consecutive decodes over its mean step.

    Shapes:
        walks (P, S, D) -> (P,)
    """
    walks = np.asarray(walks, dtype=np.float64)
    if walks.ndim != 3 or walks.shape[1] < 2:
        raise ValueError(f"walks must be (pairs, steps >= 2, pixels), got shape {walks.shape}")
    step = np.linalg.norm(np.diff(walks, axis=1), axis=2)  # (P, S - 1)
    mean = step.mean(axis=1)
    if (mean <= 0).any():
        raise ValueError("a walk whose decodes never change has no jump ratio (its ends decode alike)")
    return step.max(axis=1) / mean


def off_manifold_ratio(walks: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """For each walk: the largest distance of a decode to its nearest ``reference`` row, over the
    mean of that distance at the walk's two ends.

    Shapes:
        walks (P, S, D), reference (M, D) -> (P,)
    """
    walks = np.asarray(walks, dtype=np.float64)
    if walks.ndim != 3:
        raise ValueError(f"walks must be (pairs, steps, pixels), got shape {walks.shape}")
    reference = np.asarray(reference, dtype=np.float64).reshape(len(reference), -1)  # (M, D)
    pairs, steps, pixels = walks.shape
    if reference.shape[1] != pixels:
        raise ValueError(f"reference rows have {reference.shape[1]} values, the decodes {pixels}")
    nearest = nearest_distances(walks.reshape(-1, pixels), reference)  # (P S,)
    nearest = nearest.reshape(pairs, steps)  # (P, S)
    ends = (nearest[:, 0] + nearest[:, -1]) / 2
    if (ends <= 0).any():
        raise ValueError("a walk starts and ends on reference rows: its ratio divides by zero")
    return nearest.max(axis=1) / ends


def gaussian_codes(codes: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` draws from the Gaussian with the mean and covariance of ``codes`` (seeded by ``seed``):
    the nearest an autoencoder, which has no prior, comes to sampling its latent space.

    Shapes:
        codes (N, L) -> (n, L)
    """
    codes = np.asarray(codes, dtype=np.float64)
    if codes.ndim != 2 or len(codes) < 2:
        raise ValueError(f"codes must be (N >= 2, latent), got shape {codes.shape}")
    covariance = np.atleast_2d(np.cov(codes, rowvar=False))  # (L, L)
    return np.random.default_rng(seed).multivariate_normal(codes.mean(0), covariance, size=n)
