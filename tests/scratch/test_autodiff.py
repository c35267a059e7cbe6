"""Unit tests for the NumPy reverse-mode engine, checked against torch.autograd in float64."""

import ast
import inspect
import pathlib
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from biaslab.scratch.autodiff import (
    Tensor,
    log_softmax,
    no_grad,
    softmax,
    softmax_cross_entropy,
    stack,
    unbroadcast,
)
from biaslab.scratch.gradcheck import check_gradients, numerical_gradient

RNG = np.random.default_rng(0)


def _rand(shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, size=shape)


def compare_with_torch(fn_ours, fn_torch, *arrays, tol=1e-12):
    """Run ``fn`` on both engines, contract the output with random weights, compare.

    Checks the forward values and the gradient of every input.
    """
    ours = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    out_ours, out_theirs = fn_ours(*ours), fn_torch(*theirs)
    assert out_ours.shape == tuple(out_theirs.shape)
    np.testing.assert_allclose(out_ours.data, out_theirs.detach().numpy(), rtol=tol, atol=tol)
    w = RNG.uniform(-1, 1, size=out_ours.shape)
    (out_ours * w).sum().backward()
    (out_theirs * torch.from_numpy(w)).sum().backward()
    for t_ours, t_theirs in zip(ours, theirs):
        expected = t_theirs.grad.numpy()
        assert t_ours.grad.shape == expected.shape
        assert t_ours.grad.dtype == np.float64
        scale = max(1.0, np.abs(expected).max(initial=0.0))
        np.testing.assert_allclose(t_ours.grad, expected, rtol=0, atol=tol * scale)
    return out_ours


# --------------------------------------------------------------------- basics
def test_construction_and_attributes():
    t = Tensor([[1, 2, 3], [4, 5, 6]])
    assert t.data.dtype == np.float64 and t.dtype == np.float64
    assert t.shape == (2, 3) and t.ndim == 2 and t.size == 6
    assert t.grad is None and t.op == "leaf" and not t.requires_grad and t.is_leaf
    assert t.numpy() is t.data
    assert Tensor(2.5).item() == 2.5
    f32 = np.ones(3, dtype=np.float32)
    assert Tensor(f32).data is f32  # floats are kept as given
    assert Tensor(np.array([True, False])).dtype == np.float64


def test_repr():
    x = Tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "Tensor([1., 2.], requires_grad=True)"
    y = x * 2
    assert repr(y) == "Tensor([2., 4.], op='mul', requires_grad=True)"
    assert "dtype=float32" in repr(Tensor(np.zeros(2, dtype=np.float32)))


def test_op_names():
    x = Tensor(np.ones((2, 2)), requires_grad=True)
    assert (x + 1).op == "add" and (x - 1).op == "sub" and (1 - x).op == "sub"
    assert (x * 2).op == "mul" and (x / 2).op == "div" and (-x).op == "neg"
    assert (x @ x).op == "matmul" and (x**2).op == "pow" and (2**x).op == "pow"
    for name in ("exp", "log", "sin", "cos", "tanh", "sigmoid", "relu"):
        assert getattr(x, name)().op == name
    assert x.sum().op == "sum" and x.mean().op == "mean" and x[0].op == "index"
    assert x.reshape(4).op == "reshape" and x.T.op == "transpose"
    assert softmax(x).op == "softmax" and log_softmax(x).op == "log_softmax"
    assert x.cross_entropy([0, 1]).op == "cross_entropy" and stack([x, x]).op == "stack"


def test_unbroadcast_helper():
    g = np.ones((2, 3, 4))
    assert unbroadcast(g, (3, 4)).shape == (3, 4) and np.all(unbroadcast(g, (3, 4)) == 2)
    assert unbroadcast(g, (3, 1)).shape == (3, 1) and np.all(unbroadcast(g, (3, 1)) == 8)
    assert unbroadcast(g, ()).shape == () and unbroadcast(g, ()) == 24
    assert unbroadcast(g, (2, 3, 4)) is g


