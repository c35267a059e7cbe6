"""Day 5 - explicit regularisers: one over-parameterised network, six ways to keep it from overfitting.

An MLP with about 670,000 weights learns 1,000 MNIST digits: it can fit them perfectly, labels
and noise alike, and its validation loss climbs while its training loss falls to zero. The same
network, from the same initial weights, is trained with plain SGD and no regulariser, with an L2
penalty (weight decay), an L1 penalty, dropout, early stopping, and augmentation (every digit
shifted by up to ``max_shift`` pixels each time it is shown). Each penalty's strength is chosen
on the validation digits from a small grid; the test digits choose nothing.

Measured per training: the train–validation gap (in accuracy and in cross-entropy), the test
accuracy, the weight norm, and how many weights are exactly zero. L1 is taken by its proximal
map after every SGD step (soft thresholding, :mod:`biaslab.train.regularization`), which sets
small weights to exactly zero; the histograms of the first layer's weights show it.

"Early stopping acts like L2" (Bishop 1995; Goodfellow et al. 2016, sec. 7.8) is checked along
the path the weights take: the unregularised training's validation loss epoch by epoch against
its distance from the initial weights ‖w − w₀‖, beside networks trained to the end with an L2
penalty of several strengths at their own distances. The equivalence is derived for gradient
descent from w₀ = 0, so the penalty it names pulls towards the starting weights, (λ/2)‖w − w₀‖²;
weight decay towards 0 with a random w₀ also shrinks the initial weights, and the figure shows
where that puts it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from biaslab.caches import run_cache
from biaslab.config import check_batch_fits, check_range
from biaslab.data.mnist import QUICK_SIZES, MnistSizes, mnist_splits_for
from biaslab.errors import ConfigError
from biaslab.nn import MLP
from biaslab.records import measure
from biaslab.registry import experiment
from biaslab.report import plots, plots_training
from biaslab.train.config import ClassifierTraining
from biaslab.train.invariance import augmented_step, random_shifts
from biaslab.train.recipes import fit_classifier
from biaslab.train.regularization import Proximal, WeightNorms, exact_zeros, weight_norms, weights_of

NAMES = {  # each regulariser's key in the tables, and what its strength is
    "none": "no regulariser",
    "l2": "L2 (weight decay λ)",
    "l1": "L1 (proximal, λ)",
    "dropout": "dropout (p)",
    "early stopping": "early stopping (patience)",
    "augmentation": "augmentation (shift ≤ pixels)",
}
EDGES = np.linspace(-0.15, 0.15, 61)  # the weight histograms' bins (weights beyond fall in the end bins)
PATH_AGREEMENT = 0.15  # biaslab's target: the median relative difference of the two paths' validation losses
L1_ZEROS = 0.10  # biaslab's target: the share of weights L1 sets exactly to zero
BOOK_REGULARIZATION = "workshop book §4.2 (Constraints and regularization)"


@dataclass(frozen=True)
class RegularizationConfig:
    """The digits, the network, the shared SGD training and each regulariser's grid of strengths."""

    data: MnistSizes = MnistSizes(n_train=1000, n_val=2000, n_test=10000)
    # patience, monitor and restore_best are the early-stopping training's; the others run every epoch
    train: ClassifierTraining = ClassifierTraining(
        epochs=100, batch_size=50, optimizer="sgd", lr=0.1, patience=10
    )
    hidden: tuple[int, ...] = (512, 512)
    l2: tuple[float, ...] = (1e-3, 1e-2, 3e-2)  # weight decay λ: the gradient gains λw
    l1: tuple[float, ...] = (1e-4, 3e-4, 1e-3)  # λ of λ‖w‖₁
    dropout: tuple[float, ...] = (0.2, 0.5)  # after each hidden layer
    max_shift: int = 2  # augmentation: pixels in each direction
    path_l2: tuple[float, ...] = (0.3, 0.1, 0.03, 0.01)  # λ of (λ/2)‖w − w₀‖², the path's points

    def __post_init__(self):
        check_range(self, "hidden", 1, 8192)
        check_range(self, "l2", 0, 10, open_low=True)
        check_range(self, "l1", 0, 1, open_low=True)
        check_range(self, "dropout", 0, 1, "a probability; 1 drops every unit", open_low=True, open_high=True)
        if not self.train.patience:
            raise ConfigError("patience=0: the early-stopping training needs patience >= 1 (epochs)")
        check_range(self, "max_shift", 1, 13, "pixels; a digit is 28 wide")
        check_range(self, "path_l2", 0, 1000, open_low=True)
        if self.train.momentum:
            raise ConfigError(
                f"momentum={self.train.momentum:g}: the proximal L1 and L2 steps follow plain gradient "
                "steps; set momentum=0"
            )
        check_batch_fits(self)


