"""Forward-mode AD with dual numbers: every rule against calculus and against torch.autograd."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from biaslab.scratch.dual import Dual, gradient, hessian, jacobian
from biaslab.scratch.functions import cos, exp, log, relu, sigmoid, sin, stack, tanh

RNG = np.random.default_rng(0)
# the reverse-mode engine is a sibling module; its tests are skipped if it is absent
HAVE_REVERSE = importlib.util.find_spec("biaslab.scratch.autodiff") is not None


def _t(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def torch_jvp(fn, xs, vs):
    """(f(xs), J vs) from torch.autograd, float64."""
    out, tangent = torch.autograd.functional.jvp(fn, tuple(_t(x) for x in xs), tuple(_t(v) for v in vs))
    return out.numpy(), tangent.numpy()


# --- one op at a time ------------------------------------------------------------------------
def _sig(a):
    return 1.0 / (1.0 + np.exp(-a))


UNARY = {  # name: (generic function, derivative f'(a), sampler of a)
    "sin": (sin, np.cos, lambda: RNG.normal(size=5)),
    "cos": (cos, lambda a: -np.sin(a), lambda: RNG.normal(size=5)),
    "exp": (exp, np.exp, lambda: RNG.normal(size=5)),
    "log": (log, lambda a: 1.0 / a, lambda: RNG.uniform(0.1, 3.0, size=5)),
    "tanh": (tanh, lambda a: 1.0 - np.tanh(a) ** 2, lambda: RNG.normal(size=5)),
    "sigmoid": (sigmoid, lambda a: _sig(a) * (1.0 - _sig(a)), lambda: RNG.normal(size=5)),
    "relu": (relu, lambda a: (a > 0).astype(float), lambda: RNG.normal(size=5)),
    "square": (lambda a: a**2, lambda a: 2 * a, lambda: RNG.normal(size=5)),
    "cube": (lambda a: a**3, lambda a: 3 * a**2, lambda: RNG.normal(size=5)),
    "sqrt": (lambda a: a**0.5, lambda a: 0.5 / np.sqrt(a), lambda: RNG.uniform(0.1, 3.0, size=5)),
    "inverse_square": (lambda a: a**-2, lambda a: -2 * a**-3.0, lambda: RNG.uniform(0.5, 2, 5)),
    "two_to_the": (lambda a: 2.0**a, lambda a: np.log(2.0) * 2.0**a, lambda: RNG.normal(size=5)),
    "neg": (lambda a: -a, lambda a: -np.ones_like(a), lambda: RNG.normal(size=5)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_tangent_matches_calculus_and_torch(name):
    f, df, sample = UNARY[name]
    for _ in range(3):
        a, v = sample(), RNG.normal(size=5)
        y = f(Dual(a, v))
        assert isinstance(y, Dual)
        np.testing.assert_allclose(y.value, f(a), rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(y.tangent, df(a) * v, rtol=1e-12, atol=1e-14)
        t_value, t_tangent = torch_jvp(f, [a], [v])  # the generic f runs on torch too
        np.testing.assert_allclose(y.value, t_value, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(y.tangent, t_tangent, rtol=1e-12, atol=1e-14)


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow_dual_exponent": lambda a, b: a**b,
    "mixed": lambda a, b: (a * b - a / (b + 3.0)) * 2.0 - 1.0 / b + (1.5 - a),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_rules_with_duals_on_both_sides(name):
    f = BINARY[name]
    a, b = RNG.uniform(0.5, 2.0, size=4), RNG.uniform(0.5, 2.0, size=4)
    da, db = RNG.normal(size=4), RNG.normal(size=4)
    y = f(Dual(a, da), Dual(b, db))
    t_value, t_tangent = torch_jvp(f, [a, b], [da, db])
    np.testing.assert_allclose(y.value, t_value, rtol=1e-13)
    np.testing.assert_allclose(y.tangent, t_tangent, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("const", [2.5, np.float64(2.5), np.array([0.5, 1.5, -2.0, 3.0])])
def test_binary_rules_with_constants_on_either_side(name, const):
    f = BINARY[name]
    a, da = RNG.uniform(0.5, 2.0, size=4), RNG.normal(size=4)
    for y, fn in [
        (f(Dual(a, da), const), lambda t: f(t, _t(const))),
        (f(const, Dual(a, da)), lambda t: f(_t(const), t)),
    ]:
        assert isinstance(y, Dual), type(y)  # __array_ufunc__ = None: no object arrays
        t_value, t_tangent = torch_jvp(fn, [a], [da])
        np.testing.assert_allclose(y.value, t_value, rtol=1e-13)
        np.testing.assert_allclose(y.tangent, t_tangent, rtol=1e-12, atol=1e-14)


def test_scalar_dual_broadcasts_against_array():
    y = Dual(2.0, 1.0) * np.array([1.0, 2.0, 3.0]) + np.ones(3)
    assert y.shape == (3,) and y.tangent.shape == (3,)
    np.testing.assert_array_equal(y.tangent, [1.0, 2.0, 3.0])
    z = Dual(2.0, 1.0) + np.zeros(3)  # the constant's tangent must broadcast too
    np.testing.assert_array_equal(z.tangent, [1.0, 1.0, 1.0])


def test_matmul_indexing_sum_shape():
    A, B = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))
    dA, dB = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))
    M = RNG.normal(size=(2, 3))
    for y, fn, xs, vs in [
        (Dual(A, dA) @ Dual(B, dB), lambda a, b: a @ b, [A, B], [dA, dB]),
        (Dual(A, dA) @ B, lambda a: a @ _t(B), [A], [dA]),
        (M @ Dual(A, dA), lambda a: _t(M) @ a, [A], [dA]),
        (Dual(A, dA)[1], lambda a: a[1], [A], [dA]),
        (Dual(A, dA)[:, 2], lambda a: a[:, 2], [A], [dA]),
        (Dual(A, dA).sum(), lambda a: a.sum(), [A], [dA]),
        (Dual(A, dA).sum(axis=0), lambda a: a.sum(dim=0), [A], [dA]),
    ]:
        t_value, t_tangent = torch_jvp(fn, xs, vs)
        assert y.shape == t_value.shape
        np.testing.assert_allclose(y.value, t_value, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(y.tangent, t_tangent, rtol=1e-12, atol=1e-14)
    assert Dual(A, dA).shape == (3, 4) and Dual(A, dA).ndim == 2


def test_stack_of_duals_and_constants():
    y = stack([Dual(1.0, 2.0), 3.0, Dual(4.0, 5.0)])
    np.testing.assert_array_equal(y.value, [1.0, 3.0, 4.0])
    np.testing.assert_array_equal(y.tangent, [2.0, 0.0, 5.0])
    y = stack([Dual(np.ones(2), np.arange(2.0)), np.zeros(2)], axis=1)
    assert y.shape == (2, 2)
    np.testing.assert_array_equal(y.tangent, [[0.0, 0.0], [1.0, 0.0]])


def test_generic_functions_fall_back_to_numpy():
    a = RNG.uniform(0.1, 2.0, size=3)
    for f, ref in [(sin, np.sin), (cos, np.cos), (exp, np.exp), (log, np.log), (tanh, np.tanh)]:
        np.testing.assert_array_equal(f(a), ref(a))
    np.testing.assert_allclose(sigmoid(np.array([-800.0, 0.0, 800.0])), [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(relu(np.array([-1.0, 0.0, 2.0])), [0.0, 0.0, 2.0])
    np.testing.assert_array_equal(stack([a, a], axis=1), np.stack([a, a], axis=1))


def test_tangent_shape_must_match_value():
    with pytest.raises(ValueError):
        Dual(np.zeros(2), np.zeros(3))


# --- nesting: hyper-dual numbers give second derivatives ---------------------------------------
SECOND = {  # f, f', f''
    "sin": (sin, np.cos, lambda a: -np.sin(a)),
    "exp": (exp, np.exp, np.exp),
    "cube": (lambda a: a**3, lambda a: 3 * a**2, lambda a: 6 * a),
    "x_sin_x": (
        lambda a: a * sin(a),
        lambda a: np.sin(a) + a * np.cos(a),
        lambda a: 2 * np.cos(a) - a * np.sin(a),
    ),
    "tanh": (tanh, lambda a: 1 - np.tanh(a) ** 2, lambda a: -2 * np.tanh(a) / np.cosh(a) ** 2),
    "log_over_x": (
        lambda a: log(a) / a,
        lambda a: (1 - np.log(a)) / a**2,
        lambda a: (2 * np.log(a) - 3) / a**3,
    ),
}


@pytest.mark.parametrize("name", sorted(SECOND))
def test_nested_duals_give_second_derivatives(name):
    f, df, d2f = SECOND[name]
    a = RNG.uniform(0.3, 2.0, size=4)
    # a + ε1 + ε2 + 0·ε1ε2, built by hand: inner level ε1, outer level ε2
    y = f(Dual(Dual(a, 1.0), Dual(1.0, 0.0)))
    np.testing.assert_allclose(y.value.value, f(a), rtol=1e-13)
    np.testing.assert_allclose(y.value.tangent, df(a), rtol=1e-12)  # ε1
    np.testing.assert_allclose(y.tangent.value, df(a), rtol=1e-12)  # ε2
    np.testing.assert_allclose(y.tangent.tangent, d2f(a), rtol=1e-11, atol=1e-13)  # ε1ε2
    # the derivative operators give the same number by nesting themselves
    for k in range(4):
        g = lambda x: f(x[0])
        np.testing.assert_allclose(hessian(g, a[k : k + 1])[0, 0], d2f(a[k]), rtol=1e-11)


def test_no_perturbation_confusion():
    # d/dx [ x · d/dy (x + y) ] = d/dx [ x · 1 ] = 1; an untagged ε gives 2
    inner = lambda x: gradient(lambda y: x[0] + y[0], np.array([1.0]))[0]
    g = gradient(lambda x: x[0] * inner(x), np.array([3.0]))
    np.testing.assert_array_equal(g, [1.0])
    # a closure over the outer variable inside the inner derivative: d/dx d/dy (x y²) at y=1 is 2
    inner = lambda x: gradient(lambda y: x[0] * y[0] ** 2, np.array([1.0]))[0]
    g = gradient(inner, np.array([5.0]))
    np.testing.assert_allclose(g, [2.0])


# --- the notes' example: z = 2 x0 + x0 sin(x1) + x1³ at (1, 2) ---------------------------------
def z(x):
    return 2 * x[0] + x[0] * sin(x[1]) + x[1] ** 3


X0 = np.array([1.0, 2.0])


def test_notes_example_forward_pass_and_tangent():
    y = z(Dual(X0, np.array([1.0, 0.0])))
    assert round(float(y.value), 4) == 10.9093
    assert round(float(y.tangent), 4) == 2.9093  # ∂z/∂x0 = 2 + sin(2)
    assert float(z(X0)) == float(y.value)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_notes_example_gradient_matches_torch(mode):
    if mode == "reverse":
        pytest.importorskip("biaslab.scratch.autodiff")
    g = gradient(z, X0, mode=mode)
    assert g.shape == (2,)
    np.testing.assert_array_equal(np.round(g, 4), [2.9093, 11.5839])
    xt = _t(X0).requires_grad_(True)
    z(xt).backward()  # the generic z runs on torch tensors as well
    np.testing.assert_allclose(g, xt.grad.numpy(), rtol=0, atol=1e-12)


# --- jacobian: forward == reverse == torch -----------------------------------------------------
VECTOR_FUNCTIONS = {  # name: (generic f for duals/Tensors, the same f for torch), R^3 -> R^m
    "polar_like": (
        lambda x: stack([x[0] * cos(x[1]) * x[2], x[0] * sin(x[1]) + x[2] ** 2]),
        lambda x: torch.stack([x[0] * torch.cos(x[1]) * x[2], x[0] * torch.sin(x[1]) + x[2] ** 2]),
    ),
    "activations": (
        lambda x: stack([tanh(x[0] * x[1]), sigmoid(x[2] - x[0]), exp(x[1]) / (1.0 + x[2] ** 2)]),
        lambda x: torch.stack(
            [torch.tanh(x[0] * x[1]), torch.sigmoid(x[2] - x[0]), torch.exp(x[1]) / (1 + x[2] ** 2)]
        ),
    ),
    "products_and_logs": (
        lambda x: stack([x[0] * x[1] * x[2], log(x[0] ** 2 + 1.0) - x[1] / x[2]]),
        lambda x: torch.stack([x[0] * x[1] * x[2], torch.log(x[0] ** 2 + 1) - x[1] / x[2]]),
    ),
    "relu_mix": (
        lambda x: stack([relu(x[0] - x[1]) * x[2], relu(x[1]) + sin(x[2])]),
        lambda x: torch.stack([torch.relu(x[0] - x[1]) * x[2], torch.relu(x[1]) + torch.sin(x[2])]),
    ),
}


@pytest.mark.parametrize("name", sorted(VECTOR_FUNCTIONS))
def test_jacobian_forward_matches_torch(name):
    f, f_torch = VECTOR_FUNCTIONS[name]
    for _ in range(3):
        x = RNG.uniform(0.3, 1.5, size=3) * RNG.choice([-1.0, 1.0], size=3)
        J = jacobian(f, x)
        J_torch = torch.autograd.functional.jacobian(f_torch, _t(x)).numpy()
        assert J.shape == J_torch.shape
        np.testing.assert_allclose(J, J_torch, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", sorted(VECTOR_FUNCTIONS))
def test_jacobian_forward_matches_reverse(name):
    pytest.importorskip("biaslab.scratch.autodiff")
    f, _ = VECTOR_FUNCTIONS[name]
    for _ in range(3):
        x = RNG.uniform(0.3, 1.5, size=3) * RNG.choice([-1.0, 1.0], size=3)
        J_fwd, J_rev = jacobian(f, x, mode="forward"), jacobian(f, x, mode="reverse")
        assert J_fwd.shape == J_rev.shape
        np.testing.assert_allclose(J_fwd, J_rev, rtol=0, atol=1e-12)
    g_fwd, g_rev = gradient(z, X0, mode="forward"), gradient(z, X0, mode="reverse")
    np.testing.assert_allclose(g_fwd, g_rev, rtol=0, atol=1e-12)


MODES = ["forward"] + (["reverse"] if HAVE_REVERSE else [])


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_linear_map_list_output_and_constants(mode):
    A = RNG.normal(size=(4, 3))
    J = jacobian(lambda x: A @ x, RNG.normal(size=3), mode=mode)
    np.testing.assert_allclose(J, A, rtol=1e-15)
    J = jacobian(lambda x: [x[0] * x[1], 3.0], np.array([2.0, 5.0]), mode=mode)  # list: stacked
    np.testing.assert_array_equal(J, [[5.0, 2.0], [0.0, 0.0]])
    np.testing.assert_array_equal(gradient(lambda x: 3.0, np.array([2.0, 5.0]), mode=mode), [0, 0])


def test_reverse_mode_refuses_duals():
    pytest.importorskip("biaslab.scratch.autodiff")
    with pytest.raises(TypeError):
        jacobian(z, Dual(X0, np.ones(2)), mode="reverse")


def test_errors():
    with pytest.raises(ValueError, match="mode"):
        jacobian(z, X0, mode="sideways")
    with pytest.raises(ValueError, match="scalar"):
        gradient(lambda x: x * 2.0, X0)
    with pytest.raises(ValueError, match="1-D"):
        jacobian(z, np.ones((2, 2)))


# --- hessian: the Jacobian of the gradient -----------------------------------------------------
def test_hessian_of_quadratic_is_diagonal():
    H = hessian(lambda x: x[0] ** 2 + 3 * x[1] ** 2, np.array([0.3, -1.7]))
    np.testing.assert_allclose(H, np.diag([2.0, 6.0]), rtol=0, atol=1e-14)


def test_hessian_of_notes_example_matches_torch():
    H = hessian(z, X0)
    H_torch = torch.autograd.functional.hessian(z, _t(X0)).numpy()
    np.testing.assert_allclose(H, H_torch, rtol=0, atol=1e-10)
    np.testing.assert_allclose(H, H.T, rtol=0, atol=1e-12)
    np.testing.assert_allclose(H, [[0.0, np.cos(2.0)], [np.cos(2.0), 12.0 - np.sin(2.0)]])


def test_hessian_equals_jacobian_of_gradient_and_of_a_quadratic_form():
    Q = RNG.normal(size=(3, 3))
    x = RNG.normal(size=3)
    H = hessian(lambda x: x @ (Q @ x), x)  # x^T Q x -> Q + Q^T
    np.testing.assert_allclose(H, Q + Q.T, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(hessian(z, X0), jacobian(lambda x: gradient(z, x), X0), rtol=0)


SCALAR_FUNCTIONS = [  # generic: each also runs on torch tensors via their methods
    z,
    lambda x: x[0] * x[1] * x[2] + exp(x[0] * x[2]) - x[1] ** 2 / (1.0 + x[2] ** 2),
    lambda x: sin(x[0] * x[1]) * cos(x[2]) + tanh(x[0] - x[2]) + sigmoid(x[1]) * x[0],
    lambda x: log(1.0 + x[0] ** 2 + x[1] ** 2) * (x[2] ** 3 - x[0]),
    lambda x: ((x * x).sum()) ** 0.5 + 2.0 ** (x[1] * x[2]),
]


@settings(max_examples=50, deadline=None)
@given(
    index=st.integers(0, len(SCALAR_FUNCTIONS) - 1),
    point=st.lists(st.floats(-2.0, 2.0, allow_nan=False), min_size=3, max_size=3),
)
def test_hessian_property_symmetric_and_matches_torch(index, point):
    f = SCALAR_FUNCTIONS[index]
    x = np.array(point[:2] if f is z else point, dtype=np.float64)
    if index == 4 and np.linalg.norm(x) < 1e-3:
        x = x + 0.5  # ‖x‖ has no second derivative at 0
    H = hessian(f, x)
    assert H.shape == (x.size, x.size)
    scale = 1.0 + np.abs(H).max()
    np.testing.assert_allclose(H, H.T, rtol=0, atol=1e-12 * scale)
    H_torch = torch.autograd.functional.hessian(f, _t(x)).numpy()
    np.testing.assert_allclose(H, H_torch, rtol=0, atol=1e-10 * scale)
    g_torch = torch.func.grad(f)(_t(x)).numpy()
    for mode in MODES:
        np.testing.assert_allclose(gradient(f, x, mode=mode), g_torch, rtol=0, atol=1e-12 * scale)


def test_scratch_dual_files_do_not_import_torch():
    src = pathlib.Path(__file__).parents[2] / "src" / "biaslab" / "scratch"
    for name in ["dual.py", "functions.py"]:
        text = (src / name).read_text()
        assert "import torch" not in text and "from torch" not in text, name
