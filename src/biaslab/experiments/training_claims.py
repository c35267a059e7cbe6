"""The documents' claims about training: seven printed slips settled exactly, and two costs measured.

The slips, each the printed formula or label against the correct one and what each gives,
computed (the verdict "a slip in the document"):

- the ML-for-physics slides' update W ← W + η ∂J/∂W ('Propagation Algorithm'): a step up the loss;
- their batch norm "transform by (x − x̄)/var(x)" ('Regularization: batch normalization'): output
  variance 1/σ², not 1;
- their "Optimization error (irreducible)" for σ² ('Bias-Variance tradeoff of MSE'): the value is
  right and irreducible, the label is the slip (the workshop book §5.2 calls it irreducible noise);
- their total derivative df/dt = df/dt ∂f/∂t + … ('Total Derivative'): df/dt on both sides;
- the inductive-bias slides' "'Scaled' attention divides by 1/sqrt(head_size)" ('Attention: core
  take-aways'): multiplies the scores by √d, variance d²;
- the lecture notes' eq. 6.1, α_i = exp(q·k_i)/Σ_j exp(q·k_j), called "scaled dot-product
  attention" (§6): no 1/√d, variance d;
- and, among the costs, the workshop book's "roughly the same as the forward pass — a factor of 2
to 3" for the backward pass (§2.4): the factor is the whole step's.

The costs: a training step against the forward pass, counted in operations by torch's
FlopCounterMode and timed, on the workshop book's MLP and the Day-5 CNN (workshop book §2.4: "a
factor of 2 to 3"; each weight gets a gradient and each layer but the first passes one to its
input); and full-batch gradient descent against minibatch SGD to the same training loss, counted
in gradients of single examples and in seconds (workshop book §2.5: "a hundred times slower per
step for the same compute budget").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from biaslab.config import check_range
from biaslab.data.mnist import MnistSizes, mnist_splits_for
from biaslab.data.synthetic import noisy_polynomial
from biaslab.evaluate.timing import backward_operations, time_forward_backward
from biaslab.nn import CNN, MLP
from biaslab.nn.attention import scaled_dot_product_attention
from biaslab.nn.normalization import BatchNorm
from biaslab.records import measure
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.time_to_loss import time_to_loss

STEP = 0.1  # η of the update slip's one step
SPREAD = 3.0  # σ of the batch the normalisation slip normalises
HEAD = 64  # d, the head size of the attention slip
NOISE = 0.5  # σ of the noise slip's y = f(x) + ε
CUBIC = (0.0, 1.0, -2.0, 0.5)  # f(x) = x − 2x² + 0.5x³
EXAMPLE_RATIO = (30, 300)  # biaslab's target: full batch over minibatch examples, "about 100x"


@dataclass(frozen=True)
class TrainingClaimsConfig:
    """The batch the step is timed on, and the race of full batch against minibatches."""

    data: MnistSizes = MnistSizes(n_train=10_000, n_val=1000, n_test=1000)
    step_batch: int = 256  # rows of the forward and backward passes timed
    repeats: int = 10  # the fastest of this many timings of each pass
    minibatch: int = 100  # B of minibatch SGD
    learning_rates: tuple[float, ...] = (0.03, 0.1, 0.3, 1.0)  # each batch size tries these
    target_loss: float = 0.3  # the training loss both must reach
    max_examples: int = 3_000_000  # each run's budget, in gradients of single examples

    def __post_init__(self):
        check_range(self, "step_batch", 1, 65_536)
        check_range(self, "repeats", 1, 1000)
        check_range(self, "learning_rates", 0, 100, open_low=True)
        check_range(self, "target_loss", 0, 2.3, "a cross-entropy below chance's ln 10", open_low=True)
        check_range(self, "max_examples", 1)
        size, description = self.data.training_set()
        check_range(self, "minibatch", 1, size, f"at most the training set ({description})")


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {
    "mlp": "MLP",
    "cnn": "CNN",
    "backward_operations_ratio": measure("backward over forward operations"),
    "backward_time_ratio": measure("backward over forward time"),
    "full_batch_examples_ratio": "Full batch over minibatch, examples to the same loss",
    "full_batch_time_ratio": "Full batch over minibatch, seconds to the same loss",
}


@experiment(
    name="training-claims",
    words=WORDS,
    day=7,
    step=5,
    config=TrainingClaimsConfig,
    requires=("mnist",),
    title="The documents' claims about training: seven slips, the cost of a step, full batch",
    summary="the plus-sign update, batch norm by the variance, σ² as an optimisation error, the total "
    "derivative, 1/√head_size and eq. 6.1's unscaled attention settled exactly; a training step against "
    "the forward pass (operations, seconds); full batch against minibatches",
    quick={
        "n_train": 1000,
        "step_batch": 32,
        "repeats": 2,
        "learning_rates": (0.3,),
        "target_loss": 1.0,
        "max_examples": 100_000,
    },
)
def run(ctx) -> None:
    slips(ctx)  # exact verdicts first: a run that has trained may not give them
    step_costs(ctx, ctx.cfg)
    full_batch(ctx, ctx.cfg)


PHYSICS_SLIDES = "ML-for-physics slides"


def slips(ctx) -> None:
    """Six formulas and labels the documents print wrong, each against the correct one (the seventh,
    the workshop book's cost of the backward pass, is counted in :func:`step_costs`)."""
    w = torch.tensor(1.0, requires_grad=True)  # J(w) = ½ w², J'(1) = 1
    optimizer = torch.optim.SGD([w], lr=STEP)
    (0.5 * w**2).backward()
    optimizer.step()  # torch's update: w ← w − η ∂J/∂w
    ctx.claim_slip(
        f"One gradient step (η = {STEP}) on J(w) = ½w² from w = 1 lowers J",
        source=f"{PHYSICS_SLIDES}, 'Propagation Algorithm'; {PHYSICS_SLIDES}, 'Backpropagation summary'",
        printed=r"\mathbf{W} \leftarrow \mathbf{W} + \eta \frac{\partial J(\mathbf{W})}{\partial \mathbf{W}}",
        correct="W ← W − η ∂J/∂W: J falls from 0.5 to 0.405",
        measured=float(0.5 * w.detach() ** 2),
        tolerance=1e-6,
        exact=lambda: 0.5 * (1 - STEP) ** 2,
        printed_gives=lambda: 0.5 * (1 + STEP) ** 2,
        computation="the slides print W ← W + η ∂J/∂W; one step of it from w = 1 gives w = 1.1 and raises "
        "½w² from 0.5 to 0.605, a step up the loss; the descent step W ← W − η ∂J/∂W (torch.optim.SGD's) "
        "gives w = 0.9 and J = 0.405",
    )
    z = torch.linspace(-1, 1, 1001, dtype=torch.float64)
    x = (SPREAD * (z - z.mean()) / z.std(correction=0)).unsqueeze(1)  # (1001, 1): variance exactly σ²
    normed = BatchNorm(1).double().train()(x).detach()
    ctx.claim_slip(
        f"Batch norm's output has unit variance (a batch of variance {SPREAD**2:g})",
        source=f"{PHYSICS_SLIDES}, 'Regularization: batch normalization'; Ioffe & Szegedy 2015",
        printed=r"$(x - \bar{x})/\text{var}(x)$",
        correct="(x − x̄)/√(var(x) + ε): output variance 1",
        measured=float(normed.var(correction=0)),
        tolerance=1e-4,
        exact=lambda: 1.0,
        printed_gives=lambda: 1 / SPREAD**2,  # (x − μ)/σ² has variance σ²/σ⁴
        computation=f"the slides print (x − x̄)/var(x): dividing by the variance σ² = {SPREAD**2:g} gives "
        f"variance σ²/σ⁴ = 1/{SPREAD**2:g} = {1 / SPREAD**2:.4f}; (x − μ)/√(σ² + ε) (Ioffe & Szegedy's "
        "Algorithm 1, biaslab's BatchNorm) gives σ²/(σ² + ε) = 1 to 1e-6",
    )
    x, y = noisy_polynomial(n=1_000_000, coefficients=CUBIC, noise=NOISE, seed=ctx.seed_for("noise"))
    truth = np.polynomial.polynomial.polyval(x[:, 0].astype(np.float64), CUBIC)  # (n,): f(x), noise-free
    ctx.claim_slip(
        f"The noise term σ² = {NOISE**2:g} stays in the test error of the true function itself: "
        "it is irreducible noise, not an optimisation error",
        source=f"{PHYSICS_SLIDES}, 'Bias-Variance tradeoff of MSE'; workshop book §5.2 (The bias-variance "
        "decomposition)",
        printed="Optimization error (irreducible):",
        correct=f"irreducible noise σ² = {NOISE**2:g} (the value and 'irreducible' are right; the label "
        "is the slip)",
        measured=round(float(np.mean((y - truth) ** 2)), 3),
        tolerance=0.005,
        exact=lambda: NOISE**2,
        printed_gives=lambda: 0.0,  # an optimisation error vanishes with perfect optimisation
        computation=f"the slides label σ² 'Optimization error (irreducible)'; an optimisation error is what "
        f"a better optimiser removes (0 at the optimum), yet the very function that made the data keeps "
        f"E[(y − f(x))²] = E[ε²] = σ² = {NOISE**2:g} (measured on 10⁶ draws): the value σ² and 'irreducible' "
        "are right, the label is the slip; the workshop book §5.2 names it irreducible noise",
    )
    total_derivative(ctx)
    attention_scaling(ctx)


def total_derivative(ctx) -> None:
    """The chain rule for f(t, x(t), y(t)): the slides print df/dt on both sides."""
    t = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    f = t * torch.sin(t) + (t**2) ** 2  # f(t, x, y) = t·x + y² with x = sin t, y = t²
    (measured,) = torch.autograd.grad(f, t)
    partial_t, rest = math.sin(1.0), 1.0 * math.cos(1.0) + 2 * 1.0 * 2 * 1.0  # ∂f/∂t = x; ∂f/∂x ẋ + ∂f/∂y ẏ
    ctx.claim_slip(
        "The total derivative of f(t, x(t), y(t)) = t·x + y² with x = sin t, y = t², at t = 1",
        source=f"{PHYSICS_SLIDES}, 'Total Derivative'",
        printed=r"\frac{df}{dt} = \frac{df}{dt} \frac{\partial f}{\partial t}",
        correct=f"df/dt = ∂f/∂t + ∂f/∂x dx/dt + ∂f/∂y dy/dt = {partial_t + rest:.4f}",
        measured=round(float(measured), 10),
        tolerance=1e-9,
        exact=lambda: round(partial_t + rest, 10),
        printed_gives=lambda: rest / (1 - partial_t),  # df/dt = df/dt·∂f/∂t + rest, solved for df/dt
        computation=f"the slides print df/dt = df/dt ∂f/∂t + ∂f/∂x ∂x/∂t + ∂f/∂y ∂y/∂t, df/dt on both "
        f"sides; solved for df/dt it gives rest/(1 − ∂f/∂t) = {rest:.4f}/(1 − sin 1) = "
        f"{rest / (1 - partial_t):.4f}; the chain rule's ∂f/∂t + ∂f/∂x ẋ + ∂f/∂y ẏ = sin 1 + cos 1 + 4 = "
        f"{partial_t + rest:.4f}, equal to torch.autograd's",
    )


def attention_scaling(ctx) -> None:
    """Scaled dot-product attention divides the scores by √d: two documents print it otherwise."""
    gen = torch.Generator().manual_seed(ctx.seed_for("attention-scores"))
    q, k = (torch.randn(64, 512, HEAD, generator=gen, dtype=torch.float64) for _ in range(2))  # (B, T, d)
    _, weights = scaled_dot_product_attention(q, k, k, return_weights=True)  # (B, T, T)
    spread = round(float(weights.log().var(dim=-1).mean()), 2)  # log-softmax: the scores less a row constant
    claim = f"Attention's scores Q Kᵀ/√d have variance 1 for unit-variance queries and keys (d = {HEAD})"
    measured_on = (
        "the library's weights: the variance over keys of log softmax equals the scores'; "
        "q·k sums d products of variance 1: variance d, divided by √d: 1"
    )
    ctx.claim_slip(
        f"{claim}: the scale is 1/√d, not √d",
        source="inductive-bias slides, 'Attention: core take-aways'; Vaswani et al. 2017",
        printed='"Scaled" attention divides by 1/sqrt(head_size)',
        correct="scores divided by √d (times 1/√d): variance 1",
        measured=spread,
        tolerance=0.05,
        exact=lambda: 1.0,
        printed_gives=lambda: float(HEAD**2),  # dividing by 1/√d multiplies by √d: variance d·d
        computation=f"the slides print 'divides by 1/sqrt(head_size)', which multiplies the scores by √d: "
        f"variance d² = {HEAD**2}; {measured_on}",
    )
    ctx.claim_slip(
        f"{claim}: scaled attention has the 1/√d",
        source="lecture notes §6 (Attention as a unifying primitive), eq. 6.1; Vaswani et al. 2017",
        printed=r"\alpha_i = \frac{\exp(q \cdot k_i)}{\sum_j \exp(q \cdot k_j)}",
        correct="α_i = exp(q·k_i/√d)/Σ_j exp(q·k_j/√d): variance 1",
        measured=spread,
        tolerance=0.05,
        exact=lambda: 1.0,
        printed_gives=lambda: float(HEAD),  # the unscaled scores: variance d
        computation=f"the notes print eq. 6.1 without 1/√d and call it 'scaled dot-product attention' (their "
        f"eq. 6.4 has the 1/√d); its scores q·k have variance d = {HEAD}, and the softmax saturates; "
        f"{measured_on}",
    )


def step_costs(ctx, cfg) -> None:
    """The backward pass against the forward: in operations (counted) and in seconds (timed)."""
    gen = torch.Generator().manual_seed(ctx.seed_for("step-batch"))
    images = torch.randn(cfg.step_batch, 1, 28, 28, generator=gen)  # (B, 1, 28, 28)
    labels = torch.randint(0, 10, (cfg.step_batch,), generator=gen)
    models = {
        "MLP": ctx.init_model(lambda: MLP((784, 256, 10)), "step-mlp"),  # Day 1's 203,530 parameters
        "CNN": ctx.init_model(  # the Day 5 CNN
            lambda: CNN(1, (32, 64), 10, dims=2, pool="max", global_pool=None, input_size=28), "step-cnn"
        ),
    }
    rows, ratio = [], {}
    for name, model in models.items():
        model.to(ctx.device)
        batch = (images.to(ctx.device), labels.to(ctx.device))
        forward, backward = backward_operations(model, *batch, nn.functional.cross_entropy)
        seconds = time_forward_backward(model, *batch, nn.functional.cross_entropy, cfg.repeats)
        ratio[name] = backward / forward
        ctx.metric("backward_operations_ratio", ratio[name], model=name.lower())
        ctx.timing(**{f"{name.lower()}_backward_time_ratio": seconds[1] / seconds[0]})
        rows.append(
            [
                name,
                f"{forward:,}",
                f"{backward:,}",
                f"{ratio[name]:.3f}",
                f"{seconds[0] * 1e3:.2f}",
                f"{seconds[1] * 1e3:.2f}",
                f"{seconds[1] / seconds[0]:.2f}",
            ]
        )
    ctx.table(
        f"One training step's halves on a batch of {cfg.step_batch}: operations as torch's FlopCounterMode "
        "counts them, and the fastest of the timed passes",
        [
            "model",
            "forward operations",
            "backward operations",
            "ratio",
            "forward (ms)",
            "backward (ms)",
            "time ratio",
        ],
        rows,
        timing_columns=["forward (ms)", "backward (ms)", "time ratio"],
    )
    book = "workshop book §2.4 (The chain rule and backpropagation)"
    later = 256 * 10 / (784 * 256 + 256 * 10)  # the MLP's operations after its first layer, a share
    ctx.claim_slip(
        "The backward pass costs 1 to 2 forward passes; the whole step, 2 to 3 (the workshop book's MLP)",
        source=book,
        printed="roughly the same as the forward pass — a factor of 2 to 3",
        correct="the backward pass costs 1 to 2 forward passes (2x for each layer that passes a gradient "
        "to its input, 1x for the first); the whole training step, forward + backward, costs 2 to 3",
        measured=round(ratio["MLP"], 6),
        tolerance=1e-6,
        exact=lambda: round(1 + later, 6),  # the first layer's gradient for its weights only
        printed_gives=lambda: 2.0,  # the lower end of the printed factor
        computation=f"the book prints the backward pass as 'roughly the same as the forward pass — a factor "
        f"of 2 to 3'; counted, the backward pass is {ratio['MLP']:.4f} forward passes for the MLP (= 1 + "
        f"its later layers' share {later:.4f}: its first layer, {1 - later:.1%} of the work, needs no "
        f"gradient for the pixels) and {ratio['CNN']:.3f} for the CNN, while the training step is "
        f"{1 + ratio['MLP']:.3f} and {1 + ratio['CNN']:.3f}: the factor of 2 to 3 is the step's",
    )
    step = {name: 1 + r for name, r in ratio.items()}  # a training step: the forward and the backward
    ctx.claim(
        "A training step (forward + backward) costs a factor of 2 to 3 the forward pass",
        source=book,
        printed="a factor of 2 to 3",
        kind="check",  # reverse mode costs 1 or 2 forward products per layer: by construction
        expected="in operations, for both models: a training step / the forward pass within [2, 3]",
        measured=f"MLP {step['MLP']:.3f}, CNN {step['CNN']:.3f} (seconds: the table's time ratios, "
        "machine-dependent)",
        passed=all(2 <= v <= 3 for v in step.values()),
    )


def full_batch(ctx, cfg) -> None:
    """Full-batch gradient descent against minibatch SGD to the same training loss."""
    splits = mnist_splits_for(cfg.data, ctx.seed_for("split"), standardize=True)
    x, y = splits.x_train.to(ctx.device), splits.y_train.to(ctx.device)
    batches = {"minibatch": cfg.minibatch, "full batch": len(x)}
    rows, best = [], {}
    needed: dict[str, list[float]] = {name: [] for name in batches}  # examples to the target, per rate
    for name, size in batches.items():
        for lr in cfg.learning_rates:
            model = ctx.init_model(lambda: MLP((784, 256, 10)), "batch-mlp").to(ctx.device)  # one w₀
            run = time_to_loss(
                model,
                x,
                y,
                batch_size=size,
                lr=lr,
                target=cfg.target_loss,
                max_examples=cfg.max_examples,
                seed=ctx.seed_for("shuffle"),
            )
            rows.append(
                [
                    name,
                    size,
                    f"{lr:g}",
                    "yes" if run.reached else "no",
                    run.steps,
                    f"{run.examples:,}",
                    f"{run.seconds:.2f}",
                    f"{run.loss:.4f}",
                ]
            )
            needed[name].append(run.examples if run.reached else float("nan"))
            if run.reached and (name not in best or run.examples < best[name].examples):
                best[name] = run
    ctx.table(
        f"Plain SGD to a training loss of {cfg.target_loss:g} on {len(x):,} digits (the workshop book's "
        "784-256-10 MLP, one initialisation): steps, gradients of single examples, and the seconds of the "
        "steps",
        ["batch", "size", "learning rate", "reached", "steps", "examples", "seconds", "last loss"],
        rows,
        timing_columns=["seconds"],
    )
    low, high = EXAMPLE_RATIO
    reached = len(best) == 2
    examples = best["full batch"].examples / best["minibatch"].examples if reached else float("nan")
    seconds = best["full batch"].seconds / best["minibatch"].seconds if reached else float("nan")
    ctx.metric(full_batch_examples_ratio=examples)
    ctx.timing(full_batch_time_ratio=seconds)
    ctx.claim(
        "Full-batch gradient descent is about 100x slower than minibatch SGD to the same loss",
        source="workshop book §2.5 (Stochastic gradient descent); biaslab's target (within [30, 300])",
        printed="a hundred times slower per step for the same compute budget",
        kind="finding",
        expected=f"gradients of single examples to the same training loss, each at its best learning rate of "
        f"the grid: full batch / minibatch within [{low}, {high}] (N/B = {len(x) // cfg.minibatch})",
        measured=f"{examples:.1f}x the examples; {seconds:.1f}x the seconds on this machine (a full batch "
        "uses the cores better per example)",
        passed=reached and low <= examples <= high,
        checked_in_quick=False,
    )
    ctx.figure(
        "examples_to_loss",
        plots.curves(
            list(cfg.learning_rates), needed, "learning rate", "examples to the loss", logx=True, log_y=True
        ),
        f"Gradients of single examples each run took to reach a training loss of {cfg.target_loss:g}, "
        f"against its learning rate (a gap: the run did not reach it within {cfg.max_examples:,}); "
        f"minibatches of {cfg.minibatch} against the full batch of {len(x):,}.",
    )
