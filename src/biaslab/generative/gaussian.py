"""The loss as a likelihood: Gaussians fitted by maximum likelihood, KL divergence, cross-entropy.

A model is a density, and training maximises the likelihood of the data under it. For the
multivariate Gaussian N(μ, Σ) in D dimensions the log-density is

    log N(x; μ, Σ) = −½ [D log 2π + log det Σ + (x − μ)ᵀ Σ⁻¹ (x − μ)]

and the likelihood of samples x_1 … x_N is maximised in closed form by the sample mean and the
1/N (not 1/(N − 1)) sample covariance (:func:`fit_gaussian`). How far a model q is from the
data's distribution p is the Kullback–Leibler divergence

    KL(p || q) = E_{x~p}[log p(x) − log q(x)] ≥ 0,  = 0 only for q = p,  not symmetric,

closed form for two Gaussians (:func:`kl_gaussians`) and estimated from n samples by Monte Carlo
with an error that falls as 1/√n (:func:`kl_monte_carlo`). Maximum likelihood *is* KL
minimisation: the mean negative log-likelihood of data drawn from p splits exactly into

    E_p[−log q] = H(p) + KL(p || q)

where the entropy H(p) does not depend on the model. For a discrete p (:func:`entropy`,
:func:`cross_entropy`, :func:`kl_divergence`) this holds to rounding, and with p the empirical
distribution of a sample it says that the best categorical model is the sample's frequencies.
A classifier's cross-entropy loss is the same quantity with p the one-hot label: its mean
negative log-likelihood of the true labels (:func:`label_nll`).

Everything Gaussian is computed in float64 NumPy through the Cholesky factor Σ = L Lᵀ
(log det Σ = 2 Σ log L_ii, Σ⁻¹ applied by triangular solves); randomness comes from an explicit
seed (``np.random.default_rng``).

Also: :func:`gaussian_log_density`, :func:`gaussian_entropy`, :func:`sample_gaussian` (seeded),
:func:`confidence_ellipse`, :func:`empirical_distribution`, :func:`mean_nll`; :func:`label_nll`
(−mean log softmax[y]) equals ``F.cross_entropy``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from scipy.linalg import solve_triangular

__all__ = [
    "Gaussian",
    "MonteCarlo",
    "confidence_ellipse",
    "cross_entropy",
    "empirical_distribution",
    "entropy",
    "fit_gaussian",
    "gaussian_entropy",
    "gaussian_log_density",
    "gaussian_log_likelihood",
    "kl_divergence",
    "kl_gaussians",
    "kl_monte_carlo",
    "label_nll",
    "mean_nll",
    "sample_gaussian",
]

LOG_2PI = float(np.log(2 * np.pi))


class Gaussian(NamedTuple):
    """N(mean, cov): unpacks as ``mean, cov = fit_gaussian(x)``."""

    mean: np.ndarray  # (D,)
    cov: np.ndarray  # (D, D)


class MonteCarlo(NamedTuple):
    """A Monte-Carlo estimate and its standard error (sample std / √n)."""

    estimate: float
    stderr: float


# -- Gaussians ---------------------------------------------------------------------------------
def _as_gaussian(mean, cov) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean (D,), cov (D, D), lower Cholesky factor L (D, D)) in float64; a scalar is D = 1."""
    mean = np.atleast_1d(np.asarray(mean, dtype=float))
    cov = np.atleast_2d(np.asarray(cov, dtype=float))
    if mean.ndim != 1 or cov.shape != (len(mean), len(mean)):
        raise ValueError(f"mean must be (D,) and cov (D, D), got {mean.shape} and {cov.shape}")
    if not np.allclose(cov, cov.T, rtol=1e-10, atol=1e-12):
        raise ValueError("cov must be symmetric")
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        raise ValueError("cov must be positive definite") from None
    return mean, cov, chol


def _log_det(chol: np.ndarray) -> float:
    return float(2 * np.log(np.diag(chol)).sum())  # log det Σ = 2 Σ_i log L_ii


def _samples(x, dim: int | None = None) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    x = x[:, None] if x.ndim == 1 and dim in (None, 1) else x  # (N,) -> (N, 1): D = 1
    if x.ndim != 2 or (dim is not None and x.shape[1] != dim):
        raise ValueError(f"samples must be (N, D{'' if dim is None else f' = {dim}'}), got {x.shape}")
    return x


