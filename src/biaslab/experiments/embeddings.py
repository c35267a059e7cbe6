"""Day 1 - embeddings: a learned lookup table, and the structure a task writes into it.

An embedding is a lookup, E[i] = onehot(i) · E (``nn.embedding``; checked here to the last bit).
A model reads two residues a, b modulo a prime p through one shared table and learns (a + b) mod p
from part of the p² pairs; the rest are held out. Nothing tells it that the residues are ordered
or cyclic, yet the sum makes them so. A network that adds modulo p places the residues around
circles, n at the angle 2π f n / p for a few frequencies f (Nanda et al. 2023): on the plane of the
table's dominant frequency (``evaluate.embeddings.cyclic_plane``) the residues follow each other by
a fixed step, and adding k is a turn, so "a is to a + k as b is to b + k" is answered by rotation.
Word2vec's vector offset (Mikolov et al. 2013), which assumes straight lines, is measured beside it,
as is the whole table's nearest-row order. Each measurement is also taken on the table at
initialisation, which has no structure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch

from biaslab.config import check_batch_fits, check_range
from biaslab.errors import ConfigError
from biaslab.evaluate.embeddings import analogy_ranks, cosine_neighbours, cyclic_plane, rotation_analogy_ranks
from biaslab.nn.embedding import SymbolPairModel
from biaslab.records import measure
from biaslab.registry import experiment
from biaslab.report import plots_distributions
from biaslab.train.config import ClassifierStepsTraining
from biaslab.train.recipes import for_steps
from biaslab.train.trainer import accuracy

BOOK = "workshop book §1.4 (Embeddings: vectors as representations)"


@dataclass(frozen=True)
class EmbeddingsConfig:
    """The modulus, the share of pairs trained on, the model and its budget."""

    # a frozen dataclass, which ruff cannot see through training_without
    train: ClassifierStepsTraining = ClassifierStepsTraining(  # noqa: RUF009
        batch_size=128, optimizer="adamw", lr=3e-3, weight_decay=1.0
    )
    modulus: int = 31
    train_share: float = 0.6  # of the p² pairs
    dim: int = 32
    hidden: int = 128
    steps: int = 3000
    analogies: int = 2000

    def __post_init__(self):
        check_range(self, "modulus", 3, 1000)
        check_range(self, "train_share", 0.0, 1.0, "a share of the pairs", open_low=True, open_high=True)
        check_range(self, "dim", 2, 4096)
        check_range(self, "hidden", 1, 4096)
        check_range(self, "steps", 1, 10_000_000)
        check_range(self, "analogies", 1, 1_000_000)
        if any(self.modulus % q == 0 for q in range(2, int(self.modulus**0.5) + 1)):
            raise ConfigError(f"modulus={self.modulus}: must be a prime (every step then cycles through all)")
        check_batch_fits(self)

    def training_set(self) -> tuple[int, str]:
        """The training pairs: a share of the modulus² pairs (a + b, both below the modulus)."""
        pairs = round(self.train_share * self.modulus**2)
        return pairs, f"train_share={self.train_share:g} of modulus²={self.modulus**2} pairs"


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {
    "trained": "trained table",
    "initialisation": "table at initialisation",
    "neighbours": measure("share of residues whose nearest row is n ± c"),
    "median_rank": measure("median analogy rank by the vector offset"),
    "frequency": measure("dominant frequency of the table"),
    "plane_neighbours": measure("share whose nearest point on the dominant frequency's plane is n ± c"),
    "rotation_rank": measure("median analogy rank by rotation"),
}


@experiment(
    name="embeddings",
    words=WORDS,
    day=1,
    step=5,
    config=EmbeddingsConfig,
    title="Embeddings: a lookup table, and the structure a task writes into it",
    summary="residues learned from (a + b) mod p: nearest neighbours, a 2-D projection and analogies "
    "by rank, against the table at initialisation",
    quick={"modulus": 11, "steps": 30, "dim": 8, "hidden": 16, "batch_size": 32, "analogies": 100},
)
def run(ctx) -> None:
    cfg: EmbeddingsConfig = ctx.cfg
    p = cfg.modulus
    pairs = torch.cartesian_prod(torch.arange(p), torch.arange(p))  # (p², 2)
    order = torch.from_numpy(np.random.default_rng(ctx.seed_for("pairs")).permutation(len(pairs)))
    cut = round(cfg.train_share * len(pairs))
    train, test = pairs[order[:cut]], pairs[order[cut:]]
    model = ctx.init_model(lambda: SymbolPairModel(p, cfg.dim, cfg.hidden, p), "model")
    initial = model.embedding.weight.detach().clone()
    index = torch.arange(p)
    with torch.no_grad():
        lookup_gap = float((model.embedding(index) - model.embedding.as_one_hot_product(index)).abs().max())
    ctx.claim(
        "An embedding is a lookup: E[i] equals onehot(i) · E",
        source=f"{BOOK}, Definition 1.3",
        kind="check",
        expected="largest difference over every symbol = 0",
        measured=lookup_gap,
        passed=lookup_gap == 0.0,
    )
    (x, y), epochs = for_steps((train, train.sum(1) % p), cfg.steps, cfg.train.batch_size)
    trainer = ctx.training("model").trainer(
        model, cfg.train.training(epochs=epochs), metrics={"accuracy": accuracy}
    )
    trainer.fit((x, y))
    test_accuracy = trainer.evaluate((test, test.sum(1) % p))["accuracy"]
    table = model.embedding.weight.detach().cpu()
    questions = _analogies(p, cfg.analogies, ctx.seed_for("analogies"))
    measured = {
        "trained": _structure(table, questions, p),
        "at initialisation": _structure(initial, questions, p),
    }
    shown = ("neighbours", "median_rank", "frequency", "plane_neighbours", "rotation_rank")
    ctx.metric("accuracy", test_accuracy, split="test")
    for k, s in measured.items():
        for m in shown:
            ctx.metric(m, s[m], table=k.split()[-1])  # trained_neighbours, initialisation_frequency, ...
    ctx.table(
        f"The table's structure, trained and at initialisation (p = {p}). Whole table: the share of "
        "residues whose nearest row (cosine) is n ± c, and the median rank of the answer to "
        "a : a + k :: b : b + k by the vector offset; on the plane of its dominant frequency f: the same "
        "share, and the median rank by rotation",
        [
            "table",
            "nearest row n ± c",
            "offset analogy rank",
            "f",
            "nearest on the plane n ± c",
            "rotation rank",
        ],
        [_row(k, s) for k, s in measured.items()],
    )
    trained, random = measured["trained"], measured["at initialisation"]
    ctx.claim(
        f"The sum generalises to pairs never seen: test accuracy on the held-out {len(test)} pairs",
        source=f"{BOOK}; biaslab's target (0.9)",
        kind="finding",
        expected="test accuracy >= 0.9 (chance 1/p)",
        measured=f"{test_accuracy:.4f} (chance {1 / p:.3f})",
        passed=test_accuracy >= 0.9,
        checked_in_quick=False,
    )
    # The workshop book §1.4: "After training, similar items end up close in the embedding space",
    # and word2vec's "e_king - e_man + e_woman ≈ e_queen" (Example 1.2). Judged here as printed, on
    # the whole table: the claims failed on (a + b) mod p (nearest row n ± c 0.613, offset rank 15 of
    # 28 on the default) and keep their verdicts; the two claims after them say why, measured where
    # the theory puts the structure (the residues lie on circles: Nanda et al. 2023).
    ctx.claim(
        "Similar items end up close: each residue's nearest row (cosine, whole table) is n ± c for one "
        "step c, where the table at initialisation shows no such order",
        source=f"{BOOK}; biaslab's target (the shares 0.8 and 0.3)",
        printed="After training, similar items end up close in the embedding space",
        kind="finding",
        expected="share with nearest row n ± c >= 0.8 trained, <= 0.3 at initialisation",
        measured=f"trained {trained['neighbours']:.3f} (c = {trained['step']}), at initialisation "
        f"{random['neighbours']:.3f}",
        passed=trained["neighbours"] >= 0.8 and random["neighbours"] <= 0.3,
        checked_in_quick=False,
    )
    ctx.claim(
        "Offsets carry over, as word2vec's king − man + woman ≈ queen: a is to a + k as b is to b + k, "
        "answered by the vector offset b + (a + k − a), the answer ranked near the top",
        source=f"{BOOK}, Example 1.2; Mikolov et al. 2013; biaslab's target (median rank 3)",
        kind="finding",
        expected=f"median rank of the answer <= 3 trained (of {p - 3} candidates; a random table about half)",
        measured=f"trained {trained['median_rank']}, at initialisation {random['median_rank']}",
        passed=trained["median_rank"] <= 3,
        checked_in_quick=False,
    )
    ctx.claim(
        "Why the two above can fail: the task orders the table around a circle: on the plane of its "
        "dominant frequency each residue's nearest neighbour is n ± c for one step c, where the table at "
        "initialisation shows no such order",
        source=f"{BOOK}; Nanda et al. 2023; biaslab's target (the shares 0.8 and 0.3)",
        kind="finding",
        expected="share with nearest point n ± c >= 0.8 trained, <= 0.3 at initialisation",
        measured=f"trained {trained['plane_neighbours']:.3f} (f = {trained['frequency']}, c = "
        f"{trained['plane_step']}), at initialisation {random['plane_neighbours']:.3f} (whole table, by "
        f"cosine: trained {trained['neighbours']:.3f})",
        passed=trained["plane_neighbours"] >= 0.8 and random["plane_neighbours"] <= 0.3,
        checked_in_quick=False,
    )
    ctx.claim(
        "... and adding k turns the circle: a is to a + k as b is to b + k, answered by turning b by the "
        "angle from a to a + k, the answer ranked near the top",
        source="Nanda et al. 2023 (addition as rotation); Mikolov et al. 2013 (analogies by rank); "
        "biaslab's target (median rank 3)",
        kind="finding",
        expected=f"median rank of the answer <= 3 trained (of {p - 3} candidates; a random table about half)",
        measured=f"trained {trained['rotation_rank']}, at initialisation {random['rotation_rank']} (by the "
        f"vector offset instead: trained {trained['median_rank']})",
        passed=trained["rotation_rank"] <= 3,
        checked_in_quick=False,
    )
    _, points = cyclic_plane(table)
    ctx.figure(
        "circle",
        plots_distributions.labelled_points(
            points.numpy(), range(p), [(n, (n + trained["plane_step"]) % p) for n in range(p)]
        ),
        f"The trained table projected on the plane of its dominant frequency f = {trained['frequency']}, "
        f"each residue labelled; lines join n to n + {trained['plane_step']}.",
    )


def _row(table: str, s: dict) -> list:
    """One table's row of the structure table."""
    whole = f"{s['neighbours']:.3f} (c = {s['step']})"
    plane = f"{s['plane_neighbours']:.3f} (c = {s['plane_step']})"
    return [table, whole, s["median_rank"], s["frequency"], plane, s["rotation_rank"]]


