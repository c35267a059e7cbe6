"""The QM9 model zoo and its new parts: Set2Set and dense batches against torch-geometric, EGNN's
E(3) symmetry, the graph Transformer's relations and permutation equivariance."""

from types import SimpleNamespace

import pytest
import torch
from torch_geometric.nn.aggr import Set2Set as PygSet2Set
from torch_geometric.utils import to_dense_batch

from biaslab.evaluate.symmetry import invariance_error
from biaslab.nn.geometric import EGNNConv, complete_graph_edges
from biaslab.nn.graph_transformer import RELATIONS, GraphTransformerLayer, dense_relations
from biaslab.nn.molecules import (
    AtomSetRegressor,
    EGNNRegressor,
    GraphConvRegressor,
    GraphTransformerRegressor,
    MPNNRegressor,
    TabularRegressor,
    dense_batch,
)
from biaslab.nn.readout import Set2Set


def molecules(seed=0, sizes=(3, 5, 1, 4)):
    """A batch of random 'molecules': chains with a ring closure, random features and coordinates."""
    g = torch.Generator().manual_seed(seed)
    edges, types, start = [], [], 0
    for n in sizes:
        for i in range(n - 1):
            edges += [(start + i, start + i + 1), (start + i + 1, start + i)]
            t = int(torch.randint(0, 4, (1,), generator=g))
            types += [t, t]
        if n >= 4:  # close a ring
            edges += [(start, start + n - 1), (start + n - 1, start)]
            types += [3, 3]
        start += n
    edge_index = torch.tensor(edges, dtype=torch.long).T
    edge_type = torch.tensor(types)
    return SimpleNamespace(
        x=torch.randn(start, 11, generator=g),
        pos=torch.randn(start, 3, generator=g) * 1.5,
        edge_index=edge_index,
        edge_attr=torch.nn.functional.one_hot(edge_type, 4).float(),
        batch=torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes)),
        num_graphs=len(sizes),
        features=torch.randn(len(sizes), 7, generator=g),
    )


def relabel_within_graphs(batch, seed=1):
    """The same molecules with each one's atoms listed in another order."""
    g = torch.Generator().manual_seed(seed)
    counts = torch.bincount(batch.batch).tolist()
    perm, start = [], 0
    for n in counts:
        perm += (start + torch.randperm(n, generator=g)).tolist()
        start += n
    perm = torch.tensor(perm)  # new atom k is old atom perm[k]
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(len(perm))
    return SimpleNamespace(**{
        **vars(batch), "x": batch.x[perm], "pos": batch.pos[perm], "edge_index": inverse[batch.edge_index],
    })  # fmt: skip


def test_set2set_equals_torch_geometric():
    torch.manual_seed(0)
    batch = molecules()
    ours, theirs = Set2Set(11, processing_steps=3), PygSet2Set(11, processing_steps=3)
    with torch.no_grad():
        theirs.lstm.weight_ih_l0.copy_(ours.lstm.weight_ih)
        theirs.lstm.weight_hh_l0.copy_(ours.lstm.weight_hh)
        theirs.lstm.bias_ih_l0.copy_(ours.lstm.bias_ih)
        theirs.lstm.bias_hh_l0.copy_(ours.lstm.bias_hh)
    expected = theirs(batch.x, batch.batch, dim_size=batch.num_graphs)
    torch.testing.assert_close(ours(batch.x, batch.batch, batch.num_graphs), expected, atol=1e-5, rtol=1e-5)


def test_dense_batch_equals_torch_geometric():
    batch = molecules()
    dense, mask = dense_batch(batch.x, batch.batch, batch.num_graphs)
    their_dense, their_mask = to_dense_batch(batch.x, batch.batch)
    assert torch.equal(dense, their_dense) and torch.equal(mask, their_mask)


def test_complete_graph_edges_pair_every_two_atoms_of_a_molecule():
    batch = torch.tensor([0, 0, 0, 1, 2, 2])
    pairs = set(map(tuple, complete_graph_edges(batch).T.tolist()))
    assert pairs == {(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1), (4, 5), (5, 4)}


