"""Day 2 - flat and sharp minima: the batch size, the sharpness where training ends, and the test.

The lecture notes §3 (Fig. 5): "the noise from small batches acts as implicit regularization,
finding flatter minima that generalize better"; the workshop book §2.5: the noise "acts as
implicit regularization, helping the optimizer escape narrow minima" (Keskar et al. 2017).

One MLP is trained by plain SGD at one learning rate with batch sizes from 16 to 2,048, twice:

- **to the same training loss** (where the lectures' claim stands, and where Keskar et al.
  compared minima): each batch size steps until the loss over the whole training set falls to
  ``target_loss`` (``train.time_to_loss``), and the steps and examples it took are reported;
- **for the same number of epochs** (so a small batch takes many more, noisier steps), a
  separate row: there the large batches have not fitted the training set, so their gap
  (training minus test accuracy) is smaller, not larger, while their test error is higher.

Where each training ends, the sharpness of the training loss is measured: the largest eigenvalue
of its Hessian, by power iteration on Hessian-vector products (``evaluate.sharpness``; H is never
formed). SGD's noise keeps a small-batch run out of narrow valleys, while gradient descent on large
batches sharpens until λ_max nears the stability limit 2/η (Keskar et al. 2017; Cohen et al. 2021).
Measured per batch size: λ_max, the training and test accuracy and loss, the generalisation gap,
and the rank correlations of the batch size with λ_max, the gap and the test error.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from biaslab.caches import run_cache
from biaslab.config import check_range
from biaslab.data.mnist import QUICK_SIZES, MnistSizes, mnist_splits_for
from biaslab.errors import ConfigError
from biaslab.evaluate.sharpness import sharpness
from biaslab.nn import MLP
from biaslab.records import measure
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierTraining, training_without
from biaslab.train.time_to_loss import time_to_loss
from biaslab.train.trainer import accuracy

SHOWN = ("train_accuracy", "test_accuracy", "gap", "train_loss", "test_loss")  # table columns after λ_max
CORRELATION = 0.8  # biaslab's target for the rank correlations
LECTURES = (
    "lecture notes §3 (Training deep networks), Fig. 5; workshop book §2.5 (Stochastic gradient descent)"
)
TARGET = f"biaslab's target (Spearman's ρ >= {CORRELATION})"

BatchTraining = training_without(
    "BatchTraining", ClassifierTraining, batch_size="each training takes one of batch_sizes"
)


@dataclass(frozen=True)
class SharpnessConfig:
    """The digits, the batch sizes, the shared SGD training and the power iteration."""

    data: MnistSizes = MnistSizes(n_train=4096, n_val=1000, n_test=5000)
    # a frozen dataclass, which ruff cannot see through training_without
    train: BatchTraining = BatchTraining(epochs=30, optimizer="sgd", lr=0.05)  # noqa: RUF009
    batch_sizes: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024, 2048)
    hidden: int = 128
    probe: int = 2048  # training digits the Hessian of the training loss is taken on
    iterations: int = 100  # of the power iteration at most
    target_loss: float = 0.1  # the training loss every batch size is trained to, for the equal-loss rows
    max_examples: int = 3_000_000  # each equal-loss run's budget, in gradients of single examples

    def __post_init__(self):
        check_range(self, "batch_sizes", 1, 1_000_000)
        check_range(self, "hidden", 1, 4096)
        check_range(self, "probe", 1, 1_000_000)
        check_range(self, "iterations", 1, 100_000)
        check_range(self, "target_loss", 0, 2.3, "a cross-entropy below chance's ln 10", open_low=True)
        check_range(self, "max_examples", 1)
        size, description = self.data.training_set()
        if max(self.batch_sizes) > size:
            raise ConfigError(
                f"batch_sizes={','.join(map(str, self.batch_sizes))}: each must be <= {size}, the size of "
                f"the training set ({description}); lower the batch sizes or enlarge the training set"
            )


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {
    "sharpness": measure("largest Hessian eigenvalue of the training loss"),
    "test_error": measure("test error"),
    "gap": measure("generalisation gap (training minus test accuracy)"),
    "rank_sharpness": "Spearman correlation of the batch size and the largest Hessian eigenvalue",
    "rank_test_error": "Spearman correlation of the batch size and the test error",
    "rank_gap": "Spearman correlation of the batch size and the generalisation gap",
    "loss": "trained to the same training loss",
    "steps": measure("SGD steps to the training loss"),
    "loss_rank_sharpness": "at the same training loss: Spearman correlation of the batch size and "
    "the largest Hessian eigenvalue",
    "loss_rank_gap": "at the same training loss: Spearman correlation of the batch size and the "
    "generalisation gap",
    "loss_reached": "batch sizes that reached the training loss",
}


@experiment(
    name="sharpness",
    words=WORDS,
    day=2,
    step=6,
    config=SharpnessConfig,
    requires=("mnist",),
    title="Flat and sharp minima: the batch size and the Hessian's largest eigenvalue",
    summary="one MLP trained by SGD with batches of 16 to 2,048 to the same training loss, and for equal "
    "epochs: λ_max of the Hessian where training ends, the generalisation gap and the test error",
    quick={
        **QUICK_SIZES,
        "epochs": 1,
        "batch_sizes": (32, 256),
        "probe": 256,
        "iterations": 10,
        "target_loss": 1.5,
        "max_examples": 20_000,
    },
)
def run(ctx) -> None:
    cfg: SharpnessConfig = ctx.cfg
    sizes = list(cfg.batch_sizes)
    equal_loss(ctx, cfg, sizes)
    equal_epochs(ctx, cfg, sizes)


def equal_loss(ctx, cfg: SharpnessConfig, sizes: list[int]) -> None:
    """Each batch size trained to the same training loss: the lectures' claim, judged there."""
    fits = ctx.tasks(fit_to_loss, sizes)
    reached = [b for b in sizes if fits[b]["reached"]]
    for b in sizes:  # trained to the same loss
        ctx.metric("sharpness", fits[b]["sharpness"], at="loss", batch=b)
        ctx.metric("gap", fits[b]["gap"], at="loss", batch=b, better="lower")
        ctx.metric("steps", fits[b]["steps"], at="loss", batch=b)
    ctx.table(
        f"Trained to a training loss of {cfg.target_loss:g} (plain SGD, learning rate {cfg.train.lr:g}, at "
        f"most {cfg.max_examples:,} examples each): the steps and examples it took, the largest Hessian "
        "eigenvalue of the training loss there, accuracies and the generalisation gap",
        ["batch size", "reached", "steps", "examples", "λ_max", *SHOWN[:3]],
        [
            [
                b,
                "yes" if f["reached"] else f"no (loss {f['train_loss']:.3f})",
                f["steps"],
                f"{f['examples']:,}",
                f"{f['sharpness']:.4g}",
                *(f"{f[k]:.4f}" for k in SHOWN[:3]),
            ]
            for b, f in fits.items()
        ],
    )
    lam, gap = ([fits[b][k] for b in reached] for k in ("sharpness", "gap"))
    rho_sharp, rho_gap = (_rank(reached, v) if len(reached) > 2 else float("nan") for v in (lam, gap))
    ctx.metric(loss_rank_sharpness=rho_sharp, loss_rank_gap=rho_gap, loss_reached=len(reached))
    where = f"{len(reached)} of {len(sizes)} batch sizes reached the loss {cfg.target_loss:g}"
    ctx.claim(
        "At the same training loss, larger batches end in sharper minima: the batch size and the "
        "Hessian's largest eigenvalue rise together",
        source=f"{LECTURES}; Keskar et al. 2017; {TARGET}",
        kind="finding",
        expected=f"every batch size reaches the loss; Spearman correlation of batch size and λ_max >= "
        f"{CORRELATION}",
        measured=f"{rho_sharp:.3f} ({where}; λ_max {lam[0]:.3g} at batch {reached[0]}, {lam[-1]:.3g} at "
        f"{reached[-1]})"
        if reached
        else where,
        passed=len(reached) == len(sizes) and rho_sharp >= CORRELATION,
        checked_in_quick=False,
    )
    ctx.claim(
        "... and generalise worse: at the same training loss the generalisation gap rises with the "
        "batch size",
        source=f"{LECTURES}; Keskar et al. 2017; {TARGET}",
        kind="finding",
        expected=f"every batch size reaches the loss; Spearman correlation of batch size and the gap "
        f"(training minus test accuracy) >= {CORRELATION}",
        measured=f"{rho_gap:.3f} ({where}; gap {gap[0]:.4f} at batch {reached[0]}, {gap[-1]:.4f} at "
        f"{reached[-1]})"
        if reached
        else where,
        passed=len(reached) == len(sizes) and rho_gap >= CORRELATION,
        checked_in_quick=False,
    )


