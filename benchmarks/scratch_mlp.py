"""Benchmark: the hand-written NumPy MLP (biaslab.scratch) against the same model in PyTorch.

Prints, on this machine:
  1. the wall time of ONE training epoch of the 784-256-10 MLP (plain SGD, lr 0.1, batch 128,
     the 55,000 standardized MNIST training images), NumPy vs PyTorch eager (nn.Linear layers,
     torch.optim.SGD), both from the same initial weights and the same pre-shuffled arrays
     (identical batch order), float32; median of 3 epochs each, the two alternating; and the
     ratio numpy / torch (target <= 2x: PASS / FAIL);
  2. the largest absolute difference between the five-formula backward and torch.autograd,
     in float64 on one batch of 128 images.

    python benchmarks/scratch_mlp.py [--epochs 3] [--threads N] [--json out.json]

Both libraries use their default thread counts unless ``--threads`` sets both (torch through
``torch.set_num_threads``, NumPy's OpenBLAS through threadpoolctl when it is installed). The
load average is printed too: on a shared 2-core machine, other processes hurt multi-threaded
BLAS calls badly (a worker thread that is descheduled stalls the whole product).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from biaslab.data.mnist import mnist_splits
from biaslab.scratch.mlp import TwoLayerMLP
from biaslab.scratch.optim import SGD

TARGET_RATIO = 2.0
LR, BATCH = 0.1, 128


def load_shuffled(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The 55,000 standardized training images, permuted once, as contiguous float32 arrays."""
    splits = mnist_splits(seed=seed, standardize=True)
    X = splits.x_train.numpy()  # (55000, 784) float32
    y = splits.y_train.numpy()  # (55000,) int64
    perm = np.random.default_rng(seed).permutation(len(X))
    return np.ascontiguousarray(X[perm]), np.ascontiguousarray(y[perm])


def torch_model(params: dict[str, np.ndarray], dtype=torch.float32) -> nn.Sequential:
    """nn.Linear-ReLU-nn.Linear holding a copy of the NumPy parameters."""
    (h, d), c = params["W1"].shape, params["W2"].shape[0]
    model = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, c)).to(dtype)
    with torch.no_grad():
        for layer, (w, b) in zip((model[0], model[2]), (("W1", "b1"), ("W2", "b2"))):
            layer.weight.copy_(torch.from_numpy(params[w]))
            layer.bias.copy_(torch.from_numpy(params[b]))
    return model


