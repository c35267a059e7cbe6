"""Tests for biaslab.evaluate.bayes_linear against scikit-learn and SciPy: the MAP weights are
ridge regression at λ = α/β, the evidence is a Gaussian density, its maximum is BayesianRidge's."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.linear_model import BayesianRidge, Ridge

from biaslab.evaluate.bayes_linear import BayesianLinearRegression, log_evidence, posterior
from biaslab.evaluate.bayes_linear import ridge as ridge_weights


def data(n=60, m=8, sigma=0.3, tau=1.5, seed=0):
    rng = np.random.default_rng(seed)
    phi = rng.normal(size=(n, m))
    w = rng.normal(scale=tau, size=m)
    return phi, phi @ w + rng.normal(scale=sigma, size=n), w


@pytest.mark.parametrize("alpha, beta", [(0.1, 10.0), (2.0, 1.0), (50.0, 0.5)])
def test_the_map_weights_are_ridge_at_lambda_alpha_over_beta(alpha, beta):
    phi, t, _ = data()
    mean, cov = posterior(phi, t, alpha, beta)
    ridge = Ridge(alpha=alpha / beta, fit_intercept=False, solver="cholesky", tol=1e-14).fit(phi, t)
    np.testing.assert_allclose(mean, ridge.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ridge_weights(phi, t, alpha / beta), ridge.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.linalg.inv(cov), alpha * np.eye(8) + beta * phi.T @ phi, rtol=1e-9)


@pytest.mark.parametrize("alpha, beta", [(0.1, 10.0), (2.0, 1.0), (50.0, 0.5)])
def test_the_evidence_is_the_marginal_gaussian_density_of_the_targets(alpha, beta):
    phi, t, _ = data(n=25)
    covariance = np.eye(25) / beta + phi @ phi.T / alpha  # the weights integrated out
    expected = multivariate_normal(mean=np.zeros(25), cov=covariance).logpdf(t)
    assert log_evidence(phi, t, alpha, beta) == pytest.approx(expected, rel=1e-10)


def test_maximising_the_evidence_finds_bayesian_ridges_precisions():
    phi, t, _ = data(n=200, m=10)
    ours = BayesianLinearRegression().fit(phi, t)
    theirs = BayesianRidge(fit_intercept=False, alpha_1=0, alpha_2=0, lambda_1=0, lambda_2=0, tol=1e-12,
                           max_iter=1000).fit(phi, t)  # fmt: skip
    assert ours.beta_ == pytest.approx(
        theirs.alpha_, rel=1e-5
    )  # scikit-learn's alpha_ is the noise precision
    assert ours.alpha_ == pytest.approx(theirs.lambda_, rel=1e-5)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-5)


def test_the_found_precisions_are_a_maximum_of_the_evidence():
    phi, t, _ = data(n=120)
    fit = BayesianLinearRegression().fit(phi, t)
    best = fit.log_evidence_
    for da, db in [(1.1, 1), (0.9, 1), (1, 1.1), (1, 0.9), (1.05, 0.95)]:
        assert log_evidence(phi, t, fit.alpha_ * da, fit.beta_ * db) < best
    assert 0 < fit.gamma_ <= 8 and fit.n_iter_ > 1


def test_given_precisions_are_kept_and_the_true_ones_are_found_on_much_data():
    phi, t, _ = data(n=5000, m=5, sigma=0.3, tau=1.0, seed=3)
    fixed = BayesianLinearRegression(alpha=2.0, beta=4.0).fit(phi, t)
    assert (fixed.alpha_, fixed.beta_, fixed.n_iter_) == (2.0, 4.0, 0) and fixed.ridge_lambda_ == 0.5
    found = BayesianLinearRegression().fit(phi, t)
    assert found.beta_ == pytest.approx(1 / 0.3**2, rel=0.05)  # the noise variance is well determined


def test_the_predictive_spread_is_the_noise_plus_the_weights_uncertainty():
    phi, t, _ = data(n=40)
    fit = BayesianLinearRegression(alpha=1.0, beta=4.0).fit(phi, t)
    mean, std = fit.predict(phi[:3], return_std=True)
    np.testing.assert_allclose(mean, phi[:3] @ fit.coef_)
    expected = np.sqrt(0.25 + np.array([p @ fit.sigma_ @ p for p in phi[:3]]))
    np.testing.assert_allclose(std, expected, rtol=1e-12)
    assert (std > 0.5).all()  # never below the noise's standard deviation


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: posterior(np.ones((3, 2)), np.ones(4), 1, 1), "need features"),
        (lambda: posterior(np.ones((3, 2)), np.ones(3), 0, 1), "alpha=0.0"),
        (lambda: ridge_weights(np.ones((3, 2)), np.ones(3), -1), "lam=-1.0"),
        (lambda: log_evidence(np.ones((3, 2)), np.ones(3), 1, float("nan")), "beta=nan"),
        (lambda: log_evidence(np.full((3, 2), np.inf), np.ones(3), 1, 1), "finite"),
        (
            lambda: BayesianLinearRegression().fit(np.ones((3, 2)), np.ones(3)),
            "reproduce the targets exactly",
        ),
        (lambda: BayesianLinearRegression().fit(*data(m=2)[:2]).predict(np.ones((2, 3))), "(N, 2)"),
    ],
)
def test_bad_input_is_one_clear_line(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()