def equal_epochs(ctx, cfg: SharpnessConfig, sizes: list[int]) -> None:
    """Each batch size trained for the same epochs: its own rows, said to be that."""
    fits = ctx.tasks(fit_batch, sizes)
    for b, fit in fits.items():
        ctx.metric("sharpness", fit["sharpness"], batch=b)
        ctx.metric("error", fit["test_error"], batch=b, split="test")
        ctx.metric("gap", fit["gap"], batch=b, better="lower")
    ctx.table(
        f"Where each training ends ({cfg.train.epochs} epochs of plain SGD, learning rate {cfg.train.lr:g}): "
        "the largest Hessian eigenvalue of the training loss, accuracies and losses, the generalisation "
        f"gap (training minus test accuracy); 2/η = {2 / cfg.train.lr:g} is gradient descent's limit",
        ["batch size", "λ_max", "training accuracy", "test accuracy", "gap", "training loss", "test loss"],
        [[b, f"{f['sharpness']:.4g}", *(f"{f[k]:.4f}" for k in SHOWN)] for b, f in fits.items()],
    )
    lam = [fits[b]["sharpness"] for b in sizes]
    err = [fits[b]["test_error"] for b in sizes]
    gap = [fits[b]["gap"] for b in sizes]
    rho_sharp, rho_test = _rank(sizes, lam), _rank(sizes, err)
    ctx.metric(rank_sharpness=rho_sharp, rank_test_error=rho_test, rank_gap=_rank(sizes, gap))
    ctx.claim(
        "At equal epochs (not the same training loss), larger batches end in sharper minima: the batch "
        "size and the Hessian's largest eigenvalue rise together",
        source=f"{LECTURES}; Keskar et al. 2017; {TARGET}",
        kind="finding",
        expected=f"Spearman correlation of batch size and λ_max >= {CORRELATION}",
        measured=f"{rho_sharp:.3f} (λ_max {lam[0]:.3g} at batch {sizes[0]}, {lam[-1]:.3g} at {sizes[-1]})",
        passed=rho_sharp >= CORRELATION,
        checked_in_quick=False,
    )
    ctx.claim(
        "... and their test error rises with the batch size (at equal epochs the large batches have not "
        "fitted the training set: see the gap)",
        source=f"{LECTURES}; Keskar et al. 2017; {TARGET}",
        kind="finding",
        expected=f"Spearman correlation of batch size and test error >= {CORRELATION}",
        measured=f"{rho_test:.3f} (test error {err[0]:.4f} at batch {sizes[0]}, {err[-1]:.4f} at "
        f"{sizes[-1]}; the gap's correlation {_rank(sizes, gap):.3f})",
        passed=rho_test >= CORRELATION,
        checked_in_quick=False,
    )
    ctx.figure(
        "sharpness_by_batch",
        plots.curves(
            sizes, {"λ_max": lam}, "batch size", "largest Hessian eigenvalue", logx=True, log_y=True
        ),
        f"The largest eigenvalue of the training loss's Hessian where each training ends, against the batch "
        f"size ({cfg.train.epochs} epochs each).",
    )
    ctx.figure(
        "error_by_batch",
        plots.curves(
            sizes,
            {"test error": err, "generalisation gap": gap},
            "batch size",
            "share of digits",
            logx=True,
        ),
        "Test error and the generalisation gap (training minus test accuracy) against the batch size.",
    )


