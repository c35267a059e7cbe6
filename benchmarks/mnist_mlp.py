"""Benchmark: the notes' 784-256-10 MLP on MNIST, on this machine, told as one story.

    python benchmarks/mnist_mlp.py [--seeds 0 1 2] [--repeats 3] [--json out.json]
    python benchmarks/mnist_mlp.py --select-recipe      # choose the Day-1 recipe on validation

Prints, each figure a median over interleaved repeats in this one run:

1. time to 98% test accuracy of mnist-mlp's recipe (``MnistMLPConfig()``) and of the previous
   one (``OLD_RECIPE``), seed by seed, alternating; the clock counts training steps only (the
   per-epoch test evaluation only watches the accuracy, it chooses nothing);
2. training throughput at batch 256 of the biaslab Trainer, a hand-written sliced loop, a
   ``DataLoader`` loop and, when the optional ``lightning`` package is installed, Lightning's
   Trainer: same data in memory, same model, same fused Adam, rotated through ``--repeats`` rounds;
   on a CPU with native bfloat16, also the Trainer with ``precision="bf16"``;
3. the achieved GFLOP/s of the Trainer against a matmul ceiling measured here.

It ends with one line:
``summary: time-to-98% new/old = R1; trainer/DataLoader = R2; trainer/Lightning = R3; achieved/peak = R4``
and warns when the load average shows a busy machine (absolute figures then mean little).

``--select-recipe`` trains each candidate of ``CANDIDATES`` on the training split and watches
the *validation* split only; it prints each one's median time to 98% validation accuracy and
names the fastest that reaches it on every seed (the choice behind ``MnistMLPConfig``'s defaults).
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import statistics
import time
import warnings

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from biaslab.config import apply_overrides, flat_values
from biaslab.data.mnist import mnist_splits
from biaslab.experiments.mnist_mlp import MnistMLPConfig
from biaslab.hardware import busy_warning
from biaslab.nn import MLP
from biaslab.train import TrainConfig, Trainer, accuracy
from biaslab.train.config import bf16_supported, make_optimizer

TARGET = 0.98
# The recipe mnist-mlp shipped before issue 14: 8 epochs of one-cycle (25% warm-up), lr 3e-3.
OLD_RECIPE = {"epochs": 8, "lr": 3e-3, "warmup": 0.25, "label_smoothing": 0.0}
CANDIDATES = {
    "old: 8 ep, lr 3e-3, warm-up 25%": OLD_RECIPE,
    "4 ep, lr 4e-3, warm-up 15%": {"epochs": 4, "lr": 4e-3, "warmup": 0.15, "label_smoothing": 0.0},
    "4 ep, lr 4e-3, warm-up 15%, smoothing 0.1": {
        "epochs": 4,
        "lr": 4e-3,
        "warmup": 0.15,
        "label_smoothing": 0.1,
    },
    "3 ep, lr 4e-3, warm-up 15%, smoothing 0.1": {
        "epochs": 3,
        "lr": 4e-3,
        "warmup": 0.15,
        "label_smoothing": 0.1,
    },
    "5 ep, lr 3e-3, warm-up 15%, smoothing 0.1": {
        "epochs": 5,
        "lr": 3e-3,
        "warmup": 0.15,
        "label_smoothing": 0.1,
    },
}
FLOPS_PER_EXAMPLE = 3 * 2 * (784 * 256 + 256 * 10)  # forward 1x, backward 2x the matmuls


class _Clock:
    """A Trainer logger noting (training seconds so far, watched accuracy) at each epoch's end."""

    def __init__(self):
        self.trainer: Trainer | None = None
        self.points: list[tuple[float, float]] = []

    def log(self, record):
        self.points.append((self.trainer.train_time, record["val_accuracy"]))

    def rewind(self, step):
        pass


