"""Reverse-mode automatic differentiation on NumPy arrays, from first principles.

A :class:`Tensor` wraps a NumPy array. Each operation returns a new Tensor that
remembers its *parents* (operands) and a *backward closure*: given the gradient
of the final scalar w.r.t. the output (the output's *adjoint*), it returns the
adjoint of each parent -- the chain rule as a vector-Jacobian product.
``loss.backward()`` orders the graph topologically (iteratively: 100,000-node
chains are fine) and walks it from the loss to the leaves, summing the adjoints
that reach a node along different paths.

Conventions (close to PyTorch):

* ``requires_grad`` propagates: a result requires grad if any operand does;
  otherwise (or inside ``with no_grad():``) no graph is recorded.
* Leaves *accumulate* into ``.grad`` across backward calls; reset with
  ``t.zero_grad()`` or ``t.grad = None``.
* Unlike PyTorch, every intermediate node also gets ``.grad`` = its adjoint
  for the latest pass (overwritten, not accumulated), so trace tables can
  print the adjoint of every node next to its ``.op`` name.
* ``backward()`` frees the graph (drops the closures): a second backward
  through it raises ``RuntimeError`` unless the first one was called with
  ``retain_graph=True``; then leaf gradients accumulate again.
* dtypes are kept (float32 in, float32 out and float32 gradients); int/bool
  data become float64; non-Tensor operands are cast to the Tensor's dtype.
"""

from __future__ import annotations

import contextlib

import numpy as np

_GRAD_ENABLED = True


@contextlib.contextmanager
def no_grad():
    """Context manager: operations inside it record no graph (like torch.no_grad)."""
    global _GRAD_ENABLED
    previous, _GRAD_ENABLED = _GRAD_ENABLED, False
    try:
        yield
    finally:
        _GRAD_ENABLED = previous


def unbroadcast(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``grad`` down to ``shape``, undoing NumPy broadcasting.

    Broadcasting copies an operand along (a) new leading axes and (b) axes
    where it had size 1. The adjoint of "copy" is "sum", so we sum over
    exactly those axes.
    """
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))  # e.g. (2, 5) -> (5,)
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)  # e.g. (3, 4) -> (3, 1)
    return grad


def _normalize_axes(axis, ndim: int) -> tuple:
    """None -> all axes; int or tuple (negative allowed) -> sorted non-negative tuple."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of bounds for a tensor of ndim {ndim}")
    axes = tuple(sorted(int(a) % ndim for a in axes))
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis in {axis}")
    return axes


