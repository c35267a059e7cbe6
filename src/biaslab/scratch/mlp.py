"""A two-layer MLP with a hand-written backward pass: NumPy only, no autograd.

The notes write one example as a column vector x (D,):

    z1 = W1 x + b1          (H,)        pre-activation of the hidden layer
    h  = relu(z1)           (H,)
    y  = W2 h + b2          (C,)        logits
    p  = softmax(y)         (C,)        L = -log p[t]  for the true class t

and derive five formulas for the gradients (y* is the one-hot target):

    (1) dL/dy  = p - y*                  =: delta   (C,)
    (2) dL/dW2 = delta h^T                           (C, H)    and dL/db2 = delta
    (3) dL/dh  = W2^T delta                          (H,)
    (4) delta1 = dL/dh * 1[z1 > 0]                   (H,)      the ReLU mask
    (5) dL/dW1 = delta1 x^T                          (H, D)    and dL/db1 = delta1

In code a mini-batch is a matrix X (N, D) with one example per ROW, so every column-vector
formula is transposed: z1 = X W1^T + b1 (N, H), and the outer product "delta h^T" summed over
the batch becomes the matrix product delta^T H (C, N) @ (N, H). The loss is the MEAN over the
batch, hence the 1/N in (1).
"""

from __future__ import annotations

import numpy as np

