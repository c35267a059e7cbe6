"""Graphs and molecules prepared for a comparison: the protocol's rules, on examples of any size.

A graph is not a row of numbers, so :func:`~biaslab.comparison.protocol.prepare` hands graph and
molecule data to :func:`prepare_graphs`, which keeps the protocol's rules (Day 5):

1. **split once**, by a seed: ``"random"``, stratified by class to classify (the protocol's own
   split of rows), or ``"scaffold"`` (molecules only): whole Bemis–Murcko scaffold groups per
   split (:func:`~biaslab.data.molecule_splits.scaffold_split`), so the test molecules carry ring
   systems no training molecule has, a shift towards new chemistry;
2. **every statistic from the training rows only**: node features standardized per feature over
   the nodes of the training graphs, x̃_v = (x_v − μ) / σ (a constant feature only centred);
   regression targets standardized as the protocol does;

and holds every graph once, concatenated (:class:`GraphStore`), so that a training step collates
the graphs of its rows into one disjoint graph (:class:`~biaslab.data.qm9.MoleculeBatch`, the
layout of torch-geometric's ``Batch``): message passing (Day 4) never crosses from one graph to
another, and a graph-level readout pools each graph's nodes.

What each kind carries:

    kind       nodes                          edges (one-hot, 4 channels)    also
    graph      the user's node features x     one type: the first channel    -
    molecule   the notes' 11 atom features    the bond type (single, double,  Morgan fingerprint
               (:mod:`biaslab.data.molecules`) triple, aromatic)               (2048 bits, radius 2),
                                                                              scaffold, coordinates
                                                                              (when given)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from biaslab.comparison import preparation
from biaslab.comparison.fitting import Prepared
from biaslab.data.molecule_splits import scaffold_split
from biaslab.data.molecules import (
    BOND_TYPES,
    molecule_graph,
    morgan_fingerprint,
    murcko_scaffold,
    parse_smiles,
)
from biaslab.data.qm9 import MoleculeBatch, concatenated_ranges
from biaslab.data.splits import Splits
from biaslab.errors import ConfigError
from biaslab.train.seed import derive_seed

if TYPE_CHECKING:
    from biaslab.data.user_data import UserData

__all__ = [
    "EDGE_TYPES",
    "FINGERPRINT_BITS",
    "GRAPH_KINDS",
    "SPLIT_RULES",
    "GraphStore",
    "PreparedGraphs",
    "prepare_graphs",
    "sample_batch",
]

GRAPH_KINDS = ("graph", "molecule")
SPLIT_RULES = ("random", "scaffold")
EDGE_TYPES = len(BOND_TYPES)  # edge features: a one-hot bond type; a plain graph's edges all the first
FINGERPRINT_BITS = 2048  # Morgan bits, as the QM9 benchmark's fingerprints
FINGERPRINT_RADIUS = 2  # bonds around each atom: ECFP4-like


@dataclass(frozen=True, eq=False)
class GraphStore:
    """Every graph of a data set concatenated: graph ``g``'s nodes are rows
    ``node_ptr[g]:node_ptr[g+1]`` of ``x`` (and ``pos``), its directed edges the columns
    ``edge_ptr[g]:edge_ptr[g+1]`` of ``edge_index`` (node indices local to the graph) and
    ``edge_type``.

    Shapes (N graphs, A nodes, E edges in all):
        x (A, F) float32, standardized; edge_index (2, E) int64, local; edge_type (E,) int64 in
        0..3 (``BOND_TYPES``); node_ptr, edge_ptr (N + 1,) int64; pos (A, 3) float32 or None.
    """

    x: np.ndarray
    edge_index: np.ndarray
    edge_type: np.ndarray
    node_ptr: np.ndarray
    edge_ptr: np.ndarray
    pos: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.node_ptr) - 1

    def batch(self, rows) -> MoleculeBatch:
        """The graphs ``rows`` (in that order) as one disjoint graph: node indices shifted by the
        nodes of the graphs before, ``batch`` naming each node's graph (0..len(rows)-1).

        Shapes:
            rows (B,) -> x (A_b, F), pos (A_b, 3) or None, edge_index (2, E_b), edge_attr
            (E_b, 4) one-hot, batch (A_b,); ``num_graphs`` B.
        """
        rows = np.asarray(rows, dtype=np.int64)
        nodes = concatenated_ranges(self.node_ptr[rows], self.node_ptr[rows + 1])  # (A_b,) store rows
        edges = concatenated_ranges(self.edge_ptr[rows], self.edge_ptr[rows + 1])  # (E_b,)
        n_nodes, n_edges = np.diff(self.node_ptr)[rows], np.diff(self.edge_ptr)[rows]
        first_node = np.cumsum(n_nodes) - n_nodes  # where each graph starts in the batch
        edge_index = self.edge_index[:, edges] + np.repeat(first_node, n_edges)  # (2, E_b)
        return MoleculeBatch(
            x=torch.from_numpy(self.x[nodes]),
            pos=None if self.pos is None else torch.from_numpy(self.pos[nodes]),
            edge_index=torch.from_numpy(edge_index),
            edge_attr=torch.from_numpy(np.eye(EDGE_TYPES, dtype=np.float32)[self.edge_type[edges]]),
            batch=torch.from_numpy(np.repeat(np.arange(len(rows)), n_nodes)),
            num_graphs=len(rows),
        )


@dataclass(frozen=True, eq=False)
class PreparedGraphs:
    """Graph or molecule data split and scaled for fitting: what
    :class:`~biaslab.comparison.fitting.Prepared` is for arrays, with the fields the protocol
    and its learning curves read (``kind``, ``task``, ``input_shape``, ``n_outputs``, ``rows``,
    ``targets``, ``y_mean``, ``y_std``, ``seed``, :attr:`n_train`, :meth:`to_unit`,
    :meth:`train_subset`).

    Shapes (N examples, n_s in split s):
        input_shape: (F,), the node features.
        rows: split -> (n_s,) positions of its examples in the user's data (and in ``store``).
        targets: split -> (n_s,) targets as given: class indices, or values in the target's unit.
        y: (N,) every example's target as trained on: int64 class indices, or float32
            standardized by ``y_mean`` and ``y_std``.
        store: every example's graph (:class:`GraphStore`), node features standardized by
            ``node_mean`` and ``node_std`` (F,), the training graphs' nodes' statistics.
        fingerprints: molecules: (N, 2048) uint8 Morgan bits; graphs: None.
        scaffolds: molecules: N Murcko scaffold SMILES ("" for an acyclic molecule); graphs: None.
        split: the split rule, ``"random"`` or ``"scaffold"``.
    """

    kind: str
    task: str
    input_shape: tuple[int, ...]
    n_outputs: int
    rows: dict[str, np.ndarray]
    targets: dict[str, np.ndarray]
    y: torch.Tensor
    store: GraphStore
    node_mean: np.ndarray
    node_std: np.ndarray
    y_mean: float | None = None
    y_std: float | None = None
    fingerprints: np.ndarray | None = None
    scaffolds: tuple[str, ...] | None = None
    split: str = "random"
    seed: int = 0

    @property
    def n_train(self) -> int:
        return len(self.rows["train"])

    @property
    def has_positions(self) -> bool:
        """Whether the graphs carry 3-D coordinates (for the geometric models)."""
        return self.store.pos is not None

    def graphs(self, split: str) -> MoleculeBatch:
        """The graphs of ``split`` ("train", "val" or "test") collated, in the order of ``rows``."""
        return self.store.batch(self.rows[split])

    def to_unit(self, values) -> np.ndarray:
        """Standardized regression outputs back in the target's unit: ``values · y_std + y_mean``."""
        return np.asarray(values, dtype=np.float64) * self.y_std + self.y_mean

    def train_subset(self, rows, repeat_to: int | None = None) -> PreparedGraphs:
        """The same preparation with the training set cut to ``rows`` (positions in it), repeated
        cyclically to ``repeat_to`` rows when given (an equal step budget for a learning curve);
        validation, test and every statistic stay as they are.

        Shapes:
            rows: (n,) -> a training set of (repeat_to or n) rows.
        """
        rows = np.asarray(rows, dtype=np.int64)
        if rows.ndim != 1 or len(rows) == 0:
            raise ValueError(f"rows must be a non-empty 1-D array of positions, got shape {rows.shape}")
        if repeat_to is not None:
            rows = rows[np.arange(max(repeat_to, len(rows))) % len(rows)]
        return replace(
            self,
            rows={**self.rows, "train": self.rows["train"][rows]},
            targets={**self.targets, "train": self.targets["train"][rows]},
        )

    def fingerprint_table(self) -> Prepared:
        """The molecules as a table of their fingerprint bits (0/1, not standardized: a bit is on a
        unit scale already, and a rare bit standardized would be a huge value), the same rows and
        targets: what the fingerprint candidates fit on, as any table candidate.

        Shapes:
            x_s (n_s, 2048) float32; y_s (n_s,) as ``y``.

        Raises:
            ConfigError: graph data (fingerprints are computed from SMILES).
        """
        if self.fingerprints is None:
            raise ConfigError(
                f"fingerprints are computed from a molecule's SMILES; {self.kind} data has none"
            )
        parts = {
            name: (torch.from_numpy(self.fingerprints[r].astype(np.float32)), self.y[r])
            for name, r in self.rows.items()
        }
        width = self.fingerprints.shape[1]
        return Prepared(
            splits=Splits(
                *parts["train"], *parts["val"], *parts["test"], self.rows["train"], self.rows["val"]
            ),
            kind="table",
            task=self.task,
            input_shape=(width,),
            n_outputs=self.n_outputs,
            rows=self.rows,
            targets=self.targets,
            x_mean=np.zeros(width),
            x_std=np.ones(width),
            y_mean=self.y_mean,
            y_std=self.y_std,
            seed=self.seed,
        )