def time_to_target(splits, seed: int, recipe: dict, watch: str) -> dict:
    """Train with ``recipe`` (overrides of MnistMLPConfig); ``watch`` is "val" or "test"."""
    cfg = apply_overrides(MnistMLPConfig(), recipe)  # flat keys: lr, label_smoothing, ...
    torch.manual_seed(seed)
    model = MLP((784, cfg.hidden, 10))
    loss_fn = None
    if cfg.label_smoothing:
        loss_fn = lambda out, y: nn.functional.cross_entropy(out, y, label_smoothing=cfg.label_smoothing)  # noqa: E731
    clock = _Clock()
    trainer = Trainer(
        model,
        loss_fn,
        cfg.train,
        seed=seed,
        metrics={"accuracy": accuracy},
        logger=clock,
        progress=False,
    )
    clock.trainer = trainer
    watched = (splits.x_val, splits.y_val) if watch == "val" else (splits.x_test, splits.y_test)
    trainer.fit((splits.x_train, splits.y_train), val=watched)
    hits = [t for t, acc in clock.points if acc >= TARGET]
    return {
        "seconds_to_target": hits[0] if hits else None,
        "final_accuracy": clock.points[-1][1],
        "points": clock.points,
    }


# -- throughput contenders: the same model, data in memory and fused Adam ----------------------
def run_trainer(model, x, y, batch: int, epochs: int, precision: str = "fp32") -> float:
    config = TrainConfig(epochs=epochs, batch_size=batch, lr=1e-3, precision=precision)
    trainer = Trainer(model, config=config, progress=False)
    t0 = time.perf_counter()
    trainer.fit((x, y))
    return time.perf_counter() - t0


def run_sliced(model, x, y, batch: int, epochs: int) -> float:
    """The hand-written loop: one permutation per epoch, then slices."""
    opt = make_optimizer(TrainConfig(lr=1e-3), model.parameters())
    gen = torch.Generator().manual_seed(0)
    t0 = time.perf_counter()
    for _ in range(epochs):
        perm = torch.randperm(len(x), generator=gen)
        xs, ys = x[perm], y[perm]
        for i in range(0, len(x), batch):
            loss = nn.functional.cross_entropy(model(xs[i : i + batch]), ys[i : i + batch])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return time.perf_counter() - t0


def run_dataloader(model, x, y, batch: int, epochs: int) -> float:
    """The textbook loop: DataLoader(TensorDataset, shuffle=True)."""
    loader = DataLoader(TensorDataset(x, y), batch_size=batch, shuffle=True)
    opt = make_optimizer(TrainConfig(lr=1e-3), model.parameters())
    t0 = time.perf_counter()
    for _ in range(epochs):
        for xb, yb in loader:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return time.perf_counter() - t0


