"""Adversarial examples under an L∞ budget: FGSM, PGD, and accuracy as the budget grows.

An attack looks for x' in the ε-ball S(x) = {x' : ‖x' − x‖∞ ≤ ε} (intersected with the valid
input range) that raises the loss L(f(x'), y). Both attacks here equal torchattacks' ``FGSM`` and
``PGD`` on the same model and inputs (tests check it) and differ from them in three ways: the
random start is drawn from an explicit generator, never the global RNG; every module's
training flag is restored as it was (not just the root's); the range clipping can be changed
or switched off (``clamp``) for inputs that are not in [0, 1].

``pgd_attack(steps)`` makes PGD an attack for any ε (step α = 2.5 ε / steps), and
:func:`accuracy_under_attack` the accuracy as the budget grows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
import torch.nn.functional as F
from torch import nn

from biaslab.checks import check_integer, check_number
from biaslab.evaluate.robustness import check_curve_inputs, count_correct, eval_mode
from biaslab.nn.mlp import device_of

Bound = float | torch.Tensor | None
Clamp = tuple[Bound, Bound] | None
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _check_eps(eps: float) -> float:
    return check_number(eps, "eps", 0.0)


def _clip(x: torch.Tensor, clamp: Clamp) -> torch.Tensor:
    """``x`` clipped to ``clamp = (low, high)``; each bound a float, a tensor broadcastable to
    ``x`` (e.g. per-channel bounds of standardized images, shape (1, C, 1, 1)) or None (open)."""
    if clamp is None:
        return x
    low, high = clamp
    if isinstance(low, torch.Tensor) or isinstance(high, torch.Tensor):  # torch.clamp wants one kind
        low, high = (None if b is None else torch.as_tensor(b, dtype=x.dtype, device=x.device) for b in clamp)
    return torch.clamp(x, min=low, max=high)


def _check_clamp(clamp: Clamp) -> None:
    if clamp is None:
        return
    if len(clamp) != 2:
        raise ValueError(f"clamp must be (low, high) or None, got {clamp!r}")
    low, high = clamp
    if low is not None and high is not None and bool(torch.any(torch.as_tensor(low) > torch.as_tensor(high))):
        raise ValueError(f"clamp's low bound must not exceed its high bound, got {clamp!r}")


def _input_gradient(model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss_fn: LossFn) -> torch.Tensor:
    """∇_x L(f(x), y), computed with ``torch.autograd.grad`` for ``x`` alone: nothing is added to
    the parameters' ``.grad``, and it works inside a caller's ``torch.no_grad()``."""
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        loss = loss_fn(model(x), y)
        return torch.autograd.grad(loss, x)[0]


def fgsm(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    eps: float,
    clamp: Clamp = (0.0, 1.0),
    loss_fn: LossFn = F.cross_entropy,
) -> torch.Tensor:
    """The fast gradient sign method (Goodfellow et al. 2015, eq. 3 with a final clip):

        x_adv = clip(x + ε · sign(∇_x L(f(x), y)))

    One step to the corner of the ε-ball that the linearised loss favours most. The model runs
    in eval mode and every module's training flag is restored; parameters' ``.grad`` are untouched.

    Args:
        model: a classifier returning logits.
        x: inputs; y: their labels (class indices for the default cross-entropy).
        eps: the L∞ budget ε ≥ 0; ε = 0 returns ``clip(x)``.
        clamp: the valid range ``(low, high)`` (floats or broadcastable tensors), or None for none.
        loss_fn: ``loss_fn(logits, y)``, a scalar; default cross-entropy averaged over the batch
            (as torchattacks; only the gradient's sign is used, so the average does not matter).
    Returns:
        x_adv, detached, the shape and dtype of ``x``, on the model's device.
    """
    eps = _check_eps(eps)
    _check_clamp(clamp)
    device = device_of(model)
    x, y = x.detach().to(device), y.to(device)
    with eval_mode(model):
        grad = _input_gradient(model, x, y, loss_fn)
    return _clip(x + eps * grad.sign(), clamp).detach()


def pgd(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    eps: float,
    alpha: float,
    steps: int,
    random_start: bool = True,
    generator: torch.Generator | None = None,
    clamp: Clamp = (0.0, 1.0),
    loss_fn: LossFn = F.cross_entropy,
) -> torch.Tensor:
    """L∞ projected gradient descent (Madry et al. 2018, eq. 2), on the loss's ascent:

        x^0 = Π(x + δ),  δ ~ U[−ε, ε]^d  (or x^0 = x)
        x^{t+1} = Π_{S(x)}(x^t + α · sign(∇_x L(f(x^t), y))),   t = 0, ..., steps − 1

    where Π clips to the ε-ball around x, then to the valid range. FGSM is one step from x with
    α = ε. Same model-mode and ``.grad`` guarantees as :func:`fgsm`.

    Args:
        eps: the budget ε ≥ 0. alpha: step size α > 0 (commonly 2.5 ε / steps). steps: ≥ 1.
        random_start: start at a uniform point of the ε-ball (Madry's restarts) or at x.
        generator: where the random start is drawn from; default a fresh one seeded 0, so a call
            is deterministic and the global RNG is never touched. Its device may differ from x's.
        clamp, loss_fn: as for :func:`fgsm`.
    Returns:
        x_adv, detached, with ‖x_adv − x‖∞ ≤ ε and within ``clamp``, on the model's device.
    """
    eps = _check_eps(eps)
    alpha = check_number(alpha, "alpha", 0.0, low_open=True, why=" (the step size)")
    steps = check_integer(steps, "steps", 1)
    _check_clamp(clamp)
    device = device_of(model)
    x, y = x.detach().to(device), y.to(device)
    x_adv = x.clone()
    if random_start:
        # Step 0: x^0 = Π(x + δ), δ uniform in the ε-ball, drawn on the generator's device.
        generator = torch.Generator().manual_seed(0) if generator is None else generator
        delta = torch.empty(x.shape, dtype=x.dtype, device=generator.device)
        delta = delta.uniform_(-eps, eps, generator=generator).to(x.device)
        x_adv = _clip(x_adv + delta, clamp)
    with eval_mode(model):
        for _ in range(int(steps)):
            # Step 1: g = ∇_x L(f(x^t), y) at the current iterate (eq. 2's inner gradient).
            grad = _input_gradient(model, x_adv, y, loss_fn)
            # Step 2: the signed ascent step x^t + α · sign(g) (steepest ascent for ‖·‖∞).
            x_adv = x_adv + alpha * grad.sign()
            # Step 3: Π_{S(x)}: back into the ε-ball around x, then into the valid range.
            delta = torch.clamp(x_adv - x, min=-eps, max=eps)
            x_adv = _clip(x + delta, clamp).detach()
    return x_adv


Attack = Callable[[nn.Module, torch.Tensor, torch.Tensor, float], torch.Tensor]


def pgd_attack(steps: int = 10, step_scale: float = 2.5) -> Attack:
    """PGD as an :data:`Attack` for any budget: ``steps`` steps of α = step_scale · ε / steps
    (Madry et al.'s α = 2.5 ε / steps by default), so the walk can cross the ε-ball and back.

    Returns:
        ``attack(model, x, y, eps) -> x_adv``, for :func:`accuracy_under_attack` or a training step.
    """
    steps = check_integer(steps, "steps", 1)
    step_scale = check_number(step_scale, "step_scale", 0.0, low_open=True)

    def attack(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float) -> torch.Tensor:
        return pgd(model, x, y, eps, alpha=step_scale * eps / steps, steps=steps)

    return attack


def accuracy_under_attack(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    attack: Attack,
    eps_values: Iterable[float],
    batch_size: int = 256,
) -> dict[float, float]:
    """Accuracy on ``attack(model, x, y, ε)`` for each ε: the robustness curve.

    Args:
        attack: ``attack(model, xb, yb, eps) -> xb_adv``, e.g. :func:`fgsm`, or
            ``pgd_attack(steps=10)`` (α scales with ε).
        eps_values: budgets; ε = 0 is the clean accuracy, on x itself (the attack is not called).
        batch_size: rows attacked at once, which bounds the memory the attack's graph takes.
    Returns:
        ``{ε: accuracy}`` in the order given, accuracies in [0, 1].
    """
    eps_values = [_check_eps(e) for e in eps_values]
    batch_size = check_curve_inputs(x, y, batch_size)
    correct = dict.fromkeys(eps_values, 0)
    for start in range(0, len(x), batch_size):
        xb, yb = x[start : start + batch_size].detach(), y[start : start + batch_size]
        for eps in eps_values:
            xb_adv = xb if eps == 0.0 else attack(model, xb, yb, eps)
            correct[eps] += count_correct(model, xb_adv, yb, batch_size)
    return {eps: n / len(x) for eps, n in correct.items()}
