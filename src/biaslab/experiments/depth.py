"""Day 2 - depth: why residual connections and normalisation let deep networks train.

MLPs of equal width and 2 to 50 layers (``nn.residual``), each built four ways: a plain stack
σ(W h + b), a residual one h + W σ(h) + b, and residual ones that normalise what each block reads,
h + W σ(Norm(h)) + b with batch norm or layer norm (``nn.normalization``, equal to torch's). Each is
trained on MNIST digits for the same number of Adam steps from PyTorch's default initialisation.
Measured: the training loss after that budget against the depth, the validation accuracy, and
at initialisation the gradient's norm at every layer of the deepest stack (one batch): a plain
stack multiplies the gradient by one Jacobian per layer on the way back, a residual one adds the
identity to each.

What the documents say: lecture notes §3 (Training deep networks), "Deeper networks can represent
more complex functions, but they're harder to train. Gradients must flow backward through many
layers; they can vanish (shrink to zero) or explode (grow unboundedly)", "Gradients can flow
directly through the skip connection", and the modern recipe h' = h + F(Norm(h)) (eq. 3.1), which
"enables training networks with hundreds of layers". The depths, the budget and every threshold
below are biaslab's.

Then the ML-for-physics slides' warning about batch norm ('Regularization: batch normalization'):
it "Works badly for small batch sizes (too much noise)". The normalised residual stacks are trained
again with batches of 2 and of 64 digits for the same epochs: batch norm's statistics come from
the batch itself, layer norm's from each example alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from biaslab.caches import run_cache
from biaslab.config import check_batch_fits, check_range
from biaslab.data.mnist import QUICK_SIZES, MnistSizes, mnist_splits_for
from biaslab.errors import ConfigError
from biaslab.nn.residual import BLOCKS, DeepMLP
from biaslab.records import param
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierStepsTraining
from biaslab.train.recipes import for_steps
from biaslab.train.trainer import accuracy

PROBE = 512  # training digits the gradient at initialisation is measured on
DEEP = "lecture notes §3 (Training deep networks)"


@dataclass(frozen=True)
class DepthConfig:
    """The digits, the depths and width, the training budget shared by every fit."""

    data: MnistSizes = MnistSizes(n_train=10_000, n_val=2000, n_test=2000)
    # a frozen dataclass, which ruff cannot see through training_without
    train: ClassifierStepsTraining = ClassifierStepsTraining(batch_size=128, lr=1e-3)  # noqa: RUF009
    steps: int = 600  # Adam steps of every fit
    depths: tuple[int, ...] = (2, 5, 10, 20, 50)  # layers between the stem and the head
    width: int = 64
    # Batch norm against layer norm at a tiny and a usual batch, the same epochs (examples seen)
    small_batches: tuple[int, ...] = (2, 64)
    batch_depth: int = 10
    batch_epochs: int = 1

    def __post_init__(self):
        check_range(self, "steps", 1, 10_000_000)
        check_range(self, "small_batches", 2, 100_000, "batch sizes (batch norm needs 2 or more)")
        if len(self.small_batches) != 2 or self.small_batches[0] >= self.small_batches[1]:
            raise ConfigError(f"small_batches={self.small_batches}: give two, the smaller first")
        check_range(self, "batch_depth", 1, 1000)
        check_range(self, "batch_epochs", 1, 1000)
        check_range(self, "depths", 1, 1000)
        check_range(self, "width", 1, 4096)
        check_batch_fits(self)


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {
    "plain": "plain stack",
    "residual": "residual stack",
    "residual_batchnorm": "residual + batch norm",
    "residual_layernorm": "residual + layer norm",
    "batch": param("batch {}"),
}


@experiment(
    name="depth",
    words=WORDS,
    day=2,
    step=5,
    config=DepthConfig,
    requires=("mnist",),
    title="Depth: residual connections and normalisation",
    summary="plain, residual, residual + batch norm and residual + layer norm MLPs of 2 to 50 layers: "
    "loss after a fixed budget, the gradient per layer at initialisation",
    quick={
        **QUICK_SIZES,
        "steps": 10,
        "depths": (2, 8),
        "width": 16,
        "small_batches": (2, 16),
        "batch_depth": 2,
    },
)
def run(ctx) -> None:
    cfg: DepthConfig = ctx.cfg
    depths, deepest = list(cfg.depths), max(cfg.depths)
    fits = ctx.tasks(fit_stack, [(block, d) for d in depths for block in BLOCKS])
    for (block, d), fit in fits.items():
        slug = _slug(block)
        ctx.metric("loss", fit["train_loss"], model=slug, depth=d, split="train")
        ctx.metric("accuracy", fit["val_accuracy"], model=slug, depth=d, split="val")
    ctx.table(
        f"Training loss (cross-entropy on all training digits) after {cfg.steps} Adam steps, by depth",
        ["block", *(f"depth {d}" for d in depths)],
        [[b, *(f"{fits[b, d]['train_loss']:.4f}" for d in depths)] for b in BLOCKS],
    )
    ctx.table(
        "Validation accuracy after the same budget, by depth",
        ["block", *(f"depth {d}" for d in depths)],
        [[b, *(f"{fits[b, d]['val_accuracy']:.4f}" for d in depths)] for b in BLOCKS],
    )
    shallow = min(depths, key=lambda d: abs(d - 5))  # the depth nearest 5
    plain = {d: fits["plain", d]["train_loss"] for d in depths}
    ctx.claim(
        f"A plain MLP gets harder to train as it deepens: after the same budget its training loss at depth "
        f"{deepest} is above its loss at depth {shallow}",
        source=f"{DEEP}; biaslab's target (the depths compared after one shared budget)",
        expected=f"plain loss at depth {deepest} > plain loss at depth {shallow}",
        measured=f"{plain[deepest]:.4f} vs {plain[shallow]:.4f}",
        passed=plain[deepest] > plain[shallow],
        checked_in_quick=False,
        kind="finding",
    )
    normed = {b: fits[b, deepest]["train_loss"] for b in ("residual + batch norm", "residual + layer norm")}
    ctx.claim(
        f"Residual connections with normalisation train at depth {deepest}: each reaches at most half the "
        "plain stack's training loss",
        source=f"{DEEP}, eq. 3.1; He et al. 2016; biaslab's target (at most half the plain loss)",
        expected=f"residual + batch norm and residual + layer norm loss <= 0.5 x plain loss, depth {deepest}",
        measured=", ".join(f"{b} {v:.4f}" for b, v in normed.items()) + f", plain {plain[deepest]:.4f}",
        passed=max(normed.values()) <= 0.5 * plain[deepest],
        checked_in_quick=False,
        kind="finding",
    )
    ratio = {b: fits[b, deepest]["gradient_ratio"] for b in BLOCKS}
    ctx.claim(
        f"At initialisation the plain stack's gradient vanishes toward the input: at depth {deepest} the "
        "first layer's gradient norm is under 1% of the last layer's; with residual connections and layer "
        "norm it stays within a factor 10",
        source=f"{DEEP}; biaslab's target (the ratios 0.01 and [0.1, 10])",
        expected="first / last layer gradient norm: plain < 0.01; residual + layer norm in [0.1, 10]",
        measured=", ".join(f"{b} {r:.3g}" for b, r in ratio.items()),
        passed=ratio["plain"] < 0.01 and 0.1 <= ratio["residual + layer norm"] <= 10,
        checked_in_quick=False,
        kind="finding",
    )
    ctx.figure(
        "loss_by_depth",
        plots.curves(
            depths,
            {b: [fits[b, d]["train_loss"] for d in depths] for b in BLOCKS},
            "layers",
            "training loss after the budget",
            logx=True,
            log_y=True,
        ),
        f"Training loss after {cfg.steps} Adam steps against the number of layers, for each kind of block.",
    )
    layers = list(range(1, deepest + 1))
    ctx.figure(
        "gradient_by_layer",
        plots.curves(
            layers,
            {b: fits[b, deepest]["gradient_norms"] for b in BLOCKS},
            "layer (1 = next to the input)",
            "gradient norm at initialisation",
            log_y=True,
        ),
        f"The norm of the loss's gradient with respect to each layer's weights at initialisation, depth "
        f"{deepest}, on {PROBE} training digits.",
    )

    small_batch(ctx, cfg)


def _slug(block: str) -> str:
    """A block's name in metric keys: ``"residual + batch norm"`` -> ``"residual_batchnorm"``."""
    return block.replace(" + ", "_").replace(" ", "")


