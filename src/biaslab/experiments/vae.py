"""Day 3 - the variational autoencoder on MNIST: a generative model trained by its ELBO.

An encoder maps a digit to a Gaussian q(z | x) over a latent code, a Bernoulli decoder maps a code
to pixel probabilities, and the loss is −ELBO = reconstruction + KL (``generative.vae``), both
logged apart, in nats per image. With a 20-D latent the lab reports the test −ELBO and the tighter
importance-weighted estimate of −log p(x) (k samples). With a 2-D latent it draws what the code
space learned: the test digits' codes coloured by class, a grid of codes decoded from the prior
N(0, I), and decoded straight paths between two digits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import torch

from biaslab.config import check_batch_fits, check_range
from biaslab.data.mnist import QUICK_SIZES, MnistSizes, mnist_splits_for
from biaslab.evaluate.metrics import knn_accuracy
from biaslab.generative.autoencoder import interpolations
from biaslab.generative.vae import VAE, importance_weighted_nll, negative_elbo, vae_step
from biaslab.records import measure
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train import TrainConfig

REFERENCE_ELBO = 106.7  # the PyTorch examples' VAE (400 hidden units, 20-D latent, 10 epochs), test −ELBO
TARGET_ELBO = 100.0
# The workshop book §3.4.2 (The Evidence Lower BOund (ELBO)) prints the bound
# log p_θ(x) ≥ E_q[log p_θ(x | z)] − D_KL(q_φ(z | x) || p(z)) (here without its LaTeX); Day 3 lab
# step 2: "Train a small VAE on MNIST. Visualize the 2D latent space, sample from it, and decode a
# path between two latents". No document gives a −ELBO or a number for how well the 2-D codes
# separate the digits: those thresholds are biaslab's.
ELBO_SECTION = "workshop book §3.4.2, the ELBO"
LAB_STEP = "workshop book, Day 3 lab step 2"
PAIRS = ((0, 1), (4, 9), (7, 2))  # digit pairs joined by decoded paths in the 2-D latent


@dataclass(frozen=True)
class VAETraining(TrainConfig):
    """The VAEs' one recipe: ``monitor`` may also watch the ELBO's terms, which ``vae_step`` logs."""

    monitor: Literal["train_loss", "val_loss", "val_reconstruction", "val_kl"] = "val_loss"


@dataclass(frozen=True)
class VAEConfig:
    """The split sizes, the two VAEs (20-D and 2-D latent) and their one recipe, and the evaluation."""

    data: MnistSizes = MnistSizes()
    train: VAETraining = VAETraining(epochs=50, batch_size=128, lr=2e-3, schedule="onecycle")
    hidden: tuple[int, ...] = (512, 256)
    latent_dim: int = 20
    map_epochs: int = 12  # epochs of the 2-D-latent VAE: its codes sort the digits by then
    iw_samples: int = 100  # k of the importance-weighted estimate of −log p(x)
    grid: int = 15  # codes per side of the grid decoded from the prior
    path_steps: int = 10

    def __post_init__(self):
        check_range(self, "hidden", 1, 100_000)
        check_range(self, "latent_dim", 1, 1024)
        check_range(self, "map_epochs", 1, 10_000)
        check_range(self, "iw_samples", 1, 10_000)
        check_range(self, "grid", 2, 40)
        check_range(self, "path_steps", 2, 40)
        check_batch_fits(self)


def evaluate_elbo(model: VAE, x: torch.Tensor, seed: int) -> dict[str, float]:
    """Mean −ELBO, reconstruction and KL of ``x`` (one seeded sample of z per image), nats per image."""
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        parts = [negative_elbo(model, chunk, gen) for chunk in x.split(2000)]
    total, reconstruction, kl = (torch.cat(p).mean().item() for p in zip(*parts))
    return {"elbo": total, "reconstruction": reconstruction, "kl": kl}


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {
    "elbo": measure("negative ELBO (nats per image)"),
    "kl": measure("KL term (nats per image)"),
    "reconstruction": measure("reconstruction term (nats per image)"),
    "iw_nll": measure("importance-weighted NLL (nats per image)"),
}


@experiment(
    name="vae",
    words=WORDS,
    day=3,
    step=2,
    config=VAEConfig,
    requires=("mnist",),
    title="The variational autoencoder",
    summary="a Bernoulli VAE on MNIST: −ELBO (reconstruction + KL) and −log p(x); a 2-D latent drawn",
    quick={**QUICK_SIZES, "epochs": 2, "map_epochs": 2, "hidden": (64,), "iw_samples": 5, "grid": 5},
)
def run(ctx) -> None:
    cfg: VAEConfig = ctx.cfg
    splits = mnist_splits_for(cfg.data, ctx.seed_for("split"))  # (N, 784), pixels in [0, 1]

    def train(latent: int, tag: str, epochs: int) -> tuple[VAE, list[dict]]:
        model = ctx.init_model(lambda: VAE(784, latent, cfg.hidden), tag)
        config = replace(cfg.train, epochs=epochs)
        history = (
            ctx.training(tag)
            .trainer(model, config, step=vae_step)
            .fit((splits.x_train,), val=(splits.x_val,))
        )
        return model, history

    # 1. The 20-D VAE: test −ELBO and its terms, and −log p(x) by importance sampling.
    model, history = train(cfg.latent_dim, "vae", cfg.train.epochs)
    test = evaluate_elbo(model, splits.x_test, ctx.seed_for("elbo"))
    gen = torch.Generator().manual_seed(ctx.seed_for("importance"))
    nll = importance_weighted_nll(model, splits.x_test, cfg.iw_samples, gen).mean().item()
    for name, value in {**test, "iw_nll": nll}.items():
        ctx.metric(name, value, split="test")
    ctx.table(
        f"Test set, {len(splits.x_test)} images, nats per image ({cfg.latent_dim}-D latent)",
        ["quantity", "value"],
        [
            ["−ELBO = reconstruction + KL", test["elbo"]],
            ["reconstruction: −E_q log p(x | z)", test["reconstruction"]],
            ["KL(q(z | x) || p(z))", test["kl"]],
            [f"−log p(x), importance-weighted (k = {cfg.iw_samples})", nll],
            ["PyTorch examples' VAE, −ELBO (reference)", REFERENCE_ELBO],
        ],
    )
    ctx.claim(
        f"The VAE's test −ELBO is at most {TARGET_ELBO:g} nats per image",
        kind="finding",
        source=f"{LAB_STEP}; biaslab's target (the documents give no number; the PyTorch examples' VAE "
        f"reaches ~{REFERENCE_ELBO})",
        expected=f"test −ELBO <= {TARGET_ELBO:g}",
        measured=f"{test['elbo']:.2f} = {test['reconstruction']:.2f} + {test['kl']:.2f} (KL)",
        passed=test["elbo"] <= TARGET_ELBO,
        checked_in_quick=False,
    )
    ctx.claim(
        "The ELBO is a lower bound: the importance-weighted −log p(x) lies below the −ELBO",
        # Jensen's inequality, for any encoder and decoder: the k-sample bound is at least as
        # tight as the ELBO (Burda et al. 2016, theorem 1), averaged over the whole test set
        kind="check",
        source=f"{ELBO_SECTION}; Burda et al. 2016",
        expected=f"−log p(x) (k = {cfg.iw_samples}) < −ELBO",
        measured=f"{nll:.2f} < {test['elbo']:.2f}",
        passed=nll < test["elbo"],
    )

    # 2. The 2-D VAE: the test codes, a grid decoded from the prior, and paths between digits.
    small, small_history = train(2, "vae-2d", cfg.map_epochs)
    small.eval()
    with torch.no_grad():
        codes = small.encode(splits.x_test.to(ctx.device))[0].cpu().numpy()  # (N, 2): the means μ(x)
        train_codes = small.encode(splits.x_train[:10_000].to(ctx.device))[0].cpu().numpy()
    labels = splits.y_test.numpy()
    separation = knn_accuracy(train_codes, splits.y_train[:10_000].numpy(), codes, labels)
    ctx.metric("knn_accuracy", separation, latent="latent2d")
    ctx.metric("elbo", evaluate_elbo(small, splits.x_test, 0)["elbo"], latent="latent2d", split="test")
    # No document says that a VAE's codes cluster by digit. The nearest it comes: the lecture notes
    # §4 (Autoencoders: learning to compress): "The latent space often captures interpretable
    # structure. An autoencoder trained on galaxy images might learn latents corresponding to size,
    # brightness, and morphology—without ever being told these concepts exist."
    ctx.claim(
        "Digits cluster by class in the 2-D latent space, though labels were never used",
        kind="finding",
        source=f"{LAB_STEP}; lecture notes §4 (Autoencoders: learning to compress); biaslab's target "
        "(the 5-nearest-neighbour accuracy 0.5: the documents give no number)",
        expected="5-nearest-neighbour accuracy of the test codes > 0.5 (chance 0.1)",
        measured=round(separation, 4),
        passed=separation > 0.5,
        checked_in_quick=False,
    )
    fig, (ax,) = plots.subplots(1, size=(6.0, 5.4))
    plots.embedding_scatter(ax, codes, labels, "means of q(z | x), test digits", seed=ctx.seed_for("plot"))
    ctx.figure("latent_map", fig, "The 2-D latent code (the mean of q(z | x)) of each test digit, by class.")
    # imported on use: scipy.stats takes half a second to import, and every biaslab command imports every lab
    from scipy.stats import norm

    quantiles = norm.ppf(np.linspace(0.05, 0.95, cfg.grid)).astype(np.float32)  # even in probability
    grid = np.stack(np.meshgrid(quantiles, quantiles[::-1]), axis=-1).reshape(-1, 2)  # (G², 2)
    with torch.no_grad():
        decoded = small.decode(torch.from_numpy(grid).to(ctx.device)).cpu().numpy()
    decoded = decoded.reshape(cfg.grid, cfg.grid, 28, 28)
    ctx.figure(
        "prior_grid",
        plots.image_grid(decoded, cell=0.5),
        "Codes on a grid of the prior's 5%…95% quantiles along each axis, decoded: the VAE's whole "
        "2-D latent space, every point of which decodes to a digit-like image.",
    )
    paths = interpolations(small.decode, codes, labels, PAIRS, cfg.path_steps)
    ctx.figure(
        "paths",
        plots.image_grid(
            paths.reshape(len(PAIRS), cfg.path_steps, 28, 28), row_labels=[f"{a} → {b}" for a, b in PAIRS]
        ),
        "Decoded points on the straight line between the codes of two test digits.",
    )
    ctx.figure(
        "training",
        plots.learning_curves(
            {f"{cfg.latent_dim}-D": history, "2-D": small_history},
            keys=("val_loss", "val_reconstruction", "val_kl"),
        ),
        "Validation −ELBO and its two terms (nats per image) per epoch, for both latent sizes.",
    )
