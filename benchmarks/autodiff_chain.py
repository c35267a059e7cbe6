"""Benchmark: the scratch autodiff engine on a long chain (biaslab.scratch.autodiff).

Builds x_{k+1} = x_k * 1.0000001 for 100,000 nodes and calls backward once, as the test
``test_100k_node_chain_backward_never_recurses`` does (which checks the gradient and that the
walk never recurses, but times nothing: a wall-clock limit fails on a loaded machine). Prints
the build and backward times, best and median of ``--repeats``, and the load average.

    python benchmarks/autodiff_chain.py [--nodes 100000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from biaslab.hardware import busy_warning
from biaslab.scratch.autodiff import Tensor


def one_chain(nodes: int) -> tuple[float, float]:
    start = time.perf_counter()
    x0 = Tensor(1.0, requires_grad=True)
    x = x0
    for _ in range(nodes):
        x = x * 1.0000001
    built = time.perf_counter()
    x.backward()
    done = time.perf_counter()
    assert abs(x0.grad - 1.0000001**nodes) < 1e-6 * 1.0000001**nodes
    return built - start, done - built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    warning = busy_warning()
    if warning:
        print(warning)
    times = [one_chain(args.nodes) for _ in range(args.repeats)]
    for what, values in (("build", [t[0] for t in times]), ("backward", [t[1] for t in times])):
        best, median = min(values), statistics.median(values)
        print(f"{what:>8} of {args.nodes:,} nodes: best {best:.3f} s, median {median:.3f} s")
    print(f"load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
