"""Day 4 - equivariant networks: what a symmetry built into the architecture saves in data.

Clusters of identical particles in 3-D (``physics.particles``) have a potential energy that is a
sum of Morse pair potentials: it depends only on the distances, so it does not change when the
cluster is rotated, reflected, moved or its particles relabelled. Four models learn it from
examples:

    MLP              the flattened coordinates (B, 3n): no symmetry; it must learn all of them
    Deep Sets        ρ(Σ_i φ(x_i)) of the raw points: permutations built in, rotations not
    pair distances   Σ_{i<j} φ(‖x_i − x_j‖): the physics' own form, E(3) and permutations built in
    EGNN             equivariant message passing on all pairs (Satorras et al. 2021): E(3) and
                     permutations built in, many-body terms possible

The symmetry verifier measures each trained model's invariance error under a random rotation
with translation, a reflection and a permutation of the particles: rounding level where the
architecture has the symmetry, order 1 where it does not. Learning curves (test error against
the number of training clusters) show what the prior saves in data. Every fit takes the same
number of optimizer steps whatever its training size, so that the curves compare data, not
training time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from biaslab.caches import run_cache
from biaslab.config import check_batch_fits, check_range, smallest_training_set
from biaslab.evaluate.symmetry import invariance_error, permute, random_isometry, random_permutation
from biaslab.nn import MLP, DeepSets, count_parameters
from biaslab.nn.geometric import EGNN, PairDistanceNet
from biaslab.physics.particles import Morse, pair_energy, random_clusters
from biaslab.records import measure
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import LossStepsTraining
from biaslab.train.recipes import for_steps

MODELS = ("MLP", "Deep Sets", "pair distances", "EGNN")
INVARIANT = ("pair distances", "EGNN")  # the models with E(3) built in
SYMMETRIES = ("rotation + translation", "reflection", "permutation")
BUILT_IN = {  # the symmetries each architecture has by construction
    "MLP": (),
    "Deep Sets": ("permutation",),
    "pair distances": SYMMETRIES,
    "EGNN": SYMMETRIES,
}
EXACT, BROKEN = 1e-5, 1e-2  # rounding level in float32; order 1


@dataclass(frozen=True)
class EquivarianceConfig:
    """The clusters, the training budget shared by every fit, and the models' widths."""

    # a frozen dataclass, which ruff cannot see through training_without
    train: LossStepsTraining = LossStepsTraining(batch_size=64, lr=1e-2, schedule="onecycle")  # noqa: RUF009
    steps: int = 3000  # optimizer steps of every fit, whatever its training size
    train_sizes: tuple[int, ...] = (64, 256, 1024, 4096)  # training clusters; the largest is the headline
    particles: int = 6
    n_test: int = 2000
    hidden: int = 64  # the MLP's, Deep Sets' and the pair model's width; the EGNN's is half
    egnn_layers: int = 3

    def __post_init__(self):
        check_range(self, "steps", 1, 10_000_000)
        check_range(self, "train_sizes", 2, 10_000_000)
        check_range(self, "particles", 2, 64)
        check_range(self, "n_test", 10, 10_000_000)
        check_range(self, "hidden", 2, 4096)
        check_range(self, "egnn_layers", 1, 32)
        check_batch_fits(self)

    def training_set(self) -> tuple[int, str]:
        return smallest_training_set(self.train_sizes)


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {
    "deep_sets": "Deep Sets",
    "pair_distances": "pair-distance model",
    "error": measure("error (MSE / variance)"),
    "seconds": measure("training time (s)"),
}