# --------------------------------------------------------- elementwise ops
UNARY = {
    "exp": (lambda t: t.exp(), torch.exp, (-3, 3)),
    "log": (lambda t: t.log(), torch.log, (0.1, 5)),
    "sin": (lambda t: t.sin(), torch.sin, (-4, 4)),
    "cos": (lambda t: t.cos(), torch.cos, (-4, 4)),
    "tanh": (lambda t: t.tanh(), torch.tanh, (-4, 4)),
    "sigmoid": (lambda t: t.sigmoid(), torch.sigmoid, (-40, 40)),
    "relu": (lambda t: t.relu(), torch.relu, (-2, 2)),
    "neg": (lambda t: -t, torch.neg, (-2, 2)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", [(), (5,), (3, 4)])
def test_unary_ops_match_torch(name, shape):
    ours, theirs, (low, high) = UNARY[name]
    compare_with_torch(ours, theirs, _rand(shape, low, high))


def test_relu_subgradient_at_zero_is_zero():
    x = Tensor([-1.0, 0.0, 2.0], requires_grad=True)
    x.relu().sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 0.0, 1.0])


def test_sigmoid_no_overflow():
    x = Tensor([-1000.0, 0.0, 1000.0], requires_grad=True)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        y = x.sigmoid()
        y.sum().backward()
    np.testing.assert_allclose(y.data, [0.0, 0.5, 1.0])
    np.testing.assert_allclose(x.grad, [0.0, 0.25, 0.0])


