"""Benchmark: the time a run spends around its training, in fresh processes, as a user sees it.

    python benchmarks/startup.py [--repeats 3] [--json out.json] [--catalog-only]

Each round (rounds interleave the commands, figures are medians) times, as new processes:

1. ``python -c pass``: the interpreter alone;
2. ``import torch`` and ``import torch, torch._dynamo``: the floor every run that trains with a
   ``torch.optim`` optimizer pays before its first step (torch imports ``torch._dynamo`` in
   ``Optimizer.add_param_group``, ``zero_grad`` and ``step``), each ended with ``os._exit`` as
   the ``biaslab`` script ends;
3. ``biaslab list`` and ``biaslab config xor``, each first in a new, empty data directory
   (``BIASLAB_DATA``: the first call a user makes), then again in the same directory (warm);
   ``list`` answers from the sources without importing torch (target: under 1 s, first call
   too); ``config`` imports the lab it shows, torch with it (about 2 s on 2 cores);
4. ``biaslab run mnist-mlp``: the whole command, its training steps (``train_seconds`` in
   results.json) and everything else (wall clock minus training steps); ``--catalog-only``
   leaves it out (and the MNIST cache it needs).

It ends with one line:
``summary: mnist-mlp outside training = X s (target 3 s); torch + torch._dynamo import = Y s;
list first/warm = A/B s; config xor first/warm = C/D s``
and warns when the load average shows a busy machine (absolute figures then mean little).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from biaslab.hardware import busy_warning

SCRIPT = Path(sys.executable).with_name("biaslab")
IMPORTS = {
    "python -c pass": "pass",
    "import torch": "import os, torch; os._exit(0)",
    "import torch, torch._dynamo": "import os, torch, torch._dynamo; os._exit(0)",
}


CATALOG_COMMANDS = {"list": ["list"], "config xor": ["config", "xor"]}


def wall(command: list[str], env: dict[str, str] | None = None) -> float:
    """Seconds from starting ``command`` to its exit; a failure stops the benchmark."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return seconds


def run_mnist_mlp(folder: Path) -> tuple[float, float]:
    """(wall seconds, training-step seconds) of one ``biaslab run mnist-mlp``."""
    out = folder / f"mnist-mlp-{time.monotonic_ns()}"
    seconds = wall([str(SCRIPT), "run", "mnist-mlp", "--no-progress", "--out", str(out)])
    train = json.loads((out / "results.json").read_text())["timings"]["train_seconds"]
    return seconds, train


def first_and_warm(args: list[str], folder: Path) -> tuple[float, float]:
    """Seconds of ``biaslab ARGS`` in a new, empty data directory, then again in it."""
    data = folder / f"data-{time.monotonic_ns()}"
    data.mkdir()
    env = {**os.environ, "BIASLAB_DATA": str(data)}
    return wall([str(SCRIPT), *args], env), wall([str(SCRIPT), *args], env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--catalog-only", action="store_true", help="time list and config only (no mnist-mlp run)"
    )
    args = parser.parse_args()
    if not SCRIPT.is_file():
        raise SystemExit(f"no biaslab script next to {sys.executable}: install the project first")
    load = os.getloadavg()[0]
    if warning := busy_warning(load=load):
        print(warning)
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        if not args.catalog_only:
            wall([str(SCRIPT), "data", "prepare"])  # the MNIST cache exists before the first round
        for round_ in range(args.repeats):
            for name, code in IMPORTS.items():
                times.setdefault(name, []).append(wall([sys.executable, "-c", code]))
            for name, argv in CATALOG_COMMANDS.items():
                first, warm = first_and_warm(argv, Path(folder))
                times.setdefault(f"{name}: first call", []).append(first)
                times.setdefault(f"{name}: warm", []).append(warm)
            if not args.catalog_only:
                total, train = run_mnist_mlp(Path(folder))
                times.setdefault("mnist-mlp: whole command", []).append(total)
                times.setdefault("mnist-mlp: training steps", []).append(train)
                times.setdefault("mnist-mlp: outside training", []).append(total - train)
            print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"\nmedians over {args.repeats} rounds (load average {load:.2f} at the start):")
    for name, value in medians.items():
        print(f"  {name:32s} {value:6.2f} s")
    if warning := busy_warning():
        print(warning)
    catalog = "; ".join(
        f"{name} first/warm = {medians[f'{name}: first call']:.2f}/{medians[f'{name}: warm']:.2f} s"
        for name in CATALOG_COMMANDS
    )
    run = (
        ""
        if args.catalog_only
        else f"mnist-mlp outside training = {medians['mnist-mlp: outside training']:.2f} s (target 3 s); "
    )
    print(
        f"summary: {run}torch + torch._dynamo import = {medians['import torch, torch._dynamo']:.2f} s; "
        f"{catalog} (target: list < 1 s; config imports its lab)"
    )
    if args.json:
        args.json.write_text(json.dumps({"load": load, "medians": medians, "times": times}, indent=1))


if __name__ == "__main__":
    main()
