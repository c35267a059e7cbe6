"""The table of runs that the index and a workshop's report show, as plain data for the templates.

Runs of one lab with one profile and one config that differ only in their seed form one *group*
and one row: its seeds, the claims' verdicts summed over the runs, and below it the mean ± std of
each numeric metric over the runs and, for each claim, how many runs held it. A run on its own
(or runs that repeat a seed: a repeat is not another sample) is a group of one.

Every cell carries a sort key (``sort``: a number, or text) for the index's sort-by-column.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from biaslab.errors import BiaslabError
from biaslab.formatting import format_duration, format_value
from biaslab.report.labels import labeller
from biaslab.report.navigation import href
from biaslab.results import finite_number, mean_std
from biaslab.runs import VERDICTS, RunDir, tally, verdict_of

__all__ = ["COLUMNS", "runs_groups"]

COLUMNS = (
    "Day",
    "Experiment",
    "Profile",
    "Seeds",
    "Status",
    "Claims held",
    "Elapsed",
    "Created",
    "Reports",
)


def _positions(order: Sequence[str] | None) -> dict[str, int]:
    """Each name's first position in ``order``."""
    positions: dict[str, int] = {}
    for i, name in enumerate(order or ()):
        positions.setdefault(name, i)
    return positions


def _claims_colour(counts) -> str:
    """The colour of a claims cell: failed first, then unchecked, then the documents' slips; a
    cell whose claims all passed is green, one without claims uncoloured."""
    if not counts.total:
        return "transparent"
    worst = (("fail", counts.failed), ("unjudged", counts.unjudged), ("slip", counts.slips))
    return VERDICTS[next((key for key, n in worst if n), "pass")].colour


def _read(run: Path, runs_dir: Path, out_dir: Path) -> dict:
    """One run as the fields its row needs; unreadable JSON becomes ``error``."""
    rundir = RunDir(run)
    try:
        cfg, error = rundir.read_config(), None
        res = rundir.read_results(required=False, checked=False) or {}
    except BiaslabError as exc:
        cfg, res, error = {}, {}, str(exc)
    report = rundir.report_path
    day = res.get("day") if finite_number(res.get("day")) else None
    return {
        "day": day,
        "name": format_value(res.get("experiment") or cfg.get("experiment") or run.name),
        "experiment": res.get("experiment") or cfg.get("experiment"),
        "path": run.relative_to(runs_dir).as_posix(),
        "profile": res.get("profile", cfg.get("profile")),
        "seed": res.get("seed", cfg.get("seed")),
        "config": cfg.get("config"),
        "status": rundir.status,
        "claims": res.get("claims") if isinstance(res.get("claims"), list) else [],
        "metrics": res.get("metrics") if isinstance(res.get("metrics"), dict) else {},
        "label": labeller(res),
        "elapsed": res.get("elapsed_s"),
        "created": format_value(cfg.get("created") or "").replace("T", " "),
        "error": error,
        "href": href(os.path.relpath(report.absolute(), out_dir)) if report.is_file() else None,
    }


def _group_key(run: dict) -> tuple:
    """Runs with equal keys differ only in their seed; an unreadable run is its own group."""
    if run["error"] or run["experiment"] is None:
        return ("run", run["path"])
    return ("lab", str(run["experiment"]), str(run["profile"]), json.dumps(run["config"], sort_keys=True))