def prepare_graphs(
    data: UserData, *, seed: int, val: float = 0.15, test: float = 0.15, split: str = "random"
) -> PreparedGraphs:
    """Split graph or molecule ``data`` and standardize it, every statistic from the training rows.

    Args:
        data: a :class:`~biaslab.data.user_data.UserData` of kind ``graph`` (``graphs``) or
            ``molecule`` (``smiles``, and ``positions`` when given: one (n_i, 3) array per
            molecule, a row per heavy atom in the SMILES' atom order).
        seed: fixes the split.
        val, test: the fractions held out for validation and test (default 0.15 each).
        split: ``"random"`` (stratified by class to classify: every class in every split, a class
            needs 3 examples) or ``"scaffold"`` (molecules only: whole scaffold groups per split).

    Raises:
        ConfigError: one line: an unknown split rule, a scaffold split of anything but molecules,
            bad fractions, a split left empty or a class missing from the training rows, an
            element or bond the atom features do not cover, coordinates that do not match the
            atoms, a constant regression target.
    """
    if split not in SPLIT_RULES:
        raise ConfigError(f"unknown split {split!r}; choose {' or '.join(SPLIT_RULES)}")
    if split == "scaffold" and data.kind != "molecule":
        raise ConfigError(
            f"split='scaffold' groups molecules by their Murcko scaffold; {data.kind} data has no "
            "scaffolds: use split='random'"
        )
    if data.kind not in GRAPH_KINDS:
        raise ConfigError(f"{data.kind} data is prepared by protocol.prepare, not as graphs")
    if not (0 < val < 1 and 0 < test < 1 and val + test < 1):
        raise ConfigError(f"val={val}, test={test}: each a fraction in (0, 1), together below 1")
    if data.kind == "graph":
        store, fingerprints, scaffolds = _user_graphs(data), None, None
    else:
        store, fingerprints, scaffolds = _molecules(data)
    rows = _split(data, val, test, seed, split, scaffolds)
    train_nodes = np.flatnonzero(
        np.repeat(np.isin(np.arange(len(store)), rows["train"]), np.diff(store.node_ptr))
    )
    node_mean, node_std = preparation.feature_stats(store.x, None, 1, train_nodes)  # (F,), (F,)
    store = replace(store, x=((store.x - node_mean) / node_std).astype(np.float32))
    y, y_mean, y_std = preparation.trained_targets(data, rows["train"])
    y = torch.from_numpy(y)
    targets = {
        name: data.y[r] if data.task == "classify" else data.y[r].astype(np.float64)
        for name, r in rows.items()
    }
    return PreparedGraphs(
        kind=data.kind,
        task=data.task,
        input_shape=(store.x.shape[1],),
        n_outputs=data.n_classes if data.task == "classify" else 1,
        rows=rows,
        targets=targets,
        y=y,
        store=store,
        node_mean=node_mean,
        node_std=node_std,
        y_mean=y_mean,
        y_std=y_std,
        fingerprints=fingerprints,
        scaffolds=scaffolds,
        split=split,
        seed=seed,
    )


