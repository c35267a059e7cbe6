"""QM9 on the comparison engine: its store as the engine's graphs, the protocol's statistics from
the training rows only, its models as candidates, the L1 loss, trees equal to scikit-learn's."""

import numpy as np
import pytest
import torch

pytest.importorskip("rdkit")

from biaslab.comparison.fitting import Trial, protocol_step
from biaslab.comparison.protocol import fit_candidate
from biaslab.comparison.qm9 import QM9_CANDIDATES, prepare_qm9, qm9_candidates, qm9_graphs
from biaslab.data.molecule_splits import random_split
from biaslab.data.molecules import molecule_graph, morgan_fingerprint, parse_smiles
from biaslab.data.qm9 import QM9, TARGETS
from biaslab.data.user_data import UserData
from biaslab.errors import ConfigError
from biaslab.train import TrainConfig
from biaslab.train.recipes import TrainSetup

SMILES = ["C", "CC", "CCC", "CCO", "CO", "C=O", "CC#N", "C1CC1", "C1=CC=CC=C1", "OC(=O)C#N", "CCN", "CF",
          "CC(C)C", "C1CCC1", "CC=O", "NC=O", "OCCO", "C#C", "CC(=O)C", "c1ccoc1"]  # fmt: skip
CONFIG = TrainConfig(epochs=15, batch_size=16, lr=3e-3)


def tiny_store(n=80, seed=0):
    """A QM9 store of ``n`` molecules (the SMILES above, repeated) whose gap is a noisy function
    of the atoms, so that a model can learn it; coordinates are random."""
    rng = np.random.default_rng(seed)
    smiles = [SMILES[k % len(SMILES)] for k in range(n)]
    graphs = [molecule_graph(parse_smiles(s)) for s in smiles]
    gap = np.array([2.0 + g.x[:, 5].sum() / 10 + g.edge_type.sum() / 5 for g in graphs])
    y = np.zeros((n, len(TARGETS)))
    y[:, list(TARGETS).index("gap")] = gap + rng.normal(0, 0.05, n)
    counts = [len(g.x) for g in graphs]
    edges = [g.edge_index.shape[1] for g in graphs]
    return QM9(
        x=np.concatenate([g.x for g in graphs]),
        pos=rng.normal(size=(sum(counts), 3)).astype(np.float32),
        atom_ptr=np.concatenate([[0], np.cumsum(counts)]),
        edge_index=np.concatenate([g.edge_index for g in graphs], axis=1).astype(np.int8),
        edge_type=np.concatenate([g.edge_type for g in graphs]),
        edge_ptr=np.concatenate([[0], np.cumsum(edges)]),
        y=y,
        index=np.arange(1, n + 1),
        smiles=np.array(smiles),
        scaffold=np.zeros(n, dtype=np.int64),
        scaffolds=np.array([""]),
        fingerprint=np.stack([np.packbits(morgan_fingerprint(parse_smiles(s), 2, 2048)) for s in smiles]),
        skipped_index=np.zeros(0, dtype=np.int64),
        skipped_reason=np.zeros(0, dtype=np.int64),
    )


@pytest.fixture(scope="module")
def data():
    return tiny_store()


SPLIT = random_split(80, 56, 12, seed=0)


def fit(data, name="gcn", y=None, seed=0, loss="l1"):
    y = data.target("gap") if y is None else y
    prepared = prepare_qm9(data, y, SPLIT)
    (candidate,) = qm9_candidates([name], hidden=16, gbt_iterations=30, loss=loss)
    return fit_candidate(
        Trial(candidate, prepared, CONFIG, TrainSetup(tag=name, seed=seed, progress=False), loss)
    )


def test_the_engine_batches_qm9_exactly_as_its_own_store(data):
    rows = np.array([3, 0, 17, 9])
    ours, reference = qm9_graphs(data).store.batch(rows), data.batch(rows)
    for key in ("x", "pos", "edge_index", "edge_attr", "batch"):
        assert torch.equal(getattr(ours, key), getattr(reference, key)), key
    assert ours.num_graphs == reference.num_graphs == 4


