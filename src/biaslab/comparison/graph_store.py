"""Every graph of a data set held once, concatenated, and collated per batch: the store under
:func:`biaslab.comparison.graph_data.prepare_graphs`, built from a user's graphs (torch-geometric
``Data``) or molecules (SMILES, read by :mod:`biaslab.data.molecules`: the notes' 11 atom
features, bonds one-hot by type, a Morgan fingerprint and a Murcko scaffold each).

A batch is one disjoint graph (:class:`~biaslab.data.qm9.MoleculeBatch`, the layout of
torch-geometric's ``Batch``): message passing (Day 4) never crosses from one graph to another,
and a graph-level readout pools each graph's nodes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from biaslab.data.molecules import (
    BOND_TYPES,
    bag_of_atoms_and_bonds,
    molecule_graph,
    morgan_fingerprint,
    murcko_scaffold,
    parse_smiles,
)
from biaslab.data.qm9 import MoleculeBatch, concatenated_ranges
from biaslab.errors import ConfigError
from biaslab.train.config import EVAL_BATCH

if TYPE_CHECKING:
    from biaslab.data.user_data import UserData

__all__ = [
    "EDGE_TYPES",
    "FINGERPRINT_BITS",
    "GRAPH_KINDS",
    "UNREADABLE_ADVICE",
    "GraphStore",
    "molecule_store",
    "sample_batch",
    "unreadable_molecule",
    "user_graph_store",
]

GRAPH_KINDS = ("graph", "molecule")
EDGE_TYPES = len(BOND_TYPES)  # edge features: a one-hot bond type; a plain graph's edges all the first
# What to do when a molecule has an element the graph models' atom features (H, C, N, O, F) miss.
UNREADABLE_ADVICE = (
    "drop such molecules, or keep the fingerprint models (--models 'fingerprint trees,fingerprint MLP')"
)
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

    def standardized(self, mean: np.ndarray, std: np.ndarray) -> GraphStore:
        """The store with node features (x − mean) / std, float32: the training graphs'
        statistics (F,), for the training graphs and for new ones alike."""
        return replace(self, x=((self.x - mean) / std).astype(np.float32))

    def counts(self) -> np.ndarray:
        """Each molecule's counts of atoms and bonds, computed from node features as
        featurised (not standardized): what QM9's ``"counts"`` table holds
        (:func:`~biaslab.data.molecules.bag_of_atoms_and_bonds`).

        Shapes:
            -> (N, 49) float32.
        """
        first_node = np.repeat(self.node_ptr[:-1], np.diff(self.edge_ptr))  # (E,) each edge's graph's
        graph_of_node = np.repeat(np.arange(len(self)), np.diff(self.node_ptr))  # (A,)
        return bag_of_atoms_and_bonds(
            self.x, self.edge_index + first_node, self.edge_type, graph_of_node, len(self)
        )

    def chunks(self, rows=None) -> Iterator[tuple[MoleculeBatch]]:
        """The graphs ``rows`` (default: every graph) as a model is called on them:
        ``(MoleculeBatch,)`` of ``EVAL_BATCH`` graphs at a time."""
        rows = np.arange(len(self)) if rows is None else np.asarray(rows, dtype=np.int64)
        for i in range(0, len(rows), EVAL_BATCH):
            yield (self.batch(rows[i : i + EVAL_BATCH]),)


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
    store = (
        user_graph_store(first.graphs)
        if data.kind == "graph"
        else molecule_store(first.smiles, first.positions)[0]
    )
    return store.batch(np.arange(count))


def user_graph_store(graphs: Sequence) -> GraphStore:
    """A user's torch-geometric graphs (``UserData.graphs``, or new graphs to predict): their
    node features and edges, every edge of one type (``edge_attr`` is not read)."""
    xs = [g.x.detach().cpu().numpy() for g in graphs]
    edges = [g.edge_index.detach().cpu().numpy().reshape(2, -1) for g in graphs]
    return _concatenated(xs, edges, [np.zeros(e.shape[1]) for e in edges])


def unreadable_molecule(data: UserData) -> str | None:
    """The first molecule the graph models cannot read (an element outside the notes' atom
    features, H, C, N, O, F), as one sentence; None when every molecule can be a graph. The
    fingerprint models read any molecule."""
    for i, smiles in enumerate(data.smiles):
        try:
            molecule_graph(parse_smiles(smiles))
        except ValueError as exc:
            return _unreadable(i, smiles, exc)
    return None


def _unreadable(i: int, smiles: str, exc: ValueError) -> str:
    return f"molecule {i} ({smiles}): {exc}"


def molecule_store(
    smiles: Sequence[str], positions: Sequence[np.ndarray] | None = None
) -> tuple[GraphStore | None, np.ndarray, tuple[str, ...], str]:
    """Each SMILES read once: its graph (:func:`~biaslab.data.molecules.molecule_graph`), Morgan
    fingerprint and Murcko scaffold; the coordinates checked against its atoms. When a molecule
    has an element the atom features do not cover, there is no store (None): only the
    fingerprint models can compare such data, and the last item names the first such molecule
    (as :func:`unreadable_molecule`; "" when every molecule is a graph)."""
    graphs, fingerprints, scaffolds, unreadable = [], [], [], ""
    for i, text in enumerate(smiles):
        mol = parse_smiles(text)
        if mol is None:
            raise ConfigError(f"molecule {i}: RDKit cannot parse the SMILES {text!r}")
        try:
            graphs.append(molecule_graph(mol))
        except ValueError as exc:
            unreadable = unreadable or _unreadable(i, text, exc)
        fingerprints.append(morgan_fingerprint(mol, FINGERPRINT_RADIUS, FINGERPRINT_BITS))
        scaffolds.append(murcko_scaffold(mol))
    if unreadable:
        return None, np.stack(fingerprints), tuple(scaffolds), unreadable
    if positions is not None:
        positions = [np.asarray(p, dtype=np.float64) for p in positions]
        for i, (p, g) in enumerate(zip(positions, graphs)):
            if p.shape != (len(g.elements), 3) or not np.isfinite(p).all():
                raise ConfigError(
                    f"molecule {i} ({smiles[i]}): coordinates of shape {p.shape}; expected "
                    f"({len(g.elements)}, 3) finite values, one row per heavy atom in the SMILES' order"
                )
    store = _concatenated(
        [g.x for g in graphs], [g.edge_index for g in graphs], [g.edge_type for g in graphs], positions
    )
    return store, np.stack(fingerprints), tuple(scaffolds), ""
