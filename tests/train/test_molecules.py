"""The QM9 protocol: every model through one trainer, target statistics from training rows only."""

import numpy as np
import pytest
import torch

pytest.importorskip("rdkit")

from biaslab.data.molecule_splits import random_split
from biaslab.data.molecules import molecule_graph, morgan_fingerprint, parse_smiles
from biaslab.data.qm9 import QM9, TARGETS
from biaslab.nn.molecules import build_molecule_model
from biaslab.train import TrainConfig
from biaslab.train.molecules import fit_gradient_boosting, fit_molecule_regressor
from biaslab.train.recipes import TrainSetup

SMILES = ["C", "CC", "CCC", "CCO", "CO", "C=O", "CC#N", "C1CC1", "C1=CC=CC=C1", "OC(=O)C#N", "CCN", "CF",
          "CC(C)C", "C1CCC1", "CC=O", "NC=O", "OCCO", "C#C", "CC(=O)C", "c1ccoc1"]  # fmt: skip


def tiny_store(n=80, seed=0):
    """A QM9 store of ``n`` molecules (the SMILES above, repeated) whose gap is a noisy function
    of the atoms, so that a model can learn it; coordinates are random (unused here)."""
    rng = np.random.default_rng(seed)
    smiles = [SMILES[k % len(SMILES)] for k in range(n)]
    graphs = [molecule_graph(parse_smiles(s)) for s in smiles]
    gap = np.array([2.0 + g.x[:, 5].sum() / 10 + g.edge_type.sum() / 5 for g in graphs]) + rng.normal(
        0, 0.05, n
    )
    y = np.zeros((n, len(TARGETS)))
    y[:, list(TARGETS).index("gap")] = gap
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


CONFIG = TrainConfig(epochs=15, batch_size=16, lr=3e-3)


def fit(data, name="gcn", y=None, seed=0):
    torch.manual_seed(seed)
    model = build_molecule_model(name, 11, 4, hidden=16)
    split = random_split(len(data), 56, 12, seed=0)
    y = data.target("gap") if y is None else y
    return fit_molecule_regressor(
        model, data, split, y, CONFIG, TrainSetup(tag=name, seed=seed, progress=False)
    )


def test_a_graph_model_learns_and_reports_mae_in_ev():
    data = tiny_store()
    result = fit(data)
    spread = np.abs(data.target("gap") - data.target("gap").mean()).mean()
    assert result.test_mae < 0.6 * spread  # better than predicting the mean
    assert result.parameters > 0 and result.epochs == CONFIG.epochs and result.train_seconds > 0
    # best_epoch names the epoch with the lowest validation MAE, whose weights were kept.
    val = [h["val_mae"] for h in result.history]
    assert 1 <= result.best_epoch <= CONFIG.epochs and val[result.best_epoch - 1] == min(val)


def test_the_same_seed_gives_the_same_numbers():
    data = tiny_store()
    a, b = fit(data), fit(data)
    assert (a.test_mae, a.val_mae, a.train_mae) == (b.test_mae, b.val_mae, b.train_mae)


def test_test_targets_never_shape_training():
    """Change every test target: training (scaler, chosen epoch, weights) must not move, so the
    validation and training errors are bit-identical; only the test error changes."""
    data = tiny_store()
    split = random_split(len(data), 56, 12, seed=0)
    y = data.target("gap").copy()
    y_other = y.copy()
    y_other[split.test] += 10.0
    a, b = fit(data, y=y), fit(data, y=y_other)
    assert (a.val_mae, a.train_mae) == (b.val_mae, b.train_mae)
    assert b.test_mae > a.test_mae + 5


def test_gradient_boosting_on_fingerprints_uses_the_same_rows():
    from sklearn.ensemble import HistGradientBoostingRegressor

    data = tiny_store()
    split = random_split(len(data), 56, 12, seed=0)
    x, y = data.fingerprints(), data.target("gap")
    result = fit_gradient_boosting(x, split, y, seed=0, max_iter=30)
    reference = HistGradientBoostingRegressor(
        loss="absolute_error", max_iter=30, max_leaf_nodes=63, early_stopping=False, random_state=0
    ).fit(x[split.train], y[split.train])
    assert result.test_mae == pytest.approx(np.abs(reference.predict(x[split.test]) - y[split.test]).mean())
    assert result.train_mae < np.abs(y[split.train] - np.median(y[split.train])).mean()  # it learned
    assert result.parameters > 0 and result.epochs == 30


MONITORED = [
    ("val_loss", True),
    ("val_mae", True),
    ("val_error", True),
    ("val_accuracy", False),
    ("val_auroc", False),
]


@pytest.mark.parametrize(("monitor", "minimise"), MONITORED)
def test_best_minimises_errors_and_maximises_scores(monitor, minimise):
    from biaslab.train.callbacks import Best

    best = Best(monitor)
    assert best.improved({monitor: 1.0}, 1) is True
    assert best.improved({monitor: 0.5}, 2) is minimise
    assert best.improved({"other": 0.1}, 3) is None
    assert best.epoch == (2 if minimise else 1)