def _grouped(runs: list[dict]) -> list[list[dict]]:
    """Runs by group, in the order of each group's first run; a group that repeats a seed
    is split into runs of their own."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault(_group_key(run), []).append(run)
    out: list[list[dict]] = []
    for members in groups.values():
        seeds = [json.dumps(m["seed"]) for m in members]
        out += [members] if len(set(seeds)) == len(seeds) else [[m] for m in members]
    return out


def _metric_rows(members: list[dict]) -> list[dict]:
    """Mean ± std (sample std, over the runs that hold it) of each numeric metric of a group."""
    keys: dict[str, None] = {}
    for m in members:
        keys.update(dict.fromkeys(k for k, v in m["metrics"].items() if finite_number(v)))
    rows = []
    for key in keys:
        values = [float(m["metrics"][key]) for m in members if finite_number(m["metrics"].get(key))]
        mean, std = mean_std(values)
        rows.append(
            {
                "label": members[0]["label"](key),
                "key": key,
                "value": f"{format_value(mean)} \u00b1 {format_value(std)}",
                "n": f"{len(values)} of {len(members)}",
            }
        )
    return rows


def _claim_rows(members: list[dict]) -> list[dict]:
    """For each claim of a group (by its text): in how many runs it held, of those judging it."""
    seen: dict[str, list[str]] = {}
    for m in members:
        for c in m["claims"]:
            text = format_value(c.get("claim") if isinstance(c, dict) else c)
            seen.setdefault(text, []).append(verdict_of(c))
    rows = []
    for text, verdicts in seen.items():
        held, judged = verdicts.count("pass"), verdicts.count("pass") + verdicts.count("fail")
        unjudged = len(verdicts) - judged
        note = f" ({unjudged} not checked)" if unjudged else ""
        rows.append({"claim": text, "held": f"held in {held} of {judged}{note}" if judged else "not checked"})
    return rows


def _cell(text: str, sort) -> dict:
    """A cell's text and its sort key (numbers sort as numbers, missing ones last)."""
    return {"text": text, "sort": "" if sort is None else (repr(sort) if finite_number(sort) else str(sort))}


def _group_row(members: list[dict]) -> dict:
    """The data of one group's row (see the module's docstring)."""
    first = members[0]
    counts = sum((tally(m["claims"]) for m in members[1:]), tally(first["claims"]))
    errors = [m["error"] for m in members if m["error"]]
    statuses = sorted({m["status"] for m in members})
    elapsed = [float(m["elapsed"]) for m in members if finite_number(m["elapsed"])]
    seeds = sorted(
        (m["seed"] for m in members), key=lambda s: (not finite_number(s), s if finite_number(s) else 0)
    )
    several = len(members) > 1
    links = [
        {
            "href": m["href"],
            "text": f"seed {format_value(m['seed'])}" if several else m["path"],
            "path": m["path"],
        }
        for m in sorted(members, key=lambda m: seeds.index(m["seed"]))
    ]
    mean_elapsed = sum(elapsed) / len(elapsed) if elapsed else None
    return {
        "day": _cell(format_value(first["day"]), first["day"]),
        "name": _cell(first["name"], first["name"]),
        "profile": _cell(format_value(first["profile"]), format_value(first["profile"])),
        "seeds": _cell(
            ", ".join(format_value(s) for s in seeds), seeds[0] if finite_number(seeds[0]) else None
        ),
        "statuses": statuses,
        "status_sort": " ".join(statuses),
        "claims": _cell(
            errors[0] if errors else (counts.short() if counts.total else "\u2014"),
            counts.held_share,
        ),
        "colour": VERDICTS["fail"].colour if errors else _claims_colour(counts),
        "elapsed": _cell(
            (("mean " if several else "") + format_duration(mean_elapsed)) if elapsed else "\u2014",
            mean_elapsed,
        ),
        "created": _cell(max(m["created"] for m in members), max(m["created"] for m in members)),
        "links": links,
        "n": len(members),
        "metrics": _metric_rows(members) if several else [],
        "claim_rows": _claim_rows(members) if several else [],
    }


def runs_groups(runs: list[Path], runs_dir: Path, out_dir: Path, order: Sequence[str] | None) -> list[dict]:
    """The rows of the table of ``runs`` (found under ``runs_dir``; links relative to
    ``out_dir``), one per group, sorted by day (missing last), position in ``order`` (unknown
    names last), name, creation time and path of the group's first run."""
    positions = _positions(order)
    read = [_read(run, runs_dir, out_dir) for run in runs]

    def key(run: dict) -> tuple:
        day, name = run["day"], run["name"]
        return (day is None, day or 0, positions.get(name, len(positions)), name, run["created"], run["path"])

    return [_group_row(members) for members in _grouped(sorted(read, key=key))]
