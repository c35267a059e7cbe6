"""From a verdict to a model one uses: ``biaslab compare`` saves its candidates, and
``biaslab predict`` / ``biaslab.load_comparison`` predict new rows exactly as the run scored its
test rows; bad new data and damaged model files are one line, exit 2, nothing written."""

import csv
import io

import numpy as np
import pytest

import biaslab
from biaslab.cli import main
from biaslab.comparison.candidates import slug
from biaslab.comparison.protocol import prepare
from biaslab.data.demo_sets import load_data
from biaslab.errors import ConfigError, DataFormatError
from biaslab.runs import read_json
from biaslab.train.seed import derive_seed


def cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def held_out_rows(name, seed=0):
    """The run's own test rows (the split ``compare`` made with this seed), as read."""
    data = load_data(name)
    prepared = prepare(data, seed=derive_seed(seed, "compare", "split"))
    rows = prepared.rows["test"]
    return data, data.x[rows], data.y[rows]


@pytest.fixture(scope="module")
def wine_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("wine") / "run"
    code = main(["compare", "sklearn:wine", "--quick", "--out", str(out), "--no-progress",
                 "--set", "symmetries=false"])  # fmt: skip
    assert code == 0
    return out


def test_every_candidate_predicts_its_test_rows_as_the_run_scored_them(wine_run):
    found = biaslab.load_comparison(wine_run)
    data, x_test, y_test = held_out_rows("sklearn:wine")
    metrics = read_json(wine_run / "results.json")["metrics"]
    assert found.recommended in found.candidates
    assert [row["model"] for row in found.leaderboard()] and set(found.candidates) == {
        row["model"] for row in found.leaderboard()
    }
    for name in found.candidates:
        labels = found.predict(x_test, model=name)
        accuracy = float(np.mean(labels == np.asarray(data.classes)[y_test]))
        assert accuracy == pytest.approx(metrics[f"{slug(name)}_test_accuracy"], abs=1e-6), name
        probabilities = found.predict_proba(x_test, model=name)
        np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=1e-6)
    assert found.metrics == metrics  # also the run's result
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(x_test[:, ::-1], columns=list(data.feature_names)[::-1])  # another order
    np.testing.assert_array_equal(found.predict(frame), found.predict(x_test))
    assert list(found.leaderboard().to_pandas()["model"]) == [row["model"] for row in found.leaderboard()]


def test_predict_writes_a_csv_of_ids_labels_and_probabilities(capsys, wine_run, tmp_path):
    _, x_test, _ = held_out_rows("sklearn:wine")
    names = biaslab.load_comparison(wine_run).results["tables"]
    new = tmp_path / "new.csv"
    columns = next(t for t in names if t["title"] == "Leaderboard")["columns"]
    assert columns
    from sklearn.datasets import load_wine

    features = load_wine().feature_names
    with open(new, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["extra", *reversed(features)])  # another order, an extra column
        writer.writerows([["x", *reversed(list(row))] for row in x_test])
    out = tmp_path / "predictions.csv"
    code, stdout, err = cli(capsys, "predict", wine_run, new, "--out", out)
    assert stdout == ""  # the CSV went to --out
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out.read_text())))
    assert rows[0][:2] == ["id", "prediction"] and len(rows[0]) == 2 + 3
    assert [r[0] for r in rows[1:]] == [str(i) for i in range(1, len(x_test) + 1)]
    expected = biaslab.load_comparison(wine_run).predict(x_test)
    assert [r[1] for r in rows[1:]] == [str(v) for v in expected]
    assert err.count("\n") == 1 and f"{len(x_test)} rows predicted" in err


def test_new_rows_that_do_not_fit_are_one_line_and_write_nothing(capsys, wine_run, tmp_path):
    new = tmp_path / "new.csv"
    new.write_text("alcohol,malic_acid\n1,2\n")
    out = tmp_path / "predictions.csv"
    code, _, err = cli(capsys, "predict", wine_run, new, "--out", out)
    assert code == 2 and err.count("\n") == 1 and "ash" in err
    assert not out.exists()
    code, _, err = cli(capsys, "predict", wine_run, new, "--model", "no such model")
    assert code == 2 and err.count("\n") == 1


