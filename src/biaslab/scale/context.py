"""What a lab's fits use, wherever they run: seeds, initial weights and training setups by name.

A run's context (``biaslab.context.RunContext``) and a task's (:class:`TaskContext`, what a task
function receives in a worker) share these three calls, so one function trains a model in either:
``seed_for(*names)``, ``init_model(build, *names)`` and ``training(tag)``. Each depends only on
the run's seed, the lab's name and the names given: a model gets the same initial weights and the
same shuffling in every process and in every order.

:class:`FitContext` holds those three calls (``RunContext`` is one); :class:`TaskContext` keeps its
trainings' records in a :class:`RecordFile` (one writer per file, rewound on a resume, kept in
memory on another machine), and :class:`TagLogger` is the trainer's logger of one training, into
a run's metrics.jsonl or a task's ``RecordFile``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from biaslab.config import to_dict
from biaslab.fileio import check_run_file_size, json_safe
from biaslab.results import lab_file
from biaslab.train.recipes import TrainSetup
from biaslab.train.seed import derive_seed


class FitContext:
    """Seeds, initial weights and training setups for the fits of one run of ``experiment``.

    Args:
        experiment: the lab's name (mixed into every seed).
        cfg: the run's config.
        seed: the run's seed.
        profile: ``"quick"``, ``"default"`` or ``"full"``.
        device: where fits compute (``"cpu"``, ``"cuda"``, ``"mps"``).
        progress: what each training shows (see ``TrainSetup.progress``).
        checkpoints: the folder of mid-training checkpoints (None: none, a fit restarts).
    """

    def __init__(self, experiment: str, cfg, seed: int, profile: str, device: str, progress, checkpoints):
        self.experiment_name, self.cfg, self.seed, self.profile = experiment, cfg, seed, profile
        self.device, self.progress, self.checkpoints = device, progress, checkpoints
        self._trained: list[str] = []  # tags of the trainings set up so far

    @property
    def quick(self) -> bool:
        return self.profile == "quick"

    def seed_for(self, *names: str) -> int:
        """A seed for a named part of the experiment (stable, independent of call order)."""
        return derive_seed(self.seed, self.experiment_name, *names)

    def init_model(self, build: Callable[[], Any], *names: str):
        """``build()`` with torch's generator seeded for ``names`` + ``"init"``.

        The initial weights of a model depend only on the run's seed and the names, so two
        models built with the same names start from the same weights.
        """
        import torch

        torch.manual_seed(self.seed_for(*names, "init"))
        return build()

    def training(self, tag: str, lr_key: str = "lr") -> TrainSetup:
        """Checkpoint, fingerprint, metrics logger, progress and seed for a training called ``tag``.

        ``ctx.training(tag).trainer(model, config)`` builds its Trainer; the recipes in
        ``biaslab.train.recipes`` take the setup directly. ``lr_key`` is the config key that
        sets this training's learning rate, named if it diverges (default ``"lr"``).
        """
        self._trained.append(tag)
        fingerprint = f"{self.experiment_name}|{self.seed}|{to_dict(self.cfg)}"
        return TrainSetup(
            tag=tag,
            seed=self.seed_for(tag),
            checkpoint=None if self.checkpoints is None else Path(self.checkpoints) / f"{tag}.pt",
            fingerprint=fingerprint,
            logger=self.logger(tag),
            progress=self.progress,
            lr_key=lr_key,
            device=self.device,
        )

    def logger(self, tag: str):
        """Where training ``tag``'s epoch records go (None: nowhere)."""
        return None


class RecordFile:
    """A task's training records in a file of its own, one JSON object per line, for one writer.

    A task's records reach the run's metrics.jsonl only when the task is done (several workers
    never write one file); a resumed training drops what it logged after its checkpoint, as the
    run's own log does. Without a folder the records stay in memory (a worker on another machine).
    """

    def __init__(self, path: Path | None):
        self.path = path
        self.records: list[dict] = []
        if path is not None and path.exists():
            check_run_file_size(path)
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            self.records = [json.loads(line) for line in lines if line.endswith("\n")]  # a cut line dropped

    def log(self, record: dict) -> None:
        record = json_safe(record)
        self.records.append(record)
        if self.path is not None:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")

    def rewind(self, tag: str, step: int) -> None:
        kept = [r for r in self.records if r.get("tag") != tag or r.get("step", 0) <= step]
        if len(kept) != len(self.records):
            self.records = kept
            if self.path is not None:
                self.path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")


class TagLogger:
    """The trainer's logger (``log``, ``rewind``) for training ``tag``, into a run's metrics.jsonl
    (a ``RunDir.metrics``) or a task's :class:`RecordFile`: anything with ``log(record)`` and
    ``rewind(tag, step)``."""

    def __init__(self, sink, tag: str):
        self.sink, self.tag = sink, tag

    def log(self, record: dict) -> None:
        self.sink.log({**record, "tag": self.tag})

    def rewind(self, step: int) -> None:
        self.sink.rewind(self.tag, step)


class TaskContext(FitContext):
    """What a task function receives: the run's config, seeds, models and trainings (``FitContext``),
    its records kept in ``records``."""

    def __init__(self, *args, records: RecordFile, **kwargs):
        super().__init__(*args, **kwargs)
        self.records = records
        self.files: dict[str, bytes] = {}  # the lab's own files, by path in the run folder

    def save_file(self, relative: str, data: bytes) -> None:
        """A file of the lab's own under ``models/`` (as ``RunContext.save_file``), written to the
        run folder by the driver when this task's result arrives, before the result itself: a
        finished task's files are on disk, and a resumed run does not fit it again."""
        self.files[lab_file(relative)] = bytes(data)

    def logger(self, tag: str):
        return TagLogger(self.records, tag)
