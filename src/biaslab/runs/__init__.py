"""The run directory: its file names, its lock, and reading and writing its files.

Layout (see docs/reference.md, "The run directory")::

    runs/<name>-<YYYYmmdd-HHMMSS>-<seed>/
        config.json      resolved config, seed, profile, threads, device, package versions
        metrics.jsonl    one JSON object per logged record (each epoch of each training)
        results.json     final metrics (flat keys, and the records with their dimensions and the
                         lab's words: biaslab.records) and each claim beside its measured value;
                         wall-clock measurements apart under "timings" (see reproducible())
        figures/*.png
        report.html      self-contained (figures embedded)
        checkpoints/
        tasks/<fn>/      (a study of tasks) each finished task's result
        models/          (a lab's own files: compare's fitted models and preparation)
        metrics.csv, results.csv, tensorboard/, mlruns/   (--log csv / tensorboard / mlflow)
        labs/<name>/     (a workshop only) one run directory per lab, and index.html
        traceback.txt    (only after a bug) the full traceback of the internal error
        .lock            held (flock) by the one process that writes the run
        COMPLETE         written last: a run without it is unfinished

Everything that reads or writes these names (the runner, ``biaslab show``, the report, the
index and the workshop) takes them from here, and judges claims with :func:`verdict_of` and
:func:`tally` (defined in :mod:`biaslab.results`, re-exported here), so that there is one
vocabulary of verdicts.

One process writes a run: :meth:`RunDir.create` and :meth:`RunDir.open` take the directory's
lock (:mod:`biaslab.locking`) and the runner releases it. A directory that holds another run's
files without its config.json is refused; a resume clears what a kill interrupted (temporary
files of atomic writes, a metrics line cut short).

The package's modules: :mod:`~biaslab.runs.names` (the file names, the run's fingerprint),
:mod:`~biaslab.runs.inspection` (is a folder a run, or free for one; nothing written),
:mod:`~biaslab.runs.folder` (:class:`RunDir`: made or opened under its lock, its files) and
:mod:`~biaslab.runs.metrics_log` (``metrics.jsonl`` and the loggers, ``RunDir.metrics``).
"""

from biaslab.fileio import atomic_write_text, read_json, write_json
from biaslab.results import (  # re-exported: the run directory's readers take them from here
    COMPLETE,
    MODELS,
    RESULTS,
    TIMING_KEYS,
    TIMINGS,
    VERDICTS,
    Tally,
    Verdict,
    reproducible,
    reproducible_record,
    tally,
    verdict_of,
)
from biaslab.runs.folder import RunDir
from biaslab.runs.inspection import find_runs
from biaslab.runs.metrics_log import MetricsLog
from biaslab.runs.names import (
    CHECKPOINTS,
    CONFIG,
    FIGURES,
    INDEX,
    LABS,
    LOCK,
    METRICS,
    REPORT,
    RUN_MARKER,
    TASKS,
    TRACEBACK,
    run_fingerprint,
)

__all__ = [
    "CHECKPOINTS",
    "COMPLETE",
    "CONFIG",
    "FIGURES",
    "INDEX",
    "LABS",
    "LOCK",
    "METRICS",
    "MODELS",
    "REPORT",
    "RESULTS",
    "RUN_MARKER",
    "TASKS",
    "TIMINGS",
    "TIMING_KEYS",
    "TRACEBACK",
    "VERDICTS",
    "MetricsLog",
    "RunDir",
    "Tally",
    "Verdict",
    "atomic_write_text",
    "find_runs",
    "read_json",
    "reproducible",
    "reproducible_record",
    "run_fingerprint",
    "tally",
    "verdict_of",
    "write_json",
]
