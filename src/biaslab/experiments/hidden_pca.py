"""Day 1 - what the hidden layer learned: PCA of hidden activations vs. PCA of raw pixels.

The hidden layer h = ReLU(W1 x + b1) (the two-layer MLP of workshop book §1.3) is trained to make
the classes linearly separable for the output layer, so even its 2-D linear projection groups the
digits far better than the same projection of the raw pixels. Cluster separation is the mean
silhouette coefficient.

Workshop book, Day 1 lab step 3: project the hidden activations to 2D with PCA, "You will see
clusters — the network has learned a representation in which similar digits live near each other."
The book makes no comparison with the raw pixels, and no silhouette: that is biaslab's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from biaslab.config import check_batch_fits, check_memory, check_range
from biaslab.data.mnist import N_TEST_IMAGES, QUICK_SIZES, MnistSizes, mnist_splits_for
from biaslab.evaluate import cluster_separation, knn_accuracy, pca_project
from biaslab.nn import MLP
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierTraining
from biaslab.train.recipes import fit_classifier

# A silhouette score needs at least 2 classes and fewer classes than points: 11 points always
# hold fewer than 11 of the 10 digits (and the first 11 test images hold 7 of them).
SILHOUETTE_MIN = 11
SILHOUETTE_WHY = "a silhouette score needs more points than the 10 digits"


@dataclass(frozen=True)
class HiddenPCASizes(MnistSizes):
    """MNIST splits large enough for a 5-nearest-neighbour vote and a silhouette score."""

    MIN_SIZES: ClassVar[dict[str, tuple[int, str]]] = {
        "n_train": (5, "the 5-nearest-neighbour vote in the PCA plane needs 5 training images"),
        "n_test": (SILHOUETTE_MIN, SILHOUETTE_WHY),
    }


@dataclass(frozen=True)
class HiddenPCAConfig:
    """The split sizes, the MLP's training and width, and the silhouette's sample."""

    data: HiddenPCASizes = HiddenPCASizes()
    train: ClassifierTraining = ClassifierTraining(epochs=5, batch_size=256, lr=3e-3, schedule="onecycle")
    hidden: int = 256
    silhouette_points: int = 5000  # random test points the silhouette is computed on

    def __post_init__(self):
        check_range(self, "hidden", 2, why="PCA projects the hidden layer onto 2 components")
        check_range(self, "silhouette_points", SILHOUETTE_MIN, N_TEST_IMAGES, SILHOUETTE_WHY)
        check_batch_fits(self)
        # Besides the MLP: the hidden activations of the training and test sets (float32), the
        # ReLU's input beside each while they are computed, and PCA's centred copy of h_train.
        n_train, n_test = self.data.training_set()[0], self.data.n_test or N_TEST_IMAGES
        activations = 4 * self.hidden * (3 * n_train + 2 * n_test)
        check_memory(
            f"hidden={self.hidden}, batch_size={self.train.batch_size}",
            self.train.mlp_memory((784, self.hidden, 10)) + activations,
            f"the 784-{self.hidden}-10 MLP and its hidden activations",
        )


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {"full": "all dimensions"}


@experiment(
    name="hidden-pca",
    words=WORDS,
    day=1,
    step=3,
    config=HiddenPCAConfig,
    requires=("mnist",),
    title="Hidden activations vs. raw pixels in 2-D",
    summary="PCA of the trained MLP's hidden layer separates digits better than PCA of pixels",
    quick={**QUICK_SIZES, "epochs": 2},
)
def run(ctx) -> None:
    cfg: HiddenPCAConfig = ctx.cfg
    splits = mnist_splits_for(cfg.data, ctx.seed_for("split"), standardize=True)
    model = ctx.init_model(lambda: MLP((784, cfg.hidden, 10)), "mlp")
    fit = fit_classifier(model, splits, cfg.train, ctx.training("mlp"))
    model.eval()
    with torch.no_grad():
        h_train = model.hidden(splits.x_train.to(ctx.device)).cpu().numpy()  # (N_train, hidden)
        h_test = model.hidden(splits.x_test.to(ctx.device)).cpu().numpy()  # (N_test, hidden)
    labels = splits.y_test.numpy()
    # PCA is fitted on the training set and applied to the test set.
    zh_train, z_hidden = pca_project(h_train, h_train, h_test, seed=ctx.seed_for("pca"))
    zp_train, z_pixels = pca_project(
        splits.x_train.numpy(), splits.x_train.numpy(), splits.x_test.numpy(), seed=ctx.seed_for("pca")
    )
    y_train = splits.y_train.numpy()
    knn_hidden = knn_accuracy(zh_train, y_train, z_hidden, labels)
    knn_pixels = knn_accuracy(zp_train, y_train, z_pixels, labels)
    s_seed = ctx.seed_for("silhouette")
    s_hidden = cluster_separation(z_hidden, labels, cfg.silhouette_points, s_seed)
    s_pixels = cluster_separation(z_pixels, labels, cfg.silhouette_points, s_seed)
    s_hidden_full = cluster_separation(h_test, labels, cfg.silhouette_points, s_seed)
    s_pixels_full = cluster_separation(splits.x_test.numpy(), labels, cfg.silhouette_points, s_seed)

    ctx.metric("accuracy", fit.test["accuracy"], split="test")
    silhouettes = {("hidden", "pca2"): s_hidden, ("pixels", "pca2"): s_pixels,
                   ("hidden", "full"): s_hidden_full, ("pixels", "full"): s_pixels_full}  # fmt: skip
    for (space, projection), value in silhouettes.items():  # keys older than the records: measure first
        ctx.metric(
            "silhouette", value, space=space, projection=projection, key=f"silhouette_{space}_{projection}"
        )
    for space, value in (("hidden", knn_hidden), ("pixels", knn_pixels)):
        ctx.metric("knn5_accuracy", value, space=space, projection="pca2", key=f"knn5_accuracy_{space}_pca2")
    ctx.claim(
        "Hidden activations, projected to 2-D, separate the digits better than raw pixels",
        source="workshop book, Day 1 lab step 3; biaslab's target (the comparison with PCA of the "
        "raw pixels, by silhouette)",
        expected="silhouette(hidden, PCA-2) > silhouette(pixels, PCA-2)",
        measured=f"{s_hidden:.3f} vs {s_pixels:.3f}",
        passed=s_hidden > s_pixels,
        kind="finding",
    )
    ctx.table(
        "Cluster separation on the test set: mean silhouette coefficient by digit, and "
        "the accuracy of a 5-nearest-neighbour vote in the 2-D projection",
        ["representation", "silhouette, PCA-2", "silhouette, all dims", "5-NN accuracy, PCA-2"],
        [
            ["raw pixels (784)", s_pixels, s_pixels_full, knn_pixels],
            [f"hidden layer ({cfg.hidden})", s_hidden, s_hidden_full, knn_hidden],
        ],
    )

    fig, axes = plots.subplots(2, size=(5.0, 4.6))
    plots.embedding_scatter(
        axes[0], z_pixels, labels, f"raw pixels, PCA-2 (silhouette {s_pixels:.3f})", seed=ctx.seed_for("plot")
    )
    plots.embedding_scatter(
        axes[1],
        z_hidden,
        labels,
        f"hidden layer, PCA-2 (silhouette {s_hidden:.3f})",
        seed=ctx.seed_for("plot"),
    )
    ctx.figure(
        "pca_scatter",
        fig,
        "Test images projected to their first two principal "
        "components, coloured by digit: raw pixels (left) and the trained MLP's hidden "
        "activations (right).",
    )
