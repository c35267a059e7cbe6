"""Coding cells: a student's function checked against the library's own (biaslab.notebooks.coding),
one line saying what differs, never an error unless strict."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from biaslab.notebooks.coding import code_mismatch
from biaslab.notebooks.lab import STRICT_VARIABLE, CodeNotYet, Lab

X = np.arange(6.0).reshape(2, 3)
W = np.array([[1.0, -1.0], [0.5, 0.0], [0.0, -2.0]])  # x @ w has negative entries


def reference(x, w):
    return np.maximum(x @ w, 0)


def stub(x, w):
    raise NotImplementedError("write the forward pass")


@pytest.mark.parametrize(
    ("student", "says"),
    [
        (reference, None),
        (lambda x, w: torch.relu(torch.tensor(x) @ torch.tensor(w)), None),  # a tensor is fine
        (stub, "not written yet (write the forward pass)"),
        (lambda x, w: x @ w, "output entry (0, 1) is -4.0 where the library's is 0.0"),  # no ReLU
        (lambda x, w: np.maximum(x @ w, 0).ravel(), "output has shape (4,) where the library's has (2, 2)"),
        (lambda x, w: 1 / 0, "your function raised ZeroDivisionError: division by zero"),
        (lambda x, w: "relu", "output should be an array, not str 'relu'"),
    ],
)
def test_a_students_function_is_compared_entry_by_entry(student, says):
    why = code_mismatch(student, reference, [(X, W)])
    assert why == says if says is None else says in why


def test_a_transposed_answer_names_the_entry_that_differs():
    assert code_mismatch(lambda x, w: np.maximum(w.T @ x.T, 0), reference, [(X, W)]) == (
        "output entry (0, 1) is 5.0 where the library's is 0.0"
    )


def test_several_outputs_and_several_inputs_are_each_named():
    def grads(x, w):  # the gradients of sum(relu(x @ w)) by autograd
        x, w = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
        torch.relu(x @ w).sum().backward()
        return x.grad, w.grad

    def by_hand(x, w):
        mask = (x @ w > 0).astype(float)
        return mask @ w.T, x.T @ mask

    def forgot_the_mask(x, w):
        ones = np.ones((x.shape[0], w.shape[1]))
        return ones @ w.T, x.T @ ones

    inputs = [(X, W), (-X, W)]
    assert code_mismatch(by_hand, grads, inputs) is None
    assert code_mismatch(forgot_the_mask, grads, inputs) == (
        "output 1 entry (0, 0) is 0.0 where the library's is 1.0 on input 1"
    )
    assert code_mismatch(lambda x, w: by_hand(x, w)[0], grads, inputs).startswith("output should be 2 values")
    half = lambda x, w: by_hand(np.abs(x), w)
    assert code_mismatch(half, grads, inputs).endswith("on input 2")


def test_the_student_cannot_change_the_librarys_inputs():
    def in_place(x, w):
        x *= 0  # a student's in-place edit of the input it was given
        return reference(x, w)

    x = X.copy()
    assert "where the library's is" in code_mismatch(in_place, reference, [(x, W)])
    assert np.array_equal(x, X)


def test_a_dict_of_parameters_changed_in_place_is_each_function_s_own():
    """An optimizer loop updates the parameter dict it is given in place: the library's run must
    not hand the student parameters it has already trained (nor the other way round)."""

    def step(params, lr):
        for name in params:
            params[name] -= lr * np.ones_like(params[name])
        return params

    params = {"W": W.copy(), "b": np.zeros(4)}
    assert code_mismatch(step, step, [(params, 0.5)]) is None
    assert np.array_equal(params["W"], W) and not params["b"].any()  # the caller's dict untouched
    assert code_mismatch(lambda p, lr: step(p, 2 * lr), step, [(params, 0.5)]).startswith("output 'W' entry")


def test_check_code_says_it_in_one_line_and_remembers_it(capsys, monkeypatch):
    monkeypatch.delenv(STRICT_VARIABLE, raising=False)
    lab = Lab(day=1, profile="quick")
    capsys.readouterr()
    lab.check_code("forward", stub, reference, [(X, W)])
    lab.check_code("forward, again", lambda x, w: x @ w, reference, [(X, W)])
    lab.check_code("forward, done", reference, reference, [(X, W)])
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "forward: not written yet (write the forward pass)",
        "forward, again: not yet: output entry (0, 1) is -4.0 where the library's is 0.0",
        "forward, done: correct",
    ]
    assert lab.answers == {"forward": "unanswered", "forward, again": "not yet", "forward, done": "correct"}


def test_strict_mode_raises_for_a_function_not_right(monkeypatch, capsys):
    monkeypatch.setenv(STRICT_VARIABLE, "1")
    lab = Lab(day=1, profile="quick")
    lab.check_code("forward", reference, reference, [(X, W)])  # right: no error
    for student in (stub, lambda x, w: x @ w):
        with pytest.raises(CodeNotYet, match="forward"):
            lab.check_code("forward", student, reference, [(X, W)])


def test_a_near_miss_shows_the_digits_where_the_two_part():
    """Within six digits but outside the tolerance: the message must not read "0.10557 where the
    library's is 0.10557"."""
    why = code_mismatch(lambda: 0.105571234, lambda: 0.105571, [()], tolerance=1e-9)
    assert why == "output is 0.105571234 where the library's is 0.105571"