def trainings(cfg: RegularizationConfig) -> list[tuple[str, float]]:
    """Every (regulariser, strength) trained; the L2 path's are ("path", λ)."""
    return [
        ("none", 0.0),
        *(("l2", v) for v in cfg.l2),
        *(("l1", v) for v in cfg.l1),
        *(("dropout", v) for v in cfg.dropout),
        ("early stopping", float(cfg.train.patience)),
        ("augmentation", float(cfg.max_shift)),
        *(("path", v) for v in cfg.path_l2),
    ]


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {
    "none": "no regulariser",
    "l2": "L2",
    "l1": "L1",
    "dropout": "dropout",
    "early_stopping": "early stopping",
    "augmentation": "augmentation",
    "gap": measure("gap (training minus validation accuracy)"),
    "loss_gap": measure("loss gap (validation minus training cross-entropy)"),
    "zeros_share": measure("share of the weights exactly 0"),
    "path_median_difference": "median relative difference of early stopping and L2 along the weight path",
    "path_points": "L2 strengths inside the early-stopping path",
}


@experiment(
    name="regularization",
    words=WORDS,
    day=5,
    step=7,
    config=RegularizationConfig,
    requires=("mnist",),
    title="Regularisers: L2, L1, dropout, early stopping and augmentation on 1,000 digits",
    summary="an over-parameterised MLP on 1,000 digits with each regulariser: the train–validation gap, "
    "test accuracy, weights set to zero by L1, and early stopping against L2 along the weight path",
    quick={
        **QUICK_SIZES,
        "n_train": 500,
        "epochs": 3,
        "l2": (1e-2,),
        "l1": (1e-3,),
        "dropout": (0.5,),
        "path_l2": (0.1,),
        "hidden": (64, 64),
        "patience": 1,
    },
)
def run(ctx) -> None:
    cfg: RegularizationConfig = ctx.cfg
    fits = ctx.tasks(fit_one, trainings(cfg))
    chosen = {kind: _best(fits, kind) for kind in NAMES}  # each regulariser at its best strength
    _table(ctx, fits, chosen)
    none = fits[chosen["none"]]
    for kind, key in chosen.items():
        fit = fits[key]
        slug = kind.replace(" ", "_")
        ctx.metric("accuracy", fit["test_accuracy"], model=slug, split="test")
        ctx.metric("gap", fit["gap"], model=slug, better="lower")  # training minus validation accuracy
        ctx.metric("loss_gap", fit["loss_gap"], model=slug)
        ctx.metric("zeros_share", fit["zeros_share"], model=slug)
    narrower = {
        kind: fits[key]["loss_gap"] < none["loss_gap"] for kind, key in chosen.items() if kind != "none"
    }
    # ML-for-physics slides, 'Regularization': "any modification we make to a learning algorithm
    # that is intended to reduce its generalization error but not its training error". The
    # workshop book §4.2 names L2, L1 and dropout; the slides weight decay, batch normalization,
    # dropout and early stopping. Neither lists augmentation as a regulariser (the slides name it
    # under 'Plug the Physics into the AI' as a way to implement a symmetry).
    ctx.claim(
        "Every regulariser narrows the train–validation gap of an over-parameterised network",
        source=f"ML-for-physics slides, 'Regularization'; {BOOK_REGULARIZATION}; biaslab's target (the "
        "gap in cross-entropy, each regulariser at the strength validation chose)",
        kind="finding",
        expected="each one's validation minus training cross-entropy below no regulariser's "
        f"({none['loss_gap']:.3f})",
        measured=", ".join(
            f"{kind} {fits[key]['loss_gap']:.3f}" for kind, key in chosen.items() if kind != "none"
        )
        + _accuracy_gaps(fits, chosen),
        passed=all(narrower.values()),
        checked_in_quick=False,
    )
    l1 = fits[chosen["l1"]]
    others = {kind: fits[key]["zeros"] for kind, key in chosen.items() if kind != "l1"}
    # workshop book §4.2: "L^1 regularization. R(θ) = ‖θ‖_1. Pulls weights toward zero and tends to
    # make them exactly zero." L2: "Pulls weights toward zero."
    ctx.claim(
        "L1 sets weights exactly to zero; L2, dropout, early stopping and augmentation do not",
        source=f"{BOOK_REGULARIZATION}; Tibshirani 1996; biaslab's target (at least {L1_ZEROS:.0%} of "
        "the weights)",
        kind="finding",
        expected=f"L1: at least {L1_ZEROS:.0%} of the weights exactly 0; every other training: none",
        measured=f"L1 {l1['zeros']:,} of {l1['weights']:,} ({l1['zeros_share']:.1%}); the others "
        + ", ".join(f"{kind} {n}" for kind, n in others.items()),
        passed=l1["zeros_share"] >= L1_ZEROS and not any(others.values()),
        checked_in_quick=False,
    )
    _path_claim(ctx, cfg, fits, chosen)
    _figures(ctx, cfg, fits, chosen)


