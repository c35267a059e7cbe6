"""Fixtures the test modules share."""

import pytest


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """The test runs in its own empty directory (a module that runs biaslab uses it for every
    test: ``pytestmark = pytest.mark.usefixtures("in_tmp")``), so a default ``runs/`` never
    lands in the repository."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