def lightning_runner():
    """Lightning's Trainer on the same loop, or None when ``lightning`` is not installed."""
    try:
        import lightning as L
    except ImportError:
        return None
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)  # no banners between rounds
    warnings.filterwarnings("ignore", module="lightning")

    class Module(L.LightningModule):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def training_step(self, batch, _):
            xb, yb = batch
            return nn.functional.cross_entropy(self.model(xb), yb)

        def configure_optimizers(self):
            return make_optimizer(TrainConfig(lr=1e-3), self.model.parameters())

    def run(model, x, y, batch: int, epochs: int) -> float:
        trainer = L.Trainer(
            max_epochs=epochs,
            accelerator="cpu",
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        loader = DataLoader(TensorDataset(x, y), batch_size=batch, shuffle=True)
        t0 = time.perf_counter()
        trainer.fit(Module(model), loader)
        return time.perf_counter() - t0

    return run


def matmul_ceiling(n: int = 2048, repeats: int = 5) -> float:
    """The best fp32 GFLOP/s of an n x n matmul on this machine's torch threads."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b  # warm-up
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2 * n**3 / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def warn_if_busy() -> float:
    load = os.getloadavg()[0]
    warning = busy_warning(load=load)
    if warning:
        print(warning)
    return load


def select_recipe(splits, seeds) -> None:
    """Each candidate's median time to the validation accuracy the old recipe ends with.

    98% *test* accuracy is the target, but the test set chooses nothing; the validation split
    (carved from the training images) runs harder than the test set here, so 98% on it is
    reached by no candidate. The criterion is therefore the old recipe's own median final
    validation accuracy: a recipe qualifies when it reaches that on every seed, and the fastest
    (median training seconds) is chosen.
    """
    results = {name: [] for name in CANDIDATES}
    for seed in seeds:
        for name, recipe in CANDIDATES.items():  # interleaved: every candidate once per seed
            results[name].append(time_to_target(splits, seed, recipe, watch="val"))
    target = statistics.median(r["final_accuracy"] for r in results[next(iter(CANDIDATES))])
    print(
        f"choosing on the validation split ({len(splits.x_val)} images): time to {target:.4f} "
        "validation accuracy (the old recipe's median final value)"
    )
    best = None
    for name, runs in results.items():
        times = [next((t for t, acc in r["points"] if acc >= target), None) for r in runs]
        reached = all(t is not None for t in times)
        median = statistics.median(times) if reached else None
        shown = f"{median:6.2f} s" if reached else "  not on every seed"
        finals = " ".join(f"{r['final_accuracy']:.4f}" for r in runs)
        print(f"  {name:<44} {shown}   final val acc {finals}")
        if reached and (best is None or median < best[1]):
            best = (name, median)
    print(f"chosen: {best[0] if best else 'none reaches the target'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--repeats", type=int, default=3, help="throughput rounds (median)")
    parser.add_argument("--select-recipe", action="store_true", help="choose the recipe on validation")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    load = warn_if_busy()
    cfg = MnistMLPConfig()
    splits = mnist_splits(n_val=cfg.data.n_val, seed=0, standardize=True)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, load {load:.2f}; "
        f"train {len(splits.x_train)}, val {len(splits.x_val)}, test {len(splits.x_test)} images"
    )
    if args.select_recipe:
        select_recipe(splits, args.seeds)
        return

    new = {k: flat_values(cfg)[k] for k in OLD_RECIPE}
    print(f"\n1. time to {TARGET:.0%} test accuracy: new {new} vs old {OLD_RECIPE}")
    times = {"new": [], "old": []}
    for seed in args.seeds:
        for which, recipe in (("new", new), ("old", OLD_RECIPE)):
            r = time_to_target(splits, seed, recipe, watch="test")
            times[which].append(r["seconds_to_target"])
            shown = f"{r['seconds_to_target']:.2f} s" if r["seconds_to_target"] is not None else "never"
            print(f"   seed {seed} {which}: {shown} (final test accuracy {r['final_accuracy']:.4f})")
    med = {k: statistics.median(v) if all(t is not None for t in v) else None for k, v in times.items()}
    r1 = med["new"] / med["old"] if med["new"] and med["old"] else None

    print("\n2. throughput at batch 256, 2 epochs, fused Adam (examples/s, median)")
    contenders = {"trainer": run_trainer, "sliced loop": run_sliced, "DataLoader": run_dataloader}
    if bf16_supported():  # opt-in reduced precision: --set precision=bf16
        contenders["trainer bf16"] = functools.partial(run_trainer, precision="bf16")
    lightning = lightning_runner()
    if lightning is not None:
        contenders["Lightning"] = lightning
    rates = {name: [] for name in contenders}
    x, y = splits.x_train, splits.y_train
    for r in range(args.repeats):
        for name, fn in contenders.items():
            torch.manual_seed(r)
            rates[name].append(2 * len(x) / fn(MLP((784, 256, 10)), x, y, 256, 2))
    medians = {k: statistics.median(v) for k, v in rates.items()}
    for name, rate in medians.items():
        print(f"   {name:<12} {rate:9.0f} ex/s   trainer/{name} = {medians['trainer'] / rate:.2f}")
    if "trainer bf16" not in medians:
        print("   trainer bf16 not measured: this CPU lacks native bfloat16 matmul")
    if lightning is None:
        print("   Lightning    not installed (pip install lightning; optional)")

    peak = matmul_ceiling()
    achieved = medians["trainer"] * FLOPS_PER_EXAMPLE / 1e9
    print(f"\n3. achieved {achieved:.1f} GFLOP/s of a measured {peak:.1f} GFLOP/s fp32 matmul ceiling")

    def ratio(v):
        return "n/a" if v is None else f"{v:.2f}"

    r3 = medians["trainer"] / medians["Lightning"] if "Lightning" in medians else None
    print(
        f"\nsummary: time-to-98% new/old = {ratio(r1)}; trainer/DataLoader = "
        f"{ratio(medians['trainer'] / medians['DataLoader'])}; trainer/Lightning = {ratio(r3)}; "
        f"achieved/peak = {ratio(achieved / peak)}"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"time_to_98": times, "throughput": medians, "gflops": [achieved, peak], "load": load}, f
            )


if __name__ == "__main__":
    main()
