"""Self-contained HTML reports for run directories, and an index page over many runs.

A report is one file: figures are embedded as base64 ``data:`` URIs and the CSS is inline, so
``report.html`` can be mailed, copied or opened offline and never fetches anything. Every string
that comes from a run's JSON files is passed through :func:`html.escape` before it reaches the
page. Both pages are written atomically (temporary file + :func:`os.replace`).
"""

from __future__ import annotations

import base64
import html
import math
import os
import urllib.parse
from pathlib import Path

from biaslab.errors import BiaslabError
from biaslab.runs import atomic_write_text, read_json

PASS_COLOUR = "#c8f7c5"
FAIL_COLOUR = "#f7c5c5"
UNCHECKED_COLOUR = "#e0e0e0"
_VERDICTS = {True: ("\u2713 PASS", PASS_COLOUR), False: ("\u2717 FAIL", FAIL_COLOUR),
             None: ("not checked", UNCHECKED_COLOUR)}

_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
         ".gif": "image/gif", ".svg": "image/svg+xml", ".webp": "image/webp"}

_CSS = f"""
body {{ margin: 0; background: #f4f5f7; color: #1d1f23;
  font: 16px/1.5 "DejaVu Sans", "Segoe UI", "Helvetica Neue", Arial, sans-serif; }}
main {{ max-width: 1100px; margin: 0 auto; padding: 28px 36px 48px; background: #fff;
  min-height: 100vh; box-sizing: border-box; }}
h1 {{ font-size: 30px; line-height: 1.25; margin: 0 0 6px; }}
h2 {{ font-size: 21px; margin: 34px 0 10px; padding-bottom: 4px;
  border-bottom: 2px solid #e4e6ea; }}
h3 {{ font-size: 17px; margin: 22px 0 8px; }}
.meta {{ color: #555b66; margin: 0 0 14px; }}  .meta span {{ margin-right: 16px; }}
.summary, figcaption {{ max-width: 78ch; }}  .summary {{ margin: 0 0 8px; }}
.badge {{ padding: 1px 10px; border-radius: 10px; font-weight: bold; font-size: 14px; }}
.complete {{ background: {PASS_COLOUR}; }}  .unfinished {{ background: #fde9b8; }}
table {{ border-collapse: collapse; margin: 6px 0 14px; font-size: 15px; }}
th, td {{ border: 1px solid #d5d8de; padding: 6px 12px; text-align: left; vertical-align: top; }}
th {{ background: #eef0f3; }}  caption {{ text-align: left; font-weight: bold; padding: 0 0 4px; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
.nowrap {{ white-space: nowrap; }}
table.kv th {{ font-weight: normal; background: #f6f7f9; }}
main.wide {{ max-width: 1400px; }}  .scroll {{ overflow-x: auto; }}
table.runs th, table.runs td {{ white-space: nowrap; padding: 6px 10px; }}
.cols {{ display: flex; flex-wrap: wrap; gap: 12px 40px; align-items: flex-start; }}
table.claims {{ width: 100%; font-size: 16px; table-layout: fixed; }}
table.claims td {{ overflow-wrap: anywhere; }}  td.source {{ color: #555b66; font-size: 14px; }}  .tally {{ font-size: 17px; margin: 0 0 6px; }}
td.verdict {{ font-weight: bold; text-align: center; white-space: nowrap; }}
figure {{ margin: 18px 0 26px; }}  figcaption {{ color: #444a55; margin-top: 6px; }}
figure img {{ display: block; max-width: 100%; height: auto; border: 1px solid #e4e6ea; }}
.missing {{ color: #a02020; }}  footer {{ margin-top: 36px; color: #777d88; font-size: 13px; }}
code {{ font-family: "DejaVu Sans Mono", monospace; font-size: 14px; }}
"""


def format_value(v) -> str:
    """Format a JSON value for display (the caller still escapes the result).

    Args:
        v: any JSON value: ``None``, bool, int, float, str, list or dict.

    Returns:
        Floats to 4 significant digits (``0.1235``, ``1.235e+06``), ints as digits, ``None``
        as an em dash, bools as ``true``/``false``, lists and dicts as compact JSON-like text.
    """
    if v is None:
        return "\u2014"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {format_value(x)}" for k, x in v.items()) + "}"
    return str(v)


