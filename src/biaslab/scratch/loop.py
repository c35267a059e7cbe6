"""Our own training loop, no framework: shuffle, slice, forward, backward, step.

One epoch is

    perm = rng.permutation(N)                     a fresh seeded order every epoch
    for each slice [i, i + B) of X[perm], y[perm]:
        loss  = model.loss(X_b, y_b)              forward pass + mean cross-entropy
        grads = model.backward(y_b)               the five formulas
        optimizer.step(grads)                     parameters updated in place

The model needs ``loss(X, y) -> float``, ``backward(y) -> grads`` and ``forward(X) -> logits``
(as :class:`biaslab.scratch.mlp.TwoLayerMLP`); the optimizer needs ``step(grads)``.
Inputs may be NumPy arrays or anything ``np.asarray`` accepts (a CPU torch tensor included).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from biaslab.config import check_range
from biaslab.errors import DivergenceError
from biaslab.scratch.mlp import TwoLayerMLP, cross_entropy

__all__ = ["LoopConfig", "evaluate", "fit", "iterate_minibatches", "train_epoch"]


EVAL_BATCH = 4096  # rows evaluate() takes at once (and LoopConfig's memory estimate counts)


@dataclass(frozen=True)
class LoopConfig:
    """Settings of :func:`fit` with plain SGD: a lab config's training part.

    Args:
        epochs: passes over the training data (default 10).
        batch_size: examples per step (default 64).
        lr: the SGD step size η in θ ← θ − η∇L (eq. 2.3) (default 0.1).
    """

    epochs: int = 10
    batch_size: int = 64
    lr: float = 0.1

    def __post_init__(self):
        check_range(self, "epochs", 1)
        check_range(self, "batch_size", 1)
        check_range(self, "lr", 0, open_low=True)

    def mlp_memory(self, n_in: int, n_hidden: int, n_out: int) -> int:
        """Estimated peak bytes of a :class:`TwoLayerMLP` (float32) trained by :func:`fit`.

        :meth:`TwoLayerMLP.memory_bytes` with plain SGD (no optimizer state), for the larger of
        a training batch and the ``EVAL_BATCH`` rows :func:`evaluate` takes at once. A lab's config passes
        the sum of what its run holds to :func:`~biaslab.config.check_memory`.
        """
        return TwoLayerMLP.memory_bytes(n_in, n_hidden, n_out, max(self.batch_size, EVAL_BATCH))


def iterate_minibatches(
    X, y, batch_size: int, rng: np.random.Generator
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(X_b, y_b)`` mini-batches in a random order drawn from ``rng``.

    The data are permuted once (one copy), then cut into consecutive slices (views, no copy);
    the last batch is smaller when ``batch_size`` does not divide N.

    Shapes:
        X: (N, D), y: (N,) -> X_b: (B, D), y_b: (B,) with B <= batch_size.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    X, y = np.asarray(X), np.asarray(y)
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} rows but y has {len(y)}")
    perm = rng.permutation(len(X))  # (N,)
    X_shuffled, y_shuffled = X[perm], y[perm]  # (N, D), (N,)
    for start in range(0, len(X), batch_size):
        yield X_shuffled[start : start + batch_size], y_shuffled[start : start + batch_size]


def train_epoch(model, optimizer, X, y, batch_size: int, rng: np.random.Generator) -> float:
    """One pass over the data; returns the mean training loss (weighted by batch size).

    Stops at the first non-finite batch loss and returns it (nan or inf): continuing would only
    spread the nan through every parameter. A batch whose inputs hold nan or inf is a
    ValueError instead: the data, not the learning rate, are at fault.
    """
    total, count = 0.0, 0
    for X_b, y_b in iterate_minibatches(X, y, batch_size, rng):
        loss = model.loss(X_b, y_b)
        if not math.isfinite(loss):
            if not np.all(np.isfinite(X_b)):
                raise ValueError(
                    f"a batch holds nan or inf inputs, so its loss is {loss}; "
                    "the data are at fault, not the learning rate"
                )
            return loss
        optimizer.step(model.backward(y_b))
        total += loss * len(y_b)
        count += len(y_b)
    return total / max(count, 1)


def evaluate(model, X, y, batch_size: int = EVAL_BATCH) -> tuple[float, float]:
    """Mean cross-entropy and accuracy of ``model`` on ``(X, y)``, in chunks of ``batch_size``.

    Returns:
        ``(loss, accuracy)``.
    """
    X, y = np.asarray(X), np.asarray(y)
    total_loss, correct = 0.0, 0
    for start in range(0, len(X), batch_size):
        X_b, y_b = X[start : start + batch_size], y[start : start + batch_size]
        logits = model.forward(X_b)  # (B, C)
        total_loss += cross_entropy(logits, y_b) * len(y_b)
        correct += int(np.sum(logits.argmax(axis=1) == y_b))
    n = max(len(X), 1)
    return total_loss / n, correct / n


def fit(
    model,
    optimizer,
    train,
    val,
    epochs: int,
    batch_size: int,
    seed: int = 0,
    callback: Callable[[dict], object] | None = None,
    *,
    on_divergence: str = "stop",
    tag: str = "numpy",
    lr_key: str = "lr",
) -> list[dict]:
    """Train for ``epochs`` epochs; evaluate on ``val`` after each.

    Args:
        model, optimizer: as described in the module docstring.
        train: ``(X_train, y_train)``.
        val: ``(X_val, y_val)``, or None to skip validation (val_* are then nan).
        epochs: number of passes over the training data.
        batch_size: mini-batch size.
        seed: seeds ``np.random.default_rng``, which draws every epoch's order.
        callback: called with each epoch's record; returning ``True`` stops training.
        on_divergence: ``"stop"`` (default: the last record has ``diverged=True``) or
            ``"raise"``: a :class:`~biaslab.errors.DivergenceError` with the same message as
            the PyTorch trainer's, naming the learning rate (``optimizer.lr``).
        tag, lr_key: the training's name and the config key of its learning rate, for that
            message.

    Returns:
        One record per epoch: ``{"epoch", "step", "train_loss", "val_loss", "val_accuracy",
        "seconds", "diverged"}``; ``step`` counts the mini-batches done, ``seconds`` times the
        training pass only. When the training loss is not finite the record has
        ``diverged=True`` and training stops.
    """
    if on_divergence not in ("raise", "stop"):
        raise ValueError("on_divergence must be 'raise' or 'stop'")
    rng = np.random.default_rng(seed)
    X_train, y_train = np.asarray(train[0]), np.asarray(train[1])
    steps_per_epoch = math.ceil(len(X_train) / batch_size)
    history: list[dict] = []
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        with np.errstate(over="ignore", invalid="ignore"):  # a blow-up is caught just below
            train_loss = train_epoch(model, optimizer, X_train, y_train, batch_size, rng)
        seconds = time.perf_counter() - start
        diverged = not math.isfinite(train_loss)
        if diverged and on_divergence == "raise":
            lr = float(getattr(optimizer, "lr", math.nan))
            raise DivergenceError.at(tag, train_loss, f"epoch {epoch}", lr, lr_key)
        if val is None or diverged:
            val_loss, val_accuracy = math.nan, math.nan
        else:
            val_loss, val_accuracy = evaluate(model, val[0], val[1])
        record = {
            "epoch": epoch,
            "step": epoch * steps_per_epoch,
            "train_loss": float(train_loss),
            "val_loss": float(val_loss),
            "val_accuracy": float(val_accuracy),
            "seconds": seconds,
            "diverged": diverged,
        }
        history.append(record)
        stop = callback(record) is True if callback is not None else False
        if diverged or stop:
            break
    return history
