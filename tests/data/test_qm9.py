"""The QM9 loader on small CSV files the tests write, and on the head of the real package's file."""

import csv

import numpy as np
import pytest
import torch

pytest.importorskip("rdkit")

from biaslab.data import qm9
from biaslab.data.molecules import ATOM_FEATURES
from biaslab.errors import DataFormatError, DataMissingError

COLUMNS = (
    "XYZ_file,Index,SMILES,InChi,N_atoms,Stoichiometry,Elements,XYZ_Ang,Mulliken_pop,Harmonic_Freq_cmi,"
    "RotA_GHz,RotB_GHz,RotC_GHz,Dipole_debye,Polarizability_bohr3,HOMO_au,LUMO_au,HOMO_LUMO_gap_au,R2_bohr2,"
    "ZPVE_au,InternalEnergy_0K_au,InternalEnergy_298K_au,Enthalphy_298K_au,GibbsFreeEnergy_298K_au,"
    "Heatcapacity_Cv_cal_mol_K"
).split(",")


def chain(n, step=1.45):
    """n atoms on a zigzag whose neighbours are ``step`` Å apart (and second neighbours are not bonded)."""
    return [[step * k * 0.8, 0.0 if k % 2 == 0 else step * 0.6, 0.0] for k in range(n)]


def hexagon(radius=1.39):
    return [[radius * np.cos(a), radius * np.sin(a), 0.0] for a in np.arange(6) * np.pi / 3]


def row(index, smiles, elements, coords=None, gap_au=0.25, dipole=1.0):
    coords = coords if coords is not None else chain(len(elements))
    xyz = "[" + ",".join("[" + ",".join(f"{v:.4f}" if v else "0." for v in c) + "]" for c in coords) + "]"
    values = dict.fromkeys(COLUMNS, "1.0")
    values.update(
        XYZ_file=f"dsgdb9nsd_{index:06d}.xyz",
        Index=str(index),
        SMILES=smiles,
        Elements="[" + ",".join(f"'{e}'" for e in elements) + "]",
        XYZ_Ang=xyz,
        HOMO_LUMO_gap_au=str(gap_au),
        Dipole_debye=str(dipole),
        HOMO_au="-0.3",
        LUMO_au=str(-0.3 + gap_au),
    )
    return values


def write(folder, rows, name="qm9_part1.csv"):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / name, "w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS, quoting=csv.QUOTE_NONNUMERIC)
        writer.writeheader()
        writer.writerows(rows)
    return folder


FAR = [5.0, 5.0, 5.0]  # where the tests put hydrogens (they are not nodes)
ROWS = [
    row(1, "C", ["C", "H", "H", "H", "H"], gap_au=0.5048, dipole=0.0),
    row(2, "C1CC", ["C", "C", "C", "H"]),  # unparsable: an unclosed ring
    # Methanol with a hydrogen listed between its heavy atoms.
    row(3, "CO", ["C", "H", "O", "H", "H", "H"], [[0, 0, 0], FAR, [1.43, 0, 0], FAR, FAR, FAR]),
    # Methanol with its heavy atoms in the other order: matched to the nodes.
    row(4, "CO", ["O", "C", "H", "H", "H", "H"], [[1.43, 0, 0], [0, 0, 0], FAR, FAR, FAR, FAR]),
    row(5, "C1=CC=CC=C1", ["C"] * 6 + ["H"] * 6, hexagon() + [FAR] * 6, gap_au=0.2503),
    # Ethanol whose oxygen sits 3 Å from every carbon: its bonds are not the SMILES' bonds.
    row(6, "CCO", ["C", "C", "O"], [[0, 0, 0], [1.5, 0, 0], [0.75, 3.0, 0]]),
]


@pytest.fixture
def loaded(tmp_path):
    source = write(tmp_path / "src", ROWS)
    return qm9.load_qm9(tmp_path / "cache", source, progress=False), tmp_path


