"""Tests for biaslab.data.graphs: the contextual SBM has the homophily, degree and signal asked for."""

import pytest
import torch

from biaslab.data.graphs import contextual_sbm, split_masks
from biaslab.errors import BiaslabError


@pytest.mark.parametrize("classes, homophily", [(2, 0.9), (3, 0.7), (2, 0.5)])
def test_homophily_and_degree_are_as_asked(classes, homophily):
    g = contextual_sbm(n=900, classes=classes, average_degree=10, homophily=homophily, seed=1)
    source, target = g.edge_index
    assert (source != target).all()  # no self-loops
    pairs = set(zip(source.tolist(), target.tolist()))
    assert all((t, s) in pairs for s, t in pairs)  # undirected: both directions stored
    assert g.edge_index.shape[1] / g.num_nodes == pytest.approx(10, rel=0.1)
    same = (g.y[source] == g.y[target]).float().mean()
    assert float(same) == pytest.approx(homophily, abs=0.04)
    assert torch.bincount(g.y).tolist() == [900 // classes] * classes


def test_signal_moves_the_class_means_apart():
    silent = contextual_sbm(n=2000, signal=0.0, seed=2)
    loud = contextual_sbm(n=2000, signal=1.0, seed=2)

    def mean_gap(g):
        return float((g.x[g.y == 0].mean(0) - g.x[g.y == 1].mean(0)).norm())

    assert mean_gap(silent) < 0.5 < mean_gap(loud)


def test_split_masks_partition_the_nodes():
    train, val, test = split_masks(100, train=0.5, val=0.2, seed=3)
    assert int(train.sum()) == 50 and int(val.sum()) == 20 and int(test.sum()) == 30
    assert not (train & val).any() and not (train & test).any() and (train | val | test).all()


@pytest.mark.parametrize("kwargs", [{"classes": 1}, {"n": 3}, {"average_degree": 0}, {"homophily": 1.5}])
def test_bad_parameters_are_refused(kwargs):
    with pytest.raises(BiaslabError):
        contextual_sbm(**kwargs)


def test_relay_paths_put_each_label_hops_away_from_where_it_is_read():
    from biaslab.data.graphs import relay_paths

    graph = relay_paths(paths=12, hops=3, classes=4, seed=1)
    assert graph.x.shape == (48, 5) and graph.edge_index.shape == (2, 2 * 12 * 3)
    sources = graph.position == 0
    assert torch.equal(graph.x[sources, :4].argmax(1), graph.y[sources])  # the class, one-hot at the source
    assert graph.x[~sources, :4].abs().sum() == 0 and (graph.x[:, 4] == 1).all()  # nothing elsewhere
    assert torch.bincount(graph.y[sources]).tolist() == [3, 3, 3, 3]  # balanced classes
    # the far end is exactly `hops` edges from its source: a breadth-first search over edge_index
    reach, frontier = {0}, {0}
    for _ in range(3):
        frontier = {int(t) for s, t in graph.edge_index.T.tolist() if s in frontier} - reach
        reach |= frontier
    assert 3 in frontier and 4 not in reach  # node 3 (far end of path 0) at distance 3; path 1 apart
