"""Check the autodiff engine against central finite differences (NumPy only).

For a scalar function f and a small step eps, the central difference

    df/dx_i  ~=  (f(x + eps e_i) - f(x - eps e_i)) / (2 eps)

has truncation error O(eps^2) (the eps^1 terms of the two Taylor expansions
cancel) and round-off error O(machine_eps * |f| / eps); eps = 1e-6 balances the
two for well-scaled float64 functions, leaving roughly 1e-8 to 1e-10 error.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .autodiff import Tensor, no_grad


def numerical_gradient(f: Callable[[np.ndarray], float], x, eps: float = 1e-6) -> np.ndarray:
    """Central-difference gradient of the scalar function ``f`` at ``x`` (float64).

    Returns an array shaped like ``x``; ``x`` itself is never modified.
    """
    x = np.array(x, dtype=np.float64)  # a private copy we may perturb in place
    flat = x.reshape(-1)  # a view: writing flat[i] perturbs x
    grad = np.zeros(x.size)
    for i in range(x.size):
        original = flat[i]
        flat[i] = original + eps
        f_plus = float(f(x))
        flat[i] = original - eps
        f_minus = float(f(x))
        flat[i] = original
        grad[i] = (f_plus - f_minus) / (2 * eps)
    return grad.reshape(x.shape)


def check_gradients(
    f_tensor: Callable[..., Tensor], inputs: dict[str, np.ndarray], eps: float = 1e-6
) -> dict[str, dict]:
    """Compare the engine's gradients of ``f_tensor(**tensors)`` with central differences.

    ``f_tensor`` takes one Tensor keyword argument per entry of ``inputs`` and
    returns a scalar Tensor. Returns, per input name, a dict with

    * ``max_abs_error``: max_i |analytic_i - numerical_i|
    * ``max_rel_error``: max_i |analytic_i - numerical_i| / max(|analytic_i|, |numerical_i|, 1)
      (relative for large entries, absolute for entries below 1, so tiny
      gradients dominated by finite-difference noise do not blow it up)
    * ``analytic`` and ``numerical``: the two gradient arrays.
    """
    arrays = {name: np.array(value, dtype=np.float64) for name, value in inputs.items()}
    tensors = {name: Tensor(value, requires_grad=True) for name, value in arrays.items()}
    out = f_tensor(**tensors)
    if out.size != 1:
        raise ValueError(f"check_gradients: f_tensor must return a scalar, got shape {out.shape}")
    out.backward()

    report = {}
    for name, value in arrays.items():

        def f_of_one(x, name=name):
            with no_grad():
                args = {k: Tensor(x if k == name else v) for k, v in arrays.items()}
                return f_tensor(**args).item()

        numerical = numerical_gradient(f_of_one, value, eps)
        grad = tensors[name].grad
        analytic = np.zeros_like(value) if grad is None else np.asarray(grad, dtype=np.float64)
        diff = np.abs(analytic - numerical)
        scale = np.maximum(np.maximum(np.abs(analytic), np.abs(numerical)), 1.0)
        report[name] = {
            "max_abs_error": float(diff.max(initial=0.0)),
            "max_rel_error": float((diff / scale).max(initial=0.0)),
            "analytic": analytic,
            "numerical": numerical,
        }
    return report