__all__ = ["TwoLayerMLP", "cross_entropy", "softmax"]


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax, computed stably in a new array (the input is left untouched).

    Subtracting the row maximum first keeps every exponent <= 0, so exp never overflows;
    softmax is unchanged by that shift.

    Shapes:
        logits: (N, C) -> probabilities (N, C), rows summing to 1.
    """
    p = logits - logits.max(axis=1, keepdims=True)  # (N, C), max of each row is 0
    np.exp(p, out=p)
    p /= p.sum(axis=1, keepdims=True)
    return p


def cross_entropy(logits: np.ndarray, y: np.ndarray) -> float:
    """Mean softmax cross-entropy  L = mean_n [ log sum_c exp(s_nc) - s_n,y_n ]  (s = logits).

    Stable: the row maximum is subtracted before exp (L does not change).

    Shapes:
        logits: (N, C);  y: (N,) integer class indices in 0..C-1.
    """
    shifted = logits - logits.max(axis=1, keepdims=True)  # (N, C)
    log_z = np.log(np.exp(shifted).sum(axis=1))  # (N,)  log of the softmax denominator
    return float(np.mean(log_z - shifted[np.arange(len(y)), y]))


class TwoLayerMLP:
    """y = W2 relu(W1 x + b1) + b2, with parameters in a plain dict of NumPy arrays.

    Args:
        n_in: input size D (784 for flattened MNIST).
        n_hidden: hidden size H.
        n_out: number of classes C.
        seed: seed of ``np.random.default_rng`` used for the initialisation.
        dtype: float type of parameters and computations (float32 for speed, float64 for
            gradient checks).

    Shapes:
        params["W1"]: (H, D), params["b1"]: (H,), params["W2"]: (C, H), params["b2"]: (C,).

    Initialisation is torch.nn.Linear's: every weight and bias of a layer with fan-in ``m`` is
    drawn from U(-1/sqrt(m), 1/sqrt(m)).

    Usage (one SGD step):
        >>> model = TwoLayerMLP()
        >>> loss = model.loss(X, y)          # forward + loss; caches what backward needs
        >>> grads = model.backward(y)        # the five formulas
        >>> for k in model.params: model.params[k] -= 0.1 * grads[k]
    """

    def __init__(
        self, n_in: int = 784, n_hidden: int = 256, n_out: int = 10, seed: int = 0, dtype=np.float32
    ):
        self.dtype = np.dtype(dtype)
        rng = np.random.default_rng(seed)
        bound1 = 1.0 / np.sqrt(n_in)  # fan-in of layer 1
        bound2 = 1.0 / np.sqrt(n_hidden)  # fan-in of layer 2
        self.params: dict[str, np.ndarray] = {
            "W1": rng.uniform(-bound1, bound1, (n_hidden, n_in)).astype(self.dtype),
            "b1": rng.uniform(-bound1, bound1, n_hidden).astype(self.dtype),
            "W2": rng.uniform(-bound2, bound2, (n_out, n_hidden)).astype(self.dtype),
            "b2": rng.uniform(-bound2, bound2, n_out).astype(self.dtype),
        }
        self._cache: dict[str, np.ndarray] = {}

    @classmethod
    def from_params(cls, params: dict[str, np.ndarray]) -> TwoLayerMLP:
        """A model over existing parameter arrays, shared, not copied: its forward and backward
        passes read them, and an optimizer stepping ``params`` steps the model.

        Shapes:
            params: as :attr:`params`, ``W1`` (H, D), ``b1`` (H,), ``W2`` (C, H), ``b2`` (C,).
        """
        if set(params) != {"W1", "b1", "W2", "b2"}:
            raise KeyError(f"expected keys ['W1', 'W2', 'b1', 'b2'], got {sorted(params)}")
        n_hidden, (n_out, n_hidden_2) = params["W1"].shape[0], params["W2"].shape
        if params["b1"].shape != (n_hidden,) or params["b2"].shape != (n_out,) or n_hidden_2 != n_hidden:
            shapes = {name: tuple(p.shape) for name, p in params.items()}
            raise ValueError(f"parameter shapes do not form an MLP D -> H -> C: {shapes}")
        model = cls.__new__(cls)
        model.dtype, model.params, model._cache = params["W1"].dtype, params, {}
        return model

    # ------------------------------------------------------------------------------- forward

    def forward(self, X: np.ndarray) -> np.ndarray:
        """Logits for a batch; caches X and h for :meth:`backward`.

        Args:
            X: inputs, one example per row (converted to the model's dtype if needed).

        Shapes:
            X: (N, D) -> logits (N, C).
        """
        X = np.asarray(X, dtype=self.dtype)  # no copy when it already is
        P = self.params
        # z1 = X W1^T + b1: the column form W1 x + b1, one row per example.
        h = X @ P["W1"].T  # (N, H)
        h += P["b1"]  # broadcast (H,) over rows, in place
        # h = relu(z1), in place: z1 itself is not kept, because h > 0 exactly where z1 > 0,
        # which is all that the ReLU mask (4) needs.
        np.maximum(h, 0, out=h)
        logits = h @ P["W2"].T  # (N, C)
        logits += P["b2"]
        self._cache = {"X": X, "h": h, "logits": logits}
        return logits

    __call__ = forward

    def loss(self, X: np.ndarray, y: np.ndarray) -> float:
        """Forward pass, then the mean softmax cross-entropy; caches p = softmax(logits).

        Shapes:
            X: (N, D);  y: (N,) integer labels.
        """
        logits = self.forward(X)
        y = np.asarray(y)
        # Stable log-softmax: log p = s - log(sum exp(s)) with s = logits - row max (all s <= 0).
        s = logits - logits.max(axis=1, keepdims=True)  # (N, C)
        p = np.exp(s)  # (N, C) unnormalised
        total = p.sum(axis=1, keepdims=True)  # (N, 1)
        loss = np.mean(np.log(total[:, 0]) - s[np.arange(len(y)), y])  # mean of -log p[t]
        p /= total  # now p = softmax(logits), kept for backward (1)
        self._cache["p"] = p
        return float(loss)

    # ------------------------------------------------------------------------------ backward

    def backward(self, y: np.ndarray) -> dict[str, np.ndarray]:
        """Gradients of the mean cross-entropy of the LAST forward batch, by the five formulas.

        Args:
            y: the integer labels of that batch.

        Returns:
            ``{"W1", "b1", "W2", "b2"}`` -> new arrays, shaped like the parameters.

        Shapes:
            y: (N,).
        """
        if "h" not in self._cache:
            raise RuntimeError("backward() needs a forward() or loss() call first")
        X, h = self._cache["X"], self._cache["h"]
        p = self._cache.get("p")
        if p is None:
            p = softmax(self._cache["logits"])
        W2 = self.params["W2"]
        n = len(X)

        # (1) eq.: dL/dy = p - y*   (softmax minus one-hot), divided by N for the mean loss.
        delta = p.copy()  # (N, C)
        delta[np.arange(n), y] -= 1.0
        delta /= n

        # (2) eq.: dL/dW2 = delta h^T ; summed over the batch: delta^T H.   dL/db2 = sum delta
        dW2 = delta.T @ h  # (C, N) @ (N, H) -> (C, H)
        db2 = delta.sum(axis=0)  # (C,)

        # (3) eq.: dL/dh = W2^T delta ; one row per example: delta W2.
        dh = delta @ W2  # (N, C) @ (C, H) -> (N, H)

        # (4) eq.: delta1 = dL/dh * 1[z1 > 0]   (h > 0 exactly where z1 > 0), in place.
        delta1 = np.multiply(dh, h > 0, out=dh)  # (N, H)

        # (5) eq.: dL/dW1 = delta1 x^T ; summed over the batch: delta1^T X.   dL/db1 = sum delta1
        dW1 = delta1.T @ X  # (H, N) @ (N, D) -> (H, D)
        db1 = delta1.sum(axis=0)  # (H,)

        return {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}

    # ------------------------------------------------------------------------------- helpers

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted class of each row.  Shapes: X (N, D) -> (N,) int64."""
        return self.forward(X).argmax(axis=1)

    def accuracy(self, X: np.ndarray, y: np.ndarray) -> float:
        """Fraction of rows whose predicted class equals ``y``."""
        return float(np.mean(self.predict(X) == np.asarray(y)))

    def layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """``[(W1, b1), (W2, b2)]``, each W of shape (out, in) as in y = W x + b."""
        P = self.params
        return [(P["W1"], P["b1"]), (P["W2"], P["b2"])]

    def parameter_count(self) -> int:
        """Number of scalar parameters: H*D + H + C*H + C (203,530 for 784-256-10)."""
        return int(sum(p.size for p in self.params.values()))

    @staticmethod
    def memory_bytes(
        n_in: int, n_hidden: int, n_out: int, batch: int, *, dtype=np.float32, optimizer_states: int = 0
    ) -> int:
        """Estimated peak bytes of building and training a model of these sizes.

        Building draws every parameter in float64 before casting it to ``dtype`` (both exist for
        a moment); training holds the parameters, a gradient of each and ``optimizer_states``
        more arrays of their shape (plain SGD 0, momentum 1, Adam 2), and for a batch of
        ``batch`` rows the cast input, h and its gradient, and logits, shifted logits and p
        (D + 2H + 3C values per row). An estimate to refuse sizes that cannot fit before
        anything is allocated, not an exact count.

        Example: 784-256-10 in float32 with batches of 4096 rows: 203,530 parameters x 12 bytes
        (building) + 4096 x 1326 x 4 bytes, about 24 MB.
        """
        itemsize = np.dtype(dtype).itemsize
        n_in, n_hidden, n_out, batch = int(n_in), int(n_hidden), int(n_out), int(batch)
        parameters = n_hidden * n_in + n_hidden + n_out * n_hidden + n_out
        weights = parameters * max(8 + itemsize, itemsize * (2 + optimizer_states))
        return weights + batch * (n_in + 2 * n_hidden + 3 * n_out) * itemsize

    def state_dict(self) -> dict[str, np.ndarray]:
        """A copy of the parameters."""
        return {k: v.copy() for k, v in self.params.items()}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Copy ``state`` INTO the existing parameter arrays (optimizers keep their references).

        Raises:
            KeyError: keys differ from the model's.
            ValueError: a shape differs.
        """
        if set(state) != set(self.params):
            raise KeyError(f"expected keys {sorted(self.params)}, got {sorted(state)}")
        for k, p in self.params.items():
            value = np.asarray(state[k])
            if value.shape != p.shape:
                raise ValueError(f"{k}: expected shape {p.shape}, got {value.shape}")
        for k, p in self.params.items():
            np.copyto(p, state[k], casting="unsafe")