def _split(data: UserData, val: float, test: float, seed: int, rule: str, scaffolds) -> dict[str, np.ndarray]:
    """Positions per split: the protocol's own split of rows (random), or scaffold groups."""
    split_seed = derive_seed(seed, "compare-split")  # the seed protocol.prepare splits by
    if rule == "random":
        return preparation.split_rows(data, val, test, np.random.default_rng(split_seed))
    parts = scaffold_split(np.array(scaffolds), (1 - val - test, val, test), split_seed)
    rows = {"train": parts.train, "val": parts.val, "test": parts.test}
    empty = [name for name, r in rows.items() if len(r) == 0]
    if empty:
        raise ConfigError(
            f"the scaffold split of {len(data)} molecules in {len(set(scaffolds))} scaffolds left no "
            f"{' and no '.join(empty)} molecules; add molecules, raise val and test, or split='random'"
        )
    if data.task == "classify":
        missing = sorted(set(range(data.n_classes)) - set(data.y[rows["train"]].tolist()))
        if missing:
            raise ConfigError(
                f"the scaffold split leaves no training molecule of class "
                f"{', '.join(repr(data.classes[c]) for c in missing)}; add molecules or use split='random'"
            )
    return rows


def _concatenated(
    xs: list[np.ndarray], edges: list[np.ndarray], types: list[np.ndarray], pos=None
) -> GraphStore:
    """One :class:`GraphStore` from per-graph node features (n_i, F), edges (2, E_i) and edge
    types (E_i,), and coordinates (n_i, 3) when given."""
    node_ptr = np.concatenate([[0], np.cumsum([len(x) for x in xs])]).astype(np.int64)
    edge_ptr = np.concatenate([[0], np.cumsum([e.shape[1] for e in edges])]).astype(np.int64)
    return GraphStore(
        x=np.concatenate(xs).astype(np.float32),
        edge_index=np.concatenate(edges, axis=1).astype(np.int64),
        edge_type=np.concatenate(types).astype(np.int64),
        node_ptr=node_ptr,
        edge_ptr=edge_ptr,
        pos=None if pos is None else np.concatenate(pos).astype(np.float32),
    )