def _analogies(p: int, count: int, seed: int) -> torch.Tensor:
    """Questions (a, a + k, b, b + k) mod p with a ≠ b and k ≠ 0, seeded: (count, 4)."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(p, size=count), rng.integers(p, size=count)
    k = rng.integers(1, p, size=count)
    b = np.where(b == a, (b + 1) % p, b)
    rows = np.stack([a, (a + k) % p, b, (b + k) % p], axis=1)
    keep = (rows[:, 3] != rows[:, 0]) & (rows[:, 3] != rows[:, 1]) & (rows[:, 3] != rows[:, 2])
    return torch.from_numpy(rows[keep])


def _structure(table: torch.Tensor, questions: torch.Tensor, p: int) -> dict:
    """In the whole table: the neighbour step c (the most common), the share of residues whose
    nearest row (cosine) is n ± c, the median offset-analogy rank. On the dominant frequency's
    plane: the frequency, the share whose nearest point is n ± c' (c' that plane's own step), the
    median rotation-analogy rank."""
    step, neighbours = _steps(cosine_neighbours(table)[:, 0], p)
    frequency, points = cyclic_plane(table)
    distance = torch.cdist(points, points).fill_diagonal_(torch.inf)
    plane_step, plane_neighbours = _steps(distance.argmin(dim=1), p)
    return {
        "step": step,
        "neighbours": neighbours,
        "median_rank": int(analogy_ranks(table, questions).median()),
        "frequency": frequency,
        "plane_step": plane_step,
        "plane_neighbours": plane_neighbours,
        "rotation_rank": int(rotation_analogy_ranks(points, questions).median()),
    }


def _steps(nearest: torch.Tensor, p: int) -> tuple[int, float]:
    """The most common step ±c from each residue n to its nearest one, and the share taking it."""
    steps = [min((m - n) % p, (n - m) % p) for n, m in enumerate(nearest.tolist())]
    step = Counter(steps).most_common(1)[0][0]
    return step, float(np.mean([s == step for s in steps]))
