"""Benchmark: N small models of one architecture trained one by one, and as one batched ensemble.

    python benchmarks/ensemble.py [--model mlp|cnn] [--members 8] [--hidden 256] [--epochs 30]
                                  [--batch 64] [--threads N] [--json out.json]

The case is the one a comparison repeats for every candidate on a small table: an MLP
64-HIDDEN-10 on sklearn's digits (1,797 images of 8x8 pixels; 1,078 training rows, as compare's
split leaves), Adam, batches of 64, EPOCHS epochs, one member per seed, each on its own random
draw of the training rows. ``--model cnn`` takes ``symmetry-three-ways``' CNN instead (3x3
convolutions of 16, 32 and 32 channels, each with a 2x2 max pool, a global average pool), on the
digits resized to 28x28 pixels: batching turns each convolution into a grouped one, which the CPU
runs less well. One by one, each member is a :class:`~biaslab.train.trainer.Trainer`
fit with its seed and tag; batched, :func:`~biaslab.train.ensemble.fit_ensemble` trains them all
at once. Printed: the seconds of each way, their ratio, and the largest difference between a
member's weights the two ways (the same trainings: rounding only, which 500 Adam steps amplify a
little), and the share of images on which the two ways' members predict the same digit. The two
ways run in one process, one after the other, on the same threads.
"""

from __future__ import annotations

import argparse
import copy
import json
import time

import torch
from sklearn.datasets import load_digits

from biaslab.hardware import busy_warning
from biaslab.nn import CNN, MLP
from biaslab.train.config import TrainConfig
from biaslab.train.ensemble import fit_ensemble
from biaslab.train.trainer import Trainer

ROWS = 1078  # the training rows compare's 60/20/20 split leaves of digits' 1,797


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    parser.add_argument("--members", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warning = busy_warning()
    if warning:
        print(warning)
    x, y = load_digits(return_X_y=True)
    x, y = torch.tensor(x / 16.0, dtype=torch.float32), torch.tensor(y)
    if args.model == "cnn":  # (N, 64) -> (N, 1, 8, 8) -> (N, 1, 28, 28)
        x = torch.nn.functional.interpolate(x.view(-1, 1, 8, 8), size=28, mode="bilinear")
    seeds = list(range(args.members))
    rows = [torch.randperm(len(x), generator=torch.Generator().manual_seed(100 + s))[:ROWS] for s in seeds]
    train = [(x[r], y[r]) for r in rows]
    models = []
    for seed in seeds:
        torch.manual_seed(seed)
        if args.model == "cnn":
            models.append(CNN(1, (16, 32, 32), 10, dims=2, pool="max", global_pool="avg"))
        else:
            models.append(MLP((64, args.hidden, 10)))
    config = TrainConfig(epochs=args.epochs, batch_size=args.batch, lr=1e-3, patience=0)
    tags = [f"member{s}" for s in seeds]

    start = time.perf_counter()
    alone = []
    for model, seed, tag, data in zip(models, seeds, tags, train):
        trainer = Trainer(copy.deepcopy(model), config=config, seed=seed, tag=tag, callbacks=[])
        trainer.fit(data)
        alone.append(trainer.model)
    one_by_one = time.perf_counter() - start

    fit = fit_ensemble(models, train, config, seeds, tags)
    batched = fit.seconds
    gap = max(
        float((p - q).abs().max())
        for a, b in zip(alone, fit.models)
        for p, q in zip(a.state_dict().values(), b.state_dict().values())
    )
    with torch.no_grad():  # on all 1,797 images: do the two ways' members predict alike?
        agree = min(
            float((a(x).argmax(1) == b(x).argmax(1)).float().mean()) for a, b in zip(alone, fit.models)
        )
    what = "CNNs 16-32-32 on 28x28" if args.model == "cnn" else f"MLPs 64-{args.hidden}-10"
    print(
        f"{args.members} {what}, {args.epochs} epochs of {ROWS} rows in batches of {args.batch}, "
        f"{args.threads} threads: "
        f"one by one {one_by_one:.2f} s, batched {batched:.2f} s, {one_by_one / batched:.2f}x; "
        f"largest weight difference {gap:.1e}; predictions agree on {agree:.2%} of the images (worst member)"
    )
    if args.json:
        with open(args.json, "w") as handle:
            figures = {"model": args.model, "members": args.members, "hidden": args.hidden}
            figures |= {"epochs": args.epochs, "batch": args.batch}
            figures |= {"threads": args.threads, "one_by_one_s": one_by_one, "batched_s": batched}
            figures |= {"gap": gap, "agree": agree}
            json.dump(figures, handle, indent=1)


if __name__ == "__main__":
    main()
