"""The QM9 benchmark on the comparison engine: QM9's molecules as the engine's graphs, and its
model zoo as candidates at the benchmark's widths.

``biaslab compare`` reads a user's molecules from SMILES; the ``qm9`` lab reads the same kind of
data from the featurised QM9 cache (:func:`~biaslab.data.qm9.load_qm9`: 130,786 molecules, their
11 atom features, bonds, coordinates, Morgan bits). :func:`qm9_graphs` holds them as the engine's
:class:`~biaslab.comparison.graph_store.GraphStore` and tables, and :func:`prepare_qm9` builds
those of one split's molecules and applies the protocol's rules to them (every statistic from the
training rows only: node features, the counts table, the target), so that each QM9 model is
trained and scored by :func:`~biaslab.comparison.protocol.fit_candidate`, like any candidate of
any user's data.

The candidates (:func:`qm9_candidates`) are the models of :mod:`biaslab.nn.molecules` at the
benchmark's width ``hidden``, each with the prior the decision guide names:

    name              reads          model
    bag-mlp           counts         MLP (49 → 2h → 2h → 1, SiLU) on counts of atoms and bonds
    fingerprint-mlp   fingerprint    the same MLP on the 2048 Morgan bits
    fingerprint-gbt   fingerprint    histogram gradient-boosted trees (63 leaves, no early stopping)
    deepsets          graph          Deep Sets over the atoms, bonds unseen
    gcn, gat          graph          3 residual GCN / GAT layers of h
    mpnn              graph          Gilmer's MPNN of h/2 (edge network, GRU, Set2Set)
    transformer       graph          a graph Transformer of h, bonds as attention bias
    egnn              geometry       EGNN of h/2 on all pairs of atoms: E(3)-invariant

:func:`qm9_graphs` -> ``QM9Graphs(store, tables)`` (the Morgan bits kept packed; ``store.batch``
equals ``QM9.batch``, tested). :func:`prepare_qm9` builds only the split's molecules
(``QM9.select``: a study of 1,000 training molecules builds 3,300 graphs, not 130,831), its
``rows`` positions among them. :func:`judge_by_curves` gives each model's verdict from its seeds'
records, and :func:`tree_nodes` counts a tree model's nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from biaslab.comparison.candidates import Candidate, RegressionLoss, candidates_for
from biaslab.comparison.curves import curve_of
from biaslab.comparison.graph_data import PreparedGraphs, prepared_graphs
from biaslab.comparison.graph_store import GraphStore
from biaslab.comparison.judged import Judged
from biaslab.data.molecules import BOND_TYPES
from biaslab.data.qm9 import PackedBits
from biaslab.evaluate.decision import RegressionEvidence, decide
from biaslab.nn.mlp import MLP
from biaslab.nn.molecules import build_molecule_model

if TYPE_CHECKING:
    from biaslab.data.molecule_splits import MoleculeSplit
    from biaslab.data.qm9 import QM9

__all__ = [
    "QM9_CANDIDATES",
    "QM9Graphs",
    "judge_by_curves",
    "prepare_qm9",
    "qm9_candidates",
    "qm9_graphs",
    "tree_nodes",
]

# The benchmark's model names, in the order of its tables, and the guide's candidate whose prior
# each shares (None: a prior of its own, stated below).
QM9_CANDIDATES = {
    "bag-mlp": None,
    "fingerprint-mlp": "fingerprint MLP",
    "fingerprint-gbt": "fingerprint trees",
    "deepsets": None,
    "gcn": "GCN",
    "gat": "GAT",
    "mpnn": "MPNN",
    "transformer": "graph Transformer",
    "egnn": "EGNN",
}
OWN_PRIORS = {
    "bag-mlp": "none beyond smoothness: counts of atoms and bonds, not how they are wired",
    "deepsets": "permutation invariance over the atoms; bonds unseen",
}
TREE_LEAVES = 63
TREE_LEARNING_RATE = 0.1


@dataclass(frozen=True, eq=False)
class QM9Graphs:
    """QM9 as the comparison engine reads it, built once: every molecule's graph, node features
    as featurised (not standardized), and its tables.

    Shapes (N molecules, A atoms):
        store: x (A, 11) float32, pos (A, 3) ångström, edges as :class:`GraphStore` holds them.
        tables: ``"fingerprint"`` (N, 2048) Morgan bits, kept packed
            (:class:`~biaslab.data.qm9.PackedBits`: rows read as uint8); ``"counts"`` (N, 49) float32.
    """

    store: GraphStore
    tables: dict[str, np.ndarray]


def qm9_graphs(data: QM9) -> QM9Graphs:
    """The featurised QM9 store (:class:`~biaslab.data.qm9.QM9`) as the engine's graphs and tables."""
    store = GraphStore(
        x=data.x.astype(np.float32),
        edge_index=data.edge_index.astype(np.int64),  # (2, E) local to each molecule
        edge_type=data.edge_type.astype(np.int64),
        node_ptr=data.atom_ptr.astype(np.int64),
        edge_ptr=data.edge_ptr.astype(np.int64),
        pos=data.pos.astype(np.float32),
    )
    return QM9Graphs(store, {"fingerprint": PackedBits(data.fingerprint), "counts": data.bags()})


