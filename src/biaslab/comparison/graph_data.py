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

:class:`PreparedGraphs` is, like the arrays' ``Prepared``, a ``prepared.PreparedData``: ``rows``,
``targets``, ``to_unit``, ``train_subset``, and ``table(name)`` / ``table_rows(name, split)`` for
the molecules' tables (the ``"fingerprint"`` bits as computed, the ``"counts"`` of atoms and bonds
standardized per column). :func:`prepared_graphs` applies the statistics to an already split store
(shared with QM9). A molecule with an element other than H, C, N, O, F leaves no store: the
fingerprint candidates still fit, a graph candidate is one line naming the molecule
(``require_graphs``), and ``compare`` refuses graph models on such data when its config is made.
A graph model trains by the same ``fitting.fit_torch`` as every torch candidate, over the
training graphs' positions, each step collating its rows into one ``MoleculeBatch``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from biaslab.comparison import preparation
from biaslab.comparison.graph_store import (
    GRAPH_KINDS,
    UNREADABLE_ADVICE,
    GraphStore,
    molecule_store,
    user_graph_store,
)
from biaslab.comparison.prepared import Inputs, Prepared, PreparedData
from biaslab.data.molecule_splits import scaffold_split
from biaslab.data.qm9 import MoleculeBatch
from biaslab.data.splits import Splits
from biaslab.data.user_formats import listed
from biaslab.errors import ConfigError
from biaslab.train.seed import derive_seed

if TYPE_CHECKING:
    from biaslab.data.user_data import UserData

__all__ = [
    "SPLIT_RULES",
    "PreparedGraphs",
    "graph_inputs",
    "molecule_inputs",
    "prepare_graphs",
    "prepared_graphs",
]

SPLIT_RULES = ("random", "scaffold")


