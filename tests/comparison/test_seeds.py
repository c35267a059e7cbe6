"""The leaderboard over the seeds of a comparison (``biaslab compare DATA --seeds 0-4``): each
figure's mean and sample standard deviation against NumPy's, best mean validation score first,
verdicts and picks counted; one CLI run of the whole path."""

from __future__ import annotations

import json

import numpy as np
import pytest

from biaslab.cli import main
from biaslab.comparison.judged import LEADERBOARD, RECOMMENDATION
from biaslab.comparison.seeds import SEEDS_TITLE, leaderboard_over_seeds, over_seeds
from biaslab.errors import DataFormatError
from biaslab.fileio import read_json

CLASSIFY = [
    "model",
    "prior",
    "parameters",
    "validation accuracy",
    "test accuracy",
    "train seconds",
    "verdict",
]


def write_run(folder, rows, pick, columns=CLASSIFY, experiment="compare", complete=True):
    """A finished compare run's results.json as the lab writes it (only what the summary reads)."""
    folder.mkdir(parents=True)
    tables = [
        {"title": RECOMMENDATION, "columns": ["model", "recommendation"], "rows": [[pick, f"{pick}: why"]]},
        {"title": LEADERBOARD, "columns": columns, "rows": rows},
    ]
    results = {"experiment": experiment, "metrics": {}, "claims": [], "tables": tables}
    (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")
    if complete:
        (folder / "COMPLETE").write_text("", encoding="utf-8")
    return folder


@pytest.fixture
def three_runs(tmp_path):
    cnn = [
        (0.91, 0.90, 1.5, "ship (rule 5)"),
        (0.95, 0.93, 1.7, "ship (rule 5)"),
        (0.93, 0.94, 1.6, "redesign (rule 3)"),
    ]
    mlp = [
        (0.96, 0.85, 0.4, "redesign (rule 3)"),
        (0.90, 0.88, 0.5, "redesign (rule 3)"),
        (0.92, 0.86, 0.3, "redesign (rule 3)"),
    ]
    folders = []
    for seed in range(3):
        rows = [
            ["CNN", "locality", 5000, *cnn[seed][:3], cnn[seed][3]],
            ["MLP", "none", "-", *mlp[seed][:3], mlp[seed][3]],
        ]
        pick = "MLP" if seed == 0 else "CNN"
        folders.append(write_run(tmp_path / f"seed={seed}", rows, pick))
    return folders, cnn, mlp


def test_each_figure_is_the_mean_and_sample_std_over_the_seeds(three_runs):
    folders, cnn, mlp = three_runs
    board = {row["model"]: row for row in leaderboard_over_seeds(folders)}
    for name, runs in (("CNN", cnn), ("MLP", mlp)):
        for k, column in enumerate(["validation accuracy", "test accuracy", "train seconds"]):
            values = np.array([run[k] for run in runs])
            assert board[name][column] == pytest.approx(values.mean())
            assert board[name][f"{column} std"] == pytest.approx(values.std(ddof=1))
    assert board["CNN"]["parameters"] == 5000 and board["CNN"]["parameters std"] == 0
    assert "parameters" not in board["MLP"]  # a figure not every run measured is not averaged
    assert board["CNN"]["verdicts"] == {"ship (rule 5)": 2, "redesign (rule 3)": 1}
    assert (board["CNN"]["recommended"], board["MLP"]["recommended"]) == (2, 1)
    assert board["CNN"]["runs"] == board["MLP"]["runs"] == 3


def test_best_mean_validation_score_first(three_runs, tmp_path):
    folders, _, _ = three_runs
    # classify: CNN's mean validation accuracy 0.93 is above MLP's 0.9267
    assert [row["model"] for row in leaderboard_over_seeds(folders)] == ["CNN", "MLP"]
    # regress: the lower MAE first
    columns = ["model", "prior", "validation MAE", "test MAE", "verdict"]
    rows = [
        [["trees", "splits", 2.0 + seed, 2.5, "ship"], ["MLP", "none", 1.0, 1.2, "ship"]] for seed in range(2)
    ]
    runs = [write_run(tmp_path / f"r{seed}", rows[seed], "MLP", columns) for seed in range(2)]
    assert [row["model"] for row in leaderboard_over_seeds(runs)] == ["MLP", "trees"]


def test_the_table_and_the_lines(three_runs):
    folders, _, _ = three_runs
    (table,) = over_seeds(folders)
    assert table["title"] == f"{SEEDS_TITLE} (3 runs)"
    assert table["columns"][:4] == ["model", "prior", "runs", "parameters (mean ± std)"]
    cnn = dict(zip(table["columns"], table["rows"][0]))
    assert cnn["validation accuracy (mean ± std)"] == "0.93 ± 0.02"
    assert cnn["recommended"] == "2 of 3" and cnn["verdicts"] == "ship (rule 5) ×2; redesign (rule 3) ×1"
    assert table["lines"][0] == (
        "CNN: validation accuracy 0.93 ± 0.02, test accuracy 0.9233 ± 0.021; recommended in 2 of 3 runs"
    )


def test_runs_that_are_not_one_finished_comparison_are_one_line(tmp_path):
    good = write_run(tmp_path / "good", [["MLP", "none", 1, 0.9, 0.9, 1.0, "ship"]], "MLP")
    unfinished = write_run(
        tmp_path / "unfinished", [["MLP", "none", 1, 0.9, 0.9, 1.0, "ship"]], "MLP", complete=False
    )
    other = write_run(tmp_path / "other", [], "MLP", experiment="xor")
    regress = write_run(
        tmp_path / "regress",
        [["MLP", "none", 1.0, "ship"]],
        "MLP",
        ["model", "prior", "validation MAE", "verdict"],
    )
    with pytest.raises(DataFormatError, match="no finished run"):
        leaderboard_over_seeds([good, unfinished])
    with pytest.raises(DataFormatError, match="not a finished comparison"):
        leaderboard_over_seeds([good, other])
    with pytest.raises(DataFormatError, match="not one comparison"):
        leaderboard_over_seeds([good, regress])
    with pytest.raises(DataFormatError, match="no runs"):
        leaderboard_over_seeds([])


def test_compare_with_seeds_writes_the_leaderboard_over_them(tmp_path, capsys):
    out = tmp_path / "sweep"
    models = "linear model,k-nearest neighbours"
    rc = main(["compare", "sklearn:wine", "--quick", "--seeds", "0-1", "--models", models, "--out", str(out)])
    stdout = capsys.readouterr().out
    assert rc == 0
    (configuration,) = read_json(out / "sweep-results.json")["configurations"]
    (table,) = configuration["tables"]
    assert table["title"] == f"{SEEDS_TITLE} (2 runs)" and table["lines"][0] in stdout
    assert sorted(row[0] for row in table["rows"]) == sorted(models.split(","))
    # each mean is the mean of the two runs' own leaderboards
    column = "test accuracy"
    per_run = []
    for seed in (0, 1):
        (board,) = [
            t for t in read_json(out / f"seed={seed}" / "results.json")["tables"] if t["title"] == LEADERBOARD
        ]
        per_run.append({row[0]: row[board["columns"].index(column)] for row in board["rows"]})
    first = table["rows"][0]
    mean, std = np.mean([r[first[0]] for r in per_run]), np.std([r[first[0]] for r in per_run], ddof=1)
    assert first[table["columns"].index(f"{column} (mean ± std)")] == f"{mean:.4g} ± {std:.2g}"
    assert sum(int(row[-1].split(" of ")[0]) for row in table["rows"]) == 2  # one pick per run
    page = (out / "index.html").read_text(encoding="utf-8")
    assert SEEDS_TITLE in page and page.index(SEEDS_TITLE) < page.index("seed=0")
