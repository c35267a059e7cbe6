"""Day 1 - the workshop book's two-layer MLP on MNIST: 784-256-10, 203,530 parameters, ~97% quickly.

The parameter count is worked out in workshop book §1.3.1 (Counting parameters): (784·256 + 256) +
(256·10 + 10) = 203,530. The accuracy and the time are the book's Day 1 lab step 2:
"Train the same MLP in PyTorch on MNIST, getting roughly 97% test accuracy in under a minute."
"""

from __future__ import annotations

from dataclasses import dataclass

from biaslab.config import check_batch_fits, check_memory, check_range
from biaslab.data.mnist import QUICK_SIZES, MnistSizes, mnist_splits_for
from biaslab.nn import MLP, count_parameters
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierTraining
from biaslab.train.recipes import fit_classifier

NOTES_PARAMETERS = 784 * 256 + 256 + 256 * 10 + 10  # 203,530, as workshop book §1.3.1 prints it
PARAMETERS_SOURCE = "workshop book §1.3.1 (Counting parameters); workshop book, Day 1 lab step 1"
LAB_STEP = "workshop book, Day 1 lab step 2"


@dataclass(frozen=True)
class MnistMLPConfig:
    """The split sizes, the training and the hidden width."""

    data: MnistSizes = MnistSizes()
    # The recipe chosen on the validation split by `benchmarks/mnist_mlp.py --select-recipe`:
    # it reaches the previous recipe's (8 epochs, 25% warm-up, no smoothing) final validation
    # accuracy in 0.77x its training time (3.93 s vs 5.12 s, median of 3 seeds, 2026-11-22).
    train: ClassifierTraining = ClassifierTraining(
        epochs=5, batch_size=256, lr=3e-3, schedule="onecycle", warmup=0.15
    )
    hidden: int = 256
    label_smoothing: float = 0.1  # fraction of each target spread over all classes

    def __post_init__(self):
        check_range(self, "hidden", 1)
        check_range(self, "label_smoothing", 0, 1, "a fraction of each target", open_high=True)
        check_batch_fits(self)
        check_memory(
            f"hidden={self.hidden}, batch_size={self.train.batch_size}",
            self.train.mlp_memory((784, self.hidden, 10)),
            f"the 784-{self.hidden}-10 MLP",
        )


@experiment(
    name="mnist-mlp",
    day=1,
    step=2,
    config=MnistMLPConfig,
    requires=("mnist",),
    title="MNIST with a two-layer MLP",
    summary="the workshop book's 784-256-10 MLP: 203,530 parameters, ~97% test accuracy in a minute",
    quick={**QUICK_SIZES, "epochs": 2},
)
def run(ctx) -> None:
    cfg: MnistMLPConfig = ctx.cfg
    splits = mnist_splits_for(cfg.data, ctx.seed_for("split"), standardize=True)
    model = ctx.init_model(lambda: MLP((784, cfg.hidden, 10)), "mlp")
    fit = fit_classifier(model, splits, cfg.train, ctx.training("mlp"), label_smoothing=cfg.label_smoothing)
    n_params = count_parameters(model)
    best_val = max(r["val_accuracy"] for r in fit.history)
    ctx.metric(parameters=n_params, epochs=len(fit.history), n_train=len(splits.x_train))
    ctx.metric("accuracy", fit.test["accuracy"], split="test")
    ctx.metric("loss", fit.test.get("nll", fit.test["loss"]), split="test")  # plain cross-entropy
    ctx.metric("accuracy", best_val, stat="best", split="val")
    ctx.claim(
        "The 784-256-10 MLP has exactly 203,530 parameters",
        source=PARAMETERS_SOURCE,
        expected=f"{NOTES_PARAMETERS:,}",
        measured=n_params,
        passed=n_params == NOTES_PARAMETERS if cfg.hidden == 256 else None,
        kind="check",
        printed="203\\,530",
    )
    ctx.claim(
        "It reaches roughly 97% test accuracy",
        source=f"{LAB_STEP}; biaslab's target (the book's 'roughly 97%' read as at least 0.97)",
        expected="test accuracy >= 0.97",
        measured=fit.test["accuracy"],
        passed=fit.test["accuracy"] >= 0.97,
        checked_in_quick=False,
        kind="finding",
        printed="roughly 97% test accuracy",
    )
    ctx.timing(train_seconds=fit.train_time)
    ctx.claim(
        "... in under a minute of training",
        source=f"{LAB_STEP}; biaslab's target (the minute timed on the machine that runs the lab)",
        expected="the budget: training time < 60 s",
        measured=round(fit.train_time, 2),
        passed=fit.train_time < 60,
        timing=True,
        kind="finding",
        printed="in under a minute",
    )
    ctx.figure(
        "learning_curves",
        plots.learning_curves(
            {"MLP 784-256-10": fit.history}, keys=("train_loss", "val_loss", "val_accuracy")
        ),
        "Training and validation loss, and validation accuracy, per epoch. The test set is "
        "evaluated once, after training.",
    )