def test_relations_of_a_chain():
    # 0 -single- 1 -double- 2 -single- 3 -single- 4 : distances 2, 3 and 4 in bonds.
    edge_index = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 4], [1, 0, 2, 1, 3, 2, 4, 3]])
    edge_type = torch.tensor([0, 0, 1, 1, 0, 0, 0, 0])
    rel = dense_relations(edge_index, edge_type, torch.zeros(5, dtype=torch.long), 1, 6)[0]
    name = [[RELATIONS[r] for r in row] for row in rel.tolist()]
    assert name[0][:5] == ["self", "single", "2 bonds", "3 bonds", "≥ 4 bonds or none"]
    assert name[1][2] == name[2][1] == "double"
    assert name[0][5] == name[5][0] == "≥ 4 bonds or none"  # padding


def test_egnn_is_e3_invariant_and_equivariant():
    torch.manual_seed(0)
    batch = molecules()
    layer = EGNNConv(11, edge_dim=4)
    q, _ = torch.linalg.qr(torch.randn(3, 3, generator=torch.Generator().manual_seed(2)))
    q[:, 0] *= torch.sign(torch.det(q)) * -1  # a reflection as well as a rotation
    shift = torch.tensor([3.0, -1.0, 0.5])

    def run(pos):
        return layer(batch.x, pos, batch.edge_index, batch.edge_attr)

    moved = batch.pos @ q.T + shift
    h, pos = run(batch.pos)
    h_moved, pos_moved = run(moved)
    assert torch.allclose(h_moved, h, atol=1e-5)
    assert torch.allclose(pos_moved, pos @ q.T + shift, atol=1e-5)
    model = EGNNRegressor(11, 4, hidden=32, layers=2)
    error = invariance_error(
        lambda p: model(SimpleNamespace(**{**vars(batch), "pos": p})), lambda p: p @ q.T + shift, batch.pos
    )
    assert error < 1e-5
    # Without symmetry built in, an MLP on the raw coordinates is not invariant.
    mlp = torch.nn.Linear(3, 1)
    assert invariance_error(mlp, lambda p: p @ q.T + shift, batch.pos) > 0.1


def test_graph_transformer_layer_is_permutation_equivariant():
    torch.manual_seed(0)
    batch = molecules()
    layer = GraphTransformerLayer(16, heads=4)
    torch.nn.init.normal_(layer.bias.weight)  # a non-zero bias, so the relations matter
    h = torch.randn(1, 5, 16)
    edge_index = torch.tensor([[0, 1, 1, 2, 3, 4], [1, 0, 2, 1, 4, 3]])
    edge_type = torch.tensor([0, 0, 1, 1, 3, 3])
    zero = torch.zeros(5, dtype=torch.long)
    perm = torch.tensor([3, 0, 4, 2, 1])
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(5)

    def run(h, edges):
        return layer(h, dense_relations(edges, edge_type, zero, 1, 5), torch.ones(1, 5, dtype=torch.bool))

    out = run(h, edge_index)
    assert torch.allclose(run(h[:, perm], inverse[edge_index]), out[:, perm], atol=1e-5)
    del batch


def all_models():
    return {
        "tabular": TabularRegressor(7, (32,)),
        "deepsets": AtomSetRegressor(11, 32),
        "gcn": GraphConvRegressor(11, "gcn", 32, 2),
        "gat": GraphConvRegressor(11, "gat", 32, 2),
        "mpnn": MPNNRegressor(11, 4, 32, steps=2),
        "transformer": GraphTransformerRegressor(11, 32, 2),
        "egnn": EGNNRegressor(11, 4, 32, 2),
    }


@pytest.mark.parametrize("name", list(all_models()))
def test_every_model_predicts_one_value_per_molecule_and_trains(name):
    torch.manual_seed(0)
    model, batch = all_models()[name], molecules()
    y = torch.randn(batch.num_graphs)
    out = model(batch)
    assert out.shape == (4,) and torch.isfinite(out).all()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = None
    for _ in range(60):
        loss = torch.nn.functional.mse_loss(model(batch), y)
        first = first if first is not None else loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.5 * first  # every part receives gradients and can fit four molecules


@pytest.mark.parametrize("name", ["deepsets", "gcn", "gat", "mpnn", "transformer", "egnn"])
def test_structured_models_ignore_the_order_of_atoms(name):
    torch.manual_seed(0)
    model, batch = all_models()[name], molecules()
    error = invariance_error(model, relabel_within_graphs, batch)
    assert error < 1e-5


def test_several_targets_give_a_column_each():
    out = MPNNRegressor(11, 4, 16, steps=1, out_dim=3)(molecules())
    assert out.shape == (4, 3)
