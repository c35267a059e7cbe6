"""Benchmark - QM9: the same molecules through every inductive bias.

130,831 small organic molecules (up to nine heavy atoms: C, N, O, F) with properties from density
functional theory; the target is the HOMO-LUMO gap in eV (others by ``--set target=...``). Every
model family reads the same molecules through its own prior (``biaslab.nn.molecules``): a table
(counts of atoms and bonds, a Morgan fingerprint; an MLP and gradient-boosted trees), a set of
atoms (Deep Sets), a graph (GCN, GAT, Gilmer's MPNN), all pairs of atoms with bonds as a bias
(a graph Transformer), and 3-D coordinates (an E(3)-invariant EGNN).

This is ``biaslab compare``'s engine on the QM9 data (``biaslab.comparison.qm9``; the fits are
``biaslab.comparison.qm9_fits``' tasks, the lab holds its config and its report), with the
benchmark's own split, sizes and references: one protocol for every model
(``biaslab.comparison.protocol``): node features, the counts table and the target standardised
with the training rows' statistics only, every training-set size trained for the same number of
passes but at least 3,125 optimizer steps, the epoch with the lowest validation MAE kept, test
MAE in eV measured once, against the mean predictor's. Learning curves, MAE against the
training-set size on log-log axes, tell the sample-efficiency story: a stronger prior helps most
when data is scarce; the validation curve and ``decide`` give each model its verdict (ship,
collect more data, redesign). Published 2-D references on the full 110k split: GG-NN 0.107 eV,
GG-NN + set2set 0.097 eV (Gilmer et al. 2017), Chemprop D-MPNN ~0.106 eV; chemical accuracy is
0.043 eV.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from biaslab.comparison.judged import LEADERBOARD, RECOMMENDATION, recommendation, recommended
from biaslab.comparison.protocol import CandidateResult
from biaslab.comparison.qm9 import QM9_CANDIDATES, judge_by_curves, qm9_candidates
from biaslab.comparison.qm9_fits import FULL_TRAIN, THREE_D, fit_qm9, saved_preparation, split_of
from biaslab.config import check_range
from biaslab.data.qm9 import TARGETS, TargetName
from biaslab.errors import ConfigError
from biaslab.evaluate.scaling import fit_power_law
from biaslab.hardware import device_description
from biaslab.nn.molecules import MOLECULE_MODELS
from biaslab.registry import experiment
from biaslab.report import plots_molecules
from biaslab.train.config import TrainConfig, training_without

TREES = "fingerprint-gbt"
ALL_MODELS = tuple(QM9_CANDIDATES)
SCAFFOLD_TRAIN = 104_000  # 80 % of 130,831, less what whole scaffold groups leave over
REFERENCES = {"GG-NN (Gilmer 2017)": 0.107, "GG-NN + set2set (Gilmer 2017)": 0.097, "Chemprop D-MPNN": 0.106}
CHEMICAL_ACCURACY = 0.043
TARGET_MAE = 0.10

QM9Training = training_without(
    "QM9Training",
    TrainConfig,
    monitor="the protocol keeps the epoch with the lowest validation loss (with loss=l1: the validation MAE)",
    restore_best="the protocol always keeps the best validation epoch",
)


@dataclass(frozen=True)
class QM9Config:
    """The shared training of the neural models; which models, split and training sizes."""

    # 20 passes keep the default near an hour here (measured 61 min on 2 CPU cores). At 20,000 most
    # models keep their last or next-to-last epoch: still improving, so --set epochs=25 or more buys
    # accuracy with time (measured before node features were standardized: 25 passes, 75 min, up
    # to 11 % lower MAE at 20,000).
    train: QM9Training = QM9Training(epochs=20, batch_size=64, lr=1e-3, schedule="cosine")  # noqa: RUF009
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
    # The use's requirement for a "ship" verdict: test MAE in the target's unit (default: biaslab's
    # target of 0.10 eV for the gap; half the mean predictor's MAE for any other target).
    max_error: float | None = None

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
        if self.max_error is not None:
            check_range(self, "max_error", 0.0, float("inf"))

    def requirement(self) -> dict[str, float]:
        """``decide``'s requirement on a model's test MAE."""
        if self.max_error is not None:
            return {"max_error": self.max_error}
        return {"max_error": TARGET_MAE} if self.target == "gap" else {"max_relative_error": 0.5}


@experiment(
    name="qm9",
    day=6,
    step=1,
    config=QM9Config,
    requires=("rdkit", "qm9"),
    title="QM9: the same molecules through every inductive bias",
    summary="HOMO-LUMO gap MAE of tables, trees, sets, graphs, attention and 3-D models; learning curves",
    quick={
        "train_sizes": (150, 400),
        "val_size": 300,
        "test_size": 1000,
        "seeds": 1,
        "hidden": 32,
        "epochs": 2,
        "epoch_molecules": 500,
        "gbt_iterations": 10,
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
    ctx.metric(device=str(device), hardware=device_description(device))

    # 1. Data: QM9 featurised (cached) and the split; each fit builds its molecules' graphs.
    data, split = split_of(cfg, ctx.seed_for("split"), ctx.seed_for("evaluation rows"))
    skipped = data.skipped
    ctx.metric(
        molecules=len(data), skipped={k: len(v) for k, v in skipped.items()}, test_molecules=len(split.test)
    )

    # 2. Every model, training size and seed through the comparison protocol: a task each.
    made = qm9_candidates(cfg.models, cfg.hidden, gbt_iterations=cfg.gbt_iterations, loss=cfg.loss)
    candidates = {c.name: c for c in made}
    keys = [(m, n, seed) for m in candidates for n in cfg.train_sizes for seed in range(cfg.seeds)]
    largest_first = sorted(keys, key=lambda key: -key[1])  # the longest fits first: workers end together
    outcomes, fits, unit = ctx.tasks(fit_qm9, largest_first), [], TARGETS[cfg.target].unit
    for m, n, seed in keys:
        fit = dict(outcomes[m, n, seed])
        fit["candidate"], fit["result"] = candidates[m], CandidateResult.from_scores(fit.pop("scores"))
        if "egnn_invariance_error" in fit:
            ctx.metric(egnn_invariance_error=fit.pop("egnn_invariance_error"))
        fits.append(fit)
        ctx.timing(**{f"{m}_n{n}_s{seed}_train": fit["train_seconds"]})
        ctx.echo(f"  {m:16s} n={n:<6d} seed {seed}: test MAE {fit['test_mae']:.4f} {unit}")
    unseeded = ("result", "candidate", "train_seconds")  # objects, and wall clock (a timing above)
    ctx.metric(fits=[{k: v for k, v in f.items() if k not in unseeded} for f in fits])

    pick = _report(ctx, cfg, fits, skipped, split, device)
    seeds = (ctx.seed_for("subset", 0), ctx.seed_for("split"), ctx.seed_for("evaluation rows"))
    for path, content in saved_preparation(cfg, seeds, list(candidates), pick).items():
        ctx.save_file(path, content)  # with the models each fit saved: what biaslab predict reads
    if pick is not None:
        ctx.echo(
            f"predict new molecules (a table with a smiles column) with {pick}: "
            f"biaslab predict {shlex.quote(str(ctx.run_dir))} NEW.csv"
        )


def _report(ctx, cfg: QM9Config, fits: list[dict], skipped, split, device) -> str | None:
    """The report's tables, figure and claims; returns the recommended model's name."""
    unit = TARGETS[cfg.target].unit
    largest = cfg.train_sizes[-1]
    results = {m: {n: [f for f in fits if f["model"] == m and f["train_size"] == n] for n in cfg.train_sizes}
               for m in dict.fromkeys(f["model"] for f in fits)}  # fmt: skip

    def mean_std(records, key):
        values = [r[key] for r in records]
        return float(np.mean(values)), float(np.std(values))

    summary = {
        m: {n: mean_std(records, "test_mae") for n, records in by_size.items()}
        for m, by_size in results.items()
    }
    laws = {
        m: fit_power_law(cfg.train_sizes, [summary[m][n][0] for n in cfg.train_sizes])
        for m in results
        if len(cfg.train_sizes) >= 2
    }
    judged = judge_by_curves(
        cfg.train_sizes, results, cfg.requirement(), TARGETS[cfg.target].unit, extrapolate_to=FULL_TRAIN
    )
    rows = []
    for m, by_size in results.items():
        records = by_size[largest]
        mean, std = summary[m][largest]
        extrapolated = laws[m](FULL_TRAIN) if m in laws and largest < FULL_TRAIN else None
        decision = judged[m].decision
        rows.append([
            m, MOLECULE_MODELS.get(m, "gradient-boosted trees on a Morgan fingerprint"),
            f"{mean:.4f} ± {std:.4f}",
            None if extrapolated is None else round(float(extrapolated), 4),
            round(laws[m].exponent, 3) if m in laws else None,
            records[0]["parameters"], round(float(np.mean([r["train_seconds"] for r in records])), 1),
            f"{np.mean([r['best_epoch'] for r in records]):g} / {records[0]['epochs']}",
            f"{decision.verdict} (rule {decision.rule})",
        ])  # fmt: skip
    rows.sort(key=lambda r: summary[r[0]][largest][0])
    baseline = mean_std([r for by_size in results.values() for r in by_size[largest]], "baseline_test_mae")[0]
    ctx.metric(
        baseline_test_mae=round(baseline, 6),
        verdicts={m: j.decision.verdict for m, j in judged.items()},
    )
    ctx.table(
        f"{LEADERBOARD}: test MAE ({unit}) of the {cfg.target} at {largest:,} training molecules "
        f"({cfg.split} split, {len(split.test):,} test molecules; the mean predictor's: {baseline:.4f}), "
        f"mean ± std over {cfg.seeds} seed(s); device {device}; each model's verdict against a test MAE of "
        f"{_requirement_text(cfg, unit)}",
        ["model", "reads", f"test MAE ({unit})", f"power law at {FULL_TRAIN:,}", "exponent",
         "parameters (trees: nodes)", "train seconds", "best / last epoch (trees: iterations)", "verdict"],
        rows,
        timing_columns=("train seconds",),
    )  # fmt: skip
    ctx.table(
        f"Learning curves: test MAE ({unit}) by training-set size, mean ± std over seeds, and the mean "
        "epoch whose weights were kept (the last one throughout hints at undertraining)",
        ["model", *(f"n = {n:,}" for n in cfg.train_sizes)],
        [
            [m, *(f"{summary[m][n][0]:.4f} ± {summary[m][n][1]:.4f} (epoch "
                  f"{np.mean([r['best_epoch'] for r in results[m][n]]):g})" for n in cfg.train_sizes)]
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
    sizes = (largest, len(split.val))  # a validation MAE's standard error is over these rows
    sentence, pick = recommendation("regress", judged, sizes=sizes), recommended("regress", judged, sizes[1])
    ctx.table(RECOMMENDATION, ["model", "recommendation"], [[pick.name if pick else "-", sentence]])
    return pick and pick.name


def _requirement_text(cfg: QM9Config, unit: str) -> str:
    requirement = cfg.requirement()
    if "max_error" in requirement:
        return f"<= {requirement['max_error']:g} {unit}"
    return f"<= {requirement['max_relative_error']:g} x the mean predictor's"


def _claims(ctx, cfg: QM9Config, summary, laws) -> None:
    largest, smallest = cfg.train_sizes[-1], cfg.train_sizes[0]
    best = {m: summary[m][largest][0] for m in summary}
    graph_models = [m for m in ("gcn", "gat", "mpnn", "transformer") if m in best]
    if "bag-mlp" in best and graph_models:
        winner = min(graph_models, key=best.get)
        ctx.claim(
            "Structure is a useful prior: the best graph model beats an MLP on counts of atoms and bonds",
            # "Graph or set (molecules, ...) → GNN, DeepSets, point-cloud networks" (workshop book
            # §4.7); QM9 as "a good benchmark for comparing how different inductive biases affect
            # learning on the same underlying data" (lecture notes, Appendix A, unnumbered)
            source="workshop book §4.7 (Choosing an architecture: the matching exercise); lecture notes "
            "§5.3 (Sets and graphs → Deep Sets and GNNs), with Appendix A (The QM9 dataset)",
            kind="finding",
            expected=f"{winner} MAE < bag-mlp MAE at {largest:,} molecules",
            measured=f"{winner} {best[winner]:.4f} vs bag-mlp {best['bag-mlp']:.4f}",
            passed=best[winner] < best["bag-mlp"],
            checked_in_quick=False,
        )
    if TREES in best and "fingerprint-mlp" in best:
        ctx.claim(
            "Trees often win on tables: gradient-boosted trees against an MLP on the same fingerprint",
            # "Heterogeneous tabular features (rows in a database) → MLP or gradient-boosted trees
            # ... trees (XGBoost, LightGBM) frequently beat any neural network" (workshop book §4.7)
            source="workshop book §4.7 (Choosing an architecture: the matching exercise)",
            kind="finding",
            expected="fingerprint-gbt MAE <= fingerprint-mlp MAE",
            measured=f"gbt {best[TREES]:.4f} vs mlp {best['fingerprint-mlp']:.4f}",
            passed=best[TREES] <= best["fingerprint-mlp"],
            checked_in_quick=False,
        )
    if len(cfg.train_sizes) >= 2:
        falling = {m: summary[m][largest][0] < summary[m][smallest][0] for m in summary}
        ctx.claim(
            "More data helps every model: test MAE falls from the smallest to the largest training set",
            # The documents read a learning curve for whether more data would help ("Collect more
            # data ... Cross-validation curves are still rising", workshop book §5.7); that the MAE
            # falls for every model between these two sizes is biaslab's expectation.
            source="workshop book §5.7 (The decision framework: ship, collect, or redesign); "
            "biaslab's target (every model, smallest to largest training set)",
            kind="finding",
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
            source=f"biaslab's target ({TARGET_MAE} eV: the documents give no figure); "
            "Gilmer et al. 2017 (the GG-NN reference)",
            kind="finding",
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
            # invariant by construction, whatever the weights: "Set with translation/rotation
            # equivariance (3D molecules, ...) → equivariant networks (SE(3)-Transformers, EGNN)"
            # (workshop book §4.7)
            source="workshop book §4.7 (Choosing an architecture: the matching exercise); "
            "Satorras et al. 2021; biaslab's target (the tolerance 1e-4)",
            kind="check",
            expected="relative change < 1e-4 under a random E(3) transformation",
            measured=f"{error:.2e}",
            passed=error < 1e-4,
        )
