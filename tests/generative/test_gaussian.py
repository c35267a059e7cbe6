"""Tests for biaslab.generative.gaussian: likelihoods, KL divergences and cross-entropy, each
against an independent reference (scipy, torch.distributions) or an exact identity."""

import numpy as np
import pytest
import scipy.stats
import torch
import torch.nn.functional as F

from biaslab.generative.gaussian import (
    confidence_ellipse,
    cross_entropy,
    empirical_distribution,
    entropy,
    fit_gaussian,
    gaussian_entropy,
    gaussian_log_density,
    gaussian_log_likelihood,
    kl_divergence,
    kl_gaussians,
    kl_monte_carlo,
    label_nll,
    mean_nll,
    sample_gaussian,
)


def random_gaussian(dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(dim, dim))
    return rng.normal(size=dim), a @ a.T + 0.5 * np.eye(dim)  # (D,), (D, D) positive definite


def torch_kl(mu0, cov0, mu1, cov1) -> float:
    p, q = (
        torch.distributions.MultivariateNormal(torch.tensor(m), torch.tensor(c))
        for m, c in ((mu0, cov0), (mu1, cov1))
    )
    return float(torch.distributions.kl_divergence(p, q))


# -- Gaussians ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [1, 2, 5])
def test_log_density_equals_scipy(dim):
    mean, cov = random_gaussian(dim, seed=dim)
    x = sample_gaussian(mean, cov, 50, seed=0)
    reference = scipy.stats.multivariate_normal(mean, cov).logpdf(x)
    np.testing.assert_allclose(gaussian_log_density(x, mean, cov), reference, rtol=1e-12, atol=1e-12)
    assert gaussian_log_likelihood(x, mean, cov) == pytest.approx(reference.mean(), rel=1e-12)


def test_maximum_likelihood_is_the_mean_and_the_biased_covariance():
    mean, cov = random_gaussian(3, seed=1)
    x = sample_gaussian(mean, cov, 200, seed=2)
    fitted = fit_gaussian(x)
    np.testing.assert_allclose(fitted.mean, x.mean(0), rtol=1e-13)
    np.testing.assert_allclose(fitted.cov, np.cov(x, rowvar=False, bias=True), rtol=1e-12)
    best = gaussian_log_likelihood(x, *fitted)  # the maximum: any other parameters score lower
    assert best > gaussian_log_likelihood(x, mean, cov)
    assert best > gaussian_log_likelihood(x, *fitted._replace(cov=np.cov(x, rowvar=False)))
    assert best > gaussian_log_likelihood(x, fitted.mean + 0.01, fitted.cov)


def test_samples_have_the_requested_moments_and_a_seed_fixes_them():
    mean, cov = np.array([1.0, -2.0]), np.array([[2.0, 0.8], [0.8, 1.0]])
    x = sample_gaussian(mean, cov, 200_000, seed=3)
    np.testing.assert_allclose(x.mean(0), mean, atol=0.02)
    np.testing.assert_allclose(np.cov(x, rowvar=False), cov, atol=0.03)
    assert np.array_equal(sample_gaussian(mean, cov, 10, seed=4), sample_gaussian(mean, cov, 10, seed=4))
    assert not np.array_equal(sample_gaussian(mean, cov, 10, seed=4), sample_gaussian(mean, cov, 10, seed=5))


@pytest.mark.parametrize("dim", [1, 2, 4])
def test_kl_equals_torch_distributions(dim):
    (mu0, cov0), (mu1, cov1) = random_gaussian(dim, seed=10 + dim), random_gaussian(dim, seed=20 + dim)
    assert kl_gaussians(mu0, cov0, mu1, cov1) == pytest.approx(torch_kl(mu0, cov0, mu1, cov1), rel=1e-10)


def test_kl_of_one_dimensional_gaussians_from_scalars():
    # KL(N(0, 1) || N(1, 4)) = log(2/1) + (1 + 1) / (2·4) − ½
    assert kl_gaussians(0.0, 1.0, 1.0, 4.0) == pytest.approx(np.log(2) + 2 / 8 - 0.5, rel=1e-14)


def test_kl_is_zero_for_equal_gaussians_positive_otherwise_and_asymmetric():
    (mu0, cov0), (mu1, cov1) = random_gaussian(2, seed=5), random_gaussian(2, seed=6)
    assert kl_gaussians(mu0, cov0, mu0, cov0) == pytest.approx(0.0, abs=1e-14)
    forward, backward = kl_gaussians(mu0, cov0, mu1, cov1), kl_gaussians(mu1, cov1, mu0, cov0)
    assert forward > 0 and backward > 0
    assert abs(forward - backward) > 0.1 * max(forward, backward)  # KL is not a distance
    assert backward == pytest.approx(torch_kl(mu1, cov1, mu0, cov0), rel=1e-10)


def test_monte_carlo_kl_lies_within_a_few_standard_errors_of_the_closed_form():
    (mu0, cov0), (mu1, cov1) = random_gaussian(3, seed=7), random_gaussian(3, seed=8)
    exact = kl_gaussians(mu0, cov0, mu1, cov1)
    for seed in range(5):
        mc = kl_monte_carlo(mu0, cov0, mu1, cov1, n=20_000, seed=seed)
        assert abs(mc.estimate - exact) < 4 * mc.stderr, (mc, exact)
    small, large = (kl_monte_carlo(mu0, cov0, mu1, cov1, n, seed=0).stderr for n in (1000, 100_000))
    assert small / large == pytest.approx(10, rel=0.2)  # the standard error falls as 1/√n


