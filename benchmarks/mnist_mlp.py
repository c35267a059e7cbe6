"""Benchmark: the notes' 784-256-10 MLP on MNIST, on this machine.

Prints
  1. training wall time to reach 97% and 98% test accuracy (median of 3 seeds), with the
     mnist-mlp experiment's default recipe (Adam, one-cycle, batch 256, 8 epochs); the clock
     counts training steps only, not the per-epoch test evaluation that watches the accuracy;
  2. training throughput (examples/s) of the biaslab Trainer (pre-shuffled in-memory tensors,
     sliced) divided by that of a plain PyTorch DataLoader loop on the same model, optimizer and
     batch size, measured in the same run, alternating the two to share any machine noise.

Targets on a 2-core CPU: 98% in <= 5 s of training; throughput ratio >= 1.3.

    python benchmarks/mnist_mlp.py [--seeds 0 1 2] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from biaslab.data.mnist import mnist_splits
from biaslab.experiments.mnist_mlp import MnistMLPConfig
from biaslab.nn import MLP
from biaslab.train import TrainConfig, Trainer, accuracy

TARGETS = (0.97, 0.98)


class _Clock:
    """Logger that notes the trainer's cumulative training time at the end of each epoch."""

    def __init__(self):
        self.trainer = None
        self.points: list[tuple[float, float]] = []  # (train seconds, test accuracy)

    def log(self, record):
        self.points.append((self.trainer.train_time, record["val_accuracy"]))

    def rewind(self, step):
        pass


def time_to_accuracy(splits, seed: int, cfg: MnistMLPConfig) -> dict:
    torch.manual_seed(seed)
    model = MLP((784, cfg.hidden, 10))
    tcfg = TrainConfig.of(cfg)
    clock = _Clock()
    trainer = Trainer(
        model, config=tcfg, seed=seed, metrics={"accuracy": accuracy}, logger=clock, progress=False
    )
    clock.trainer = trainer
    # The test set only *watches* the accuracy here; nothing is chosen by it.
    trainer.fit((splits.x_train, splits.y_train), val=(splits.x_test, splits.y_test))
    out = {"final_accuracy": clock.points[-1][1], "train_seconds": trainer.train_time}
    for target in TARGETS:
        hit = [t for t, acc in clock.points if acc >= target]
        out[f"seconds_to_{target:.2f}"] = hit[0] if hit else None
    return out


def plain_dataloader_epochs(model, x, y, batch_size: int, epochs: int, lr: float) -> float:
    """The textbook loop: DataLoader(TensorDataset, shuffle=True); returns wall seconds."""
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    t0 = time.perf_counter()
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
    return time.perf_counter() - t0


def trainer_epochs(model, x, y, batch_size: int, epochs: int, lr: float) -> float:
    trainer = Trainer(model, config=TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr), progress=False)
    t0 = time.perf_counter()
    trainer.fit((x, y))
    return time.perf_counter() - t0


def throughput_ratio(splits, batch_size: int, repeats: int, epochs: int = 2) -> dict:
    x, y = splits.x_train, splits.y_train
    n = epochs * len(x)
    ours, plain = [], []
    for r in range(repeats):
        for _name, fn, store in (
            ("trainer", trainer_epochs, ours),
            ("dataloader", plain_dataloader_epochs, plain),
        ):
            torch.manual_seed(r)
            store.append(n / fn(MLP((784, 256, 10)), x, y, batch_size, epochs, 1e-3))
    return {
        "batch_size": batch_size,
        "trainer_examples_per_s": statistics.median(ours),
        "dataloader_examples_per_s": statistics.median(plain),
        "ratio": statistics.median(ours) / statistics.median(plain),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--repeats", type=int, default=3, help="throughput repeats (median)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    cfg = MnistMLPConfig()
    splits = mnist_splits(n_val=cfg.n_val, seed=0, standardize=True)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"train {len(splits.x_train)}, test {len(splits.x_test)} images"
    )

    runs = [time_to_accuracy(splits, s, cfg) for s in args.seeds]
    print(
        f"\n1. time to accuracy ({cfg.epochs} epochs, batch {cfg.batch_size}, {cfg.optimizer}, "
        f"{cfg.schedule}, lr {cfg.lr:g})"
    )
    print(f"   {'seed':>4}  {'to 97%':>8}  {'to 98%':>8}  {'final acc':>9}  {'train s':>8}")
    for s, r in zip(args.seeds, runs):
        fmt = lambda v: f"{v:7.2f}s" if v is not None else "   never"  # noqa: E731
        print(
            f"   {s:>4}  {fmt(r['seconds_to_0.97'])}  {fmt(r['seconds_to_0.98'])}  "
            f"{r['final_accuracy']:9.4f}  {r['train_seconds']:8.2f}"
        )
    medians = {}
    for target in TARGETS:
        times = [r[f"seconds_to_{target:.2f}"] for r in runs]
        medians[target] = statistics.median(times) if all(t is not None for t in times) else None
    print(
        f"   median to 97%: {medians[0.97]:.2f} s"
        if medians[0.97] is not None
        else "   median to 97%: not reached by every seed"
    )
    if medians[0.98] is not None:
        verdict = "PASS" if medians[0.98] <= 5.0 else "FAIL"
        print(f"   median to 98%: {medians[0.98]:.2f} s   (target <= 5 s: {verdict})")
    else:
        print("   median to 98%: not reached by every seed   (target <= 5 s: FAIL)")

    print("\n2. throughput, biaslab Trainer / plain DataLoader loop (same model, Adam, 2 epochs)")
    ratios = [throughput_ratio(splits, bs, args.repeats) for bs in (256, 128)]
    for r in ratios:
        verdict = "PASS" if r["ratio"] >= 1.3 else "FAIL"
        print(
            f"   batch {r['batch_size']:>3}: trainer {r['trainer_examples_per_s']:9.0f} ex/s, "
            f"DataLoader {r['dataloader_examples_per_s']:9.0f} ex/s, ratio {r['ratio']:.2f}"
            f"   (target >= 1.3: {verdict})"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "time_to_accuracy": runs,
                    "median_seconds": {str(k): v for k, v in medians.items()},
                    "throughput": ratios,
                },
                f,
                indent=2,
            )


if __name__ == "__main__":
    main()
