"""Day 5 - out-of-distribution detection: does the model know when an input is not a digit?

A classifier always answers with one of its ten classes, also for an animal outline, noise or a
digit in inverted colours. An OOD detector scores how unlike the training data an input is
(higher = more out-of-distribution): from the logits (maximum softmax probability, the baseline;
maximum logit; energy) or from the penultimate features (Mahalanobis distance to the nearest
class mean under a shared covariance; distance to the k-th nearest training feature). Each is
judged by how well its score separates the MNIST test digits (in-distribution) from each OOD
set: AUROC, AUPR and the false-positive rate at 95% true-positive rate.

OOD sets: Animal-MNIST (the ``animal-mnist`` package: white animal outlines on black, read
without unpickling anything but an array), Gaussian and uniform noise, inverted MNIST digits,
and Fashion-MNIST, which the notes use, once fetched (``biaslab data fetch fashion-mnist``) or
when ``fashion_dir`` names a folder holding its official IDX files.
"""

from __future__ import annotations

from dataclasses import dataclass

from biaslab.config import check_batch_fits, check_range
from biaslab.data.mnist import QUICK_SIZES, MnistSizes, load_mnist, mnist_splits_for
from biaslab.data.ood import (
    count_duplicates,
    images_to_tensor,
    load_animal_mnist,
    load_fashion_mnist,
    ood_sets,
)
from biaslab.data.transforms import standardize
from biaslab.errors import BiaslabError, ConfigError
from biaslab.evaluate.ood import classifier_outputs, fit_detectors, ood_report, ood_scores
from biaslab.nn import MLP
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierTraining
from biaslab.train.recipes import fit_classifier

TARGET_AUROC = 0.98  # the best detector on Animal-MNIST


@dataclass(frozen=True)
class OODConfig:
    """The classifier, the OOD sets' size and the kNN detector's settings."""

    data: MnistSizes = MnistSizes()
    train: ClassifierTraining = ClassifierTraining(epochs=5)
    hidden: int = 256
    n_ood: int = 2000  # images per OOD set (and MNIST test digits as the in-distribution side)
    knn_k: int = 50
    knn_train: int = 10_000  # training features the kNN detector searches (a random subset)
    fashion_dir: str = ""  # a folder with Fashion-MNIST's IDX files; empty: the fetched cache, if any

    def __post_init__(self):
        check_range(self, "hidden", 1, 100_000)
        check_range(self, "n_ood", 10, 10_000, "the smallest OOD set has 10,000 images")
        check_range(self, "knn_k", 1, 1000)
        check_range(self, "knn_train", self.knn_k, 60_000, "at least knn_k training features")
        if self.fashion_dir:  # read now (under a second), not after the training
            try:
                load_fashion_mnist(self.fashion_dir)
            except BiaslabError as exc:
                raise ConfigError(f"fashion_dir={self.fashion_dir!r}: {exc}") from None
        check_batch_fits(self)


@experiment(
    name="ood",
    day=5,
    step=4,
    config=OODConfig,
    requires=("mnist", "animal-mnist"),
    title="Out-of-distribution detection",
    summary="MSP, max-logit, energy, Mahalanobis and kNN against Animal-MNIST, noise and inverted digits",
    quick={**QUICK_SIZES, "epochs": 1, "n_ood": 200, "knn_train": 1000},
)
def run(ctx) -> None:
    cfg: OODConfig = ctx.cfg
    splits, (mean, std) = standardize(mnist_splits_for(cfg.data, ctx.seed_for("split")), in_place=True)
    model = ctx.init_model(lambda: MLP((784, cfg.hidden, 10)), "mlp")
    fit = fit_classifier(model, splits, cfg.train, ctx.training("mlp"))
    train_features = classifier_outputs(model, splits.x_train)["features"]  # (N, hidden)
    fitted = fit_detectors(
        train_features, splits.y_train.numpy(), cfg.knn_k, cfg.knn_train, seed=ctx.seed_for("knn")
    )
    test_images = load_mnist().x_test
    sets = ood_sets(test_images, cfg.n_ood, ctx.seed_for("ood"), fashion_folder=cfg.fashion_dir or None)
    inside = classifier_outputs(model, splits.x_test[: cfg.n_ood])
    scores_in = {n: ood_scores(d, **inside) for n, d in fitted.items()}
    rows, auroc = [], {}
    histograms = {}
    for set_name, images in sets.items():
        outside = classifier_outputs(model, (images_to_tensor(images) - mean) / std)
        for det_name, det in fitted.items():
            scores_out = ood_scores(det, **outside)
            report = ood_report(scores_in[det_name], scores_out)
            auroc[set_name, det_name] = report["auroc"]
            rows.append(
                [set_name, det_name, *(round(report[k], 4) for k in ("auroc", "aupr", "fpr_at_95_tpr"))]
            )
            if set_name == "animal-mnist":
                histograms[det_name] = (scores_in[det_name], scores_out)
        ctx.metric(**{f"auroc_{set_name}_{d.replace(' ', '_').lower()}": auroc[set_name, d] for d in fitted})
    ctx.metric(test_accuracy=fit.test["accuracy"])
    ctx.table(
        f"MNIST test digits (in) against each set (out), {cfg.n_ood} images each; higher score = more OOD",
        ["OOD set", "detector", "AUROC", "AUPR", "FPR at 95% TPR"],
        rows,
    )
    animal = {d: auroc["animal-mnist", d] for d in fitted}
    best = max(animal, key=animal.get)
    ctx.claim(
        "The maximum-softmax baseline, reported as measured",
        source="Hendrycks & Gimpel 2017 (the notes' baseline)",
        expected="reported (no target)",
        measured=f"AUROC on Animal-MNIST {animal['MSP']:.4f}",
        passed=None,
    )
    ctx.claim(
        f"The best detector separates Animal-MNIST from digits with AUROC >= {TARGET_AUROC}",
        source="biaslab's target",
        expected=f"max AUROC >= {TARGET_AUROC}",
        measured=f"{best}: {animal[best]:.4f}",
        passed=animal[best] >= TARGET_AUROC,
        checked_in_quick=False,
    )
    duplicates = count_duplicates(load_animal_mnist())
    ctx.metric(animal_mnist_duplicates=duplicates)
    ctx.claim(
        "Animal-MNIST holds exact duplicates (reported, since they weigh twice in any score)",
        source="biaslab's target (data audit)",
        expected="284 exact copies of earlier images",
        measured=duplicates,
        passed=duplicates == 284,
    )
    if "fashion-mnist" not in sets:
        ctx.claim(
            "Fashion-MNIST, the notes' OOD set, is not evaluated here",
            source="notes, Day 5 (OOD detection)",
            expected="run `biaslab data fetch fashion-mnist` (or --set fashion_dir=FOLDER of its IDX files)",
            measured="not evaluated",
            passed=None,
        )
    ctx.figure(
        "scores_animal_mnist",
        plots.score_histograms(histograms, names=("in (MNIST test digits)", "out (Animal-MNIST)")),
        "Scores of the MNIST test digits (in-distribution) and of Animal-MNIST (out) under each "
        "detector; higher = more out-of-distribution.",
    )
