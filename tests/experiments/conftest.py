"""Shared fixtures of the experiment smoke tests: data availability, and one quick run per lab."""

import os

import pytest

import biaslab
from biaslab.data.availability import require_data
from biaslab.errors import BiaslabError


@pytest.fixture(scope="module", autouse=True)
def mnist_available():
    """Skip without the MNIST data package, but fail under CI, which must run the labs."""
    try:
        require_data(("mnist",))
    except BiaslabError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{exc}; CI must run the labs")
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory):
    """``quick_run(name)``: the lab's --quick run with seed 0 on the CPU (the device given
    explicitly: the whole device path is exercised), made once per test session."""
    root = tmp_path_factory.mktemp("quick")
    done = {}

    def get(name):
        if name not in done:
            done[name] = biaslab.run(name, profile="quick", out=root / name, device="cpu")
        return done[name]

    return get
