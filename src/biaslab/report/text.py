"""A run directory as plain text: what ``biaslab show`` prints and ``biaslab.show`` prints
outside Jupyter (metrics with their labels and keys, then each claim with its verdict, expected
and measured values)."""

from __future__ import annotations

from pathlib import Path

from biaslab.errors import BiaslabError
from biaslab.formatting import format_value, shell_quote
from biaslab.report.labels import labeller
from biaslab.results import SLIPS, kind_of
from biaslab.runs import VERDICTS, RunDir, tally, verdict_of

__all__ = ["claim_lines", "open_run", "run_text"]


def open_run(path: str | Path) -> RunDir:
    """``path`` as a run directory, or one clear BiaslabError if it is not one."""
    run = RunDir(Path(path))
    if not run.is_run:
        raise BiaslabError(f"{run.path} is not a run directory (no config.json)")
    return run


def run_text(path: str | Path) -> str:
    """The run at ``path``: header, metrics, claims and the report's path, as lines of text."""
    run = open_run(path)
    cfg = run.read_config()
    lines = [f"{cfg.get('experiment')}  profile={cfg.get('profile')}  seed={cfg.get('seed')}  [{run.status}]"]
    res = run.read_results(required=False)
    if res is None:
        resume = "" if run.is_complete else f"; continue with: biaslab run --resume {shell_quote(run.path)}"
        return "\n".join([*lines, "no results yet" + resume])
    metrics = res.get("metrics") if isinstance(res.get("metrics"), dict) else {}
    label = labeller(res)
    rows = [(label(k), format_value(v), k) for k, v in metrics.items()]
    if rows:  # the label a person reads, the value, then the key results.json holds
        label_width, value_width = (max(len(row[i]) for row in rows) for i in (0, 1))
        lines += ["", "metrics", *(f"  {a:<{label_width}}  {v:>{value_width}}  {k}" for a, v, k in rows)]
    claims = [c for c in res.get("claims") or [] if isinstance(c, dict)]
    if claims:
        lines += ["", f"claims: {tally(claims).describe()}"]
        for c in claims:
            verdict = verdict_of(c)
            lines += [
                f"  [{VERDICTS[verdict].word}] {_kind_mark(c)}{c.get('claim')}",
                f"         expected {c.get('expected')}, measured {format_value(c.get('measured'))}",
                f"         source: {c.get('source')}",
            ]
            if c.get("printed"):
                lines.append(f"         as printed: {c.get('printed')}")
            if verdict in SLIPS:
                lines.append(f"         {VERDICTS[verdict].label}: {c.get('computation')}")
    lines += ["", f"report: {run.report_path}"]
    return "\n".join(lines)


def claim_lines(claims: list[dict]) -> list[str]:
    """One line per claim (verdict, claim, measured, expected), then the tally: what a finished
    run prints (``runner.print_summary``) and a notebook's claims show as text."""
    lines = [
        f"  [{VERDICTS[verdict_of(c)].word}] {_kind_mark(c)}{c['claim']}: measured "
        f"{format_value(c['measured'])} (expected {c['expected']})"
        for c in claims
    ]
    return [*lines, f"claims: {tally(claims).describe()}"] if claims else lines


def _kind_mark(claim: dict) -> str:
    """``"check: "`` before a check (an identity or a property by construction); nothing before a
    finding, which could have gone the other way."""
    return "check: " if kind_of(claim) == "check" else ""
