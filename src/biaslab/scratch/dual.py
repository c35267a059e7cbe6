"""Forward-mode automatic differentiation with dual numbers.

A dual number is  a + a'ε  with the rule  ε² = 0.  Put one into a smooth function and the
Taylor series stops after its linear term:

    f(a + a'ε) = f(a) + f'(a) a' ε

so ONE evaluation of f at  x + ẋε  returns the value f(x) and the directional derivative
J(x) ẋ (the "tangent"). Each operation below is that rule for one primitive; the chain rule
needs no code of its own, because every op hands its output tangent to the next op.
``jacobian`` seeds ẋ = e_i for i = 1..n and reads off one column of J per evaluation.

NESTING. ``value`` and ``tangent`` may be duals themselves. With an inner ε1 and an outer ε2,

    x + e_j ε1 + e_i ε2 + 0 ε1ε2   =   Dual(Dual(x, e_j), Dual(e_i, 0))

and f of it carries  ∂²f/∂x_i∂x_j  as the coefficient of ε1ε2 (a "hyper-dual" number). All
rules are written with the generic functions of ``functions.py`` (``cos(a)``, never ``np.cos``),
so a rule applied to the outer level runs the same rules on the inner level.

PERTURBATION CONFUSION, and tags. If two derivative operators both used a bare, nameless ε,
their perturbations could meet in one expression and be mistaken for each other. The classic
case:  d/dx [ x · d/dy (x + y) ]  = 1, but with one shared ε the inner derivative also sees
x's perturbation and returns 2. So every dual carries a ``tag`` naming its ε:

  * ``jacobian`` takes a fresh tag from a counter, so a LATER (inner) operator has a LARGER tag;
  * an op on two duals with different tags treats the larger tag as the outer level and the
    other operand as a constant for it (tangent 0), recursing into its value for the rest;
  * so the largest tag is always on the outside, and an operator reads its derivative from
    the top level only: the tangent of the output if its tag is there, else 0.

Duals built by hand get tag 0, below every operator's tag; nesting them by hand, as in
Dual(Dual(x, 1.0), Dual(1.0, 0.0)), is purely structural: the inner level is ε1, the outer ε2.
"""

from __future__ import annotations

import itertools

import numpy as np

from .functions import cos, exp, log, relu, sigmoid, sin, stack, tanh

__all__ = ["Dual", "gradient", "hessian", "jacobian"]

_tags = itertools.count(1)  # tag 0 is for hand-built duals; operators count up from 1


def _primal(x):
    """The plain number at the bottom of a (possibly nested) dual."""
    while isinstance(x, Dual):
        x = x.value
    return x