def prepare_qm9(
    data: QM9, y: np.ndarray, split: MoleculeSplit, *, rule: str = "random", seed: int = 0
) -> PreparedGraphs:
    """One split of QM9 prepared by the protocol: only the split's molecules become graphs and
    tables (a study of 1,000 training molecules builds 3,300 of the 130,831), node features, the
    counts table and the target standardized by the statistics of ``split.train`` only.

    Args:
        data: the featurised QM9 (:func:`~biaslab.data.qm9.load_qm9`).
        y: (N,) the target of every molecule, in its unit.
        split: the training, validation and test rows of ``data``.
        rule: how the split was drawn, ``"random"`` or ``"scaffold"`` (recorded).
        seed: recorded as the preparation's seed.

    Returns:
        the prepared split; its ``rows`` are positions among the split's molecules in QM9's
        order (``np.unique`` of the three splits' rows), the molecules its ``store`` holds.
    """
    parts = {"train": split.train, "val": split.val, "test": split.test}
    molecules = np.unique(np.concatenate(list(parts.values())))  # (n,) sorted rows of data
    graphs = qm9_graphs(data.select(molecules))
    rows = {name: np.searchsorted(molecules, part) for name, part in parts.items()}
    return prepared_graphs(
        graphs.store, rows, y[molecules], "regress", 1, kind="molecule", tables=graphs.tables, split=rule,
        seed=seed,
    )  # fmt: skip


def qm9_candidates(
    names, hidden: int, *, gbt_iterations: int = 500, loss: RegressionLoss = "l1"
) -> list[Candidate]:
    """The benchmark's models ``names`` (keys of :data:`QM9_CANDIDATES`) as candidates.

    Args:
        hidden: the width h of the module docstring's table.
        gbt_iterations: boosting iterations of the trees (no early stopping: every one is kept).
        loss: the trees' loss, to match the networks': ``"l1"`` absolute error, ``"mse"`` squared.
    """
    guide = {c.name: c for c in candidates_for("molecule", task="regress", has_positions=True)}
    chosen = []
    for name in names:
        shared = guide.get(QM9_CANDIDATES[name])
        prior = OWN_PRIORS[name] if shared is None else shared.prior
        if name == "fingerprint-gbt":
            build = _trees(gbt_iterations, loss)
            chosen.append(Candidate(name, prior, "sklearn", build, reads="fingerprint"))
        elif name.endswith("-mlp"):
            reads = "counts" if name == "bag-mlp" else "fingerprint"
            chosen.append(Candidate(name, prior, "torch", _table_mlp(hidden), reads=reads))
        else:
            reads = "geometry" if name == "egnn" else "graph"
            chosen.append(Candidate(name, prior, "torch", _graph_model(name, hidden), reads=reads))
    return chosen


def _table_mlp(hidden: int):
    def build(input_shape, n_outputs: int, task: str) -> MLP:
        """(B, F) -> (B, n_outputs): two SiLU layers of 2h, as the benchmark's tabular models."""
        return MLP((int(input_shape[0]), 2 * hidden, 2 * hidden, n_outputs), "silu")

    return build


def _graph_model(name: str, hidden: int):
    def build(input_shape, n_outputs: int, task: str):
        """A batch of B molecules -> (B,) (one output) or (B, n_outputs)."""
        return build_molecule_model(name, int(input_shape[0]), len(BOND_TYPES), hidden, n_outputs)

    return build


def _trees(iterations: int, loss: RegressionLoss):
    def build(input_shape, n_outputs: int, task: str):
        """Histogram gradient-boosted trees; ``random_state`` left unset (the protocol seeds it)."""
        from sklearn.ensemble import HistGradientBoostingRegressor

        return HistGradientBoostingRegressor(
            loss="absolute_error" if loss == "l1" else "squared_error", max_iter=iterations,
            learning_rate=TREE_LEARNING_RATE, max_leaf_nodes=TREE_LEAVES, early_stopping=False,
        )  # fmt: skip

    return build


def tree_nodes(model) -> int:
    """Nodes of all fitted trees of a histogram gradient-boosting model (scikit-learn keeps them in
    ``_predictors``: one list per iteration): the trees' size beside a network's parameters."""
    return sum(len(tree.nodes) for iteration in model._predictors for tree in iteration)


def judge_by_curves(
    train_sizes, results, requirement: dict[str, float], unit: str, extrapolate_to: int
) -> dict[str, Judged]:
    """Each model's verdict by the comparison's rules (``decide``): its validation curve over the
    sizes (would more data help?), its mean test MAE at the largest size against the
    requirement and the mean predictor's.

    Args:
        train_sizes: the learning curve's training-set sizes, increasing.
        results: model -> size -> the seeds' fit records (``val_mae``, ``test_mae``,
            ``baseline_test_mae``, ``result`` a CandidateResult, ``candidate``).
        requirement: ``decide``'s keywords on the test MAE (``max_error`` or ``max_relative_error``).
        unit: the target's unit; extrapolate_to: the size the power law is extended to.
    """
    largest, judged = train_sizes[-1], {}
    for m, by_size in results.items():
        records = by_size[largest]
        curve = curve_of(
            train_sizes, [[r["val_mae"] for r in by_size[n]] for n in train_sizes], (extrapolate_to,)
        )
        evidence = RegressionEvidence(
            train_sizes=list(train_sizes),
            val_errors=curve.val_errors,
            test_error=float(np.mean([r["test_mae"] for r in records])),
            baseline_error=float(np.mean([r["baseline_test_mae"] for r in records])),
            metric="MAE",
            unit=unit,
        )
        result = records[0]["result"]  # the seed-0 fit, its validation and test figures the seeds' means
        val_mae, test_mae = (float(np.mean([r[key] for r in records])) for key in ("val_mae", "test_mae"))
        result = replace(result, val={**result.val, "mae": val_mae}, test={**result.test, "mae": test_mae})
        judged[m] = Judged(records[0]["candidate"], result, curve, decide(evidence, **requirement))
    return judged
