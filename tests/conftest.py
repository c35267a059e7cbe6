"""Fixtures the test modules share.

One quick workshop serves two sets of tests: the report tests read its pages
(``quick_workshop``) and the lab tests its labs' runs (``quick_run`` in
``tests/experiments/conftest.py``). Where both are collected the labs are run once, inside the
workshop, each under a record of the config keys it reads; a session without the report tests
(``pytest tests/experiments -k xor``) runs only the labs it asks for.
"""

import os

import pytest

import biaslab
from biaslab import registry, sequence
from biaslab.errors import DataMissingError

WORKSHOP_COLLECTED = pytest.StashKey[bool]()


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected
def pytest_collection_modifyitems(config, items):
    config.stash[WORKSHOP_COLLECTED] = any("quick_workshop" in item.fixturenames for item in items)


def workshop_collected(config) -> bool:
    """Whether a test of this session reads the quick workshop (so the labs run inside it)."""
    return config.stash.get(WORKSHOP_COLLECTED, False)


@pytest.fixture(scope="session", autouse=True)
def quiet_machine():
    """The machine counts as quiet: whether a run prints the busy-machine line depends on what
    else runs beside the suite, so no test's stderr may hang on it (``tests/test_hardware.py``
    tests the line over scripted loads)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("biaslab.runner.few_idle_cores_notice", lambda threads: None)
        yield


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """The test runs in its own empty directory (a module that runs biaslab uses it for every
    test: ``pytestmark = pytest.mark.usefixtures("in_tmp")``), so a default ``runs/`` never
    lands in the repository."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def quick_workshop_labs(tmp_path_factory):
    """``biaslab run workshop --quick`` (seed 0, CPU), with each of its labs' results and the
    config keys each lab read while it ran (``tests.experiments.key_reads``): ``(run directory,
    {lab: Result}, {lab: set of keys})``. Skipped without the data sets its labs read, except
    under CI, which must run it."""
    from tests.experiments.key_reads import recording

    out = tmp_path_factory.mktemp("workshop") / "ws"
    results, reads = {}, {}
    run_lab = sequence.run

    def recorded(name=None, **options):  # the workshop's own call of each lab, recorded
        if name is None:  # a resumed lab: nothing of ours
            return run_lab(**options)
        with recording(registry.get(name).config) as reads[name]:
            results[name] = run_lab(name, **options)
        return results[name]

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sequence, "run", recorded)
            run_dir = biaslab.run("workshop", profile="quick", out=out, device="cpu", progress=False).run_dir
    except DataMissingError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{exc}; CI must run the workshop")
        pytest.skip(str(exc))
    return run_dir, results, reads


@pytest.fixture(scope="session")
def quick_workshop(quick_workshop_labs):
    """The run directory of ``biaslab run workshop --quick`` (seed 0, CPU)."""
    return quick_workshop_labs[0]