class Dual:
    """value + tangent·ε with ε² = 0; value and tangent: arrays of one shape, or Duals."""

    __array_ufunc__ = None  # ndarray * Dual -> Dual.__rmul__, not an array of objects
    _stack_rank = 2  # functions.stack: a Dual outranks a Tensor in a mixed list

    @staticmethod
    def _stack_items(xs, axis: int = 0) -> Dual:
        return _stack_duals(xs, axis)

    def __init__(self, value, tangent=0.0, tag: int = 0):
        self.value = value if isinstance(value, Dual) else np.asarray(value, dtype=float)
        tangent = tangent if isinstance(tangent, Dual) else np.asarray(tangent, dtype=float)
        if np.shape(tangent) != self.shape:  # a scalar tangent means "this in every entry"
            tangent = tangent + np.zeros(self.shape)
            if np.shape(tangent) != self.shape:
                raise ValueError(f"tangent shape {np.shape(tangent)} != value shape {self.shape}")
        self.tangent = tangent
        self.tag = tag

    @property
    def shape(self) -> tuple:
        return np.shape(self.value)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Dual(value={self.value!r}, tangent={self.tangent!r}, tag={self.tag})"

    # --- arithmetic: a and b are Duals, Python numbers or arrays, on either side --------------
    def __add__(self, other):
        return _add(self, other)

    def __radd__(self, other):
        return _add(other, self)

    def __sub__(self, other):
        return _sub(self, other)

    def __rsub__(self, other):
        return _sub(other, self)

    def __mul__(self, other):
        return _mul(self, other)

    def __rmul__(self, other):
        return _mul(other, self)

    def __truediv__(self, other):
        return _div(self, other)

    def __rtruediv__(self, other):
        return _div(other, self)

    def __matmul__(self, other):
        return _matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul(other, self)

    def __neg__(self):
        # -(a + a'ε) = -a + (-a')ε
        return Dual(-self.value, -self.tangent, self.tag)

    def __pow__(self, p):
        if isinstance(p, Dual):  # a^b = exp(b log a), for a > 0
            return exp(p * log(self))
        # (a + a'ε)^p = a^p + p a^(p-1) a' ε          (p a constant)
        a, da = self.value, self.tangent
        return Dual(a**p, p * a ** (p - 1) * da, self.tag)

    def __rpow__(self, c):
        # c^(a + a'ε) = exp((a + a'ε) log c)          (c > 0 a constant)
        return exp(self * log(c))

    # --- elementary functions ------------------------------------------------------------
    def sin(self):
        # sin(a + a'ε) = sin a + cos(a) a' ε
        return Dual(sin(self.value), cos(self.value) * self.tangent, self.tag)

    def cos(self):
        # cos(a + a'ε) = cos a - sin(a) a' ε
        return Dual(cos(self.value), -sin(self.value) * self.tangent, self.tag)

    def exp(self):
        # exp(a + a'ε) = e^a + e^a a' ε
        e = exp(self.value)
        return Dual(e, e * self.tangent, self.tag)

    def log(self):
        # log(a + a'ε) = log a + (a' / a) ε
        return Dual(log(self.value), self.tangent / self.value, self.tag)

    def tanh(self):
        # tanh(a + a'ε) = t + (1 - t²) a' ε,  t = tanh a
        t = tanh(self.value)
        return Dual(t, (1.0 - t * t) * self.tangent, self.tag)

    def sigmoid(self):
        # σ(a + a'ε) = s + s(1 - s) a' ε,  s = σ(a)
        s = sigmoid(self.value)
        return Dual(s, s * (1.0 - s) * self.tangent, self.tag)

    def relu(self):
        # relu(a + a'ε) = relu a + 1[a > 0] a' ε      (slope 0 at the kink, as in PyTorch)
        mask = (_primal(self.value) > 0).astype(float)
        return Dual(relu(self.value), mask * self.tangent, self.tag)

    # --- shape ops: act on value and tangent alike -----------------------------------------
    def __getitem__(self, index):
        # (a + a'ε)[i] = a[i] + a'[i] ε
        return Dual(self.value[index], self.tangent[index], self.tag)

    def sum(self, axis=None):
        # Σ_k (a_k + a_k'ε) = Σ_k a_k + (Σ_k a_k') ε
        return Dual(self.value.sum(axis=axis), self.tangent.sum(axis=axis), self.tag)


# --- binary rules ------------------------------------------------------------------------------
def _tag(x) -> int:
    return x.tag if isinstance(x, Dual) else -1


def _parts(x, tag: int):
    """(value, tangent) of x for the perturbation ``tag``: for anything that does not carry
    that tag on its outside (an array, a number, a dual of an older tag), the tangent is 0."""
    if isinstance(x, Dual) and x.tag == tag:
        return x.value, x.tangent
    return x, np.zeros(np.shape(x))


def _split(x, y):
    """The outermost (largest) tag among x and y, then the parts of x and of y for it."""
    tag = max(_tag(x), _tag(y))
    return (tag, *_parts(x, tag), *_parts(y, tag))


def _add(x, y):
    # (a + a'ε) + (b + b'ε) = (a + b) + (a' + b')ε
    tag, a, da, b, db = _split(x, y)
    return Dual(a + b, da + db, tag)


def _sub(x, y):
    # (a + a'ε) - (b + b'ε) = (a - b) + (a' - b')ε
    tag, a, da, b, db = _split(x, y)
    return Dual(a - b, da - db, tag)


def _mul(x, y):
    # (a + a'ε)(b + b'ε) = ab + (a'b + ab')ε          (the ε² term vanishes)
    tag, a, da, b, db = _split(x, y)
    return Dual(a * b, da * b + a * db, tag)


def _div(x, y):
    # (a + a'ε) / (b + b'ε) = q + ((a' - q b') / b)ε,  q = a / b
    tag, a, da, b, db = _split(x, y)
    q = a / b
    return Dual(q, (da - q * db) / b, tag)


def _matmul(x, y):
    # (A + A'ε) @ (B + B'ε) = A @ B + (A' @ B + A @ B')ε
    tag, a, da, b, db = _split(x, y)
    return Dual(a @ b, da @ b + a @ db, tag)


