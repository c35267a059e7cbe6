"""Optimizers on a dict of NumPy parameter arrays, with PyTorch's exact update rules.

Each optimizer holds REFERENCES to the parameter arrays (e.g. ``model.params``) and
``step(grads)`` changes them IN PLACE, given a dict of gradients with the same keys. Notation:
p a parameter, g its gradient, lr the learning rate, wd the weight decay, t the step number.

SGD (torch.optim.SGD, dampening 0):
    g <- g + wd p                                   (L2 weight decay, added to the gradient)
    b <- g                 at the first step,       momentum buffer
    b <- mu b + g          afterwards
    d  = g + mu b          with Nesterov, else d = b      (d = g when mu = 0)
    p <- p - lr d

Adam (torch.optim.Adam, amsgrad off):
    g <- g + wd p
    m <- beta1 m + (1 - beta1) g                    first moment
    v <- beta2 v + (1 - beta2) g^2                  second moment
    m_hat = m / (1 - beta1^t),   v_hat = v / (1 - beta2^t)       bias corrections
    p <- p - lr m_hat / (sqrt(v_hat) + eps)
"""

from __future__ import annotations

import copy

import numpy as np

__all__ = ["SGD", "Adam", "Momentum", "Nesterov"]


class _Optimizer:
    """Shared bookkeeping: the parameter dict, per-parameter state and (de)serialisation."""

    def __init__(self, params: dict[str, np.ndarray], **hyper):
        if not isinstance(params, dict) or not params:
            raise ValueError("params must be a non-empty dict of name -> numpy array")
        if hyper.get("lr", 0.0) < 0:
            raise ValueError(f"lr must be >= 0, got {hyper['lr']}")
        self.params = params
        self.hyper = hyper
        self.state: dict[str, dict[str, np.ndarray]] = {k: {} for k in params}
        self.t = 0  # number of steps taken

    def __getattr__(self, name):  # opt.lr, opt.momentum ... read the hyper-parameters
        hyper = self.__dict__.get("hyper", {})
        if name in hyper:
            return hyper[name]
        raise AttributeError(name)

    def _gradient(self, name: str, grads: dict[str, np.ndarray]) -> np.ndarray:
        """g, plus wd p when weight decay is on (a new array then, so grads stay untouched)."""
        g = grads[name]
        wd = self.hyper["weight_decay"]
        return g + wd * self.params[name] if wd else g

    def step(self, grads: dict[str, np.ndarray]) -> None:
        """Update every parameter in place from ``grads`` (a dict with the same keys)."""
        self.t += 1
        for name in self.params:
            self._update(name, self._gradient(name, grads))

    def _update(self, name: str, g: np.ndarray) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict:
        """A deep copy of the hyper-parameters, the step count and every buffer."""
        return {"hyper": dict(self.hyper), "t": self.t, "state": copy.deepcopy(self.state)}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned (copies it; parameters are not touched)."""
        if set(state["state"]) != set(self.params):
            raise KeyError(f"expected keys {sorted(self.params)}, got {sorted(state['state'])}")
        self.hyper = dict(state["hyper"])
        self.t = int(state["t"])
        self.state = copy.deepcopy(state["state"])


class SGD(_Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum and weight decay.

    Args:
        params: name -> parameter array, updated in place.
        lr: learning rate.
        momentum: mu; 0 gives plain SGD.
        nesterov: use the Nesterov update d = g + mu b (needs momentum > 0).
        weight_decay: wd, added to the gradient as wd p.
    """

    def __init__(
        self, params, lr: float, momentum: float = 0.0, nesterov: bool = False, weight_decay: float = 0.0
    ):
        if momentum < 0 or weight_decay < 0:
            raise ValueError("momentum and weight_decay must be >= 0")
        if nesterov and momentum <= 0:
            raise ValueError("Nesterov momentum needs momentum > 0")
        super().__init__(params, lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay)

    def _update(self, name: str, g: np.ndarray) -> None:
        p, lr, mu = self.params[name], self.hyper["lr"], self.hyper["momentum"]
        if mu:
            state = self.state[name]
            b = state.get("momentum_buffer")
            if b is None:
                b = state["momentum_buffer"] = g.copy()  # eq.: b = g at the first step
            else:
                b *= mu  # eq.: b = mu b + g
                b += g
            g = g + mu * b if self.hyper["nesterov"] else b  # eq.: d = g + mu b  |  d = b
        # eq.: p <- p - lr d, in place; the scratch product lr*d has p's dtype.
        scratch = self.state[name].get("scratch")
        if scratch is None or scratch.shape != p.shape:
            scratch = self.state[name]["scratch"] = np.empty_like(p)
        np.multiply(g, lr, out=scratch, casting="unsafe")
        p -= scratch

    def state_dict(self) -> dict:
        state = super().state_dict()
        for buffers in state["state"].values():  # the scratch array is not state
            buffers.pop("scratch", None)
        return state


def Momentum(params, lr: float, momentum: float = 0.9, weight_decay: float = 0.0) -> SGD:
    """SGD with heavy-ball momentum (``SGD(..., momentum=0.9)``)."""
    return SGD(params, lr, momentum=momentum, weight_decay=weight_decay)


def Nesterov(params, lr: float, momentum: float = 0.9, weight_decay: float = 0.0) -> SGD:
    """SGD with Nesterov momentum (``SGD(..., momentum=0.9, nesterov=True)``)."""
    return SGD(params, lr, momentum=momentum, nesterov=True, weight_decay=weight_decay)


class Adam(_Optimizer):
    """Adam with bias correction (Kingma & Ba), in PyTorch's formulation.

    Args:
        params: name -> parameter array, updated in place.
        lr: learning rate.
        betas: (beta1, beta2), decay rates of the first and second moments.
        eps: added to sqrt(v_hat) in the denominator.
        weight_decay: wd, added to the gradient as wd p (L2, not AdamW's decoupled decay).
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ):
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"betas must be in [0, 1), got {betas}")
        if eps < 0 or weight_decay < 0:
            raise ValueError("eps and weight_decay must be >= 0")
        super().__init__(params, lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)

    def _update(self, name: str, g: np.ndarray) -> None:
        p, state = self.params[name], self.state[name]
        lr, (beta1, beta2), eps = self.hyper["lr"], self.hyper["betas"], self.hyper["eps"]
        if not state:
            state["exp_avg"] = np.zeros_like(p)  # m
            state["exp_avg_sq"] = np.zeros_like(p)  # v
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m *= beta1  # eq.: m = beta1 m + (1 - beta1) g
        m += (1 - beta1) * g
        v *= beta2  # eq.: v = beta2 v + (1 - beta2) g^2
        v += (1 - beta2) * (g * g)
        bias1 = 1 - beta1**self.t  # eq.: m_hat = m / (1 - beta1^t)
        bias2 = 1 - beta2**self.t  # eq.: v_hat = v / (1 - beta2^t)
        # eq.: p -= lr m_hat / (sqrt(v_hat) + eps), arranged as torch does:
        #      denom = sqrt(v) / sqrt(bias2) + eps,  p -= (lr / bias1) m / denom
        denom = np.sqrt(v) / np.sqrt(bias2) + eps
        p -= (lr / bias1) * m / denom
