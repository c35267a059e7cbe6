"""Benchmark - QM9: the same molecules through every inductive bias.

130,831 small organic molecules (up to nine heavy atoms: C, N, O, F) with properties from density
functional theory; the target is the HOMO-LUMO gap in eV (others by ``--set target=...``). Every
model family reads the same molecules through its own prior (``biaslab.nn.molecules``): a table
(counts of atoms and bonds, a Morgan fingerprint; an MLP and gradient-boosted trees), a set of
atoms (Deep Sets), a graph (GCN, GAT, Gilmer's MPNN), all pairs of atoms with bonds as a bias
(a graph Transformer), and 3-D coordinates (an E(3)-invariant EGNN).

One protocol for all (``biaslab.train.molecules``): the same split, targets standardised with
the training rows' statistics only, every training-set size trained for the same number of
passes but at least 3,125 optimizer steps, validation MAE picks the epoch, test MAE in eV is
measured once. Learning curves, MAE against the training-set size on log-log axes, tell the
sample-efficiency story: a stronger prior helps most when data is scarce. Published 2-D
references on the full 110k split: GG-NN 0.107 eV, GG-NN + set2set 0.097 eV (Gilmer et al.
2017), Chemprop D-MPNN ~0.106 eV; chemical accuracy is 0.043 eV.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from biaslab.config import check_range
from biaslab.data.molecule_splits import random_split, scaffold_split
from biaslab.data.molecules import ATOM_FEATURES, BOND_TYPES
from biaslab.data.qm9 import TARGETS, TargetName, load_qm9
from biaslab.errors import ConfigError
from biaslab.evaluate.scaling import fit_power_law
from biaslab.evaluate.symmetry import invariance_error, on_field, random_isometry
from biaslab.hardware import cpu_name
from biaslab.nn.molecules import MOLECULE_MODELS, build_molecule_model
from biaslab.registry import experiment
from biaslab.report import plots_molecules
from biaslab.train.molecules import MoleculeTraining, fit_gradient_boosting, fit_molecule_regressor

TREES = "fingerprint-gbt"
ALL_MODELS = ("bag-mlp", "fingerprint-mlp", TREES, *(m for m in MOLECULE_MODELS if not m.endswith("-mlp")))
THREE_D = ("egnn",)  # reads coordinates; every other model sees only the 2-D graph
FULL_TRAIN = 110_000
SCAFFOLD_TRAIN = 104_000  # 80 % of 130,831, less what whole scaffold groups leave over
REFERENCES = {"GG-NN (Gilmer 2017)": 0.107, "GG-NN + set2set (Gilmer 2017)": 0.097, "Chemprop D-MPNN": 0.106}
CHEMICAL_ACCURACY = 0.043
TARGET_MAE = 0.10


@dataclass(frozen=True)
class QM9Config:
    """The shared training of the neural models; which models, split and training sizes."""

    # 20 passes keep the default within an hour here (measured 60 min; 25 passes: 75 min and up to 11 %
    # lower MAE at 20,000, e.g. MPNN 0.192 -> 0.185, EGNN 0.222 -> 0.199 eV: still improving at
    # the last epoch, so --set epochs=25 or more buys accuracy with time).
    train: MoleculeTraining = MoleculeTraining(epochs=20, batch_size=64, lr=1e-3, schedule="cosine")
    target: TargetName = "gap"
    models: tuple[str, ...] = ALL_MODELS
    # random: 110,000 / 10,000 / rest; scaffold: 80 / 10 / 10 % by Murcko scaffold
    split: Literal["random", "scaffold"] = "random"
    train_sizes: tuple[int, ...] = (1000, 5000, 20000)  # nested subsets of the training split
    val_size: int = 2000  # validation molecules used to pick the epoch (of the 10,000)
    test_size: int | None = None  # test molecules scored (default: the whole test split)
    seeds: int = 2
    hidden: int = 128
    # A smaller training set is repeated to this length per epoch: every size gets at least
    # epochs × epoch_molecules / batch_size = 3,125 optimizer steps, enough for the small sets to
    # peak (MPNN at 1,000: epoch 3 of 15 x 20,000; at 5,000: 0.257 eV after 1,950 steps, 0.230
    # after 4,690, best at ~4,400), and 20,000 gets 20 passes (6,250 steps): equal steps for all
    # (4,690) cost the largest set 0.255 -> 0.294 eV (GCN).
    epoch_molecules: int = 10000
    loss: Literal["l1", "mse"] = "l1"
    gbt_iterations: int = 500

    def __post_init__(self):
        unknown = [m for m in self.models if m not in ALL_MODELS]
        if unknown or not self.models:
            raise ConfigError(
                f"models={','.join(self.models)}: {', '.join(unknown) or 'none given'}; "
                f"choose from {', '.join(ALL_MODELS)}"
            )
        if not self.train_sizes or list(self.train_sizes) != sorted(set(self.train_sizes)):
            raise ConfigError(
                f"train_sizes={','.join(map(str, self.train_sizes))}: distinct sizes in increasing order"
            )
        if self.split == "scaffold" and self.train_sizes[-1] > SCAFFOLD_TRAIN:
            raise ConfigError(
                f"train_sizes={self.train_sizes}: the scaffold split trains on about "
                f"{SCAFFOLD_TRAIN:,} molecules"
            )
        check_range(self, "train_sizes", 10, FULL_TRAIN)
        check_range(self, "val_size", 10, 10_000)
        if self.test_size is not None:
            check_range(self, "test_size", 10, 130_831)
        check_range(self, "seeds", 1, 20)
        check_range(self, "hidden", 8, 4096)
        check_range(self, "epoch_molecules", 1, 10**7)
        check_range(self, "gbt_iterations", 1, 10_000)


@experiment(
    name="qm9",
    day=6,
    step=1,
    config=QM9Config,
    requires=("rdkit", "qm9"),
    title="QM9: the same molecules through every inductive bias",
    summary="HOMO-LUMO gap MAE of tables, trees, sets, graphs, attention and 3-D models; learning curves",
    quick={
        "train_sizes": (300, 1000),
        "val_size": 300,
        "test_size": 2000,
        "seeds": 1,
        "hidden": 32,
        "epochs": 3,
        "epoch_molecules": 1000,
        "gbt_iterations": 50,
    },
    full={
        "train_sizes": (1000, 5000, 20000, FULL_TRAIN),
        "val_size": 10_000,
        "seeds": 3,
        "epochs": 200,
        "epoch_molecules": FULL_TRAIN,
    },
)
def run(ctx) -> None:
    cfg: QM9Config = ctx.cfg
    device = torch.device(ctx.device)
    ctx.metric(device=str(device), hardware=_hardware(device))

    # 1. Data: every molecule as a graph (cached), the split, and the tabular views.
    data = load_qm9(progress=ctx.progress is not False)  # a bar on a terminal only
    y = data.target(cfg.target)
    split = _split(data, cfg, ctx.seed_for("split"))
    split = split.subsample(val=cfg.val_size, test=cfg.test_size, seed=ctx.seed_for("evaluation rows"))
    if cfg.train_sizes[-1] > len(split.train):
        raise ConfigError(
            f"train_sizes={cfg.train_sizes}: the {cfg.split} split has {len(split.train)} training molecules"
        )
    skipped = data.skipped
    ctx.metric(
        molecules=len(data), skipped={k: len(v) for k, v in skipped.items()}, test_molecules=len(split.test)
    )
    views = {
        "bag-mlp": data.bags(),
        "fingerprint-mlp": data.fingerprints(),  # uint8 bits; batches convert their rows to float
    }
    views[TREES] = views["fingerprint-mlp"]

    # 2. Every model, training size and seed through the one protocol.
    results: dict[str, dict[int, list]] = {m: {n: [] for n in cfg.train_sizes} for m in cfg.models}
    fits, unit = [], TARGETS[cfg.target].unit
    for model_name in cfg.models:
        for n in cfg.train_sizes:
            for seed in range(cfg.seeds):
                subset = split.subsample_train(n, ctx.seed_for("subset", seed))  # nested over n
                fit = _fit(ctx, cfg, model_name, data, subset, y, views, seed, n, device)
                results[model_name][n].append(fit)
                scores = {"test_mae": fit.test_mae, "val_mae": fit.val_mae, "train_mae": fit.train_mae}
                fits.append(
                    {
                        "model": model_name,
                        "train_size": n,
                        "seed": seed,
                        **scores,
                        "epochs": fit.epochs,
                        "best_epoch": fit.best_epoch,
                    }
                )
                ctx.timing(**{f"{model_name}_n{n}_s{seed}_train": fit.train_seconds})
                ctx.echo(f"  {model_name:16s} n={n:<6d} seed {seed}: test MAE {fit.test_mae:.4f} {unit}")
    ctx.metric(fits=fits)

    _report(ctx, cfg, results, skipped, split, device)


def _split(data, cfg: QM9Config, seed: int):
    if cfg.split == "random":
        return random_split(
            len(data), min(FULL_TRAIN, len(data) - 2 * 10), min(10_000, len(data) // 10), seed
        )
    return scaffold_split(data.scaffold, (0.8, 0.1, 0.1), seed)


def _fit(ctx, cfg: QM9Config, name: str, data, split, y, views, seed: int, n: int, device):
    tag = f"{name}-n{n}-s{seed}"
    if name == TREES:
        return fit_gradient_boosting(views[TREES], split, y, ctx.seed_for(tag), cfg.gbt_iterations)
    features = views.get(name)
    model = ctx.init_model(
        lambda: build_molecule_model(
            name,
            len(ATOM_FEATURES),
            len(BOND_TYPES),
            cfg.hidden,
            feature_dim=0 if features is None else features.shape[1],
        ),
        tag,
    )
    fit = fit_molecule_regressor(
        model, data, split, y, cfg.train, ctx.training(tag), features=features, loss=cfg.loss,
        repeat_to=cfg.epoch_molecules,
    )  # fmt: skip
    if name in THREE_D and seed == 0 and n == cfg.train_sizes[-1]:
        # A random rotation-reflection (det −1) and translation of every molecule's atoms.
        moved = on_field("pos", random_isometry(3, ctx.seed_for("rotation"), det=-1, shift_std=5.0))
        ctx.metric(egnn_invariance_error=invariance_error(model, moved, data.batch(split.test[:64])))
    return fit


def _hardware(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return "Apple GPU (MPS)"
    return f"{cpu_name()}, {torch.get_num_threads()} threads (CPU)"


def _report(ctx, cfg: QM9Config, results, skipped, split, device) -> None:
    unit = TARGETS[cfg.target].unit
    largest = cfg.train_sizes[-1]
    summary = {
        m: {n: (float(np.mean([f.test_mae for f in fits])), float(np.std([f.test_mae for f in fits])))
            for n, fits in by_size.items()}
        for m, by_size in results.items()
    }  # fmt: skip
    laws = {
        m: fit_power_law(cfg.train_sizes, [summary[m][n][0] for n in cfg.train_sizes])
        for m in results
        if len(cfg.train_sizes) >= 2
    }
    rows = []
    for m, by_size in results.items():
        fits = by_size[largest]
        mean, std = summary[m][largest]
        extrapolated = laws[m](FULL_TRAIN) if m in laws and largest < FULL_TRAIN else None
        rows.append([
            m, MOLECULE_MODELS.get(m, "gradient-boosted trees on a Morgan fingerprint"),
            f"{mean:.4f} ± {std:.4f}", None if extrapolated is None else round(float(extrapolated), 4),
            round(laws[m].exponent, 3) if m in laws else None,
            fits[0].parameters, round(float(np.mean([f.train_seconds for f in fits])), 1),
            f"{np.mean([f.best_epoch for f in fits]):g} / {fits[0].epochs}",
        ])  # fmt: skip
    rows.sort(key=lambda r: summary[r[0]][largest][0])
    ctx.table(
        f"Test MAE ({unit}) of the {cfg.target} at {largest:,} training molecules ({cfg.split} split, "
        f"{len(split.test):,} test molecules), mean ± std over {cfg.seeds} seed(s); device {device}",
        ["model", "reads", f"test MAE ({unit})", f"power law at {FULL_TRAIN:,}", "exponent",
         "parameters (trees: nodes)", "train seconds", "best / last epoch (trees: iterations)"],
        rows,
        timing_columns=("train seconds",),
    )  # fmt: skip
    ctx.table(
        f"Learning curves: test MAE ({unit}) by training-set size, mean ± std over seeds, and the mean "
        "epoch whose weights were kept (the last one throughout hints at undertraining)",
        ["model", *(f"n = {n:,}" for n in cfg.train_sizes)],
        [
            [m, *(f"{summary[m][n][0]:.4f} ± {summary[m][n][1]:.4f} (epoch "
                  f"{np.mean([f.best_epoch for f in results[m][n]]):g})" for n in cfg.train_sizes)]
            for m in sorted(results, key=lambda m: summary[m][largest][0])
        ],
    )  # fmt: skip
    ctx.table(
        "Published references (full 110k random split, 2-D graph models) and chemical accuracy",
        ["reference", "gap MAE (eV)"],
        [[k, v] for k, v in REFERENCES.items()] + [["chemical accuracy", CHEMICAL_ACCURACY]],
    )
    ctx.table(
        "Molecules left out, by reason (counted, never dropped silently)",
        ["reason", "molecules", "QM9 indices (first 10)"],
        [[reason, len(ids), ", ".join(map(str, ids[:10]))] for reason, ids in skipped.items()],
    )
    ctx.metric(test_mae={m: {str(n): summary[m][n] for n in cfg.train_sizes} for m in summary})
    ctx.figure(
        "learning_curves",
        plots_molecules.mae_learning_curves(summary, laws, REFERENCES, CHEMICAL_ACCURACY, unit, FULL_TRAIN),
        f"Test MAE of the {cfg.target} against the number of training molecules, log-log, mean ± std over "
        "seeds; dotted: each model's power law extended to the full 110,000; grey: published references "
        "and chemical accuracy.",
    )
    _claims(ctx, cfg, summary, laws)


def _claims(ctx, cfg: QM9Config, summary, laws) -> None:
    largest, smallest = cfg.train_sizes[-1], cfg.train_sizes[0]
    best = {m: summary[m][largest][0] for m in summary}
    graph_models = [m for m in ("gcn", "gat", "mpnn", "transformer") if m in best]
    if "bag-mlp" in best and graph_models:
        winner = min(graph_models, key=best.get)
        ctx.claim(
            "Structure is a useful prior: the best graph model beats an MLP on counts of atoms and bonds",
            source="notes, Day 4 (QM9: inductive biases compared)",
            expected=f"{winner} MAE < bag-mlp MAE at {largest:,} molecules",
            measured=f"{winner} {best[winner]:.4f} vs bag-mlp {best['bag-mlp']:.4f}",
            passed=best[winner] < best["bag-mlp"],
            checked_in_quick=False,
        )
    if TREES in best and "fingerprint-mlp" in best:
        ctx.claim(
            "Trees often win on tables: gradient-boosted trees against an MLP on the same fingerprint",
            source="notes, Day 4 (tabular data)",
            expected="fingerprint-gbt MAE <= fingerprint-mlp MAE",
            measured=f"gbt {best[TREES]:.4f} vs mlp {best['fingerprint-mlp']:.4f}",
            passed=best[TREES] <= best["fingerprint-mlp"],
            checked_in_quick=False,
        )
    if len(cfg.train_sizes) >= 2:
        falling = {m: summary[m][largest][0] < summary[m][smallest][0] for m in summary}
        ctx.claim(
            "More data helps every model: test MAE falls from the smallest to the largest training set",
            source="notes, Day 5 (learning curves)",
            expected=f"MAE at {largest:,} < MAE at {smallest:,} for every model",
            measured=", ".join(m for m, ok in falling.items() if not ok) or "all models",
            passed=all(falling.values()),
            checked_in_quick=False,
        )
    two_d = {m: v for m, v in best.items() if m not in THREE_D}
    if two_d:
        leader = min(two_d, key=two_d.get)
        full = largest >= FULL_TRAIN and cfg.split == "random"
        at_full = two_d[leader] if full else float(laws[leader](FULL_TRAIN)) if leader in laws else None
        ctx.claim(
            f"The best 2-D model reaches <= {TARGET_MAE} eV gap MAE on the full random split "
            "(GG-NN 0.107, Chemprop ~0.106)",
            source="biaslab's target",
            expected=f"<= {TARGET_MAE} at 110,000 training molecules"
            + ("" if full else " (judged in --full only)"),
            measured=f"{leader}: {two_d[leader]:.4f} at {largest:,}"
            + ("" if full or at_full is None else f"; power law at 110,000: {at_full:.4f}"),
            passed=(two_d[leader] <= TARGET_MAE) if full and cfg.target == "gap" else None,
            checked_in_quick=False,
        )  # fmt: skip
    if "egnn_invariance_error" in ctx.metrics:
        error = ctx.metrics["egnn_invariance_error"]
        ctx.claim(
            "The 3-D model is invariant to rotations, reflections and translations of the molecule",
            source="notes, Day 4 (symmetry as a prior); the symmetry verifier",
            expected="relative change < 1e-4 under a random E(3) transformation",
            measured=f"{error:.2e}",
            passed=error < 1e-4,
        )
