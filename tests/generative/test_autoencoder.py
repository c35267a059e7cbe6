"""Tests for biaslab.generative.autoencoder: the model's shapes, the denoising step, the
reconstruction-error score and the decoded paths."""

import numpy as np
import pytest
import torch

from biaslab.evaluate.metrics import pca_basis
from biaslab.generative.autoencoder import (
    Autoencoder,
    LinearAutoencoder,
    corrupt,
    denoising_step,
    interpolations,
    reconstruction_error,
)


def test_corrupt_adds_seeded_gaussian_noise_and_clips_to_the_pixel_range():
    x = torch.full((20_000, 4), 0.5)
    noisy = corrupt(x, 0.1, torch.Generator().manual_seed(0))
    assert float(noisy.min()) >= 0 and float(noisy.max()) <= 1
    assert float((noisy - x).std()) == pytest.approx(0.1, rel=0.02)
    assert torch.equal(noisy, corrupt(x, 0.1, torch.Generator().manual_seed(0)))
    assert float(corrupt(torch.ones(3, 2), 5.0, torch.Generator()).max()) <= 1


def test_denoising_step_compares_the_output_on_noisy_input_with_the_clean_input():
    torch.manual_seed(0)
    model, x = Autoencoder(12, 3, (8,)), torch.rand(5, 1, 3, 4)
    out = denoising_step(0.3)(model, (x,), torch.Generator().manual_seed(1))
    expected = model(corrupt(x.flatten(1), 0.3, torch.Generator().manual_seed(1)))
    torch.testing.assert_close(out.outputs, expected)
    torch.testing.assert_close(out.loss, torch.nn.functional.mse_loss(expected, x.flatten(1)))
    assert torch.equal(out.targets, x.flatten(1))


def test_reconstruction_error_is_the_per_image_mean_squared_error():
    torch.manual_seed(1)
    model, x = Autoencoder(6, 2, (4,)), torch.rand(7, 6)
    with torch.no_grad():
        expected = ((model(x) - x) ** 2).mean(1)
    torch.testing.assert_close(reconstruction_error(model, x, batch_size=3), expected)


def test_interpolations_run_between_the_first_codes_of_each_label():
    codes = np.array([[0.0, 0.0], [1.0, 2.0], [5.0, 5.0], [3.0, -1.0]], dtype=np.float32)
    labels = np.array([4, 7, 4, 9])
    paths = interpolations(lambda z: z * 10, codes, labels, [(4, 7), (9, 4)], steps=5)
    assert paths.shape == (2, 5, 2)
    np.testing.assert_allclose(paths[0, 0], [0, 0]) and np.testing.assert_allclose(paths[0, -1], [10, 20])
    np.testing.assert_allclose(paths[1, 0], [30, -10]) and np.testing.assert_allclose(paths[1, 2], [15, -5])


def _centred_data(n=400, seed=0):
    """Centred points in 8-D with well-separated variances (9, 4, 1, 0.25, ...): a clear gap after 2."""
    rng = np.random.default_rng(seed)
    rotation, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    x = rng.normal(size=(n, 8)) * np.array([3.0, 2.0, 1.0, 0.5, 0.4, 0.3, 0.2, 0.1]) @ rotation.T
    return (x - x.mean(0)).astype(np.float32)


def test_linear_autoencoder_is_two_matrices_without_bias_or_activation():
    torch.manual_seed(0)
    model = LinearAutoencoder(12, 3)
    assert [p.shape for p in model.parameters()] == [(3, 12), (12, 3)]  # W_e, W_d; no bias
    x = torch.randn(5, 1, 3, 4)  # flattened to 12
    w_e, w_d = model.encoder.weight, model.decoder.weight
    torch.testing.assert_close(model.encode(x), x.flatten(1) @ w_e.T)
    torch.testing.assert_close(model(x), x.flatten(1) @ w_e.T @ w_d.T)
    torch.testing.assert_close(model(-2 * x), -2 * model(x))  # linear
    with pytest.raises(ValueError, match="latent_dim"):
        LinearAutoencoder(4, 5)


def test_linear_autoencoder_with_pca_weights_reconstructs_as_sklearn_pca():
    from sklearn.decomposition import PCA

    x = _centred_data()
    basis = pca_basis(x, 2)  # (8, 2)
    model = LinearAutoencoder(8, 2)
    with torch.no_grad():
        model.encoder.weight.copy_(torch.from_numpy(basis.T))
        model.decoder.weight.copy_(torch.from_numpy(basis))
        got = model(torch.from_numpy(x)).numpy()
    pca = PCA(2).fit(x)
    np.testing.assert_allclose(got, pca.inverse_transform(pca.transform(x)) - pca.mean_, atol=1e-5)


def test_a_trained_linear_autoencoder_spans_the_principal_subspace():
    """Baldi & Hornik 1989, checked with scipy's principal angles: gradient descent on the squared
    error brings the decoder's columns to PCA's top-2 subspace, and its error to PCA's."""
    from scipy.linalg import subspace_angles

    x = torch.from_numpy(_centred_data())
    torch.manual_seed(1)
    model = LinearAutoencoder(8, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    start = np.degrees(subspace_angles(model.decoder.weight.detach().numpy(), pca_basis(x.numpy(), 2))).max()
    for _ in range(1500):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), x)
        loss.backward()
        optimizer.step()
    basis = pca_basis(x.numpy(), 2)
    angles = np.degrees(subspace_angles(model.decoder.weight.detach().numpy().astype(np.float64), basis))
    assert start > 20 and angles.max() < 0.5, (start, angles)
    pca_mse = float(np.mean((x.numpy() - x.numpy() @ basis @ basis.T) ** 2))
    assert loss.item() == pytest.approx(pca_mse, rel=1e-4)
