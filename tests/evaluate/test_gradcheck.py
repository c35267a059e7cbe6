"""The gradient check's memory estimate (its results are checked by the manual-backprop lab)."""

import tracemalloc

import numpy as np

from biaslab.evaluate.gradcheck import mlp_gradient_report, report_memory_bytes
from biaslab.scratch import TwoLayerMLP


def test_report_memory_bytes_bounds_the_measured_peak():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((32, 784)), rng.integers(0, 10, 32)
    mlp_gradient_report(TwoLayerMLP(784, 8, 10), X, y)  # torch's one-time allocations first
    model = TwoLayerMLP(784, 1024, 10)
    tracemalloc.start()  # sees NumPy's arrays; torch's two copies are in the estimate too
    try:
        report = mlp_gradient_report(model, X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report["max_diff_torch"] <= 1e-12
    assert peak <= report_memory_bytes(784, 1024, 10) <= 3 * peak


def test_report_memory_bytes_grows_with_the_parameters():
    p = 1024 * 784 + 1024 + 10 * 1024 + 10
    assert report_memory_bytes(784, 1024, 10, batch=0) == 8 * 8 * p
    assert report_memory_bytes(784, 10**9, 10) > 2**40