def test_held_out_nll_of_a_gaussian_model_is_entropy_plus_kl():
    """E_p[−log q] = H(p) + KL(p || q) for continuous p and q as well."""
    (mu_p, cov_p), (mu_q, cov_q) = random_gaussian(2, seed=11), random_gaussian(2, seed=12)
    x = sample_gaussian(mu_p, cov_p, 200_000, seed=0)
    nll = -gaussian_log_density(x, mu_q, cov_q)
    identity = gaussian_entropy(cov_p) + kl_gaussians(mu_p, cov_p, mu_q, cov_q)
    assert abs(nll.mean() - identity) < 4 * nll.std() / np.sqrt(len(x))
    assert gaussian_entropy(cov_p) == pytest.approx(scipy.stats.multivariate_normal(mu_p, cov_p).entropy())


def test_confidence_ellipse_lies_at_mahalanobis_distance_k():
    mean, cov = np.array([1.0, 2.0]), np.array([[3.0, 1.0], [1.0, 0.5]])
    points = confidence_ellipse(mean, cov, k=2.0, points=64)  # (64, 2)
    d = points - mean
    np.testing.assert_allclose(np.einsum("ni,ij,nj->n", d, np.linalg.inv(cov), d), 4.0, rtol=1e-12)
    np.testing.assert_allclose(points[0], points[-1], atol=1e-12)


def test_bad_gaussians_are_refused():
    with pytest.raises(ValueError, match="positive definite"):
        kl_gaussians(np.zeros(2), np.diag([1.0, -1.0]), np.zeros(2), np.eye(2))
    with pytest.raises(ValueError, match="symmetric"):
        gaussian_log_density(np.zeros((1, 2)), np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="dimension"):
        kl_gaussians(np.zeros(2), np.eye(2), np.zeros(3), np.eye(3))
    with pytest.raises(ValueError, match="2 samples"):
        fit_gaussian(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="D = 2"):
        gaussian_log_density(np.zeros((4, 3)), np.zeros(2), np.eye(2))


# -- discrete distributions ----------------------------------------------------------------------
P = np.array([0.5, 0.25, 0.125, 0.125, 0.0])
Q = np.array([0.1, 0.2, 0.3, 0.2, 0.2])


def test_discrete_entropy_and_kl_equal_scipy():
    assert entropy(P) == pytest.approx(scipy.stats.entropy(P), rel=1e-14)
    assert entropy(P) == pytest.approx(1.75 * np.log(2), rel=1e-14)  # 1.75 bits
    assert kl_divergence(P, Q) == pytest.approx(scipy.stats.entropy(P, Q), rel=1e-14)
    assert kl_divergence(Q, P) == np.inf  # Q puts mass where P has none
    assert cross_entropy(P, Q) == pytest.approx(-(P[:4] * np.log(Q[:4])).sum(), rel=1e-14)


def test_kl_is_non_negative_and_zero_only_for_equal_distributions():
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(6), size=100), rng.dirichlet(np.ones(6), size=100)  # (100, 6)
    assert (kl_divergence(p, q) > 0).all()
    assert kl_divergence(p, q).shape == (100,)
    np.testing.assert_array_equal(kl_divergence(p, p), 0.0)


def test_cross_entropy_is_entropy_plus_kl():
    rng = np.random.default_rng(1)
    p, q = rng.dirichlet(np.ones(8), size=50), rng.dirichlet(np.ones(8), size=50)
    np.testing.assert_allclose(cross_entropy(p, q), entropy(p) + kl_divergence(p, q), rtol=1e-13)


def test_mean_nll_of_samples_is_their_entropy_plus_kl_and_minimal_at_the_frequencies():
    rng = np.random.default_rng(2)
    samples = rng.choice(5, size=1000, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    frequencies = empirical_distribution(samples, 5)
    assert frequencies.sum() == pytest.approx(1.0) and frequencies[0] == np.mean(samples == 0)
    for q in rng.dirichlet(np.ones(5), size=20):
        nll = mean_nll(q, samples)
        assert nll == pytest.approx(entropy(frequencies) + kl_divergence(frequencies, q), abs=1e-12)
        assert nll > mean_nll(frequencies, samples)  # maximum likelihood: q = the frequencies
    assert mean_nll(frequencies, samples) == pytest.approx(entropy(frequencies), abs=1e-12)


def test_bad_distributions_are_refused():
    with pytest.raises(ValueError, match="sum to 1"):
        entropy([0.5, 0.6])
    with pytest.raises(ValueError, match="non-negative"):
        kl_divergence([1.5, -0.5], [0.5, 0.5])
    with pytest.raises(ValueError, match="categories"):
        cross_entropy([0.5, 0.5], [0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="integers in 0..2"):
        empirical_distribution(np.array([0, 3]), 3)


# -- classifiers ---------------------------------------------------------------------------------
def test_cross_entropy_loss_is_the_mean_nll_of_the_true_labels():
    gen = torch.Generator().manual_seed(0)
    logits = 3 * torch.randn(64, 10, generator=gen, dtype=torch.float64)  # (N, K)
    labels = torch.randint(0, 10, (64,), generator=gen)
    loss = F.cross_entropy(logits, labels)
    assert float(label_nll(logits, labels)) == pytest.approx(float(loss), rel=1e-14)
    probs = torch.softmax(logits, 1).numpy()
    one_hot = np.eye(10)[labels.numpy()]  # (N, K): p is the one-hot label
    assert cross_entropy(one_hot, probs).mean() == pytest.approx(float(loss), rel=1e-12)
    assert (entropy(one_hot) == 0).all()  # so the loss is KL(one-hot || model) as well
