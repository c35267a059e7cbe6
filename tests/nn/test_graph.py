"""Message passing: each layer against torch_geometric with the same weights, against dense
hand computations, under node relabelling, and on bad inputs."""

import copy

import pytest
import torch
import torch_geometric.nn as pyg
from torch_geometric.data import Batch, Data

from biaslab.nn._scatter import scatter, segment_softmax
from biaslab.nn.blocks import GNN
from biaslab.nn.graph import (
    GATConv,
    GCNConv,
    MessagePassing,
    MPNNConv,
    SAGEConv,
    global_add_pool,
    global_max_pool,
    global_mean_pool,
)

TOL = 1e-5


def random_graph(num_nodes=9, num_edges=20, features=5, edge_dim=3, isolated=2, seed=0):
    """A directed graph whose last ``isolated`` nodes have no edges; with a self-loop and a duplicate."""
    g = torch.Generator().manual_seed(seed)
    reach = num_nodes - isolated
    edge_index = torch.randint(0, reach, (2, num_edges), generator=g)
    edge_index = torch.cat([edge_index, torch.tensor([[1, 0], [1, 2]]), edge_index[:, :1]], dim=1)
    edges = edge_index.size(1)
    return Data(
        x=torch.randn(num_nodes, features, generator=g),
        edge_index=edge_index,
        edge_attr=torch.randn(edges, edge_dim, generator=g),
        edge_weight=torch.rand(edges, generator=g) + 0.1,
    )


def graph_batch():
    return Batch.from_data_list([random_graph(n, 2 * n, seed=n) for n in (5, 8, 4, 6)])