def _accuracy_gaps(fits: dict, chosen: dict) -> str:
    """What the gap in accuracy says beside the claim on cross-entropy: who does not narrow it."""
    none = fits[chosen["none"]]["gap"]
    wider = [kind for kind, key in chosen.items() if kind != "none" and fits[key]["gap"] >= none]
    if not wider:
        return f"; in accuracy every one narrows it too (none {none:.4f})"
    return f"; in accuracy {', '.join(wider)} do not narrow it (none {none:.4f}; see the table)"


def _best(fits: dict, kind: str) -> tuple[str, float]:
    """The strength of ``kind`` with the highest validation accuracy (the first of equals)."""
    keys = [key for key in fits if key[0] == kind]
    return max(keys, key=lambda k: (fits[k]["val_accuracy"], -keys.index(k)))


def _table(ctx, fits: dict, chosen: dict) -> None:
    rows = []
    for key, fit in fits.items():
        if key[0] == "path":
            continue
        mark = " (chosen)" if key in chosen.values() and len([k for k in fits if k[0] == key[0]]) > 1 else ""
        strength = "" if key[0] == "none" else f"{key[1]:g}"
        rows.append(
            [
                NAMES[key[0]] + mark,
                strength,
                *(f"{fit[k]:.4f}" for k in SHOWN),
                fit["epochs"],
                f"{fit['weight_norm']:.2f}",
                f"{fit['zeros']:,}",
            ]
        )
    ctx.table(
        "Every training: accuracies, the gap (training minus validation accuracy), the validation minus "
        "training cross-entropy, the test accuracy, epochs trained, the weight norm and the weights "
        "exactly 0; each regulariser's strength with the best validation accuracy is marked chosen",
        [
            "training",
            "strength",
            "training accuracy",
            "validation accuracy",
            "gap",
            "loss gap",
            "test accuracy",
            "epochs",
            "weight norm",
            "exactly 0",
        ],
        rows,
    )


SHOWN = ("train_accuracy", "val_accuracy", "gap", "loss_gap", "test_accuracy")


def _path_claim(ctx, cfg: RegularizationConfig, fits: dict, chosen: dict) -> None:
    """Early stopping against L2 towards w₀, compared at equal distance from the initial weights."""
    distance, val_loss = fits[chosen["none"]]["path"]
    rows, differences = [], []
    for lam in cfg.path_l2:
        fit = fits["path", lam]
        inside = distance[0] <= fit["weight_distance"] <= distance[-1]
        along = float(np.interp(fit["weight_distance"], distance, val_loss)) if inside else float("nan")
        difference = abs(along - fit["val_loss"]) / fit["val_loss"] if inside else float("nan")
        if inside:
            differences.append(difference)
        rows.append(
            [
                f"{lam:g}",
                f"{fit['weight_distance']:.3f}",
                f"{fit['val_loss']:.4f}",
                f"{along:.4f}",
                f"{difference:.3f}",
            ]
        )
    median = float(np.median(differences)) if differences else float("nan")
    ctx.metric(path_median_difference=median, path_points=len(differences))
    ctx.table(
        "L2 towards the initial weights, each strength trained to the end, against the unregularised "
        "training at the same distance ‖w − w₀‖ (its validation loss interpolated between epochs; nan where "
        "the distance lies outside its path)",
        [
            "λ",
            "distance from w₀",
            "validation loss (L2)",
            "validation loss (early stopping path)",
            "relative difference",
        ],
        rows,
    )
    # ML-for-physics slides, '...is a form of regularisation': "Early stopping limits the reachable
    # phase space, and is therefore analogous to L2 regularization (weight decay) - Bishop (1995a)
    # and Sjöberg and Ljung (1995)".
    ctx.claim(
        "Early stopping acts like L2: stopping after fewer steps and penalising the distance from the "
        "starting weights more strongly trace the same validation loss along the weight path",
        source="ML-for-physics slides, '...is a form of regularisation'; Bishop 1995; Goodfellow et al. "
        f"2016, sec. 7.8 (eq. 7.43); biaslab's target (a median relative difference <= {PATH_AGREEMENT})",
        kind="finding",
        expected="median relative difference of the validation losses at equal ‖w − w₀‖ <= "
        f"{PATH_AGREEMENT}, over the L2 strengths inside the path (at least 2)",
        measured=f"{median:.3f} over {len(differences)} strengths ("
        + ", ".join(f"λ={r[0]}: {r[4]}" for r in rows)
        + ")",
        passed=len(differences) >= 2 and median <= PATH_AGREEMENT,
        checked_in_quick=False,
    )


