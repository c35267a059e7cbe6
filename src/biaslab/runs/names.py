"""The run directory's file names, and the fingerprint that marks its config.json as a run's."""

from __future__ import annotations

import hashlib
import json

from biaslab.results import COMPLETE, MODELS, RESULTS

CONFIG = "config.json"
METRICS = "metrics.jsonl"
REPORT = "report.html"
INDEX = "index.html"
FIGURES = "figures"
CHECKPOINTS = "checkpoints"
LABS = "labs"
TRACEBACK = "traceback.txt"
LOCK = ".lock"
TASKS = "tasks"  # a study's finished tasks (biaslab.scale.tasks)

# Files that only a run writes: found without a config.json, they are another run's leftovers.
RUN_OUTPUTS = (
    COMPLETE,
    RESULTS,
    METRICS,
    REPORT,
    INDEX,
    TRACEBACK,
    FIGURES,
    CHECKPOINTS,
    LABS,
    TASKS,
    MODELS,
)

# config.json's marker: the hash of the keys that fix a run (see run_fingerprint).
RUN_MARKER = "run_fingerprint"
IDENTITY_KEYS = ("experiment", "profile", "seed", "config")  # and "threads", "device" where recorded
PROBE = ".write-test"


def run_fingerprint(saved: dict) -> str:
    """The hash of what fixes a run: experiment, profile, seed, thread count, device, config and
    the digests of the input files it reads (``biaslab.inputs``).

    Written into config.json as its ``run_fingerprint`` when the run starts; a resume refuses a
    config.json without it (not a biaslab run) or whose fields no longer match it (edited).
    """
    identity = {k: saved.get(k) for k in (*IDENTITY_KEYS, "threads", "device", "inputs") if k in saved}
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]