def _tag(block: str, suffix) -> str:
    """A training's tag: ``"residual + batch norm"``, 10 -> ``"residual-batch-norm-10"``."""
    return f"{block}-{suffix}".replace(" + ", "-").replace(" ", "-")


@run_cache
def _splits(cfg: DepthConfig, seed: int):
    return mnist_splits_for(cfg.data, seed, standardize=True)


def fit_stack(task, block: str, depth: int) -> dict:
    """One stack trained for the shared budget (a task): its gradient per layer at initialisation,
    its training loss and validation accuracy after training."""
    cfg: DepthConfig = task.cfg
    splits = _splits(cfg, task.seed_for("split"))
    model = task.init_model(lambda: DeepMLP(784, cfg.width, depth, 10, block), "stack")
    model.train()  # batch norm reads the probe's own statistics, as in the first training step
    loss = torch.nn.functional.cross_entropy(model(splits.x_train[:PROBE]), splits.y_train[:PROBE])
    gradients = torch.autograd.grad(loss, model.layer_weights())
    norms = [float(g.norm()) for g in gradients]
    (x, y), epochs = for_steps((splits.x_train, splits.y_train), cfg.steps, cfg.train.batch_size)
    trainer = task.training(_tag(block, depth)).trainer(
        model, cfg.train.training(epochs=epochs), metrics={"accuracy": accuracy}
    )
    trainer.fit((x, y))
    train = trainer.evaluate((splits.x_train, splits.y_train))
    val = trainer.evaluate((splits.x_val, splits.y_val))
    return {
        "gradient_norms": norms,
        "gradient_ratio": norms[0] / max(norms[-1], np.finfo(float).tiny),
        "train_loss": train["loss"],
        "val_accuracy": val["accuracy"],
    }