class Tensor:
    """An n-dimensional array that records the operations applied to it."""

    _stack_rank = 1  # functions.stack dispatches a list holding Tensors to stack() below

    @staticmethod
    def _stack_items(xs, axis: int = 0) -> Tensor:
        return stack(xs, axis=axis)

    # Make NumPy defer to us: ``ndarray * Tensor`` calls ``Tensor.__rmul__``.
    __array_ufunc__ = None

    def __init__(self, data, requires_grad: bool = False):
        if isinstance(data, Tensor):
            data = data.data
        data = np.asarray(data)
        if data.dtype.kind != "f":  # ints, bools, ... -> float64
            data = data.astype(np.float64)
        self.data = data
        self.requires_grad = bool(requires_grad)
        self.grad = None  # np.ndarray shaped like data, once backward reached us
        self.op = "leaf"  # name of the operation that produced this tensor
        self._parents = ()  # the operand Tensors (empty for leaves and constants)
        self._backward = None  # closure: adjoint of output -> tuple of parent adjoints

    # ----------------------------------------------------------- basics
    shape = property(lambda self: self.data.shape)
    ndim = property(lambda self: self.data.ndim)
    dtype = property(lambda self: self.data.dtype)
    size = property(lambda self: self.data.size)
    is_leaf = property(lambda self: not self._parents)

    def item(self) -> float:
        return self.data.item()

    def numpy(self) -> np.ndarray:
        return self.data

    def detach(self) -> Tensor:
        return Tensor(self.data)

    def zero_grad(self) -> None:
        self.grad = None

    def __repr__(self) -> str:
        body = np.array2string(self.data, precision=4, separator=", ")
        extra = "" if self.dtype == np.float64 else f", dtype={self.dtype}"
        extra += f", op={self.op!r}" if self.op != "leaf" else ""
        extra += ", requires_grad=True" if self.requires_grad else ""
        return f"Tensor({body}{extra})"

    def _lift(self, other) -> Tensor:
        """Wrap a non-Tensor operand as a constant Tensor of our dtype."""
        if isinstance(other, Tensor):
            return other
        return Tensor(np.asarray(other, dtype=self.data.dtype))

    @staticmethod
    def _result(data, parents: tuple, op: str, backward) -> Tensor:
        """Make the output Tensor; record the graph only if it is needed."""
        out = Tensor(data)
        out.op = op
        if _GRAD_ENABLED and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out._parents = parents
            out._backward = backward
        return out

    def _unary(self, data, op: str, local_grad) -> Tensor:
        """Elementwise op y = f(a): adjoint of a is g * f'(a), f' from ``local_grad()``."""
        return Tensor._result(data, (self,), op, lambda g: (g * local_grad(),))

    # --------------------------------------------------- arithmetic ops
    def __add__(self, other) -> Tensor:
        a, b = self, self._lift(other)

        def backward(g):  # d(a+b)/da = 1, d(a+b)/db = 1
            return unbroadcast(g, a.shape), unbroadcast(g, b.shape)

        return Tensor._result(a.data + b.data, (a, b), "add", backward)

    def __sub__(self, other) -> Tensor:
        a, b = self, self._lift(other)

        def backward(g):  # d(a-b)/da = 1, d(a-b)/db = -1
            return unbroadcast(g, a.shape), unbroadcast(-g, b.shape)

        return Tensor._result(a.data - b.data, (a, b), "sub", backward)

    def __mul__(self, other) -> Tensor:
        a, b = self, self._lift(other)

        def backward(g):  # d(a*b)/da = b, d(a*b)/db = a
            return unbroadcast(g * b.data, a.shape), unbroadcast(g * a.data, b.shape)

        return Tensor._result(a.data * b.data, (a, b), "mul", backward)

    def __truediv__(self, other) -> Tensor:
        a, b = self, self._lift(other)

        def backward(g):  # d(a/b)/da = 1/b, d(a/b)/db = -a/b^2
            return (unbroadcast(g / b.data, a.shape), unbroadcast(-g * a.data / (b.data * b.data), b.shape))

        return Tensor._result(a.data / b.data, (a, b), "div", backward)

    def __neg__(self) -> Tensor:
        return Tensor._result(-self.data, (self,), "neg", lambda g: (-g,))  # d(-a)/da = -1

    def __radd__(self, other):
        return self._lift(other) + self

    def __rsub__(self, other):
        return self._lift(other) - self

    def __rmul__(self, other):
        return self._lift(other) * self

    def __rtruediv__(self, other):
        return self._lift(other) / self

    def __pow__(self, exponent) -> Tensor:
        a = self
        if isinstance(exponent, Tensor):
            b = exponent
            out = a.data**b.data

            def backward(g):  # d(a^b)/da = b a^(b-1), d(a^b)/db = a^b log a
                ga = g * b.data * a.data ** (b.data - 1) if a.requires_grad else None
                gb = g * out * np.log(a.data) if b.requires_grad else None
                return (
                    None if ga is None else unbroadcast(ga, a.shape),
                    None if gb is None else unbroadcast(gb, b.shape),
                )

            return Tensor._result(out, (a, b), "pow", backward)
        p = np.asarray(exponent, dtype=a.dtype)  # a constant exponent

        def backward_const(g):  # d(a^p)/da = p a^(p-1)
            return (unbroadcast(g * p * a.data ** (p - 1), a.shape),)

        return Tensor._result(a.data**p, (a,), "pow", backward_const)

    def __rpow__(self, base) -> Tensor:
        return self._lift(base) ** self

    def __matmul__(self, other) -> Tensor:
        a, b = self, self._lift(other)
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError("matmul: operands must be at least 1-D (use * for scalars)")
        # 1-D operands are matrices to np.matmul: (k,) @ M is a row, M @ (k,) a column
        a2 = a.data if a.ndim > 1 else a.data[None, :]  # (k,) -> (1, k)
        b2 = b.data if b.ndim > 1 else b.data[:, None]  # (k,) -> (k, 1)

        def backward(g):  # C = A B: dL/dA = G B^T, dL/dB = A^T G (summed over broadcast batch axes)
            if b.ndim == 1:
                g = np.expand_dims(g, -1)  # (..., n) -> (..., n, 1)
            if a.ndim == 1:
                g = np.expand_dims(g, -2)  # (..., m) -> (..., 1, m)
            ga = unbroadcast(g @ np.swapaxes(b2, -1, -2), a2.shape).reshape(a.shape)
            gb = unbroadcast(np.swapaxes(a2, -1, -2) @ g, b2.shape).reshape(b.shape)
            return ga, gb

        return Tensor._result(a.data @ b.data, (a, b), "matmul", backward)

    def __rmatmul__(self, other):
        return self._lift(other) @ self

    # ------------------------------------------------- elementwise math
    def exp(self) -> Tensor:
        out = np.exp(self.data)
        return self._unary(out, "exp", lambda: out)  # d(e^a)/da = e^a

    def log(self) -> Tensor:
        return self._unary(np.log(self.data), "log", lambda: 1 / self.data)  # d(log a)/da = 1/a

    def sin(self) -> Tensor:
        # d(sin a)/da = cos a
        return self._unary(np.sin(self.data), "sin", lambda: np.cos(self.data))

    def cos(self) -> Tensor:
        # d(cos a)/da = -sin a
        return self._unary(np.cos(self.data), "cos", lambda: -np.sin(self.data))

    def tanh(self) -> Tensor:
        out = np.tanh(self.data)
        return self._unary(out, "tanh", lambda: 1 - out * out)  # d(tanh a)/da = 1 - tanh^2 a

    def sigmoid(self) -> Tensor:
        out = 0.5 * (1 + np.tanh(0.5 * self.data))  # = 1/(1+e^-a), without overflow
        return self._unary(out, "sigmoid", lambda: out * (1 - out))  # d(s)/da = s (1 - s)

    def relu(self) -> Tensor:
        # d(relu a)/da = 1 if a > 0 else 0 (subgradient 0 at a == 0, as in PyTorch)
        mask = (self.data > 0).astype(self.dtype)
        return self._unary(np.maximum(self.data, 0), "relu", lambda: mask)

    # ------------------------------------------------------- reductions
    def sum(self, axis=None, keepdims: bool = False) -> Tensor:
        axes, shape = _normalize_axes(axis, self.ndim), self.shape

        def backward(g):  # d(sum a)/da_i = 1: copy the adjoint back along the reduced axes
            if not keepdims:
                g = np.expand_dims(g, axes)  # e.g. (3,) -> (1, 3) when axis 0 of (2, 3) was summed
            return (np.broadcast_to(g, shape),)

        out = self.data.sum(axis=axes, keepdims=keepdims)
        return Tensor._result(out, (self,), "sum", backward)

    def mean(self, axis=None, keepdims: bool = False) -> Tensor:
        axes, shape = _normalize_axes(axis, self.ndim), self.shape
        count = int(np.prod([shape[a] for a in axes]))

        def backward(g):  # d(mean a)/da_i = 1/count
            if not keepdims:
                g = np.expand_dims(g, axes)  # re-insert the reduced axes as size 1
            return (np.broadcast_to(g / count, shape),)

        out = self.data.mean(axis=axes, keepdims=keepdims)
        return Tensor._result(out, (self,), "mean", backward)

    # -------------------------------------------------- shape and index
    def reshape(self, *shape) -> Tensor:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        old = self.shape  # a reshape moves no numbers: the adjoint is reshaped back
        return Tensor._result(self.data.reshape(shape), (self,), "reshape", lambda g: (g.reshape(old),))

    def transpose(self, *axes) -> Tensor:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        axes = tuple(axes) or tuple(reversed(range(self.ndim)))
        inverse = tuple(np.argsort(axes))  # the permutation that undoes ``axes``
        return Tensor._result(
            self.data.transpose(axes), (self,), "transpose", lambda g: (g.transpose(inverse),)
        )

    T = property(lambda self: self.transpose())

    def __getitem__(self, index) -> Tensor:
        if isinstance(index, Tensor):
            index = index.data
        elif isinstance(index, tuple):
            index = tuple(i.data if isinstance(i, Tensor) else i for i in index)

        def backward(g):
            # each selected element gets its adjoint back; np.add.at (unlike
            # full[index] += g) accumulates when an index is repeated
            full = np.zeros_like(self.data)
            np.add.at(full, index, g)
            return (full,)

        return Tensor._result(self.data[index], (self,), "index", backward)

    # ------------------------------------------- softmax-family methods
    def softmax(self, axis: int = -1) -> Tensor:
        return softmax(self, axis)

    def log_softmax(self, axis: int = -1) -> Tensor:
        return log_softmax(self, axis)

    def cross_entropy(self, targets) -> Tensor:
        return softmax_cross_entropy(self, targets)

    # --------------------------------------------------------- backward
    def _graph(self) -> list:
        """Nodes that need a gradient, inputs before outputs (iterative DFS post-order)."""
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:  # all of node's parents are already in ``order``
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((p, False) for p in node._parents if p.requires_grad and id(p) not in seen)
        return order

    def backward(self, grad=None, retain_graph: bool = False) -> None:
        """Backpropagate from this tensor: fill ``.grad`` of every node on the way.

        ``grad`` is the adjoint to start from (default 1 for a scalar). Leaves
        accumulate into ``.grad``; intermediates get this pass's adjoint. Unless
        ``retain_graph=True``, the graph's closures are released afterwards and
        a second backward through it raises ``RuntimeError``.
        """
        if not self.requires_grad:
            raise RuntimeError("backward(): tensor does not require grad and has no graph")
        if grad is None:
            if self.size != 1:
                raise RuntimeError(
                    f"backward(): grad can be implicitly created only for scalar "
                    f"outputs, got shape {self.shape}; pass grad= explicitly"
                )
            grad = np.ones_like(self.data)
        grad = np.asarray(grad.data if isinstance(grad, Tensor) else grad, dtype=self.dtype)
        if grad.shape != self.shape:
            raise ValueError(f"backward(): grad has shape {grad.shape}, expected {self.shape}")
        order = self._graph()
        if any(node._parents and node._backward is None for node in order):
            raise RuntimeError(
                "Trying to backward through the graph a second time: the graph was "
                "already freed by a previous backward(); pass retain_graph=True "
                "to the first backward() call to keep it"
            )
        adjoints = {id(self): grad}
        for node in reversed(order):  # outputs before inputs
            g = adjoints.pop(id(node), None)
            if g is None:
                continue
            if node.is_leaf:
                node.grad = np.array(g) if node.grad is None else node.grad + g
                continue
            node.grad = np.array(g)  # copy: writable, not aliased with other nodes
            for parent, pg in zip(node._parents, node._backward(g)):
                if pg is None or not parent.requires_grad:
                    continue
                pg = np.asarray(pg, dtype=parent.dtype)
                assert pg.shape == parent.shape, (node.op, pg.shape, parent.shape)
                key = id(parent)
                adjoints[key] = pg if key not in adjoints else adjoints[key] + pg  # fan-out sums
            if not retain_graph:
                node._backward = None  # free the closure (and the arrays it saved)


