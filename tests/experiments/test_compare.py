"""``biaslab compare``: the command, the Python function, and bad data refused in one line."""

import csv
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import biaslab
from biaslab.cli import main
from biaslab.records import words_from_json
from biaslab.report.labels import unknown_words
from biaslab.runs import RunDir, read_json, reproducible
from tests.processes import kill_when, records_of


def unreadable_keys(res: dict) -> dict:
    """The metric keys whose words neither the shared vocabulary nor the lab's own explain."""
    words = words_from_json(res.get("words"))
    return {k: unknown_words(k, words) for k in res["metrics"] if unknown_words(k, words)}


def cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def table(results, title):
    return next(t for t in results["tables"] if t["title"] == title)


def write_csv(path, rows, header=("width", "height", "mass", "label")):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def verdict_of(row):
    return row[-1].split(" (")[0]


VERDICTS = ("ship", "collect more data", "redesign")
TABLE_CANDIDATES = ["gradient-boosted trees", "linear model", "k-nearest neighbours", "MLP"]


def good_rows(n=60):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3))
    return [[*np.round(r, 4), "big" if r[0] + r[1] > 0 else "small"] for r in x]


def test_digits_quick_writes_leaderboard_figure_and_claims(capsys, tmp_path):
    out = tmp_path / "digits"
    code, stdout, err = cli(capsys, "compare", "sklearn:digits", "--quick", "--out", out, "--no-progress")
    assert code == 0, err
    res = read_json(out / "results.json")
    board = table(res, "Leaderboard")
    names = [row[0] for row in board["rows"]]
    assert sorted(names) == sorted(
        ["linear model", "k-nearest neighbours", "MLP", "CNN", "CNN + augmentation"]
    )
    # best validation accuracy first (the mean over the quick profile's 2 splits)
    column = board["columns"].index("validation accuracy, 2 splits (mean ± standard error)")
    means = [float(row[column].split(" ± ")[0]) for row in board["rows"]]
    assert means == sorted(means, reverse=True)
    assert "test accuracy" in board["columns"]
    assert board["timing_columns"] == ["train seconds", "predict seconds per 1,000 rows"]
    predict = board["columns"].index("predict seconds per 1,000 rows")
    assert all(isinstance(row[predict], float) and row[predict] >= 0 for row in board["rows"])
    assert all(row[-1].split(" (")[0] in ("ship", "collect more data", "redesign") for row in board["rows"])
    assert 0.5 < res["metrics"]["cnn_test_accuracy"] <= 1
    assert (out / "figures" / "learning_curves.png").is_file()
    assert (out / "figures" / "reliability.png").is_file()  # the recommended model's, after temperature
    assert sorted(c["claim"] for c in res["claims"]) == sorted(
        f"{n} meets the use's requirements" for n in names
    )
    data = dict(table(res, "Your data")["rows"][:4])
    assert data["kind"] == "image" and data["task"] == "classify into 10 classes"
    ((model, recommendation),) = table(res, "Recommendation")["rows"]
    assert model in names and "validation accuracy" in recommendation and "recommended:" in stdout
    # The quick profile validates each candidate on 2 splits (the test rows kept): mean ± error.
    assert "over 2 splits of 1,259 training and 269 validation rows" in recommendation
    assert table(res, "Validation splits")["rows"] == [[2, 1259, 269, 269]]
    assert unreadable_keys(res) == {}
    # The report answers first: the recommendation, the leaderboard and the curves lead.
    assert [t["title"] for t in res["tables"] if t.get("lead")] == ["Recommendation", "Leaderboard"]
    assert [f["file"] for f in res["figures"] if f.get("lead")] == ["figures/learning_curves.png"]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.index('id="answer"') < page.index('id="claims"') < page.index('id="metrics"')


