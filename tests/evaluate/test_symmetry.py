"""Tests for biaslab.evaluate.symmetry: the verifier on torch's own layers, where the answer is
known; random isometries against scipy's uniformly distributed rotations."""

import dataclasses

import numpy as np
import pytest
import torch
from scipy.stats import ks_2samp, ortho_group, special_ortho_group
from torch import nn

from biaslab.evaluate.symmetry import (
    cyclic_shift,
    equivariance_error,
    identity,
    invariance_error,
    on_field,
    permute,
    permute_dense_graph,
    permute_nodes,
    random_isometry,
    random_orthogonal,
    random_permutation,
    reverse,
    rotate90,
)

EXACT, BROKEN = 1e-5, 1e-2  # float32: an exact symmetry is at rounding level, a broken one order 1


def conv_stack(dims: int, padding_mode: str) -> nn.Module:
    torch.manual_seed(0)
    conv = nn.Conv1d if dims == 1 else nn.Conv2d
    return nn.Sequential(
        conv(2, 8, 3, padding=1, padding_mode=padding_mode),
        nn.ReLU(),
        conv(8, 4, 5, padding=2, padding_mode=padding_mode),
    )


@pytest.mark.parametrize("dims", [1, 2])
def test_circular_convolution_is_translation_equivariant_and_zero_padding_is_not(dims):
    x = torch.randn(3, 2, *([12] * dims), generator=torch.Generator().manual_seed(1))
    shift = cyclic_shift((3,) * dims, dims=tuple(range(-dims, 0)))
    assert equivariance_error(conv_stack(dims, "circular"), shift, shift, x) < EXACT
    assert equivariance_error(conv_stack(dims, "zeros"), shift, shift, x) > BROKEN


def test_global_pooling_turns_equivariance_into_invariance():
    pooled = nn.Sequential(conv_stack(2, "circular"), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    x = torch.randn(3, 2, 10, 10, generator=torch.Generator().manual_seed(2))
    assert invariance_error(pooled, cyclic_shift((4, -3), dims=(-2, -1)), x) < EXACT


def test_an_mlp_has_none_of_these_symmetries():
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(24, 32), nn.ReLU(), nn.Linear(32, 24))
    x = torch.randn(5, 2, 12, generator=torch.Generator().manual_seed(3))
    shift = cyclic_shift(2)
    flat_shift = lambda y: torch.roll(y.reshape(5, 2, 12), 2, -1).reshape(5, 24)
    assert equivariance_error(mlp, shift, flat_shift, x) > BROKEN
    assert equivariance_error(mlp, permute(random_permutation(12), dim=2), identity, x) > BROKEN


def test_a_rotation_symmetric_kernel_commutes_with_quarter_turns():
    conv = nn.Conv2d(1, 1, 3, padding=1, padding_mode="circular", bias=False)
    with torch.no_grad():  # the same under every quarter turn: a cross-shaped stencil
        conv.weight.copy_(torch.tensor([[[[0.0, 1, 0], [1, -4, 1], [0, 1, 0]]]]))
    x = torch.randn(2, 1, 9, 9, generator=torch.Generator().manual_seed(4))
    for k in (1, 2, 3):
        assert equivariance_error(conv, rotate90(k), rotate90(k), x) < EXACT
    with torch.no_grad():
        conv.weight[0, 0, 0, 1] = 2.0  # no longer symmetric
    assert equivariance_error(conv, rotate90(1), rotate90(1), x) > BROKEN


def dense_adjacency(edge_index: torch.Tensor, n: int) -> torch.Tensor:
    a = torch.zeros(n, n)
    a[edge_index[1], edge_index[0]] = 1.0  # row i gathers from its sources j
    return a


def test_node_permutation_of_an_edge_list_is_p_a_p_transposed():
    gen = torch.Generator().manual_seed(5)
    n = 7
    edge_index = torch.randint(0, n, (2, 20), generator=gen)
    x = torch.randn(n, 3, generator=gen)
    perm = random_permutation(n, gen)
    x_edges, edges = permute_nodes(perm)((x, edge_index))
    x_dense, adjacency = permute_dense_graph(perm)((x, dense_adjacency(edge_index, n)))
    assert torch.equal(x_edges, x_dense) and torch.equal(x_edges, x[perm])
    assert torch.equal(dense_adjacency(edges, n), adjacency)


def test_neighbour_sums_are_permutation_equivariant_and_their_total_invariant():
    gen = torch.Generator().manual_seed(6)
    n = 9
    x, edge_index = torch.randn(n, 4, generator=gen), torch.randint(0, n, (2, 30), generator=gen)
    perm = random_permutation(n, gen)

    def layer(x, edge_index):  # h_i = x_i + sum over edges j -> i of x_j
        return x + torch.zeros_like(x).index_add_(0, edge_index[1], x[edge_index[0]])

    assert equivariance_error(layer, permute_nodes(perm), permute(perm, dim=0), (x, edge_index)) < EXACT
    total = lambda x, e: layer(x, e).sum(0)
    assert invariance_error(total, permute_nodes(perm), (x, edge_index)) < EXACT