def _rank(x, y) -> float:
    # imported on use: scipy.stats takes half a second to import, and every biaslab command imports every lab
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


@run_cache
def _splits(cfg: SharpnessConfig, seed: int):
    return mnist_splits_for(cfg.data, seed, standardize=True)


def fit_batch(task, batch_size: int) -> dict:
    """The MLP trained with one batch size (a task): λ_max where it ends, its accuracies and losses."""
    cfg: SharpnessConfig = task.cfg
    splits = _splits(cfg, task.seed_for("split"))
    model = task.init_model(lambda: MLP((784, cfg.hidden, 10)), "mlp")  # the same weights for every batch
    trainer = task.training(f"batch-{batch_size}").trainer(
        model, cfg.train.training(batch_size=batch_size), metrics={"accuracy": accuracy}
    )
    trainer.fit((splits.x_train, splits.y_train))
    train = trainer.evaluate((splits.x_train, splits.y_train))
    test = trainer.evaluate((splits.x_test, splits.y_test))
    return _where_it_ends(model, splits, train, test, task)


def _where_it_ends(model, splits, train: dict, test: dict, task) -> dict:
    """λ_max of the training loss where a training ended, beside its accuracies and losses."""
    cfg: SharpnessConfig = task.cfg
    model = model.cpu().eval()
    probe = (splits.x_train[: cfg.probe], splits.y_train[: cfg.probe])
    lam = sharpness(
        model,
        torch.nn.functional.cross_entropy,
        *probe,
        iterations=cfg.iterations,
        generator=task.seed_for("power"),
    )
    return {
        "sharpness": lam,
        "train_accuracy": train["accuracy"],
        "test_accuracy": test["accuracy"],
        "gap": train["accuracy"] - test["accuracy"],
        "train_loss": train["loss"],
        "test_loss": test["loss"],
        "test_error": 1 - test["accuracy"],
    }