BROADCAST_PAIRS = [
    ((3, 1), (1, 4)),
    ((5,), (2, 5)),
    ((2, 5), (5,)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((2, 3), (2, 3)),
    ((4, 1, 3), (2, 1)),
]
BINARY = {
    "add": (lambda a, b: a + b, False),
    "sub": (lambda a, b: a - b, False),
    "mul": (lambda a, b: a * b, False),
    "div": (lambda a, b: a / b, True),
    "pow": (lambda a, b: a**b, True),  # Tensor ** Tensor, positive base
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize(("shape_a", "shape_b"), BROADCAST_PAIRS)
def test_binary_ops_broadcast_match_torch(name, shape_a, shape_b):
    fn, positive = BINARY[name]
    a = _rand(shape_a, 0.5, 2.0) if name == "pow" else _rand(shape_a)
    b = _rand(shape_b, 0.5, 2.0) if positive else _rand(shape_b)
    out = compare_with_torch(fn, fn, a, b)
    assert out.shape == np.broadcast_shapes(shape_a, shape_b)


SCALAR_FORMS = [
    lambda x: x + 2.0,
    lambda x: 2.0 + x,
    lambda x: x - 3,
    lambda x: 3 - x,
    lambda x: x * 1.5,
    lambda x: 1.5 * x,
    lambda x: x / 4.0,
    lambda x: 4.0 / x,
    lambda x: x**2,
    lambda x: x**3,
    lambda x: x**0.5,
    lambda x: x**-1.5,
    lambda x: x**0,
    lambda x: 2.0**x,
]


@pytest.mark.parametrize("form", range(len(SCALAR_FORMS)))
def test_python_scalars_on_either_side(form):
    fn = SCALAR_FORMS[form]
    compare_with_torch(fn, fn, _rand((3, 2), 0.5, 2.0))


def test_integer_power_of_negative_base():
    compare_with_torch(lambda x: x**3, lambda x: x**3, _rand((4,), -2.0, -0.5))


def test_numpy_arrays_on_either_side():
    w = _rand((2, 3))
    x = Tensor(_rand((2, 3)), requires_grad=True)
    for y in (w * x, x * w, w + x, w - x, w / (x * x + 1), x @ w.T, w.T @ x):
        assert isinstance(y, Tensor) and y.requires_grad
    (w * x).sum().backward()
    np.testing.assert_allclose(x.grad, w)


MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((4,), (4,)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((2, 3, 4), (4, 5)),
    ((4, 5), (2, 5, 3)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((4,), (2, 4, 5)),
    ((2, 3, 4), (4,)),
]


@pytest.mark.parametrize(("shape_a", "shape_b"), MATMUL_SHAPES)
def test_matmul_shapes_match_torch(shape_a, shape_b):
    out = compare_with_torch(lambda a, b: a @ b, torch.matmul, _rand(shape_a), _rand(shape_b))
    assert out.shape == np.matmul(np.zeros(shape_a), np.zeros(shape_b)).shape


def test_matmul_rejects_scalars():
    with pytest.raises(ValueError, match="1-D"):
        Tensor(2.0) @ Tensor([1.0])


# --------------------------------------------------------------- reductions
AXES = [None, 0, 1, -1, (0, 2), (-1, -3), (1,), (0, 1, 2)]


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_mean_match_torch(reduction, axis, keepdims):
    def ours(x):
        return getattr(x, reduction)(axis=axis, keepdims=keepdims)

    def theirs(x):
        dim = tuple(range(x.ndim)) if axis is None else axis
        return getattr(x, reduction)(dim=dim, keepdim=keepdims)

    out = compare_with_torch(ours, theirs, _rand((2, 3, 4)))
    assert out.shape == np.zeros((2, 3, 4)).sum(axis=axis, keepdims=keepdims).shape


def test_reduction_of_a_scalar_and_bad_axes():
    x = Tensor(3.0, requires_grad=True)
    x.sum().backward()
    assert x.grad == 1.0
    with pytest.raises(ValueError, match="out of bounds"):
        Tensor(np.ones((2, 3))).sum(axis=2)
    with pytest.raises(ValueError, match="repeated"):
        Tensor(np.ones((2, 3))).mean(axis=(0, -2))


# ---------------------------------------------------------- shape and index
SHAPE_FORMS = [
    (lambda x: x.reshape(3, 8), lambda x: x.reshape(3, 8)),
    (lambda x: x.reshape((4, -1)), lambda x: x.reshape(4, -1)),
    (lambda x: x.reshape(24), lambda x: x.reshape(24)),
    (lambda x: x.transpose(), lambda x: x.permute(2, 1, 0)),
    (lambda x: x.transpose(2, 0, 1), lambda x: x.permute(2, 0, 1)),
    (lambda x: x.transpose((1, 0, 2)), lambda x: x.permute(1, 0, 2)),
    (lambda x: x.T, lambda x: x.permute(2, 1, 0)),
    (lambda x: x.reshape(6, 4).T, lambda x: x.reshape(6, 4).T),
]


@pytest.mark.parametrize("form", range(len(SHAPE_FORMS)))
def test_reshape_transpose_match_torch(form):
    ours, theirs = SHAPE_FORMS[form]
    compare_with_torch(ours, theirs, _rand((2, 3, 4)))


INDEXES = [
    1,
    -1,
    (1, 2),
    slice(1, 3),
    slice(0, 3, 2),
    (slice(None), 2),
    (slice(None), slice(1, 4, 2)),
    np.array([0, 0, 2, 0]),  # repeated indices must accumulate
    [2, 2, 1],
    (slice(None), np.array([3, 3, 0])),
    (np.array([0, 2, 2]), np.array([1, 1, 3])),
    np.array([[0, 1], [1, 1]]),
    np.array([True, False, True]),
    "full_mask",
    (Ellipsis, 1),
    (None, 0),
]


@pytest.mark.parametrize("k", range(len(INDEXES)))
def test_indexing_matches_torch(k):
    x = _rand((3, 4))
    index = INDEXES[k]
    if isinstance(index, str):
        index = x > 0

    def to_torch(i):
        return torch.from_numpy(i) if isinstance(i, np.ndarray) else i

    torch_index = tuple(map(to_torch, index)) if isinstance(index, tuple) else to_torch(index)
    compare_with_torch(lambda t: t[index], lambda t: t[torch_index], x)


def test_repeated_index_accumulates():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 0, 0, 2]].sum().backward()
    np.testing.assert_array_equal(x.grad, [3.0, 0.0, 1.0])


def test_stack_matches_torch():
    for axis in (0, 1, 2, -1, -3):
        compare_with_torch(
            lambda a, b, c, axis=axis: stack([a, b, c], axis=axis),
            lambda a, b, c, axis=axis: torch.stack([a, b, c], dim=axis),
            _rand((2, 3)),
            _rand((2, 3)),
            _rand((2, 3)),
        )


# ---------------------------------------------------- softmax and friends
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("offset", [0.0, 1000.0])
def test_softmax_log_softmax_match_torch(axis, offset):
    x = _rand((3, 4)) * 3 + offset
    compare_with_torch(lambda t: softmax(t, axis), lambda t: torch.softmax(t, dim=axis), x)
    compare_with_torch(lambda t: log_softmax(t, axis), lambda t: torch.log_softmax(t, dim=axis), x)
    compare_with_torch(lambda t: t.softmax(axis), lambda t: torch.softmax(t, dim=axis), x)
    compare_with_torch(lambda t: t.log_softmax(axis), lambda t: torch.log_softmax(t, dim=axis), x)


@pytest.mark.parametrize(("n", "c"), [(1, 2), (5, 3), (8, 10)])
def test_cross_entropy_matches_torch(n, c):
    logits = _rand((n, c)) * 3
    targets = RNG.integers(0, c, size=n)
    t_targets = torch.from_numpy(targets)
    compare_with_torch(
        lambda z: softmax_cross_entropy(z, targets), lambda z: F.cross_entropy(z, t_targets), logits
    )
    compare_with_torch(
        lambda z: z.cross_entropy(list(targets)), lambda z: F.cross_entropy(z, t_targets), logits
    )


def test_cross_entropy_large_logits_are_stable():
    logits = _rand((4, 5)) + 1000.0
    logits[0, 2] = 1e4
    targets = np.array([1, 0, 4, 4])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        ours = Tensor(logits, requires_grad=True)
        loss = softmax_cross_entropy(ours, targets)
        loss.backward()
    assert np.isfinite(loss.item()) and np.all(np.isfinite(ours.grad))
    theirs = torch.tensor(logits, requires_grad=True)
    expected = F.cross_entropy(theirs, torch.from_numpy(targets))
    expected.backward()
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-12)
    np.testing.assert_allclose(ours.grad, theirs.grad.numpy(), atol=1e-14)
    np.testing.assert_allclose(ours.grad.sum(axis=1), 0.0, atol=1e-15)


