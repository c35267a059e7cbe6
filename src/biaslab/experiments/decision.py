"""Day 5 - the decision: ship, collect more data, or redesign?

"A model is done when you can defend, in front of a stakeholder, both the cases where it works
and the cases where it fails." (the workshop book's Day 5 epigraph; its §5.7 names the three
verdicts: ship, collect more data, redesign). Three prepared situations meet the same use — digits written up
to ``use_shift`` pixels off-centre, among which animal silhouettes must be flagged — and the same
requirements:

* **a good CNN**: the CNN on all the training digits;
* **a CNN on 2% of the data**: the same CNN and recipe, with ``small_fraction`` of the digits;
* **an MLP for shifted digits**: an MLP on all the digits, which has no notion of locality.

For each, the evidence of ``evaluate.decide``: a learning curve over nested training subsets,
measured on the validation digits as they are and as the use brings them (is each error still
falling?), test accuracy, the expected calibration error, accuracy on test digits each shifted
by a random offset of up to ``use_shift`` pixels, and the AUROC of an OOD detector on
Animal-MNIST — the detector chosen on validation digits and one half of Animal-MNIST, measured
on the test digits and the other half. ``decide`` turns the evidence into
a verdict by its documented rules; each verdict is a claim, shown with its rule and evidence.
Every model trains for the same number of steps: a learning-curve point repeats its subset to
the full training set's length, so only the data differ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from biaslab.caches import run_cache
from biaslab.config import check_batch_fits, check_range
from biaslab.data.mnist import QUICK_SIZES, MnistSizes, mnist_splits_for
from biaslab.data.ood import images_to_tensor, ood_pool
from biaslab.data.transforms import jitter, standardize
from biaslab.errors import ConfigError
from biaslab.evaluate.calibration import expected_calibration_error
from biaslab.evaluate.decision import Evidence, decide
from biaslab.evaluate.ood import auroc, choose_detector, classifier_outputs, fit_detectors, ood_scores
from biaslab.nn import CNN, MLP
from biaslab.records import measure
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierTraining
from biaslab.train.recipes import fit_learning_curve, predict

SITUATIONS = {  # name -> (model, share of the training set, the verdict the situation is prepared for)
    "good CNN": ("cnn", "all", "ship"),
    "CNN on 2% of the data": ("cnn", "small", "collect more data"),
    "MLP for shifted digits": ("mlp", "all", "redesign"),
}
THRESHOLDS = ("min_accuracy", "max_ece", "min_shift_accuracy", "min_ood_auroc", "still_falling")


@dataclass(frozen=True)
class DecisionConfig:
    """The models and their one recipe, the use (shift, OOD set), and decide's thresholds."""

    data: MnistSizes = MnistSizes()
    # epochs: of the full training set's length, for every model and curve point
    train: ClassifierTraining = ClassifierTraining(epochs=2, lr=2e-3, schedule="onecycle")
    cnn_channels: tuple[int, ...] = (32, 64)  # 3x3 conv + 2x2 max-pool blocks, flattened, linear head
    mlp_hidden: int = 256
    small_fraction: float = 0.02  # the data-starved CNN's share of the training set
    curve_points: int = 4  # learning-curve sizes: the training set / 2**k, k = curve_points-1 .. 0
    use_shift: int = 2  # digits in use are off-centre by up to this many pixels along each axis
    n_ood: int = 2000  # Animal-MNIST images to choose the detector on, and as many to measure it on
    knn_k: int = 50
    knn_train: int = 10_000  # training features the kNN detector searches (a random subset)
    # The use's requirements and decide's diagnosis thresholds (see evaluate.decision).
    min_accuracy: float = 0.97
    max_ece: float = 0.05
    min_shift_accuracy: float = 0.8
    min_ood_auroc: float = 0.9
    still_falling: float = 0.1

    def __post_init__(self):
        check_range(self, "cnn_channels", 1, 1024, "channels of a convolution")
        if len(self.cnn_channels) > 4:
            raise ConfigError(f"cnn_channels={self.cnn_channels}: at most 4 blocks (each halves 28 pixels)")
        check_range(self, "mlp_hidden", 1, 100_000)
        check_range(self, "small_fraction", 0, 0.5, "a share of the training set", open_low=True)
        check_range(self, "curve_points", 2, 8, "a learning curve needs two sizes; each halves the data")
        check_range(self, "use_shift", 0, 13, "pixels of a 28-pixel image")
        check_range(self, "n_ood", 10, 5000, "two disjoint halves of Animal-MNIST's 10,000 images")
        check_range(self, "knn_k", 1, 1000)
        check_range(self, "knn_train", self.knn_k, 60_000, "at least knn_k training features")
        for key in THRESHOLDS:
            check_range(self, key, 0, 1, "a fraction")
        check_batch_fits(self)
        small = self.small_training_set()
        if small >> (self.curve_points - 1) < 1 or small < self.knn_k:
            raise ConfigError(
                f"small_fraction={self.small_fraction}: {small} training digits, fewer than "
                f"2**(curve_points - 1) = {2 ** (self.curve_points - 1)} (one for the smallest point of the "
                f"curve) or knn_k={self.knn_k} (neighbours for the kNN detector)"
            )
        n_test, n_val = self.data.n_test or 10_000, self.data.n_val
        if min(n_test, n_val) < self.n_ood:
            raise ConfigError(
                f"n_ood={self.n_ood}: needs as many validation and test digits (n_val={n_val}, "
                f"n_test={n_test})"
            )

    def small_training_set(self) -> int:
        return round(self.small_fraction * self.data.training_set()[0])


