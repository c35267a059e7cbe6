"""Shared fixtures of the experiment smoke tests."""

import os

import pytest

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