def fit_gaussian(x) -> Gaussian:
    """The maximum-likelihood Gaussian of samples: μ̂ = (1/N) Σ x_i, Σ̂ = (1/N) Σ (x_i − μ̂)(x_i − μ̂)ᵀ.

    Setting the gradient of Σ_i log N(x_i; μ, Σ) to zero gives these; the 1/N covariance is
    ``np.cov(x, rowvar=False, bias=True)``, biased low by (N − 1)/N against the unbiased one.

    Shapes:
        x: (N, D) with N ≥ 2 (or (N,) for D = 1) -> mean (D,), cov (D, D).
    """
    x = _samples(x)
    if len(x) < 2:
        raise ValueError(f"fitting a Gaussian needs at least 2 samples, got {len(x)}")
    mean = x.mean(0)
    centred = x - mean  # (N, D)
    return Gaussian(mean, centred.T @ centred / len(x))


def gaussian_log_density(x, mean, cov) -> np.ndarray:
    """log N(x_i; μ, Σ) = −½ [D log 2π + log det Σ + (x_i − μ)ᵀ Σ⁻¹ (x_i − μ)] for each sample.

    Shapes:
        x: (N, D) (or (N,) for D = 1), mean: (D,), cov: (D, D) -> (N,).
    """
    mean, _, chol = _as_gaussian(mean, cov)
    x = _samples(x, len(mean))
    z = solve_triangular(chol, (x - mean).T, lower=True)  # (D, N): L⁻¹ (x − μ)
    mahalanobis = (z**2).sum(0)  # (N,): (x − μ)ᵀ Σ⁻¹ (x − μ)
    return -0.5 * (len(mean) * LOG_2PI + _log_det(chol) + mahalanobis)


def gaussian_log_likelihood(x, mean, cov) -> float:
    """The mean log-density (1/N) Σ_i log N(x_i; μ, Σ): the quantity maximum likelihood maximises.

    Shapes:
        x: (N, D), mean: (D,), cov: (D, D).
    """
    return float(gaussian_log_density(x, mean, cov).mean())


def gaussian_entropy(cov) -> float:
    """The differential entropy of N(μ, Σ): H = ½ log det(2πe Σ) = ½ [D (1 + log 2π) + log det Σ].

    Shapes:
        cov: (D, D).
    """
    cov = np.atleast_2d(np.asarray(cov, dtype=float))
    _, _, chol = _as_gaussian(np.zeros(len(cov)), cov)
    return 0.5 * (len(cov) * (1 + LOG_2PI) + _log_det(chol))


def sample_gaussian(mean, cov, n: int, seed: int) -> np.ndarray:
    """n samples x = μ + L z, z ~ N(0, I), Σ = L Lᵀ, from ``np.random.default_rng(seed)``.

    Shapes:
        mean: (D,), cov: (D, D) -> (n, D).
    """
    mean, _, chol = _as_gaussian(mean, cov)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    z = np.random.default_rng(seed).standard_normal((n, len(mean)))  # (n, D)
    return mean + z @ chol.T


def kl_gaussians(mu0, cov0, mu1, cov1) -> float:
    """KL(N0 || N1) in closed form, for any D ≥ 1:

        ½ [tr(Σ1⁻¹ Σ0) + (μ1 − μ0)ᵀ Σ1⁻¹ (μ1 − μ0) − D + log det Σ1 − log det Σ0]

    Shapes:
        mu0, mu1: (D,), cov0, cov1: (D, D).
    """
    mu0, _, chol0 = _as_gaussian(mu0, cov0)
    mu1, _, chol1 = _as_gaussian(mu1, cov1)
    if len(mu0) != len(mu1):
        raise ValueError(f"the Gaussians differ in dimension: {len(mu0)} and {len(mu1)}")
    a = solve_triangular(chol1, chol0, lower=True)  # (D, D): L1⁻¹ L0, so tr(Σ1⁻¹ Σ0) = ||A||_F²
    b = solve_triangular(chol1, mu1 - mu0, lower=True)  # (D,): L1⁻¹ (μ1 − μ0)
    kl = 0.5 * ((a**2).sum() + (b**2).sum() - len(mu0) + _log_det(chol1) - _log_det(chol0))
    return max(float(kl), 0.0)  # rounding can leave −1e-16 for equal Gaussians


def kl_monte_carlo(mu0, cov0, mu1, cov1, n: int, seed: int) -> MonteCarlo:
    """KL(N0 || N1) ≈ (1/n) Σ_i [log p0(x_i) − log p1(x_i)], x_i ~ N0, and its standard error.

    The estimate is unbiased; its standard error, std(log p0 − log p1) / √n, falls as n^(−1/2).

    Args:
        mu0, cov0, mu1, cov1: the two Gaussians, (D,) and (D, D).
        n: samples (≥ 2, for the standard error).
        seed: seeds the draw (:func:`sample_gaussian`).
    """
    if n < 2:
        raise ValueError(f"a Monte-Carlo estimate with a standard error needs n >= 2, got {n}")
    x = sample_gaussian(mu0, cov0, n, seed)  # (n, D)
    log_ratio = gaussian_log_density(x, mu0, cov0) - gaussian_log_density(x, mu1, cov1)  # (n,)
    return MonteCarlo(float(log_ratio.mean()), float(log_ratio.std(ddof=1) / np.sqrt(n)))