def test_a_damaged_model_file_is_one_line(capsys, wine_run, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(wine_run, copy)
    found = biaslab.load_comparison(copy)
    weights = copy / "models" / slug("MLP") / "weights.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    _, x_test, _ = held_out_rows("sklearn:wine")
    np.savez(tmp_path / "new.npz", x=x_test)
    code, _, err = cli(capsys, "predict", copy, tmp_path / "new.npz", "--model", "MLP")
    assert code == 2 and err.count("\n") == 1 and "not the file the run wrote" in err
    assert found.predict(x_test, model="linear model").shape == (len(x_test),)  # the others still load


def test_a_regression_predicts_intervals_with_the_runs_coverage(tmp_path):
    found = biaslab.compare(
        "sklearn:diabetes", profile="quick", out=tmp_path / "run", models=("linear model", "MLP"),
        overrides={"symmetries": False}, progress=False,
    )  # fmt: skip
    _, x_test, y_test = held_out_rows("sklearn:diabetes")
    for name in found.candidates:
        tag = slug(name)
        predicted = found.predict(x_test, model=name)
        assert np.mean(np.abs(predicted - y_test)) == pytest.approx(
            found.metrics[f"{tag}_test_mae"], abs=1e-5
        )
        low, high = found.predict_interval(x_test, coverage=0.9, model=name).T
        coverage = float(np.mean((low <= y_test) & (y_test <= high)))
        assert coverage == pytest.approx(found.metrics[f"{tag}_test_interval_coverage"], abs=1e-6)
        wider = found.predict_interval(x_test, coverage=0.99, model=name)
        assert np.all(wider[:, 1] - wider[:, 0] >= high - low)
    with pytest.raises(ConfigError, match="predict_proba is for a classification"):
        found.predict_proba(x_test)


def test_images_predict_from_an_npz_and_the_cnn_is_rebuilt(tmp_path):
    found = biaslab.compare(
        "sklearn:digits", profile="quick", out=tmp_path / "run", models=("CNN",),
        overrides={"symmetries": False, "val_splits": 1}, progress=False,
    )  # fmt: skip
    data, x_test, y_test = held_out_rows("sklearn:digits")
    np.savez(tmp_path / "new.npz", x=x_test[:, 0])  # (M, 8, 8): channels as the data gave them
    labels = found.predict(tmp_path / "new.npz")
    accuracy = float(np.mean(labels == np.asarray(data.classes)[y_test]))
    assert accuracy == pytest.approx(found.metrics["cnn_test_accuracy"], abs=1e-6)
    np.savez(tmp_path / "sixteen.npz", x=x_test[:, 0] * 16)  # sklearn's own 0..16 scale
    with pytest.raises(DataFormatError):
        found.predict(tmp_path / "sixteen.npz")


def test_molecules_predict_from_their_smiles_as_the_run_scored_them(capsys, tmp_path):
    pytest.importorskip("rdkit")
    from tests.comparison.test_graph_candidates import SMILES, molecules

    data = molecules(task="regress")
    path = tmp_path / "mols.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([("smiles", "heavy_atoms"), *zip(SMILES, data.y.tolist())])
    found = biaslab.compare(
        path, target="heavy_atoms", task="regress", profile="quick", out=tmp_path / "run",
        models=("fingerprint trees", "fingerprint MLP", "GCN"), overrides={"epochs": 2}, progress=False,
    )  # fmt: skip
    prepared = prepare(load_data(str(path), target="heavy_atoms", task="regress"),
                       seed=derive_seed(0, "compare", "split"))  # fmt: skip
    rows = prepared.rows["test"]
    smiles, y_test = [SMILES[i] for i in rows], data.y[rows]
    assert set(found.candidates) == {"fingerprint trees", "fingerprint MLP", "GCN"}
    for name in found.candidates:
        predicted = found.predict(smiles, model=name)
        mae = float(np.mean(np.abs(predicted - y_test)))
        assert mae == pytest.approx(found.metrics[f"{slug(name)}_test_mae"], abs=1e-5), name
    new = tmp_path / "new.csv"
    new.write_text("SMILES,note\nCCO,a\nc1ccccc1,b\n")
    code, out, err = cli(capsys, "predict", found.run_dir, new, "--model", "GCN")
    assert code == 0, err
    assert out.splitlines()[0].startswith("id,prediction,low (90% interval)") and len(out.splitlines()) == 3
    new.write_text("smiles\nCCO\nC1CC\n")  # an unclosed ring
    code, out, err = cli(capsys, "predict", found.run_dir, new)
    assert code == 2 and out == "" and err.count("\n") == 1 and "line 3" in err and "C1CC" in err


def edge_list(graphs) -> dict[str, np.ndarray]:
    """Graphs as one edge list: global node ids, the graph of each node, the node features."""
    counts = [int(g.x.shape[0]) for g in graphs]
    offsets = np.cumsum([0, *counts[:-1]])
    return {
        "edge_index": np.concatenate([g.edge_index.numpy() + o for g, o in zip(graphs, offsets)], axis=1),
        "node_graph": np.repeat(np.arange(len(graphs)), counts),
        "x": np.concatenate([g.x.numpy() for g in graphs]),
    }


def test_graphs_predict_from_an_edge_list_or_a_list_of_data_as_the_run_scored_them(capsys, tmp_path):
    pytest.importorskip("torch_geometric")
    import torch
    from torch_geometric.data import Data

    from tests.comparison.test_graph_candidates import chains_and_branched

    data = chains_and_branched(n=60)
    path = tmp_path / "graphs.npz"
    np.savez(path, **edge_list(data.graphs), y=data.y)
    found = biaslab.compare(
        path, profile="quick", out=tmp_path / "run", models=("GCN", "GAT"), overrides={"epochs": 3},
        progress=False,
    )  # fmt: skip
    assert set(found.candidates) == {"GCN", "GAT"}
    rows = prepare(load_data(str(path)), seed=derive_seed(0, "compare", "split")).rows["test"]
    test_graphs = [data.graphs[i] for i in rows]
    np.savez(tmp_path / "new.npz", **edge_list(test_graphs))  # no labels
    torch.save([Data(x=g.x, edge_index=g.edge_index) for g in test_graphs], tmp_path / "new.pt")
    for name in found.candidates:
        labels = found.predict(tmp_path / "new.npz", model=name)
        accuracy = float(np.mean(labels == data.y[rows]))
        assert accuracy == pytest.approx(found.metrics[f"{slug(name)}_test_accuracy"], abs=1e-6), name
        np.testing.assert_array_equal(found.predict(tmp_path / "new.pt", model=name), labels)
    code, out, err = cli(capsys, "predict", found.run_dir, tmp_path / "new.npz")
    assert code == 0, err
    assert out.splitlines()[0] == "id,prediction,probability of 0,probability of 1"
    assert len(out.splitlines()) == len(rows) + 1
    wider = edge_list(test_graphs)
    np.savez(tmp_path / "wider.npz", **{**wider, "x": np.ones((len(wider["x"]), 4))})
    code, out, err = cli(
        capsys, "predict", found.run_dir, tmp_path / "wider.npz", "--out", tmp_path / "p.csv"
    )
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "4 features; the model was trained on 3" in err and not (tmp_path / "p.csv").exists()