def _figures(ctx, cfg: RegularizationConfig, fits: dict, chosen: dict) -> None:
    labels = [NAMES[kind].split(" (")[0] for kind in chosen]
    ctx.figure(
        "accuracies",
        plots.grouped_bars(
            {
                "training": [fits[k]["train_accuracy"] for k in chosen.values()],
                "validation": [fits[k]["val_accuracy"] for k in chosen.values()],
                "test": [fits[k]["test_accuracy"] for k in chosen.values()],
            },
            labels,
            ylabel="accuracy",
        ),
        f"Training, validation and test accuracy of each regulariser at its chosen strength "
        f"({cfg.data.n_train:,} training digits); the gap between the first two bars is the overfitting.",
    )
    ctx.figure(
        "weight_histograms",
        plots_training.weight_histograms(
            EDGES,
            {
                label: (fits[k]["histogram"], fits[k]["first_zeros"], fits[k]["first_weights"])
                for label, k in zip(labels, chosen.values())
            },
        ),
        "The first layer's weights of each training (counts on a log axis; weights beyond "
        f"±{EDGES[-1]:g} fall in the end bins). L1's proximal step sets the small ones exactly to zero.",
    )
    none = fits[chosen["none"]]
    path_fits = [fits["path", lam] for lam in cfg.path_l2]
    decay = [fits[k] for k in fits if k[0] == "l2"]
    ctx.figure(
        "early_stopping_path",
        plots_training.regularisation_paths(
            none["path"],
            {
                "L2 towards w₀, trained to the end": (
                    [f["weight_distance"] for f in path_fits],
                    [f["val_loss"] for f in path_fits],
                    [f"λ={lam:g}" for lam in cfg.path_l2],
                ),
                "weight decay (L2 towards 0)": (
                    [f["weight_distance"] for f in decay],
                    [f["val_loss"] for f in decay],
                    [f"λ={k[1]:g}" for k in fits if k[0] == "l2"],
                ),
            },
            "distance from the initial weights ‖w − w₀‖",
            "validation cross-entropy",
        ),
        "The unregularised training's validation loss epoch by epoch against how far its weights have "
        "moved, and networks trained to the end with an L2 penalty at their own distances. Towards w₀ "
        "the penalty lands on the early-stopping path; weight decay also shrinks the random initial "
        "weights, which moves it far from w₀ without fitting more.",
    )


@run_cache
def _splits(cfg: RegularizationConfig, seed: int):
    return mnist_splits_for(cfg.data, seed, flatten=False)  # (N, 1, 28, 28): shifts need the image


def fit_one(task, kind: str, strength: float) -> dict:
    """The MLP trained with one regulariser at one strength (a task): its accuracies, losses and weights."""
    cfg: RegularizationConfig = task.cfg
    splits = _splits(cfg, task.seed_for("split"))
    dropout = strength if kind == "dropout" else 0.0
    model = task.init_model(lambda: MLP((784, *cfg.hidden, 10), dropout=dropout), "mlp")  # one w₀ for all
    start = [w.detach().clone() for w in weights_of(model)]
    callbacks: list = [WeightNorms(start)]
    keys: dict = {} if kind == "early stopping" else {"patience": 0}
    step = None
    if kind == "l2":
        keys["weight_decay"] = strength
    elif kind == "l1":
        callbacks.append(Proximal("l1", strength))
    elif kind == "path":
        callbacks.append(Proximal("l2", strength, anchor=start))
    elif kind == "augmentation":
        step = augmented_step(partial(random_shifts, max_shift=int(strength)))
    tag = f"{kind}-{strength:g}".replace(" ", "-")
    fit = fit_classifier(
        model, splits, replace(cfg.train, **keys), task.training(tag), callbacks=callbacks, step=step
    )
    train = fit.trainer.evaluate((splits.x_train, splits.y_train))
    val = fit.trainer.evaluate((splits.x_val, splits.y_val))
    zeros, weights = exact_zeros(model)
    first = weights_of(model)[0].detach().cpu().numpy().ravel()
    norm, distance = weight_norms(model, start)  # of the weights kept (early stopping: the best epoch's)
    history = fit.history
    return {
        "train_accuracy": train["accuracy"],
        "val_accuracy": val["accuracy"],
        "test_accuracy": fit.test["accuracy"],
        "train_loss": train["loss"],
        "val_loss": val["loss"],
        "gap": train["accuracy"] - val["accuracy"],
        "loss_gap": val["loss"] - train["loss"],
        "epochs": len(history),
        "weight_norm": norm,
        "weight_distance": distance,
        "zeros": zeros,
        "weights": weights,
        "zeros_share": zeros / weights,
        "histogram": np.histogram(np.clip(first, EDGES[0], EDGES[-1]), EDGES)[0],
        "first_zeros": int((first == 0).sum()),
        "first_weights": first.size,
        "path": ([r["weight_distance"] for r in history], [r["val_loss"] for r in history]),
    }
