"""Tests for biaslab.generative.autoencoder: the model's shapes, the denoising step, the
reconstruction-error score and the decoded paths."""

import numpy as np
import pytest
import torch

from biaslab.generative.autoencoder import (
    Autoencoder,
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