def permuted(data, seed=1):
    """The same graph with its nodes relabelled by a random permutation and its edges reordered.

    Returns the new graph and ``perm``: new node k is old node ``perm[k]``, so a node-level output
    should become ``out[perm]``."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(data.num_nodes, generator=g)
    new_label = torch.empty_like(perm)
    new_label[perm] = torch.arange(data.num_nodes)
    order = torch.randperm(data.edge_index.size(1), generator=g)
    return (
        Data(
            x=data.x[perm],
            edge_index=new_label[data.edge_index][:, order],
            edge_attr=data.edge_attr[order],
            edge_weight=data.edge_weight[order],
        ),
        perm,
    )


def close(a, b, tol=TOL):
    return torch.allclose(a, b, atol=tol, rtol=0)


# ---- against torch_geometric, same weights -------------------------------------------------


GCN_CASES = [  # (constructor arguments, with edge weights)
    *[({}, weighted) for weighted in (False, True)],
    ({"bias": False}, False),
    ({"improved": True}, True),  # PyG 2.8 ignores improved=True without edge weights: see the dense test
    ({"add_self_loops": False}, False),
    ({"add_self_loops": False}, True),
    ({"add_self_loops": False, "normalize": False}, True),
]


@pytest.mark.parametrize("data", [random_graph(), graph_batch()], ids=["graph", "batch"])
@pytest.mark.parametrize("kwargs,weighted", GCN_CASES)
def test_gcn_equals_pyg(data, kwargs, weighted):
    ours = GCNConv(5, 4, **kwargs)
    theirs = pyg.GCNConv(5, 4, **kwargs)
    ours.load_state_dict(theirs.state_dict())  # the same names: lin.weight, bias
    weight = data.edge_weight if weighted else None
    assert close(ours(data.x, data.edge_index, weight), theirs(data.x, data.edge_index, weight))


def test_gcn_equals_the_dense_formula_with_isolated_nodes():
    data = random_graph(num_edges=12)
    n, (src, dst) = data.num_nodes, data.edge_index
    edge_index = data.edge_index[:, src != dst]  # no self-loops of its own: Â = A + I exactly
    src, dst = edge_index
    for improved in (False, True):
        conv = GCNConv(5, 3, improved=improved)
        torch.nn.init.normal_(conv.bias)
        a = torch.zeros(n, n)
        a.index_put_(
            (dst, src), torch.ones(src.numel()), accumulate=True
        )  # A[i, j]: edges j -> i (with duplicates)
        a_hat = a + (2.0 if improved else 1.0) * torch.eye(n)
        d = a_hat.sum(1).pow(-0.5)
        expected = d[:, None] * a_hat * d[None, :] @ conv.lin(data.x) + conv.bias
        out = conv(data.x, edge_index)
        assert close(out, expected)
        assert close(out[-2:], (conv.lin(data.x[-2:]) + conv.bias))  # isolated: only the self-loop


@pytest.mark.parametrize("data", [random_graph(), graph_batch()], ids=["graph", "batch"])
@pytest.mark.parametrize("heads,concat", [(1, True), (3, True), (3, False)])
@pytest.mark.parametrize("self_loops", [True, False])
def test_gat_equals_pyg_with_attention_weights(data, heads, concat, self_loops):
    ours = GATConv(5, 4, heads=heads, concat=concat, add_self_loops=self_loops, negative_slope=0.1)
    theirs = pyg.GATConv(5, 4, heads=heads, concat=concat, add_self_loops=self_loops, negative_slope=0.1)
    ours.load_state_dict(theirs.state_dict())  # lin.weight, att_src, att_dst, bias
    out, (edges, alpha) = ours(data.x, data.edge_index, return_attention_weights=True)
    ref, (ref_edges, ref_alpha) = theirs(data.x, data.edge_index, return_attention_weights=True)
    assert out.shape == (data.num_nodes, heads * 4 if concat else 4)
    assert close(out, ref)
    assert torch.equal(edges, ref_edges) and close(alpha, ref_alpha)
    sums = scatter(alpha, edges[1], data.num_nodes)  # α sums to 1 over the edges into each node
    has_in = torch.zeros(data.num_nodes, dtype=torch.bool)
    has_in[edges[1]] = True
    assert close(sums[has_in], torch.ones_like(sums[has_in]))


@pytest.mark.parametrize("data", [random_graph(), graph_batch()], ids=["graph", "batch"])
@pytest.mark.parametrize("aggr", ["sum", "mean", "max"])
def test_mpnn_equals_pyg_nnconv(data, aggr):
    ours = MPNNConv(5, 4, edge_dim=3, aggr=aggr, hidden=(8,))
    theirs = pyg.NNConv(5, 4, copy.deepcopy(ours.nn), aggr=aggr)
    theirs.load_state_dict(ours.state_dict())  # nn.*, lin.weight, bias
    assert close(
        ours(data.x, data.edge_index, data.edge_attr), theirs(data.x, data.edge_index, data.edge_attr)
    )


@pytest.mark.parametrize("aggr", ["sum", "mean"])
def test_mpnn_with_few_edge_types_equals_pyg_nnconv_with_gradients(aggr):
    """Bond types: the edge network runs once per distinct type; values and gradients unchanged."""
    data = random_graph(num_edges=40)
    types = torch.randint(0, 4, (data.edge_index.size(1),), generator=torch.Generator().manual_seed(1))
    edge_attr = torch.nn.functional.one_hot(types, 4).float()
    ours = MPNNConv(5, 4, edge_dim=4, aggr=aggr, hidden=(8,))
    theirs = pyg.NNConv(5, 4, copy.deepcopy(ours.nn), aggr=aggr)
    theirs.load_state_dict(ours.state_dict())
    x_ours, x_theirs = data.x.clone().requires_grad_(), data.x.clone().requires_grad_()
    out_ours, out_theirs = (
        ours(x_ours, data.edge_index, edge_attr),
        theirs(x_theirs, data.edge_index, edge_attr),
    )
    assert close(out_ours, out_theirs)
    (out_ours**2).sum().backward()
    (out_theirs**2).sum().backward()
    assert close(x_ours.grad, x_theirs.grad)
    reference = dict(theirs.named_parameters())
    for name, parameter in ours.named_parameters():  # gradients of order 100: a relative tolerance
        torch.testing.assert_close(parameter.grad, reference[name].grad, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("aggr", ["mean", "max", "sum"])
def test_sage_equals_pyg(aggr):
    data = graph_batch()
    ours, theirs = SAGEConv(5, 4, aggr=aggr), pyg.SAGEConv(5, 4, aggr=aggr)
    ours.load_state_dict(theirs.state_dict())  # lin_l (with the bias), lin_r
    assert close(ours(data.x, data.edge_index), theirs(data.x, data.edge_index))


def test_pooling_equals_pyg_on_a_batch():
    batch = graph_batch()
    x = torch.randn(batch.num_nodes, 3)
    assert close(global_add_pool(x, batch.batch), pyg.global_add_pool(x, batch.batch))
    assert close(global_mean_pool(x, batch.batch), pyg.global_mean_pool(x, batch.batch))
    assert close(global_max_pool(x, batch.batch), pyg.global_max_pool(x, batch.batch))
    assert global_add_pool(x, batch.batch).shape == (4, 3)
    assert close(global_add_pool(x), x.sum(0, keepdim=True))  # no batch: one graph
    empty_graph_pooled = global_mean_pool(x[:2], torch.tensor([0, 2]), size=4)
    assert torch.equal(empty_graph_pooled[[1, 3]], torch.zeros(2, 3))  # graphs without nodes pool to 0


# ---- aggregation against dense computations ------------------------------------------------


class Identity(MessagePassing):
    def forward(self, x, edge_index):
        return self.propagate(edge_index, x=x)


def test_aggregations_equal_dense_computations_and_isolated_nodes_get_zero():
    n = 7
    edge_index = torch.tensor([[0, 1, 2, 3, 0, 4], [1, 1, 1, 2, 3, 3]])  # nodes 0, 4, 5, 6 receive nothing
    x = torch.randn(n, 4)
    a = torch.zeros(n, n)
    a[edge_index[1], edge_index[0]] = 1.0  # A[i, j] = 1 for an edge j -> i
    degree = a.sum(1, keepdim=True)
    assert close(Identity("sum")(x, edge_index), a @ x)
    assert close(Identity("mean")(x, edge_index), a @ x / degree.clamp(min=1))
    dense_max = torch.where(a[:, :, None] > 0, x[None], float("-inf")).amax(1)
    expected_max = torch.where(degree > 0, dense_max, torch.zeros(()))
    assert close(Identity("max")(x, edge_index), expected_max)
    for aggr in ("sum", "mean", "max"):
        out = Identity(aggr)(-x.abs() - 1, edge_index)  # negative features: max must not clip at 0
        assert torch.equal(out[degree.squeeze(1) == 0], torch.zeros(4, 4))
        assert (out[degree.squeeze(1) > 0] < 0).all()
    leaf = x.clone().requires_grad_()
    for aggr in ("mean", "max"):  # scatter_reduce's backward
        Identity(aggr)(leaf, edge_index).sum().backward()
    assert torch.isfinite(leaf.grad).all() and leaf.grad[5:].abs().sum() == 0  # 5, 6 send nothing


def test_propagate_on_a_bipartite_graph():
    x_src, x_dst = torch.randn(3, 2), torch.randn(5, 2)
    edge_index = torch.tensor([[0, 2, 2], [4, 4, 0]])  # sources index x_src, targets x_dst
    out = Identity("sum").propagate(edge_index, x=(x_src, x_dst))
    assert out.shape == (5, 2)
    assert close(out[4], x_src[0] + x_src[2]) and close(out[0], x_src[2])
    with pytest.raises(ValueError, match=r"source node 4, outside \[0, 3\)"):
        Identity().propagate(edge_index.flip(0), x=(x_src, x_dst))


def test_segment_softmax_is_stable_and_differentiable():
    scores = torch.tensor([[1000.0], [1001.0], [-1000.0], [5.0]], requires_grad=True)
    index = torch.tensor([0, 0, 1, 1])
    alpha = segment_softmax(scores, index, 3)
    assert torch.isfinite(alpha).all()
    assert close(alpha.squeeze(1), torch.tensor([1 / (1 + torch.e), torch.e / (1 + torch.e), 0.0, 1.0]))
    alpha[1].sum().backward()
    assert torch.isfinite(scores.grad).all()


# ---- permutation symmetry ------------------------------------------------------------------


def _layers():
    return {
        "gcn": lambda d: GCNConv(5, 4)(d.x, d.edge_index, d.edge_weight),
        "gat": lambda d: GATConv(5, 4, heads=2)(d.x, d.edge_index),
        "mpnn": lambda d: MPNNConv(5, 4, edge_dim=3, aggr="max", hidden=(8,))(d.x, d.edge_index, d.edge_attr),
        "sage": lambda d: SAGEConv(5, 4)(d.x, d.edge_index),
        "gnn": lambda d: GNN(5, 6, 3, conv="gat", heads=2)(d.x, d.edge_index),
    }


@pytest.mark.parametrize("name", list(_layers()))
def test_layers_are_permutation_equivariant(name):
    data = random_graph()
    moved, perm = permuted(data)
    layer = _layers()[name]
    torch.manual_seed(0)
    out = layer(data)
    torch.manual_seed(0)  # the same weights
    assert close(layer(moved), out[perm])


@pytest.mark.parametrize("conv", ["gcn", "gat", "mpnn", "sage"])
@pytest.mark.parametrize("pool", ["add", "mean", "max"])
def test_pooled_gnn_is_permutation_invariant(conv, pool):
    data = random_graph()
    moved, _ = permuted(data)
    model = GNN(5, 8, 2, conv=conv, pool=pool, heads=2, edge_dim=3).eval()
    attr = (lambda d: d.edge_attr) if conv == "mpnn" else (lambda d: None)
    out = model(data.x, data.edge_index, attr(data))
    assert out.shape == (1, 2)
    assert close(model(moved.x, moved.edge_index, attr(moved)), out)


# ---- the classifier builder ----------------------------------------------------------------


@pytest.mark.parametrize("conv", ["gcn", "gat", "mpnn", "sage"])
def test_gnn_classifies_nodes_and_graphs_and_trains(conv):
    batch = graph_batch()
    attr = batch.edge_attr if conv == "mpnn" else None
    nodes = GNN(5, 8, 3, conv=conv, heads=2, edge_dim=3, dropout=0.1)
    assert nodes(batch.x, batch.edge_index, attr).shape == (batch.num_nodes, 3)
    graphs = GNN(5, 8, 2, num_layers=3, conv=conv, pool="mean", heads=2, edge_dim=3)
    logits = graphs(batch.x, batch.edge_index, attr, batch.batch)
    assert logits.shape == (4, 2)
    torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 0, 1])).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in graphs.parameters())


def test_reset_parameters_redraws_weights_and_zeroes_biases():
    for layer in (GCNConv(5, 4), GATConv(5, 4, heads=2), MPNNConv(5, 4, 3), SAGEConv(5, 4), GNN(5, 8, 2)):
        before = [p.detach().clone() for p in layer.parameters()]
        with torch.no_grad():
            for p in layer.parameters():
                p.fill_(7.0)
        layer.reset_parameters()
        after = list(layer.parameters())
        assert all(not torch.equal(a, torch.full_like(a, 7.0)) for a in after)
        assert [a.shape for a in after] == [b.shape for b in before]
    gcn = GCNConv(5, 4)
    gcn.reset_parameters()
    assert torch.equal(gcn.bias, torch.zeros(4))


# ---- bad inputs ----------------------------------------------------------------------------


def test_bad_inputs_raise_clear_value_errors():
    data = random_graph()
    x, ei = data.x, data.edge_index
    gcn = GCNConv(5, 4)
    with pytest.raises(ValueError, match=r"target node 9, outside \[0, 9\)"):
        gcn(x, torch.cat([ei, torch.tensor([[0], [9]])], dim=1))
    with pytest.raises(ValueError, match="source node -1"):
        SAGEConv(5, 4)(x, torch.cat([ei, torch.tensor([[-1], [0]])], dim=1))
    with pytest.raises(ValueError, match=r"shape \(2, num_edges\)"):
        gcn(x, ei.t())
    with pytest.raises(ValueError, match="int64"):
        GATConv(5, 4)(x, ei.float())
    with pytest.raises(ValueError, match="5 features per node, got 4"):
        gcn(x[:, :4], ei)
    with pytest.raises(ValueError, match=r"x must be a \(num_nodes, 5\) tensor"):
        gcn(x[None], ei)
    with pytest.raises(ValueError, match="edge_weight must have shape"):
        gcn(x, ei, data.edge_weight[:-1])
    with pytest.raises(ValueError, match=r"edge_attr must have shape \(23, 3\)"):
        MPNNConv(5, 4, 3)(x, ei, data.edge_attr[:, :2])
    with pytest.raises(ValueError, match="batch must be an int64 tensor"):
        global_add_pool(x, torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="aggr must be one of"):
        MPNNConv(5, 4, 3, aggr="median")
    with pytest.raises(ValueError, match="needs edge_dim"):
        GNN(5, 8, 2, conv="mpnn")
    with pytest.raises(ValueError, match="conv must be one of"):
        GNN(5, 8, 2, conv="gin")
    with pytest.raises(ValueError, match="uses no edge features"):
        GNN(5, 8, 2, conv="sage")(x, ei, data.edge_attr)
