"""Bayesian linear regression: weight decay as a Gaussian prior, and the evidence that sets it.

The inductive-bias slides ("We can draw an analogy with Bayesian inference!") give the
architecture the role of the prior p(θ); the workshop book §4.2 says of L2 regularization that it
is "Equivalent, under a Bayesian interpretation, to a Gaussian prior on the weights". For a model
linear in its parameters both statements are exact, and this file computes them (Bishop 2006,
*Pattern Recognition and Machine Learning*, §3.3 and §3.5; the equation numbers below are his).

Model: targets ``t = Φ w + ε`` with noise ``ε ~ N(0, β⁻¹ I)`` (variance σ² = 1/β) and the prior
``w ~ N(0, α⁻¹ I)`` (variance τ² = 1/α). ``Φ`` is the ``(N, M)`` design matrix (features of N
inputs), ``t`` the ``(N,)`` targets::

    posterior   p(w | t) = N(m_N, S_N),   S_N⁻¹ = A = α I + β ΦᵀΦ,   m_N = β S_N Φᵀ t     (3.53, 3.54)
    MAP         m_N = argmin_w ½‖t − Φw‖² + ½ (α/β) ‖w‖²:
                ridge regression (weight decay) at λ = α/β = σ²/τ²                         (3.55, 3.27)
    evidence    ln p(t | α, β) = M/2 ln α + N/2 ln β − E(m_N) − ½ ln|A| − N/2 ln 2π         (3.86)
                E(m_N) = β/2 ‖t − Φ m_N‖² + α/2 m_Nᵀ m_N                                    (3.82)
    its maximum γ = Σ_i λ_i / (α + λ_i), λ_i the eigenvalues of β ΦᵀΦ                       (3.91)
                α = γ / m_Nᵀ m_N,   1/β = ‖t − Φ m_N‖² / (N − γ)                             (3.92, 3.95)

The evidence is the probability of the data with the weights integrated out: a model too simple
cannot produce the data, one too flexible spreads its probability over many data sets (Occam's
razor, Bishop §3.4). Maximising it over α and β ("the evidence approximation", §3.5) chooses the
weight decay from the training data alone, with no validation split.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["BayesianLinearRegression", "log_evidence", "posterior", "ridge"]


def _checked(phi, t) -> tuple[np.ndarray, np.ndarray]:
    phi, t = np.asarray(phi, dtype=np.float64), np.asarray(t, dtype=np.float64)
    if phi.ndim != 2 or t.ndim != 1 or len(phi) != len(t):
        raise ValueError(f"need features (N, M) and targets (N,); got {phi.shape} and {t.shape}")
    if not (np.isfinite(phi).all() and np.isfinite(t).all()):
        raise ValueError("features and targets must be finite")
    return phi, t


def _precision(value, name: str) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}={value}: a precision must be a finite number > 0")
    return value


def ridge(phi, t, lam: float) -> np.ndarray:
    """Ridge regression's weights, ``argmin_w ½‖t − Φw‖² + ½λ‖w‖²`` (eq. 3.27-3.28), by the
    normal equations ``(ΦᵀΦ + λI) w = Φᵀt``: the posterior mean when ``λ = α/β``.

    Shapes:
        phi ``(N, M)``, t ``(N,)`` -> ``(M,)``.
    """
    phi, t = _checked(phi, t)
    lam = float(lam)
    if not (math.isfinite(lam) and lam >= 0):
        raise ValueError(f"lam={lam}: a ridge strength must be a finite number >= 0")
    return np.linalg.solve(phi.T @ phi + lam * np.eye(phi.shape[1]), phi.T @ t)


def _mean_and_precision(phi: np.ndarray, t: np.ndarray, alpha: float, beta: float):
    """``m_N`` and ``A = S_N⁻¹`` for checked inputs (eq. 3.53, 3.54): what the posterior, the
    evidence and the re-estimation each need, built once."""
    a = alpha * np.eye(phi.shape[1]) + beta * phi.T @ phi  # (M, M): S_N⁻¹, eq. 3.54
    return beta * np.linalg.solve(a, phi.T @ t), a  # eq. 3.53


def posterior(phi, t, alpha: float, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """The posterior's mean ``m_N`` (the MAP weights, ridge at λ = α/β) and covariance ``S_N``
    (eq. 3.53, 3.54).

    Shapes:
        phi ``(N, M)``, t ``(N,)`` -> mean ``(M,)``, covariance ``(M, M)``.
    """
    phi, t = _checked(phi, t)
    mean, a = _mean_and_precision(phi, t, _precision(alpha, "alpha"), _precision(beta, "beta"))
    return mean, np.linalg.inv(a)


def log_evidence(phi, t, alpha: float, beta: float) -> float:
    """``ln p(t | α, β)``, the log marginal likelihood of the targets (eq. 3.86): the density of
    ``N(0, β⁻¹ I + α⁻¹ ΦΦᵀ)`` at ``t``.

    Shapes:
        phi ``(N, M)``, t ``(N,)`` -> a float.
    """
    phi, t = _checked(phi, t)
    alpha, beta = _precision(alpha, "alpha"), _precision(beta, "beta")
    n, m = phi.shape
    mean, a = _mean_and_precision(phi, t, alpha, beta)
    energy = beta / 2 * np.sum((t - phi @ mean) ** 2) + alpha / 2 * mean @ mean  # eq. 3.82
    _, log_det = np.linalg.slogdet(a)
    return float(
        m / 2 * math.log(alpha)
        + n / 2 * math.log(beta)
        - energy
        - log_det / 2
        - n / 2 * math.log(2 * math.pi)
    )


class BayesianLinearRegression:
    """Bayesian linear regression on given features, without an intercept (centre the targets,
    or give a column of ones). scikit-learn's contract: ``__init__`` stores, ``fit`` returns self.

    Args:
        alpha: the prior's precision 1/τ², or None to choose it by maximising the evidence.
        beta: the noise precision 1/σ², or None to choose it by maximising the evidence.
        max_iter, tol: the re-estimation (eq. 3.92, 3.95) stops after ``max_iter`` rounds or when
            neither precision moves by more than ``tol`` relative.

    Attributes (after ``fit``):
        coef_ ``(M,)``: the posterior mean m_N, equal to ridge regression at ``ridge_lambda_``.
        sigma_ ``(M, M)``: the posterior covariance S_N.
        alpha_, beta_: the precisions used (given, or found); ``ridge_lambda_`` = alpha_ / beta_.
        gamma_: the effective number of parameters γ (eq. 3.91).
        log_evidence_: ``ln p(t | alpha_, beta_)``; n_iter_: rounds of re-estimation (0: none).
    """

    def __init__(
        self, alpha: float | None = None, beta: float | None = None, max_iter: int = 300, tol: float = 1e-10
    ):
        self.alpha = alpha
        self.beta = beta
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, phi, t) -> BayesianLinearRegression:
        phi, t = _checked(phi, t)
        n = len(phi)
        alpha = 1.0 if self.alpha is None else _precision(self.alpha, "alpha")
        beta = 1.0 / max(float(np.var(t)), 1e-12) if self.beta is None else _precision(self.beta, "beta")
        eigenvalues = np.linalg.eigvalsh(phi.T @ phi)  # (M,): of ΦᵀΦ; β scales them
        self.n_iter_ = 0
        while (self.alpha is None or self.beta is None) and self.n_iter_ < self.max_iter:
            mean, _ = _mean_and_precision(phi, t, alpha, beta)
            lam = beta * eigenvalues
            gamma = float(np.sum(lam / (alpha + lam)))  # eq. 3.91
            new_alpha = gamma / max(float(mean @ mean), 1e-300) if self.alpha is None else alpha  # eq. 3.92
            residual = float(np.sum((t - phi @ mean) ** 2))
            if self.beta is None and residual <= 1e-24 * max(float(t @ t), 1e-300):
                raise ValueError(
                    "the features reproduce the targets exactly: the evidence has no finite noise "
                    "precision; give beta"
                )
            new_beta = (
                max(n - gamma, 1e-12) / max(residual, 1e-300) if self.beta is None else beta
            )  # eq. 3.95
            self.n_iter_ += 1
            moved = max(abs(new_alpha - alpha) / alpha, abs(new_beta - beta) / beta)
            alpha, beta = new_alpha, new_beta
            if moved <= self.tol:
                break
        self.alpha_, self.beta_ = alpha, beta
        self.ridge_lambda_ = alpha / beta
        self.coef_, self.sigma_ = posterior(phi, t, alpha, beta)
        lam = beta * eigenvalues
        self.gamma_ = float(np.sum(lam / (alpha + lam)))
        self.log_evidence_ = log_evidence(phi, t, alpha, beta)
        return self

    def predict(self, phi, return_std: bool = False):
        """The predictive mean ``Φ m_N`` and, with ``return_std``, its standard deviation
        ``sqrt(1/β + φᵀ S_N φ)`` per row (eq. 3.58, 3.59).

        Shapes:
            phi ``(N, M)`` -> ``(N,)`` (and ``(N,)``).
        """
        phi = np.asarray(phi, dtype=np.float64)
        if phi.ndim != 2 or phi.shape[1] != len(self.coef_):
            raise ValueError(f"need features (N, {len(self.coef_)}); got {phi.shape}")
        mean = phi @ self.coef_
        if not return_std:
            return mean
        variance = 1 / self.beta_ + np.einsum("nm,mk,nk->n", phi, self.sigma_, phi)
        return mean, np.sqrt(variance)
