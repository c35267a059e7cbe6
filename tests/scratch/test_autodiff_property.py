"""Property tests: random expression graphs, our NumPy engine vs torch.autograd (float64).

Hypothesis draws a *program*: a list of instructions over numbered registers,
e.g. ``("mul", 3, 5)`` or ``("sum", 4, (0, -1), True)``. A tiny interpreter
(:func:`execute`) runs the same program on either backend, and the loss is
``sum_r (register_r * W_r).sum()`` over every register, so every node of the
graph receives a non-trivial adjoint. We compare the loss and the adjoint of
every register (leaves and intermediates) with torch.

Coverage is guaranteed by construction, not left to chance: every program's
schedule contains every operation in :data:`OPS` once plus one binary op for
every broadcasting kind in :data:`BCAST` (then extra random steps), shuffled.

Safe domains are built into the programs with the same ops on both backends:
log, division and fractional powers act on ``x*x + 0.5``; the Tensor**Tensor
exponent goes through ``sin``; a static bound on every register's magnitude
decides when to rescale an operand (``x * (2 / bound)``) so exp and friends
never overflow.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from biaslab.scratch.autodiff import (
    Tensor,
    log_softmax,
    softmax,
    softmax_cross_entropy,
    stack,
)
from biaslab.scratch.gradcheck import check_gradients

OPS = (
    "add",
    "sub",
    "mul",
    "div",
    "neg",
    "matmul",
    "pow",
    "pow_tensor",
    "exp",
    "log",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "sum",
    "mean",
    "reshape",
    "transpose",
    "index",
    "cross_entropy",
    "softmax",
    "log_softmax",
    "stack",
)
BINARY = ("add", "sub", "mul", "div", "pow_tensor")
BCAST = ("same", "scalar_tensor", "python_scalar", "leading", "two_sided")
LIMIT = 4.0  # operands with a larger magnitude bound are rescaled first
MAX_NDIM, MAX_SIZE = 4, 36

COVERAGE: Counter = Counter()  # instruction ops and broadcast kinds actually executed
STATS = {"max_abs_diff": 0.0, "max_scaled_diff": 0.0, "programs": 0, "instructions": 0}


@dataclass(frozen=True)
class Const:
    """A Python scalar operand (exercises __radd__, __rsub__, __rtruediv__, __rpow__, ...)."""

    value: float


@dataclass
class Program:
    instrs: list
    shapes: list  # shape of every register
    input_shapes: list
    labels: list  # schedule items, e.g. "matmul" or "bcast:two_sided"
    seed: int
    inputs: list = field(default_factory=list)
    weights: list = field(default_factory=list)

    def materialize(self):
        rng = np.random.default_rng(self.seed)
        self.inputs = [rng.uniform(0.2, 2.0, s) * rng.choice([-1.0, 1.0], s) for s in self.input_shapes]
        self.weights = [rng.uniform(-1.0, 1.0, s) for s in self.shapes]
        return self


# ---------------------------------------------------------------- generator
class Builder:
    """Emits instructions while tracking every register's shape and magnitude bound."""

    def __init__(self, draw):
        self.draw = draw
        self.instrs, self.shapes, self.bounds, self.input_shapes, self.labels = [], [], [], [], []

    def emit(self, instr, shape, bound):
        self.instrs.append(instr)
        self.shapes.append(tuple(shape))
        self.bounds.append(float(bound))
        return len(self.shapes) - 1

    def leaf(self, shape):
        self.input_shapes.append(tuple(shape))
        return self.emit(("leaf", len(self.input_shapes) - 1), shape, 2.0)

    def dims(self, low, high, size_low=1, size_high=3):
        n = self.draw(st.integers(low, high))
        return tuple(self.draw(st.lists(st.integers(size_low, size_high), min_size=n, max_size=n)))

    def bound(self, x):
        return abs(x.value) if isinstance(x, Const) else self.bounds[x]

    def shape(self, x):
        return () if isinstance(x, Const) else self.shapes[x]

    def tame(self, r):
        """Rescale r to magnitude <= 2 if its bound is above LIMIT."""
        b = self.bounds[r]
        return r if b <= LIMIT else self.emit(("mul", r, Const(2.0 / b)), self.shapes[r], 2.0)

    def pick(self, max_ndim=MAX_NDIM):
        """A register (biased to recent ones), reduced to <= max_ndim dims and small size."""
        n = len(self.shapes)
        r = self.draw(st.integers(max(0, n - 5), n - 1) | st.integers(0, n - 1))
        while len(self.shapes[r]) > max_ndim or math.prod(self.shapes[r]) > MAX_SIZE:
            r = self.emit(("mean", r, 0, False), self.shapes[r][1:], self.bounds[r])
        return self.tame(r)

    def operand(self, shape):
        """An operand of exactly ``shape``: an existing register (maybe the same one) or a leaf."""
        same = [i for i, s in enumerate(self.shapes) if s == tuple(shape)]
        if same and self.draw(st.booleans()):
            return self.tame(self.draw(st.sampled_from(same)))
        return self.leaf(shape)

    def positive(self, r):
        """x*x + 0.5 >= 0.5: a safe argument for log, division, fractional powers."""
        r = self.tame(r)
        b = self.bounds[r]
        sq = self.emit(("mul", r, r), self.shapes[r], b * b)
        return self.emit(("add", sq, Const(0.5)), self.shapes[r], b * b + 0.5)

    def at_least_1d(self, r):
        return r if self.shapes[r] else self.emit(("reshape", r, (1,), False), (1,), self.bounds[r])

    # ------------------------------------------------------------ operations
    def binary(self, op, kind):
        a = self.pick(max_ndim=MAX_NDIM - 1)
        s = self.shapes[a]
        m = self.draw(st.integers(2, 3))
        if kind == "same":
            b = self.operand(s)
        elif kind == "scalar_tensor":
            b = self.operand(())
        elif kind == "python_scalar":
            b = Const(self.draw(st.sampled_from([0.5, 1.5, 2, 3.0, -0.75, -2.0])))
        elif kind == "leading":
            b = self.operand(s[1:]) if s and self.draw(st.booleans()) else self.leaf((m, *s))
        else:  # two_sided: (..., n, 1) against (1, m) or (m,)
            a = self.emit(("reshape", a, (*s, 1), True), (*s, 1), self.bounds[a])
            b = self.leaf((1,) * self.draw(st.integers(0, 1)) + (m,))
        lhs, rhs = (b, a) if self.draw(st.booleans()) else (a, b)
        if op == "div" and not isinstance(rhs, Const):
            rhs = self.positive(rhs)
        if op == "pow_tensor":  # positive base ** sin(exponent); Python scalars only as base
            lhs, rhs = (b, a) if isinstance(b, Const) else (lhs, rhs)
            lhs = Const(abs(lhs.value)) if isinstance(lhs, Const) else self.positive(lhs)
            rhs = self.emit(("sin", rhs), self.shapes[rhs], 1.0)
        b1, b2 = self.bound(lhs), self.bound(rhs)
        bound = {
            "add": b1 + b2,
            "sub": b1 + b2,
            "mul": b1 * b2,
            "div": b1 / min(0.5, b2),
            "pow_tensor": max(b1, 2.0),
        }[op]
        shape = np.broadcast_shapes(self.shape(lhs), self.shape(rhs))
        return self.emit((op, lhs, rhs), shape, bound)

    def unary(self, op):
        if op == "log":
            r = self.positive(self.pick())
            return self.emit(("log", r), self.shapes[r], max(math.log(self.bounds[r]), 0.7))
        r = self.pick()
        b = self.bounds[r]
        bound = {"neg": b, "exp": math.exp(b), "relu": b}.get(op, 1.0)
        return self.emit((op, r), self.shapes[r], bound)

    def power(self):
        p = self.draw(st.sampled_from([2, 3, 2.0, 0.5, -1.0, 1.5, -0.5, 0]))
        r = self.pick()
        if p not in (2, 3):  # fractional/negative/zero exponents need a positive base
            r = self.positive(r)
        b = self.bounds[r]
        return self.emit(("pow", r, p), self.shapes[r], b**p if p > 0 else 2.0**-p)

    def reduction(self, op):
        r = self.pick()
        s, d = self.shapes[r], len(self.shapes[r])
        choice = self.draw(st.sampled_from(["none", "int", "tuple"])) if d else "none"
        if choice == "int":
            axis = self.draw(st.integers(-d, d - 1))
        elif choice == "tuple":
            axes = self.draw(st.lists(st.integers(0, d - 1), min_size=1, max_size=d, unique=True))
            axis = tuple(a - d if self.draw(st.booleans()) else a for a in axes)
        else:
            axis = None
        keepdims = self.draw(st.booleans())
        out = np.zeros(s).sum(axis=axis, keepdims=keepdims).shape
        count = math.prod(s) // math.prod(out)  # elements summed into each output
        bound = self.bounds[r] * (count if op == "sum" else 1)
        return self.emit((op, r, axis, keepdims), out, bound)

    def reshape(self):
        r = self.pick()
        size = math.prod(self.shapes[r])
        primes, n, f = [], size, 2
        while n > 1:
            while n % f == 0:
                primes.append(f)
                n //= f
            f += 1
        ndim = self.draw(st.integers(1 if size > 1 else 0, 3))
        shape = [1] * ndim
        for p in primes:
            shape[self.draw(st.integers(0, ndim - 1))] *= p
        final = tuple(shape)
        if ndim and self.draw(st.booleans()):
            shape[self.draw(st.integers(0, ndim - 1))] = -1
        return self.emit(("reshape", r, tuple(shape), self.draw(st.booleans())), final, self.bounds[r])

    def transpose(self):
        r = self.pick()
        s = self.shapes[r]
        if len(s) < 2:
            n = math.prod(s)
            new = (1, n) if self.draw(st.booleans()) else (n, 1)
            r = self.emit(("reshape", r, new, False), new, self.bounds[r])
            s = new
        style = self.draw(st.sampled_from(["T", "args", "tuple"]))
        perm = (
            tuple(reversed(range(len(s))))
            if style == "T"
            else tuple(self.draw(st.permutations(range(len(s)))))
        )
        return self.emit(("transpose", r, perm, style), tuple(s[p] for p in perm), self.bounds[r])

    def index(self):
        r = self.at_least_1d(self.pick())
        s = self.shapes[r]
        kinds = ["int", "slice", "int_array", "bool_mask"] + (["pair"] if len(s) >= 2 else [])
        kind = self.draw(st.sampled_from(kinds))
        axis1 = len(s) >= 2 and self.draw(st.booleans())  # index along axis 1 instead of 0
        n = s[1] if axis1 else s[0]
        if kind == "int":
            idx = self.draw(st.integers(-n, n - 1))
        elif kind == "slice":
            start = self.draw(st.integers(0, n - 1))
            idx = slice(start, self.draw(st.integers(start + 1, n)), self.draw(st.integers(1, 2)))
        elif kind == "int_array":  # repeated and negative indices included
            idx = np.array(self.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=5)))
        elif kind == "bool_mask":
            full = not axis1 and self.draw(st.booleans())
            shape = s if full else (n,)
            mask = np.array(
                self.draw(st.lists(st.booleans(), min_size=math.prod(shape), max_size=math.prod(shape)))
            ).reshape(shape)
            mask.flat[self.draw(st.integers(0, mask.size - 1))] = True  # never empty
            idx = mask
        else:  # a pair of integer arrays, broadcast together
            length = self.draw(st.integers(1, 4))
            idx = tuple(
                np.array(self.draw(st.lists(st.integers(0, k - 1), min_size=length, max_size=length)))
                for k in s[:2]
            )
            axis1 = False
        if axis1:
            idx = (slice(None), idx)
        return self.emit(("index", r, idx), np.zeros(s)[idx].shape, self.bounds[r])

    def softmax_family(self, op):
        r = self.at_least_1d(self.pick())
        s = self.shapes[r]
        axis = self.draw(st.integers(-len(s), len(s) - 1))
        bound = 1.0 if op == "softmax" else 2 * self.bounds[r] + math.log(s[axis])
        return self.emit((op, r, axis, self.draw(st.booleans())), s, bound)

    def cross_entropy(self):
        r = self.pick()
        if math.prod(self.shapes[r]) < 2:
            leaf = self.leaf((2, 3))
            r = self.emit(("add", r, leaf), np.broadcast_shapes(self.shapes[r], (2, 3)), self.bounds[r] + 2)
        size = math.prod(self.shapes[r])
        c = self.draw(st.sampled_from([k for k in range(2, size + 1) if size % k == 0]))
        r = self.emit(("reshape", r, (size // c, c), False), (size // c, c), self.bounds[r])
        targets = np.array(self.draw(st.lists(st.integers(0, c - 1), min_size=size // c, max_size=size // c)))
        bound = 2 * self.bounds[r] + math.log(c)
        return self.emit(("cross_entropy", r, targets, self.draw(st.booleans())), (), bound)

    def stack(self):
        r = self.pick(max_ndim=MAX_NDIM - 1)
        s = self.shapes[r]
        others = [self.operand(s) for _ in range(self.draw(st.integers(1, 2)))]
        axis = self.draw(st.integers(-len(s) - 1, len(s)))
        regs = (r, *others)
        shape = np.stack([np.zeros(s)] * len(regs), axis=axis).shape
        return self.emit(("stack", regs, axis), shape, max(self.bounds[i] for i in regs))

    def matmul(self):
        a = self.at_least_1d(self.pick(max_ndim=3))
        s = self.shapes[a]
        m, bb = self.draw(st.integers(1, 3)), self.draw(st.integers(1, 2))
        # form -> (shape of the other operand, is the other operand on the left?)
        if len(s) == 1:
            k = s[0]
            forms = {
                "vec_vec": ((k,), False),
                "vec_mat": ((k, m), False),
                "mat_vec": ((m, k), True),
                "batch_vec": ((bb, m, k), True),
                "vec_batch": ((bb, k, m), False),
                "gram": None,
            }
        else:
            n, k = s[-2:]
            batch = tuple(self.draw(st.sampled_from([1, d])) for d in s[:-2])
            forms = {
                "mat_mat": ((k, m), False),
                "left": ((m, n), True),
                "mat_vec": ((k,), False),
                "vec_mat": ((n,), True),
                "batched": ((bb, *batch, k, m), False),
                "gram": None,
            }
        form = self.draw(st.sampled_from(sorted(forms)))
        if form == "gram":  # a^T a: the same register on both sides
            lhs, rhs = a, a
            if len(s) > 1:
                perm = (*range(len(s) - 2), len(s) - 1, len(s) - 2)
                lhs = self.emit(("transpose", a, perm, "args"), tuple(s[p] for p in perm), self.bounds[a])
        else:
            other_shape, other_left = forms[form]
            other = self.operand(other_shape)
            lhs, rhs = (other, a) if other_left else (a, other)
        k = self.shapes[lhs][-1]
        shape = np.matmul(np.zeros(self.shapes[lhs]), np.zeros(self.shapes[rhs])).shape
        bound = k * self.bounds[lhs] * self.bounds[rhs]
        return self.emit(("matmul", lhs, rhs), shape, bound)

    def step(self, op, kind=None):
        self.labels.append(op if kind is None else f"{op}:{kind}")
        if op in BINARY:
            return self.binary(op, kind or self.draw(st.sampled_from(BCAST)))
        if op in ("neg", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu"):
            return self.unary(op)
        if op in ("sum", "mean"):
            return self.reduction(op)
        if op in ("softmax", "log_softmax"):
            return self.softmax_family(op)
        return {
            "matmul": self.matmul,
            "pow": self.power,
            "reshape": self.reshape,
            "transpose": self.transpose,
            "index": self.index,
            "cross_entropy": self.cross_entropy,
            "stack": self.stack,
        }[op]()


@st.composite
def programs(draw, focus=None):
    """Every op and broadcast kind once (or only ``focus``), then 0-3 random extra steps."""
    b = Builder(draw)
    for _ in range(draw(st.integers(1, 2))):
        b.leaf(b.dims(0, 3))
    if focus is None:
        schedule = [(op, None) for op in OPS]
        schedule += [(draw(st.sampled_from(BINARY)), kind) for kind in BCAST]
        schedule = draw(st.permutations(schedule))
    else:
        schedule = [(focus, None)]
    schedule += [(op, None) for op in draw(st.lists(st.sampled_from(OPS), max_size=3))]
    for op, kind in schedule:
        b.step(op, kind)
    seed = draw(st.integers(0, 2**32 - 1))
    return Program(b.instrs, b.shapes, b.input_shapes, b.labels, seed).materialize()


# -------------------------------------------------------------- interpreter
BINOPS = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "pow_tensor": operator.pow,
}


def _torch_index(idx):
    if isinstance(idx, tuple):
        return tuple(_torch_index(i) for i in idx)
    return torch.from_numpy(idx) if isinstance(idx, np.ndarray) else idx


def execute(program, backend, leaves=None, kink=1e-9):
    """Run ``program`` on "ours" or "torch"; returns (loss, registers, near_relu_kinks).

    ``near_relu_kinks`` counts relu inputs with 0 < |x| < kink, where rounding
    differences could flip the subgradient (such examples are discarded).
    """
    is_torch = backend == "torch"
    regs, kinks = [], 0

    def val(x):
        return x.value if isinstance(x, Const) else regs[x]

    for op, *args in program.instrs:
        x = regs[args[0]] if op not in ("leaf", "stack") and not isinstance(args[0], Const) else None
        if op == "leaf":
            arr = program.inputs[args[0]]
            if leaves is not None:
                out = leaves[args[0]]
            elif is_torch:
                out = torch.tensor(arr, dtype=torch.float64, requires_grad=True)
            else:
                out = Tensor(arr.copy(), requires_grad=True)
        elif op in BINOPS:
            out = BINOPS[op](val(args[0]), val(args[1]))
        elif op == "pow":
            out = x ** args[1]
        elif op == "neg":
            out = -x
        elif op in ("exp", "log", "sin", "cos", "tanh", "sigmoid", "relu"):
            if op == "relu":
                v = np.abs(x.detach().numpy() if is_torch else x.data)
                kinks += int(np.count_nonzero((v > 0) & (v < kink)))
            out = getattr(x, op)()
        elif op in ("sum", "mean"):
            axis, keepdims = args[1:]
            if not is_torch:
                out = getattr(x, op)(axis=axis, keepdims=keepdims)
            elif axis is None and not (keepdims and x.ndim):
                out = getattr(x, op)()
            else:
                dim = tuple(range(x.ndim)) if axis is None else axis
                out = getattr(x, op)(dim=dim, keepdim=keepdims)
        elif op == "matmul":
            out = val(args[0]) @ val(args[1])
        elif op == "reshape":
            shape, star = args[1:]
            out = x.reshape(*shape) if star and not is_torch else x.reshape(shape)
        elif op == "transpose":
            perm, style = args[1:]
            if is_torch:
                out = x.permute(perm)
            elif style == "T":
                out = x.T
            else:
                out = x.transpose(*perm) if style == "args" else x.transpose(perm)
        elif op == "index":
            out = x[_torch_index(args[1])] if is_torch else x[args[1]]
        elif op in ("softmax", "log_softmax"):
            axis, method = args[1:]
            if is_torch:
                out = getattr(torch, op)(x, dim=axis)
            elif method:
                out = getattr(x, op)(axis)
            else:
                out = (softmax if op == "softmax" else log_softmax)(x, axis)
        elif op == "cross_entropy":
            targets, method = args[1:]
            if is_torch:
                out = F.cross_entropy(x, torch.from_numpy(targets))
            else:
                out = x.cross_entropy(targets) if method else softmax_cross_entropy(x, targets)
        elif op == "stack":
            items = [regs[i] for i in args[0]]
            out = torch.stack(items, dim=args[1]) if is_torch else stack(items, axis=args[1])
        else:
            raise AssertionError(op)
        assert tuple(out.shape) == program.shapes[len(regs)], (op, out.shape)
        regs.append(out)

    loss = None
    for reg, w in zip(regs, program.weights):
        term = (reg * (torch.from_numpy(w) if is_torch else w)).sum()
        loss = term if loss is None else loss + term
    return loss, regs, kinks


# --------------------------------------------------------------------- tests
@settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(programs())
def test_random_graphs_match_torch(program):
    loss_t, regs_t, kinks_t = execute(program, "torch")
    loss_o, regs_o, kinks_o = execute(program, "ours")
    assume(kinks_t + kinks_o == 0)
    for r in regs_t:
        if not r.is_leaf:
            r.retain_grad()
    loss_t.backward()
    loss_o.backward()

    assert np.isfinite(loss_o.item())
    assert abs(loss_o.item() - loss_t.item()) <= 1e-10 * max(1.0, abs(loss_t.item()))
    expected = [r.grad.numpy() for r in regs_t]
    scale = max(1.0, max(np.abs(g).max(initial=0.0) for g in expected))
    diff = 0.0
    for r, g in zip(regs_o, expected):
        assert r.grad is not None and r.grad.shape == g.shape
        diff = max(diff, float(np.abs(r.grad - g).max(initial=0.0)))
    STATS["max_abs_diff"] = max(STATS["max_abs_diff"], diff)
    STATS["max_scaled_diff"] = max(STATS["max_scaled_diff"], diff / scale)
    STATS["programs"] += 1
    STATS["instructions"] += len(program.instrs)
    COVERAGE.update(ins[0] for ins in program.instrs)
    COVERAGE.update(label.split(":")[1] for label in program.labels if ":" in label)
    assert diff <= 1e-10 * scale, (diff, scale)


@settings(max_examples=25, deadline=None)
@given(programs())
def test_every_program_covers_every_op_and_broadcast_kind(program):
    ops = {ins[0] for ins in program.instrs}
    assert set(OPS) <= ops
    assert set(BCAST) <= {label.split(":")[1] for label in program.labels if ":" in label}


@pytest.mark.parametrize("focus", OPS)
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(data=st.data())
def test_random_graphs_match_finite_differences(focus, data):
    program = data.draw(programs(focus=focus))
    assume(execute(program, "ours", kink=1e-4)[2] == 0)
    assert_matches_finite_differences(program)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(programs())
def test_full_random_graphs_match_finite_differences(program):
    assume(execute(program, "ours", kink=1e-4)[2] == 0)
    assert_matches_finite_differences(program)


def assert_matches_finite_differences(program):
    names = [f"x{i}" for i in range(len(program.inputs))]

    def f(**tensors):
        return execute(program, "ours", leaves=[tensors[n] for n in names])[0]

    report = check_gradients(f, dict(zip(names, program.inputs)))
    scale = max(1.0, max(np.abs(r["analytic"]).max(initial=0.0) for r in report.values()))
    worst = max(r["max_abs_error"] for r in report.values())
    STATS["max_fd_scaled_diff"] = max(STATS.get("max_fd_scaled_diff", 0.0), worst / scale)
    assert worst <= 1e-5 * scale, (worst, scale)


def test_zz_coverage_of_the_torch_comparison():
    """Runs after the property test in file order; every op/broadcast kind was exercised."""
    if not STATS["programs"]:
        pytest.skip("the torch-comparison property test did not run in this session")
    assert set(OPS) <= set(COVERAGE) and set(BCAST) <= set(COVERAGE), COVERAGE
    print(
        f"\n{STATS['programs']} programs, {STATS['instructions']} instructions; "
        f"max |grad diff| vs torch = {STATS['max_abs_diff']:.3e} "
        f"(scaled {STATS['max_scaled_diff']:.3e}); coverage {dict(COVERAGE)}; "
        f"finite differences: max scaled error {STATS.get('max_fd_scaled_diff', 0):.2e}"
    )
