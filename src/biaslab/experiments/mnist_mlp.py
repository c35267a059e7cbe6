"""Day 1 - the notes' two-layer MLP on MNIST: 784-256-10, 203,530 parameters, ~97% quickly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from biaslab.config import require_positive
from biaslab.data.mnist import mnist_splits
from biaslab.data.transforms import standardize
from biaslab.nn import MLP, count_parameters
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train import TrainConfig
from biaslab.train.recipes import fit_classifier

NOTES_PARAMETERS = 784 * 256 + 256 + 256 * 10 + 10  # 203,530


@dataclass(frozen=True)
class MnistMLPConfig:
    hidden: int = 256
    epochs: int = 8
    batch_size: int = 256
    lr: float = 3e-3
    optimizer: Literal["sgd", "adam", "adamw"] = "adam"
    schedule: Literal["constant", "cosine", "onecycle", "step"] = "onecycle"
    n_val: int = 5000
    n_train: int | None = None  # None: all 55,000 images left after the validation split
    n_test: int | None = None  # None: the full official 10,000-image test set

    def __post_init__(self):
        require_positive(self, "hidden", "epochs", "batch_size", "lr", "n_train", "n_test")


QUICK = {"n_train": 2000, "n_val": 500, "n_test": 1000, "epochs": 2}


def train_mnist_mlp(ctx, cfg, tag: str = "mlp"):
    """Load the splits, build the 784-hidden-10 MLP and train it; shared by Day-1 labs."""
    splits, _ = standardize(mnist_splits(n_val=cfg.n_val, n_train=cfg.n_train, n_test=cfg.n_test,
                                         seed=ctx.seed_for("split")))
    torch.manual_seed(ctx.seed_for(tag, "init"))
    model = MLP((784, cfg.hidden, 10))
    tcfg = TrainConfig(epochs=cfg.epochs, batch_size=cfg.batch_size, lr=cfg.lr,
                       optimizer=cfg.optimizer, schedule=cfg.schedule)
    return model, splits, fit_classifier(ctx, model, splits, tcfg, tag)


@experiment(name="mnist-mlp", day=1, config=MnistMLPConfig, requires=("mnist",),
            title="MNIST with a two-layer MLP",
            summary="the notes' 784-256-10 MLP: 203,530 parameters, ~97% test accuracy in a minute",
            quick=QUICK)
def run(ctx) -> None:
    cfg: MnistMLPConfig = ctx.cfg
    model, splits, fit = train_mnist_mlp(ctx, cfg)
    n_params = count_parameters(model)
    best_val = max(r["val_accuracy"] for r in fit.history)
    ctx.metric(parameters=n_params, test_accuracy=fit.test["accuracy"], test_loss=fit.test["loss"],
               best_val_accuracy=best_val, train_seconds=round(fit.train_time, 2),
               epochs=len(fit.history), n_train=len(splits.x_train))
    ctx.claim("The 784-256-10 MLP has exactly 203,530 parameters", source="notes, Day 1 (MNIST)",
              expected=f"{NOTES_PARAMETERS:,}", measured=n_params,
              passed=n_params == NOTES_PARAMETERS if cfg.hidden == 256 else None)
    ctx.claim("It reaches roughly 97% test accuracy", source="notes, Day 1 (MNIST)",
              expected="test accuracy >= 0.97", measured=fit.test["accuracy"],
              passed=fit.test["accuracy"] >= 0.97, checked_in_quick=False)
    ctx.claim("... in under a minute of training", source="notes, Day 1 (MNIST)",
              expected="training time < 60 s", measured=round(fit.train_time, 2),
              passed=fit.train_time < 60)
    ctx.figure("learning_curves", plots.learning_curves(
        {"MLP 784-256-10": fit.history}, keys=("train_loss", "val_loss", "val_accuracy")),
        "Training and validation loss, and validation accuracy, per epoch. The test set is "
        "evaluated once, after training.")