def _stack_duals(xs: list, axis: int = 0) -> Dual:
    # stack_k (a_k + a_k'ε) = stack_k a_k + (stack_k a_k')ε     (plain items: a_k' = 0)
    tag = max(_tag(x) for x in xs)
    parts = [_parts(x, tag) for x in xs]
    return Dual(stack([v for v, _ in parts], axis), stack([t for _, t in parts], axis), tag)


# --- derivative operators ----------------------------------------------------------------------
def jacobian(f, x, mode: str = "forward"):
    """J[k, i] = ∂f_k/∂x_i for f: R^n -> R^m; shape (m, n), or (n,) (the gradient) if f is scalar.

    forward: n evaluations of f at Dual(x, e_i), the tangent of each output is column i (J e_i).
    reverse: one evaluation of f on a ``biaslab.scratch.autodiff.Tensor``, then m backward
             passes, the k-th giving row k (e_k^T J).
    x is a 1-D float array; in forward mode it may also be a Dual, which is how ``hessian``
    differentiates the gradient. f may return an array, a Dual/Tensor, or a list (stacked).
    """
    if mode == "forward":
        return _jacobian_forward(f, x)
    if mode == "reverse":
        return _jacobian_reverse(f, x)
    raise ValueError(f"mode must be 'forward' or 'reverse', got {mode!r}")


def gradient(f, x, mode: str = "forward"):
    """∇f(x), shape (n,), for scalar-valued f: the Jacobian of f, which has one row."""
    g = jacobian(f, x, mode=mode)
    if np.ndim(g) != 1:
        raise ValueError(f"gradient needs a scalar-valued f; its Jacobian has shape {np.shape(g)}")
    return g


def hessian(f, x):
    """H[i, j] = ∂²f/∂x_j∂x_i, shape (n, n): the Jacobian of the gradient, forward over forward.

    The outer ``jacobian`` (tag t) calls the gradient at Dual(x, e_j, t); the inner one takes
    a newer tag u > t and evaluates f at Dual(Dual(x, e_j, t), e_i, u). The coefficient of
    ε_t ε_u is ∂²f/∂x_i∂x_j: the inner operator reads off the ε_u level, which leaves
    Dual(∂f/∂x_i, ∂²f/∂x_j∂x_i, t) as entry i of the gradient, and the outer operator reads
    off the ε_t level of that. The tags keep the two levels apart (see the module docstring).
    """
    return jacobian(lambda z: gradient(f, z, mode="forward"), x, mode="forward")


def _as_output(y):
    return stack(y) if isinstance(y, list | tuple) else y


def _jacobian_forward(f, x):
    x = x if isinstance(x, Dual) else np.asarray(x, dtype=np.float64)
    if np.ndim(x) != 1:
        raise ValueError(f"x must be 1-D, got shape {np.shape(x)}")
    tag = next(_tags)  # newer than every tag inside x, so it is the outermost level
    # If x is itself a Dual (an outer operator's), the seed e_i is a plain array: it means
    # e_i + 0·ε_outer, and every rule accepts a plain tangent under a Dual value as such.
    columns = []
    for e_i in np.eye(np.shape(x)[0]):
        y = _as_output(f(Dual(x, e_i, tag)))
        # J e_i is the tangent of the ε_tag level; an output without that level is constant in x
        columns.append(y.tangent if _tag(y) == tag else np.zeros(np.shape(y)))
    return stack(columns, axis=-1)


def _jacobian_reverse(f, x):
    from .autodiff import Tensor  # the reverse-mode engine; imported only when needed

    if isinstance(x, Dual):
        raise TypeError("reverse mode takes a plain array; nest forward mode instead")
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"x must be 1-D, got shape {x.shape}")
    xt = Tensor(x, requires_grad=True)
    y = _as_output(f(xt))
    if not (isinstance(y, Tensor) and y.requires_grad):  # f did not use x at all
        return np.zeros(np.shape(y) + x.shape)

    def row(out) -> np.ndarray:  # e_k^T J: one backward pass from the scalar output y_k
        xt.grad = None  # .grad accumulates across backward calls
        out.backward(retain_graph=True)
        return np.zeros_like(x) if xt.grad is None else np.array(xt.grad, dtype=np.float64)

    if len(y.shape) == 0:
        return row(y)
    return np.stack([row(y[k]) for k in range(y.shape[0])])
