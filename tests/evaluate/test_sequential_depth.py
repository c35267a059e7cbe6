"""Tests for biaslab.evaluate.sequential_depth: the longest path of autograd's graph, against
networkx's longest path on the same graph (networkx ships with torch), on hand-built chains and
on torch's own recurrent and attention layers."""

import itertools

import networkx as nx
import pytest
import torch
from torch import nn

from biaslab.evaluate.sequential_depth import sequential_depth


def networkx_depth(output: torch.Tensor) -> int:
    """The same count by networkx: nodes are autograd's operations (leaves excluded), edges lead
    from an operation's inputs to it; the longest path's edges + 1 is its operations."""
    graph, seen, todo = nx.DiGraph(), set(), [output.grad_fn]
    graph.add_node(output.grad_fn)
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        for child, _ in node.next_functions:
            if child is None or type(child).__name__ == "AccumulateGrad":
                continue
            graph.add_edge(child, node)
            todo.append(child)
    return nx.dag_longest_path_length(graph) + 1


def test_a_chain_of_k_operations_has_depth_k():
    x = torch.randn(3, requires_grad=True)
    y = x
    for k in range(1, 8):
        y = y * 2 if k % 2 else y + 1
        assert sequential_depth(y) == k


def test_side_by_side_operations_count_once_the_longest_branch_counts():
    x = torch.randn(3, requires_grad=True)
    short = x.exp()  # 1 operation
    long = x.sin().cos().tanh()  # 3 operations
    assert sequential_depth(short + long) == 4
    assert sequential_depth(torch.stack([x.exp(), x.sin(), x.cos()]).sum()) == 3  # parallel: 1, stack, sum


def test_leaves_and_tensors_without_autograd_have_depth_zero():
    x = torch.randn(3, requires_grad=True)
    assert sequential_depth(x) == 0
    with torch.no_grad():
        assert sequential_depth(x * 2) == 0
    with pytest.raises(TypeError, match="needs a tensor"):
        sequential_depth([x])


@pytest.mark.parametrize("length", [3, 10, 40])
def test_equals_networkx_longest_path_on_torch_layers(length):
    torch.manual_seed(0)
    x = torch.randn(2, length, 5)  # (N, T, C)
    rnn = nn.RNN(5, 6, batch_first=True)
    attention = nn.MultiheadAttention(5, 1, batch_first=True)
    for out in (rnn(x)[0][:, -1].sum(), attention(x, x, x)[0].sum()):
        assert sequential_depth(out) == networkx_depth(out)


def test_a_recurrent_layer_grows_with_the_length_an_attention_layer_does_not():
    torch.manual_seed(0)
    rnn = nn.RNN(5, 6, batch_first=True)
    attention = nn.MultiheadAttention(5, 1, batch_first=True)
    rnn_depth, attention_depth = [], []
    for length in (5, 10, 20):
        x = torch.randn(2, length, 5)  # (N, T, C)
        rnn_depth.append(sequential_depth(rnn(x)[0]))
        attention_depth.append(sequential_depth(attention(x, x, x)[0]))
    steps = [b - a for a, b in itertools.pairwise(rnn_depth)]
    assert steps[0] > 0 and steps[1] == 2 * steps[0]  # a fixed number of operations per time step
    assert len(set(attention_depth)) == 1


def test_a_deep_graph_does_not_hit_the_recursion_limit():
    x = torch.randn(2, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y + 1
    assert sequential_depth(y) == 5000


def test_forward_cost_counts_on_two_rows_and_times_all_rows_without_autograd(monkeypatch):
    from biaslab.evaluate import sequential_depth as module
    from biaslab.evaluate.sequential_depth import forward_cost

    seen = []

    class Recorder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(3, 2)

        def forward(self, x):
            seen.append((len(x), torch.is_grad_enabled(), self.training))
            return self.layer(x).tanh()

    monkeypatch.setattr(module, "fastest_time", lambda fn, repeats: (fn(), repeats)[1] * 0.5)
    depth, seconds = forward_cost(Recorder(), torch.randn(10, 3), repeats=4)
    assert depth == sequential_depth(nn.Linear(3, 2)(torch.randn(2, 3)).tanh()) == 3  # t(W), addmm, tanh
    assert seconds == 2.0  # what fastest_time returned for 4 repeats
    assert seen == [(2, True, True), (10, False, False), (10, False, False)]  # count, warm-up, timed
