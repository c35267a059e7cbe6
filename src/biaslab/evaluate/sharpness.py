"""Sharpness: the largest eigenvalue of a loss's Hessian, by power iteration on Hessian-vector products.

The Hessian of a loss L(θ) over P parameters is the (P, P) matrix H = ∇²L(θ); its largest
eigenvalue λ_max measures how sharply the loss curves along its steepest direction (gradient
descent with step η is unstable along a direction once λ > 2/η). H is never formed here. A
Hessian-vector product costs about two backward passes (Pearlmutter 1994): differentiate the
scalar ∇L · v a second time,

    H v = ∇_θ (∇_θ L(θ) · v)        (v held constant),

and power iteration needs only that:

    v_0 ~ N(0, I) / ‖·‖,     λ_k = v_kᵀ H v_k  (the Rayleigh quotient),     v_{k+1} = H v_k / ‖H v_k‖,

stopping once the relative change |λ_k − λ_{k−1}| ≤ tol · |λ_k|.

Convention: power iteration converges to the eigenvalue of largest **magnitude**, |λ|, with its
sign. At a minimum H is positive semi-definite, every eigenvalue is ≥ 0, and that is the largest
eigenvalue — the sharpness. At a saddle point (or early in training, where H is indefinite) the
eigenvalue of largest magnitude may be **negative**: the result is then a negative number, the
most negative eigenvalue, not λ_max. If the largest positive and the most negative eigenvalue
have (nearly) the same magnitude the iteration does not settle on either, and the Rayleigh
quotient may stall at a value in between that is no eigenvalue at all. Convergence is geometric
with ratio |λ_2 / λ_1| (second largest magnitude over the largest), so a small spectral gap makes
it slow; the stopping rule measures progress, not error, and can stop early on a slow run.

:func:`loss_of` turns a model, a loss function and one batch into the ``loss_fn`` closure the
two primitives take; :func:`sharpness` does it all for every trainable parameter of a model.
Randomness is explicit: the start vector is drawn from a ``torch.Generator`` or an int seed,
never from the global generator.

:func:`top_hessian_eigenvalue` returns a :class:`SharpnessResult`; :func:`loss_of` refuses a model
whose dropout is in training mode (a fresh mask per call would change the loss). The eigenvalue
equals the exact Hessian's from ``torch.autograd.functional.hessian`` (tested).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from biaslab.checks import as_generator, check_integer, check_number
from biaslab.nn.mlp import device_of
from biaslab.train.steps import move_to

__all__ = [
    "SharpnessResult",
    "hessian_vector_product",
    "loss_of",
    "sharpness",
    "top_hessian_eigenvalue",
]

LossFn = Callable[[], torch.Tensor]


@dataclasses.dataclass(frozen=True)
class SharpnessResult:
    """What :func:`top_hessian_eigenvalue` found.

    Attributes:
        eigenvalue: the Rayleigh quotient vᵀHv of the last iterate: the Hessian's eigenvalue of
            largest magnitude, with its sign (see the module's convention).
        iterations: the Hessian-vector products computed (at most ``iterations``).
        converged: whether the relative change of the eigenvalue fell to ``tol`` or below.
        vector: the unit eigenvector (‖v‖ = 1 over all parameters together), a list of detached
            tensors shaped like ``params``: the iterate whose Rayleigh quotient is ``eigenvalue``.
    """

    eigenvalue: float
    iterations: int
    converged: bool
    vector: list[torch.Tensor]


def _check_params(params: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """``params`` as a list: a non-empty sequence of real floating tensors that require grad."""
    if isinstance(params, torch.Tensor) or not isinstance(params, Sequence):
        hint = "wrap one: [p]" if isinstance(params, torch.Tensor) else "e.g. list(model.parameters())"
        raise ValueError(f"params must be a list of tensors, got {type(params).__name__}; {hint}")
    params = list(params)
    if not params:
        raise ValueError("params must hold at least one tensor, got an empty list")
    for i, p in enumerate(params):
        if not isinstance(p, torch.Tensor):
            raise ValueError(f"params[{i}] must be a tensor, got {type(p).__name__}")
        if not p.requires_grad:
            raise ValueError(f"params[{i}] must require grad (the Hessian is taken in it), got False")
        if not p.is_floating_point():
            raise ValueError(f"params[{i}] must be a real floating tensor, got dtype {p.dtype}")
    return params


def _check_vector(vector: Sequence[torch.Tensor], params: list[torch.Tensor]) -> list[torch.Tensor]:
    """``vector`` as a list of detached tensors, one per parameter, each of its shape (cast to its
    dtype and device)."""
    if isinstance(vector, torch.Tensor) or not isinstance(vector, Sequence):
        raise ValueError(f"vector must be a list of tensors shaped like params, got {type(vector).__name__}")
    if len(vector) != len(params):
        raise ValueError(f"vector must hold one tensor per parameter ({len(params)}), got {len(vector)}")
    out = []
    for i, (v, p) in enumerate(zip(vector, params)):
        if not isinstance(v, torch.Tensor) or v.shape != p.shape:
            got = tuple(v.shape) if isinstance(v, torch.Tensor) else type(v).__name__
            raise ValueError(f"vector[{i}] must have the shape of params[{i}], {tuple(p.shape)}, got {got}")
        out.append(v.detach().to(p))
    return out


def _loss(loss_fn: LossFn) -> torch.Tensor:
    """``loss_fn()``, checked: a scalar tensor attached to the graph."""
    loss = loss_fn()
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        got = f"shape {tuple(loss.shape)}" if isinstance(loss, torch.Tensor) else type(loss).__name__
        raise ValueError(f"loss_fn() must return a scalar tensor, got {got}")
    if not loss.requires_grad:
        raise ValueError(
            "loss_fn() returned a loss without a graph (requires_grad=False): does it depend on params, "
            "and is it computed outside torch.no_grad()?"
        )
    return loss.reshape(())


def _hvp(loss_fn: LossFn, params: list[torch.Tensor], vector: list[torch.Tensor]) -> list[torch.Tensor]:
    """H v for checked arguments (see :func:`hessian_vector_product`)."""
    with torch.enable_grad():
        loss = _loss(loss_fn)
        grads = torch.autograd.grad(loss, params, create_graph=True, allow_unused=True)
        terms = [(g * v).sum() for g, v in zip(grads, vector) if g is not None]
        dot = torch.stack(terms).sum() if terms else None
        if dot is None or not dot.requires_grad:  # L is at most linear in params: H = 0
            return [torch.zeros_like(p).detach() for p in params]
        hv = torch.autograd.grad(dot, params, allow_unused=True)
    return [torch.zeros_like(p).detach() if h is None else h.detach() for h, p in zip(hv, params)]


def hessian_vector_product(
    loss_fn: LossFn, params: Sequence[torch.Tensor], vector: Sequence[torch.Tensor]
) -> list[torch.Tensor]:
    """The Hessian of ``loss_fn()`` in ``params`` times ``vector``: H v = ∇(∇L · v), by double backprop.

    Differentiates the loss once with ``create_graph=True``, takes the dot product of that
    gradient with ``v`` (held constant), and differentiates the scalar again (Pearlmutter 1994).
    The cost is about two backward passes (plus the forward pass in ``loss_fn``), and memory of
    the order of one backward graph: the (P, P) Hessian is never formed. A parameter the loss
    does not use gets a zero block. Runs with gradients enabled even inside ``torch.no_grad()``;
    the parameters' ``.grad`` fields are not touched.

    Args:
        loss_fn: a callable without arguments that recomputes the scalar loss from ``params``
            (e.g. :func:`loss_of`); it is called once.
        params: a list of real floating tensors that require grad (e.g. a model's parameters).
        vector: a list of tensors, one per parameter, each of its shape (detached and cast to the
            parameter's dtype and device).

    Returns:
        H v as a list of detached tensors shaped like ``params``.

    Shapes:
        params[i] (...), vector[i] same shape; the product is taken over all of them flattened
        and concatenated, θ ∈ R^P with P the total number of elements.
    """
    params = _check_params(params)
    return _hvp(loss_fn, params, _check_vector(vector, params))


def _dot(a: list[torch.Tensor], b: list[torch.Tensor]) -> torch.Tensor:
    return torch.stack([(x * y).sum() for x, y in zip(a, b)]).sum()


def top_hessian_eigenvalue(
    loss_fn: LossFn,
    params: Sequence[torch.Tensor],
    iterations: int = 100,
    tol: float = 1e-4,
    generator: torch.Generator | int = 0,
) -> SharpnessResult:
    """The eigenvalue of largest magnitude of the loss's Hessian, by power iteration on H v.

    v ← H v / ‖H v‖ from a random unit start, λ = vᵀ H v; stops once
    ``|λ_k − λ_{k−1}| <= tol · |λ_k|``. At a minimum (H positive semi-definite) this is the
    largest eigenvalue, the sharpness; at a saddle it may be a **negative** eigenvalue of larger
    magnitude than the largest positive one (see the module docstring). If H v = 0 for the
    start (H = 0, e.g. a loss linear in ``params``), the result is 0, converged.

    Args:
        loss_fn: a callable without arguments that recomputes the scalar loss (e.g.
            :func:`loss_of`); it must be deterministic — called once per iteration.
        params: a list of real floating tensors that require grad.
        iterations: the most Hessian-vector products to compute (default 100); at least 2 are
            needed to judge convergence.
        tol: the relative change of λ at which to stop (default 1e-4), >= 0.
        generator: a ``torch.Generator`` or the seed of a fresh CPU one (default 0): the start
            vector is ``torch.randn`` of each parameter's shape and dtype, in order, on the
            generator's device and then moved to the parameter's. The global generator is not
            used.

    Returns:
        A :class:`SharpnessResult` (eigenvalue, iterations used, converged, unit eigenvector).
    """
    params = _check_params(params)
    iterations = check_integer(iterations, "iterations", 1)
    tol = check_number(tol, "tol", 0.0)
    gen = as_generator(generator)
    v = [torch.randn(p.shape, generator=gen, dtype=p.dtype, device=gen.device).to(p.device) for p in params]
    norm = torch.sqrt(_dot(v, v))
    v = [x / norm for x in v]
    previous = None
    for k in range(1, iterations + 1):
        hv = _hvp(loss_fn, params, v)
        eigenvalue = float(_dot(v, hv))  # Rayleigh quotient: ‖v‖ = 1
        size = float(torch.sqrt(_dot(hv, hv)))
        if size == 0.0:  # H v = 0: v lies in H's null space (H = 0 for a random start)
            return SharpnessResult(0.0, k, True, v)
        if previous is not None and abs(eigenvalue - previous) <= tol * abs(eigenvalue):
            return SharpnessResult(eigenvalue, k, True, v)
        if k < iterations:
            v, previous = [x / size for x in hv], eigenvalue
    return SharpnessResult(eigenvalue, iterations, False, v)


def _stochastic_layers(model: nn.Module) -> list[str]:
    """Names of the dropout layers (any ``_DropoutNd``: Dropout, Dropout1d/2d/3d, AlphaDropout,
    FeatureAlphaDropout) that are in training mode with p > 0, so draw a fresh mask per call."""
    return [
        name or type(module).__name__
        for name, module in model.named_modules()
        if isinstance(module, nn.modules.dropout._DropoutNd) and module.training and module.p > 0
    ]


def loss_of(model: nn.Module, loss: Callable[[Any, Any], torch.Tensor], inputs: Any, targets: Any) -> LossFn:
    """The closure ``lambda: loss(model(inputs), targets)`` that the primitives above take.

    The model is used in the mode it is in: it is **not** switched to eval mode, so the Hessian
    is that of the loss the caller's model computes. A dropout layer in training mode (p > 0)
    draws a new mask on every call, which makes the loss random and power iteration meaningless:
    it is refused (call ``model.eval()`` first, or set the dropout's p to 0). A BatchNorm layer in
    training mode normalises with the batch's statistics, which is deterministic and allowed, but
    each call updates its running statistics (:func:`sharpness` restores them afterwards).

    Args:
        model: an ``nn.Module``; the inputs and targets are moved to its device.
        loss: ``loss(outputs, targets)`` -> a scalar tensor (e.g. ``F.cross_entropy``).
        inputs: a tensor, or a tuple of the model's positional arguments (``model(*inputs)``).
        targets: what ``loss`` compares the outputs with.

    Returns:
        A callable without arguments returning the scalar loss.
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    stochastic = _stochastic_layers(model)
    if stochastic:
        raise ValueError(
            f"model has dropout in training mode ({', '.join(stochastic)}), which makes the loss random; "
            "call model.eval() first"
        )
    device = device_of(model)
    inputs, targets = move_to(inputs, device), move_to(targets, device)

    def loss_fn() -> torch.Tensor:
        outputs = model(*inputs) if isinstance(inputs, tuple) else model(inputs)
        return loss(outputs, targets)

    return loss_fn


def sharpness(
    model: nn.Module,
    loss: Callable[[Any, Any], torch.Tensor],
    inputs: Any,
    targets: Any,
    iterations: int = 100,
    tol: float = 1e-4,
    generator: torch.Generator | int = 0,
) -> float:
    """The Hessian's eigenvalue of largest magnitude for every parameter of ``model`` that requires grad.

    :func:`top_hessian_eigenvalue` of :func:`loss_of` over ``[p for p in model.parameters() if
    p.requires_grad]`` (frozen parameters are held constant). The model keeps its mode (dropout
    in training mode is refused), and its buffers (BatchNorm's running statistics) are restored
    afterwards. Whether the iteration converged is not reported: call
    :func:`top_hessian_eigenvalue` for that and for the eigenvector.

    Args:
        model, loss, inputs, targets: as :func:`loss_of`.
        iterations, tol, generator: as :func:`top_hessian_eigenvalue`.
    """
    loss_fn = loss_of(model, loss, inputs, targets)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no parameters that require grad; there is no Hessian to take")
    buffers = {name: b.detach().clone() for name, b in model.named_buffers()}
    try:
        result = top_hessian_eigenvalue(loss_fn, params, iterations=iterations, tol=tol, generator=generator)
    finally:
        with torch.no_grad():
            for name, b in model.named_buffers():
                b.copy_(buffers[name])
    return result.eigenvalue
