"""Day 4 - physics in the loss: a pendulum's dynamics learned with and without energy conservation.

An MLP f_θ(θ, ω) learns a pendulum's vector field (dθ/dt, dω/dt) from states and their measured
derivatives (``physics.systems``). The plain model fits the data only; the constrained one adds
the physics term γ Ω of the ML-for-physics slides ('Plug the physics into the AI: constraints'):
the mean squared rate dH/dt = ∇H · f_θ at which the learned field
changes the pendulum's energy H (``physics.constraints``), zero for the true dynamics, evaluated
on unlabelled states that reach beyond the training energies (it needs no labels). Both are
rolled out by RK4 from held-out initial states for many periods; the energy of a good model stays
put, a model that only fits the data drifts. Measured: the derivative error on held-out states,
inside the training energies and beyond them (extrapolation), the energy drift of long rollouts,
and both against the number of training states (data efficiency). The penalty is no cure beyond
the data: the field f = 0 conserves the energy too, so where no data hold the field's speed the
penalty can slow it; the lab measures that speed against the true pendulum's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from biaslab.caches import run_cache
from biaslab.config import check_batch_fits, check_range, smallest_training_set
from biaslab.nn import MLP
from biaslab.physics.constraints import conservation_penalty, dynamics_step
from biaslab.physics.systems import Pendulum, rollout
from biaslab.records import measure
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import LossTraining

MODELS = ("plain", "energy-conserving")
SCALARS = ("inside_mse", "beyond_mse", "beyond_speed", "drift", "rate")  # each fit's, in the table's order
SLIDE = "ML-for-physics slides, 'Plug the physics into the AI: constraints'"
PENALTY = r"\gamma \Omega(\hat{y}, \Phi)"  # the slide's J(w) = Loss + λ‖w‖² + γΩ(ŷ, Φ)
DRIFT_TOLERANCE = 0.05  # the relative energy change a conserving model may show by the rollout's end


@dataclass(frozen=True)
class PhysicsLossConfig:
    """The training states, the field's training, the penalty's weight and the rollouts."""

    train: LossTraining = LossTraining(epochs=300, batch_size=32, lr=3e-3, schedule="onecycle")
    train_sizes: tuple[int, ...] = (32, 128, 512)  # training states; the largest is the headline
    train_energy: float = 0.5  # training states' energies up to this share of g L (the horizontal)
    beyond_energy: float = 0.9  # held-out states beyond the training energies, up to this share
    noise: float = 0.05  # standard deviation of the noise on the measured derivatives
    weight: float = 1.0  # γ, the conservation penalty's weight
    collocation: int = 2000  # unlabelled states the penalty reads, energies up to beyond_energy
    hidden: int = 64
    n_test: int = 1000
    rollout_states: int = 16
    rollout_seconds: float = 20.0
    dt: float = 0.01

    def __post_init__(self):
        check_range(self, "train_sizes", 8, 1_000_000)
        check_range(self, "train_energy", 0.0, 1.0, "a share of the energy g L", open_low=True)
        check_range(self, "beyond_energy", self.train_energy, 2.0, "above train_energy", open_low=True)
        check_range(self, "noise", 0.0, 10.0)
        check_range(self, "weight", 0.0, 1e6)
        check_range(self, "hidden", 2, 4096)
        check_range(self, "collocation", 1, 10_000_000)
        check_range(self, "n_test", 10, 1_000_000)
        check_range(self, "rollout_states", 1, 10_000)
        check_range(self, "rollout_seconds", 0.0, 10_000.0, open_low=True)
        check_range(self, "dt", 0.0, 1.0, open_low=True)
        check_batch_fits(self)

    def training_set(self) -> tuple[int, str]:
        return smallest_training_set(self.train_sizes)


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {
    "plain": "plain field",
    "energy_conserving": "energy-conserving field",
    "inside_mse": measure("derivative MSE inside the training energies"),
    "beyond_mse": measure("derivative MSE beyond the training energies"),
    "beyond_speed": measure("speed beyond the training energies over the true speed (median)"),
    "drift": measure("energy drift at the rollouts' end"),
    "rate": measure("mean squared energy rate"),
}


@experiment(
    name="physics-loss",
    words=WORDS,
    day=4,
    step=7,
    config=PhysicsLossConfig,
    title="Physics in the loss: a pendulum learned with energy conservation",
    summary="an MLP learns a pendulum's dynamics with and without an energy-conservation penalty: drift",
    quick={"epochs": 5, "train_sizes": (32, 64), "n_test": 100, "rollout_states": 4, "rollout_seconds": 2.0},
)
def run(ctx) -> None:
    cfg: PhysicsLossConfig = ctx.cfg
    keys = [(model, n) for n in cfg.train_sizes for model in MODELS]
    fits = ctx.tasks(fit_field, keys)
    largest = cfg.train_sizes[-1]
    for (model, n), fit in fits.items():
        for measured in SCALARS:
            ctx.metric(measured, fit[measured], model=model.replace("-", "_"), n=n)
    rows = [[model, n, *(f"{fit[k]:.4g}" for k in SCALARS)] for (model, n), fit in fits.items()]
    ctx.table(
        "Each field by its training states: derivative MSE on held-out states inside and beyond the "
        "training energies, the median speed beyond them over the true pendulum's, median relative "
        "energy change at the end of the rollouts, mean squared energy rate on the held-out states",
        ["model", "training states", "MSE inside", "MSE beyond", "speed beyond", "energy drift", "rate²"],
        rows,
    )
    plain, conserving = fits["plain", largest], fits["energy-conserving", largest]
    ctx.claim(
        f"With energy conservation in the loss the learned pendulum keeps its energy within "
        f"{DRIFT_TOLERANCE:.0%} over {cfg.rollout_seconds:g} s, where the plain fit drifts further",
        source=f"{SLIDE}; biaslab's target (a drift of {DRIFT_TOLERANCE:.0%})",
        printed=PENALTY,
        kind="finding",
        expected=f"energy-conserving drift <= {DRIFT_TOLERANCE} < plain drift ({largest} training states)",
        measured=f"energy-conserving {conserving['drift']:.4f}, plain {plain['drift']:.4f}",
        passed=conserving["drift"] <= DRIFT_TOLERANCE < plain["drift"],
        checked_in_quick=False,
    )
    # Judged first as it was put: a physics prior should help where the data end. It failed on the
    # default (MSE beyond 0.104 penalised against 0.017 plain) and keeps its verdict; the claim
    # after it measures why.
    ctx.claim(
        "The physics term helps beyond the data: a lower derivative error on states more energetic "
        "than any trained on",
        source=f"{SLIDE}; biaslab's target (the slides compare no errors beyond the data)",
        kind="finding",
        expected="energy-conserving MSE beyond < plain MSE beyond",
        measured=f"energy-conserving {conserving['beyond_mse']:.4g}, plain {plain['beyond_mse']:.4g}",
        passed=conserving["beyond_mse"] < plain["beyond_mse"],
        checked_in_quick=False,
    )
    ctx.claim(
        "Why it can fail: conservation alone does not teach the field beyond the data: f = 0 conserves the "
        "energy too, so where no data hold the field's speed the penalty slows it; on states more energetic "
        "than any trained on the penalised field moves slower than the true pendulum, and slower than the "
        "plain fit",
        source=f"{SLIDE}; biaslab's target (a median speed ratio below 1 and below the plain fit's)",
        kind="finding",
        expected="energy-conserving speed beyond / true speed < 1 and < plain's (median over the states)",
        measured=f"energy-conserving {conserving['beyond_speed']:.3f}, plain {plain['beyond_speed']:.3f} "
        f"(derivative MSE beyond: energy-conserving {conserving['beyond_mse']:.4g}, plain "
        f"{plain['beyond_mse']:.4g})",
        passed=conserving["beyond_speed"] < min(1.0, plain["beyond_speed"]),
        checked_in_quick=False,
    )
    sizes = list(cfg.train_sizes)
    pendulum, *_, starts, _ = _states(cfg, ctx.seed_for("states"))
    true_path = _energy_path(pendulum.derivative, pendulum, starts.double(), cfg)  # the same for every fit
    ctx.figure(
        "data_efficiency",
        plots.curves(
            sizes,
            {m: [fits[m, n]["inside_mse"] for n in sizes] for m in MODELS},
            "training states",
            "derivative MSE, held-out states",
            logx=True,
            log_y=True,
        ),
        "Derivative error on held-out states inside the training energies against the number of "
        "training states, for the plain and the energy-conserving field.",
    )
    ctx.figure(
        "energy_in_rollouts",
        plots.curves(
            [round(k * cfg.dt, 6) for k in range(len(true_path))][_shown(cfg)],
            {m: fits[m, largest]["energy_path"] for m in MODELS}
            | {"true pendulum": true_path[_shown(cfg)].tolist()},
            "time (s)",
            "median energy / initial energy",
        ),
        f"Energy along RK4 rollouts of the learned fields ({largest} training states) from held-out "
        "initial states, relative to where each started (median over the states); the true pendulum "
        "keeps 1.",
    )


@run_cache
def _states(cfg: PhysicsLossConfig, seed: int):
    """Training states (the largest set; smaller sets are its prefixes), their noisy derivatives,
    held-out states inside and beyond the training energies, and rollout starts."""
    pendulum = Pendulum()
    top = pendulum.gravity * pendulum.length
    rng = np.random.default_rng(seed)
    x = pendulum.initial_states(cfg.train_sizes[-1], int(rng.integers(2**31)), cfg.train_energy * top)
    noisy = pendulum.derivative(x) + cfg.noise * torch.from_numpy(rng.normal(size=tuple(x.shape)))
    inside = pendulum.initial_states(cfg.n_test, int(rng.integers(2**31)), cfg.train_energy * top)
    beyond = pendulum.initial_states(4 * cfg.n_test, int(rng.integers(2**31)), cfg.beyond_energy * top)
    beyond = beyond[pendulum.energy(beyond) > cfg.train_energy * top][: cfg.n_test]
    starts = pendulum.initial_states(cfg.rollout_states, int(rng.integers(2**31)), cfg.train_energy * top)
    # States without labels where the penalty is evaluated, up to the largest energy asked about.
    unlabelled = pendulum.initial_states(cfg.collocation, int(rng.integers(2**31)), cfg.beyond_energy * top)
    return (
        pendulum,
        x.float(),
        noisy.float(),
        inside.float(),
        beyond.float(),
        starts.float(),
        unlabelled.float(),
    )


def fit_field(task, model: str, n: int) -> dict:
    """One field (plain or energy-conserving) trained on the first ``n`` states (a task): its
    held-out errors, its energy rate, and its rollouts' energy."""
    cfg: PhysicsLossConfig = task.cfg
    pendulum, x, noisy, inside, beyond, starts, unlabelled = _states(cfg, task.seed_for("states"))
    field = task.init_model(lambda: MLP((2, cfg.hidden, cfg.hidden, 2), activation="tanh"), "field")
    weight = cfg.weight if model == "energy-conserving" else 0.0
    step = dynamics_step(pendulum.energy, weight, unlabelled)
    trainer = task.training(f"{model}-{n}").trainer(field, cfg.train, step=step)
    trainer.fit((x[:n], noisy[:n]), val=(inside, pendulum.derivative(inside)))
    field = field.cpu().eval()
    with torch.no_grad():
        inside_mse = float(((field(inside) - pendulum.derivative(inside)) ** 2).mean())
        learned, true = field(beyond), pendulum.derivative(beyond)  # (n, 2) each
        beyond_mse = float(((learned - true) ** 2).mean())
        speed = learned.norm(dim=1) / true.norm(dim=1)  # (n,) over the true pendulum's
    rate = float(conservation_penalty(field, pendulum.energy, inside).detach())
    relative = _energy_path(field, pendulum, starts, cfg)
    return {
        "inside_mse": inside_mse,
        "beyond_mse": beyond_mse,
        "beyond_speed": float(speed.median()),
        "rate": rate,
        "drift": float((relative[-1] - 1).abs()),
        "energy_path": relative[_shown(cfg)].tolist(),
    }


def _energy_path(field, pendulum: Pendulum, starts: torch.Tensor, cfg: PhysicsLossConfig) -> torch.Tensor:
    """The energy along RK4 rollouts of ``field`` from ``starts``, each relative to its start's,
    the median over the starts: (steps + 1,) float64."""
    steps = round(cfg.rollout_seconds / cfg.dt)
    with torch.no_grad():
        path = rollout(field, starts, cfg.dt, steps)  # (steps + 1, S, 2)
    energy = pendulum.energy(path.reshape(-1, 2)).reshape(steps + 1, -1).double()  # (steps + 1, S)
    return (energy / energy[0]).median(dim=1).values


def _shown(cfg: PhysicsLossConfig) -> slice:
    """The rollout steps a figure shows: at most ~200 points a curve."""
    return slice(None, None, max(1, round(cfg.rollout_seconds / cfg.dt) // 200))