@torch.no_grad()
def _evaluate(model, x, y) -> dict:
    """The loss and accuracy of ``model`` on all of ``x`` (N, 784), ``y`` (N,)."""
    logits = model.eval()(x)  # (N, 10)
    return {
        "loss": float(torch.nn.functional.cross_entropy(logits, y)),
        "accuracy": accuracy(logits, y),  # the Trainer's metric, as the equal-epoch rows read it
    }


def fit_to_loss(task, batch_size: int) -> dict:
    """The MLP trained with one batch size until its training loss falls to ``target_loss`` (a
    task): the steps it took, λ_max there, its accuracies and the gap."""
    cfg: SharpnessConfig = task.cfg
    splits = _splits(cfg, task.seed_for("split"))
    model = task.init_model(lambda: MLP((784, cfg.hidden, 10)), "mlp").to(task.device)  # one w₀ for all
    x, y = splits.x_train.to(task.device), splits.y_train.to(task.device)
    run = time_to_loss(
        model,
        x,
        y,
        batch_size=batch_size,
        lr=cfg.train.lr,
        target=cfg.target_loss,
        max_examples=cfg.max_examples,
        seed=task.seed_for("shuffle", str(batch_size)),
    )
    train = _evaluate(model, x, y)
    test = _evaluate(model, splits.x_test.to(task.device), splits.y_test.to(task.device))
    ends = _where_it_ends(model, splits, train, test, task)
    return {"reached": run.reached, "steps": run.steps, "examples": run.examples, **ends}
