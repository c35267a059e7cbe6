"""Day 2 - Adam against plain SGD on the same MLP, from the same initial weights.

SGD takes steps −η∇L (workshop book §2.5, Definition 2.4); Adam scales each coordinate's step by
running estimates of the gradient's first and second moments, bias-corrected (workshop book §2.6,
Adam: momentum and adaptive step sizes). Here the NumPy SGD run of ``manual-backprop`` is set
beside the same 784-256-10 MLP in PyTorch trained with Adam, both starting from identical weights
and plotted on one axis (workshop book, Day 2 lab step 4: "Replace the manual training loop with
PyTorch + Adam and observe the difference"). The lab records no claim: the book promises no outcome.
"""

from __future__ import annotations

from dataclasses import dataclass

from biaslab.caches import run_cache
from biaslab.config import check_batch_fits, check_memory, check_range
from biaslab.data.mnist import QUICK_SIZES, MnistSizes, mnist_splits_for
from biaslab.nn import MLP
from biaslab.records import measure
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.scratch import SGD, TwoLayerMLP
from biaslab.scratch.loop import LoopConfig
from biaslab.train import TrainConfig
from biaslab.train.recipes import fit_classifier, fit_scratch


@dataclass(frozen=True)
class AdamVsSGDConfig:
    """The split sizes, plain SGD's loop (``lr`` is its step size), the MLP's width and Adam's
    learning rate; Adam trains with SGD's epochs and batch size."""

    data: MnistSizes = MnistSizes()
    train: LoopConfig = LoopConfig()
    hidden: int = 256
    adam_lr: float = 1e-3

    def __post_init__(self):
        check_range(self, "hidden", 1)
        check_range(self, "adam_lr", 0, open_low=True)
        check_batch_fits(self)
        # The NumPy MLP trained by SGD, and its copy in PyTorch trained by Adam as run() does.
        check_memory(
            f"hidden={self.hidden}, batch_size={self.train.batch_size}",
            self.train.mlp_memory(784, self.hidden, 10) + self.adam().mlp_memory((784, self.hidden, 10)),
            f"two 784-{self.hidden}-10 MLPs (NumPy and PyTorch)",
        )

    def adam(self) -> TrainConfig:
        """Adam's training: ``adam_lr``, with plain SGD's epochs and batch size."""
        return TrainConfig(
            epochs=self.train.epochs, batch_size=self.train.batch_size, lr=self.adam_lr, optimizer="adam"
        )


def epochs_to(history, key: str, target: float):
    hits = [r["epoch"] for r in history if r.get(key, 0) >= target]
    return hits[0] if hits else None


@run_cache
def _splits(cfg: AdamVsSGDConfig, seed: int):
    return mnist_splits_for(cfg.data, seed, standardize=True)  # read once per process


def fit_optimizer(task, tag: str) -> dict:
    """The MLP trained by plain SGD in NumPy or by Adam in PyTorch (a task), from the same initial
    weights: the NumPy MLP's, copied into torch."""
    cfg: AdamVsSGDConfig = task.cfg
    splits = _splits(cfg, task.seed_for("split"))
    initial = TwoLayerMLP(784, cfg.hidden, 10, seed=task.seed_for("init"))
    if tag == "numpy-sgd":
        fit = fit_scratch(
            initial,
            SGD(initial.params, lr=cfg.train.lr),
            splits.numpy(),
            epochs=cfg.train.epochs,
            batch_size=cfg.train.batch_size,
            setup=task.training(tag),
            seed=task.seed_for("shuffle"),
        )
    else:
        setup = task.training(tag, lr_key="adam_lr")
        fit = fit_classifier(MLP.from_numpy(initial.layers()), splits, cfg.adam(), setup)
    return {"history": fit.history, "test": fit.test["accuracy"]}


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {"epochs_to_97": measure("epochs to 97% validation accuracy")}


@experiment(
    name="adam-vs-sgd",
    words=WORDS,
    day=2,
    step=3,
    config=AdamVsSGDConfig,
    requires=("mnist",),
    title="Adam vs. plain SGD on one axis",
    summary="the same MLP trained with Adam (PyTorch) and plain SGD (NumPy): curves compared",
    quick={**QUICK_SIZES, "epochs": 2},
)
def run(ctx) -> None:
    cfg: AdamVsSGDConfig = ctx.cfg
    fits = ctx.tasks(fit_optimizer, ["numpy-sgd", "torch-adam"])  # each training a task
    sgd_history, sgd_test = fits["numpy-sgd"]["history"], fits["numpy-sgd"]["test"]
    adam_history, adam_test = fits["torch-adam"]["history"], fits["torch-adam"]["test"]
    runs = {"SGD (NumPy, ours)": sgd_history, "Adam (PyTorch)": adam_history}
    e_sgd, e_adam = (epochs_to(h, "val_accuracy", 0.97) for h in runs.values())
    measured = {"sgd": (sgd_test, sgd_history, e_sgd), "adam": (adam_test, adam_history, e_adam)}
    for optimizer, (test, history, epochs) in measured.items():
        ctx.metric("accuracy", test, optimizer=optimizer, split="test")
        first = history[0]["val_accuracy"]  # a key older than the records: the epoch last
        ctx.metric(
            "accuracy",
            first,
            optimizer=optimizer,
            split="val",
            epoch=1,
            key=f"{optimizer}_val_accuracy_epoch1",
        )
        ctx.metric("loss", history[-1]["val_loss"], optimizer=optimizer, stat="final", split="val")
        ctx.metric("epochs_to_97", epochs, optimizer=optimizer, better="lower")
    ctx.figure(
        "curves",
        plots.learning_curves(
            runs, keys=("train_loss", "val_loss", "val_accuracy"), logy=("train_loss", "val_loss")
        ),
        f"Both optimizers from the same initial weights: plain SGD (η = {cfg.train.lr:g}) and "
        f"Adam (η = {cfg.adam_lr:g}), batch {cfg.train.batch_size}.",
    )
