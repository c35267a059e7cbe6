"""Ways around a report: the link back to the index that lists the run, links to the run's
files, and the contents list of the page's sections.

Every link is relative (a run directory can be moved, copied or mailed as a whole) and
URL-quoted; nothing links outside the run directory except the index above it.

The back link: a report links to the index that lists its run only where that index exists or
will exist, so that it is never a dead end:

- a lab of a run of several labs (``<run>/labs/<name>/``, ``<run>`` a run directory: the
  workshop) links to ``../../index.html``, which that run writes once its labs are done
  (``sequence.run_in_order``); the lab's report is written before it;
- any other run links to ``../index.html`` where biaslab wrote one (``biaslab report FOLDER``
  indexes a folder of runs; a report written before that has no link until it is written again);
- otherwise there is no back link.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from biaslab.runs import CONFIG, FIGURES, INDEX, LABS, METRICS, RESULTS, RunDir

__all__ = ["file_links", "href", "index_link", "shorten", "written_by_biaslab"]


def href(relative: str | Path) -> str:
    """A relative path as a link target: POSIX separators, every unsafe character quoted."""
    return urllib.parse.quote(Path(relative).as_posix())


def written_by_biaslab(page: Path) -> bool:
    """Whether ``page`` is one of biaslab's pages (its generator tag; before 0.2, its title)."""
    try:
        with open(page, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return b'<meta name="generator" content="biaslab">' in head or b"<title>biaslab" in head


def index_link(run_dir: Path) -> str | None:
    """The relative link from ``run_dir``'s report to the index that lists it, or None (see the
    module's rule)."""
    run_dir = Path(run_dir).absolute()
    parent = run_dir.parent
    if parent.name == LABS and RunDir(parent.parent).is_run:
        return href(Path("..", "..", INDEX))
    if written_by_biaslab(parent / INDEX):
        return href(Path("..", INDEX))
    return None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def file_links(run_dir: Path, n_records: int, n_figures: int) -> list[dict]:
    """The run's own files a reader may open: config.json, results.json, metrics.jsonl, the
    figures folder and, for a run of several labs, the index of its labs (written before the
    run's report); each one present as ``{"text", "href", "note"}``."""
    run_dir = Path(run_dir)
    rundir = RunDir(run_dir)
    candidates = [
        (CONFIG, CONFIG, "the run's settings"),
        (RESULTS, RESULTS, "every number of this page"),
        (METRICS, METRICS, _count(n_records, "training record")),
        (f"{FIGURES}/", FIGURES, _count(n_figures, "figure")) if n_figures else None,
        (INDEX, INDEX, "the labs of this run") if rundir.labs_dir.is_dir() else None,
    ]
    return [
        {"text": text, "href": href(name), "note": note}
        for text, name, note in filter(None, candidates)
        if (run_dir / name).exists()
    ]


def shorten(text: str, limit: int = 70) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters, with an ellipsis."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "\u2026"