def build(kind: str, cfg: DecisionConfig) -> torch.nn.Module:
    if kind == "cnn":
        return CNN(1, cfg.cnn_channels, 10, dims=2, pool="max", global_pool=None, input_size=28)
    return MLP((784, cfg.mlp_hidden, 10))


def outputs(model: torch.nn.Module, x: torch.Tensor) -> dict[str, np.ndarray]:
    """Logits (N, 10) and penultimate features (N, D) for the OOD detectors."""
    if isinstance(model, CNN):  # its forward is head(embedding(x)): one pass gives both
        return classifier_outputs(model, x, "embedding", head=model.head)
    return classifier_outputs(model, x, "hidden")


def ood_evidence(model, splits, learned, animals, cfg: DecisionConfig, seed: int) -> tuple[str, float]:
    """The OOD detector fitted on the training digits the model ``learned`` from and chosen on
    validation digits against ``animals[0]``, and its AUROC on test digits against ``animals[1]``
    (fresh data: the chosen detector's score is not the best of several on the same data)."""
    detectors = fit_detectors(
        outputs(model, splits.x_train[learned])["features"],
        splits.y_train[learned].numpy(),
        cfg.knn_k,
        cfg.knn_train,
        seed=seed,
    )
    choose_on, measure_on = animals
    chosen, _ = choose_detector(
        detectors, outputs(model, splits.x_val[: cfg.n_ood]), outputs(model, choose_on)
    )
    scores_in = ood_scores(detectors[chosen], **outputs(model, splits.x_test[: cfg.n_ood]))
    return chosen, auroc(scores_in, ood_scores(detectors[chosen], **outputs(model, measure_on)))


def along_the_curve(errors: list[float], drop: float) -> str:
    """A table cell: the errors at each size, and their relative change over the last step."""
    return f"{', '.join(f'{e:.4f}' for e in errors)} (last step {-drop:+.0%})"


@run_cache
def _data(cfg: DecisionConfig, seeds: tuple[int, ...]):
    """The digits standardized, their shifted validation and test images and the OOD images the
    detector is chosen on and measured on: made once per process, shared by its tasks."""
    split, shift_val, shift_test, pick = seeds
    splits, (mean, std) = standardize(mnist_splits_for(cfg.data, split, flatten=False), in_place=True)
    background = float(splits.x_train.min())  # a blank pixel, after standardization
    shifted_val = jitter(splits.x_val, cfg.use_shift, shift_val, fill=background)  # (N, 1, 28, 28)
    shifted_test = jitter(splits.x_test, cfg.use_shift, shift_test, fill=background)
    # Animal-MNIST, and Fashion-MNIST's test images once fetched: (10000 or 20000, 1, 28, 28)
    animals = (images_to_tensor(ood_pool(), flatten=False) - mean) / std
    order = np.random.default_rng(pick).permutation(len(animals))
    return (
        splits,
        shifted_val,
        shifted_test,
        (animals[order[: cfg.n_ood]], animals[order[cfg.n_ood : 2 * cfg.n_ood]]),
    )


def _seeds(ctx) -> tuple[int, ...]:
    """The seeds of the split, the two shifts and the OOD images' order."""
    return tuple(
        ctx.seed_for(*names) for names in (("split",), ("shift", "val"), ("shift", "test"), ("animals",))
    )