def format_duration(seconds) -> str:
    """Format a duration in seconds as ``3.21 s``, ``2 min 05 s`` or ``1 h 03 min``.

    Args:
        seconds: a number of seconds, or ``None``.

    Returns:
        The human-readable duration (an em dash for ``None`` or a non-number).
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
            or not math.isfinite(seconds):
        return "\u2014"
    if seconds < 60:
        return f"{format_value(float(seconds))} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _e(v) -> str:
    """Format then escape one value for an HTML text node or attribute."""
    return html.escape(format_value(v), quote=True)


def _read_json(path: Path, required: bool = True) -> dict | None:
    """Read a JSON object from ``path``; a missing optional file gives ``None``."""
    if not required and not path.is_file():
        return None
    data = read_json(path)
    if not isinstance(data, dict):
        raise BiaslabError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


def _write_atomic(path: Path, text: str) -> Path:
    atomic_write_text(path, text)
    return path


def _page(title: str, body: str, wide: bool = False) -> str:
    """Wrap an escaped title and a body fragment into a complete HTML document."""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{title}</title>\n<style>{_CSS}</style>\n</head>\n"
            f"<body>\n<main{' class=wide' if wide else ''}>\n{body}\n</main>\n</body>\n</html>\n")


def _table(columns, rows) -> str:
    """An HTML table; numbers are right-aligned, every cell is formatted and escaped."""
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = []
    for row in rows:
        row = row if isinstance(row, (list, tuple)) else [row]
        cells = "".join(
            f"<td class=\"num\">{_e(c)}</td>" if isinstance(c, (int, float))
            and not isinstance(c, bool) else f"<td>{_e(c)}</td>" for c in row)
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _kv_table(caption: str, items: dict) -> str:
    """A headerless two-column key/value table with a caption (empty string if no items)."""
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in items.items())
    return f"<table class=\"kv\"><caption>{caption}</caption>{rows}</table>" if rows else ""


def _as_dict(v) -> dict:
    """``v`` if it is a dict, else an empty dict (for optional JSON sections)."""
    return v if isinstance(v, dict) else {}


def _claims_section(claims: list) -> str:
    """The claims table (claim, source, expected, measured, coloured verdict) and a tally."""
    if not claims:
        return "<h2>Claims</h2>\n<p>This run records no claims.</p>"
    verdicts = [c.get("passed") if isinstance(c.get("passed"), bool) else None for c in claims]
    n_pass, n_fail = verdicts.count(True), verdicts.count(False)
    tally = f"{n_pass} of {len(claims)} claims passed"
    tally += f", {n_fail} failed" if n_fail else ""
    unchecked = len(claims) - n_pass - n_fail
    tally += f", {unchecked} not checked in this profile" if unchecked else ""
    rows = []
    for c, verdict in zip(claims, verdicts):
        text, colour = _VERDICTS[verdict]
        m = c.get("measured")
        num = isinstance(m, (int, float)) and not isinstance(m, bool)
        rows.append(f"<tr><td>{_e(c.get('claim'))}</td>"
                    f"<td class=\"source\">{_e(c.get('source'))}</td>"
                    f"<td>{_e(c.get('expected'))}</td>"
                    f"<td class=\"{'num nowrap' if num else ''}\">{_e(c.get('measured'))}</td>"
                    f"<td class=\"verdict\" style=\"background:{colour}\">{text}</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("Claim", "Source", "Expected", "Measured", "Verdict"))
    cols = "".join(f"<col style=\"width:{w}\">" for w in ("31%", "21%", "19%", "17%", "12%"))
    return (f"<h2>Claims</h2>\n<p class=\"tally\">{tally}</p>\n<table class=\"claims\">"
            f"<colgroup>{cols}</colgroup><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _figure(run_dir: Path, fig: dict) -> str:
    """One ``<figure>`` with the image embedded, or a visible note if the file is unusable.

    PNGs get ``width``/``height`` from their header so they show at natural pixel size (the CSS
    only shrinks them when wider than the page).
    """
    name, caption = str(fig.get("file", "")), fig.get("caption") or ""
    path = (run_dir / name).resolve()
    mime = _MIME.get(path.suffix.lower())
    if not name or not path.is_relative_to(run_dir.resolve()) or not path.is_file() or not mime:
        return (f"<figure><p class=\"missing\">Figure {_e(name)}: not an image file inside the "
                f"run directory.</p><figcaption>{_e(caption)}</figcaption></figure>")
    data = path.read_bytes()
    dims = ""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        dims = (f" width=\"{int.from_bytes(data[16:20], 'big')}\""
                f" height=\"{int.from_bytes(data[20:24], 'big')}\"")
    uri = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return (f"<figure><img src=\"{uri}\"{dims} alt=\"{_e(caption or name)}\">"
            f"<figcaption>{_e(caption)}</figcaption></figure>")


def _labs_section(run_dir: Path) -> str:
    """Links to the sub-run reports of a workshop run (empty string for a plain run)."""
    labs = run_dir / "labs"
    if not labs.is_dir():
        return ""
    return f"<h2>Labs</h2>\n{_runs_table(labs, run_dir.absolute())}"


def _runs_table(runs_dir: Path, out_dir: Path) -> str:
    """A table of every run under ``runs_dir``, linking reports relative to ``out_dir``."""
    rows = sorted(_index_row(run, runs_dir, out_dir) for run in _find_runs(runs_dir))
    if not rows:
        return "<p>No runs found.</p>"
    head = "".join(f"<th>{h}</th>" for h in ("Day", "Experiment", "Run", "Profile", "Seed",
                                              "Status", "Claims passed", "Elapsed",
                                              "Created", "Report"))
    body = "".join(tr for _, tr in rows)
    return (f"<div class=\"scroll\"><table class=\"runs\"><thead><tr>{head}</tr>"
            f"</thead><tbody>{body}</tbody></table></div>")


def render_report(run_dir, complete: bool | None = None) -> Path:
    """Write ``<run_dir>/report.html``, a self-contained page describing one run.

    Args:
        run_dir: a run directory holding ``results.json`` (and usually ``config.json``,
            ``metrics.jsonl``, ``figures/`` and ``COMPLETE``).
        complete: the status to show; default: whether ``COMPLETE`` exists. The runner
            passes True because it writes the report just before the marker.

    Returns:
        The path of the written ``report.html``.

    Raises:
        BiaslabError: if ``results.json`` is missing or corrupt, or ``config.json`` is corrupt.
    """
    run_dir = Path(run_dir)
    res = _read_json(run_dir / "results.json")
    cfg = _read_json(run_dir / "config.json", required=False) or {}
    title = res.get("title") or res.get("experiment") or run_dir.name
    if complete is None:
        complete = (run_dir / "COMPLETE").exists()
    status = "complete" if complete else "unfinished"
    meta = [("Day", res.get("day")), ("Experiment", res.get("experiment")),
            ("Profile", res.get("profile", cfg.get("profile"))),
            ("Seed", res.get("seed", cfg.get("seed"))),
            ("Elapsed", format_duration(res.get("elapsed_s")))]
    parts = [f"<h1>{_e(title)}</h1>\n<p class=\"meta\">"
             + "".join(f"<span>{k} <b>{_e(v)}</b></span>" for k, v in meta)
             + f"<span class=\"badge {status}\">{status}</span></p>"]
    if res.get("summary"):
        parts.append(f"<p class=\"summary\">{_e(res['summary'])}</p>")
    claims = [c if isinstance(c, dict) else {"claim": c} for c in res.get("claims") or []]
    parts.append(_claims_section(claims))
    if _as_dict(res.get("metrics")):
        parts += ["<h2>Metrics</h2>", _table(["Metric", "Value"], res["metrics"].items())]
    figures = [f for f in res.get("figures") or [] if isinstance(f, dict)]
    if figures:
        parts += ["<h2>Figures</h2>"] + [_figure(run_dir, f) for f in figures]
    for t in (t for t in res.get("tables") or [] if isinstance(t, dict)):
        parts += [f"<h3>{_e(t.get('title') or 'Table')}</h3>",
                  _table(t.get("columns") or [], t.get("rows") or [])]
    parts.append(_labs_section(run_dir))
    run_info = {k: cfg[k] for k in ("experiment", "profile", "seed", "created", "command")
                if cfg.get(k) is not None}
    parts += ["<h2>Configuration</h2>\n<div class=\"cols\">",
              _kv_table("Settings", _as_dict(cfg.get("config"))), _kv_table("Run", run_info),
              _kv_table("Versions", _as_dict(cfg.get("versions"))), "</div>"]
    metrics_file = run_dir / "metrics.jsonl"
    n_records = (sum(1 for line in metrics_file.read_bytes().splitlines() if line.strip())
                 if metrics_file.is_file() else 0)
    parts.append(f"<footer>Run directory <code>{_e(run_dir.name)}</code> \u00b7 {n_records} "
                 f"training records in metrics.jsonl \u00b7 {status}</footer>")
    wide = (run_dir / "labs").is_dir()  # a workshop's table of labs needs the room
    return _write_atomic(run_dir / "report.html", _page(_e(title), "\n".join(parts), wide=wide))


def _find_runs(root: Path, depth: int = 3) -> list[Path]:
    """Subdirectories of ``root`` (up to ``depth`` levels down) that contain ``config.json``."""
    found = []
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return found
    for child in children:
        if (child / "config.json").is_file():
            found.append(child)
        if depth > 1:
            found += _find_runs(child, depth - 1)
    return found


def _index_row(run: Path, runs_dir: Path, out_dir: Path) -> tuple[tuple, str]:
    """The sort key and the ``<tr>`` for one run; unreadable JSON shows in the claims cell."""
    try:
        cfg, error = _read_json(run / "config.json"), None
        res = _read_json(run / "results.json", required=False) or {}
    except BiaslabError as exc:
        cfg, res, error = {}, {}, str(exc)
    day = res.get("day") if isinstance(res.get("day"), (int, float)) else None
    day = None if isinstance(day, bool) else day
    name = str(res.get("experiment") or cfg.get("experiment") or run.name)
    created = str(cfg.get("created") or "")
    status = "complete" if (run / "COMPLETE").exists() else "unfinished"
    verdicts = [c.get("passed") for c in res.get("claims") or [] if isinstance(c, dict)]
    n_pass, n_fail = verdicts.count(True), verdicts.count(False)
    unchecked = len(verdicts) - n_pass - n_fail
    claims, colour = f"{n_pass}/{len(verdicts)}", PASS_COLOUR
    if error:
        claims, colour = error, FAIL_COLOUR
    elif not verdicts:
        claims, colour = "\u2014", "transparent"
    elif n_fail or unchecked:
        colour = FAIL_COLOUR if n_fail else UNCHECKED_COLOUR
        claims += f" ({unchecked} not checked)" if unchecked else ""
    report = run / "report.html"
    href = urllib.parse.quote(Path(os.path.relpath(report.absolute(), out_dir)).as_posix())
    link = f"<a href=\"{html.escape(href)}\">report</a>" if report.is_file() else "no report"
    path = run.relative_to(runs_dir).as_posix()
    tr = (f"<tr><td class=\"num\">{_e(day)}</td><td>{_e(name)}</td><td><code>{_e(path)}</code>"
          f"</td><td>{_e(res.get('profile', cfg.get('profile')))}</td>"
          f"<td class=\"num\">{_e(res.get('seed', cfg.get('seed')))}</td>"
          f"<td><span class=\"badge {status}\">{status}</span></td>"
          f"<td style=\"background:{colour}\">{html.escape(claims)}</td>"
          f"<td class=\"num\">{html.escape(format_duration(res.get('elapsed_s')))}</td>"
          f"<td>{_e(created.replace('T', ' '))}</td><td>{link}</td></tr>")
    return (day is None, day or 0, _workshop_order(name), name, created, path), tr


def _workshop_order(name: str) -> int:
    """Position of experiment ``name`` in the workshop (registry order); unknown names last."""
    from biaslab.registry import all_experiments

    order = {e.name: i for i, e in enumerate(all_experiments())}
    return order.get(name, len(order))


def render_index(runs_dir, out=None, title: str = "biaslab runs") -> Path:
    """Write an HTML index of every run found under ``runs_dir``.

    Run directories are subdirectories holding ``config.json``, searched up to three levels
    deep so that workshop sub-runs (``<run>/labs/<name>/``) are listed too.

    Args:
        runs_dir: the directory to scan.
        out: where to write the index; defaults to ``<runs_dir>/index.html``.
        title: the page title.

    Returns:
        The path of the written index.

    Raises:
        BiaslabError: if ``runs_dir`` is not an existing directory.
    """
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        raise BiaslabError(f"{runs_dir}: runs directory not found")
    out = Path(out) if out is not None else runs_dir / "index.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    n = len(_find_runs(runs_dir))
    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p class=\"meta\">{n} run{'s' if n != 1 else ''} in "
             f"<code>{html.escape(str(runs_dir))}</code></p>",
             _runs_table(runs_dir, out.parent.absolute())]
    return _write_atomic(out, _page(html.escape(title), "\n".join(parts), wide=True))