def test_a_table_with_empty_cells_text_and_an_id_column_is_compared(capsys, tmp_path):
    """What nearly every scientist's table holds: empty cells, a text column, an ID; each said
    in the report's "Your data" table, and both candidates trained."""
    rng = np.random.default_rng(1)
    rows = []
    for i, r in enumerate(good_rows(90)):
        size = ("small", "medium", "large")[i % 3]
        cells = ["" if rng.random() < 0.15 else v for v in r[:3]]
        rows.append([f"S-{i:03d}", *cells, size, r[3]])
    path = write_csv(
        tmp_path / "lab.csv", rows, header=("sample", "width", "height", "mass", "size", "label")
    )
    out = tmp_path / "run"
    code, _, err = cli(capsys, "compare", path, "--target", "label", "--quick", "--out", out, "--no-progress")
    assert code == 0, err
    res = read_json(out / "results.json")
    about = dict((k, v) for k, v in table(res, "Your data")["rows"] if k != "note")
    notes = " | ".join(v for k, v in table(res, "Your data")["rows"] if k == "note")
    assert "'sample' dropped: an ID" in notes and "categories (text): 'size'" in notes
    assert "missing cells in columns 'width', 'height', 'mass'" in notes
    assert "native support" in about["encoding"] and "fitted on the training rows only" in about["encoding"]
    # The recommended model's permutation importance, per column as the user gave it.
    (reads,) = [t for t in res["tables"] if t["title"].startswith("Which columns ")]
    assert sorted(row[0] for row in reads["rows"]) == ["height", "mass", "size", "width"]
    assert sorted(row[0] for row in table(res, "Leaderboard")["rows"]) == sorted(TABLE_CANDIDATES)
    assert 0.5 < res["metrics"]["mlp_test_accuracy"] <= 1


def test_a_time_limit_stops_each_training_at_its_part_of_the_budget(capsys, tmp_path):
    """A budget far too small: every torch training stops after its first epoch, keeping it,
    and says so; scikit-learn's fits are not stopped. Bad text is one line before any folder."""
    out = tmp_path / "run"
    args = ("compare", "sklearn:wine", "--quick", "--out", out, "--no-progress")
    code, stdout, err = cli(capsys, *args, "--time-limit", "0.000008s", "--set", "epochs=5")
    assert code == 0, err
    res = read_json(out / "results.json")
    rows = {row[0]: row[-1] for row in table(res, "Leaderboard")["rows"]}
    assert rows["MLP"].endswith("stopped at the time budget") and "MLP: " in stdout
    assert not any(v.endswith("budget") for k, v in rows.items() if k != "MLP")
    assert res["metrics"]["mlp_stopped_at_budget"] is True
    assert res["metrics"]["gradient-boosted-trees_stopped_at_budget"] is False
    about = {k: v for k, v in table(res, "Your data")["rows"] if k == "time limit"}
    # 4 candidates on 2 validation splits (the quick profile's), no probe: 8 parts
    assert about["time limit"].startswith("0.000008s: 1e-06 s per candidate and validation split")
    code, _, err = cli(capsys, *args[:-3], "--out", tmp_path / "bad", "--time-limit", "ten minutes")
    assert code == 2 and "not a duration" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad").exists()


def test_diabetes_reports_mae_against_the_mean_predictor(capsys, tmp_path):
    out = tmp_path / "diabetes"
    code, _, err = cli(capsys, "compare", "sklearn:diabetes", "--quick", "--out", out, "--no-progress")
    assert code == 0, err
    res = read_json(out / "results.json")
    board = table(res, "Leaderboard")
    assert sorted(row[0] for row in board["rows"]) == sorted(TABLE_CANDIDATES)
    assert "test MAE / mean predictor's" in board["columns"]
    baseline = res["metrics"]["test_baseline_mae"]
    assert baseline > 0 and 0 < res["metrics"]["mlp_test_mae"] < 1.2 * baseline
    assert "mean predictor" in res["claims"][0]["measured"]
    assert unreadable_keys(res) == {}
    assert not any(t["title"] == "Symmetries of your data" for t in res["tables"])  # tables: no probe tells
    # The interval claim is about the model the recommendation names.
    (model, sentence) = table(res, "Recommendation")["rows"][0]
    (interval,) = [c["claim"] for c in res["claims"] if "prediction intervals" in c["claim"]]
    assert sentence.split(":")[0] == interval.split("'s 90%")[0] == model, (sentence, interval)


