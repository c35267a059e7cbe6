"""Benchmark: the Day-4 models on MNIST-1D, and our GCN layer against torch-geometric's.

    python benchmarks/mnist1d.py [--seed 0] [--repeats 5] [--json out.json]

Prints, on this machine:

1. for each model of the ``mnist1d`` lab (its default training), the test accuracy on MNIST-1D
   and the training wall time, beside the published accuracy (Greydanus 2020);
2. the forward + backward time of ``biaslab.nn.GCNConv`` and of ``torch_geometric.nn.GCNConv``
   with the same weights on one random graph of 10,000 nodes and 100,000 edges (64 -> 64
   features), the fastest of ``--repeats``, interleaved, and their ratio (ours / PyG's).

It ends with one line:
``summary: cnn = A1 (T1 s); gru = A2 (T2 s); ...; GCN ours/PyG = R``
and warns when the load average shows a busy machine (absolute figures then mean little).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch

from biaslab.data.mnist1d import mnist1d_splits
from biaslab.experiments.mnist1d import MODELS, PUBLISHED, Mnist1dConfig, build
from biaslab.hardware import busy_warning
from biaslab.nn import GCNConv
from biaslab.train import TrainConfig, Trainer, accuracy


def train_model(name: str, cfg: Mnist1dConfig, seed: int) -> tuple[float, float]:
    """(test accuracy, training seconds) of one model with the lab's default training."""
    splits = mnist1d_splits(n_val=cfg.n_val, seed=0)
    torch.manual_seed(seed)
    model = build(name)
    epochs = getattr(cfg, f"{name}_epochs")
    config = TrainConfig(epochs=epochs, batch_size=cfg.batch_size, lr=cfg.lr, schedule="onecycle")
    trainer = Trainer(model, config=config, seed=seed, metrics={"accuracy": accuracy}, progress=False)
    start = time.perf_counter()
    trainer.fit((splits.x_train, splits.y_train), val=(splits.x_val, splits.y_val))
    seconds = time.perf_counter() - start
    return trainer.evaluate((splits.x_test, splits.y_test))["accuracy"], seconds


def gcn_ratio(repeats: int, nodes: int = 10_000, edges: int = 100_000, width: int = 64) -> dict:
    """Forward + backward seconds of our GCNConv and torch-geometric's on the same graph."""
    from torch_geometric.nn import GCNConv as PygGCNConv

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(nodes, width, generator=gen)
    edge_index = torch.randint(0, nodes, (2, edges), generator=gen)
    ours, theirs = GCNConv(width, width), PygGCNConv(width, width)
    ours.load_state_dict(theirs.state_dict())  # the same weights
    with torch.no_grad():
        assert torch.allclose(ours(x, edge_index), theirs(x, edge_index), atol=1e-4), "layers differ"

    def one_pass(layer) -> float:
        layer.zero_grad()
        start = time.perf_counter()
        layer(x, edge_index).square().sum().backward()
        return time.perf_counter() - start

    best = {"ours": float("inf"), "pyg": float("inf")}
    one_pass(ours), one_pass(theirs)  # warm-up
    for _ in range(repeats):
        best["ours"] = min(best["ours"], one_pass(ours))
        best["pyg"] = min(best["pyg"], one_pass(theirs))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5, help="GCN timing rounds (fastest)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    if warning := busy_warning(load=load):
        print(warning)
    cfg = Mnist1dConfig()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, load {load:.2f}")
    print("\n1. MNIST-1D, test accuracy and training time (one seed)")
    figures = {}
    for name in MODELS:
        acc, seconds = train_model(name, cfg, args.seed)
        published = PUBLISHED.get((name, "normal"))
        shown = f"published {published:.2f}" if published is not None else "no published figure"
        print(f"   {name:<12} {acc:.4f}   {seconds:6.1f} s   ({shown})", flush=True)
        figures[name] = {"accuracy": acc, "seconds": seconds}
    best = gcn_ratio(args.repeats)
    ratio = best["ours"] / best["pyg"]
    print(
        f"\n2. GCNConv forward+backward, 10,000 nodes, 100,000 edges, 64 -> 64: ours "
        f"{best['ours'] * 1e3:.1f} ms, torch-geometric {best['pyg'] * 1e3:.1f} ms"
    )
    if warning := busy_warning():
        print(warning)
    parts = [f"{m} = {f['accuracy']:.3f} ({f['seconds']:.0f} s)" for m, f in figures.items()]
    print(f"\nsummary: {'; '.join(parts)}; GCN ours/PyG = {ratio:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"models": figures, "gcn_seconds": best, "gcn_ratio": ratio, "load": load}, f)


if __name__ == "__main__":
    main()