NORMS = ("residual + batch norm", "residual + layer norm")


def fit_batch(task, block: str, batch: int) -> dict:
    """A normalised residual stack trained with batches of ``batch`` digits for the same epochs
    (a task): its validation accuracy (batch norm reading its running statistics, in evaluation)."""
    cfg: DepthConfig = task.cfg
    splits = _splits(cfg, task.seed_for("split"))
    tag = _tag(block, f"batch{batch}")
    model = task.init_model(lambda: DeepMLP(784, cfg.width, cfg.batch_depth, 10, block), tag)
    training = replace(cfg.train.training(epochs=cfg.batch_epochs), batch_size=batch)
    trainer = task.training(tag).trainer(model, training, metrics={"accuracy": accuracy})
    trainer.fit((splits.x_train, splits.y_train))
    return {"val_accuracy": trainer.evaluate((splits.x_val, splits.y_val))["accuracy"]}


def small_batch(ctx, cfg: DepthConfig) -> None:
    """Batch norm and layer norm at a tiny and a usual batch size: batch norm's statistics come
    from the batch itself, two digits' worth at batch 2; layer norm's from each example alone."""
    tiny, usual = cfg.small_batches
    fits = ctx.tasks(fit_batch, [(block, b) for block in NORMS for b in (tiny, usual)])
    drop = {}
    for block in NORMS:
        slug = _slug(block)
        for b in (tiny, usual):
            ctx.metric("accuracy", fits[block, b]["val_accuracy"], model=slug, batch=b, split="val")
        drop[block] = fits[block, usual]["val_accuracy"] - fits[block, tiny]["val_accuracy"]
    ctx.table(
        f"Validation accuracy after {cfg.batch_epochs} epoch(s), depth {cfg.batch_depth}, by batch size",
        ["block", f"batch {tiny}", f"batch {usual}"],
        [[b, fits[b, tiny]["val_accuracy"], fits[b, usual]["val_accuracy"]] for b in NORMS],
    )
    gap = 100 * (drop["residual + batch norm"] - drop["residual + layer norm"])
    # ML-for-physics slides, 'Regularization: batch normalization': "Works badly for small batch
    # sizes (too much noise)". The 2-point criterion is biaslab's.
    ctx.claim(
        "Batch norm works badly for small batch sizes: from the usual batch to a tiny one it loses more "
        "accuracy than layer norm does",
        source="ML-for-physics slides, 'Regularization: batch normalization'; biaslab's target (at least 2 "
        "points more)",
        printed="Works badly for small batch sizes (too much noise)",
        kind="finding",
        expected=f"batch norm's drop from batch {usual} to {tiny} exceeds layer norm's by >= 2 points",
        measured=f"batch norm {100 * drop['residual + batch norm']:+.2f} points, layer norm "
        f"{100 * drop['residual + layer norm']:+.2f} ({gap:+.2f})",
        passed=gap >= 2,
        checked_in_quick=False,
    )
