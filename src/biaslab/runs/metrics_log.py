"""A run's metrics log, ``metrics.jsonl``: one JSON object per logged step, appended and flushed,
handed to the loggers (``--log``: CSV, TensorBoard, MLflow) as it is written; rewound when a
resume redoes work, and read back with a line that a kill cut short left out."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from biaslab.checks import is_integer
from biaslab.errors import DataFormatError
from biaslab.fileio import as_storage_error, atomic_write_text, check_run_file_size, json_safe
from biaslab.loggers import Sink


class MetricsLog:
    """``metrics.jsonl`` at ``path`` (in its run folder), and the sinks each record also goes to."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.sinks: list[Sink] = []  # where records go besides metrics.jsonl (``--log``)

    def log(self, record: dict) -> None:
        """Append one JSON object to metrics.jsonl (one line, flushed)."""
        record = json_safe({"time": round(time.time(), 3), **record})
        line = json.dumps(record)
        try:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        except OSError as exc:
            raise (as_storage_error(exc, self.path) or exc) from None
        for sink in self.sinks:
            sink.log(record)

    def close_sinks(self, results: Sequence[dict] | None = None) -> None:
        """Hand every sink the run's final metrics as records (``results``: at a run's end, with
        their dimensions; :func:`biaslab.records.every_record`), then the whole log, and close it
        (the end of an attempt)."""
        sinks, self.sinks = self.sinks, []
        if sinks:
            records = self.read()
            for sink in sinks:
                if results is not None:
                    sink.results(results)
                sink.close(records)

    def _records(self) -> list[tuple[str, dict]]:
        """metrics.jsonl's complete lines, each with the JSON object it holds.

        A last line without its newline (a kill cut it short) is left out; any other bad line,
        or bytes that are not UTF-8, is a one-line DataFormatError naming the file and the line.
        """
        if not self.path.exists():
            return []
        check_run_file_size(self.path)
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise (as_storage_error(exc, self.path, "read") or exc) from None
        lines = data.split(b"\n")
        lines.pop()  # after the last newline: empty, or a line cut short
        records = []
        for number, raw in enumerate(lines, start=1):
            try:
                text = raw.decode("utf-8")
                record = json.loads(text)
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
                what = malformed_field(record)
            except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
                what = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "not a JSON object"
            if what is not None:
                error = DataFormatError(
                    f"{self.path} line {number} is {what}: the log is corrupt; delete "
                    "that line (or the file, losing the log) and resume"
                )
                error.resume = self.path.parent
                raise error
            records.append((text, record))
        return records

    def _keep(self, keep: Callable[[dict], bool]) -> None:
        """Rewrite metrics.jsonl with the complete records ``keep`` accepts (a line cut short
        by a kill never is); the file is left alone when that would change nothing."""
        if not self.path.exists():
            return
        kept = [text for text, record in self._records() if keep(record)]
        if self.path.stat().st_size != sum(len(text.encode()) + 1 for text in kept):
            atomic_write_text(self.path, "".join(text + "\n" for text in kept))

    def repair(self) -> None:
        """Drop a last line that a kill cut short (it would glue onto the next record)."""
        self._keep(lambda record: True)

    def rewind(self, tag: str, step: int) -> None:
        """Drop records of training ``tag`` logged after ``step`` (work that a resume will redo),
        here and in every sink."""
        self._keep(lambda record: record.get("tag") != tag or record.get("step", 0) <= step)
        for sink in self.sinks:
            sink.rewind(tag, step)

    def drop(self, tags: Sequence[str]) -> None:
        """Drop every record of trainings ``tags`` (a task that runs again logs them anew)."""
        tags = set(tags)
        if tags and self.path.exists():
            self._keep(lambda record: record.get("tag") not in tags)
            for sink in self.sinks:
                for tag in tags:
                    sink.rewind(tag, -1)

    def read(self) -> list[dict]:
        """Every record of metrics.jsonl (a last line cut short by a kill is left out)."""
        return [record for _, record in self._records()]


def malformed_field(record: dict) -> str | None:
    """What is wrong with a metrics record's bookkeeping fields (a resume rewinds by them), or
    None: ``tag`` is text, ``step`` and ``epoch`` whole numbers of at least 0."""
    if "tag" in record and not isinstance(record["tag"], str):
        return f"a record whose tag is {record['tag']!r}, not text"
    for key in ("step", "epoch"):
        value = record.get(key, 0)
        if not is_integer(value) or value < 0:
            return f"a record whose {key} is {value!r}, not a whole number >= 0"
    return None