# ----------------------------------------------------------- module functions
def _as_tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(x)


def softmax(x, axis: int = -1) -> Tensor:
    """softmax(x)_i = e^{x_i - max} / sum_j e^{x_j - max} along ``axis`` (stable)."""
    x = _as_tensor(x)
    e = np.exp(x.data - x.data.max(axis=axis, keepdims=True))  # max subtracted: exponents <= 0
    out = e / e.sum(axis=axis, keepdims=True)

    def backward(g):  # Jacobian diag(y) - y y^T  =>  dx = y * (g - sum(g * y))
        return (out * (g - (g * out).sum(axis=axis, keepdims=True)),)

    return Tensor._result(out, (x,), "softmax", backward)


def log_softmax(x, axis: int = -1) -> Tensor:
    """log_softmax(x) = x - max - log(sum e^{x - max}) along ``axis`` (stable log-sum-exp)."""
    x = _as_tensor(x)
    shifted = x.data - x.data.max(axis=axis, keepdims=True)
    out = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))

    def backward(g):  # d(log_softmax)_i/dx_j = delta_ij - softmax_j  =>  dx = g - softmax * sum(g)
        return (g - np.exp(out) * g.sum(axis=axis, keepdims=True),)

    return Tensor._result(out, (x,), "log_softmax", backward)