def test_a_split_of_some_molecules_builds_those_alone_and_reads_them_as_the_whole_store(data):
    part = SPLIT.subsample_train(10, seed=1).subsample(val=5, test=7, seed=2)  # 22 of 80 molecules
    alone, whole = prepare_qm9(data, data.target("gap"), part), prepare_qm9(data, data.target("gap"), SPLIT)
    molecules = np.unique(np.concatenate([part.train, part.val, part.test]))
    assert len(alone.store) == len(molecules) == 22
    for name, rows in (("train", part.train), ("val", part.val), ("test", part.test)):
        assert np.array_equal(molecules[alone.rows[name]], rows)
        ours, reference = alone.store.batch(alone.rows[name]), qm9_graphs(data).store.batch(rows)
        for key in ("pos", "edge_index", "edge_attr", "batch"):
            assert torch.equal(getattr(ours, key), getattr(reference, key)), (name, key)
        np.testing.assert_array_equal(alone.targets[name], data.target("gap")[rows])
        bits = alone.table_rows("fingerprint", name)
        np.testing.assert_array_equal(bits, whole.tables["fingerprint"][rows])
    # The statistics are those of the 10 training molecules, however many others the store held.
    train_atoms = np.concatenate([np.arange(data.atom_ptr[m], data.atom_ptr[m + 1]) for m in part.train])
    np.testing.assert_allclose(alone.node_mean, data.x[train_atoms].mean(axis=0))
    counts = data.bags()[part.train]
    np.testing.assert_allclose(alone.table_rows("counts", "train").mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(
        alone.table_rows("counts", "test"),
        (data.bags()[part.test] - counts.mean(0)) / np.where(counts.std(0) > 0, counts.std(0), 1),
        rtol=1e-5, atol=1e-5,
    )  # fmt: skip


def test_every_statistic_comes_from_the_training_molecules_only(data):
    y = data.target("gap")
    prepared = prepare_qm9(data, y, SPLIT)
    train_atoms = np.concatenate([np.arange(data.atom_ptr[m], data.atom_ptr[m + 1]) for m in SPLIT.train])
    np.testing.assert_allclose(prepared.node_mean, data.x[train_atoms].mean(axis=0))
    assert prepared.y_mean == pytest.approx(y[SPLIT.train].mean())
    counts = prepared.tables["counts"][SPLIT.train]
    varying = data.bags()[SPLIT.train].std(axis=0) > 0
    np.testing.assert_allclose(counts.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(counts.std(axis=0)[varying], 1, rtol=1e-4)
    assert set(np.unique(prepared.tables["fingerprint"])) <= {0, 1}  # bits stay bits
    # Other validation and test targets change nothing the training reads.
    moved = y.copy()
    moved[np.concatenate([SPLIT.val, SPLIT.test])] += 5.0
    again = prepare_qm9(data, moved, SPLIT)
    assert (again.y_mean, again.y_std) == (prepared.y_mean, prepared.y_std)


def test_a_graph_model_learns_and_reports_mae_in_ev(data):
    result = fit(data)
    y = data.target("gap")
    spread = np.abs(y - y.mean()).mean()
    assert result.test["mae"] < 0.6 * spread < result.test["baseline_mae"]  # better than the mean
    history = result.fitted.history
    assert result.parameters > 0 and len(history) == CONFIG.epochs and result.train_seconds > 0
    # The epoch kept is the lowest validation loss, which with L1 is the validation MAE / std.
    val = [h["val_loss"] for h in history]
    assert val[result.best_epoch - 1] == min(val)
    train_std = float(data.target("gap")[SPLIT.train].std())
    assert result.val["mae"] == pytest.approx(min(val) * train_std, rel=1e-4)


def test_the_same_seed_gives_the_same_numbers(data):
    a, b = fit(data), fit(data)
    assert (a.test, a.val) == (b.test, b.val)


def test_test_targets_never_shape_training(data):
    """Change every test target: training (scaler, chosen epoch, weights) must not move, so the
    validation error is bit-identical; only the test error changes."""
    y = data.target("gap").copy()
    y_other = y.copy()
    y_other[SPLIT.test] += 10.0
    a, b = fit(data, y=y), fit(data, y=y_other)
    assert a.val == b.val and a.best_epoch == b.best_epoch
    assert b.test["mae"] > a.test["mae"] + 5


def test_the_trees_equal_scikit_learns_on_the_same_rows(data):
    from sklearn.ensemble import HistGradientBoostingRegressor

    x, y = data.fingerprints(), data.target("gap")
    result = fit(data, "fingerprint-gbt")
    reference = HistGradientBoostingRegressor(
        loss="absolute_error", max_iter=30, max_leaf_nodes=63, early_stopping=False, random_state=0
    ).fit(x[SPLIT.train], y[SPLIT.train])
    expected = np.abs(reference.predict(x[SPLIT.test]) - y[SPLIT.test]).mean()
    # The engine fits on standardized targets: absolute-error boosting is equivariant to it.
    assert result.test["mae"] == pytest.approx(expected, rel=1e-5)
    assert result.fitted.model.loss == "absolute_error" and result.fitted.model.n_iter_ == 30


@pytest.mark.parametrize("name", list(QM9_CANDIDATES))
def test_every_qm9_candidate_trains_and_predicts_one_value_per_molecule(data, name):
    result = fit(data, name)
    (candidate,) = qm9_candidates([name], hidden=16)
    assert candidate.prior and np.isfinite(result.test["mae"])
    expected = {"bag-mlp": "counts", "fingerprint-mlp": "fingerprint", "fingerprint-gbt": "fingerprint"}
    assert candidate.reads == expected.get(name, "geometry" if name == "egnn" else "graph")


def test_only_qm9_molecules_carry_the_counts_table():
    from biaslab.comparison.graph_data import prepare_graphs

    molecules = UserData(
        kind="molecule", task="regress", x=None, y=np.linspace(0, 1, 30).astype(np.float32),
        smiles=tuple(SMILES[k % len(SMILES)] for k in range(30)),
    )  # fmt: skip
    prepared = prepare_graphs(molecules, seed=0)
    assert set(prepared.tables) == {"fingerprint"}
    with pytest.raises(ConfigError, match="computed for QM9's molecules only"):
        prepared.table("counts")
    (bag,) = qm9_candidates(["bag-mlp"], hidden=8)
    with pytest.raises(
        ConfigError, match="reads molecules' counts of atoms and bonds; molecule data has none"
    ):
        fit_candidate(Trial(bag, prepared, CONFIG, TrainSetup(tag="bag", seed=0, progress=False)))


def test_the_l1_step_is_the_mean_absolute_error_and_a_bad_loss_is_one_line():
    model = torch.nn.Linear(3, 1)
    x, y = torch.randn(8, 3), torch.randn(8)
    out = protocol_step("regress", loss="l1")(model, (x, y), torch.Generator())
    assert torch.allclose(out.loss, (model(x)[:, 0] - y).abs().mean())
    with pytest.raises(ConfigError, match="loss='huber': choose mse or l1"):
        protocol_step("regress", loss="huber")


def test_qm9_models_saved_by_the_lab_predict_new_molecules_from_their_smiles(data, tmp_path):
    """What a qm9 run saves (each model's files, the subset's preparation with the catalog)
    reopens as a comparison that predicts from SMILES: every model but EGNN gives the outputs of
    the fitted model on the same molecules of the QM9 store (the graphs and the counts computed
    from the SMILES as the store's were), EGNN (coordinates) is one line."""
    import json

    from biaslab.comparison.saving import fitted_files, preparation_files
    from biaslab.comparison.study import Comparison
    from biaslab.data.input_schema import InputSchema

    prepared = prepare_qm9(data, data.target("gap"), SPLIT)
    files, names = {}, ("gcn", "bag-mlp", "fingerprint-mlp", "fingerprint-gbt", "egnn")
    fitted = {}
    for name in names:
        (candidate,) = qm9_candidates([name], hidden=16, gbt_iterations=30)
        setup = TrainSetup(tag=name, seed=0, progress=False)
        result = fit_candidate(Trial(candidate, prepared, CONFIG, setup, "l1"))
        fitted[name] = prepared.to_unit(result.fitted.outputs_on(prepared, "test"))
        files |= fitted_files(result, candidate, prepared)
    catalog = {"name": "qm9", "hidden": 16, "gbt_iterations": 30, "loss": "l1"}
    schema = InputSchema("molecule", ()).as_dict()
    files |= preparation_files(prepared, schema, (), list(names), "gcn", catalog)
    for path, content in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(content)
    (tmp_path / "results.json").write_text(json.dumps({"experiment": "qm9", "tables": []}))
    (tmp_path / "COMPLETE").write_text("")
    found = Comparison.load(tmp_path)
    assert found.recommended == "gcn" and set(found.candidates) == set(names)
    test_smiles = [str(s) for s in data.smiles[SPLIT.test]]
    for name in names[:-1]:
        predicted = found.predict(test_smiles, model=name)
        np.testing.assert_allclose(predicted, fitted[name], rtol=1e-5, atol=1e-5, err_msg=name)
    with pytest.raises(ConfigError, match="egnn reads 3-D coordinates"):
        found.predict(test_smiles, model="egnn")


def test_the_counts_of_new_molecules_equal_the_qm9_stores(data):
    from biaslab.comparison.graph_store import molecule_store

    store, *_ = molecule_store([str(s) for s in data.smiles])
    np.testing.assert_array_equal(store.counts(), data.bags())
