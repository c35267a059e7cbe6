"""Day 2 - one model, four learning rates, four characteristic learning curves.

The step size of gradient descent, θ ← θ − η ∇L (workshop book §2.3, Definition 2.3; lecture notes
§3, eq. 3.2), decides the curve's shape. The setting
is designed so that all four shapes really appear: Adam (whose steps have size ~η whatever the
gradient's scale, so 1e-1 overshoots), a small training subset (500 images) in which 20% of the
labels are replaced by random ones (memorising them is what hurts the validation loss; the
validation set stays clean), and a fixed budget of 90 steps. Then η = 1e-1 blows the loss up
(diverging), 1e-2 memorises the noisy training set while the validation loss turns up
(overfitting), 1e-3 learns the signal first (healthy), and 1e-4 is still far from a fit when the
budget ends (underfitting). A classifier in
``biaslab.evaluate.curves`` labels each curve from its numbers alone.

What the documents say: workshop book, Day 2 lab step 5 sweeps the learning rate over 10^-1 to
10^-4: "You will see all four characteristic shapes from above" (the four of §2.7, Reading a
learning curve); §2.3, "If η is too small, training is slow. If η is too large,
the steps overshoot and the loss oscillates or diverges." Which rate gives which shape is not in
the book: that pairing is biaslab's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from biaslab.caches import run_cache
from biaslab.config import check_batch_fits, check_memory, check_range
from biaslab.data.mnist import MnistSizes, mnist_splits_for
from biaslab.data.transforms import corrupt_labels
from biaslab.errors import ConfigError
from biaslab.evaluate.curves import classify_curve
from biaslab.nn import MLP
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierTraining, training_without
from biaslab.train.recipes import fit_classifier

SWEEP = "workshop book, Day 2 lab step 5; workshop book §2.7 (Reading a learning curve)"

# The shape biaslab's setting gives each learning rate (the book promises the four shapes, not which
# rate gives which).
EXPECTED = {1e-1: "diverging", 1e-2: "overfitting", 1e-3: "healthy", 1e-4: "underfitting"}


SweepTraining = training_without(
    "SweepTraining", ClassifierTraining, lr="the sweep trains once per value of learning_rates"
)


@dataclass(frozen=True)
class LRSweepConfig:
    """A small, noisy training set (so that over-fitting can show), the training of each rate
    (all keys but ``lr``: one training per value of ``learning_rates``) and the MLP's width."""

    # n_test is not used for any choice: the sweep reads validation curves
    data: MnistSizes = MnistSizes(n_train=500, n_val=2000, n_test=1000)
    # the budget: 90 steps of 50 images (a frozen dataclass, which ruff cannot see through training_without)
    train: SweepTraining = SweepTraining(epochs=9, batch_size=50)  # noqa: RUF009
    learning_rates: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4)
    hidden: int = 256
    label_noise: float = 0.2  # fraction of training labels replaced by random ones

    def __post_init__(self):
        check_range(self, "learning_rates", 0, open_low=True)
        check_range(self, "hidden", 1)
        check_range(self, "label_noise", 0, 1, "the fraction of training labels replaced")
        tags = [f"{lr:g}" for lr in self.learning_rates]  # each names a training: lr{tag}
        if len(set(tags)) < len(tags):
            twice = next(t for t in tags if tags.count(t) > 1)
            raise ConfigError(
                f"learning_rates={','.join(tags)}: each value must differ from the others "
                f"({twice} is given twice; each rate names its own training)"
            )
        check_batch_fits(self)
        check_memory(
            f"hidden={self.hidden}, batch_size={self.train.batch_size}",
            self.train.training().mlp_memory((784, self.hidden, 10)),
            f"the 784-{self.hidden}-10 MLP",
        )


@run_cache
def _splits(cfg: LRSweepConfig, split_seed: int, noise_seed: int):
    """MNIST standardized, a share of the training labels made random: read once per process."""
    splits = mnist_splits_for(cfg.data, split_seed, standardize=True)
    return splits.replace(y_train=corrupt_labels(splits.y_train, cfg.label_noise, 10, seed=noise_seed))


def fit_rate(task, lr: float) -> list[dict]:
    """The MLP trained at one learning rate (a task): its history, epoch by epoch."""
    cfg: LRSweepConfig = task.cfg
    splits = _splits(cfg, task.seed_for("split"), task.seed_for("noise"))
    model = task.init_model(lambda: MLP((784, cfg.hidden, 10)))  # the same weights for every rate
    setup = task.training(f"lr{lr:g}")
    return fit_classifier(
        model, splits, cfg.train.training(lr=lr), setup, test=False, on_divergence="stop"
    ).history


@experiment(
    name="lr-sweep",
    day=2,
    step=4,
    config=LRSweepConfig,
    requires=("mnist",),
    title="Learning rates and the four shapes of a learning curve",
    summary="learning rates 1e-1..1e-4: diverging, overfitting, healthy, underfitting curves",
    quick={"n_train": 200, "n_val": 300, "epochs": 3},
)
def run(ctx) -> None:
    cfg: LRSweepConfig = ctx.cfg
    chance = math.log(10)  # cross-entropy of a uniform guess over 10 digits
    histories, rows = {}, []
    fits = ctx.tasks(fit_rate, cfg.learning_rates)  # each rate's training a task
    for lr in cfg.learning_rates:
        tag, history = f"lr{lr:g}", fits[lr]
        train = [r["train_loss"] for r in history]
        val = [r["val_loss"] for r in history if "val_loss" in r]
        reading = classify_curve(train, val, chance_loss=chance)
        histories[f"η={lr:g}: {reading.shape}"] = history
        expected = EXPECTED.get(lr)
        rows.append(
            [f"{lr:g}", reading.shape, expected or "-", train[-1], val[-1] if val else None, reading.reason]
        )
        rate = {"lr": float(lr)}  # the key spells the rate as the tag does: lr0.1, lr1
        ctx.metric("shape", reading.shape, **rate, key=f"{tag}_shape")
        ctx.metric("loss", train[-1], **rate, stat="final", split="train", key=f"{tag}_final_train_loss")
        ctx.metric(
            "loss", val[-1] if val else None, **rate, stat="final", split="val", key=f"{tag}_final_val_loss"
        )
        if expected is not None:
            ctx.claim(
                f"Learning rate {lr:g} gives the {expected} curve",
                source=f"{SWEEP}; biaslab's target (which rate gives which shape: the book names the "
                "four shapes, not their rates)",
                expected=expected,
                measured=reading.shape,
                passed=reading.shape == expected,
                checked_in_quick=False,
                kind="finding",
            )
    shapes = {r[1] for r in rows}
    ctx.claim(
        "All four characteristic shapes appear",
        source=SWEEP,
        expected=", ".join(sorted(set(EXPECTED.values()))),
        measured=", ".join(sorted(shapes)),
        passed=shapes >= set(EXPECTED.values()),
        checked_in_quick=False,
        kind="finding",
        printed="You will see all four characteristic shapes",
    )
    ctx.table(
        "Curve shapes, as labelled by biaslab.evaluate.classify_curve",
        ["learning rate", "label", "notes", "final train loss", "final val loss", "why"],
        rows,
    )
    ctx.figure(
        "learning_curves",
        plots.sweep_curves(histories, chance=chance),
        f"Training (dashed) and validation (solid) cross-entropy per epoch for each "
        f"learning rate ({cfg.train.optimizer}, {cfg.data.n_train} training images, {cfg.label_noise:.0%} of "
        "their labels random); the legend gives "
        "the label the curve classifier assigned. Grey: the loss of a uniform guess.",
    )