def judge_situation(task, name: str) -> dict:
    """One situation's evidence (a task): the learning curve on the digits and under the shift,
    the largest model's test accuracy, calibration, accuracy under the shift and OOD AUROC."""
    cfg: DecisionConfig = task.cfg
    seeds = tuple(
        task.seed_for(*names) for names in (("split",), ("shift", "val"), ("shift", "test"), ("animals",))
    )
    splits, shifted_val, shifted_test, animals = _data(cfg, seeds)
    kind, share, _ = SITUATIONS[name]
    tag, full = f"{kind}-{share}", len(splits.y_train)
    largest = {"all": full, "small": cfg.small_training_set()}[share]
    sizes = [largest >> k for k in reversed(range(cfg.curve_points))]
    curve = fit_learning_curve(
        lambda n: task.init_model(lambda: build(kind, cfg), tag, str(n)),
        splits,
        sizes,
        cfg.train,
        lambda n: task.training(f"{tag}-{n}"),
        seed=task.seed_for("curve", share),
        epoch_length=full,
        also_on={"shift": (shifted_val, splits.y_val)},
    )
    fit, model = curve.final, curve.final.trainer.model
    probs = torch.softmax(predict(model, splits.x_test).cpu(), dim=1)  # (N, 10)
    chosen, ood_auroc = ood_evidence(model, splits, curve.rows[-1], animals, cfg, task.seed_for("knn", share))
    return {
        "sizes": sizes,
        "val_errors": curve.val_errors,
        "shift_val_errors": curve.errors_on["shift"],
        "accuracy": fit.test["accuracy"],
        "ece": expected_calibration_error(probs, splits.y_test),
        "shift_accuracy": fit.trainer.evaluate((shifted_test, splits.y_test))["accuracy"],
        "detector": chosen,
        "ood_auroc": ood_auroc,
    }


# The measures recorded with their split (the rest by their own names).
SPLIT_MEASURES = {"test_accuracy": ("accuracy", "test"), "val_errors": ("errors", "val")}


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {
    "cnn_all": "good CNN",
    "cnn_small": "CNN on 2% of the data",
    "mlp_all": "MLP for shifted digits",
    "shift_accuracy": measure("accuracy under the shift"),
    "shift_val_errors": measure("validation errors under the shift"),
    "shift_curve_drop": measure("error drop under the shift over the curve's last step"),
}


