"""Self-contained HTML reports for run directories, and an index page over many runs.

A report is one file: figures are embedded as base64 ``data:`` URIs and the CSS is inline, so
``report.html`` can be mailed, copied or opened offline and never fetches anything.

The markup lives in Jinja2 templates next to this module (``templates/*.j2``: ``base`` holds
the page shell and CSS, ``report`` and ``index`` extend it, ``macros`` holds the tables they
share). Python only prepares plain data (formatted strings, numbers, booleans, data URIs); the
templates are rendered with autoescaping on and undefined names as errors, so every string
from a run's JSON files reaches the page escaped. Both pages are written atomically.

A report shows each number once (:mod:`~biaslab.report.overlap`), metrics under readable labels
(:mod:`~biaslab.report.labels`), a contents list, links to its files and back to its index
(:mod:`~biaslab.report.navigation`), and marks a quick run as a smoke test, at the top and on
every figure. The index's table of runs is :mod:`~biaslab.report.runs_table`'s.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from biaslab.checks import is_number
from biaslab.errors import BiaslabError
from biaslab.fileio import atomic_write_text
from biaslab.formatting import format_duration, format_value
from biaslab.report.labels import labeller, source_notes
from biaslab.report.navigation import file_links, href, index_link, shorten, written_by_biaslab
from biaslab.report.overlap import shown_in_tables
from biaslab.report.runs_table import COLUMNS, runs_groups
from biaslab.results import kind_of
from biaslab.runs import INDEX, REPORT, TIMINGS, VERDICTS, RunDir, find_runs, tally, verdict_of

__all__ = [
    "FAIL_COLOUR",
    "PASS_COLOUR",
    "UNCHECKED_COLOUR",
    "render_claims",
    "render_index",
    "render_inline",
    "render_report",
]

PASS_COLOUR = VERDICTS["pass"].colour
FAIL_COLOUR = VERDICTS["fail"].colour
UNCHECKED_COLOUR = VERDICTS["unjudged"].colour

_MIME = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".svg": "image/svg+xml",
    ".webp": "image/webp",
}

_ENV = Environment(
    loader=FileSystemLoader(Path(__file__).with_name("templates")),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def _render(template: str, path: Path, **context) -> Path:
    """Render ``template`` with ``context`` (plus the verdict colours) and write it atomically.

    Args:
        template: a file name under ``templates/``.
        path: the page to write.
        **context: the template's variables.

    Returns:
        ``path``.
    """
    atomic_write_text(path, _fill(template, **context))
    return path


def _fill(template: str, **context) -> str:
    """``template`` rendered with ``context`` and the verdict colours."""
    colours = {key: v.colour for key, v in VERDICTS.items()}
    return _ENV.get_template(template).render(colours=colours, **context)


# -- plain data for the templates ------------------------------------------------------------
def _as_dict(v) -> dict:
    """``v`` if it is a dict, else an empty dict (for optional JSON sections)."""
    return v if isinstance(v, dict) else {}


def _cell(v, title: str | None = None) -> dict:
    """One table cell: the formatted text, whether it is a number (right-aligned) and an
    optional tooltip (a metric's key under its label)."""
    return {"text": format_value(v), "num": is_number(v), "title": title}


def _table(columns: Iterable, rows: Iterable) -> dict:
    """A table's columns and rows of cells; a row that is not a list is a one-cell row."""
    return {
        "columns": [format_value(c) for c in columns],
        "rows": [[_cell(c) for c in (r if isinstance(r, (list, tuple)) else [r])] for r in rows],
    }


def _claim(c) -> dict:
    """One row of the claims table; a claim that is not a dict shows as its text, unjudged.

    Args:
        c: a claim from results.json: ``claim``, ``source``, ``expected``, ``measured``,
            ``passed``, ``kind`` (finding or check), ``printed`` (the document's text as printed)
            and, for a slip in a document, ``verdict`` ("notes-wrong" or "slip") and ``computation``.

    Returns:
        Formatted strings, ``measured_num`` (right-align) and the :class:`~biaslab.runs.Verdict`.
    """
    c = c if isinstance(c, dict) else {"claim": c}
    computation = c.get("computation")
    return {
        "claim": format_value(c.get("claim")),
        "source": format_value(c.get("source")),
        "expected": format_value(c.get("expected")),
        "measured": format_value(c.get("measured")),
        "measured_num": is_number(c.get("measured")),
        "computation": None if computation is None else format_value(computation),
        "check": kind_of(c) == "check",
        "printed": None if c.get("printed") is None else format_value(c.get("printed")),
        "timing": c.get("timing") is True,
        "verdict": VERDICTS[verdict_of(c)],
    }


def _png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG header, or ``None`` if ``data`` is not a PNG."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return None


def _figure(run_dir: Path, fig: dict) -> dict:
    """One figure: its data URI and size, or no ``uri`` if the file is unusable.

    PNGs get their width/height from the header so they show at natural pixel size (the CSS
    only shrinks them when wider than the page). A file outside the run directory, missing, or
    of an unknown type is not read; the report shows a visible note instead.
    """
    name, caption = format_value(fig.get("file", "")), format_value(fig.get("caption") or "")
    path = (run_dir / name).resolve()
    mime = _MIME.get(path.suffix.lower())
    data = {"name": name, "caption": caption, "alt": caption or name, "uri": None, "size": None, "href": None}
    data["lead"] = fig.get("lead") is True
    if not name or not path.is_relative_to(run_dir.resolve()) or not path.is_file() or not mime:
        return data
    raw = path.read_bytes()
    data.update(
        uri=f"data:{mime};base64,{base64.b64encode(raw).decode('ascii')}",
        size=_png_size(raw),
        href=href(path.relative_to(run_dir.resolve())),  # the file itself, beside the report
    )
    return data


def _config_sections(cfg: dict) -> list[dict]:
    """The Settings, Run and Versions key/value tables of config.json (empty ones left out)."""
    run_info = {
        k: cfg[k] for k in ("experiment", "profile", "seed", "created", "command") if cfg.get(k) is not None
    }
    sections = [
        ("Settings", _as_dict(cfg.get("config"))),
        ("Run", run_info),
        ("Versions", _as_dict(cfg.get("versions"))),
    ]
    return [
        {"caption": caption, "pairs": [(format_value(k), format_value(v)) for k, v in items.items()]}
        for caption, items in sections
        if items
    ]


def _count_records(path: Path) -> int:
    """Non-blank lines of a metrics.jsonl (0 if there is none)."""
    return sum(1 for line in path.read_bytes().splitlines() if line.strip()) if path.is_file() else 0


# -- the pages -------------------------------------------------------------------------------
def _metrics_block(metrics: dict, label, tables: list[dict]) -> dict | None:
    """The Metrics section: every metric no table shows (:mod:`biaslab.report.overlap`), each
    under its label (:mod:`biaslab.report.labels`) with its key as the tooltip, and a note
    naming the tables that show the others."""
    if not metrics:
        return None
    shown = shown_in_tables(metrics, tables)
    rows = [(k, v) for k, v in metrics.items() if k not in shown]
    table = {
        "columns": ["Metric", "Value"],
        "rows": [[_cell(label(k), title=str(k)), _cell(v)] for k, v in rows],
    }
    where = sorted(set(shown.values()))
    return {
        **table,
        "shown": len(shown),
        "tables": [{"anchor": f"table-{i + 1}", "title": _table_title(tables[i])} for i in where],
    }


def _timings_block(timings: dict, label, of_labs: bool) -> dict | None:
    """The Timings section: each timing under its label, or, in a run of several labs (which
    times each lab under its name), under its name as it stands."""
    if not timings:
        return None
    rows = [[_cell(k if of_labs else label(k), title=str(k)), _cell(v)] for k, v in timings.items()]
    return {"columns": ["Timing", "Seconds"], "rows": rows}


def _table_title(table: dict) -> str:
    return format_value(table.get("title") or "Table")


def _contents(context: dict) -> list[dict]:
    """The contents list: an anchor and a title per section shown, tables and figures by name."""

    def entries(tables: list, figures: list) -> list[dict]:
        return [{"anchor": t["anchor"], "title": shorten(t["title"], 60)} for t in tables] + [
            {"anchor": f["anchor"], "title": shorten(f["caption"] or f["name"], 60)} for f in figures
        ]

    figures, tables = entries([], context["figures"]), entries(context["tables"], [])
    lead = entries(context["lead_tables"], context["lead_figures"])
    sections = [
        ("answer", "The answer", lead, lead),
        ("claims", "Claims", True, []),
        ("figures", "Figures", figures, figures),
        ("tables", "Tables", tables, tables),
        ("labs", "Labs", context["labs"] is not None, []),
        ("metrics", "Metrics", context["metrics"], []),
        ("timings", "Timings", context["timings"], []),
        ("configuration", "Configuration", True, []),
    ]
    return [{"anchor": a, "title": t, "entries": entries} for a, t, present, entries in sections if present]


def _report_context(run_dir: Path, complete: bool | None, order: Sequence[str] | None) -> dict:
    """Everything ``report.html.j2`` shows about one run, as plain data."""
    rundir = RunDir(run_dir)
    res = rundir.read_results(checked=False)
    cfg = rundir.read_config(required=False) or {}
    status = rundir.status if complete is None else ("complete" if complete else "unfinished")
    profile = res.get("profile", cfg.get("profile"))
    lab = res.get("experiment") or cfg.get("experiment")
    label = labeller(res)
    meta = [
        ("Day", res.get("day")),
        ("Experiment", res.get("experiment")),
        ("Profile", profile),
        ("Seed", res.get("seed", cfg.get("seed"))),
        ("Elapsed", format_duration(res.get("elapsed_s"))),
    ]
    claims = res.get("claims") or []
    timings = _as_dict(res.get(TIMINGS))
    tables = [t for t in res.get("tables") or [] if isinstance(t, dict)]
    figures = [_figure(run_dir, f) for f in res.get("figures") or [] if isinstance(f, dict)]
    for i, f in enumerate(figures):
        f["anchor"] = f"figure-{i + 1}"
    shown_tables = [
        {"anchor": f"table-{i + 1}", "title": _table_title(t), "lead": bool(t.get("lead")),
         **_table(_timing_marked(t), t.get("rows") or [])}
        for i, t in enumerate(tables)
    ]  # fmt: skip
    labs = rundir.labs_dir
    n_records = _count_records(rundir.metrics_path)
    context = {
        "title": format_value(res.get("title") or lab or run_dir.name),
        "wide": labs.is_dir(),  # a workshop's table of labs needs the room
        "status": status,
        "quick": profile == "quick",
        "meta": [(label, format_value(v)) for label, v in meta],
        "summary": format_value(res["summary"]) if res.get("summary") else "",
        "claims": [_claim(c) for c in claims],
        "sources": source_notes(c.get("source") for c in claims if isinstance(c, dict)),
        "tally": tally(claims).describe(),
        "metrics": _metrics_block(_as_dict(res.get("metrics")), label, tables),
        "timings": _timings_block(timings, label, labs.is_dir()),
        # What the lab marked as its answer (ctx.table / ctx.figure with lead=True) comes first.
        "lead_tables": [t for t in shown_tables if t["lead"]],
        "lead_figures": [f for f in figures if f["lead"]],
        "figures": [f for f in figures if not f["lead"]],
        "tables": [t for t in shown_tables if not t["lead"]],
        "labs": runs_groups(find_runs(labs), labs, run_dir.absolute(), order) if labs.is_dir() else None,
        "columns": COLUMNS,
        "config": _config_sections(cfg),
        "run_name": run_dir.name,
        "n_records": n_records,
        "index_href": index_link(run_dir),
        "files": file_links(run_dir, n_records, sum(1 for f in figures if f["uri"])),
    }
    context["contents"] = _contents(context)
    return context


def _timing_marked(table: dict) -> list:
    """The table's column names, those of wall-clock columns marked as machine-dependent."""
    timed = set(table.get("timing_columns") or ())
    return [f"{c} (wall clock, this machine)" if c in timed else c for c in table.get("columns") or []]


def render_report(run_dir, complete: bool | None = None, order: Sequence[str] | None = None) -> Path:
    """Write ``<run_dir>/report.html``, a self-contained page describing one run.

    Args:
        run_dir: a run directory holding ``results.json`` (and usually ``config.json``,
            ``metrics.jsonl``, ``figures/`` and ``COMPLETE``).
        complete: the status to show; default: whether ``COMPLETE`` exists. The runner
            passes True because it writes the report just before the marker.
        order: experiment names in workshop order, for the Labs table of a run of several labs
            (rows sort by day, then position here, unknown names last, then name).

    Returns:
        The path of the written ``report.html``.

    Raises:
        BiaslabError: if ``results.json`` is missing or corrupt, or ``config.json`` is corrupt.
    """
    run_dir = Path(run_dir)
    return _render("report.html.j2", run_dir / REPORT, **_report_context(run_dir, complete, order))


def render_inline(run_dir) -> str:
    """One run as an HTML fragment for Jupyter: its claims in verdict colours, figures and tables.

    What ``Result._repr_html_`` and ``biaslab.show`` display; escaped like the report (the same
    autoescaped templates), its CSS scoped to the fragment. Nothing is written.

    Raises:
        BiaslabError: if ``results.json`` is missing or corrupt, or ``config.json`` is corrupt.
    """
    run_dir = Path(run_dir)
    return _fill("inline.html.j2", run_path=str(run_dir), **_report_context(run_dir, None, None))


def render_claims(claims: Sequence[dict]) -> str:
    """Claims (results.json's dicts) as an HTML fragment: the claims table with the tally."""
    return _fill("claims.html.j2", claims=[_claim(c) for c in claims], tally=tally(claims).describe())


def render_index(
    runs_dir, out=None, title: str = "biaslab runs", order: Sequence[str] | None = None, tables=()
) -> Path:
    """Write an HTML index of every run found under ``runs_dir``.

    Run directories are subdirectories holding ``config.json``, searched up to three levels
    deep so that workshop sub-runs (``<run>/labs/<name>/``) are listed too. Runs of one lab that
    differ only in their seed share a row (:mod:`biaslab.report.runs_table`). A click on a
    column's header sorts by it: the page's one small script (reports have none), which only
    moves rows by their cells' sort keys; without script the table keeps the order below. An
    index in a run's own folder (a workshop's) links to that run's report.

    Args:
        runs_dir: the directory to scan.
        out: where to write the index; defaults to ``<runs_dir>/index.html``.
        title: the page title.
        order: experiment names in workshop order; rows sort by day (missing last), position
            in ``order`` (unknown names last), name, creation time and path.
        tables: tables shown above the runs (a sweep's own: compare's leaderboard over the
            seeds), each a dict of ``title``, ``columns`` and ``rows``.

    Returns:
        The path of the written index.

    Raises:
        BiaslabError: ``runs_dir`` is empty text or not an existing directory, or ``out`` is a
            file that biaslab did not write (the user's own page is never overwritten).
    """
    if not str(runs_dir).strip():  # an unset shell variable: not the current folder
        raise BiaslabError("the runs directory is empty (an unset shell variable?); name a folder")
    runs_dir = Path(runs_dir)
    try:
        found = runs_dir.is_dir()
    except OSError as exc:  # a name too long for the file system
        raise BiaslabError(f"{runs_dir}: cannot be read ({exc.strerror or exc})") from None
    if not found:
        raise BiaslabError(f"{runs_dir}: runs directory not found")
    out = Path(out) if out is not None else runs_dir / INDEX
    if out.exists() and not written_by_biaslab(out):
        raise BiaslabError(f"{out} exists and is not a page biaslab wrote; move it, and run this again")
    out.parent.mkdir(parents=True, exist_ok=True)
    runs = find_runs(runs_dir)
    rows = runs_groups(runs, runs_dir, out.parent.absolute(), order)
    return _render(
        "index.html.j2",
        out,
        title=str(title),
        wide=True,
        n=len(runs),
        runs_dir=str(runs_dir),
        rows=rows,
        columns=COLUMNS,
        tables=[{**t, "rows": [[_cell(v) for v in row] for row in t["rows"]]} for t in tables],
        run_report=href(REPORT) if RunDir(out.parent).is_run else None,  # a workshop's index: its report
    )
