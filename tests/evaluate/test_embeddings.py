"""Analogy ranks against a table where offsets hold exactly, a random table, and by hand."""

import pytest
import torch

from biaslab.evaluate.embeddings import analogy_ranks, cosine_neighbours


def test_the_ranks_equal_a_loop_over_the_candidates():
    gen = torch.Generator().manual_seed(0)
    table = torch.randn(12, 5, dtype=torch.float64, generator=gen)
    questions = torch.tensor([[0, 1, 2, 3], [4, 5, 6, 7], [8, 2, 11, 0], [3, 3, 9, 10]])
    unit = [row / row.norm() for row in table]
    for (a, b, c, d), rank in zip(questions.tolist(), analogy_ranks(table, questions).tolist()):
        query = unit[b] - unit[a] + unit[c]
        score = {v: float(query @ unit[v] / query.norm()) for v in range(12) if v not in (a, b, c)}
        assert rank == 1 + sum(score[v] > score[d] for v in score)


def test_the_rank_counts_the_better_candidates_and_skips_the_question():
    table = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.1], [0.1, 1.0], [-1.0, 0.0]])
    # query: e1 − e0 + e2 ≈ (0, 1.1) normalised: nearest are 1 (excluded), 3, then 2 (excluded) ...
    ranks = analogy_ranks(table, torch.tensor([[0, 1, 2, 3], [0, 1, 2, 4]]))
    assert ranks.tolist() == [1, 2]


def test_a_random_table_ranks_the_answer_about_halfway():
    gen = torch.Generator().manual_seed(1)
    table = torch.randn(101, 16, generator=gen)
    questions = torch.randint(0, 101, (2000, 4), generator=gen)
    keep = (questions[:, 3:] != questions[:, :3]).all(dim=1)  # d is not one of a, b, c
    ranks = analogy_ranks(table, questions[keep]).double()
    assert 40 < ranks.mean() < 60  # of 98 candidates


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match=r"\(Q, 4\)"):
        analogy_ranks(torch.zeros(3, 2), torch.zeros(2, 3, dtype=torch.long))


def test_a_circle_is_found_at_its_frequency_and_answers_every_rotation_analogy_first():
    from biaslab.evaluate.embeddings import cyclic_plane, rotation_analogy_ranks

    p, f = 13, 5
    n = torch.arange(p, dtype=torch.float64)
    gen = torch.Generator().manual_seed(2)
    mixing = torch.linalg.qr(torch.randn(6, 6, dtype=torch.float64, generator=gen))[0][:, :2]  # (6, 2)
    circle = torch.stack([torch.cos(2 * torch.pi * f * n / p), torch.sin(2 * torch.pi * f * n / p)], dim=1)
    table = circle @ mixing.T + 0.01 * torch.randn(p, 6, dtype=torch.float64, generator=gen) + 3.0
    frequency, points = cyclic_plane(table)
    assert frequency == f
    radius = points.norm(dim=1)
    assert radius.std() / radius.mean() < 0.05  # on a circle
    a, b, c = torch.randint(0, p, (3, 300), generator=gen)
    questions = torch.stack([a, (a + 1 + b % (p - 1)) % p, c, (c + 1 + b % (p - 1)) % p], dim=1)
    keep = (questions[:, 3:] != questions[:, :3]).all(dim=1) & (questions[:, 0] != questions[:, 2])
    assert rotation_analogy_ranks(points, questions[keep]).max() == 1
    shuffled = rotation_analogy_ranks(points[torch.randperm(p, generator=gen)], questions[keep]).double()
    assert shuffled.mean() > 3  # the same points in a random order answer no better than chance-ish


def test_cosine_neighbours_skip_the_row_itself():
    table = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [-1.0, 0.0]])
    assert cosine_neighbours(table, 1)[:, 0].tolist() == [1, 0, 1, 2]