def confidence_ellipse(mean, cov, k: float = 2.0, points: int = 100) -> np.ndarray:
    """The k-sigma contour of a 2-D Gaussian, {x : (x − μ)ᵀ Σ⁻¹ (x − μ) = k²}, as x = μ + k L u
    for unit vectors u (closed: the first point repeats at the end).

    Shapes:
        mean: (2,), cov: (2, 2) -> (points, 2).
    """
    mean, _, chol = _as_gaussian(mean, cov)
    if len(mean) != 2:
        raise ValueError(f"an ellipse needs a 2-D Gaussian, got D = {len(mean)}")
    angle = np.linspace(0, 2 * np.pi, points)
    unit = np.stack([np.cos(angle), np.sin(angle)])  # (2, points)
    return mean + k * (chol @ unit).T


# -- discrete distributions ----------------------------------------------------------------------
def _distribution(p, name: str) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if p.ndim < 1 or p.shape[-1] < 1:
        raise ValueError(f"{name} must have a last axis of categories, got shape {p.shape}")
    if (p < 0).any() or not np.allclose(p.sum(-1), 1.0, rtol=0, atol=1e-9):
        raise ValueError(f"{name} must be non-negative and sum to 1 over its last axis")
    return p


def _pair(p, q) -> tuple[np.ndarray, np.ndarray]:
    p, q = _distribution(p, "p"), _distribution(q, "q")
    if p.shape[-1] != q.shape[-1]:
        raise ValueError(f"p and q differ in their categories: {p.shape} and {q.shape}")
    return p, q


def entropy(p) -> float | np.ndarray:
    """H(p) = −Σ_k p_k log p_k (nats; 0 log 0 = 0), over the last axis.

    Shapes:
        p: (..., K) -> (...).
    """
    p = _distribution(p, "p")
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(p > 0, p * np.log(p), 0.0).sum(-1)


def cross_entropy(p, q) -> float | np.ndarray:
    """H(p, q) = −Σ_k p_k log q_k: the mean negative log-likelihood of q under data from p
    (inf where q_k = 0 < p_k).

    Shapes:
        p, q: (..., K) -> (...).
    """
    p, q = _pair(p, q)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(p > 0, p * np.log(q), 0.0).sum(-1)


def kl_divergence(p, q) -> float | np.ndarray:
    """KL(p || q) = Σ_k p_k log(p_k / q_k) ≥ 0, computed term by term (not as H(p, q) − H(p)).

    Shapes:
        p, q: (..., K) -> (...).
    """
    p, q = _pair(p, q)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0).sum(-1)


def empirical_distribution(samples, k: int) -> np.ndarray:
    """The frequencies p̂_j = #{i : x_i = j} / N of integer samples in 0 … k − 1.

    Shapes:
        samples: (N,) integers -> (k,).
    """
    samples = np.asarray(samples)
    if samples.ndim != 1 or len(samples) < 1 or samples.min() < 0 or samples.max() >= k:
        raise ValueError(f"samples must be a non-empty 1-D array of integers in 0..{k - 1}")
    return np.bincount(samples, minlength=k) / len(samples)


def mean_nll(q, samples) -> float:
    """The mean negative log-likelihood −(1/N) Σ_i log q[x_i] of integer samples under model q.

    Equals H(p̂) + KL(p̂ || q) with p̂ the samples' frequencies, so over q it is minimised by
    q = p̂: maximum likelihood is KL minimisation, up to the data's entropy.

    Shapes:
        q: (K,), samples: (N,) integers in 0 … K − 1.
    """
    q = _distribution(q, "q")
    samples = np.asarray(samples)
    if q.ndim != 1 or samples.ndim != 1 or samples.min() < 0 or samples.max() >= len(q):
        raise ValueError(f"q must be (K,) and samples (N,) integers in 0..{len(q) - 1}")
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(-np.log(q[samples]).mean())


# -- classifiers ---------------------------------------------------------------------------------
def label_nll(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """A classifier's mean negative log-likelihood of the true labels, −(1/N) Σ_i log softmax(z_i)[y_i],
    written out: what ``torch.nn.functional.cross_entropy(logits, labels)`` computes.

    Shapes:
        logits: (N, K), labels: (N,) long -> a scalar.
    """
    if logits.dim() != 2 or labels.shape != logits.shape[:1]:
        raise ValueError(f"logits must be (N, K) and labels (N,), got {logits.shape} and {labels.shape}")
    log_probs = torch.log_softmax(logits, dim=1)  # (N, K): z − log Σ_k exp z_k
    return -log_probs.gather(1, labels[:, None]).mean()  # (N, 1) -> the mean over samples