def sample_batch(data: UserData, count: int) -> MoleculeBatch:
    """The first ``count`` graphs or molecules of ``data`` as one batch, node features as read (not
    standardized): what a user's graph model is tried on before any training.

    Shapes:
        -> x (A, F), edge_index (2, E), edge_attr (E, 4), batch (A,), pos (A, 3) or None.
    """
    if data.kind not in GRAPH_KINDS:
        raise ConfigError(f"{data.kind} data has no graphs to batch")
    count = min(count, len(data))
    first = replace(
        data,
        y=data.y[:count],
        graphs=None if data.graphs is None else data.graphs[:count],
        smiles=None if data.smiles is None else data.smiles[:count],
        positions=None if data.positions is None else data.positions[:count],
    )
    store = _user_graphs(first) if data.kind == "graph" else _molecules(first)[0]
    return store.batch(np.arange(count))


def _user_graphs(data: UserData) -> GraphStore:
    """A user's torch-geometric graphs: their node features and edges, every edge of one type
    (``edge_attr`` is not read)."""
    xs = [g.x.detach().cpu().numpy() for g in data.graphs]
    edges = [g.edge_index.detach().cpu().numpy().reshape(2, -1) for g in data.graphs]
    return _concatenated(xs, edges, [np.zeros(e.shape[1]) for e in edges])


def _molecules(data: UserData) -> tuple[GraphStore, np.ndarray, tuple[str, ...]]:
    """Each SMILES read once: its graph (:func:`~biaslab.data.molecules.molecule_graph`), Morgan
    fingerprint and Murcko scaffold; the coordinates checked against its atoms."""
    graphs, fingerprints, scaffolds = [], [], []
    for i, smiles in enumerate(data.smiles):
        mol = parse_smiles(smiles)
        if mol is None:
            raise ConfigError(f"molecule {i}: RDKit cannot parse the SMILES {smiles!r}")
        try:
            graphs.append(molecule_graph(mol))
        except ValueError as exc:
            raise ConfigError(
                f"molecule {i} ({smiles}): {exc}; the graph models read the notes' atom features: "
                "drop such molecules, or compare a table of fingerprints"
            ) from None
        fingerprints.append(morgan_fingerprint(mol, FINGERPRINT_RADIUS, FINGERPRINT_BITS))
        scaffolds.append(murcko_scaffold(mol))
    positions = None
    if data.positions is not None:
        positions = [np.asarray(p, dtype=np.float64) for p in data.positions]
        for i, (p, g) in enumerate(zip(positions, graphs)):
            if p.shape != (len(g.elements), 3) or not np.isfinite(p).all():
                raise ConfigError(
                    f"molecule {i} ({data.smiles[i]}): coordinates of shape {p.shape}; expected "
                    f"({len(g.elements)}, 3) finite values, one row per heavy atom in the SMILES' order"
                )
    store = _concatenated(
        [g.x for g in graphs], [g.edge_index for g in graphs], [g.edge_type for g in graphs], positions
    )
    return store, np.stack(fingerprints), tuple(scaffolds)
