"""Normalizing flows: an invertible network and the change of variables (RealNVP's affine coupling).

A flow is a bijection f: x ↦ z onto a simple base density p_Z (here the standard normal), so the
density of the data follows exactly from the change of variables (Dinh et al. 2017, "Density
estimation using Real NVP", eq. 3):

    log p_X(x) = log p_Z(f(x)) + log |det ∂f(x)/∂xᵀ|                                   (eq. 3)

and training maximises it: the loss is the negative log-likelihood, no bound, no sampling. An
**affine coupling layer** keeps the coordinates a binary mask b selects and moves the others by a
scale and a shift computed from the kept ones (eq. 9):

    y = b ⊙ x + (1 − b) ⊙ (x ⊙ exp(s(b ⊙ x)) + t(b ⊙ x))                                (eq. 9)

Its Jacobian is triangular, so log |det ∂y/∂xᵀ| = Σ_j (1 − b_j) s(b ⊙ x)_j (eq. 6), and its
inverse needs neither s nor t inverted (eq. 8):

    x = b ⊙ y + (1 − b) ⊙ (y − t(b ⊙ y)) ⊙ exp(−s(b ⊙ y))                              (eq. 8)

Alternating masks let every coordinate be moved. s and t are any networks (here an MLP); s is
bounded by a learned multiple of tanh so that one step cannot blow up exp(s).

**Conditional flows** (a cINN, Ardizzone et al. 2019): s and t also read a condition c, so the
flow models p(x | c). Unfolding a detector (Bellagente et al. 2020, "Invertible networks or
partons to detector and back again") trains f(x_truth; c = x_detector) on simulated pairs; then
z ~ N(0, I) inverted given a measured event draws truth-level values for it.

**Bounded data** (Dinh et al. 2017, sec. 4.1, the logit of pixel values): a flow's samples cover
the whole real line, so values that live in [a, b) (a spectrum that starts at zero) are modelled
as u = logit((x − a)/(b − a)) and mapped back by x = a + (b − a)·σ(u): no draw falls outside.

Direction convention: ``forward`` maps data to latent (what the likelihood evaluates);
``inverse`` and ``sample`` map latent to data.

:class:`AffineCoupling` starts as the identity (its last layer zero), :class:`RealNVP` stacks them
with alternating masks (``forward``, ``inverse``, ``log_prob``, ``sample(n, c, seed=)``, which
does not depend on the batch size), and :func:`flow_step` is the NLL as a Trainer step. The
log-determinant equals autograd's Jacobian (tested).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from biaslab.nn.mlp import device_of
from biaslab.train.steps import StepOutput

__all__ = ["AffineCoupling", "RealNVP", "flow_step", "from_unbounded", "to_unbounded"]

LOG_2PI = math.log(2 * math.pi)


class AffineCoupling(nn.Module):
    """One affine coupling layer (eq. 9), optionally conditioned on ``c``.

    Args:
        mask: (D,) 0/1, the coordinates kept (1) and those moved (0); both kinds present.
        hidden: width of the two hidden layers of the network giving s and t.
        condition_dim: size of the condition c (0: unconditional).

    Shapes:
        x (N, D), c (N, condition_dim) or None -> y (N, D), log|det| (N,).
    """

    def __init__(self, mask: torch.Tensor, hidden: int = 64, condition_dim: int = 0):
        super().__init__()
        mask = torch.as_tensor(mask, dtype=torch.float32)
        if mask.dim() != 1 or not (0 < mask.sum() < len(mask)) or not torch.all((mask == 0) | (mask == 1)):
            raise ValueError(f"mask must be a 0/1 vector with both values, got {mask.tolist()}")
        self.register_buffer("mask", mask)
        dim = len(mask)
        self.condition_dim = condition_dim
        self.net = nn.Sequential(
            nn.Linear(dim + condition_dim, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, 2 * dim),
        )  # fmt: skip
        nn.init.zeros_(self.net[-1].weight)  # starts as the identity: s = t = 0
        nn.init.zeros_(self.net[-1].bias)
        self.scale = nn.Parameter(torch.ones(dim))  # s = scale · tanh(raw s)

    def _s_t(self, kept: torch.Tensor, c: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        inputs = kept if c is None else torch.cat([kept, c], dim=1)  # (N, D + C)
        raw_s, t = self.net(inputs).chunk(2, dim=1)  # (N, D) each
        moved = 1 - self.mask
        return moved * self.scale * torch.tanh(raw_s), moved * t  # zero on the kept coordinates

    def forward(self, x: torch.Tensor, c: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        kept = self.mask * x
        s, t = self._s_t(kept, self._checked(x, c))
        y = kept + (1 - self.mask) * (x * torch.exp(s) + t)  # eq. 9
        return y, s.sum(dim=1)  # eq. 6: the moved coordinates' s

    def inverse(self, y: torch.Tensor, c: torch.Tensor | None = None) -> torch.Tensor:
        kept = self.mask * y
        s, t = self._s_t(kept, self._checked(y, c))
        return kept + (1 - self.mask) * (y - t) * torch.exp(-s)  # eq. 8

    def _checked(self, x: torch.Tensor, c: torch.Tensor | None) -> torch.Tensor | None:
        if (c is None) != (self.condition_dim == 0):
            raise ValueError(
                f"this layer takes a condition of size {self.condition_dim}"
                if self.condition_dim
                else "this layer is unconditional: give no condition"
            )
        if c is not None and tuple(c.shape) != (len(x), self.condition_dim):
            raise ValueError(
                f"condition of shape {tuple(c.shape)}; expected ({len(x)}, {self.condition_dim})"
            )
        return c


class RealNVP(nn.Module):
    """A stack of affine couplings with alternating masks over a standard-normal base (eq. 3).

    Args:
        dim: D, the data's dimension (at least 2: a coupling keeps some coordinates and moves
            the others).
        layers: coupling layers; even and odd coordinates take turns being moved.
        hidden: width of each layer's s-and-t network.
        condition_dim: size of a condition c (0: the flow models p(x); else p(x | c)).

    Shapes:
        x (N, D), c (N, condition_dim) or None; z (N, D); log-densities (N,) in nats.
    """

    def __init__(self, dim: int, layers: int = 6, hidden: int = 64, condition_dim: int = 0):
        super().__init__()
        if dim < 2:
            raise ValueError(f"dim={dim}: a coupling layer needs at least 2 dimensions")
        if layers < 1:
            raise ValueError(f"layers={layers}: at least one coupling layer")
        self.dim, self.condition_dim = dim, condition_dim
        even = (torch.arange(dim) % 2 == 0).float()  # (D,) 1, 0, 1, ...
        self.couplings = nn.ModuleList(
            AffineCoupling(even if k % 2 == 0 else 1 - even, hidden, condition_dim) for k in range(layers)
        )

    def forward(self, x: torch.Tensor, c: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """z = f(x) and log |det ∂f/∂xᵀ|, the layers' log-determinants summed (chain rule)."""
        log_det = torch.zeros(len(x), dtype=x.dtype, device=x.device)
        for coupling in self.couplings:
            x, layer_log_det = coupling(x, c)
            log_det = log_det + layer_log_det
        return x, log_det

    def inverse(self, z: torch.Tensor, c: torch.Tensor | None = None) -> torch.Tensor:
        """x = f⁻¹(z), the layers inverted in reverse order."""
        for coupling in reversed(self.couplings):
            z = coupling.inverse(z, c)
        return z

    def log_prob(self, x: torch.Tensor, c: torch.Tensor | None = None) -> torch.Tensor:
        """log p_X(x) (or log p(x | c)) in nats (eq. 3), the base a standard normal."""
        z, log_det = self(x, c)
        base = -0.5 * (z**2).sum(dim=1) - 0.5 * self.dim * LOG_2PI  # log N(z; 0, I)
        return base + log_det

    @torch.no_grad()
    def sample(
        self, n: int, c: torch.Tensor | None = None, *, seed: int = 0, batch_size: int = 4096
    ) -> torch.Tensor:
        """n draws x = f⁻¹(z), z ~ N(0, I) from a CPU generator seeded by ``seed`` (all n drawn at
        once, so the draws do not depend on ``batch_size``, the samples only up to the rounding of
        matrix products blocked by batch); with a condition, one per row of c.

        Shapes:
            c (n, condition_dim) or None -> (n, D).
        """
        if c is not None and len(c) != n:
            raise ValueError(f"{len(c)} conditions for {n} samples: give one per sample")
        z = torch.randn(n, self.dim, generator=torch.Generator().manual_seed(seed))  # (n, D)
        device = device_of(self)
        was_training = self.training
        self.eval()
        parts = []
        for i in range(0, n, batch_size):
            rows = slice(i, i + batch_size)
            parts.append(self.inverse(z[rows].to(device), None if c is None else c[rows].to(device)).cpu())
        self.train(was_training)
        return torch.cat(parts) if parts else z


def flow_step(conditional: bool = False):
    """A Trainer step maximising the likelihood: the loss is the mean negative log-likelihood in
    nats per example (eq. 3), on batches ``(x, ...)``, or ``(x, c, ...)`` for a conditional flow."""

    def step(model: nn.Module, batch, generator: torch.Generator) -> StepOutput:
        x = batch[0] if isinstance(batch, (tuple, list)) else batch
        nll = -model.log_prob(x, batch[1] if conditional else None)  # (B,)
        return StepOutput(nll.mean(), {"nll": nll.mean().detach()})

    return step


def to_unbounded(x: torch.Tensor, low: float, high: float, eps: float = 1e-6) -> torch.Tensor:
    """u = logit((x − low)/(high − low)), values in [low, high) onto the real line (sec. 4.1); the
    share is clamped to [eps, 1 − eps] so that an end point maps to a finite u."""
    return torch.logit((x - low) / (high - low), eps=eps)


def from_unbounded(u: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """x = low + (high − low)·σ(u): the inverse of :func:`to_unbounded`, always in [low, high]."""
    return low + (high - low) * torch.sigmoid(u)
