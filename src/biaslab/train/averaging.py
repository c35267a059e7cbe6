"""An exponential moving average of the weights (Polyak averaging), for evaluation and sampling.

Late in training, SGD's iterates jitter around a minimum with the noise of the mini-batches; their
running average sits closer to it. Diffusion models sample from the averaged weights (Ho et al.
2020 use decay 0.9999), and so do many image classifiers. After every optimizer step

    θ̄ ← d·θ̄ + (1 − d)·θ        (the first step copies θ: θ̄ = θ)

so θ̄ weighs the step k back by (1 − d)·dᵏ: an average over the last ~1/(1 − d) steps. Buffers
(BatchNorm's running statistics) are averages already and are copied, not averaged.

With a large d the first weights linger: after k steps they still weigh dᵏ (0.999⁹⁰⁰ ≈ 0.41).
The warm-up of TensorFlow's ``ExponentialMovingAverage(num_updates=...)`` (and diffusers'
EMAModel) caps the decay at the u-th update by

    d_u = min(d, (1 + u) / (10 + u))

so that θ̄ forgets the start quickly (1 − d_u = 9/(10 + u)) and the decay reaches d after
u = (10·d − 1)/(1 − d) updates (about 9,000 for d = 0.999).

Without warm-up, equal to ``torch.optim.swa_utils.AveragedModel`` with
``get_ema_multi_avg_fn(d)`` (tested); with it, to the formula above step by step (tested).

:class:`WeightAveraging` (the config's ``ema_decay``) is the callback: updated after each optimizer
step, the model holds θ̄ for each validation and ends holding it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import torch
from torch import nn

from biaslab.formatting import quoted
from biaslab.train.checkpoint import check_tensors, is_count


class WeightAverage:
    """θ̄, the exponential moving average of ``model``'s parameters.

    Args:
        decay: d in θ̄ ← d·θ̄ + (1 − d)·θ, in [0, 1); 0 keeps the last weights.
        warmup: cap the decay at (1 + u) / (10 + u) on the u-th update (default True).

    Usage: :meth:`update` after each optimizer step; ``with average.applied(model):`` to
    evaluate (or sample) with θ̄; :meth:`copy_to` to keep θ̄ for good.
    """

    def __init__(self, decay: float, warmup: bool = True):
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"decay must be in [0, 1), got {decay}")
        self.decay = decay
        self.warmup = warmup
        self.updates = 0
        self.shadow: dict[str, torch.Tensor] = {}  # parameter name -> θ̄

    def current_decay(self) -> float:
        """d_u for the next update: d, capped by (1 + u) / (10 + u) during warm-up."""
        if not self.warmup:
            return self.decay
        return min(self.decay, (1 + self.updates) / (10 + self.updates))

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        """θ̄ ← d·θ̄ + (1 − d)·θ, as θ̄ + (1 − d)·(θ − θ̄); the first call copies θ."""
        params = {name: p.detach() for name, p in model.named_parameters()}
        if not self.shadow:
            self.shadow = {name: p.clone() for name, p in params.items()}
        else:
            names, weight = list(self.shadow), 1 - self.current_decay()
            torch._foreach_lerp_([self.shadow[n] for n in names], [params[n] for n in names], weight)
        self.updates += 1

    @torch.no_grad()
    def copy_to(self, model: nn.Module) -> None:
        """θ ← θ̄ (a no-op before the first update)."""
        for name, p in model.named_parameters():
            if name in self.shadow:
                p.copy_(self.shadow[name])

    @contextmanager
    def applied(self, model: nn.Module) -> Iterator[nn.Module]:
        """Within the block the model holds θ̄; its own θ comes back on exit (even on error)."""
        if not self.shadow:
            yield model
            return
        with torch.no_grad():
            kept = {name: p.detach().clone() for name, p in model.named_parameters()}
        self.copy_to(model)
        try:
            yield model
        finally:
            with torch.no_grad():
                for name, p in model.named_parameters():
                    p.copy_(kept[name])

    def state_dict(self) -> dict:
        return {"decay": self.decay, "updates": self.updates, "shadow": dict(self.shadow)}

    def load_state_dict(self, state: dict, model: nn.Module | None = None) -> None:
        """Restore what :meth:`state_dict` returned; with ``model``, θ̄ must fit its parameters.

        A state this object could not have returned is a ValueError naming the field, and
        changes nothing.
        """
        if not isinstance(state, dict):
            raise ValueError(f"weight-average state {quoted(state)}, not a dict")
        missing = [key for key in ("decay", "updates", "shadow") if key not in state]
        if missing:
            raise ValueError(f"weight-average state without {', '.join(missing)}")
        if state["decay"] != self.decay:
            raise ValueError(f"a weight average with decay {quoted(state['decay'])}, not {self.decay}")
        updates, shadow = state["updates"], state["shadow"]
        if not is_count(updates):
            raise ValueError(f"updates={quoted(updates)}, not a count (an int >= 0)")
        # θ̄ holds nothing before the first update, every parameter from it on
        params = dict(model.named_parameters()) if model is not None else None
        check_tensors("shadow", shadow, params if updates else {})
        self.updates = updates
        self.shadow = {name: t.clone() for name, t in shadow.items()}


class WeightAveraging:
    """A trainer callback (:mod:`biaslab.train.callbacks`): keep θ̄ of ``decay`` over the
    training, validate with it, and end the training holding it.

    θ̄ is updated after every optimizer step; for each validation the model holds θ̄ (so early
    stopping and keep-the-best judge, and keep the weights of, θ̄), then its own θ again, except
    after the validation (or divergence) that ends the training: the model keeps θ̄.
    """

    state_key = "weight_average"

    def __init__(self, decay: float, warmup: bool = True):
        self.average = WeightAverage(decay, warmup)
        self._validating = ExitStack()  # holds ``average.applied(model)`` during a validation

    def on_step_end(self, trainer) -> None:
        self.average.update(trainer.model)

    def on_validation_start(self, trainer) -> None:
        self._validating.enter_context(self.average.applied(trainer.model))

    def on_validation_end(self, trainer, record: dict) -> None:
        self._validating.close()  # the model gets its own θ back
        if trainer.stopping:  # the validation (or divergence) that ends the training: keep θ̄
            self.average.copy_to(trainer.model)

    def on_exception(self, trainer, error: BaseException) -> None:
        self._validating.close()  # dying during a validation: the model gets θ back

    def state_dict(self) -> dict:
        return self.average.state_dict()

    def load_state_dict(self, state: dict, trainer) -> None:
        """Restore θ̄, checked against the model and the trainer's step (one update per step)."""
        if (
            isinstance(state, dict)
            and state.get("updates") != trainer.step
            and is_count(state.get("updates"))
        ):
            raise ValueError(f"updates={state['updates']}, not step={trainer.step} (one per optimizer step)")
        self.average.load_state_dict(state, trainer.model)