def test_a_csv_table_with_its_target(capsys, tmp_path):
    data = write_csv(tmp_path / "shapes.csv", good_rows())
    out = tmp_path / "run"
    args = ("compare", data, "--target", "label", "--quick", "--models", "MLP", "--out", out)
    code, _, err = cli(capsys, *args, "--set", "epochs=2", "--no-progress")
    assert code == 0, err
    res = read_json(out / "results.json")
    assert [row[0] for row in table(res, "Leaderboard")["rows"]] == ["MLP"]
    assert dict(table(res, "Your data")["rows"][:3])["kind"] == "table"


def test_a_resume_refuses_data_or_a_model_file_that_changed(capsys, tmp_path):
    """A run records the SHA-256 of every file it reads; a resume on a data file of the same shape
    with other labels (which once put the old data's results beside the new one's) is one line
    naming the file, exit 2, and the run is left as it was; the same for a user's model file."""
    data = write_csv(tmp_path / "shapes.csv", good_rows())
    model = tmp_path / "mine.py"
    model.write_text(FACTORY.replace("n_outputs + 1", "n_outputs"))
    out = tmp_path / "run"
    args = ("compare", data, "--target", "label", "--quick", "--models", "MLP", "--out", out)
    code, _, err = cli(capsys, *args, "--model", f"{model}:wrong_shape", "--set", "epochs=2", "--no-progress")
    assert code == 0, err
    inputs = read_json(out / "config.json")["inputs"]
    assert (
        set(inputs) == {"data", f"model {model}:wrong_shape"}
        and inputs["data"]["bytes"] == data.stat().st_size
    )
    assert cli(capsys, "run", "--resume", out, "--no-progress")[0] == 0  # unchanged: the run reloads

    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != ".lock"}
    relabelled = [[*r[:3], "small" if r[3] == "big" else "big"] for r in good_rows()]
    write_csv(data, relabelled)  # the same shape, other labels
    code, _, err = cli(capsys, "run", "--resume", out, "--no-progress")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "shapes.csv" in err and "changed since the run started" in err
    assert before == {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != ".lock"}

    write_csv(data, good_rows())  # restored: the run is whole again
    assert cli(capsys, "run", "--resume", out, "--no-progress")[0] == 0
    model.write_text(model.read_text() + "\n# edited\n")
    code, _, err = cli(capsys, "run", "--resume", out, "--no-progress")
    assert code == 2 and "mine.py" in err and "changed since the run started" in err


FACTORY = """
from torch import nn

def wrong_shape(input_shape, n_outputs):
    return nn.Linear(input_shape[0], n_outputs + 1)
"""


def bad_data(tmp_path, case):
    rows = good_rows()
    if case == "single class":
        rows = [[*r[:3], "big"] for r in rows]
    path = write_csv(tmp_path / "bad.csv", rows)
    extra = ["--target", "label"]
    if case == "missing target":
        extra = ["--target", "colour"]
    if case == "factory shape":
        (tmp_path / "mine.py").write_text(FACTORY)
        extra += ["--model", f"{tmp_path / 'mine.py'}:wrong_shape"]
    if case == "ood shape":  # the table has 3 features
        np.savez(tmp_path / "ood.npz", x=np.zeros((20, 4), dtype=np.float32))
        extra += ["--ood", tmp_path / "ood.npz"]
    if case == "ood without x":
        np.savez(tmp_path / "ood.npz", inputs=np.zeros((20, 3), dtype=np.float32))
        extra += ["--ood", tmp_path / "ood.npz"]
    return path, extra


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("missing target", "colour"),
        ("single class", "single class"),
        ("factory shape", "wrong_shape"),
        ("ood shape", "the data's are 3"),
        ("ood without x", "no array x"),
    ],
)
def test_bad_data_is_one_line_and_writes_nothing(capsys, tmp_path, case, needle):
    path, extra = bad_data(tmp_path, case)
    out = tmp_path / "never"
    code, _, err = cli(capsys, "compare", path, *extra, "--quick", "--out", out)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and err.startswith("biaslab: error: ") and needle in err
    assert not out.exists()


