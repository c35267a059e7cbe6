"""A Ray cluster on this machine with every connection on 127.0.0.1, for the tests and benchmarks.

By default Ray replaces 127.0.0.1 by the machine's interface address, even with
``--node-ip-address=127.0.0.1``, and its head (its usage-statistics module, loaded even with the
statistics off) asks the cloud's metadata address which cloud it runs on and reports "disabled" to
Ray's server. Each is kept on this machine here (shared/DESIGN.md, Scale-out). The driver's
process needs ``LOOPBACK`` in its environment before it imports ray.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOOPBACK = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # the node's address is 127.0.0.1, not the interface's
    "RAY_AUTH_MODE": "token",  # the driver and the head share one token
    "RAY_AUTH_TOKEN": secrets.token_hex(32),
    "RAY_USAGE_STATS_ENABLED": "0",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def loopback_cluster(cpus: int, pythonpath: str | os.PathLike | None = None) -> Iterator[str]:
    """A Ray head with ``cpus`` CPUs on 127.0.0.1 for the block; its address ``127.0.0.1:PORT``.
    ``pythonpath`` joins the workers' import path."""
    ray_cli = Path(sys.executable).parent / "ray"
    port = free_port()
    temp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))  # short: Ray's socket paths are limited
    (temp / "ray_bootstrap_config.yaml").write_text("provider:\n  type: local\n")  # no metadata request
    paths = [str(p) for p in (pythonpath, os.environ.get("PYTHONPATH")) if p]
    env = {**os.environ, **LOOPBACK, "HOME": str(temp), "RAY_USAGE_STATS_REPORT_URL": "http://127.0.0.1:9/"}
    env["PYTHONPATH"] = os.pathsep.join(paths)
    start = [str(ray_cli), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}"]
    start += [
        f"--num-cpus={cpus}",
        "--include-dashboard=false",
        "--disable-usage-stats",
        f"--temp-dir={temp}",
    ]
    started = subprocess.run(start, env=env, capture_output=True, text=True, timeout=180)
    if started.returncode != 0:
        shutil.rmtree(temp, ignore_errors=True)
        raise RuntimeError(f"ray start failed: {started.stderr[-3000:]}")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([str(ray_cli), "stop", "--force"], env=env, capture_output=True, timeout=180)
        shutil.rmtree(temp, ignore_errors=True)