@experiment(
    name="equivariance",
    words=WORDS,
    day=4,
    step=8,
    config=EquivarianceConfig,
    title="Equivariant networks: E(3) symmetry built in, and the data it saves",
    summary="EGNN and a pair-distance model beside an MLP and Deep Sets on particle energies: "
    "invariance errors, learning curves",
    quick={"steps": 20, "train_sizes": (64, 128), "n_test": 200, "particles": 4},
)
def run(ctx) -> None:
    cfg: EquivarianceConfig = ctx.cfg
    keys = [(model, n) for n in cfg.train_sizes for model in MODELS]
    fits = ctx.tasks(fit_energy, keys)
    sizes, largest = list(cfg.train_sizes), cfg.train_sizes[-1]
    for (model, n), fit in fits.items():
        slug = model.lower().replace(" ", "_")
        ctx.metric("error", fit["test_error"], model=slug, n=n, split="test")
        ctx.timing(**{f"{slug}_n{n}_training": fit["seconds"]})
    ctx.table(
        "Test error (mean squared error over the energy's variance: 1 is predicting the mean) against "
        "the number of training clusters; the parameters and the training time of the largest fit",
        ["model", *(f"{n} clusters" for n in sizes), "parameters", "training (s)"],
        [
            [
                m,
                *(f"{fits[m, n]['test_error']:.4g}" for n in sizes),
                fits[m, largest]["parameters"],
                round(fits[m, largest]["seconds"], 1),
            ]
            for m in MODELS
        ],
        timing_columns=["training (s)"],
    )
    errors = np.array([[fits[m, largest]["invariance"][s] for s in SYMMETRIES] for m in MODELS])
    ctx.table(
        f"Invariance error max|f(Tx) − f(x)| / max|f(x)| of each trained model ({largest} clusters) "
        "on the test clusters",
        ["model", *SYMMETRIES],
        [[m, *(f"{e:.3g}" for e in row)] for m, row in zip(MODELS, errors)],
    )
    exact = {m: max(fits[m, largest]["invariance"].values()) for m in INVARIANT}
    mlp_least = min(fits["MLP", largest]["invariance"].values())
    # A finding, not a check: the EGNN's and the pair model's invariance holds by construction, but
    # that the trained MLP stays order-1 variant is an outcome of its training. The documents name
    # the prior ("Set with translation/rotation equivariance (3D molecules, physical systems with
    # conservation laws) → equivariant networks (SE(3)-Transformers, EGNN)", workshop book §4.7)
    # and define invariance (§4.3); the thresholds are biaslab's.
    ctx.claim(
        "EGNN and the pair-distance model are invariant under rotations, reflections, translations and "
        "permutations to rounding; the MLP under none of them",
        source="workshop book §4.3 (Invariance and equivariance); workshop book §4.7 (Choosing an "
        "architecture: the matching exercise); Satorras et al. 2021; biaslab's target (the errors: "
        f"<= {EXACT:g} rounding level, > {BROKEN:g} order 1)",
        kind="finding",
        expected=f"every error <= {EXACT:g} for EGNN and the pair model; > {BROKEN:g} for the MLP",
        measured=", ".join(f"{m} at most {e:.2g}" for m, e in exact.items())
        + f", MLP at least {mlp_least:.2g}",
        passed=max(exact.values()) <= EXACT and mlp_least > BROKEN,
    )
    smallest = sizes[0]
    best_invariant = min(fits[m, smallest]["test_error"] for m in INVARIANT)
    best_plain = min(fits[m, largest]["test_error"] for m in ("MLP", "Deep Sets"))
    # "sample efficiency matters—often better to build known structure into the architecture"
    # (lecture notes §5); "still outperformed by appropriate IBs in low data regimes" (inductive-bias
    # slides). No document sets a factor of data: the comparison across sizes is biaslab's.
    ctx.claim(
        f"The prior saves data: with {smallest} training clusters an E(3)-invariant model predicts the "
        f"energy better than the MLP and Deep Sets with {largest} ({largest // smallest}x the data)",
        source="lecture notes §5 (Matching architecture to data structure); inductive-bias slides, "
        "'Attention as the most flexible prior possible'; biaslab's target (the sizes compared)",
        kind="finding",
        expected=f"best invariant model's error at {smallest} < best non-invariant model's at {largest}",
        measured=f"{best_invariant:.4g} < {best_plain:.4g}",
        passed=best_invariant < best_plain,
        checked_in_quick=False,
    )
    ctx.figure(
        "learning_curves",
        plots.curves(
            sizes,
            {m: [fits[m, n]["test_error"] for n in sizes] for m in MODELS},
            "training clusters",
            "test error (MSE / variance)",
            logx=True,
            log_y=True,
        ),
        "Test error against the number of training clusters, each fit the same number of optimizer "
        "steps. The models with E(3) invariance built in learn from less data.",
    )
    ctx.figure(
        "invariance_errors",
        plots.heatmap(errors, list(MODELS), SYMMETRIES, log=True, fmt="{:.0e}"),
        "log10 of each trained model's invariance error under each transformation of the test clusters: "
        "rounding level (~1e-7) where the architecture has the symmetry, order 1 where it does not.",
    )
    r, learned = fits["pair distances", largest]["potential"]
    ctx.figure(
        "learned_pair_potential",
        plots.curves(
            r, {"learned φ(r)": learned, "Morse V(r)": Morse()(torch.tensor(r)).tolist()}, "r", "V(r)"
        ),
        "The pair model's learned φ, in the energy's units, against the Morse potential that generated "
        "the energies: the model was given only the totals over the pairs of each cluster.",
    )


