"""Tests for biaslab.evaluate.timing: the fastest timing against timeit's on a scripted clock (no
test reads the wall clock), and what the attention timing runs."""

import timeit

import pytest
import torch

from biaslab.evaluate import timing
from biaslab.evaluate.timing import fastest_time, time_attention


def scripted_clock(readings):
    return iter(readings).__next__


@pytest.mark.parametrize("repeats", [1, 2, 5])
def test_fastest_time_equals_timeits_minimum_on_the_same_clock(repeats):
    readings = [0.0, 3.0, 3.5, 4.25, 10.0, 10.5, 11.0, 19.0, 20.0, 20.75]  # pairs: start, stop
    calls = []
    ours = fastest_time(lambda: calls.append(1), repeats, clock=scripted_clock(readings))
    theirs = min(timeit.Timer(lambda: None, timer=scripted_clock(readings)).repeat(repeats, number=1))
    assert ours == theirs and len(calls) == repeats
    assert ours == min(b - a for a, b in zip(readings[0 : 2 * repeats : 2], readings[1 : 2 * repeats : 2]))


def test_fastest_time_refuses_no_repeats():
    with pytest.raises(ValueError, match="repeats must be an integer >= 1"):
        fastest_time(lambda: None, 0)


def test_time_attention_runs_seeded_inputs_of_the_given_shape_without_autograd(monkeypatch):
    seen = []

    def recorder(q, k, v):
        seen.append((q.shape, torch.is_grad_enabled(), q.clone(), v.clone()))

    monkeypatch.setattr(timing, "scaled_dot_product_attention", recorder)
    seconds = time_attention(16, 8, batch=2, repeats=3, seed=4)
    assert seconds >= 0.0 and len(seen) == 3
    assert all(shape == (2, 16, 8) and not grad for shape, grad, _, _ in seen)
    time_attention(16, 8, batch=2, repeats=1, seed=4)
    time_attention(16, 8, batch=2, repeats=1, seed=5)
    assert torch.equal(seen[0][2], seen[3][2]) and not torch.equal(seen[0][2], seen[4][2])
    assert not torch.equal(seen[0][2], seen[0][3])  # q and v are separate draws
    with pytest.raises(ValueError, match="length must be an integer"):
        time_attention(0, 8)
