"""Unfolding: the true spectrum behind a smeared measurement, by iterative Bayesian unfolding.

A detector turns a true value x into a measured value y. Binned, it is a response matrix

    R_ij = P(y in measured bin i | x in true bin j),   ε_j = Σ_i R_ij ≤ 1 (the efficiency)

and measured counts n_i are a Poisson draw of ν = R μ, μ the true counts. Inverting R amplifies the
noise of n; iterative Bayesian unfolding (D'Agostini 1995, "A multidimensional unfolding method
based on Bayes' theorem", NIM A 362, 487; the EM algorithm of this Poisson problem, Shepp & Vardi
1982) starts from a prior μ⁰ (flat, or the simulation's) and applies Bayes' theorem in turn:

    P(j | i) = R_ij μ_j^k / Σ_l R_il μ_l^k             (eq. 4: the posterior of cause j given effect i)
    μ_j^(k+1) = (1 / ε_j) Σ_i P(j | i) n_i              (eq. 5)

A few iterations stay near the prior (a regularisation); many approach the maximum-likelihood
solution, R⁻¹ n when it is positive, with its noise: the number of iterations is the
regularisation strength. Shapes below: T true bins, M measured bins.

:func:`response_matrix` estimates R from simulated (true, measured) pairs (losses lower the
efficiency); :func:`iterative_bayesian_unfolding` applies eqs. 4-5, equal to the formulas written
loop by loop (tested).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "binned_wasserstein",
    "gaussian_smearing",
    "iterative_bayesian_unfolding",
    "resampled_to",
    "response_matrix",
    "spectrum",
]


def response_matrix(
    true_values: np.ndarray, measured_values: np.ndarray, true_edges: np.ndarray, measured_edges: np.ndarray
) -> np.ndarray:
    """R_ij estimated from simulated pairs (x, y): the share of the events of true bin j measured in
    bin i. An event measured outside ``measured_edges`` (or lost: ``y`` NaN) counts against the
    efficiency ε_j; an event whose true value is outside ``true_edges`` is not counted.

    Shapes:
        true_values, measured_values (N,); true_edges (T + 1,), measured_edges (M + 1,) -> (M, T).
    """
    true_values, measured_values = np.asarray(true_values, float), np.asarray(measured_values, float)
    if true_values.shape != measured_values.shape or true_values.ndim != 1:
        raise ValueError(
            f"true and measured values must be paired 1-D arrays, got {true_values.shape} and "
            f"{measured_values.shape}"
        )
    true_edges, measured_edges = np.asarray(true_edges, float), np.asarray(measured_edges, float)
    j = np.searchsorted(true_edges, true_values, side="right") - 1  # (N,) true bin, -1 or T: outside
    i = np.searchsorted(measured_edges, measured_values, side="right") - 1  # (N,); NaN lands at M
    T, M = len(true_edges) - 1, len(measured_edges) - 1
    inside_true = (j >= 0) & (j < T)
    generated = np.bincount(j[inside_true], minlength=T)  # (T,) events per true bin
    measured = inside_true & (i >= 0) & (i < M)
    counts = np.zeros((M, T))
    np.add.at(counts, (i[measured], j[measured]), 1.0)
    return counts / np.maximum(generated, 1)  # (M, T); an empty true bin's column is 0


def iterative_bayesian_unfolding(
    measured: np.ndarray, response: np.ndarray, prior: np.ndarray | None = None, iterations: int = 4
) -> np.ndarray:
    """The true counts μ after ``iterations`` steps of eqs. 4-5, from ``prior`` (default flat, with
    the measured total): a regularised estimate, towards R⁻¹ n as the iterations grow.

    Args:
        measured: n, the measured counts (M,).
        response: R (M, T), each column's sum the efficiency ε_j in (0, 1].
        prior: μ⁰ (T,), positive (default: Σ n / T in every bin).
        iterations: k ≥ 0 (0 returns the prior).

    Returns:
        μ^k (T,), efficiency-corrected true counts.
    """
    n, R = np.asarray(measured, float), np.asarray(response, float)
    if R.ndim != 2 or n.shape != (R.shape[0],):
        raise ValueError(f"measured counts {n.shape} do not match a response matrix of shape {R.shape}")
    efficiency = R.sum(axis=0)  # (T,)
    if np.any(efficiency <= 0) or np.any(efficiency > 1 + 1e-9):
        raise ValueError("every true bin needs an efficiency (column sum of the response) in (0, 1]")
    mu = np.full(R.shape[1], n.sum() / R.shape[1]) if prior is None else np.asarray(prior, float).copy()
    if mu.shape != (R.shape[1],) or np.any(mu <= 0):
        raise ValueError(f"the prior must be {R.shape[1]} positive counts")
    if iterations < 0:
        raise ValueError(f"iterations={iterations}: give 0 or more")
    for _ in range(iterations):
        folded = R @ mu  # (M,) Σ_l R_il μ_l
        posterior = R * mu / np.where(folded > 0, folded, 1.0)[:, None]  # (M, T) P(j | i), eq. 4
        mu = posterior.T @ n / efficiency  # (T,) eq. 5
    return mu


def spectrum(
    n: int,
    seed: int,
    *,
    slope: float = 2.0,
    peak_fraction: float = 0.2,
    peak: float = 4.0,
    width: float = 0.4,
    upper: float = 10.0,
) -> np.ndarray:
    """A falling spectrum with a resonance: x ~ Exp(mean ``slope``) with probability
    1 − ``peak_fraction``, else N(``peak``, ``width``²), kept in [0, ``upper``) (drawn until n are).

    Shapes:
        -> (n,) float64.
    """
    rng, kept = np.random.default_rng(seed), np.empty(0)
    while len(kept) < n:
        m = 2 * (n - len(kept)) + 16
        x = np.where(rng.random(m) < peak_fraction, rng.normal(peak, width, m), rng.exponential(slope, m))
        kept = np.concatenate([kept, x[(x >= 0) & (x < upper)]])
    return kept[:n]


def gaussian_smearing(x: np.ndarray, seed: int, *, floor: float = 0.3, relative: float = 0.1) -> np.ndarray:
    """A detector's measurement y = x + N(0, σ(x)²) with σ(x) = ``floor`` + ``relative`` · x: the
    resolution worsens with the value, as a calorimeter's with the energy.

    Shapes:
        x (N,) -> y (N,).
    """
    x = np.asarray(x, float)
    return x + np.random.default_rng(seed).normal(0.0, 1.0, x.shape) * (floor + relative * x)


def binned_wasserstein(counts_a: np.ndarray, counts_b: np.ndarray, edges: np.ndarray) -> float:
    """The 1-Wasserstein (earth mover's) distance between two histograms on the same ``edges``,
    each normalised to a distribution with its mass at the bin centres: Σ_k |F_a(k) − F_b(k)| Δ_k,
    F the cumulative shares, Δ_k the distance between centres k and k + 1.

    Shapes:
        counts_a, counts_b (T,), edges (T + 1,) -> a distance in the values' unit.
    """
    a, b = np.asarray(counts_a, float), np.asarray(counts_b, float)
    if a.shape != b.shape or a.shape != (len(edges) - 1,) or a.sum() <= 0 or b.sum() <= 0:
        raise ValueError("two non-empty histograms on the same edges")
    centres = (np.asarray(edges[:-1], float) + np.asarray(edges[1:], float)) / 2
    gap = np.cumsum(a / a.sum())[:-1] - np.cumsum(b / b.sum())[:-1]  # (T - 1,)
    return float(np.sum(np.abs(gap) * np.diff(centres)))


def resampled_to(sim_truth: np.ndarray, unfolded: np.ndarray, edges: np.ndarray, seed: int) -> np.ndarray:
    """Rows of a simulation drawn (with replacement, as many as it has) with weights
    w = (unfolded share / simulated share) of each event's truth bin, so that the drawn events'
    truth follows the unfolded spectrum while each keeps its own measured value: the prior update
    of an iterated unfolding (D'Agostini's, done on events; Backes et al. 2022 for a cINN).

    Shapes:
        sim_truth (S,), unfolded (n,) values, edges (T + 1,) -> (S,) row indices.
    """
    bins = len(edges) - 1
    sim_bin = np.clip(np.searchsorted(edges, sim_truth, side="right") - 1, 0, bins - 1)  # (S,)
    sim_share = np.bincount(sim_bin, minlength=bins) / len(sim_truth)  # (T,)
    unfolded_share = np.histogram(unfolded, edges)[0] / max(len(unfolded), 1)  # (T,)
    weight = (unfolded_share / np.where(sim_share > 0, sim_share, 1.0))[sim_bin]  # (S,)
    if weight.sum() <= 0:
        raise ValueError("the unfolded values fall in no bin the simulation fills")
    return np.random.default_rng(seed).choice(len(sim_truth), len(sim_truth), p=weight / weight.sum())