def softmax_cross_entropy(logits, targets) -> Tensor:
    """Mean over N of -log softmax(logits)[n, targets[n]]; logits (N, C), int targets (N,).

    Backward: d loss / d logits = (softmax(logits) - onehot(targets)) / N.
    """
    logits = _as_tensor(logits)
    t = np.asarray(targets.data if isinstance(targets, Tensor) else targets)
    if not np.issubdtype(t.dtype, np.integer):
        if t.size and not np.all(t == np.round(t)):
            raise ValueError("softmax_cross_entropy: targets must be integer class indices")
        t = t.astype(np.int64)
    if logits.ndim != 2 or t.shape != logits.shape[:1]:
        raise ValueError(
            f"softmax_cross_entropy: expected logits (N, C) and targets (N,), "
            f"got {logits.shape} and {t.shape}"
        )
    n, c = logits.shape
    if t.size and (t.min() < 0 or t.max() >= c):
        raise ValueError(f"softmax_cross_entropy: targets must lie in [0, {c})")
    shifted = logits.data - logits.data.max(axis=1, keepdims=True)  # (N, C), row max is 0
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))  # (N, C)
    rows = np.arange(n)
    loss = -log_probs[rows, t].mean()

    def backward(g):
        grad = np.exp(log_probs)  # softmax, (N, C)
        grad[rows, t] -= 1  # minus the one-hot targets
        return (g * grad / n,)

    loss = np.asarray(loss, dtype=logits.dtype)
    return Tensor._result(loss, (logits,), "cross_entropy", backward)


def stack(tensors, axis: int = 0) -> Tensor:
    """Stack same-shaped tensors along a new axis (like np.stack)."""
    tensors = tuple(_as_tensor(t) for t in tensors)
    data = np.stack([t.data for t in tensors], axis=axis)
    ax = axis % data.ndim

    def backward(g):  # stacking copies input i into slice i: its adjoint is that slice
        return tuple(np.take(g, i, axis=ax) for i in range(len(tensors)))

    return Tensor._result(data, tensors, "stack", backward)
