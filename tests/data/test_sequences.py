"""Tests for biaslab.data.sequences: each task's target follows from its inputs by the stated rule."""

import pytest
import torch

from biaslab.data.sequences import (
    adding_problem,
    recall_task,
    retrieval_match,
    retrieval_task,
    retrieval_vocabulary,
)
from biaslab.errors import BiaslabError


def test_adding_problem_marks_and_targets():
    x, y = adding_problem(500, 40, seed=1)
    assert x.shape == (500, 40, 2) and y.shape == (500,) and x.dtype == torch.float32
    marks = x[..., 1]
    assert torch.equal(marks.sum(1), torch.full((500,), 2.0))
    assert (marks[:, :20].sum(1) == 1).all() and (marks[:, 20:].sum(1) == 1).all()
    torch.testing.assert_close(y, (x[..., 0] * marks).sum(1))
    baseline = ((y - 1.0) ** 2).mean()  # predicting 1: MSE 1/6 for a sum of two uniforms
    assert baseline == pytest.approx(1 / 6, abs=0.03)
    assert torch.equal(adding_problem(5, 10, seed=2)[0], adding_problem(5, 10, seed=2)[0])


def test_recall_task_targets_the_first_symbol():
    tokens, y = recall_task(300, 50, vocab=5, seed=3)
    assert tokens.shape == (300, 50) and torch.equal(y, tokens[:, 0])
    assert tokens.min() >= 0 and tokens.max() == 4


def test_retrieval_task_answers_the_query_by_content():
    tokens, y = retrieval_task(400, pairs=4, keys=10, values=6, seed=4, paired=False)
    assert tokens.shape == (400, 9)
    keys, values, query = tokens[:, 0:-1:2], tokens[:, 1:-1:2] - 10, tokens[:, -1]
    assert (keys < 10).all() and (values >= 0).all() and (values < 6).all()
    for row in range(400):
        assert len(set(keys[row].tolist())) == 4  # distinct keys
        position = keys[row].tolist().index(int(query[row]))
        assert y[row] == values[row, position]
    assert len(set((tokens[:, -1] == tokens[:, 0]).tolist())) == 2  # the query is not always first


def test_paired_layout_holds_the_same_pairs_one_token_each():
    interleaved, y = retrieval_task(300, pairs=3, keys=7, values=5, seed=5, paired=False)
    paired, y_paired = retrieval_task(300, pairs=3, keys=7, values=5, seed=5)
    assert paired.shape == (300, 4) and torch.equal(y, y_paired)
    keys, values = interleaved[:, 0:-1:2], interleaved[:, 1:-1:2] - 7
    assert torch.equal(paired[:, :-1], keys * 5 + values)
    assert torch.equal(paired[:, -1], 7 * 5 + interleaved[:, -1])
    assert int(paired.max()) < retrieval_vocabulary(7, 5) and retrieval_vocabulary(7, 5, paired=False) == 12


@pytest.mark.parametrize("paired", [True, False])
def test_retrieval_match_is_the_position_of_the_queried_key(paired):
    tokens, y = retrieval_task(300, pairs=4, keys=9, values=5, seed=6, paired=paired)
    match = retrieval_match(tokens, keys=9, values=5, paired=paired)
    assert match.shape == (300,) and match.dtype == torch.int64
    for row in range(300):  # the reference: a search through the row
        seq = tokens[row].tolist()
        if paired:
            want = next(i for i, t in enumerate(seq[:-1]) if t // 5 == seq[-1] - 9 * 5)
            assert seq[want] % 5 == y[row]  # the pair holds the answer
        else:
            want = next(i for i in range(0, len(seq) - 1, 2) if seq[i] == seq[-1])
            assert seq[want + 1] - 9 == y[row]  # the value follows its key
        assert match[row] == want
    assert len(set(match.tolist())) == 4  # the matching pair sits anywhere


def test_retrieval_match_refuses_tokens_of_another_layout():
    tokens, _ = retrieval_task(50, pairs=3, keys=6, values=4, seed=7)
    with pytest.raises(ValueError, match="exactly once"):
        retrieval_match(tokens, keys=6, values=5)
    with pytest.raises(ValueError, match="integer sequences"):
        retrieval_match(tokens.float(), keys=6, values=4)


@pytest.mark.parametrize(
    "call",
    [
        lambda: adding_problem(0, 10),
        lambda: adding_problem(4, 1),
        lambda: recall_task(4, 10, vocab=1),
        lambda: retrieval_task(4, pairs=5, keys=4),
        lambda: retrieval_task(4, values=1),
    ],
)
def test_bad_sizes_are_refused(call):
    with pytest.raises(BiaslabError):
        call()
