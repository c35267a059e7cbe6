"""One leaderboard over several seeds of a comparison (``biaslab compare DATA --seeds 0-4``).

Each seed is a whole comparison: its own split of the rows, its own initial weights, its own
subsets for the learning curves. One run's leaderboard ranks the candidates on one split; how
far a score moves when the seed changes is what says whether a lead is real. So, as the tools
a scientist compares biaslab with report a score over repeated runs (AutoGluon's bagged
models, scikit-learn's ``cross_validate``), this table gives per candidate the mean and the
sample standard deviation (n − 1) over the seeds of every figure each run's leaderboard holds as
a number, how often each verdict was reached and how often the candidate was recommended.

The seeds' rows are read from each finished run's results.json (its "Leaderboard" table), so
every kind of data is covered, including those whose models are not saved.

:func:`leaderboard_over_seeds` reads each run's "Leaderboard" and "Recommendation" tables (best
mean validation score first); :func:`over_seeds` is the compare lab's ``sweep_tables`` hook.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from biaslab.better import better
from biaslab.comparison.judged import LEADERBOARD, RECOMMENDATION, VALIDATION_MEASURE
from biaslab.errors import DataFormatError
from biaslab.fileio import read_json
from biaslab.results import COMPLETE, RESULTS, finite_number, mean_std

__all__ = ["SEEDS_TITLE", "leaderboard_over_seeds", "over_seeds", "seeds_table"]

SEEDS_TITLE = "Leaderboard over the seeds"


def _board(run_dir: Path) -> tuple[list[str], list[list], str]:
    """One finished compare run's leaderboard: its columns, its rows, and the recommended model."""
    if not (run_dir / COMPLETE).is_file():
        raise DataFormatError(f"{run_dir} holds no finished run (no COMPLETE)")
    results = read_json(run_dir / RESULTS)
    tables = {t.get("title"): t for t in results.get("tables", [])}
    if results.get("experiment") != "compare" or LEADERBOARD not in tables or RECOMMENDATION not in tables:
        raise DataFormatError(f"{run_dir} is not a finished comparison (no {LEADERBOARD!r} table)")
    pick = tables[RECOMMENDATION]
    recommended = pick["rows"][0][0] if pick["columns"][0] == "model" else None  # older: a sentence
    return tables[LEADERBOARD]["columns"], tables[LEADERBOARD]["rows"], recommended


def leaderboard_over_seeds(run_dirs: Sequence[Path | str]) -> list[dict]:
    """Per candidate, the mean and standard deviation over the runs ``run_dirs`` (one per seed,
    of the same data and candidates) of each number its leaderboard rows hold.

    Returns:
        rows best mean validation score first, each a dict: ``model``, ``prior``, ``runs``
        (in how many of the runs it was fitted), for every numeric column ``C`` of the runs'
        leaderboards ``C`` (the mean) and ``C + " std"``, ``verdicts`` (each verdict as the
        runs' reports worded it, and how many runs reached it) and ``recommended`` (in how
        many runs it was the pick).

    Raises:
        DataFormatError: a folder that holds no finished comparison; runs of different tasks.
    """
    boards = [_board(Path(d)) for d in run_dirs]
    if not boards:
        raise DataFormatError("no runs to summarise")
    tasks = {task for columns, _, _ in boards for task, name in VALIDATION_MEASURE.items() if name in columns}
    if len(tasks) != 1:
        raise DataFormatError("the runs are not one comparison: their leaderboards rank on different scores")
    task = tasks.pop()
    by_model: dict[str, list[dict]] = {}
    for columns, rows, _ in boards:
        for row in rows:
            cells = dict(zip(columns, row, strict=False))
            by_model.setdefault(cells["model"], []).append(cells)
    picks = Counter(recommended for _, _, recommended in boards)
    summary = []
    for model, runs in by_model.items():
        entry: dict = {"model": model, "prior": runs[0].get("prior", ""), "runs": len(runs)}
        for column in runs[0]:
            values = [cells.get(column) for cells in runs]
            numbers = [float(v) for v in values if finite_number(v)]
            if numbers and len(numbers) == len(values):  # a figure every run measured
                entry[column], entry[f"{column} std"] = mean_std(numbers)
        entry["verdicts"] = dict(Counter(str(cells.get("verdict", "")) for cells in runs))
        entry["recommended"] = picks.get(model, 0)
        summary.append(entry)
    measure = VALIDATION_MEASURE[task]
    sign = 1.0 if better(measure) == "lower" else -1.0  # the best first: lower MAE, higher accuracy

    def key(entry: dict) -> tuple:
        score = entry.get(measure)
        return (score is None, 0.0 if score is None else sign * score)

    return sorted(summary, key=key)


def seeds_table(rows: list[dict], n_runs: int) -> dict:
    """The sweep's table of :func:`leaderboard_over_seeds` (``title``, ``columns``, ``rows``: a
    figure as "mean ± std", the verdicts counted, the picks as "k of n") and the ``lines`` a
    terminal shows: per candidate its validation and test scores and its picks."""
    figures = [c for c in rows[0] if f"{c} std" in rows[0]] if rows else []
    columns = ["model", "prior", "runs", *(f"{c} (mean ± std)" for c in figures), "verdicts", "recommended"]
    table, lines = [], []
    for entry in rows:
        cells = {c: f"{entry[c]:.4g} ± {entry[f'{c} std']:.2g}" if c in entry else "-" for c in figures}
        verdicts = "; ".join(f"{verdict} ×{n}" for verdict, n in entry["verdicts"].items())
        picked = f"{entry['recommended']} of {n_runs}"
        table.append([entry["model"], entry["prior"], entry["runs"], *cells.values(), verdicts, picked])
        scores = [f"{c} {cells[c]}" for c in figures if c.startswith(("validation", "test"))]
        lines.append(f"{entry['model']}: " + ", ".join(scores[:2]) + f"; recommended in {picked} runs")
    return {"title": f"{SEEDS_TITLE} ({n_runs} runs)", "columns": columns, "rows": table, "lines": lines}


def over_seeds(run_dirs: Sequence[Path]) -> list[dict]:
    """The compare lab's sweep tables (:attr:`biaslab.registry.Experiment.sweep_tables`): its
    leaderboard over the seeds of one configuration."""
    return [seeds_table(leaderboard_over_seeds(run_dirs), len(run_dirs))]