def numpy_epoch(model: TwoLayerMLP, opt: SGD, X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """One epoch over consecutive slices; returns (seconds, mean loss)."""
    start, total = time.perf_counter(), 0.0
    for i in range(0, len(X), BATCH):
        xb, yb = X[i : i + BATCH], y[i : i + BATCH]
        total += model.loss(xb, yb) * len(yb)
        opt.step(model.backward(yb))
    return time.perf_counter() - start, total / len(X)


def torch_epoch(
    model: nn.Module, opt: torch.optim.Optimizer, X: torch.Tensor, y: torch.Tensor
) -> tuple[float, float]:
    """The same epoch in PyTorch eager; returns (seconds, mean loss)."""
    start, total = time.perf_counter(), 0.0
    for i in range(0, len(X), BATCH):
        xb, yb = X[i : i + BATCH], y[i : i + BATCH]
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.item() * len(yb)
    return time.perf_counter() - start, total / len(X)


def gradient_difference(X: np.ndarray, y: np.ndarray) -> float:
    """max |five-formula grad - autograd grad| over all parameters, float64, one batch."""
    model = TwoLayerMLP(seed=1, dtype=np.float64)
    xb, yb = X[:BATCH].astype(np.float64), y[:BATCH]
    model.loss(xb, yb)
    grads = model.backward(yb)
    ref = torch_model(model.params, torch.float64)
    F.cross_entropy(ref(torch.from_numpy(xb)), torch.from_numpy(yb)).backward()
    ref_grads = {
        "W1": ref[0].weight.grad,
        "b1": ref[0].bias.grad,
        "W2": ref[2].weight.grad,
        "b2": ref[2].bias.grad,
    }
    return max(float(np.max(np.abs(grads[k] - ref_grads[k].numpy()))) for k in grads)


@contextlib.contextmanager
def _thread_limit(n: int | None):
    """Limit torch and (when threadpoolctl is importable) OpenBLAS to ``n`` threads."""
    if n is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("threadpoolctl is not installed: NumPy keeps its default thread count")
        limiter = contextlib.nullcontext()
    else:
        limiter = threadpool_limits(limits=n, user_api="blas")
    try:
        with limiter:
            yield
    finally:
        torch.set_num_threads(previous)


def _blas_threads() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "?"
    counts = [str(i["num_threads"]) for i in threadpool_info() if i.get("user_api") == "blas"]
    return "/".join(counts) or "?"


def _run(args) -> dict:
    load_before = os.getloadavg()[0]

    X, y = load_shuffled()
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)  # share memory with the NumPy arrays
    np_model = TwoLayerMLP(seed=0)
    np_opt = SGD(np_model.params, lr=LR)
    pt_model = torch_model(np_model.params)
    pt_opt = torch.optim.SGD(pt_model.parameters(), lr=LR)

    np_times, pt_times, np_losses, pt_losses = [], [], [], []
    for _ in range(args.epochs):  # alternate, so both share any machine noise
        seconds, loss = numpy_epoch(np_model, np_opt, X, y)
        np_times.append(seconds)
        np_losses.append(loss)
        seconds, loss = torch_epoch(pt_model, pt_opt, Xt, yt)
        pt_times.append(seconds)
        pt_losses.append(loss)
    np_med, pt_med = statistics.median(np_times), statistics.median(pt_times)
    ratio = np_med / pt_med
    grad_diff = gradient_difference(X, y)
    load_after = os.getloadavg()[0]

    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, torch threads "
        f"{torch.get_num_threads()}, numpy BLAS threads {_blas_threads()}, "
        f"numpy {np.__version__}, torch {torch.__version__}",
        "load_average_1min": [load_before, load_after],
        "numpy_epoch_seconds": np_times,
        "torch_epoch_seconds": pt_times,
        "numpy_median_s": np_med,
        "torch_median_s": pt_med,
        "ratio": ratio,
        "target_ratio": TARGET_RATIO,
        "pass": ratio <= TARGET_RATIO,
        "numpy_epoch_losses": np_losses,
        "torch_epoch_losses": pt_losses,
        "max_grad_abs_diff_float64": grad_diff,
    }
    print(f"machine: {result['machine']}")
    print(f"1-min load average before / after: {load_before:.2f} / {load_after:.2f}")
    print(f"one epoch, 784-256-10, SGD lr {LR}, batch {BATCH}, {len(X)} images, float32")
    print(f"  numpy : median {np_med:.3f} s  ({', '.join(f'{t:.3f}' for t in np_times)})")
    print(f"  torch : median {pt_med:.3f} s  ({', '.join(f'{t:.3f}' for t in pt_times)})")
    print(
        f"  ratio numpy/torch = {ratio:.2f}x (target <= {TARGET_RATIO}x): "
        f"{'PASS' if result['pass'] else 'FAIL'}"
    )
    print(
        f"  mean train loss per epoch: numpy {', '.join(f'{v:.4f}' for v in np_losses)}; "
        f"torch {', '.join(f'{v:.4f}' for v in pt_losses)}"
    )
    print(f"five-formula backward vs torch.autograd (float64, batch {BATCH}): max |diff| = {grad_diff:.2e}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs per framework")
    parser.add_argument("--threads", type=int, help="threads for both torch and NumPy's BLAS")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    with _thread_limit(args.threads):
        return _run(args)


if __name__ == "__main__":
    main()
