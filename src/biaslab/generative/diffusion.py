"""Denoising diffusion: a noise schedule, ε-prediction training, and the DDPM and DDIM samplers.

The forward process adds Gaussian noise in T small steps (Ho et al. 2020, "DDPM"):

    q(x_t | x_{t-1}) = N(√α_t x_{t-1}, β_t I),  α_t = 1 − β_t                       (eq. 2)

and, composing the steps, jumps to any t in closed form with ᾱ_t = Π_{s≤t} α_s:

    x_t = √ᾱ_t x_0 + √(1 − ᾱ_t) ε,  ε ~ N(0, I)                                     (eq. 4)

A network ε_θ(x_t, t) learns to predict the noise, L = E ||ε − ε_θ(x_t, t)||² (eq. 14, "L_simple").
Sampling runs the chain backwards from x_T ~ N(0, I):

* **DDPM** (Algorithm 2): every one of the T steps, through the posterior q(x_{t−1} | x_t, x̂_0)
  with x̂_0 the clean sample the network's ε implies (eq. 15) and mean μ̃ (eq. 7), plus fresh
  noise of variance σ_t² = β_t or β̃_t = β_t (1 − ᾱ_{t−1}) / (1 − ᾱ_t);
* **DDIM** (Song et al. 2021, eq. 12): any decreasing sub-list τ of the timesteps,
  x_{τ'} = √ᾱ_{τ'} x̂_0 + √(1 − ᾱ_{τ'} − σ²) ε_θ + σ z with σ = η √((1 − ᾱ_{τ'})/(1 − ᾱ_τ)) √(1 − ᾱ_τ/ᾱ_{τ'});
  η = 0 is deterministic, and η = 1 over all T steps is DDPM with σ_t² = β̃_t (tested).

Indexing: timestep index ``t`` in ``0 … T−1`` is the paper's step t + 1, so ``alpha_bars[0]`` is ᾱ_1
and "before step 0" is the clean data (ᾱ = 1). The previous timestep of a sampler is always the
next entry of its own timestep list (``-1`` after the last): never ``t − T // steps``, which is
wrong for every spacing but one.

Reproducibility: a sampler draws x_T and each step's noise for all ``n`` samples at once from one
``torch.Generator`` seeded by ``seed``, and evaluates the network ``batch_size`` rows at a time, so
the samples do not depend on the batch size.

:class:`NoiseSchedule` (linear or cosine; ``q_sample`` eq. 4, ``forward_step`` eq. 2,
``timesteps(steps, spacing)`` from T−1 to 0, linearly or quadratically spaced),
:func:`diffusion_loss` and :func:`diffusion_step` (a Trainer step), :class:`DDPM` (β or β̃
variance, x̂_0 clipping) and :class:`DDIM` (η), both returning :class:`Sampled`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from biaslab.nn.mlp import device_of
from biaslab.train.steps import StepOutput

Denoiser = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # ε_θ(x_t (N, ...), t (N,) long)

__all__ = ["DDIM", "DDPM", "NoiseSchedule", "Sampled", "diffusion_loss", "diffusion_step"]


class NoiseSchedule:
    """β_1 … β_T and the products the samplers need, in float64.

    Args:
        betas: (T,) noise variances of the forward steps, each in (0, 1).

    Attributes:
        betas, alphas (= 1 − β), alpha_bars (= cumulative products ᾱ): (T,) float64 tensors.
    """

    def __init__(self, betas: torch.Tensor | Sequence[float]):
        betas = torch.as_tensor(betas, dtype=torch.float64)
        if betas.dim() != 1 or len(betas) < 1:
            raise ValueError(f"betas must be a non-empty 1-D sequence, got shape {tuple(betas.shape)}")
        if not bool(((betas > 0) & (betas < 1)).all()):
            raise ValueError("every beta must lie in (0, 1)")
        self.betas = betas
        self.alphas = 1.0 - betas
        self.alpha_bars = torch.cumprod(self.alphas, dim=0)

    @classmethod
    def linear(cls, steps: int = 1000, beta_start: float = 1e-4, beta_end: float = 0.02) -> NoiseSchedule:
        """β rising linearly from ``beta_start`` to ``beta_end`` over ``steps`` (Ho et al. 2020, §4)."""
        return cls(torch.linspace(beta_start, beta_end, steps, dtype=torch.float64))

    @classmethod
    def cosine(cls, steps: int = 1000, s: float = 0.008, max_beta: float = 0.999) -> NoiseSchedule:
        """ᾱ_t = f(t)/f(0), f(t) = cos²(π/2 · (t/T + s)/(1 + s)), β_t = 1 − ᾱ_t/ᾱ_{t−1} clipped at
        ``max_beta`` (Nichol & Dhariwal 2021, eq. 17): noise is added more evenly than linearly."""
        t = torch.arange(steps + 1, dtype=torch.float64) / steps
        f = torch.cos((t + s) / (1 + s) * math.pi / 2) ** 2  # (T + 1,)
        alpha_bars = f / f[0]
        return cls((1 - alpha_bars[1:] / alpha_bars[:-1]).clamp(max=max_beta))

    def __len__(self) -> int:
        return len(self.betas)

    def __repr__(self) -> str:
        return f"NoiseSchedule(T={len(self)}, beta {self.betas[0]:.2e} .. {self.betas[-1]:.2e})"

    def alpha_bar(self, t: int) -> float:
        """ᾱ at timestep index ``t``; 1.0 for ``t = -1`` (the clean data)."""
        return 1.0 if t < 0 else float(self.alpha_bars[t])

    def _per_sample(self, values: torch.Tensor, t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        """``values[t]`` shaped to broadcast over samples: (N,) -> (N, 1, ..., 1), in ``like``'s
        dtype and on its device."""
        if t.dim() != 1 or len(t) != len(like):
            raise ValueError(f"t must be (N,) with N = {len(like)}, got shape {tuple(t.shape)}")
        if bool((t < 0).any()) or bool((t >= len(self)).any()):
            raise ValueError(f"timestep indices must lie in 0..{len(self) - 1}")
        # Cast before moving: the float64 table cannot go to MPS, which has no float64.
        values = values.to(like.dtype).to(like.device)
        return values[t.long().to(like.device)].view(-1, *[1] * (like.dim() - 1))

    def q_sample(self, x0: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """x_t = √ᾱ_t x_0 + √(1 − ᾱ_t) ε (eq. 4). Shapes: x0, noise (N, ...); t (N,) -> (N, ...)."""
        a = self._per_sample(self.alpha_bars, t, x0)
        return a.sqrt() * x0 + (1 - a).sqrt() * noise

    def forward_step(self, x_prev: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """One step of the chain, x_t = √α_t x_{t−1} + √β_t ε (eq. 2). Shapes as :meth:`q_sample`."""
        a = self._per_sample(self.alphas, t, x_prev)
        return a.sqrt() * x_prev + (1 - a).sqrt() * noise

    def timesteps(self, steps: int, spacing: str = "linear") -> list[int]:
        """``steps`` distinct timestep indices from T − 1 down to 0, both included, decreasing: the
        first step starts from pure noise's level, the last ends on the data.

        Args:
            spacing: ``"linear"`` (evenly spaced, default) or ``"quadratic"`` (t ∝ s², denser at
                low noise, where few steps lose most detail: Song et al. 2021's choice for CIFAR-10).
        """
        if not 1 <= steps <= len(self):
            raise ValueError(f"steps must be in 1..{len(self)}, got {steps}")
        if spacing not in ("linear", "quadratic"):
            raise ValueError(f"spacing must be 'linear' or 'quadratic', got {spacing!r}")
        if steps == 1:
            return [len(self) - 1]
        s = torch.linspace(1, 0, steps, dtype=torch.float64)  # (steps,) from 1 to 0
        spaced = ((s if spacing == "linear" else s**2) * (len(self) - 1)).round().long().tolist()
        for i in range(1, steps):  # rounding can repeat a small t: push each below its predecessor
            spaced[i] = min(spaced[i], spaced[i - 1] - 1)
        for i in range(steps - 1, -1, -1):  # ... and keep them >= 0, distinct, from the end
            spaced[i] = max(spaced[i], steps - 1 - i)
        return spaced


def diffusion_loss(model: Denoiser, x0: torch.Tensor, schedule: NoiseSchedule, generator: torch.Generator):
    """L_simple (eq. 14, Algorithm 1): t ~ U{0..T−1}, ε ~ N(0, I), ||ε − ε_θ(x_t, t)||² averaged.

    ``x0`` is moved to the model's device when ``model`` is a module; ``t`` and ε are drawn on the
    generator's device and moved to ``x0``'s. Returns ``(loss, eps_pred, eps)``. Shapes: x0 (N, ...)."""
    if isinstance(model, nn.Module):
        x0 = x0.to(device_of(model))
    # 1. a timestep per sample, 2. the noise to predict
    t = torch.randint(0, len(schedule), (len(x0),), generator=generator, device=generator.device)
    eps = torch.randn(x0.shape, generator=generator, dtype=x0.dtype, device=generator.device)
    t, eps = t.to(x0.device), eps.to(x0.device)
    x_t = schedule.q_sample(x0, t, eps)  # 3. jump to x_t in closed form (eq. 4)
    eps_pred = model(x_t, t)  # 4. predict it
    return nn.functional.mse_loss(eps_pred, eps), eps_pred, eps


def diffusion_step(schedule: NoiseSchedule):
    """A Trainer step function training ``model`` by :func:`diffusion_loss` on batches ``(x0, ...)``;
    the timesteps and noise come from the trainer's own (checkpointed) generator."""

    def step(model: nn.Module, batch, generator: torch.Generator) -> StepOutput:
        x0 = batch[0] if isinstance(batch, (tuple, list)) else batch
        loss, eps_pred, eps = diffusion_loss(model, x0, schedule, generator)
        return StepOutput(loss, {}, eps_pred, eps)

    return step


@dataclass
class Sampled:
    """What a sampler returns: the samples, the states it was asked to keep, and its cost.

    ``snapshots`` maps a timestep index to x_t as it entered that step (``-1``: the final
    samples); ``evaluations`` counts network evaluations per sample (one per step)."""

    x: torch.Tensor
    snapshots: dict[int, torch.Tensor] = field(default_factory=dict)
    evaluations: int = 0


class _Sampler:
    """The reverse loop both samplers share; each supplies its timesteps and its update."""

    schedule: NoiseSchedule
    timesteps: list[int]

    def _sigma(self, t: int, t_prev: int) -> float:
        raise NotImplementedError

    def _update(self, x: torch.Tensor, eps: torch.Tensor, t: int, t_prev: int) -> torch.Tensor:
        """The noise-free part of x_{t_prev} given x_t and the predicted ε."""
        raise NotImplementedError

    def _x0(self, x: torch.Tensor, eps: torch.Tensor, t: int) -> torch.Tensor:
        """x̂_0 = (x_t − √(1 − ᾱ_t) ε) / √ᾱ_t (eq. 15 solved for x_0), optionally clipped."""
        a = self.schedule.alpha_bar(t)
        x0 = (x - math.sqrt(1 - a) * eps) / math.sqrt(a)
        return x0 if self.clip is None else x0.clamp(-self.clip, self.clip)

    def step(
        self, x: torch.Tensor, eps: torch.Tensor, t: int, t_prev: int, noise: torch.Tensor | None
    ) -> torch.Tensor:
        """One reverse step: x_{t_prev} from x_t and the predicted ε, the update's mean plus σ times
        ``noise`` (a fresh N(0, I) draw; unused, and may be None, where σ = 0, as at the last step).

        Shapes: x, eps, noise (N, ...) -> (N, ...); t, t_prev timestep indices (t_prev = -1: the data).
        """
        mean = self._update(x, eps, t, t_prev)
        sigma = self._sigma(t, t_prev)
        return mean + sigma * noise if sigma > 0 else mean

    @torch.no_grad()
    def sample(
        self,
        model: Denoiser,
        shape: Sequence[int],
        seed: int,
        batch_size: int = 1024,
        keep: Sequence[int] = (),
    ) -> Sampled:
        """Draw ``shape[0]`` samples of shape ``shape[1:]``, on the model's device.

        The noise is drawn on the CPU and moved there, so one seed gives the same samples, up to
        rounding, on every device.

        Args:
            model: ε_θ(x_t, t); put in eval mode here if it is a module (a plain function runs
                on the CPU).
            shape: (n, ...) of the samples.
            seed: seeds the one generator of x_T and every step's noise.
            batch_size: rows per network evaluation (the samples do not depend on it).
            keep: timestep indices whose x_t (as it enters that step) to keep, and -1 for the end.
        """
        device = torch.device("cpu")
        if isinstance(model, nn.Module):
            model.eval()
            device = device_of(model)
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(tuple(shape), generator=generator).to(device)  # x_T ~ N(0, I)
        kept = {}
        for t, t_prev in zip(self.timesteps, [*self.timesteps[1:], -1]):
            if t in keep:
                kept[t] = x.clone()
            eps = torch.cat(
                [
                    model(chunk, torch.full((len(chunk),), t, dtype=torch.long, device=device))
                    for chunk in x.split(batch_size)
                ]
            )  # (n, ...): ε_θ(x_t, t)
            fresh = torch.randn(x.shape, generator=generator) if self._sigma(t, t_prev) > 0 else None
            x = self.step(x, eps, t, t_prev, None if fresh is None else fresh.to(device))
        if -1 in keep:
            kept[-1] = x.clone()
        return Sampled(x, kept, len(self.timesteps))


class DDPM(_Sampler):
    """Ancestral sampling over all T steps (Ho et al. 2020, Algorithm 2), written through the
    posterior mean so that x̂_0 can be clipped.

    Args:
        schedule: the :class:`NoiseSchedule` the model was trained with.
        variance: ``"beta"`` (σ_t² = β_t, default, as Algorithm 2) or ``"posterior"``
            (σ_t² = β̃_t = β_t (1 − ᾱ_{t−1}) / (1 − ᾱ_t), the true posterior's variance).
        clip: clip x̂_0 to [−clip, clip] before the posterior mean (default None: no clipping; then
            the update equals Algorithm 2's x_{t−1} = (x_t − β_t/√(1 − ᾱ_t) ε) / √α_t exactly).
    """

    def __init__(self, schedule: NoiseSchedule, variance: str = "beta", clip: float | None = None):
        if variance not in ("beta", "posterior"):
            raise ValueError(f"variance must be 'beta' or 'posterior', got {variance!r}")
        self.schedule, self.variance, self.clip = schedule, variance, clip
        self.timesteps = list(range(len(schedule) - 1, -1, -1))

    def __repr__(self) -> str:
        return f"DDPM(T={len(self.schedule)}, variance={self.variance!r}, clip={self.clip})"

    def _update(self, x, eps, t, t_prev):
        # μ̃_t(x_t, x̂_0) = √ᾱ_{t−1} β_t/(1 − ᾱ_t) · x̂_0 + √α_t (1 − ᾱ_{t−1})/(1 − ᾱ_t) · x_t  (eq. 7)
        a, a_prev = self.schedule.alpha_bar(t), self.schedule.alpha_bar(t_prev)
        beta = float(self.schedule.betas[t])
        x0_coef = math.sqrt(a_prev) * beta / (1 - a)
        xt_coef = math.sqrt(1 - beta) * (1 - a_prev) / (1 - a)
        return x0_coef * self._x0(x, eps, t) + xt_coef * x

    def _sigma(self, t, t_prev):
        if t_prev < 0:
            return 0.0  # the last step adds no noise (Algorithm 2: z = 0 at t = 1)
        beta = float(self.schedule.betas[t])
        if self.variance == "beta":
            return math.sqrt(beta)
        a, a_prev = self.schedule.alpha_bar(t), self.schedule.alpha_bar(t_prev)
        return math.sqrt(beta * (1 - a_prev) / (1 - a))


class DDIM(_Sampler):
    """Sampling over a decreasing sub-list of the timesteps (Song et al. 2021, eq. 12).

    Args:
        schedule: the :class:`NoiseSchedule` the model was trained with.
        steps: how many timesteps (default 50), from :meth:`NoiseSchedule.timesteps`.
        eta: the share of the posterior's noise kept (default 0: deterministic).
        clip: clip x̂_0 to [−clip, clip] (default None).
        spacing: of the timesteps, ``"linear"`` (default) or ``"quadratic"``
            (:meth:`NoiseSchedule.timesteps`).
    """

    def __init__(
        self,
        schedule: NoiseSchedule,
        steps: int = 50,
        eta: float = 0.0,
        clip: float | None = None,
        spacing: str = "linear",
    ):
        if eta < 0:
            raise ValueError(f"eta must be >= 0, got {eta}")
        self.schedule, self.eta, self.clip, self.spacing = schedule, eta, clip, spacing
        self.timesteps = schedule.timesteps(steps, spacing)

    def __repr__(self) -> str:
        return (
            f"DDIM(steps={len(self.timesteps)}, eta={self.eta}, spacing={self.spacing!r}, clip={self.clip})"
        )

    def _sigma(self, t, t_prev):
        # σ = η √((1 − ᾱ_{t'})/(1 − ᾱ_t)) √(1 − ᾱ_t/ᾱ_{t'})  (eq. 16)
        a, a_prev = self.schedule.alpha_bar(t), self.schedule.alpha_bar(t_prev)
        return self.eta * math.sqrt((1 - a_prev) / (1 - a) * (1 - a / a_prev))

    def _update(self, x, eps, t, t_prev):
        # x_{t'} = √ᾱ_{t'} x̂_0 + √(1 − ᾱ_{t'} − σ²) ε_θ   (eq. 12, without the σ z term)
        a, a_prev = self.schedule.alpha_bar(t), self.schedule.alpha_bar(t_prev)
        x0 = self._x0(x, eps, t)
        if self.clip is not None:
            eps = (x - math.sqrt(a) * x0) / math.sqrt(1 - a)  # the ε the clipped x̂_0 implies
        direction = math.sqrt(max(1 - a_prev - self._sigma(t, t_prev) ** 2, 0.0))
        return math.sqrt(a_prev) * x0 + direction * eps
