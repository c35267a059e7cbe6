"""Day 1 - an autoencoder with a 2-D code against PCA, the best *linear* 2-D code.

Both compress a 784-pixel image to two numbers and reconstruct it (eq. 3.1). PCA's reconstruction
is a projection onto a plane; the non-linear decoder can curve its 2-D sheet through pixel space,
so its test reconstruction error is lower. Decoding points on straight lines between two codes
shows what the 2-D space learned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from biaslab.config import check_batch_fits, check_memory, check_range
from biaslab.data.mnist import QUICK_SIZES, MnistSizes, mnist_splits_for
from biaslab.evaluate import pca_reconstruction_error
from biaslab.generative import Autoencoder
from biaslab.generative.autoencoder import interpolations
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import LossTraining
from biaslab.train.recipes import fit_reconstruction

# Digit pairs whose codes are joined by straight lines in the interpolation figure.
PAIRS = ((0, 1), (3, 8), (4, 9), (7, 2), (5, 6), (1, 7))
# Each row of that figure starts from the first test image of a digit of PAIRS, so every digit
# of PAIRS must be among the first n_test official test images. The last to appear is an 8, at
# index 61: the first 62 test images are the fewest that hold them all (recomputed from the
# data by tests/experiments/test_bad_values.py). The reconstructions figure needs 8.
MIN_TEST_FOR_PAIRS = 62


@dataclass(frozen=True)
class Autoencoder2DSizes(MnistSizes):
    """MNIST splits large enough for the PCA-2 baseline and the interpolation figure."""

    MIN_SIZES: ClassVar[dict[str, tuple[int, str]]] = {
        "n_train": (2, "the PCA-2 baseline fits 2 components to the training images"),
        "n_test": (
            MIN_TEST_FOR_PAIRS,
            f"the first {MIN_TEST_FOR_PAIRS} test images are the fewest that hold every digit "
            "the interpolation figure joins",
        ),
    }


@dataclass(frozen=True)
class Autoencoder2DConfig:
    """The split sizes, the autoencoder's training and widths, and the interpolation figure."""

    data: Autoencoder2DSizes = Autoencoder2DSizes()
    train: LossTraining = LossTraining(epochs=20, batch_size=256, lr=2e-3, schedule="onecycle")
    hidden: tuple[int, ...] = (512, 128)
    steps: int = 9  # images along each interpolation line, endpoints included

    def __post_init__(self):
        check_range(self, "hidden", 1)
        check_range(self, "steps", 2, 25, "images per interpolation row, both endpoints included")
        check_batch_fits(self)
        encoder = (784, *self.hidden, 2)
        check_memory(
            f"hidden={','.join(map(str, self.hidden))}, batch_size={self.train.batch_size}",
            self.train.mlp_memory(encoder, encoder[::-1]),
            f"the autoencoder {'-'.join(map(str, encoder + encoder[-2::-1]))}",
        )


@experiment(
    name="autoencoder-2d",
    day=1,
    step=4,
    config=Autoencoder2DConfig,
    requires=("mnist",),
    title="A 2-D autoencoder vs. 2-component PCA",
    summary="an autoencoder with a 2-D latent space beats PCA's reconstruction; latent map",
    quick={**QUICK_SIZES, "epochs": 2, "hidden": (64,)},
)
def run(ctx) -> None:
    cfg: Autoencoder2DConfig = ctx.cfg
    splits = mnist_splits_for(cfg.data, ctx.seed_for("split"))  # pixels in [0, 1]
    model = ctx.init_model(lambda: Autoencoder(784, latent_dim=2, hidden=cfg.hidden), "ae")
    fit = fit_reconstruction(model, splits, cfg.train, ctx.training("ae"))
    ae_mse = fit.test["loss"]
    pca_mse = pca_reconstruction_error(splits.x_train.numpy(), splits.x_test.numpy(), 2)

    ctx.timing(train_seconds=fit.train_time)
    ctx.metric(
        ae_test_mse=ae_mse,
        pca2_test_mse=pca_mse,
        improvement=1 - ae_mse / pca_mse,
    )
    ctx.claim(
        "A non-linear 2-D autoencoder reconstructs better than 2-component PCA",
        source="notes, Day 1 (autoencoders)",
        expected="AE test MSE < PCA-2 test MSE",
        measured=f"{ae_mse:.4f} vs {pca_mse:.4f}",
        passed=ae_mse < pca_mse,
        checked_in_quick=False,
    )

    model.eval()
    with torch.no_grad():
        z = model.encode(splits.x_test.to(ctx.device)).cpu().numpy()  # (N_test, 2)
    labels = splits.y_test.numpy()
    fig, (ax,) = plots.subplots(1, size=(6.0, 5.4))
    plots.embedding_scatter(ax, z, labels, "2-D latent codes of test images", seed=ctx.seed_for("plot"))
    ctx.figure(
        "latent_scatter",
        fig,
        "Each test image's 2-D code, coloured by digit (labels were never shown to the autoencoder).",
    )

    ctx.figure(
        "interpolations",
        plots.image_grid(
            interpolations(model.decode, z, labels, PAIRS, cfg.steps).reshape(len(PAIRS), cfg.steps, 28, 28),
            row_labels=[f"{a} → {b}" for a, b in PAIRS],
            title="Decoded points on straight lines between two latent codes",
        ),
        "Each row decodes evenly spaced points on the segment between the codes of two test "
        "digits (first and last columns are reconstructions of the endpoints).",
    )

    with torch.no_grad():
        recon = model(splits.x_test[:8].to(ctx.device)).cpu().numpy().reshape(8, 28, 28)
    originals = splits.x_test[:8].numpy().reshape(8, 28, 28)
    ctx.figure(
        "reconstructions",
        plots.image_grid(
            np.stack([originals, recon]),
            row_labels=["input", "AE"],
            title=f"Test reconstructions (AE MSE {ae_mse:.4f}, PCA-2 MSE {pca_mse:.4f})",
        ),
        "Test images and their reconstructions through the 2-D bottleneck.",
    )
