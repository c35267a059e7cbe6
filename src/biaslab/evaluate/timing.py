"""Wall-clock cost: the fastest of several timings of a call.

The fastest run is the one least disturbed by other work on the machine (timeit's advice: the
minimum, not the mean, estimates what the code itself costs). Timings depend on the machine and
its load: they are results.json's ``timings`` and ``timing=True`` claims, never what a seed fixes.

:func:`fastest_time` (the fewest seconds of several calls, as timeit's minimum; GPU work waited for
by :func:`wait_for_gpu`), :func:`time_attention` (attention on seeded inputs, no autograd),
:func:`time_forward_backward` (a step's two halves, each the fastest of several) and
:func:`backward_operations` (the forward and backward operations counted by torch's
``FlopCounterMode``, equal to the products counted by hand: tested).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from biaslab.checks import check_integer
from biaslab.nn.attention import scaled_dot_product_attention

__all__ = ["backward_operations", "fastest_time", "time_attention", "time_forward_backward"]


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


def time_forward_backward(
    model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, loss_fn: Callable, repeats: int = 10
) -> tuple[float, float]:
    """(forward seconds, backward seconds) of one training step's two halves: the fastest of
    ``repeats`` forward passes with the loss (autograd recording, as in training) and the fastest
    of the backward passes that follow each (the gradients set to None first, as the Trainer does).
    """
    repeats = check_integer(repeats, "repeats", 1)
    forward = backward = float("inf")
    for _ in range(repeats):
        model.zero_grad(set_to_none=True)
        wait_for_gpu()
        start = time.perf_counter()
        loss = loss_fn(model(inputs), targets)
        wait_for_gpu()
        middle = time.perf_counter()
        loss.backward()
        wait_for_gpu()
        forward, backward = min(forward, middle - start), min(backward, time.perf_counter() - middle)
    return forward, backward


def backward_operations(
    model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, loss_fn: Callable
) -> tuple[int, int]:
    """(forward, backward) floating-point operations of one step, as
    ``torch.utils.flop_counter.FlopCounterMode`` counts them (matrix products and convolutions:
    2 per multiply-add; elementwise work is not counted)."""
    model.zero_grad(set_to_none=True)
    with FlopCounterMode(display=False) as counter:
        loss = loss_fn(model(inputs), targets)
    forward = counter.get_total_flops()
    with FlopCounterMode(display=False) as counter:
        loss.backward()
    return forward, counter.get_total_flops()
