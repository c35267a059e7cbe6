"""Molecules with 3-D coordinates: a SMILES CSV with qm9pack's columns Elements and XYZ_Ang gives
each molecule's heavy-atom coordinates in its SMILES' atom order (for EGNN)."""

import csv

import numpy as np
import pytest

from biaslab.data.user_data import load_user_data
from biaslab.errors import DataFormatError

pytest.importorskip("rdkit")


def geometry(smiles: str, seed: int = 0) -> tuple[str, str, np.ndarray]:
    """An RDKit conformer of ``smiles`` with its hydrogens, as qm9pack writes it: the elements
    and the coordinates (Å) as texts; and the heavy atoms' coordinates in the SMILES' order."""
    from rdkit import Chem
    from rdkit.Chem import AllChem

    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    assert AllChem.EmbedMolecule(mol, randomSeed=seed) == 0
    xyz = mol.GetConformer().GetPositions()  # (atoms, 3); the heavy atoms keep their SMILES indices
    elements = [a.GetSymbol() for a in mol.GetAtoms()]
    heavy = [k for k, e in enumerate(elements) if e != "H"]
    return str(elements), str(xyz.round(6).tolist()), xyz[heavy].round(6)


MOLECULES = ("CCO", "CCN", "CC(=O)O", "c1ccccc1", "CC#N", "OCCO", "C1CCCCC1", "CCOC", "CN(C)C", "c1ccncc1")


def write(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["SMILES", "Elements", "XYZ_Ang", "y"])
        writer.writerows(rows)
    return path


def test_a_smiles_csv_with_a_geometry_reads_coordinates_per_heavy_atom(tmp_path):
    rows, expected = [], []
    for k, smiles in enumerate(MOLECULES * 2):
        elements, xyz, heavy = geometry(smiles, seed=k)
        rows.append([smiles, elements, xyz, k % 2])
        expected.append(heavy)
    data = load_user_data(write(tmp_path / "mols.csv", rows), target="y")
    assert data.kind == "molecule" and len(data.positions) == len(MOLECULES) * 2
    for got, want, smiles in zip(data.positions, expected, MOLECULES * 2):
        np.testing.assert_allclose(got, want, atol=1e-5, err_msg=smiles)
    assert any("coordinates: columns Elements and XYZ_Ang" in n for n in data.notes)


def test_a_geometry_whose_bonds_are_not_the_smiles_is_dropped_and_counted(tmp_path):
    rows = [[s, *geometry(s, seed=k)[:2], k % 2] for k, s in enumerate(MOLECULES * 3)]
    rows[0][1:3] = geometry("COC")[:2]  # CCO's row, dimethyl ether's geometry: C, C, O bonded otherwise
    data = load_user_data(write(tmp_path / "mols.csv", rows), target="y")
    assert len(data) == len(rows) - 1 and len(data.positions) == len(rows) - 1
    assert any(n.startswith("dropped 1 molecules whose geometry") for n in data.notes)


def test_a_malformed_geometry_is_one_line(tmp_path):
    rows = [[s, *geometry(s, seed=k)[:2], k % 2] for k, s in enumerate(MOLECULES * 2)]
    rows[3][2] = "[[0.0, 1.0]]"  # two numbers for a whole molecule
    with pytest.raises(DataFormatError, match="elements but 2 coordinates") as caught:
        load_user_data(write(tmp_path / "mols.csv", rows), target="y")
    assert "\n" not in str(caught.value)
