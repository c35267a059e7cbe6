"""Shared fixtures of the experiment smoke tests: data availability, and one quick run per lab."""

import os

import pytest

import biaslab
from biaslab import registry
from biaslab.data.availability import require_data
from biaslab.errors import BiaslabError
from tests.conftest import workshop_collected
from tests.experiments.key_reads import recording


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
def quick_run(request, tmp_path_factory):
    """``quick_run(name)``: the lab's --quick run with seed 0 on the CPU (the device given
    explicitly: the whole device path is exercised), made once per test session: the quick
    workshop's run of the lab where this session runs the workshop anyway (``tests/conftest.py``),
    else a run of its own."""
    root = tmp_path_factory.mktemp("quick")
    done, reads = {}, {}
    if workshop_collected(request.config):
        _, in_workshop, workshop_reads = request.getfixturevalue("quick_workshop_labs")
        done.update(in_workshop)
        reads.update(workshop_reads)

    def get(name):
        if name not in done:
            with recording(registry.get(name).config) as reads[name]:
                done[name] = biaslab.run(name, profile="quick", out=root / name, device="cpu")
        return done[name]

    get.reads = reads  # the config keys each lab read while it ran (tests.experiments.key_reads)
    return get