@dataclass(frozen=True, eq=False)
class PreparedGraphs(PreparedData):
    """Graph or molecule data split and scaled for fitting: what
    :class:`~biaslab.comparison.prepared.Prepared` is for arrays, with the fields the protocol
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
            ``node_mean`` and ``node_std`` (F,), the training graphs' nodes' statistics; None (and
            the three None) when a molecule has an element the atom features do not cover: then
            ``unreadable`` names it, and only the fingerprint candidates can be fitted.
        tables: molecules: per-molecule tables a candidate may read instead of the graph
            (:meth:`table`), read by rows: ``"fingerprint"`` (N, 2048) uint8 Morgan bits, as
            computed (QM9's kept packed, :class:`~biaslab.data.qm9.PackedBits`);
            ``"counts"`` (N, 49) float32 counts of atoms and bonds (QM9,
            :func:`~biaslab.data.molecules.bag_of_atoms_and_bonds`), standardized per column
            by the training rows; graphs: none.
        table_stats: name -> (mean (F,), std (F,)) of each standardized table's training rows.
        scaffolds: molecules: N Murcko scaffold SMILES ("" for an acyclic molecule); or None.
        split: the split rule, ``"random"`` or ``"scaffold"``.
    """

    y: torch.Tensor
    store: GraphStore | None
    node_mean: np.ndarray | None
    node_std: np.ndarray | None
    y_mean: float | None = None
    y_std: float | None = None
    tables: Mapping[str, np.ndarray] = field(default_factory=dict)
    table_stats: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    scaffolds: tuple[str, ...] | None = None
    split: str = "random"
    seed: int = 0
    unreadable: str = ""

    @property
    def has_positions(self) -> bool:
        """Whether the graphs carry 3-D coordinates (for the geometric models)."""
        return self.store is not None and self.store.pos is not None

    def require_graphs(self) -> GraphStore:
        """The store of graphs; a ConfigError line when some molecule cannot be a graph."""
        if self.store is None:
            raise ConfigError(
                f"{self.unreadable}; the graph models read the notes' atom features (H, C, N, O, F): "
                f"{UNREADABLE_ADVICE}"
            )
        return self.store

    def trainer_batches(self, split: str, takes_mask: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """What the Trainer iterates for ``split``: the positions of its graphs in the store and
        their targets, ``(rows (n_s,), y (n_s,))``; a step collates them (:meth:`batch_step`). A
        graph carries its own size: no mask. One ConfigError line first when some molecule
        cannot be a graph."""
        self.require_graphs()
        rows = torch.from_numpy(self.rows[split])
        return rows, self.y[rows]

    def batch_step(self, step):
        """The protocol's ``step`` on batches of positions: each batch's graphs collated on the
        CPU into one disjoint graph (:meth:`GraphStore.batch`), moved to the targets' device."""
        store = self.require_graphs()

        def collated(model, batch, generator: torch.Generator):
            rows, y = batch
            return step(model, (store.batch(rows.cpu().numpy()).to(y.device), y), generator)

        return collated

    def input_chunks(self, split: str, takes_mask: bool = False):
        """``split``'s graphs as the model is called on them: ``(MoleculeBatch,)`` of
        ``EVAL_BATCH`` graphs at a time."""
        return self.require_graphs().chunks(self.rows[split])

    def graphs(self, split: str) -> MoleculeBatch:
        """The graphs of ``split`` ("train", "val" or "test") collated, in the order of ``rows``."""
        return self.require_graphs().batch(self.rows[split])

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

    def table_rows(self, name: str, split: str) -> torch.Tensor:
        """The rows of ``split`` ("train", "val" or "test") of the table ``name``, as float32: what
        a table candidate reads, one split at a time (:meth:`table` holds every split).

        Shapes:
            -> (n_s, width) float32.

        Raises:
            ConfigError: data without that table (fingerprints are computed from SMILES).
        """
        if name not in self.tables:
            what = {"fingerprint": "fingerprints are computed from a molecule's SMILES"}.get(
                name, f"the table {name!r} is computed for QM9's molecules only"
            )
            raise ConfigError(f"{what}; this {self.kind} data has none")
        return torch.from_numpy(self.tables[name][self.rows[split]].astype(np.float32))

    def table(self, name: str) -> Prepared:
        """The molecules as the table ``name`` of :attr:`tables` (``"fingerprint"``: the bits,
        0/1 and not standardized, since a bit is on a unit scale already and a rare bit
        standardized would be a huge value; ``"counts"``: as standardized), the same rows and
        targets: what a candidate that reads a table fits on, as any table candidate.

        Shapes:
            x_s (n_s, width) float32; y_s (n_s,) as ``y``.

        Raises:
            ConfigError: data without that table (fingerprints are computed from SMILES).
        """
        parts = {split: (self.table_rows(name, split), self.y[r]) for split, r in self.rows.items()}
        width = self.tables[name].shape[1]
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
        store, fingerprints, scaffolds, unreadable = user_graph_store(data.graphs), None, None, ""
    else:
        store, fingerprints, scaffolds, unreadable = molecule_store(data.smiles, data.positions)
    rows = _split(data, val, test, seed, split, scaffolds)
    tables = {} if fingerprints is None else {"fingerprint": fingerprints}
    return prepared_graphs(
        store, rows, data.y, data.task, data.n_outputs, kind=data.kind, tables=tables, scaffolds=scaffolds,
        split=split, seed=seed, unreadable=unreadable,
    )  # fmt: skip


def prepared_graphs(
    store: GraphStore | None,
    rows: dict[str, np.ndarray],
    y: np.ndarray,
    task: str,
    n_outputs: int,
    *,
    kind: str,
    tables: Mapping[str, np.ndarray] | None = None,
    scaffolds: tuple[str, ...] | None = None,
    split: str = "random",
    seed: int = 0,
    unreadable: str = "",
) -> PreparedGraphs:
    """Graphs already split into ``rows``, standardized by the protocol's rule 2: every
    statistic from the training rows only. The node features become x̃_v = (x_v − μ) / σ per
    feature, μ and σ over the nodes of the training graphs (a constant feature only centred);
    regression targets are standardized by the training targets; every table but the
    fingerprint bits is standardized per column over the training rows.

    Args:
        store: every example's graph, node features as read (None: ``unreadable`` says why).
        rows: ``"train"``, ``"val"``, ``"test"`` -> positions in ``store`` (and ``y``).
        y: (N,) every example's target as given: class indices, or values in the target's unit.
        task, n_outputs, kind: ``"classify"`` / ``"regress"``; classes or 1; ``"graph"`` /
            ``"molecule"``.
        tables: per-example tables (:attr:`PreparedGraphs.tables`), as computed.
        scaffolds, split, seed, unreadable: as :class:`PreparedGraphs` holds them.
    """
    node_mean = node_std = None
    if store is not None:
        train_nodes = np.flatnonzero(
            np.repeat(np.isin(np.arange(len(store)), rows["train"]), np.diff(store.node_ptr))
        )
        node_mean, node_std = preparation.feature_stats(store.x, None, 1, train_nodes)  # (F,), (F,)
        store = store.standardized(node_mean, node_std)
    scaled, table_stats = {}, {}
    for name, values in (tables or {}).items():
        if name != "fingerprint":  # bits stay bits (see table())
            mean, std = preparation.feature_stats(values, None, 1, rows["train"])  # (F,), (F,)
            values = ((values - mean) / std).astype(np.float32)
            table_stats[name] = (mean, std)
        scaled[name] = values
    trained, y_mean, y_std = preparation.trained_targets(y, task, rows["train"])
    return PreparedGraphs(
        kind=kind,
        task=task,
        input_shape=(store.x.shape[1],) if store is not None else (0,),
        n_outputs=n_outputs,
        rows=rows,
        targets=preparation.given_targets(y, task, rows),
        y=torch.from_numpy(trained),
        store=store,
        unreadable=unreadable,
        node_mean=node_mean,
        node_std=node_std,
        y_mean=y_mean,
        y_std=y_std,
        tables=scaled,
        table_stats=table_stats,
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
                "the scaffold split leaves no training molecule of class "
                f"{listed((data.classes[c] for c in missing), shown=repr)}; add molecules or split='random'"
            )
    return rows


def molecule_inputs(
    smiles, node_mean: np.ndarray | None, node_std: np.ndarray | None, counts_stats=None
) -> tuple[Inputs, str]:
    """New molecules as the candidates read them, as :func:`prepare_graphs` made the training
    molecules: each SMILES's graph (the notes' atom features, standardized by the training
    graphs' node statistics ``node_mean``, ``node_std``), its Morgan fingerprint, and, when
    ``counts_stats`` (the training rows' mean and std of QM9's counts table) is given, its counts
    of atoms and bonds standardized by them.

    Returns:
        The :class:`~biaslab.comparison.prepared.Inputs` (``graphs`` None when the training
        molecules had no graphs, or a new molecule has an element the atom features miss) and
        why there are no graphs ("" when there are).
    """
    store, fingerprints, _, unreadable = molecule_store(smiles)
    tables = {"fingerprint": torch.from_numpy(fingerprints.astype(np.float32))}
    if store is not None and counts_stats is not None:
        mean, std = counts_stats
        tables["counts"] = torch.from_numpy(((store.counts() - mean) / std).astype(np.float32))
    if store is not None and node_mean is not None:
        store = store.standardized(node_mean, node_std)
    else:
        store, unreadable = None, unreadable or "the training molecules were compared by fingerprints only"
    return Inputs(graphs=store, tables=tables), unreadable


def graph_inputs(graphs, node_mean: np.ndarray, node_std: np.ndarray) -> Inputs:
    """New graphs (torch-geometric ``Data``, as :func:`~biaslab.data.new_rows.read_new_rows`
    read them) as the graph candidates read them, as :func:`prepared_graphs` made the training
    graphs: node features standardized by the training graphs' node statistics (F,)."""
    return Inputs(graphs=user_graph_store(graphs).standardized(node_mean, node_std))
