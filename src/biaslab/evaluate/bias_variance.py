"""The bias-variance decomposition, measured: draw many training sets, fit each, compare.

For a target y = f(x) + ε with noise variance σ² and a learner that, trained on a random data
set D, predicts ŷ_D(x), the expected squared error at a fixed test point splits exactly into

    E_{D,ε}[(y − ŷ_D(x))²] = (f(x) − E_D[ŷ_D(x)])²  +  Var_D[ŷ_D(x)]  +  σ²
                                 bias²                   variance        noise

:func:`bias_variance` estimates each term by Monte Carlo over ``n_datasets`` independently
drawn training sets, averaged over the test points, and the left-hand side directly from fresh
noisy targets, so the identity can be checked within Monte-Carlo error. :func:`double_descent`
measures the curve beyond the U: least squares on random ReLU features, whose test error peaks
where the number of features equals the number of training points (the interpolation
threshold) and falls again beyond it.

:func:`polynomial_fit` makes a learner of a given degree; :func:`bias_variance` returns bias²,
variance, noise and the directly measured expected test MSE with its Monte-Carlo error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from biaslab.checks import check_finite_array, check_integer, check_number

__all__ = ["BiasVariance", "bias_variance", "double_descent", "polynomial_fit"]

Learner = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]  # (x_train, y_train, x_test) -> ŷ


@dataclass(frozen=True)
class BiasVariance:
    """The terms, averaged over the test points, and the expected test MSE measured directly."""

    bias2: float
    variance: float
    noise: float
    expected_mse: float  # E[(y − ŷ)²] from fresh noisy targets: the left-hand side
    mc_error: float  # standard error of expected_mse over the data sets

    @property
    def total(self) -> float:
        """bias² + variance + noise: the right-hand side."""
        return self.bias2 + self.variance + self.noise


def bias_variance(
    learner: Learner,
    truth: Callable[[np.ndarray], np.ndarray],
    noise_std: float,
    x_test: np.ndarray,
    n_train: int,
    n_datasets: int = 200,
    x_range: tuple[float, float] = (-1.0, 1.0),
    seed: int = 0,
) -> BiasVariance:
    """Estimate bias², variance and noise of ``learner`` at ``x_test`` by redrawing the data.

    Each of ``n_datasets`` training sets has ``n_train`` inputs uniform on ``x_range`` and targets
    ``truth(x) + N(0, noise_std²)``; the learner is fitted to each and predicts at ``x_test``.
    For the direct estimate of the expected test MSE, every data set is also paired with a fresh
    draw of the test targets.

    Args:
        learner: ``learner(x_train, y_train, x_test) -> predictions (len(x_test),)``.
        truth: the noise-free function f.
        noise_std: σ, the standard deviation of the target noise.
        x_test: (M,) fixed test inputs.
        n_train: points per training set.
        n_datasets: independent training sets (default 200).
        x_range: interval the training inputs are drawn from.
        seed: seeds every draw (``np.random.default_rng``).
    """
    n_datasets = check_integer(n_datasets, "n_datasets", 2)
    n_train = check_integer(n_train, "n_train", 1)
    noise_std = check_number(noise_std, "noise_std", 0.0)
    low, high = (check_number(b, f"x_range[{i}]") for i, b in enumerate(x_range))
    if not low < high:
        raise ValueError(f"x_range must be (low, high) with low < high, got {tuple(x_range)}")
    rng = np.random.default_rng(seed)
    x_test = check_finite_array(x_test, "x_test", ndim=1, min_len=1)
    f_test = truth(x_test)  # (M,)
    predictions = np.empty((n_datasets, len(x_test)))  # (D, M)
    squared_errors = np.empty(n_datasets)
    for d in range(n_datasets):
        x = rng.uniform(low, high, n_train)
        y = truth(x) + rng.normal(0.0, noise_std, n_train)
        predictions[d] = learner(x, y, x_test)
        y_test = f_test + rng.normal(0.0, noise_std, len(x_test))  # fresh targets
        squared_errors[d] = np.mean((y_test - predictions[d]) ** 2)
    mean_prediction = predictions.mean(0)  # E_D[ŷ_D(x)]
    return BiasVariance(
        bias2=float(np.mean((f_test - mean_prediction) ** 2)),
        variance=float(np.mean(predictions.var(0, ddof=1))),
        noise=float(noise_std**2),
        expected_mse=float(squared_errors.mean()),
        mc_error=float(squared_errors.std(ddof=1) / np.sqrt(n_datasets)),
    )


def polynomial_fit(degree: int) -> Learner:
    """Least-squares polynomial of ``degree`` (``np.polynomial.Polynomial.fit``, which rescales
    x to [-1, 1] first: numerically stable at high degree)."""

    def learner(x: np.ndarray, y: np.ndarray, x_test: np.ndarray) -> np.ndarray:
        return np.polynomial.Polynomial.fit(x, y, degree)(x_test)

    return learner


def double_descent(
    feature_counts,
    n_train: int = 100,
    input_dim: int = 20,
    noise: float = 0.5,
    n_test: int = 1000,
    repeats: int = 20,
    seed: int = 0,
) -> dict[int, float]:
    """Test MSE of random-feature regression against the number of features P: double descent.

    Inputs x ~ N(0, I_D), targets y = tanh(2·β·x) + N(0, noise²) with a fixed random β. The
    model is minimum-norm least squares (``np.linalg.lstsq``) on P random ReLU features
    φ(x) = max(0, W x), W ~ N(0, 1/D), the first P rows of one draw of W per repeat. Below
    P = n_train it is ordinary least squares (the classical U); at P = n_train the system is
    exactly determined and the fit interpolates the noise with huge coefficients (the peak);
    beyond it the minimum-norm interpolant grows smoother and the error falls again, here below
    the classical minimum (Belkin et al. 2019; Hastie et al. 2022).

    Returns:
        P -> the median test MSE over ``repeats`` draws of data and features (the median: near
        the peak single draws blow up by orders of magnitude).
    """
    counts = sorted(check_integer(p, f"feature_counts[{i}]") for i, p in enumerate(feature_counts))
    if not counts:
        raise ValueError("feature_counts must hold at least one count")
    n_train, repeats = check_integer(n_train, "n_train", 2), check_integer(repeats, "repeats")
    input_dim, n_test = check_integer(input_dim, "input_dim"), check_integer(n_test, "n_test")
    noise = check_number(noise, "noise", 0.0)
    rng = np.random.default_rng(seed)
    beta = rng.normal(0, 1, input_dim) / np.sqrt(input_dim)
    errors: dict[int, list[float]] = {p: [] for p in counts}
    for _ in range(repeats):
        weights = rng.normal(0, 1, (counts[-1], input_dim)) / np.sqrt(input_dim)  # (P_max, D)
        x, x_test = rng.normal(0, 1, (n_train, input_dim)), rng.normal(0, 1, (n_test, input_dim))
        y = np.tanh(2 * x @ beta) + rng.normal(0, noise, n_train)
        y_test = np.tanh(2 * x_test @ beta)  # the noise-free target: the error of the function
        for p in counts:
            features, features_test = np.maximum(0, x @ weights[:p].T), np.maximum(0, x_test @ weights[:p].T)
            coef, *_ = np.linalg.lstsq(features, y, rcond=None)  # minimum norm when P > n
            errors[p].append(float(np.mean((features_test @ coef - y_test) ** 2)))
    return {p: float(np.median(v)) for p, v in errors.items()}
