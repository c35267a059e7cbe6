"""The notes' molecular graph, checked on known molecules and against torch-geometric's from_smiles."""

import numpy as np
import pytest

pytest.importorskip("rdkit")

from biaslab.data.molecules import (
    ATOM_FEATURES,
    BOND_TYPES,
    bag_feature_names,
    bag_of_atoms_and_bonds,
    geometry_in_node_order,
    molecule_graph,
    morgan_fingerprint,
    murcko_scaffold,
    parse_smiles,
)

SMILES = [
    "C",
    "N",
    "O",
    "CCO",
    "CC#N",
    "C=O",
    "CF",
    "C1=CC=CC=C1",
    "OC(=O)C#N",
    "CC1CC1",
    "c1ccoc1",
    "CN(C)C=O",
]
COLUMN = {name: k for k, name in enumerate(ATOM_FEATURES)}


def features(smiles, name):
    return molecule_graph(parse_smiles(smiles)).x[:, COLUMN[name]].tolist()


def test_feature_layout_is_the_notes_eleven():
    assert ATOM_FEATURES == (
        "H",
        "C",
        "N",
        "O",
        "F",
        "atomic_number",
        "sp",
        "sp2",
        "sp3",
        "aromatic",
        "num_hs",
    )
    assert BOND_TYPES == ("single", "double", "triple", "aromatic")


def test_known_molecules_have_the_expected_features():
    # Ethanol: CH3 (sp3, 3 H), CH2 (sp3, 2 H), OH (sp3, 1 H); nothing aromatic.
    assert features("CCO", "atomic_number") == [6, 6, 8]
    assert features("CCO", "num_hs") == [3, 2, 1]
    assert features("CCO", "sp3") == [1, 1, 1]
    # Acetonitrile: the nitrile carbon and nitrogen are sp.
    assert features("CC#N", "sp") == [0, 1, 1]
    assert features("CC#N", "N") == [0, 0, 1]
    # Kekulé benzene (QM9's form): six aromatic sp2 carbons with one H each, six aromatic bonds.
    graph = molecule_graph(parse_smiles("C1=CC=CC=C1"))
    assert graph.x[:, COLUMN["aromatic"]].tolist() == [1] * 6
    assert graph.x[:, COLUMN["sp2"]].tolist() == [1] * 6
    assert graph.x[:, COLUMN["num_hs"]].tolist() == [1] * 6
    assert graph.edge_type.tolist() == [BOND_TYPES.index("aromatic")] * 12
    # Methane is a single node with four hydrogens and no edges.
    methane = molecule_graph(parse_smiles("C"))
    assert methane.x.tolist() == [[0, 1, 0, 0, 0, 6, 0, 0, 1, 0, 4]]
    assert methane.edge_index.shape == (2, 0)
    # Fluoromethane: one-hot F.
    assert features("CF", "F") == [0, 1]


@pytest.mark.parametrize("smiles", SMILES)
def test_every_bond_is_an_edge_in_both_directions(smiles):
    mol = parse_smiles(smiles)
    graph = molecule_graph(mol)
    edges = {(i, j): t for (i, j), t in zip(graph.edge_index.T.tolist(), graph.edge_type.tolist())}
    assert len(edges) == graph.edge_index.shape[1] == 2 * mol.GetNumBonds()
    assert all(edges[j, i] == t for (i, j), t in edges.items())
    one_hot = graph.x[:, :5]
    assert (one_hot.sum(1) == 1).all() and (graph.x[:, 6:9].sum(1) <= 1).all()


@pytest.mark.parametrize("smiles", SMILES)
def test_matches_torch_geometric_from_smiles(smiles):
    from torch_geometric.utils import from_smiles

    ours, theirs = molecule_graph(parse_smiles(smiles)), from_smiles(smiles)
    x = theirs.x.numpy()
    # PyG's columns: 0 atomic number, 4 number of H, 6 hybridisation (2 sp, 3 sp2, 4 sp3), 7 aromatic.
    assert ours.x[:, COLUMN["atomic_number"]].tolist() == x[:, 0].tolist()
    assert ours.x[:, COLUMN["num_hs"]].tolist() == x[:, 4].tolist()
    assert ours.x[:, COLUMN["aromatic"]].tolist() == x[:, 7].tolist()
    hybrid = {2: "sp", 3: "sp2", 4: "sp3"}
    assert [ATOM_FEATURES[6 + r.argmax()] for r in ours.x[:, 6:9]] == [hybrid[h] for h in x[:, 6]]
    # PyG's bond types: 1 single, 2 double, 3 triple, 12 aromatic.
    pyg_type = {1: 0, 2: 1, 3: 2, 12: 3}
    theirs_edges = {
        (i, j): pyg_type[t]
        for (i, j), t in zip(theirs.edge_index.T.tolist(), theirs.edge_attr[:, 0].tolist())
    }
    ours_edges = dict(zip(map(tuple, ours.edge_index.T.tolist()), ours.edge_type.tolist()))
    assert ours_edges == theirs_edges