def test_loads_graphs_positions_and_targets(loaded):
    data, _ = loaded
    assert len(data) == 4 and data.index.tolist() == [1, 3, 4, 5]
    assert data.x.shape == (1 + 2 + 2 + 6, len(ATOM_FEATURES)) and data.atom_ptr.tolist() == [0, 1, 3, 5, 11]
    assert data.edge_ptr.tolist() == [0, 0, 2, 4, 16]  # methane none, methanol one bond, benzene six
    # Methanol's heavy atoms are the 1st and 3rd atoms of its XYZ block (hydrogens skipped) ...
    np.testing.assert_allclose(data.pos[1:3], [[0, 0, 0], [1.43, 0, 0]], atol=1e-6)
    # ... and, listed O first, they are put back in the SMILES' order (C, O).
    np.testing.assert_allclose(data.pos[3:5], [[0, 0, 0], [1.43, 0, 0]], atol=1e-6)
    np.testing.assert_allclose(data.pos[5:], hexagon(), atol=1e-4)
    assert data.smiles.tolist() == ["C", "CO", "CO", "C1=CC=CC=C1"]
    assert data.scaffolds[data.scaffold].tolist() == ["", "", "", "c1ccccc1"]
    assert data.fingerprints().shape == (4, qm9.FINGERPRINT_BITS)


def test_unusable_molecules_are_counted_with_their_reason(loaded):
    data, _ = loaded
    assert data.skipped == {
        "unparsable SMILES": [2],
        "the geometry's bonds differ from the SMILES'": [6],
    }


def test_units_hartree_to_ev(loaded):
    data, _ = loaded
    assert qm9.HARTREE_TO_EV == 27.211386246
    np.testing.assert_allclose(data.target("gap"), np.array([0.5048, 0.25, 0.25, 0.2503]) * 27.211386246)
    np.testing.assert_allclose(data.target("gap"), data.target("lumo") - data.target("homo"), atol=1e-9)
    np.testing.assert_allclose(data.target("dipole"), [0.0, 1.0, 1.0, 1.0])  # debye, unchanged
    with pytest.raises(KeyError, match="unknown QM9 target 'gapp'"):
        data.target("gapp")


def test_cache_is_reloaded_and_rebuilt_for_another_source(loaded):
    data, tmp_path = loaded
    cache = tmp_path / "cache" / qm9.CACHE_NAME
    assert cache.is_file()
    again = qm9.load_qm9(tmp_path / "cache", tmp_path / "src")
    np.testing.assert_array_equal(again.x, data.x)
    np.testing.assert_array_equal(again.edge_index, data.edge_index)
    other = write(tmp_path / "other", ROWS[:1])
    assert len(qm9.load_qm9(tmp_path / "cache", other)) == 1


def test_corrupt_cache_and_bad_csv_say_one_line(tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / qm9.CACHE_NAME).write_bytes(b"not a zip")
    with pytest.raises(DataFormatError, match="corrupt"):
        qm9.load_qm9(tmp_path / "cache")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "qm9_part1.csv").write_text("a,b\n1,2\n")
    with pytest.raises(DataFormatError, match="not a qm9pack CSV"):
        qm9.load_qm9(tmp_path / "cache2", bad)
    with pytest.raises(DataMissingError, match="no QM9 CSV"):
        qm9.load_qm9(tmp_path / "cache3", tmp_path / "empty")
    broken = dict(ROWS[0], XYZ_Ang="[[1.0,2.0]]")
    with pytest.raises(DataFormatError, match="1 coordinates|5 elements but 2 coordinates"):
        qm9.load_qm9(tmp_path / "cache4", write(tmp_path / "broken", [broken]))


@pytest.fixture(scope="module")
def package_head(tmp_path_factory):
    """The first 300 molecules of the real qm9pack file (methane .. benzene, index 214)."""
    try:
        folder = qm9._package_data_dir()
    except DataMissingError:
        pytest.skip("qm9pack is not installed")
    target = tmp_path_factory.mktemp("qm9head")
    with open(folder / "qm9_part1.csv") as source, open(target / "qm9_part1.csv", "w") as head:
        for _ in range(301):
            head.write(source.readline())
    return qm9.load_qm9(target / "cache", target, progress=False)