@experiment(
    name="decision",
    words=WORDS,
    day=5,
    step=6,
    config=DecisionConfig,
    requires=("mnist", "animal-mnist"),
    title="The decision: ship, collect more data, or redesign",
    summary="a learning curve, calibration, shift and OOD evidence turned into a verdict for three models",
    quick={
        **QUICK_SIZES,
        "epochs": 1,
        "cnn_channels": (8, 16),
        "small_fraction": 0.1,
        "curve_points": 2,
        "n_ood": 200,
        "knn_k": 5,
        "knn_train": 1000,
    },
)
def run(ctx) -> None:
    cfg: DecisionConfig = ctx.cfg
    thresholds = {key: getattr(cfg, key) for key in THRESHOLDS}
    judged = ctx.tasks(judge_situation, list(SITUATIONS))  # each situation's curve and evidence a task

    decisions, curves, rows = {}, {}, []
    for name, (kind, share, _) in SITUATIONS.items():
        tag, found = f"{kind}-{share}", judged[name]
        sizes, largest, chosen = found["sizes"], found["sizes"][-1], found["detector"]
        ood_auroc, shift_accuracy = found["ood_auroc"], found["shift_accuracy"]
        evidence = Evidence(
            train_sizes=sizes,
            val_errors=found["val_errors"],
            accuracy=found["accuracy"],
            ece=found["ece"],
            shift_accuracy=shift_accuracy,
            shift_val_errors=found["shift_val_errors"],
            ood_auroc=ood_auroc,
        )
        decisions[name] = decision = decide(evidence, **thresholds)
        curves[name] = {
            "": (sizes, evidence.val_errors),
            "under the shift": (sizes, evidence.shift_val_errors),
        }
        rows.append(
            [
                name,
                largest,
                along_the_curve(evidence.val_errors, decision.curve_drop),
                along_the_curve(evidence.shift_val_errors, decision.shift_curve_drop),
                round(evidence.accuracy, 4),
                round(evidence.ece, 4),
                round(shift_accuracy, 4),
                f"{ood_auroc:.4f} ({chosen})",
                decision.verdict,
                decision.rule,
            ]
        )
        recorded = dict(
            train_size=largest,
            val_errors=evidence.val_errors,
            shift_val_errors=evidence.shift_val_errors,
            curve_drop=decision.curve_drop,
            shift_curve_drop=decision.shift_curve_drop,
            test_accuracy=evidence.accuracy,
            ece=evidence.ece,
            shift_accuracy=shift_accuracy,
            ood_auroc=ood_auroc,
            ood_detector=chosen,
            verdict=decision.verdict,
            rule=decision.rule,
        )
        situation = tag.replace("-", "_")
        for measured, value in recorded.items():
            name, split = SPLIT_MEASURES.get(measured, (measured, None))
            dims = {"situation": situation, **({"split": split} if split else {})}
            ctx.metric(name, value, **dims, better="lower" if measured.endswith("errors") else None)

    ctx.table(
        f"The evidence and the verdict (use: digits off-centre by up to {cfg.use_shift} px, "
        "Animal-MNIST to flag)",
        [
            "situation",
            "training digits",
            "validation error along the curve",
            "validation error under the shift along the curve",
            "test accuracy",
            "ECE",
            "test accuracy under the shift",
            "OOD AUROC (detector)",
            "verdict",
            "rule",
        ],
        rows,
    )
    ctx.table(
        "Why: the rule of evaluate.decide that fired",
        ["situation", "verdict", "rule", "reason"],
        [[n, d.verdict, d.rule, d.reason] for n, d in decisions.items()],
    )
    ctx.table(
        "The requirements of the use, and the diagnosis thresholds (decide's arguments, --set keys)",
        ["key", "value"],
        [[k, v] for k, v in thresholds.items()],
    )
    for name, (_, _, expected) in SITUATIONS.items():
        d = decisions[name]
        ctx.claim(
            f"{name}: {expected}",
            # workshop book §5.7: "Collect more data. The model has the right structure but not
            # enough examples"; "Redesign. ... the architecture mismatches the task". The
            # thresholds that turn evidence into a verdict are biaslab's.
            source="workshop book §5.7 (The decision framework: ship, collect, or redesign); "
            "biaslab's target (the use's thresholds and the situations prepared)",
            kind="finding",
            expected=f"verdict '{expected}'",
            measured=f"{d.verdict} (rule {d.rule}: {d.reason})",
            passed=d.verdict == expected,
            checked_in_quick=False,
        )
    ctx.figure(
        "learning_curves",
        plots.error_vs_data(curves, target=1 - cfg.min_accuracy),
        "Validation error against the number of training digits (each point trained for the same "
        "number of steps), on the digits as they are (solid) and under the use's shift (dashed); "
        "grey: the error the use allows. A curve still falling at its last point says more data "
        "will help.",
    )
    measures = {
        "test accuracy": {n: d.evidence["accuracy"] for n, d in decisions.items()},
        "accuracy under the shift": {n: d.evidence["shift_accuracy"] for n, d in decisions.items()},
        "OOD AUROC": {n: d.evidence["ood_auroc"] for n, d in decisions.items()},
        "ECE": {n: d.evidence["ece"] for n, d in decisions.items()},
    }
    requirements = {
        "test accuracy": (cfg.min_accuracy, ">="),
        "accuracy under the shift": (cfg.min_shift_accuracy, ">="),
        "OOD AUROC": (cfg.min_ood_auroc, ">="),
        "ECE": (cfg.max_ece, "<="),
    }
    ctx.figure(
        "evidence",
        plots.requirement_panels(measures, requirements),
        "The evidence of each situation against the requirements of the use (dashed); a hatched "
        "bar misses its requirement.",
    )
    splits, _, shifted_test, _ = _data(cfg, _seeds(ctx))
    background = float(splits.x_train.min())  # a blank pixel, after standardization
    shown = torch.cat([splits.x_test[:8], shifted_test[:8]])  # (16, 1, 28, 28)
    pixels = ((shown - background) / (shown.max() - background)).numpy().reshape(2, 8, 28, 28)
    ctx.figure(
        "use",
        plots.image_grid(pixels, row_labels=["test", f"in use (≤ {cfg.use_shift} px)"]),
        f"The first eight test digits as MNIST centres them, and as the use brings them: each moved "
        f"by a random offset of up to {cfg.use_shift} pixels along each axis.",
    )