def test_cross_entropy_validates_inputs():
    logits = Tensor(np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"\(N, C\)"):
        softmax_cross_entropy(logits, [0, 1])
    with pytest.raises(ValueError, match="lie in"):
        softmax_cross_entropy(logits, [0, 1, 4])
    with pytest.raises(ValueError, match="integer"):
        softmax_cross_entropy(logits, [0.5, 1, 2])
    assert softmax_cross_entropy(logits, Tensor([0, 1, 3])).item() == pytest.approx(np.log(4))


# ------------------------------------------------------------ the engine
def test_node_used_twice_gets_summed_gradient():
    x = Tensor([1.0, -2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad, 2 * x.data)
    a = Tensor(3.0, requires_grad=True)
    (a + a).backward()
    assert a.grad == 2.0


def test_diamond_graph_matches_torch():
    def f(a):
        b = a.sin() * 2
        c = b * b + b.exp()
        return (c / (b * b + 1) + a * b).sum()

    compare_with_torch(f, f, _rand((3, 2)))


def test_intermediate_nodes_get_their_adjoint():
    x = Tensor(2.0, requires_grad=True)
    y = x * 3  # dy/dx = 3
    z = y * y  # dz/dy = 2y = 12
    z.backward()
    assert z.grad == 1.0 and y.grad == 12.0 and x.grad == 36.0


def test_backward_needs_scalar_or_explicit_grad():
    x = Tensor(_rand((2, 3)), requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="scalar"):
        y.backward()
    y.backward(np.ones((2, 3)))
    np.testing.assert_allclose(x.grad, 2.0)
    with pytest.raises(ValueError, match="shape"):
        (x * 2).backward(np.ones(3))
    with pytest.raises(RuntimeError, match="does not require grad"):
        Tensor(1.0).backward()


def test_explicit_grad_matches_torch():
    x = _rand((2, 3))
    g = _rand((2, 3))
    ours = Tensor(x, requires_grad=True)
    ours.tanh().backward(g)
    theirs = torch.tensor(x, requires_grad=True)
    theirs.tanh().backward(torch.from_numpy(g))
    np.testing.assert_allclose(ours.grad, theirs.grad.numpy(), atol=1e-15)


def test_second_backward_raises_after_graph_is_freed():
    x = Tensor(2.0, requires_grad=True)
    y = (x * x).sin()
    y.backward()
    first = x.grad.copy()
    with pytest.raises(RuntimeError, match="graph was already freed.*retain_graph=True"):
        y.backward()
    np.testing.assert_array_equal(x.grad, first)  # the failed call changed nothing
    z = (x * x) * 3  # a fresh graph works and accumulates into the leaf
    z.backward()
    np.testing.assert_allclose(x.grad, first + 6 * x.data)


def test_retain_graph_allows_second_backward_that_accumulates():
    x = Tensor(2.0, requires_grad=True)
    y = (x * x).sin()
    y.backward(retain_graph=True)
    once = x.grad.copy()
    y.backward(retain_graph=True)
    np.testing.assert_allclose(x.grad, 2 * once)
    y.backward()  # the last one may free the graph
    np.testing.assert_allclose(x.grad, 3 * once)
    with pytest.raises(RuntimeError, match="already freed"):
        y.backward()


def test_zero_grad_and_leaf_accumulation_like_torch():
    x = Tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * 4).sum().backward()
    np.testing.assert_allclose(x.grad, [7.0, 7.0])
    x.zero_grad()
    assert x.grad is None
    (x * 5).sum().backward()
    np.testing.assert_allclose(x.grad, [5.0, 5.0])


