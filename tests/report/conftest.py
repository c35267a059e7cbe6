"""Fixtures of the report tests: one quick workshop run, shared by the tests that check every
lab's pages (made once per session, about a minute on two cores)."""

import os

import pytest

import biaslab
from biaslab.errors import DataMissingError


@pytest.fixture(scope="session")
def quick_workshop(tmp_path_factory):
    """The run directory of ``biaslab run workshop --quick`` (seed 0, CPU). Skipped without the
    data sets its labs read, except under CI, which must run it."""
    out = tmp_path_factory.mktemp("workshop") / "ws"
    try:
        return biaslab.run("workshop", profile="quick", out=out, device="cpu", progress=False).run_dir
    except DataMissingError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{exc}; CI must run the workshop")
        pytest.skip(str(exc))
