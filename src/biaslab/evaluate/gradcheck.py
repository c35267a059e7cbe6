"""Check the hand-written MLP's backward pass against three references.

The five closed-form formulas of ``biaslab.scratch.TwoLayerMLP.backward`` are compared, in
float64 on one mini-batch, with (1) our NumPy reverse-mode ``Tensor`` engine, (2) torch.autograd
and (3) central finite differences on a sample of entries of every parameter.
"""

from __future__ import annotations

import numpy as np

from biaslab.scratch import (
    Tensor,
    TwoLayerMLP,
    numerical_gradient,
    softmax_cross_entropy,
)

PARAMS = ("W1", "b1", "W2", "b2")


def _tensor_engine_grads(params: dict, X: np.ndarray, y: np.ndarray) -> dict:
    t = {k: Tensor(v, requires_grad=True) for k, v in params.items()}
    h = (Tensor(X) @ t["W1"].T + t["b1"]).relu()  # (N, H)
    softmax_cross_entropy(h @ t["W2"].T + t["b2"], y).backward()
    return {k: t[k].grad for k in PARAMS}


def _torch_grads(params: dict, X: np.ndarray, y: np.ndarray) -> dict:
    import torch

    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    h = torch.relu(torch.from_numpy(X) @ t["W1"].T + t["b1"])  # (N, H)
    logits = h @ t["W2"].T + t["b2"]
    torch.nn.functional.cross_entropy(logits, torch.from_numpy(y).long()).backward()
    return {k: t[k].grad.numpy() for k in PARAMS}


def report_memory_bytes(n_in: int, n_hidden: int, n_out: int, batch: int = 32) -> int:
    """Estimated peak bytes of :func:`mlp_gradient_report` for a model of these sizes.

    Eight float64 arrays of the parameters' size live at once: the float64 copy, the reference
    model's parameters and our gradients, the Tensor engine's parameters and gradients, torch's
    parameters and gradients, and one perturbed copy for the finite differences; plus the
    activations of the batch in each of the three engines.
    """
    n_in, n_hidden, n_out, batch = int(n_in), int(n_hidden), int(n_out), int(batch)
    parameters = n_hidden * n_in + n_hidden + n_out * n_hidden + n_out
    activations = batch * (n_in + 4 * n_hidden + 3 * n_out)  # per engine; three engines
    return 8 * (8 * parameters + 3 * activations)


def mlp_gradient_report(
    model: TwoLayerMLP, X: np.ndarray, y: np.ndarray, n_fd: int = 20, seed: int = 0
) -> dict[str, float]:
    """Largest absolute gradient differences of the five-formula backward to each reference.

    Args:
        model: the MLP (its parameters are copied to float64; it is not modified).
        X, y: one mini-batch, (N, D) and (N,).
        n_fd: entries per parameter checked by central finite differences (default 20).
        seed: picks those entries.
    """
    params = {k: np.array(model.params[k], dtype=np.float64) for k in PARAMS}
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    ref = TwoLayerMLP(params["W1"].shape[1], params["W1"].shape[0], params["W2"].shape[0], dtype=np.float64)
    ref.load_state_dict(params)
    ref.loss(X, y)
    ours = ref.backward(y)
    engine, torch_ = _tensor_engine_grads(params, X, y), _torch_grads(params, X, y)

    rng = np.random.default_rng(seed)
    fd_err = 0.0
    for k in PARAMS:
        flat = params[k].reshape(-1)
        for i in rng.choice(flat.size, size=min(n_fd, flat.size), replace=False):

            def loss_at(v, k=k, i=i):
                trial = {n: a.copy() for n, a in params.items()}
                trial[k].reshape(-1)[i] = v[0]
                ref.load_state_dict(trial)
                return ref.loss(X, y)

            numeric = numerical_gradient(loss_at, np.array([flat[i]]))[0]
            fd_err = max(fd_err, abs(numeric - ours[k].reshape(-1)[i]))
    ref.load_state_dict(params)
    worst = lambda other: max(float(np.max(np.abs(ours[k] - other[k]))) for k in PARAMS)  # noqa: E731
    return {
        "max_diff_tensor_engine": worst(engine),
        "max_diff_torch": worst(torch_),
        "max_diff_finite_differences": fd_err,
    }
