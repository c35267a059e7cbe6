"""Molecules as graphs: RDKit reads a SMILES string, we write the notes' node and edge features.

The graph of the notes' appendix: heavy atoms are the nodes, hydrogens are folded into a count on
their atom, and every bond is an edge in both directions.

    node features (11):  one-hot element H, C, N, O, F | atomic number | one-hot sp, sp², sp³ |
                         aromatic | number of attached hydrogens
    edge features (4):   one-hot single, double, triple, aromatic

RDKit perceives aromaticity while it reads a SMILES, so a Kekulé benzene ``C1=CC=CC=C1`` (QM9's
SMILES are Kekulé) has six aromatic bonds. Besides the graph this module gives the two tabular
views of a molecule the tabular models read: a Morgan (circular) fingerprint and a bag of atoms
and bonds, and the Bemis–Murcko scaffold that the scaffold split groups molecules by.

The calls: :func:`parse_smiles`, :func:`molecule_graph` -> ``MoleculeGraph`` (``ATOM_FEATURES``,
``BOND_TYPES``), :func:`morgan_fingerprint`, :func:`murcko_scaffold`,
:func:`bag_of_atoms_and_bonds` (with :func:`bag_feature_names`); for coordinates,
:func:`heavy_atom_geometry` (the heavy atoms of the ``GEOMETRY_COLUMNS`` texts, as QM9's CSV holds
them), :func:`geometry_in_node_order` (a geometry's coordinates matched to the graph's nodes: kept
when the order fits, otherwise by an element-preserving isomorphism of the covalent-radius
distance graph) and :func:`coordinates_in_smiles_order` (both, per molecule: what ``compare``
reads for EGNN).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from biaslab.errors import DataFormatError, DataMissingError

__all__ = [
    "ATOM_FEATURES",
    "BOND_TYPES",
    "ELEMENTS",
    "GEOMETRY_COLUMNS",
    "MoleculeGraph",
    "bag_feature_names",
    "bag_of_atoms_and_bonds",
    "geometry_in_node_order",
    "heavy_atom_geometry",
    "molecule_graph",
    "morgan_fingerprint",
    "murcko_scaffold",
    "parse_smiles",
]

ELEMENTS = ("H", "C", "N", "O", "F")
ATOMIC_NUMBER = {"H": 1, "C": 6, "N": 7, "O": 8, "F": 9}
HYBRIDISATIONS = ("SP", "SP2", "SP3")
ATOM_FEATURES = (*ELEMENTS, "atomic_number", "sp", "sp2", "sp3", "aromatic", "num_hs")
BOND_TYPES = ("single", "double", "triple", "aromatic")
_RDKIT_HINT = "QM9 needs RDKit: pip install rdkit"
COVALENT_RADIUS = {"H": 0.31, "C": 0.76, "N": 0.71, "O": 0.66, "F": 0.57}  # Å (Cordero et al. 2008)
BOND_TOLERANCE = 1.15  # atoms closer than 1.15 × the sum of their radii are bonded (C–C: 1.75 Å)


def _chem():
    try:
        from rdkit import Chem, RDLogger
    except ImportError:  # pragma: no cover - rdkit is a dependency
        raise DataMissingError(_RDKIT_HINT) from None
    RDLogger.DisableLog("rdApp.*")  # unparsable SMILES are counted by the caller, not printed
    return Chem


@dataclass(frozen=True, eq=False)
class MoleculeGraph:
    """One molecule's graph as arrays (the collated QM9 store concatenates these).

    Shapes:
        elements: (n,) str; x: (n, 11) uint8 node features (``ATOM_FEATURES``);
        edge_index: (2, 2·bonds) int64, each bond as i→j and j→i; edge_type: (2·bonds,) uint8,
        an index into ``BOND_TYPES``.
    """

    elements: tuple[str, ...]
    x: np.ndarray
    edge_index: np.ndarray
    edge_type: np.ndarray


def parse_smiles(smiles: str):
    """The RDKit molecule of ``smiles`` (hydrogens implicit, aromaticity perceived), or None."""
    return _chem().MolFromSmiles(smiles)


def molecule_graph(mol) -> MoleculeGraph:
    """The notes' graph of an RDKit molecule: heavy atoms, 11 features each, bonds both ways.

    Raises:
        ValueError: an element other than H, C, N, O, F, or a bond that is not single, double,
            triple or aromatic (QM9 has none).
    """
    Chem = _chem()
    bond_index = {
        Chem.BondType.SINGLE: 0,
        Chem.BondType.DOUBLE: 1,
        Chem.BondType.TRIPLE: 2,
        Chem.BondType.AROMATIC: 3,
    }
    elements, rows = [], []
    for atom in mol.GetAtoms():
        symbol = atom.GetSymbol()
        if symbol not in ATOMIC_NUMBER:
            raise ValueError(f"element {symbol} is not one of {', '.join(ELEMENTS)}")
        hybrid = str(atom.GetHybridization())
        rows.append(
            [
                *(symbol == e for e in ELEMENTS),
                ATOMIC_NUMBER[symbol],
                *(hybrid == h for h in HYBRIDISATIONS),
                atom.GetIsAromatic(),
                atom.GetTotalNumHs(),
            ]
        )
        elements.append(symbol)
    pairs, types = [], []
    for bond in mol.GetBonds():
        kind = bond_index.get(bond.GetBondType())
        if kind is None:
            raise ValueError(f"bond type {bond.GetBondType()} is not one of {', '.join(BOND_TYPES)}")
        i, j = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        pairs += [(i, j), (j, i)]  # an undirected bond is two directed edges
        types += [kind, kind]
    edge_index = np.array(pairs, dtype=np.int64).reshape(-1, 2).T  # (2, E)
    return MoleculeGraph(
        tuple(elements),
        np.array(rows, dtype=np.uint8).reshape(-1, len(ATOM_FEATURES)),
        edge_index,
        np.array(types, dtype=np.uint8),
    )


def _bonded_in_geometry(elements, positions: np.ndarray) -> np.ndarray:
    """(n, n) bool: pairs closer than ``BOND_TOLERANCE`` × the sum of their covalent radii."""
    radii = np.array([COVALENT_RADIUS[e] for e in elements])
    distance = np.linalg.norm(positions[:, None] - positions[None], axis=-1)  # (n, n)
    bonded = distance < BOND_TOLERANCE * (radii[:, None] + radii[None])
    np.fill_diagonal(bonded, False)
    return bonded


GEOMETRY_COLUMNS = ("Elements", "XYZ_Ang")  # qm9pack's layout: every atom's element and coordinates (Å)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_ELEMENT = re.compile(r"'([A-Za-z]+)'")


def heavy_atom_geometry(elements: str, xyz: str, where: str) -> tuple[tuple[str, ...], np.ndarray]:
    """The heavy atoms' elements and coordinates from the texts of :data:`GEOMETRY_COLUMNS`:
    ``"['C','H','H','H','H']"`` and ``"[[x, y, z], ...]"`` in ångström, one triple per atom
    (hydrogens included, in any order; they are left out here).

    Shapes:
        -> (n,) elements, (n, 3) float64 coordinates.

    Raises:
        DataFormatError: no element, or not three coordinates per element (``where`` names the row).
    """
    symbols = _ELEMENT.findall(elements)
    values = np.array([float(v) for v in _NUMBER.findall(xyz)], dtype=np.float64)
    if not symbols or values.size != 3 * len(symbols):
        raise DataFormatError(f"{where}: {len(symbols)} elements but {values.size} coordinates")
    heavy = [k for k, e in enumerate(symbols) if e != "H"]  # hydrogens are interleaved in some rows
    return tuple(symbols[k] for k in heavy), values.reshape(-1, 3)[heavy]


def geometry_in_node_order(
    graph: MoleculeGraph, elements: tuple[str, ...], positions: np.ndarray
) -> np.ndarray | None:
    """The coordinates of ``graph``'s nodes, taken from a geometry that lists the same atoms.

    A geometry file need not list atoms in the SMILES' order (QM9's diacetylene ``C#CC#C`` lists
    its two inner carbons first). When the elements match in order and every bond of the graph
    is a bond of the geometry, the order is kept; otherwise the graph is matched onto the
    geometry's distance graph (bonded = closer than 1.15 × the covalent radii) by an
    element-preserving graph isomorphism.

    Args:
        graph: the molecule's graph (heavy atoms).
        elements: the geometry's heavy atoms' elements, in its order.
        positions: their coordinates, (n, 3).

    Returns:
        (n, 3) coordinates, row i for node i; None when no isomorphism exists (the geometry's
        bonds differ from the SMILES', e.g. after a rearrangement during the DFT relaxation).
    """
    if len(elements) != len(graph.elements):
        return None
    bonded = _bonded_in_geometry(elements, positions)
    i, j = graph.edge_index
    if tuple(elements) == graph.elements and bonded[i, j].all() and bonded.sum() == len(i):
        return positions
    import networkx as nx
    from networkx.algorithms.isomorphism import GraphMatcher

    def as_graph(symbols, pairs):
        g = nx.Graph()
        g.add_nodes_from((k, {"element": e}) for k, e in enumerate(symbols))
        g.add_edges_from(pairs)
        return g

    ours = as_graph(graph.elements, zip(i.tolist(), j.tolist()))
    theirs = as_graph(elements, zip(*np.nonzero(np.triu(bonded))))
    matcher = GraphMatcher(ours, theirs, node_match=lambda a, b: a["element"] == b["element"])
    mapping = next(matcher.isomorphisms_iter(), None)  # our node -> their atom
    if mapping is None:
        return None
    return positions[[mapping[k] for k in range(len(elements))]]


def morgan_fingerprint(mol, radius: int = 2, n_bits: int = 2048) -> np.ndarray:
    """The Morgan (ECFP-like) bit vector: hashed circular neighbourhoods up to ``radius`` bonds.

    Shapes:
        -> (n_bits,) uint8 of 0/1.
    """
    from rdkit.Chem import rdFingerprintGenerator

    generator = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    return generator.GetFingerprintAsNumPy(mol).astype(np.uint8)


def murcko_scaffold(mol) -> str:
    """The Bemis–Murcko scaffold (ring systems and the linkers between them) as SMILES; "" if acyclic."""
    from rdkit.Chem.Scaffolds import MurckoScaffold

    return MurckoScaffold.MurckoScaffoldSmiles(mol=mol, includeChirality=False)


def bag_feature_names() -> list[str]:
    """Names of :func:`bag_of_atoms_and_bonds`' columns."""
    heavy = ELEMENTS[1:]
    pairs = [f"{a}{b}" for k, a in enumerate(heavy) for b in heavy[k:]]
    return [
        *(f"n_{e}" for e in heavy),
        "n_H",
        *(f"n_{h.lower()}" for h in HYBRIDISATIONS),
        "n_aromatic_atoms",
        *(f"{pair}_{bond}" for bond in BOND_TYPES for pair in pairs),
    ]


def bag_of_atoms_and_bonds(
    x: np.ndarray,
    edge_index: np.ndarray,
    edge_type: np.ndarray,
    atom_molecule: np.ndarray | None = None,
    n_molecules: int = 1,
) -> np.ndarray:
    """Counts that ignore how a molecule is wired: atoms by element, hydrogens, hybridisations,
    aromatic atoms, and bonds by (element pair, bond type), each undirected bond counted once.

    Args:
        x: node features (``ATOM_FEATURES``) of one molecule or of many concatenated.
        edge_index: directed edges as indices into the rows of ``x``.
        edge_type: each edge's index into ``BOND_TYPES``.
        atom_molecule: the molecule of each atom (default: all atoms are one molecule).
        n_molecules: the number of molecules (default 1).

    Shapes:
        x (A, 11), edge_index (2, E), edge_type (E,), atom_molecule (A,)
        -> (n_molecules, len(bag_feature_names())) float32.
    """
    if atom_molecule is None:
        atom_molecule = np.zeros(len(x), dtype=np.int64)
    # Counts as sums of 0/1 (and hydrogen-count) columns grouped by molecule: np.bincount adds
    # them exactly, 10-50x faster than np.add.at on QM9's 1.15 million atoms.
    atoms = np.concatenate([x[:, 1:5], x[:, 10:11], x[:, 6:9], x[:, 9:10]], axis=1)  # (A, 9)
    atom_counts = np.stack(
        [np.bincount(atom_molecule, weights=column, minlength=n_molecules) for column in atoms.T], axis=1
    )  # (n_molecules, 9)
    # Bonds: column = bond type × unordered pair of heavy elements (C, N, O, F: 10 pairs).
    element = x[:, 1:5].argmax(1)  # (A,) index into C, N, O, F
    once = edge_index[0] < edge_index[1]  # each bond appears as i→j and j→i
    a, b = element[edge_index[0, once]], element[edge_index[1, once]]
    low, high = np.minimum(a, b), np.maximum(a, b)
    pair = low * 4 - low * (low - 1) // 2 + (high - low)  # rank of (low, high) among 10 pairs
    columns = len(BOND_TYPES) * 10
    column = edge_type[once].astype(np.int64) * 10 + pair
    cell = atom_molecule[edge_index[0, once]] * columns + column  # (molecule, column) flattened
    bond_counts = np.bincount(cell, minlength=n_molecules * columns).reshape(n_molecules, columns)
    return np.concatenate([atom_counts, bond_counts], axis=1).astype(np.float32)


def coordinates_in_smiles_order(smiles, geometries, where) -> list[np.ndarray | None]:
    """Each molecule's heavy-atom coordinates, a row per atom of its SMILES graph.

    Args:
        smiles: N SMILES RDKit parses.
        geometries: N pairs of texts, :data:`GEOMETRY_COLUMNS` (elements, coordinates in Å).
        where: N names of the rows, for messages.

    Returns:
        N arrays (n_i, 3) float32, or None where the geometry's bonds are not the SMILES' graph
        (:func:`geometry_in_node_order`).

    Raises:
        DataFormatError: an element outside H, C, N, O, F, or a malformed geometry (one line
            naming the row).
    """
    found = []
    for text, (elements, xyz), here in zip(smiles, geometries, where, strict=True):
        try:
            graph = molecule_graph(parse_smiles(text))
        except ValueError as exc:
            raise DataFormatError(f"{here}: {exc}; coordinates are read for H, C, N, O, F") from None
        ordered = geometry_in_node_order(graph, *heavy_atom_geometry(elements, xyz, here))
        found.append(None if ordered is None else ordered.astype(np.float32))
    return found
