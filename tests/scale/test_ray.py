"""Studies on a real Ray cluster, started by the tests on this machine with every connection on
127.0.0.1 (shared/DESIGN.md, Scale-out: by default Ray swaps 127.0.0.1 for the machine's interface
address). The same results as serial; a worker killed under its task has the task run again."""

from __future__ import annotations

import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

import biaslab
from biaslab.errors import ConfigError
from biaslab.runs import RunDir
from biaslab.scale.executors import SerialExecutor
from biaslab.scale.ray_executor import RayExecutor
from biaslab.scale.tasks import Study, TaskSpec
from tests.scale import task_functions as tf
from tests.scale.conftest import LONGER, records_of, results_of
from tests.scale.ray_cluster import LOOPBACK, loopback_cluster

os.environ.update(LOOPBACK)  # Ray reads them when it is imported: the driver, this process, has them first
ray = pytest.importorskip("ray")
pytestmark = pytest.mark.usefixtures("in_tmp")
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Cluster:
    address: str
    outside_before: set


def outside_loopback() -> set[tuple[str, str, str]]:
    """Every TCP socket of this machine with an end off loopback: (state, local, peer)."""
    lines = subprocess.run(["ss", "-tanH"], capture_output=True, text=True, check=True).stdout.splitlines()
    found = set()
    for line in lines:
        state, _, _, local, peer = line.split()[:5]
        hosts = [address.rsplit(":", 1)[0].strip("[]") for address in (local, peer)]
        if state == "LISTEN":
            hosts = hosts[:1]  # its peer is a wildcard
        if not all(host.startswith("127.") or host in ("::1", "::ffff:127.0.0.1") for host in hosts):
            found.add((state, local, peer))
    return found


@pytest.fixture(scope="module")
def cluster():
    before = outside_loopback()
    with loopback_cluster(cpus=2, pythonpath=REPO) as address:  # workers import tests.scale.*
        yield Cluster(address, before)
        if ray.is_initialized():
            ray.shutdown()


def test_a_study_on_ray_gives_the_serial_results_and_keeps_to_loopback(cluster, reference):
    run = biaslab.run("mnist1d", LONGER, profile="quick", out="on-ray", executor="ray",
                      address=cluster.address, progress=False)  # fmt: skip
    assert results_of(run.run_dir) == results_of(reference)
    assert records_of(run.run_dir) == records_of(reference)
    ray.init(address=cluster.address, logging_level="ERROR")  # connected while the sockets are read
    try:
        assert ray.cluster_resources()["CPU"] == 2
        new = outside_loopback() - cluster.outside_before
    finally:
        ray.shutdown()
    assert not new, f"sockets of the cluster off 127.0.0.1: {sorted(new)}"


def test_a_ray_worker_killed_under_its_task_has_it_run_again(cluster, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    keys, cfg, host = [("a",), ("b",), ("c",)], tf.StudyConfig(str(marks)), socket.gethostname()
    results = {}
    for name, executor in (
        ("ray", RayExecutor(cluster.address, threads=1, gpus=0)),
        ("serial", SerialExecutor()),
    ):
        run = RunDir.create("study", 7, out=tmp_path / name)
        specs = [TaskSpec(tf.dies_once, key, "study", cfg, 7, "quick", "cpu", 1, False, str(run.path), host)
                 for key in keys]  # fmt: skip
        try:
            results[name] = Study(run, executor).run_all(specs)
        finally:
            executor.close()
            run.release()
    assert sorted(p.name for p in marks.iterdir()) == ["a.started", "b.started", "c.started"]  # killed on Ray
    assert results["ray"] == results["serial"]


def test_no_cluster_at_the_address_is_one_line(cluster):
    with pytest.raises(ConfigError, match="no Ray cluster answered at 127.0.0.1:1 .*ray start --head"):
        RayExecutor("127.0.0.1:1", threads=1, gpus=0).connect()