def test_requires_grad_propagation_and_no_grad():
    a = Tensor([1.0, 2.0], requires_grad=True)
    c = Tensor([3.0, 4.0])
    assert (a * c).requires_grad and not (c * c).requires_grad
    assert (c * c).is_leaf and (c * c)._backward is None  # no graph built
    with no_grad():
        y = (a * a).exp()
        with no_grad():
            pass
        z = a + 1  # still inside the outer no_grad
    assert not y.requires_grad and y.is_leaf and not z.requires_grad
    assert (a * 2).requires_grad  # re-enabled on exit
    with pytest.raises(RuntimeError):
        y.sum().backward()
    (a * c + c).sum().backward()
    np.testing.assert_allclose(a.grad, c.data)
    assert c.grad is None  # constants never get a gradient
    assert a.detach().requires_grad is False


def test_float32_is_kept_in_values_and_gradients():
    x = Tensor(np.array([0.5, 1.5], dtype=np.float32), requires_grad=True)
    y = (x * 2.0 + 1 - x / 3.0) ** 2
    y = (y.exp().log() @ np.ones(2) + softmax_cross_entropy(x.reshape(1, 2), [1])).sum()
    assert y.dtype == np.float32
    y.backward()
    assert x.grad.dtype == np.float32


def test_100k_node_chain_backward_never_recurses():
    """backward walks the graph with its own stack: a Python recursion limit far below the
    chain's length is never reached (its speed is a benchmark's business, not a test's)."""
    x0 = Tensor(1.0, requires_grad=True)
    x = x0
    for _ in range(100_000):
        x = x * 1.0000001
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 100)  # room for backward's own few calls only
    try:
        x.backward()
    finally:
        sys.setrecursionlimit(limit)
    assert x0.grad == pytest.approx(1.0000001**100_000, rel=1e-9)


# ------------------------------------------------------------- gradcheck
def test_numerical_gradient_of_known_function():
    x = np.array([[0.3, -1.2], [2.0, 0.7]])
    grad = numerical_gradient(lambda v: float(np.sum(np.sin(v) * v)), x)
    np.testing.assert_allclose(grad, np.cos(x) * x + np.sin(x), atol=1e-8)
    assert x[0, 0] == 0.3  # input untouched
    assert numerical_gradient(lambda v: float(v**3), np.array(2.0)) == pytest.approx(12.0)


def test_check_gradients_reports_small_errors():
    report = check_gradients(
        lambda w, b: softmax_cross_entropy(w @ np.ones((3, 4)) + b, [0, 3]),
        {"w": _rand((2, 3)), "b": _rand((4,))},
    )
    assert set(report) == {"w", "b"}
    for entry in report.values():
        assert entry["max_abs_error"] < 1e-8 and entry["max_rel_error"] < 1e-8
        assert entry["analytic"].shape == entry["numerical"].shape


def test_check_gradients_catches_a_wrong_gradient():
    def wrong(x):
        out = x.exp()
        out._backward = lambda g: (2 * g * out.data,)  # deliberately off by a factor 2
        return out.sum()

    report = check_gradients(wrong, {"x": np.array([0.1, 0.2])})
    assert report["x"]["max_rel_error"] > 0.4


# ----------------------------------------------------- NumPy only, no torch
def test_scratch_package_never_imports_torch():
    root = pathlib.Path(__file__).resolve().parents[2] / "src" / "biaslab" / "scratch"
    files = sorted(root.rglob("*.py"))
    assert root / "autodiff.py" in files
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Call) and node.args:  # __import__("torch"), import_module
                first = node.args[0]
                is_str = isinstance(first, ast.Constant) and isinstance(first.value, str)
                names = [first.value] if is_str else []
                names = names if "import" in ast.unparse(node.func) else []
            else:
                continue
            assert not any(n == "torch" or n.startswith("torch.") for n in names), (
                f"{path.name} imports torch"
            )