@run_cache
def _clusters(cfg: EquivarianceConfig, seed: int):
    """Training clusters (the largest set; smaller sets are its prefixes), test clusters, their
    energies standardized by the training set's mean and standard deviation."""
    rng = np.random.default_rng(seed)
    x = random_clusters(cfg.train_sizes[-1], cfg.particles, int(rng.integers(2**31)))
    x_test = random_clusters(cfg.n_test, cfg.particles, int(rng.integers(2**31)))
    y, y_test = pair_energy(x), pair_energy(x_test)
    mean, std = y.mean(), y.std()
    return x.float(), ((y - mean) / std).float(), x_test.float(), ((y_test - mean) / std).float(), (mean, std)


def _build(model: str, cfg: EquivarianceConfig) -> nn.Module:
    h = cfg.hidden
    if model == "MLP":
        return nn.Sequential(nn.Flatten(), MLP((3 * cfg.particles, h, h, 1), "silu"), nn.Flatten(0))
    if model == "Deep Sets":
        return nn.Sequential(DeepSets(3, h, 1, activation="silu"), nn.Flatten(0))
    if model == "pair distances":
        return PairDistanceNet(h)
    return EGNN(h // 2, cfg.egnn_layers)


def fit_energy(task, model: str, n: int) -> dict:
    """One model trained on the first ``n`` clusters for the shared number of steps (a task): its
    test error, invariance errors, parameters and training time."""
    cfg: EquivarianceConfig = task.cfg
    x, y, x_test, y_test, (mean, std) = _clusters(cfg, task.seed_for("clusters"))
    net = task.init_model(lambda: _build(model, cfg), model.lower().replace(" ", "-"))
    (x_epoch, y_epoch), epochs = for_steps((x[:n], y[:n]), cfg.steps, cfg.train.batch_size)  # equal steps
    trainer = task.training(f"{model}-{n}".replace(" ", "-")).trainer(
        net, cfg.train.training(epochs=epochs), loss_fn=nn.functional.mse_loss
    )
    started = time.perf_counter()
    trainer.fit((x_epoch, y_epoch))
    seconds = time.perf_counter() - started
    net = net.cpu().eval()
    with torch.no_grad():
        test_error = float(((net(x_test) - y_test) ** 2).mean() / y_test.var())
    seed = task.seed_for("transforms")
    transforms = {
        "rotation + translation": random_isometry(3, seed, det=1, shift_std=1.0),
        "reflection": random_isometry(3, seed + 1, det=-1, shift_std=0.0),
        "permutation": permute(random_permutation(cfg.particles, seed + 2), dim=1),
    }
    out = {
        "test_error": test_error,
        "seconds": seconds,
        "parameters": count_parameters(net),
        "invariance": {name: invariance_error(net, t, x_test) for name, t in transforms.items()},
    }
    if model == "pair distances":  # its φ on a grid, in the energy's units: y = (E − mean) / std
        r = torch.linspace(0.7, 3.0, 60)
        with torch.no_grad():
            phi = net.potential(r.reshape(-1, 1)).squeeze(-1).double() * std  # (60,)
        pairs = cfg.particles * (cfg.particles - 1) // 2
        phi = phi + (mean / pairs)  # the mean spread over the pairs
        out["potential"] = (r.tolist(), phi.tolist())
    return out