def test_an_ood_set_joins_each_classifiers_verdict(capsys, tmp_path):
    noise = np.random.default_rng(0).uniform(size=(60, 8, 8)).astype(np.float32)  # digits are 8x8
    np.savez(tmp_path / "noise.npz", x=noise)
    out = tmp_path / "ood"
    code, _, err = cli(
        capsys, "compare", "sklearn:digits", "--models", "MLP", "--ood", tmp_path / "noise.npz",
        "--quick", "--set", "epochs=3", "--set", "symmetries=false", "--out", out, "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    res = read_json(out / "results.json")
    board = table(res, "Leaderboard")
    (row,) = board["rows"]
    auroc = res["metrics"]["mlp_ood_auroc"]
    assert 0 <= auroc <= 1 and row[board["columns"].index("OOD AUROC (max softmax)")] == round(auroc, 4)
    (claim,) = res["claims"]
    assert "OOD AUROC >= 0.9" in claim["expected"]  # a requirement of every verdict
    # a regression has no confidence to flag OOD inputs by: one line, nothing written
    code, _, err = cli(
        capsys, "compare", "sklearn:diabetes", "--ood", tmp_path / "noise.npz", "--out", tmp_path / "x"
    )
    assert code == 2 and "regression" in err and not (tmp_path / "x").exists()


def test_unknown_demo_set_and_candidate_are_one_line(capsys, tmp_path):
    code, _, err = cli(capsys, "compare", "sklearn:iris", "--out", tmp_path / "x")
    assert code == 2 and "sklearn:digits" in err
    code, _, err = cli(capsys, "compare", "sklearn:wine", "--models", "CNN", "--out", tmp_path / "x")
    assert code == 2 and "gradient-boosted trees" in err
    assert not (tmp_path / "x").exists()


def test_python_compare_returns_the_result_and_resume_reloads_it(capsys, tmp_path):
    out = tmp_path / "wine"
    result = biaslab.compare(
        "sklearn:wine",
        models=("MLP",),
        profile="quick",
        out=out,
        overrides={"epochs": 2, "symmetries": False},
    )
    assert result.recommended == "MLP" and result.run_dir == out  # a Comparison, shown as its run
    assert str(result) == str(biaslab.load(out)) and result._repr_html_() == biaslab.load(out)._repr_html_()
    assert "mlp_test_accuracy" in result.metrics
    assert not any("invariance" in k or "survives" in k for k in result.metrics)  # not probed
    code, _, err = cli(capsys, "compare", "--resume", out)
    assert code == 0, err
    code, _, err = cli(capsys, "compare", "sklearn:wine", "--resume", out)
    assert code == 2 and "DATA" in err


# -- sequences, sets, a user's model, a resume after a kill ------------------------------------


def sequence_npz(path, n=80, steps=12, features=2):
    """Order matters: the label is whether a spike in feature 0 comes in the first half; every
    sequence has exactly one spike, so a model blind to order sees the same bag of values."""
    rng = np.random.default_rng(1)
    x = rng.normal(scale=0.3, size=(n, steps, features)).astype(np.float32)
    at = rng.integers(0, steps, size=n)
    x[np.arange(n), at, 0] += 4.0
    np.savez(path, x=x, y=(at < steps // 2).astype(np.int64))
    return path


def set_npz(path, n=80, size=8, features=2):
    """Varying set sizes; the label (the sign of the sum of feature 0 over the real elements)
    does not depend on the elements' order."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(n, size, features)).astype(np.float32)
    sizes = rng.integers(2, size + 1, size=n)
    mask = np.arange(size)[None, :] < sizes[:, None]
    x[~mask] = 99.0  # padding holds junk: the loader zeroes it
    y = ((x[..., 0] * mask).sum(axis=1) > 0).astype(np.int64)
    np.savez(path, x=x, y=y, mask=mask)
    return path


def test_sequences_through_the_command(capsys, tmp_path):
    data = sequence_npz(tmp_path / "spikes.npz")
    out = tmp_path / "seq"
    code, _, err = cli(capsys, "compare", data, "--quick", "--set", "epochs=2", "--out", out, "--no-progress")
    assert code == 0, err
    res = read_json(out / "results.json")
    rows = table(res, "Leaderboard")["rows"]
    names = [row[0] for row in rows]
    assert sorted(names) == sorted(["MLP", "1-D CNN", "GRU", "Transformer"])
    assert all(verdict_of(row) in VERDICTS for row in rows)
    assert dict(table(res, "Your data")["rows"][:4])["kind"] == "sequence"
    for tag in ("mlp", "1-d-cnn", "gru", "transformer"):
        assert 0 <= res["metrics"][f"{tag}_test_accuracy"] <= 1
    probes = [row[0] for row in table(res, "Symmetries of your data")["rows"]]
    assert probes == ["a small shift in time", "a reversal of the sequence"]
    assert sorted(c["claim"] for c in res["claims"]) == sorted(
        f"{n} meets the use's requirements" for n in names
    )
    assert unreadable_keys(res) == {}


def test_sets_through_the_command(capsys, tmp_path):
    data = set_npz(tmp_path / "sets.npz")
    out = tmp_path / "sets"
    code, _, err = cli(capsys, "compare", data, "--quick", "--set", "epochs=2", "--out", out, "--no-progress")
    assert code == 0, err
    res = read_json(out / "results.json")
    rows = table(res, "Leaderboard")["rows"]
    assert sorted(row[0] for row in rows) == ["Deep Sets", "Transformer without positions"]
    assert all(verdict_of(row) in VERDICTS for row in rows)
    assert dict(table(res, "Your data")["rows"][:4])["kind"] == "set"
    assert 0 <= res["metrics"]["deep-sets_test_accuracy"] <= 1
    assert len(res["claims"]) == 2
    # the data's symmetry: both candidates are permutation invariant by construction
    symmetries = table(res, "Symmetries of your data")
    (row,) = symmetries["rows"]
    assert row[0] == "a permutation of the elements" and row[1].split(":")[0] in (
        "survives",
        "changes",
        "cannot tell",
    )
    assert row[2].endswith("(exact)") and row[3].endswith("(exact)")
    assert res["metrics"]["deep-sets_invariance_permutation"] < 1e-5
    (sentence,) = table(res, "Which prior fits, and why")["rows"]
    assert "Deep Sets" in sentence[0] and "a permutation of the elements" in sentence[0]
    assert isinstance(res["metrics"]["label_survives_permutation"], bool)


LINEAR = """
from math import prod

import torch


def make(input_shape, n_outputs):
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(prod(input_shape), n_outputs))
"""


def test_a_users_model_joins_the_leaderboard(capsys, tmp_path):
    data = write_csv(tmp_path / "shapes.csv", good_rows())
    (tmp_path / "linear.py").write_text(LINEAR)
    out = tmp_path / "own"
    code, _, err = cli(
        capsys, "compare", data, "--target", "label", "--models", "MLP",
        "--model", f"{tmp_path / 'linear.py'}:make", "--quick", "--set", "epochs=2",
        "--out", out, "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    res = read_json(out / "results.json")
    rows = {row[0]: row for row in table(res, "Leaderboard")["rows"]}
    assert sorted(rows) == ["MLP", "make"]
    assert rows["make"][1] == "your model" and rows["make"][2] == 3 * 2 + 2  # a linear layer's weights
    assert verdict_of(rows["make"]) in VERDICTS
    assert 0 <= res["metrics"]["make_test_accuracy"] <= 1
    assert "make meets the use's requirements" in [c["claim"] for c in res["claims"]]


SCRIPT = Path(sys.executable).parent / "biaslab"


@pytest.mark.parametrize("batched", [False, True], ids=["from a checkpoint", "a batch again"])
def test_a_compare_killed_mid_run_resumes_to_the_same_results(batched, capsys, tmp_path):
    """Killed inside a training: one by one (a time limit keeps each fit apart, a Trainer with its
    checkpoint), the resume goes on from the checkpoint; batched (a curve's trainings as one
    ensemble, which writes no checkpoint), it trains the batch again. Both to the same results."""
    data = sequence_npz(tmp_path / "spikes.npz", n=200)
    limit = [] if batched else ["--time-limit", "1h"]
    args = ["compare", str(data), "--models", "MLP,GRU", "--quick", "--set", "epochs=30", *limit]
    run = tmp_path / "killed"
    proc = subprocess.Popen(
        [str(SCRIPT), *args, "--out", str(run), "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    # Kill it during the first training: once its checkpoint is on disk, or (batched) once the
    # batch's records are logged and the task has not yet handed in its result.
    checkpointed = lambda: batched or (run / "checkpoints" / "mlp.pt").exists()
    kill_when(proc, lambda: checkpointed() and records_of(run, "mlp") >= 3)
    assert proc.returncode == -signal.SIGKILL
    assert not (run / "results.json").exists() and not (run / "COMPLETE").exists()

    code, _, err = cli(capsys, "compare", "--resume", run, "--no-progress")
    assert code == 0, err
    assert (run / "COMPLETE").is_file()

    records = [(r.get("tag"), r.get("epoch")) for r in RunDir(run).metrics.read()]
    assert len(records) == len(set(records)), "the resume repeated a training's epochs"

    ref = biaslab.compare(
        str(data), models=("MLP", "GRU"), profile="quick", out=tmp_path / "reference",
        overrides={"epochs": 30}, time_limit=None if batched else "1h",
    ).run_dir  # fmt: skip
    assert reproducible(read_json(run / "results.json")) == reproducible(read_json(ref / "results.json"))


# -- graphs and molecules -------------------------------------------------------------------------
def test_graphs_through_the_command(capsys, tmp_path):
    import torch

    from tests.comparison.test_graph_candidates import chains_and_branched

    torch.save(chains_and_branched(n=60).graphs, tmp_path / "trees.pt")
    out = tmp_path / "graphs"
    code, _, err = cli(
        capsys,
        "compare",
        tmp_path / "trees.pt",
        "--quick",
        "--set",
        "epochs=2",
        "--out",
        out,
        "--no-progress",
    )
    assert code == 0, err
    res = read_json(out / "results.json")
    rows = table(res, "Leaderboard")["rows"]
    assert sorted(row[0] for row in rows) == sorted(["GCN", "GAT", "MPNN", "graph Transformer"])
    assert all(verdict_of(row) in VERDICTS for row in rows)
    data = dict(table(res, "Your data")["rows"][:6])
    assert data["kind"] == "graph" and data["split"] == "random, stratified by class"
    assert not any(t["title"] == "Symmetries of your data" for t in res["tables"])  # invariant by build
    assert unreadable_keys(res) == {}


def test_molecules_with_a_scaffold_split(capsys, tmp_path):
    from tests.comparison.test_graph_candidates import SMILES, molecules

    data = molecules(task="regress")
    write_csv(
        tmp_path / "mols.csv", [[s, y] for s, y in zip(SMILES, data.y)], header=("smiles", "heavy_atoms")
    )
    out = tmp_path / "mols"
    code, _, err = cli(
        capsys, "compare", tmp_path / "mols.csv", "--target", "heavy_atoms", "--task", "regress",
        "--models", "fingerprint MLP,GCN", "--quick", "--set", "epochs=2", "--set", "split=scaffold",
        "--out", out, "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    res = read_json(out / "results.json")
    assert sorted(row[0] for row in table(res, "Leaderboard")["rows"]) == ["GCN", "fingerprint MLP"]
    data_rows = dict(table(res, "Your data")["rows"][:6])
    assert data_rows["kind"] == "molecule" and data_rows["split"].startswith("by Murcko scaffold")
    assert res["metrics"]["gcn_test_mae"] > 0 and res["metrics"]["test_baseline_mae"] > 0
    # a scaffold split needs molecules: one line, nothing written
    code, _, err = cli(capsys, "compare", "sklearn:wine", "--set", "split=scaffold", "--out", tmp_path / "x")
    assert code == 2 and "scaffold" in err and not (tmp_path / "x").exists()


GRAPH_MODEL = """
import torch
from torch import nn


class MeanOfNodes(nn.Module):
    \"\"\"A linear map of each graph's mean node features: no message passing at all.\"\"\"

    def __init__(self, features, n_outputs):
        super().__init__()
        self.linear = nn.Linear(features, n_outputs)

    def forward(self, batch):
        sums = torch.zeros(batch.num_graphs, batch.x.shape[1], device=batch.x.device)
        sums = sums.index_add(0, batch.batch, batch.x)
        counts = torch.bincount(batch.batch, minlength=batch.num_graphs).clamp(min=1)[:, None]
        return self.linear(sums / counts)


def make(input_shape, n_outputs):
    return MeanOfNodes(input_shape[0], n_outputs)


def wrong_shape(input_shape, n_outputs):
    return MeanOfNodes(input_shape[0], n_outputs + 1)
"""


def test_a_users_graph_model_joins_the_graph_leaderboard(capsys, tmp_path):
    import torch

    from tests.comparison.test_graph_candidates import chains_and_branched

    torch.save(chains_and_branched(n=60).graphs, tmp_path / "trees.pt")
    (tmp_path / "mine.py").write_text(GRAPH_MODEL)
    out = tmp_path / "own"
    code, _, err = cli(
        capsys, "compare", tmp_path / "trees.pt", "--models", "GCN",
        "--model", f"{tmp_path / 'mine.py'}:make", "--quick", "--set", "epochs=2",
        "--out", out, "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    res = read_json(out / "results.json")
    assert sorted(row[0] for row in table(res, "Leaderboard")["rows"]) == ["GCN", "make"]
    assert 0 <= res["metrics"]["make_test_accuracy"] <= 1
    code, _, err = cli(
        capsys, "compare", tmp_path / "trees.pt", "--model", f"{tmp_path / 'mine.py'}:wrong_shape",
        "--out", tmp_path / "x",
    )  # fmt: skip
    assert (
        code == 2 and len(err.strip().splitlines()) == 1 and "wrong_shape" in err and "expected (4, 2)" in err
    )
    assert not (tmp_path / "x").exists()


def test_molecules_with_coordinates_bring_egnn(capsys, tmp_path):
    from tests.data.test_user_molecule_geometry import MOLECULES, geometry, write

    rows = [[s, *geometry(s, seed=k)[:2], int("c" in s or "1" in s)] for k, s in enumerate(MOLECULES * 3)]
    out = tmp_path / "egnn"
    code, _, err = cli(
        capsys, "compare", write(tmp_path / "mols.csv", rows), "--target", "y", "--models", "EGNN",
        "--quick", "--set", "epochs=2", "--out", out, "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    res = read_json(out / "results.json")
    assert [row[0] for row in table(res, "Leaderboard")["rows"]] == ["EGNN"]
    assert 0 <= res["metrics"]["egnn_test_accuracy"] <= 1
    notes = [row[1] for row in table(res, "Your data")["rows"] if row[0] == "note"]
    assert any(n.startswith("coordinates: columns Elements and XYZ_Ang") for n in notes)


def test_molecules_beyond_the_atom_features_compare_by_fingerprints(capsys, tmp_path):
    from tests.comparison.test_graph_candidates import SMILES

    sulfur = ["CCS", "CSC", "c1ccsc1", "CS(=O)C", "SCCS", "CC(=S)N"]
    smiles = list(SMILES[:30]) + sulfur * 2
    rows = [[s, int("S" in s or "s" in s)] for s in smiles]
    path = write_csv(tmp_path / "mols.csv", rows, header=("smiles", "has_sulfur"))
    code, _, err = cli(capsys, "compare", path, "--target", "has_sulfur", "--out", tmp_path / "x")
    assert code == 2 and len(err.strip().splitlines()) == 1 and not (tmp_path / "x").exists()
    assert "element S" in err and "--models 'fingerprint trees,fingerprint MLP'" in err
    out = tmp_path / "fingerprints"
    code, _, err = cli(
        capsys, "compare", path, "--target", "has_sulfur", "--models", "fingerprint trees,fingerprint MLP",
        "--quick", "--set", "epochs=2", "--out", out, "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    res = read_json(out / "results.json")
    assert sorted(row[0] for row in table(res, "Leaderboard")["rows"]) == [
        "fingerprint MLP",
        "fingerprint trees",
    ]