def test_bag_of_atoms_and_bonds_counts_by_hand():
    graph = molecule_graph(parse_smiles("OC(=O)C#N"))  # cyanoformic acid: HO-C(=O)-C#N
    bag = dict(
        zip(bag_feature_names(), bag_of_atoms_and_bonds(graph.x, graph.edge_index, graph.edge_type)[0])
    )
    expected = {"n_C": 2, "n_N": 1, "n_O": 2, "n_H": 1, "n_sp": 2, "n_sp2": 3, "CO_single": 1, "CO_double": 1,
                "CC_single": 1, "CN_triple": 1}  # fmt: skip
    assert {k: v for k, v in bag.items() if v} == expected


def test_bag_of_many_molecules_equals_one_at_a_time():
    graphs = [molecule_graph(parse_smiles(s)) for s in SMILES]
    offsets = np.cumsum([0, *(len(g.x) for g in graphs)])
    x = np.concatenate([g.x for g in graphs])
    edge_index = np.concatenate([g.edge_index + o for g, o in zip(graphs, offsets)], axis=1)
    edge_type = np.concatenate([g.edge_type for g in graphs])
    molecule = np.repeat(np.arange(len(graphs)), [len(g.x) for g in graphs])
    together = bag_of_atoms_and_bonds(x, edge_index, edge_type, molecule, len(graphs))
    alone = np.concatenate([bag_of_atoms_and_bonds(g.x, g.edge_index, g.edge_type) for g in graphs])
    np.testing.assert_array_equal(together, alone)
    assert together.shape == (len(SMILES), len(bag_feature_names()))


def test_bag_ignores_the_order_of_atoms():
    a = molecule_graph(parse_smiles("OCC"))
    b = molecule_graph(parse_smiles("CCO"))
    np.testing.assert_array_equal(
        bag_of_atoms_and_bonds(a.x, a.edge_index, a.edge_type),
        bag_of_atoms_and_bonds(b.x, b.edge_index, b.edge_type),
    )


def test_fingerprint_and_scaffold():
    fp = morgan_fingerprint(parse_smiles("CCO"), n_bits=1024)
    assert fp.shape == (1024,) and fp.dtype == np.uint8 and set(np.unique(fp)) <= {0, 1} and fp.sum() > 0
    np.testing.assert_array_equal(
        morgan_fingerprint(parse_smiles("OCC")), morgan_fingerprint(parse_smiles("CCO"))
    )
    assert (morgan_fingerprint(parse_smiles("CCN")) != morgan_fingerprint(parse_smiles("CCO"))).any()
    assert murcko_scaffold(parse_smiles("Cc1ccccc1")) == "c1ccccc1"
    assert murcko_scaffold(parse_smiles("CC1CC1")) == "C1CC1"
    assert murcko_scaffold(parse_smiles("CCO")) == ""


def test_unparsable_smiles_gives_none():
    assert parse_smiles("C1CC") is None  # an unclosed ring
    assert parse_smiles("not a molecule") is None


def diacetylene():
    """HC≡C-C≡CH along x: the SMILES C#CC#C lists an end carbon first, QM9's geometry the inner ones."""
    graph = molecule_graph(parse_smiles("C#CC#C"))
    xyz_order = np.array([[0.68, 0, 0], [-0.68, 0, 0], [-1.89, 0, 0], [1.89, 0, 0]])  # inner, inner, end, end
    return graph, xyz_order


def test_geometry_in_the_smiles_order_is_kept():
    graph = molecule_graph(parse_smiles("CCO"))
    pos = np.array([[0.0, 0, 0], [1.52, 0, 0], [2.1, 1.2, 0]])
    assert geometry_in_node_order(graph, ("C", "C", "O"), pos) is pos


def test_geometry_in_another_order_is_matched_to_the_nodes():
    graph, xyz = diacetylene()
    pos = geometry_in_node_order(graph, ("C",) * 4, xyz)
    i, j = graph.edge_index
    lengths = np.linalg.norm(pos[i] - pos[j], axis=1)
    assert lengths.max() < 1.4  # every bond of the SMILES is a short distance now
    np.testing.assert_allclose(sorted(pos[:, 0]), sorted(xyz[:, 0]))  # the same atoms, reordered


def test_geometry_with_other_bonds_is_refused():
    graph = molecule_graph(parse_smiles("CCO"))
    far_oxygen = np.array([[0.0, 0, 0], [1.52, 0, 0], [0.76, 3.0, 0]])
    assert geometry_in_node_order(graph, ("C", "C", "O"), far_oxygen) is None
    assert geometry_in_node_order(graph, ("C", "C"), far_oxygen[:2]) is None  # another atom count
