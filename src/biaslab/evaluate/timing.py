"""Wall-clock cost: the fastest of several timings of a call.

The fastest run is the one least disturbed by other work on the machine (timeit's advice: the
minimum, not the mean, estimates what the code itself costs). Timings depend on the machine and
its load: they are results.json's ``timings`` and ``timing=True`` claims, never what a seed fixes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from biaslab.evaluate._checks import check_integer
from biaslab.nn.attention import scaled_dot_product_attention

__all__ = ["fastest_time", "time_attention"]


def fastest_time(
    fn: Callable[[], object], repeats: int = 3, clock: Callable[[], float] = time.perf_counter
) -> float:
    """The fewest seconds of ``repeats`` calls of ``fn()``, each timed on its own.

    Equals ``min(timeit.Timer(fn, timer=clock).repeat(repeats, number=1))``, without timeit's
    switching off of the garbage collector (a lab's run collects as usual). Work ``fn`` queues on
    a GPU is waited for before the clock stops.
    """
    repeats = check_integer(repeats, "repeats", 1)
    best = float("inf")
    for _ in range(repeats):
        wait_for_gpu()
        start = clock()
        fn()
        wait_for_gpu()
        best = min(best, clock() - start)
    return best


def wait_for_gpu() -> None:
    """Block until the GPU has finished its queued work: a CUDA or MPS call returns as soon as
    its kernels are queued, so a clock read right after it would time the launch, not the work."""
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
    if torch.backends.mps.is_available():
        torch.mps.synchronize()


def time_attention(
    length: int, channels: int, batch: int = 1, repeats: int = 3, seed: int = 0, device: str = "cpu"
) -> float:
    """The fastest of ``repeats`` forward passes of :func:`scaled_dot_product_attention` over
    ``length`` tokens of random float32 queries, keys and values (seeded, drawn on the CPU),
    on ``device``, without autograd.

    Shapes:
        q, k, v: (batch, length, channels).
    """
    shape = (
        check_integer(batch, "batch"),
        check_integer(length, "length"),
        check_integer(channels, "channels"),
    )
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(shape, generator=gen).to(device) for _ in range(3))  # (B, T, C)
    with torch.no_grad():
        return fastest_time(lambda: scaled_dot_product_attention(q, k, v), repeats)
