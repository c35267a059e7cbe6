"""Benchmark: one study's wall time run serially, by 2 local worker processes, and on a 2-CPU Ray
cluster on this machine (every connection on 127.0.0.1).

    python benchmarks/executors.py [--labs qm9:quick mnist1d:default] [--json out.json]

For each lab and profile, runs ``biaslab run`` three times in a row on a quiet machine:
``--executor serial`` (every core for each fit), ``--executor local --workers 2`` (one thread
each) and ``--executor ray`` on a fresh 2-CPU head (one CPU per task), and prints each wall time
(the whole command: imports, data, every fit, the report) with its ratio to serial, and whether
local and Ray gave the same results (both compute each fit on one thread). It warns when the load
average shows a busy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.scale.ray_cluster

from biaslab.hardware import busy_warning
from biaslab.runs import read_json, reproducible
from tests.scale.ray_cluster import LOOPBACK, loopback_cluster

SCRIPT = Path(sys.executable).parent / "biaslab"


def timed_run(lab: str, profile: str, out: Path, *options: str, env=None) -> float:
    flag = [] if profile == "default" else [f"--{profile}"]
    command = [str(SCRIPT), "run", lab, *flag, "--out", str(out), "--no-progress", *options]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labs", nargs="+", default=["qm9:quick", "mnist1d:default"])
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    warning = busy_warning()
    if warning:
        print(warning)
    figures = {}
    with tempfile.TemporaryDirectory() as root:
        for spec in args.labs:
            lab, _, profile = spec.partition(":")
            profile = profile or "default"
            out = Path(root) / f"{lab}-{profile}"
            serial = timed_run(lab, profile, out / "serial")
            local = timed_run(lab, profile, out / "local", "--executor", "local", "--workers", "2")
            env = {**os.environ, **LOOPBACK}
            with loopback_cluster(cpus=2) as address:
                on_ray = timed_run(
                    lab, profile, out / "ray", "--executor", "ray", "--address", address, env=env
                )
            same = reproducible(read_json(out / "local" / "results.json")) == reproducible(
                read_json(out / "ray" / "results.json")
            )
            figures[spec] = {"serial_s": serial, "local_s": local, "ray_s": on_ray, "local_equals_ray": same}
            print(
                f"{spec}: serial {serial:.1f} s; local 2 workers {local:.1f} s ({local / serial:.2f}x); "
                f"ray 2 CPUs {on_ray:.1f} s ({on_ray / serial:.2f}x); local and ray results equal: {same}"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