@pytest.mark.parametrize(
    ("index", "smiles", "gap_ev", "dipole"),
    [
        (1, "C", 13.736308, 0.0),
        (2, "N", 9.249150, 1.6256),
        (3, "O", 9.836916, 1.8511),
        (214, "C1=CC=CC=C1", 6.811010, 0.0),
    ],
)
def test_known_molecules_of_the_real_file(package_head, index, smiles, gap_ev, dipole):
    data = package_head
    row = data.index.tolist().index(index)
    assert data.smiles[row] == smiles
    assert data.target("gap")[row] == pytest.approx(gap_ev, abs=1e-6)
    assert data.target("dipole")[row] == pytest.approx(dipole, abs=1e-4)


def test_real_file_positions_are_molecular(package_head):
    """Bonded heavy atoms sit 1.1-1.6 Å apart in the DFT geometry: the coordinates follow the nodes."""
    data = package_head
    lengths = []
    for m in range(len(data)):
        a, e = slice(data.atom_ptr[m], data.atom_ptr[m + 1]), slice(data.edge_ptr[m], data.edge_ptr[m + 1])
        pos, edges = data.pos[a], data.edge_index[:, e].astype(int)
        lengths += np.linalg.norm(pos[edges[0]] - pos[edges[1]], axis=1).tolist()
    assert 1.1 < min(lengths) and max(lengths) < 1.7  # diacetylene (23) lists its atoms out of order
    assert len(data) + sum(map(len, data.skipped.values())) == 300


def test_a_reload_reads_the_cache_only(package_head, tmp_path_factory, monkeypatch):
    """Neither a CSV nor RDKit is touched once the cache exists (its speed is measured in
    benchmarks/qm9.py, not asserted here: a wall-clock time depends on the machine's load)."""

    def never(*args, **kwargs):
        raise AssertionError("a reload featurised the CSVs again")

    monkeypatch.setattr(qm9, "read_qm9_csv", never)
    monkeypatch.setattr(qm9, "_featurise", never)
    data = qm9.load_qm9(tmp_path_factory.getbasetemp() / "qm9head0" / "cache")
    assert len(data) > 0


def test_batch_matches_torch_geometric_batch(loaded):
    from torch_geometric.data import Batch, Data

    data, _ = loaded
    rows = np.array([3, 0, 1])  # benzene, methane, methanol: order kept, offsets shifted
    ours = data.batch(rows, y=data.target("gap")[rows])
    graphs = []
    for m in rows:
        a, e = slice(data.atom_ptr[m], data.atom_ptr[m + 1]), slice(data.edge_ptr[m], data.edge_ptr[m + 1])
        graphs.append(
            Data(
                x=torch.tensor(data.x[a], dtype=torch.float32),
                pos=torch.tensor(data.pos[a]),
                edge_index=torch.tensor(data.edge_index[:, e], dtype=torch.long),
                edge_attr=torch.nn.functional.one_hot(
                    torch.tensor(data.edge_type[e], dtype=torch.long), 4
                ).float(),
            )
        )
    theirs = Batch.from_data_list(graphs)
    for name in ("x", "pos", "edge_index", "edge_attr", "batch"):
        assert torch.equal(getattr(ours, name), getattr(theirs, name)), name
    assert ours.num_graphs == 3 and ours.y.shape == (3,)
    assert ours.to("cpu").x is not None


def test_the_target_names_type_lists_every_target():
    import typing

    from biaslab.data.qm9 import TARGETS, TargetName

    assert typing.get_args(TargetName) == tuple(TARGETS)


def test_packed_bits_read_by_rows_equal_the_unpacked_table():
    bits = np.random.default_rng(0).integers(0, 2, size=(7, 24), dtype=np.uint8)
    table = qm9.PackedBits(np.packbits(bits, axis=1))
    assert table.shape == bits.shape and len(table) == 7
    for rows in (np.array([5, 0, 5, 2]), slice(1, 4), 3, np.zeros(0, dtype=np.int64)):
        np.testing.assert_array_equal(table[rows], bits[rows])