def test_reversal_commutes_with_position_wise_maps_but_not_with_recurrence():
    torch.manual_seed(0)
    x = torch.randn(2, 15, 3, generator=torch.Generator().manual_seed(7))
    pointwise = nn.Linear(3, 3)
    assert equivariance_error(pointwise, reverse(1), reverse(1), x) < EXACT
    gru = nn.GRU(3, 4, batch_first=True)
    assert equivariance_error(gru, reverse(1), reverse(1), x, output=lambda out: out[0]) > BROKEN


def test_shape_mismatch_names_the_shapes_and_modes_are_restored():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    model.train()
    x = torch.randn(3, 4)
    assert equivariance_error(model, identity, identity, x) == 0.0  # eval mode: dropout is off
    assert model.training
    with pytest.raises(ValueError, match=r"\(3, 4\) vs .*\(2, 4\)"):
        equivariance_error(model, identity, lambda y: y[:2], x)


def test_random_permutation_is_explicitly_seeded_and_never_the_identity():
    assert torch.equal(random_permutation(6, 3), random_permutation(6, 3))
    assert not torch.equal(random_permutation(2, 0), torch.arange(2))
    assert sorted(random_permutation(10, 1).tolist()) == list(range(10))


@pytest.mark.parametrize("dim", [1, 2, 3, 5])
@pytest.mark.parametrize("det", [None, 1, -1])
def test_random_orthogonal_is_orthogonal_with_the_determinant_asked_for(dim, det):
    dets = set()
    for seed in range(12):
        q = random_orthogonal(dim, seed, det)
        assert q.dtype == torch.float64 and q.shape == (dim, dim)
        torch.testing.assert_close(q.T @ q, torch.eye(dim, dtype=torch.float64), rtol=0, atol=1e-13)
        dets.add(round(float(torch.linalg.det(q))))
    assert dets == ({1, -1} if det is None else {det})
    assert torch.equal(random_orthogonal(dim, 7, det), random_orthogonal(dim, 7, det))


@pytest.mark.parametrize("det", [None, 1])
def test_random_orthogonal_is_distributed_as_scipys_uniform_draws(det):
    # Haar measure: compare the trace and one entry with scipy's ortho_group / special_ortho_group
    gen = torch.Generator().manual_seed(0)
    draws = torch.stack([random_orthogonal(3, gen, det) for _ in range(2000)]).numpy()
    reference = (ortho_group if det is None else special_ortho_group).rvs(3, size=2000, random_state=0)
    for ours, theirs in ((np.trace(draws, axis1=1, axis2=2), np.trace(reference, axis1=1, axis2=2)),
                         (draws[:, 0, 0], reference[:, 0, 0])):  # fmt: skip
        assert ks_2samp(ours, theirs).pvalue > 0.01


def test_an_isometry_keeps_distances_so_a_distance_function_is_invariant_and_a_linear_map_is_not():
    points = torch.randn(4, 6, 3, generator=torch.Generator().manual_seed(8))  # 4 clouds of 6 points
    move = random_isometry(3, 1, det=-1, shift_std=5.0)
    assert float(torch.linalg.det(move.matrix)) == pytest.approx(-1.0)
    assert move.shift.abs().max() > 1.0
    moved = move(points)
    assert moved.dtype == torch.float32
    torch.testing.assert_close(moved, points @ move.matrix.float().T + move.shift.float())
    torch.testing.assert_close(torch.cdist(moved, moved), torch.cdist(points, points), rtol=0, atol=1e-4)

    def gram_of_distances(x):  # a function of the pairwise distances only: E(3)-invariant
        return torch.cdist(x, x).pow(2).sum(-1)

    assert invariance_error(gram_of_distances, move, points) < EXACT
    torch.manual_seed(0)
    assert invariance_error(nn.Linear(3, 2), move, points) > BROKEN
    centred = lambda x: (x - x.mean(-2, keepdim=True)).norm(dim=-1)  # translation invariant ...
    assert invariance_error(centred, random_isometry(3, 2, shift_std=0.0), points) < EXACT
    assert invariance_error(lambda x: x.norm(dim=-1), move, points) > BROKEN  # ... norms are not


def test_on_field_moves_one_field_of_a_batch_and_keeps_the_rest():
    @dataclasses.dataclass(frozen=True)
    class Batch:
        x: torch.Tensor
        pos: torch.Tensor

    batch = Batch(torch.arange(3.0), torch.randn(3, 3, generator=torch.Generator().manual_seed(9)))
    move = random_isometry(3, 4)
    moved = on_field("pos", move)(batch)
    assert isinstance(moved, Batch) and moved.x is batch.x
    assert torch.equal(moved.pos, move(batch.pos)) and not torch.equal(moved.pos, batch.pos)


def test_bad_isometry_arguments():
    with pytest.raises(ValueError, match="det must be 1, -1 or None"):
        random_orthogonal(3, 0, det=0)
    with pytest.raises(ValueError, match="dim must be an integer"):
        random_orthogonal(0)
    with pytest.raises(ValueError, match="shift_std must be"):
        random_isometry(3, 0, shift_std=-1.0)
